//! A debug file notified on the queue: added to the symbol store off the async runtime, logged
//! as one line, counted, and followed by the first page of its build ID's rehydration.

use proflake::{events::ObjectChange, events::ObjectEvent};
use proflake::{symbols::add_debug_file, symbols::DebugFileOutcome};
use proflake_lambda::{off_runtime, work_failed};
use tracing::{info, warn};

use crate::app::App;
use crate::message::{Page, Scope};
use crate::page::run_page;
use crate::tally::BatchTally;

/// Adds the debug file `event` names and, when it is (or already was) its build ID's symbols,
/// runs the first page of that build ID's rehydration. `false` when the message should be
/// retried (the store failed, the work panicked, or the continuation could not be sent).
///
/// A Kept file rehydrates too: the file in use delivered again is how a message whose first
/// delivery stored the symbols but failed before its rehydration finished gets it done (pages
/// find up-to-date uploads cheaply).
pub(crate) async fn handle_object(
    app: &App,
    message_id: &str,
    event: ObjectEvent,
    tally: &mut BatchTally,
) -> bool {
    let Some(key) = debug_file_key(app, message_id, &event, tally) else {
        return true;
    };
    let bucket = event.bucket.as_str();
    let stores = app.stores();
    let max_bytes = app.config().common.limits.max_debug_file_bytes;
    let job_key = key.clone();
    // Building a lookup cache is CPU-bound and S3Store blocks on the runtime.
    let (result, duration_ms) =
        off_runtime(move || add_debug_file(&*stores.outputs, &job_key, max_bytes)).await;
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(failure) => {
            work_failed!(
                tally,
                &failure,
                duration_ms,
                [message_id, bucket, key = key.as_str()],
                "debug file failed; the message will be retried",
                "debug file panicked; the message will be retried",
            );
            return false;
        }
    };
    tally.record_debug_file(&outcome);
    log_debug_file(message_id, bucket, &outcome, duration_ms);
    let build_id = match outcome {
        DebugFileOutcome::Stored { meta, .. } => meta.build_id,
        DebugFileOutcome::Kept { build_id, .. } => build_id,
        DebugFileOutcome::Refused { .. } | DebugFileOutcome::Skipped { .. } => return true,
    };
    let page = Page {
        scope: Scope::BuildId(build_id.into()),
        after: None,
    };
    run_page(app, message_id, page, tally).await
}

/// The key (under the output prefix) of the debug file `event` names; `None`, logged and
/// counted as skipped, when it names none: not a creation, another bucket, outside the prefix.
fn debug_file_key(
    app: &App,
    message_id: &str,
    event: &ObjectEvent,
    tally: &mut BatchTally,
) -> Option<String> {
    let config = app.config();
    let bucket = event.bucket.as_str();
    let skip = |tally: &mut BatchTally, reason: &str| {
        tally.skipped += 1;
        info!(
            message_id,
            bucket,
            key = event.key.as_str(),
            event_name = event.event_name.as_str(),
            outcome = "skipped",
            reason,
            "object skipped"
        );
        None
    };
    if event.change != ObjectChange::Created {
        return skip(tally, "not_created");
    }
    if bucket != config.output_bucket {
        warn!(
            message_id,
            bucket,
            output_bucket = config.output_bucket.as_str(),
            "notification from a bucket other than the output bucket"
        );
        return skip(tally, "not_output_bucket");
    }
    match event.key.strip_prefix(&config.common.output_prefix) {
        Some(key) => Some(key.to_owned()),
        None => skip(tally, "outside_prefix"),
    }
}

fn log_debug_file(message_id: &str, bucket: &str, outcome: &DebugFileOutcome, duration_ms: u64) {
    match outcome {
        DebugFileOutcome::Stored {
            key,
            meta,
            replaced,
        } => info!(
            message_id,
            bucket,
            key = key.as_str(),
            outcome = "stored",
            build_id = meta.build_id.as_str(),
            quality = ?meta.quality,
            file_format = meta.file_format.as_str(),
            arch = meta.arch.as_str(),
            symcache_key = meta.symcache_key.as_str(),
            symcache_bytes = meta.symcache_bytes,
            replaced = replaced.as_ref().map(|r| r.debug_file_key.as_str()),
            duration_ms,
            "debug file stored"
        ),
        DebugFileOutcome::Kept {
            key,
            build_id,
            in_use,
            ..
        } => info!(
            message_id,
            bucket,
            key = key.as_str(),
            outcome = "kept",
            build_id = build_id.as_str(),
            in_use = in_use.debug_file_key.as_str(),
            duration_ms,
            "debug file not better than the one in use"
        ),
        // The file is bad, not the function: an operator reads the report, nothing retries.
        DebugFileOutcome::Refused {
            key,
            report_key,
            reason,
            message,
        } => warn!(
            message_id,
            bucket,
            key = key.as_str(),
            outcome = "refused",
            reason,
            report_key = report_key.as_str(),
            duration_ms,
            error = message.as_str(),
            "debug file refused"
        ),
        DebugFileOutcome::Skipped { key, why } => info!(
            message_id,
            bucket,
            key = key.as_str(),
            outcome = "skipped",
            reason = why,
            duration_ms,
            "object skipped"
        ),
    }
}
