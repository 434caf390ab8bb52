//! One object event of a message: processed off the async runtime, logged as one line, counted.

use proflake::{
    events::ObjectChange, events::ObjectEvent, process_upload, Outcome, ProcessOptions,
};
use proflake_lambda::{off_runtime, work_failed};
use tracing::{info, warn};

use crate::app::App;
use crate::tally::BatchTally;

/// Processes `event` and counts it in `tally`. `false` when it failed in a way a retry of the
/// message can fix (the store failed, or the conversion panicked).
pub(crate) async fn handle_object(
    app: &App,
    message_id: &str,
    event: ObjectEvent,
    tally: &mut BatchTally,
) -> bool {
    tally.objects += 1;
    let bucket = event.bucket.as_str();
    let key = event.key.as_str();
    if event.change != ObjectChange::Created {
        tally.skipped += 1;
        info!(
            message_id,
            bucket,
            key,
            event_name = event.event_name.as_str(),
            outcome = "skipped",
            reason = "not_created",
            "object skipped"
        );
        return true;
    }
    let stores = app.stores_for(bucket);
    let options = ProcessOptions {
        limits: app.config().common.limits.clone(),
        stream_above_bytes: app.config().stream_above_bytes,
        require_start_time: app.config().require_start_time,
        ..ProcessOptions::default()
    };
    let job_key = event.key.clone();
    let (result, duration_ms) =
        off_runtime(move || process_upload(&*stores.uploads, &*stores.outputs, &job_key, &options))
            .await;
    match result {
        Ok(outcome) => {
            tally.record(&outcome);
            log_outcome(message_id, bucket, &outcome, duration_ms);
            true
        }
        Err(failure) => {
            work_failed!(
                tally,
                &failure,
                duration_ms,
                [message_id, bucket, key],
                "object failed; the message will be retried",
                "conversion panicked; the message will be retried",
            );
            false
        }
    }
}

fn log_outcome(message_id: &str, bucket: &str, outcome: &Outcome, duration_ms: u64) {
    match outcome {
        Outcome::Converted(c) => info!(
            message_id,
            bucket,
            key = c.key.as_str(),
            outcome = "converted",
            source_id = c.source_id.as_str(),
            format = c.format.as_str(),
            bytes = c.bytes,
            samples = c.samples,
            objects = c.objects,
            pieces = c.pieces,
            replaced = c.replaced.as_deref(),
            duration_ms,
            "object converted"
        ),
        Outcome::AlreadyConverted { key, manifest_key } => info!(
            message_id,
            bucket,
            key = key.as_str(),
            outcome = "already_converted",
            manifest_key = manifest_key.as_str(),
            duration_ms,
            "object already converted"
        ),
        // The upload is bad, not the function: an operator reads the report, nothing retries.
        Outcome::Quarantined(q) => warn!(
            message_id,
            bucket,
            key = q.key.as_str(),
            outcome = "quarantined",
            reason = q.reason,
            report_key = q.report_key.as_str(),
            bytes = q.bytes,
            duration_ms,
            error = q.message.as_str(),
            "object quarantined"
        ),
        Outcome::Skipped { key, why } => info!(
            message_id,
            bucket,
            key = key.as_str(),
            outcome = "skipped",
            reason = why.name(),
            duration_ms,
            "object skipped"
        ),
    }
}
