//! One object event of a message: processed off the async runtime, logged as one line, counted.

use std::time::Instant;

use proflake::{process_upload, ObjectChange, ObjectEvent, Outcome, ProcessOptions};
use proflake_lambda::Tally;
use tracing::{error, info, warn};

use crate::app::App;
use crate::tally::BatchTally;
use proflake::error_chain;

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
        ..ProcessOptions::default()
    };
    let started = Instant::now();
    let span = tracing::Span::current();
    let job_key = event.key.clone();
    // Conversion is CPU-bound and S3Store blocks on the runtime: neither may run on a worker.
    let job = tokio::task::spawn_blocking(move || {
        let _span = span.enter();
        process_upload(&*stores.uploads, &*stores.outputs, &job_key, &options)
    });
    let result = job.await;
    let duration_ms = started.elapsed().as_millis() as u64;
    match result {
        Ok(Ok(outcome)) => {
            tally.record(&outcome);
            log_outcome(message_id, bucket, &outcome, duration_ms);
            true
        }
        Ok(Err(e)) => {
            tally.fail(e.kind().reason());
            error!(
                message_id,
                bucket,
                key,
                reason = e.kind().reason(),
                transient = e.kind().is_transient(),
                duration_ms,
                error = error_chain(&e),
                "object failed; the message will be retried"
            );
            false
        }
        Err(join_error) => {
            tally.fail("panic");
            error!(
                message_id,
                bucket,
                key,
                reason = "panic",
                duration_ms,
                error = %join_error,
                "conversion panicked; the message will be retried"
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
