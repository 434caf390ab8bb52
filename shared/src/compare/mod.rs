//! Comparing two releases of a service: which functions' shares of a series changed beyond
//! noise, from the uploads' `function_rollup` rows (`docs/compare.md`).

mod flags;
mod releases;
mod report;
mod rollups;
mod stats;

pub use releases::{report_releases, ReleaseReport};
pub(crate) use report::CompareReport;

use crate::error::Result;
use crate::tables::{Table, TablesFrom};

/// What to compare, and the thresholds of a flag ([`CompareRequest::new`] sets the defaults).
#[derive(Clone, Debug)]
pub struct CompareRequest {
    /// The uploads' service (`service` in the tables).
    pub service: String,
    /// Only uploads of this environment; every environment when `None`.
    pub environment: Option<String>,
    /// The release compared against (`release` in the tables).
    pub base: String,
    /// The release compared.
    pub head: String,
    /// Only this series (`sample_type`); every series of the uploads when `None`.
    pub series: Option<String>,
    /// Fewest uploads of each release (20).
    pub min_uploads: usize,
    /// Fewest samples (self rows) of each release (10,000).
    pub min_samples: u64,
    /// Least change of a share to flag, relative to the base share (0.10: 10%).
    pub min_relative: f64,
    /// Least change of a share to flag, in share (0.005: half a percentage point).
    pub min_absolute: f64,
    /// The false discovery rate (0.01).
    pub max_q: f64,
}

impl CompareRequest {
    /// A comparison of `head` against `base` of `service`, with the default thresholds.
    pub fn new(service: &str, base: &str, head: &str) -> Self {
        let t = flags::Thresholds::default();
        CompareRequest {
            service: service.to_owned(),
            environment: None,
            base: base.to_owned(),
            head: head.to_owned(),
            series: None,
            min_uploads: t.min_uploads,
            min_samples: t.min_samples,
            min_relative: t.min_relative,
            min_absolute: t.min_absolute,
            max_q: t.max_q,
        }
    }
}

/// Compares two releases from the `function_rollup` table of `source` (the landing tables of
/// a store, or the lake).
pub fn compare_releases(source: TablesFrom<'_>, request: &CompareRequest) -> Result<CompareReport> {
    // Only the columns compared: each column of each file costs a decompressor.
    let rollups = source.read_columns(Table::FunctionRollup, None, None, rollups::PROJECTION)?;
    compare_batch(&rollups, request)
}

/// Compares two releases from a `function_rollup` batch already read.
fn compare_batch(
    batch: &arrow_array::RecordBatch,
    request: &CompareRequest,
) -> Result<CompareReport> {
    let selection = rollups::Selection {
        service: &request.service,
        environment: request.environment.as_deref(),
        base: &request.base,
        head: &request.head,
    };
    let thresholds = flags::Thresholds {
        min_uploads: request.min_uploads,
        min_samples: request.min_samples,
        min_relative: request.min_relative,
        min_absolute: request.min_absolute,
        max_q: request.max_q,
        ..flags::Thresholds::default()
    };
    let mut series = Vec::new();
    for ((sample_type, sample_unit), rows) in rollups::select(batch, &selection)? {
        if request.series.as_ref().is_some_and(|s| *s != sample_type) {
            continue;
        }
        let counts = matches!(sample_unit.as_str(), "count" | "samples");
        let rows = rows.iter().map(rollups::Row::borrowed);
        let comparison = flags::compare(rows, &thresholds, counts);
        series.push(report::SeriesComparison {
            sample_type,
            sample_unit,
            comparison,
        });
    }
    let count = |verdict| {
        series
            .iter()
            .flat_map(|s| &s.comparison.functions)
            .filter(|f| f.verdict == verdict)
            .count()
    };
    Ok(CompareReport {
        markdown: report::markdown(&selection, &series),
        json: report::json(&selection, &series),
        regressions: count(flags::Verdict::Regression),
        improvements: count(flags::Verdict::Improvement),
    })
}
