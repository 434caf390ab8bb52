//! The work of one message: a debug file added to the symbol store, and a page of
//! rehydration, each off the async runtime, logged as one line and counted.

use std::time::Instant;

use proflake::pipeline::{
    add_debug_file, rehydrate, DebugFileOutcome, RehydrateOptions, RehydratePage, RehydrateScope,
};
use proflake::{error_chain, ObjectChange, ObjectEvent, Outcome, ProcessOptions};
use proflake_lambda::Tally;
use tracing::{error, info, warn};

use crate::app::App;
use crate::message::{Continuation, Page, Scope};
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
        true
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
    let Some(key) = event.key.strip_prefix(&config.common.output_prefix) else {
        return skip(tally, "outside_prefix");
    };
    let key = key.to_owned();
    let stores = app.stores();
    let max_bytes = config.common.limits.max_debug_file_bytes;
    let started = Instant::now();
    let span = tracing::Span::current();
    let job_key = key.clone();
    // Building a lookup cache is CPU-bound and S3Store blocks on the runtime.
    let job = tokio::task::spawn_blocking(move || {
        let _span = span.enter();
        add_debug_file(&*stores.outputs, &job_key, max_bytes)
    });
    let result = job.await;
    let duration_ms = started.elapsed().as_millis() as u64;
    let outcome = match result {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(e)) => {
            tally.fail(e.kind().reason());
            error!(
                message_id,
                bucket,
                key = key.as_str(),
                reason = e.kind().reason(),
                transient = e.kind().is_transient(),
                duration_ms,
                error = error_chain(&e),
                "debug file failed; the message will be retried"
            );
            return false;
        }
        Err(join_error) => {
            tally.fail("panic");
            error!(message_id, bucket, key = key.as_str(), reason = "panic", duration_ms, error = %join_error,
                "debug file panicked; the message will be retried");
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

/// Runs one page of rehydration and, when the scope has more, sends the continuation to the
/// function's own queue. `false` when the message should be retried: a retry redoes the page,
/// finding what it already converted up to date.
pub(crate) async fn run_page(
    app: &App,
    message_id: &str,
    page: Page,
    tally: &mut BatchTally,
) -> bool {
    let config = app.config();
    let stores = app.stores();
    let options = RehydrateOptions {
        process: ProcessOptions {
            limits: config.common.limits.clone(),
            ..ProcessOptions::default()
        },
        max_uploads: config.max_uploads,
        max_entries: config.max_entries,
        pending_grace: std::time::Duration::from_secs(config.pending_grace_seconds),
    };
    let started = Instant::now();
    let span = tracing::Span::current();
    let job_page = page.clone();
    let job = tokio::task::spawn_blocking(move || {
        let _span = span.enter();
        let scope = match &job_page.scope {
            Scope::BuildId(id) => RehydrateScope::BuildId(id),
            Scope::Sweep => RehydrateScope::Sweep,
        };
        rehydrate(
            &*stores.uploads,
            &*stores.outputs,
            scope,
            job_page.after.as_deref(),
            &options,
        )
    });
    let result = job.await;
    let duration_ms = started.elapsed().as_millis() as u64;
    let scope = page.scope.name();
    let build_id = page.scope.build_id();
    let after = page.after.as_deref();
    let done = match result {
        Ok(Ok(done)) => done,
        Ok(Err(e)) => {
            tally.fail(e.kind().reason());
            error!(
                message_id,
                scope,
                build_id,
                after,
                reason = e.kind().reason(),
                transient = e.kind().is_transient(),
                duration_ms,
                error = error_chain(&e),
                "rehydration failed; the message will be retried"
            );
            return false;
        }
        Err(join_error) => {
            tally.fail("panic");
            error!(message_id, scope, build_id, after, reason = "panic", duration_ms,
                error = %join_error, "rehydration panicked; the message will be retried");
            return false;
        }
    };
    tally.record_page(&done);
    log_page(message_id, &page, &done, duration_ms);
    let Some(next) = &done.next else {
        return true;
    };
    let body = Continuation::new(&page.scope, next).to_json();
    match app.queue().send(body).await {
        Ok(()) => {
            tally.continuations += 1;
            true
        }
        Err(e) => {
            tally.fail("continuation");
            error!(
                message_id,
                scope,
                build_id,
                next = next.as_str(),
                reason = "continuation",
                error = e.as_str(),
                "continuation not sent; the message will be retried"
            );
            false
        }
    }
}

fn log_page(message_id: &str, page: &Page, done: &RehydratePage, duration_ms: u64) {
    let scope = page.scope.name();
    let build_id = page.scope.build_id();
    info!(
        message_id,
        scope,
        build_id,
        after = page.after.as_deref(),
        looked_at = done.looked_at,
        reconverted = done.reconverted,
        up_to_date = done.up_to_date,
        frames_symbolized = done.frames_symbolized,
        pending_removed = done.pending_removed,
        pending_kept = done.pending_kept,
        next = done.next.as_deref(),
        duration_ms,
        "rehydration page done"
    );
    // A reconversion that did not convert is worth its own line: quarantined (the upload was
    // replaced by bad content meanwhile) or skipped (gone, overwritten).
    for outcome in &done.outcomes {
        match outcome {
            Outcome::Converted(_) | Outcome::AlreadyConverted { .. } => {}
            Outcome::Quarantined(q) => warn!(
                message_id,
                scope,
                key = q.key.as_str(),
                outcome = "quarantined",
                reason = q.reason,
                report_key = q.report_key.as_str(),
                error = q.message.as_str(),
                "upload quarantined on reconversion"
            ),
            Outcome::Skipped { key, why } => info!(
                message_id,
                scope,
                key = key.as_str(),
                outcome = "skipped",
                reason = why.name(),
                "upload skipped on reconversion"
            ),
        }
    }
}
