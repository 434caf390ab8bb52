//! The publish function as `proflake_lambda` runs it: a batch is published as a whole. The
//! manifests its messages name go into one publish (at most one commit per lake table); a sweep
//! publishes every key; maintenance compacts.

use std::collections::{BTreeMap, BTreeSet};

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use proflake::lake::PublishScope;
use proflake::{events::ObjectChange, events::ObjectEvent};
use proflake_lambda::{AsAWhole, Function, WholeBatch};
use tracing::info;

use crate::app::App;
use crate::lake_work::{compact, publish, report_releases};
use crate::message::Request;
use crate::tally::BatchTally;

/// The messages of a batch, sorted by what they ask for.
#[derive(Default)]
pub struct Work {
    /// Manifest keys (without the output prefix), with the messages that named each.
    manifests: BTreeMap<String, Vec<String>>,
    /// Messages asking for the sweep.
    sweeps: Vec<String>,
    /// Messages asking for maintenance.
    compactions: Vec<String>,
}

impl Function for App {
    type Counters = BatchTally;
    type Request = Request;
    type Batch = AsAWhole;
}

impl WholeBatch for App {
    type Work = Work;

    fn gather(
        &self,
        work: &mut Work,
        message_id: String,
        request: Request,
        tally: &mut BatchTally,
    ) {
        match request {
            Request::Test => {}
            Request::Sweep => work.sweeps.push(message_id),
            Request::Compact => work.compactions.push(message_id),
            Request::Objects(events) => {
                for event in events {
                    self.gather_object(work, &message_id, &event, tally);
                }
            }
        }
    }

    async fn execute(&self, work: Work, tally: &mut BatchTally) -> BTreeSet<String> {
        let mut failed = BTreeSet::new();
        if !work.manifests.is_empty() {
            let keys: Vec<String> = work.manifests.keys().cloned().collect();
            match publish(self, PublishScope::Manifests(keys), tally).await {
                Ok(settling) => {
                    for key in settling {
                        info!(key, "conversion still settling its key; published later");
                        failed.extend(work.manifests.get(&key).into_iter().flatten().cloned());
                    }
                }
                Err(()) => failed.extend(work.manifests.into_values().flatten()),
            }
        }
        if !work.sweeps.is_empty() {
            match publish(self, PublishScope::All, tally).await {
                // The scheduled sweep also writes the release reports that are due.
                Ok(_) => report_releases(self).await,
                Err(()) => failed.extend(work.sweeps),
            }
        }
        if !work.compactions.is_empty() && compact(self, tally).await.is_err() {
            failed.extend(work.compactions);
        }
        failed
    }
}

impl App {
    /// Adds a manifest of the output bucket to the batch's publish; skips any other object.
    fn gather_object(
        &self,
        work: &mut Work,
        message_id: &str,
        event: &ObjectEvent,
        tally: &mut BatchTally,
    ) {
        let config = self.config();
        let manifest = (event.change == ObjectChange::Created
            && event.bucket == config.output_bucket)
            .then(|| event.key.strip_prefix(&config.common.output_prefix))
            .flatten()
            .filter(|k| proflake::Manifest::is_key(k));
        match manifest {
            Some(key) => {
                tally.manifests += 1;
                work.manifests
                    .entry(key.to_owned())
                    .or_default()
                    .push(message_id.to_owned());
            }
            None => {
                tally.skipped += 1;
                info!(
                    message_id,
                    bucket = event.bucket.as_str(),
                    key = event.key.as_str(),
                    "object skipped: not a manifest of the output bucket"
                );
            }
        }
    }
}

/// One SQS batch, published as a whole: never fails as a whole; failed messages are listed by
/// message id.
///
/// A message fails when its body is none of the requests the function knows (so that after
/// the queue's `maxReceiveCount` it lands in the dead-letter queue), when a manifest it names
/// belongs to a conversion still settling its key, or when its publish or maintenance failed
/// (the lake or the store failed, or the work panicked). Publishing is idempotent, so a
/// redelivered message redoes only what is not done. Prints the batch's metrics to stdout as
/// CloudWatch EMF lines.
pub async fn handle_batch(app: &App, event: SqsEvent) -> SqsBatchResponse {
    handle_batch_tallied(app, event).await.0
}

/// [`handle_batch`], also returning the batch's counts (what its metrics were printed from).
pub async fn handle_batch_tallied(app: &App, event: SqsEvent) -> (SqsBatchResponse, BatchTally) {
    app.batch(event).await
}
