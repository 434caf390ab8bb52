//! One SQS batch: each message's notification turned into uploads to convert. Concurrency,
//! panics, partial batch failures and metrics are `proflake_lambda`'s.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use lambda_runtime::LambdaEvent;
use proflake::{error_chain, parse_notification, Notification};
use proflake_lambda::{MessageOutcome, Tally};
use tracing::{error, info};

use crate::app::App;
use crate::object::handle_object;
use crate::tally::BatchTally;

/// One SQS batch: never fails as a whole; failed messages are listed by message id.
///
/// A message fails when its body is not an object notification (so that after the queue's
/// `maxReceiveCount` it lands in the dead-letter queue for an operator, rather than being
/// dropped) or when any of its objects failed transiently. Its objects that succeeded are
/// processed again on redelivery, which finds them already converted. A message without a
/// message id is still processed; if it fails it is reported with an empty identifier, which
/// Lambda treats as a failure of the whole batch, the only safe reading.
///
/// Prints the batch's metrics to stdout as CloudWatch EMF lines before returning.
pub async fn handle_batch(app: &App, event: SqsEvent) -> SqsBatchResponse {
    proflake_lambda::handle_batch(&app.config().common, event, |message| {
        let app = app.clone();
        async move { handle_message(&app, message).await }
    })
    .await
}

/// The lambda_runtime entry point (wraps [`handle_batch`]); never returns `Err`, because an
/// error would make SQS redeliver the whole batch, converted messages included.
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
    match parse_notification(message.body.as_deref().unwrap_or("")) {
        Err(e) => {
            let reason = e.kind().reason();
            report.tally.fail(reason);
            report.failed = true;
            error!(
                message_id,
                reason,
                error = error_chain(&e),
                "message is not an object notification; it goes to the dead-letter queue \
                 after the queue's maxReceiveCount"
            );
        }
        Ok(Notification::Test) => info!(message_id, "s3:TestEvent, nothing to do"),
        Ok(Notification::Objects(events)) => {
            // One after the other: a message's records are usually one object, and the batch
            // already runs messages side by side.
            for event in events {
                let ok = handle_object(app, message_id, event, &mut report.tally).await;
                report.failed |= !ok;
            }
        }
    }
    report
}

/// The batch's summary line (see [`Tally::log_batch`]); logged from here, as the batch's line.
pub(crate) fn log_batch_done(tally: &BatchTally, duration_ms: u64) {
    info!(
        objects = tally.objects,
        converted = tally.converted,
        already_converted = tally.already_converted,
        quarantined = tally.quarantined,
        skipped = tally.skipped,
        failed_messages = tally.failed_messages,
        duration_ms,
        "batch done"
    );
}
