//! The convert function as `proflake_lambda` runs it: a message is an S3 notification, and each
//! object it names is converted.

use std::future::Future;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use proflake::{parse_notification, Notification, ObjectEvent};
use proflake_lambda::{each_message, s3_client_from_env, Function, PerMessage};

use crate::app::App;
use crate::config::Config;
use crate::object::handle_object;
use crate::tally::BatchTally;

impl Function for App {
    const NAME: &'static str = "convert";
    const NOT_A_REQUEST: &'static str = "message is not an object notification";
    type Config = Config;
    type Counters = BatchTally;
    type Request = Vec<ObjectEvent>;

    /// The S3 client from the standard AWS environment (`AWS_ENDPOINT_URL` /
    /// `AWS_ENDPOINT_URL_S3` honoured by aws-config; path-style addressing when either is set,
    /// because moto and MinIO cannot resolve `bucket.host` names).
    async fn from_env(config: Config) -> App {
        App::new(config, s3_client_from_env().await)
    }

    fn config(&self) -> &Config {
        &self.config
    }

    fn parse(body: &str) -> proflake::Result<Option<Vec<ObjectEvent>>> {
        Ok(match parse_notification(body)? {
            Notification::Test => None,
            Notification::Objects(events) => Some(events),
        })
    }

    fn batch(
        &self,
        event: SqsEvent,
    ) -> impl Future<Output = (SqsBatchResponse, BatchTally)> + Send {
        each_message(self, event)
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

impl PerMessage for App {
    async fn handle(
        &self,
        message_id: &str,
        events: Vec<ObjectEvent>,
        tally: &mut BatchTally,
    ) -> bool {
        // One after the other: a message's records are usually one object, and the batch
        // already runs messages side by side.
        let mut done = true;
        for event in events {
            done &= handle_object(self, message_id, event, tally).await;
        }
        done
    }
}
