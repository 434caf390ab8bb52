//! What a function is to the runtime: its state, counters and requests
//! ([`Function`]), and its work, message by message ([`PerMessage`]) or for the batch as a
//! whole ([`WholeBatch`]). This module reads the messages and closes the batch for both
//! ([`EachMessage`], [`AsAWhole`]).

use std::collections::BTreeSet;
use std::future::Future;
use std::time::Instant;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use lambda_runtime::LambdaEvent;
use proflake::error_chain;
use tracing::{error, info};

use crate::batch::{finish_batch, handle_messages, MessageOutcome};
use crate::config::Config;
use crate::tally::Tally;

/// One of proflake's Lambda functions: its state (`Self`, built once per cold start and cloned
/// cheaply into each message's task, which gives the runtime the shared settings), what it
/// counts, and what its messages ask for. [`run`](crate::run) is its `main`.
pub trait Function: AsRef<Config> + Clone + Send + Sync + 'static {
    /// What it counts of a batch.
    type Counters: Tally;
    /// What one message asks of it.
    type Request: Request;
    /// How it takes a batch: [`EachMessage`] or [`AsAWhole`].
    type Batch: Batch<Self>;

    /// Handles one batch, the way [`Function::Batch`] says. Returns the response for SQS and the
    /// batch's counts (what its metrics were printed from).
    fn batch(
        &self,
        event: SqsEvent,
    ) -> impl Future<Output = (SqsBatchResponse, Self::Counters)> + Send {
        Self::Batch::handle(self, event)
    }
}

/// What a message asks of a function, read from its body.
pub trait Request: PartialEq + Send + Sized + 'static {
    /// The log line's words for a body that is no request of the function.
    const NOT_A_REQUEST: &'static str;
    /// S3's `s3:TestEvent`, which asks for nothing: logged, and its message succeeds.
    const TEST_EVENT: Self;

    /// Reads a message's body. A body that is no request is an error: retrying cannot help, so
    /// its message goes to the dead-letter queue after the queue's `maxReceiveCount`, for an
    /// operator, rather than being dropped.
    fn parse(body: &str) -> proflake::Result<Self>;
}

/// An S3 notification, for a function whose messages are only that.
impl Request for proflake::events::Notification {
    const NOT_A_REQUEST: &'static str = "message is not an object notification";
    const TEST_EVENT: Self = proflake::events::Notification::Test;

    fn parse(body: &str) -> proflake::Result<Self> {
        proflake::events::parse_notification(body)
    }
}

/// A way of taking a batch.
pub trait Batch<F: Function> {
    /// Handles one batch of `app`'s: the response for SQS and the batch's counts.
    fn handle(
        app: &F,
        event: SqsEvent,
    ) -> impl Future<Output = (SqsBatchResponse, F::Counters)> + Send;
}

/// A function that handles each message of a batch on its own, side by side with the others.
pub trait PerMessage: Function {
    /// Does what one message asks, counting it in `counters`. `false` when the message should
    /// be delivered again: its work failed in a way a retry can fix.
    fn handle(
        &self,
        message_id: &str,
        request: Self::Request,
        counters: &mut Self::Counters,
    ) -> impl Future<Output = bool> + Send;
}

/// A function that does the work of a batch's messages together, once: their requests are
/// gathered into the batch's work, which then runs.
pub trait WholeBatch: Function {
    /// What the batch's messages ask for, together.
    type Work: Default + Send;

    /// Adds one message's request to `work`, counting what needs no work.
    fn gather(
        &self,
        work: &mut Self::Work,
        message_id: String,
        request: Self::Request,
        counters: &mut Self::Counters,
    );

    /// Does the work; the ids of the messages whose part of it failed.
    fn execute(
        &self,
        work: Self::Work,
        counters: &mut Self::Counters,
    ) -> impl Future<Output = BTreeSet<String>> + Send;
}

/// A batch taken message by message, by a [`PerMessage`] function: at most
/// `PROFLAKE_CONCURRENCY` messages at once, each in its own task inside a `message` span
/// carrying its `message_id`. A message fails when it is no request, when its work says so, or
/// when its task panicked (counted as a `panic` failure). A message without a message id is
/// still handled; if it fails it is reported with an empty identifier, which Lambda treats as a
/// failure of the whole batch, the only safe reading.
pub enum EachMessage {}

impl<F: PerMessage> Batch<F> for EachMessage {
    async fn handle(app: &F, event: SqsEvent) -> (SqsBatchResponse, F::Counters) {
        handle_messages(app.as_ref(), event, |message| {
            let app = app.clone();
            async move { one_message(&app, message).await }
        })
        .await
    }
}

async fn one_message<F: PerMessage>(app: &F, message: SqsMessage) -> MessageOutcome<F::Counters> {
    let message_id = message.message_id.unwrap_or_default();
    let mut outcome = MessageOutcome::<F::Counters>::default();
    match read::<F>(&message_id, message.body.as_deref(), &mut outcome.tally) {
        Err(Refused) => outcome.failed = true,
        Ok(None) => {}
        Ok(Some(request)) => {
            outcome.failed = !app.handle(&message_id, request, &mut outcome.tally).await;
        }
    }
    outcome
}

/// A batch taken as a whole, by a [`WholeBatch`] function: every message read and gathered, the
/// work done once, and the messages that were no request or whose part failed reported as
/// failed.
pub enum AsAWhole {}

impl<F: WholeBatch> Batch<F> for AsAWhole {
    async fn handle(app: &F, event: SqsEvent) -> (SqsBatchResponse, F::Counters) {
        whole_batch(app, event).await
    }
}

async fn whole_batch<F: WholeBatch>(app: &F, event: SqsEvent) -> (SqsBatchResponse, F::Counters) {
    let started = Instant::now();
    let mut counters = F::Counters::default();
    let mut failed = BTreeSet::new();
    let mut work = F::Work::default();
    for message in event.records {
        let message_id = message.message_id.unwrap_or_default();
        match read::<F>(&message_id, message.body.as_deref(), &mut counters) {
            Err(Refused) => {
                failed.insert(message_id);
            }
            Ok(None) => {}
            Ok(Some(request)) => app.gather(&mut work, message_id, request, &mut counters),
        }
    }
    failed.extend(app.execute(work, &mut counters).await);
    let response = finish_batch(app.as_ref(), &mut counters, failed, started);
    (response, counters)
}

/// The body was no request of the function; counted and logged, its message fails.
struct Refused;

fn read<F: Function>(
    message_id: &str,
    body: Option<&str>,
    counters: &mut F::Counters,
) -> Result<Option<F::Request>, Refused> {
    match F::Request::parse(body.unwrap_or("")) {
        Ok(request) if request == F::Request::TEST_EVENT => {
            info!(message_id, "s3:TestEvent, nothing to do");
            Ok(None)
        }
        Ok(request) => Ok(Some(request)),
        Err(e) => {
            let reason = e.kind().reason();
            counters.fail(reason);
            error!(
                message_id,
                reason,
                error = error_chain(&e),
                "{}; it goes to the dead-letter queue after the queue's maxReceiveCount",
                F::Request::NOT_A_REQUEST
            );
            Err(Refused)
        }
    }
}

/// The lambda_runtime entry point of `app`: the response of [`Function::batch`]; never returns
/// `Err`, because an error would make SQS redeliver the whole batch, done messages included.
pub async fn function_handler<F: Function>(
    app: &F,
    event: LambdaEvent<SqsEvent>,
) -> Result<SqsBatchResponse, lambda_runtime::Error> {
    Ok(app.batch(event.payload).await.0)
}
