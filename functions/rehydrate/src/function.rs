//! The rehydrate function as `proflake_lambda` runs it: a message is a debug file's
//! notification, the scheduled sweep, or a continuation, each handled on its own.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use proflake_lambda::{EachMessage, Function, PerMessage};

use crate::app::App;
use crate::debug_file::handle_object;
use crate::message::Request;
use crate::page::run_page;
use crate::tally::BatchTally;

impl Function for App {
    type Counters = BatchTally;
    type Request = Request;
    type Batch = EachMessage;
}

impl PerMessage for App {
    async fn handle(&self, message_id: &str, request: Request, tally: &mut BatchTally) -> bool {
        match request {
            Request::Test => true,
            Request::Objects(events) => {
                let mut done = true;
                for event in events {
                    done &= handle_object(self, message_id, event, tally).await;
                }
                done
            }
            Request::Page(page) => run_page(self, message_id, page, tally).await,
        }
    }
}

/// One SQS batch: never fails as a whole; failed messages are listed by message id.
///
/// A message fails when its body is none of the requests the function knows (so that after
/// the queue's `maxReceiveCount` it lands in the dead-letter queue for an operator), or when
/// its work failed in a way a retry can fix: the store failed, the work panicked, or the
/// continuation could not be sent. Every step is idempotent, so a redelivered message redoes
/// only what is not done. Prints the batch's metrics to stdout as CloudWatch EMF lines.
pub async fn handle_batch(app: &App, event: SqsEvent) -> SqsBatchResponse {
    app.batch(event).await.0
}

/// [`handle_batch`], also returning the batch's counts (what its metrics were printed from).
pub async fn handle_batch_tallied(app: &App, event: SqsEvent) -> (SqsBatchResponse, BatchTally) {
    app.batch(event).await
}
