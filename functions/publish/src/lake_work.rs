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

/// Writes the release reports due after a sweep (`reports/<service>/<release>.md`, `.json`)
/// and prints, for each report written now, an EMF document with `RegressedFunctions` and
/// `MaxShareIncrease` (percentage points) by `Service` and by `FunctionName`, the second for
/// the template's alarm. A failure is logged: the publish it follows stands.
pub(crate) async fn report_releases(app: &App) {
    let stores = app.stores();
    let defaults = proflake::compare::CompareRequest::new("", "", "");
    let job = tokio::task::spawn_blocking(move || {
        proflake::compare::report_releases(&*stores.outputs, &defaults)
    });
    let reports = match Failure::joined(job.await) {
        Ok(reports) => reports,
        Err(Failure::Error(e)) => {
            error!(
                reason = e.kind().reason(),
                error = error_chain(&e),
                "release reports failed"
            );
            return;
        }
        Err(Failure::Panic(join)) => {
            error!(reason = "panic", error = %join, "release reports panicked");
            return;
        }
    };
    let config = &app.config().common;
    for r in reports.iter().filter(|r| r.written) {
        info!(
            service = r.service.as_str(),
            base = r.base.as_str(),
            head = r.head.as_str(),
            regressions = r.regressions,
            improvements = r.improvements,
            key = r.markdown_key.as_str(),
            "release report written"
        );
        proflake_lambda::print_documents(&[release_metrics(
            &config.metrics_namespace,
            &config.function_name,
            r,
            now_ms(),
        )]);
    }
}

/// One report's EMF document.
pub(crate) fn release_metrics(
    namespace: &str,
    function_name: &str,
    report: &proflake::compare::ReleaseReport,
    timestamp_ms: u64,
) -> serde_json::Value {
    serde_json::json!({
        "_aws": {
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [{
                "Namespace": namespace,
                "Dimensions": [["Service"], ["FunctionName"]],
                "Metrics": [
                    {"Name": "RegressedFunctions", "Unit": "Count"},
                    {"Name": "MaxShareIncrease", "Unit": "None"},
                ],
            }],
        },
        "Service": report.service,
        "FunctionName": function_name,
        "Release": report.head,
        "BaseRelease": report.base,
        "RegressedFunctions": report.regressions,
        "MaxShareIncrease": report.max_share_increase,
    })
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_release_report_is_one_emf_document_by_service_and_by_function() {
        let report = proflake::compare::ReleaseReport {
            service: "shop".into(),
            base: "1.0".into(),
            head: "1.1".into(),
            markdown_key: "reports/shop/1.1.md".into(),
            json_key: "reports/shop/1.1.json".into(),
            regressions: 2,
            improvements: 1,
            max_share_increase: 1.5,
            written: true,
        };
        let doc = release_metrics("proflake", "proflake-publish", &report, 7);
        let directive = &doc["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(
            directive["Dimensions"],
            serde_json::json!([["Service"], ["FunctionName"]])
        );
        let names: Vec<&str> = directive["Metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["Name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["RegressedFunctions", "MaxShareIncrease"]);
        // Every metric and dimension named in the directive is a member of the document.
        for name in names.iter().chain(&["Service", "FunctionName"]) {
            assert!(!doc[name].is_null(), "{name}");
        }
        assert_eq!(
            (
                doc["RegressedFunctions"].as_u64(),
                doc["MaxShareIncrease"].as_f64()
            ),
            (Some(2), Some(1.5))
        );
        assert_eq!(doc["Service"], "shop");
    }
}
