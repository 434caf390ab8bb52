//! A page of rehydration: uploads of a scope converted again off the async runtime, logged as
//! one line, counted, and continued through the function's own queue when the scope has more.

use std::time::Duration;

use proflake::{rehydrate, RehydrateOptions, RehydratePage, RehydrateScope};
use proflake::{Outcome, ProcessOptions};
use proflake_lambda::{off_runtime, work_failed, Tally};
use tracing::{error, info, warn};

use crate::app::App;
use crate::message::{Continuation, Page, Scope};
use crate::tally::BatchTally;

/// Runs one page of rehydration and, when the scope has more, sends the continuation to the
/// function's own queue. `false` when the message should be retried: a retry redoes the page,
/// finding what it already converted up to date.
pub(crate) async fn run_page(
    app: &App,
    message_id: &str,
    page: Page,
    tally: &mut BatchTally,
) -> bool {
    let stores = app.stores();
    let options = options(app);
    let job_page = page.clone();
    let (result, duration_ms) = off_runtime(move || {
        let scope = match &job_page.scope {
            Scope::BuildId(id) => RehydrateScope::BuildId(id),
            Scope::Sweep => RehydrateScope::Sweep,
        };
        let after = job_page.after.as_deref();
        rehydrate(&*stores.uploads, &*stores.outputs, scope, after, &options)
    })
    .await;
    let scope = page.scope.name();
    let build_id = page.scope.build_id();
    let after = page.after.as_deref();
    let done = match result {
        Ok(done) => done,
        Err(failure) => {
            work_failed!(
                tally,
                &failure,
                duration_ms,
                [message_id, scope, build_id, after],
                "rehydration failed; the message will be retried",
                "rehydration panicked; the message will be retried",
            );
            return false;
        }
    };
    tally.record_page(&done);
    log_page(message_id, &page, &done, duration_ms);
    match &done.next {
        Some(next) => continue_scope(app, message_id, &page.scope, next, tally).await,
        None => true,
    }
}

/// What a page may do, from the settings.
fn options(app: &App) -> RehydrateOptions {
    let config = app.config();
    RehydrateOptions {
        process: ProcessOptions {
            limits: config.common.limits.clone(),
            ..ProcessOptions::default()
        },
        max_uploads: config.max_uploads,
        max_entries: config.max_entries,
        pending_grace: Duration::from_secs(config.pending_grace_seconds),
    }
}

/// Sends the continuation of `scope` after `next` to the function's own queue; `false` when it
/// could not be sent (logged and counted), so that the message is retried.
async fn continue_scope(
    app: &App,
    message_id: &str,
    scope: &Scope,
    next: &str,
    tally: &mut BatchTally,
) -> bool {
    let body = Continuation::new(scope, next).to_json();
    match app.queue().send(body).await {
        Ok(()) => {
            tally.continuations += 1;
            true
        }
        Err(e) => {
            tally.fail("continuation");
            error!(
                message_id,
                scope = scope.name(),
                build_id = scope.build_id(),
                next,
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
