//! One SQS batch, published as a whole: the manifests its messages name go into one publish
//! (at most one commit per lake table); a sweep publishes every key; maintenance compacts.
//! Failures are reported per message, so SQS redelivers only those.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use lambda_runtime::LambdaEvent;
use proflake::lake::PublishScope;
use proflake::{error_chain, ObjectChange};
use proflake_lambda::Tally;
use tracing::{error, info, warn};

use crate::app::App;
use crate::message::{parse_request, Request};
use crate::tally::BatchTally;

/// The messages of a batch, sorted by what they ask for.
#[derive(Default)]
struct Work {
    /// Manifest keys (without the output prefix), with the messages that named each.
    manifests: BTreeMap<String, Vec<String>>,
    /// Messages asking for the sweep.
    sweeps: Vec<String>,
    /// Messages asking for maintenance.
    compactions: Vec<String>,
}

/// One SQS batch: never fails as a whole; failed messages are listed by message id.
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
    let started = Instant::now();
    let mut tally = BatchTally::default();
    let mut failed = BTreeSet::new();
    let work = sort_messages(app, event, &mut tally, &mut failed);

    if !work.manifests.is_empty() {
        let keys: Vec<String> = work.manifests.keys().cloned().collect();
        let ids: Vec<&String> = work.manifests.values().flatten().collect();
        match publish(app, PublishScope::Manifests(keys), &mut tally).await {
            Ok(settling) => {
                for key in settling {
                    info!(key, "conversion still settling its key; published later");
                    failed.extend(work.manifests.get(&key).into_iter().flatten().cloned());
                }
            }
            Err(()) => failed.extend(ids.into_iter().cloned()),
        }
    }
    if !work.sweeps.is_empty() && publish(app, PublishScope::All, &mut tally).await.is_err() {
        failed.extend(work.sweeps.iter().cloned());
    }
    if !work.compactions.is_empty() && compact(app, &mut tally).await.is_err() {
        failed.extend(work.compactions.iter().cloned());
    }

    let response = proflake_lambda::finish_batch(&app.config().common, &mut tally, failed, started);
    (response, tally)
}

/// The lambda_runtime entry point (wraps [`handle_batch`]); never returns `Err`, because an
/// error would make SQS redeliver the whole batch.
pub async fn function_handler(
    app: &App,
    event: LambdaEvent<SqsEvent>,
) -> Result<SqsBatchResponse, lambda_runtime::Error> {
    Ok(handle_batch(app, event.payload).await)
}

/// Parses every message, counting what needs no work and failing what cannot be read.
fn sort_messages(
    app: &App,
    event: SqsEvent,
    tally: &mut BatchTally,
    failed: &mut BTreeSet<String>,
) -> Work {
    let config = app.config();
    let mut work = Work::default();
    for message in event.records {
        let message_id = message.message_id.unwrap_or_default();
        match parse_request(message.body.as_deref().unwrap_or("")) {
            Err(e) => {
                let reason = e.kind().reason();
                tally.fail(reason);
                failed.insert(message_id.clone());
                error!(
                    message_id,
                    reason,
                    error = error_chain(&e),
                    "message is no request of the publish function; it goes to the dead-letter \
                     queue after the queue's maxReceiveCount"
                );
            }
            Ok(Request::Test) => info!(message_id, "s3:TestEvent, nothing to do"),
            Ok(Request::Sweep) => work.sweeps.push(message_id),
            Ok(Request::Compact) => work.compactions.push(message_id),
            Ok(Request::Objects(events)) => {
                for event in events {
                    let manifest = (event.change == ObjectChange::Created
                        && event.bucket == config.output_bucket)
                        .then(|| event.key.strip_prefix(&config.common.output_prefix))
                        .flatten()
                        .filter(|k| k.starts_with("converted/") && k.ends_with("/manifest.json"));
                    match manifest {
                        Some(key) => {
                            tally.manifests += 1;
                            work.manifests
                                .entry(key.to_owned())
                                .or_default()
                                .push(message_id.clone());
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
        }
    }
    work
}

/// Publishes `scope` off the runtime; the manifests still settling, or `Err` when the
/// publish failed (logged and counted).
async fn publish(
    app: &App,
    scope: PublishScope,
    tally: &mut BatchTally,
) -> Result<Vec<String>, ()> {
    let started = Instant::now();
    let stores = app.stores();
    let lake = app.lake();
    let job = tokio::task::spawn_blocking(move || {
        let lake = lake?;
        lake.publish(&*stores.uploads, &*stores.outputs, &scope)
    });
    let duration_ms = started.elapsed().as_millis() as u64;
    match job.await {
        Ok(Ok(report)) => {
            tally.record_publish(&report);
            for q in &report.quarantined {
                warn!(
                    key = q.key.as_str(),
                    reason = q.reason.as_str(),
                    error = q.error.as_str(),
                    "not published"
                );
            }
            info!(
                keys = report.keys,
                published = report.published,
                replaced = report.replaced,
                removed = report.removed,
                up_to_date = report.up_to_date,
                rows = report.rows,
                commits = report.commits,
                commit_retries = report.commit_retries,
                duration_ms = started.elapsed().as_millis() as u64,
                "published"
            );
            Ok(report.settling)
        }
        Ok(Err(e)) => {
            tally.fail(e.kind().reason());
            error!(
                reason = e.kind().reason(),
                error = error_chain(&e),
                duration_ms,
                "publish failed; its messages will be retried"
            );
            Err(())
        }
        Err(join) => {
            tally.fail("panic");
            error!(reason = "panic", error = %join, "publish panicked; its messages will be retried");
            Err(())
        }
    }
}

/// Compacts, checkpoints and vacuums the lake off the runtime.
async fn compact(app: &App, tally: &mut BatchTally) -> Result<(), ()> {
    let lake = app.lake();
    let job = tokio::task::spawn_blocking(move || lake?.compact());
    match job.await {
        Ok(Ok(report)) => {
            tally.record_compact(&report);
            info!(
                partitions = report.partitions_compacted,
                files_added = report.files_added,
                files_removed = report.files_removed,
                files_vacuumed = report.files_vacuumed,
                "lake compacted"
            );
            Ok(())
        }
        Ok(Err(e)) => {
            tally.fail(e.kind().reason());
            error!(
                reason = e.kind().reason(),
                error = error_chain(&e),
                "compaction failed"
            );
            Err(())
        }
        Err(join) => {
            tally.fail("panic");
            error!(reason = "panic", error = %join, "compaction panicked");
            Err(())
        }
    }
}
