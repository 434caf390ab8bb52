//! The lake's work for a batch, off the async runtime: a publish and a compaction, each logged
//! and counted.

use std::time::Instant;

use proflake::error_chain;
use proflake::lake::PublishScope;
use proflake_lambda::{Failure, Tally};
use tracing::{error, info, warn};

use crate::app::App;
use crate::tally::BatchTally;

/// Publishes `scope` off the runtime; the manifests still settling, or `Err` when the
/// publish failed (logged and counted).
pub(crate) async fn publish(
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
    let result = Failure::joined(job.await);
    let duration_ms = started.elapsed().as_millis() as u64;
    let report = match result {
        Ok(report) => report,
        Err(failure) => {
            tally.fail(failure.reason());
            match failure {
                Failure::Error(e) => error!(
                    reason = e.kind().reason(),
                    error = error_chain(&e),
                    duration_ms,
                    "publish failed; its messages will be retried"
                ),
                Failure::Panic(join) => error!(
                    reason = "panic",
                    error = %join,
                    "publish panicked; its messages will be retried"
                ),
            }
            return Err(());
        }
    };
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
        duration_ms,
        "published"
    );
    Ok(report.settling)
}

/// Compacts, checkpoints and vacuums the lake off the runtime; `Err` when that failed (logged
/// and counted).
pub(crate) async fn compact(app: &App, tally: &mut BatchTally) -> Result<(), ()> {
    let lake = app.lake();
    let job = tokio::task::spawn_blocking(move || lake?.compact());
    match Failure::joined(job.await) {
        Ok(report) => {
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
        Err(failure) => {
            tally.fail(failure.reason());
            match failure {
                Failure::Error(e) => error!(
                    reason = e.kind().reason(),
                    error = error_chain(&e),
                    "compaction failed"
                ),
                Failure::Panic(join) => {
                    error!(reason = "panic", error = %join, "compaction panicked")
                }
            }
            Err(())
        }
    }
}
