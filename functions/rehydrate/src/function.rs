//! The rehydrate function as `proflake_lambda` runs it: a message is a debug file's
//! notification, the scheduled sweep, or a continuation, each handled on its own.

use std::future::Future;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use proflake_lambda::{aws_config_from_env, each_message, s3_client, Function, PerMessage};

use crate::app::App;
use crate::config::Config;
use crate::debug_file::handle_object;
use crate::message::{parse_request, Request};
use crate::page::run_page;
use crate::tally::BatchTally;

impl Function for App {
    const NAME: &'static str = "rehydrate";
    const NOT_A_REQUEST: &'static str = "message is no request of the rehydrate function";
    type Config = Config;
    type Counters = BatchTally;
    type Request = Request;

    /// S3 and SQS clients from the standard AWS environment (`AWS_ENDPOINT_URL` honoured by
    /// aws-config; path-style S3 addressing when it is set); continuations go to
    /// `PROFLAKE_REHYDRATE_QUEUE_URL`.
    async fn from_env(config: Config) -> App {
        let shared = aws_config_from_env().await;
        let sqs = aws_sdk_sqs::Client::new(&shared);
        App::new(config, s3_client(&shared), sqs)
    }

    fn config(&self) -> &Config {
        &self.config
    }

    fn parse(body: &str) -> proflake::Result<Option<Request>> {
        Ok(match parse_request(body)? {
            Request::Test => None,
            request => Some(request),
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
