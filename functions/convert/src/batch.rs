//! One SQS batch: its messages converted concurrently, failures reported per message so SQS
//! redelivers only those (the event source mapping needs `ReportBatchItemFailures`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};
use lambda_runtime::LambdaEvent;
use proflake::{parse_notification, Notification};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tracing::{error, info, info_span, Instrument};

use crate::app::App;
use crate::metrics::{emf_documents, print_documents, MetricsTarget};
use crate::object::handle_object;
use crate::tally::BatchTally;
use proflake::error_chain;

/// What became of one message.
struct MessageReport {
    message_id: String,
    failed: bool,
    tally: BatchTally,
}

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
    let started = Instant::now();
    let permits = Arc::new(Semaphore::new(app.config().concurrency));
    let mut tasks = JoinSet::new();
    let mut ids = HashMap::new();
    for message in event.records {
        let message_id = message.message_id.clone().unwrap_or_default();
        let span = info_span!("message", message_id = message_id.as_str());
        let (app, permits) = (app.clone(), permits.clone());
        let task = tasks.spawn(
            async move {
                let _permit = permits.acquire_owned().await;
                handle_message(&app, message).await
            }
            .instrument(span),
        );
        ids.insert(task.id(), message_id);
    }

    let mut tally = BatchTally::default();
    let mut failed = Vec::new();
    while let Some(joined) = tasks.join_next_with_id().await {
        match joined {
            Ok((_, report)) => {
                tally.merge(report.tally);
                if report.failed {
                    failed.push(report.message_id);
                }
            }
            Err(join_error) => {
                let message_id = ids.remove(&join_error.id()).unwrap_or_default();
                error!(
                    message_id,
                    reason = "panic",
                    error = %join_error,
                    "message task panicked; the message will be retried"
                );
                tally.fail("panic");
                failed.push(message_id);
            }
        }
    }
    failed.sort();
    tally.failed_messages = failed.len() as u64;

    let duration_ms = started.elapsed().as_millis() as u64;
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
    let target = MetricsTarget {
        namespace: &app.config().metrics_namespace,
        function_name: &app.config().function_name,
    };
    print_documents(&emf_documents(target, &tally, duration_ms, now_ms()));

    let mut response = SqsBatchResponse::default();
    response.batch_item_failures = failed
        .into_iter()
        .map(|message_id| {
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = message_id;
            failure
        })
        .collect();
    response
}

/// The lambda_runtime entry point (wraps [`handle_batch`]); never returns `Err`, because an
/// error would make SQS redeliver the whole batch, converted messages included.
pub async fn function_handler(
    app: &App,
    event: LambdaEvent<SqsEvent>,
) -> Result<SqsBatchResponse, lambda_runtime::Error> {
    Ok(handle_batch(app, event.payload).await)
}

async fn handle_message(app: &App, message: SqsMessage) -> MessageReport {
    let message_id = message.message_id.unwrap_or_default();
    let mut report = MessageReport {
        message_id,
        failed: false,
        tally: BatchTally::default(),
    };
    let message_id = report.message_id.as_str();
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

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
