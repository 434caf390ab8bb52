//! The convert function as `proflake_lambda` runs it: a message is an S3 notification, and each
//! object it names is converted.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use proflake::events::Notification;
use proflake_lambda::{EachMessage, Function, PerMessage};

use crate::app::App;
use crate::object::handle_object;
use crate::tally::BatchTally;

impl Function for App {
    type Counters = BatchTally;
    type Request = Notification;
    type Batch = EachMessage;
}

impl PerMessage for App {
    async fn handle(
        &self,
        message_id: &str,
        request: Notification,
        tally: &mut BatchTally,
    ) -> bool {
        let Notification::Objects(events) = request else {
            return true;
        };
        // One after the other: a message's records are usually one object, and the batch
        // already runs messages side by side.
        let mut done = true;
        for event in events {
            done &= handle_object(self, message_id, event, tally).await;
        }
        done
    }
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
    app.batch(event).await.0
}
