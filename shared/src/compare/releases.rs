//! Release reports: each release of a service that has reached the minimum number of uploads
//! is compared with the release before it, and the report written beside the tables as
//! `reports/<service>/<release>.md` and `.json` (the JSON last: it says the pair is done).
//!
//! "Before" is by the first hour a release has samples in `function_rollup`, so release names
//! need no ordering of their own. A report is written again only when either release has
//! gained or lost uploads since, so the job is safe to run after every publish.

use std::collections::BTreeMap;

use arrow_array::cast::AsArray;
use arrow_array::types::TimestampMicrosecondType;
use arrow_array::{Array, RecordBatch};
use rustc_hash::FxHashSet;

use super::{compare_batch, CompareRequest};
use crate::error::{ErrorKind, Result};
use crate::store::keys::key_segment;
use crate::store::ObjectStore;
use crate::tables::{read_tables, Table};

/// Where release reports are kept.
pub const REPORTS_PREFIX: &str = "reports/";

/// One release compared with the one before it.
#[derive(Clone, Debug, PartialEq)]
pub struct ReleaseReport {
    /// The service.
    pub service: String,
    /// The release before.
    pub base: String,
    /// The release reported on.
    pub head: String,
    /// `reports/<service>/<head>.md`.
    pub markdown_key: String,
    /// `reports/<service>/<head>.json`.
    pub json_key: String,
    /// Functions flagged slower.
    pub regressions: usize,
    /// Functions flagged faster.
    pub improvements: usize,
    /// The largest growth of a regressed function's share, in percentage points (0 without
    /// regressions).
    pub max_share_increase: f64,
    /// Whether this run wrote the report (false: it was already there, for the same uploads).
    pub written: bool,
}

/// A release's uploads and first hour.
#[derive(Default)]
struct Release {
    uploads: FxHashSet<String>,
    first_hour: i64,
}

/// Writes the reports of every release (of every service) with at least
/// `defaults.min_uploads` uploads whose previous release has as many, comparing with
/// `defaults`' thresholds (its service and releases are not used). Returns every such pair,
/// written now or before.
pub fn report_releases(
    store: &dyn ObjectStore,
    defaults: &CompareRequest,
) -> Result<Vec<ReleaseReport>> {
    let tables = read_tables(store, &[Table::FunctionRollup], None, None)?;
    let batch = &tables.function_rollup;
    let mut reports = Vec::new();
    for (service, releases) in releases_by_service(batch)? {
        let mut ready: Vec<(&String, &Release)> = releases
            .iter()
            .filter(|(_, r)| r.uploads.len() >= defaults.min_uploads)
            .collect();
        ready.sort_by_key(|(name, r)| (r.first_hour, (*name).clone()));
        for pair in ready.windows(2) {
            let ((base, base_release), (head, head_release)) = (pair[0], pair[1]);
            let uploads = [base_release.uploads.len(), head_release.uploads.len()];
            reports.push(report_pair(
                store, batch, defaults, &service, base, head, uploads,
            )?);
        }
    }
    Ok(reports)
}

fn report_pair(
    store: &dyn ObjectStore,
    batch: &RecordBatch,
    defaults: &CompareRequest,
    service: &str,
    base: &str,
    head: &str,
    uploads: [usize; 2],
) -> Result<ReleaseReport> {
    let stem = format!(
        "{REPORTS_PREFIX}{}/{}",
        key_segment(service),
        key_segment(head)
    );
    let (markdown_key, json_key) = (format!("{stem}.md"), format!("{stem}.json"));
    let counts = serde_json::json!({"base": uploads[0], "head": uploads[1]});
    let mut out = ReleaseReport {
        service: service.to_owned(),
        base: base.to_owned(),
        head: head.to_owned(),
        markdown_key,
        json_key,
        regressions: 0,
        improvements: 0,
        max_share_increase: 0.0,
        written: false,
    };
    if let Some(existing) = store.get(&out.json_key)? {
        if let Ok(json) = serde_json::from_slice::<serde_json::Value>(&existing) {
            if json["base"] == base && json["uploads"] == counts {
                out.tally(&json);
                return Ok(out);
            }
        }
    }
    let request = CompareRequest {
        service: service.to_owned(),
        base: base.to_owned(),
        head: head.to_owned(),
        environment: None,
        ..defaults.clone()
    };
    let report = compare_batch(batch, &request)?;
    let mut json = report.json;
    json["uploads"] = counts;
    store.put(&out.markdown_key, report.markdown.as_bytes())?;
    let bytes = serde_json::to_vec_pretty(&json).map_err(|e| {
        crate::Error::from(ErrorKind::Export {
            format: "release report",
            what: e.to_string(),
        })
    })?;
    store.put(&out.json_key, &bytes)?;
    out.tally(&json);
    out.written = true;
    Ok(out)
}

impl ReleaseReport {
    fn tally(&mut self, json: &serde_json::Value) {
        let list = |name: &str| json[name].as_array().cloned().unwrap_or_default();
        let regressions = list("regressions");
        self.regressions = regressions.len();
        self.improvements = list("improvements").len();
        self.max_share_increase = regressions
            .iter()
            .filter_map(|f| f["change"].as_f64())
            .fold(0.0, f64::max)
            * 100.0;
    }
}

/// Every service's releases with their uploads and first hour.
fn releases_by_service(batch: &RecordBatch) -> Result<BTreeMap<String, BTreeMap<String, Release>>> {
    let text = |name: &str| {
        batch
            .column_by_name(name)
            .and_then(|c| c.as_string_opt::<i32>())
            .ok_or_else(|| super::rollups::column_error(name))
    };
    let (source, service, release) = (text("source_id")?, text("service")?, text("release")?);
    let hour = batch
        .column_by_name("hour")
        .and_then(|c| c.as_primitive_opt::<TimestampMicrosecondType>())
        .ok_or_else(|| super::rollups::column_error("hour"))?;
    let mut out: BTreeMap<String, BTreeMap<String, Release>> = BTreeMap::new();
    for i in 0..batch.num_rows() {
        if service.is_null(i) || release.is_null(i) {
            continue;
        }
        let r = out
            .entry(service.value(i).to_owned())
            .or_default()
            .entry(release.value(i).to_owned())
            .or_insert_with(|| Release {
                uploads: FxHashSet::default(),
                first_hour: i64::MAX,
            });
        if !r.uploads.contains(source.value(i)) {
            r.uploads.insert(source.value(i).to_owned());
        }
        r.first_hour = r.first_hour.min(hour.value(i));
    }
    Ok(out)
}
