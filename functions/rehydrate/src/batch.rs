//! One SQS batch: each message's request (debug files, the sweep, a continuation) handled.
//! Concurrency, panics, partial batch failures and metrics are `proflake_lambda`'s.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use lambda_runtime::LambdaEvent;
use proflake::error_chain;
use proflake_lambda::{MessageOutcome, Tally};
use tracing::{error, info};

use crate::app::App;
use crate::message::{parse_request, Request};
use crate::tally::BatchTally;
use crate::work::{handle_object, run_page};

/// One SQS batch: never fails as a whole; failed messages are listed by message id.
///
/// A message fails when its body is none of the requests the function knows (so that after
/// the queue's `maxReceiveCount` it lands in the dead-letter queue for an operator), or when
/// its work failed in a way a retry can fix: the store failed, the work panicked, or the
/// continuation could not be sent. Every step is idempotent, so a redelivered message redoes
/// only what is not done. Prints the batch's metrics to stdout as CloudWatch EMF lines.
pub async fn handle_batch(app: &App, event: SqsEvent) -> SqsBatchResponse {
    handle_batch_tallied(app, event).await.0
}

/// [`handle_batch`], also returning the batch's counts (what its metrics were printed from).
pub async fn handle_batch_tallied(app: &App, event: SqsEvent) -> (SqsBatchResponse, BatchTally) {
    proflake_lambda::handle_batch_tallied(&app.config().common, event, |message| {
        let app = app.clone();
        async move { handle_message(&app, message).await }
    })
    .await
}

/// The lambda_runtime entry point (wraps [`handle_batch`]); never returns `Err`, because an
/// error would make SQS redeliver the whole batch.
pub async fn function_handler(
    app: &App,
    event: LambdaEvent<SqsEvent>,
) -> Result<SqsBatchResponse, lambda_runtime::Error> {
    Ok(handle_batch(app, event.payload).await)
}

async fn handle_message(app: &App, message: SqsMessage) -> MessageOutcome<BatchTally> {
    let message_id = message.message_id.unwrap_or_default();
    let message_id = message_id.as_str();
    let mut report = MessageOutcome::<BatchTally>::default();
    match parse_request(message.body.as_deref().unwrap_or("")) {
        Err(e) => {
            let reason = e.kind().reason();
            report.tally.fail(reason);
            report.failed = true;
            error!(
                message_id,
                reason,
                error = error_chain(&e),
                "message is no request of the rehydrate function; it goes to the dead-letter \
                 queue after the queue's maxReceiveCount"
            );
        }
        Ok(Request::Test) => info!(message_id, "s3:TestEvent, nothing to do"),
        Ok(Request::Objects(events)) => {
            for event in events {
                let ok = handle_object(app, message_id, event, &mut report.tally).await;
                report.failed |= !ok;
            }
        }
        Ok(Request::Page(page)) => {
            report.failed = !run_page(app, message_id, page, &mut report.tally).await;
        }
    }
    report
}
