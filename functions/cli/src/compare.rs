//! `proflake compare`: which functions of a service got slower or faster from one release to
//! the next, from a bucket directory's `function_rollup` tables.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use proflake::jobs::{compare_releases, CompareRequest};
use proflake::LocalDirStore;

#[derive(Args)]
pub(crate) struct CompareArgs {
    /// A directory that mirrors the bucket (with tables/v2/).
    #[arg(long)]
    store: PathBuf,
    /// The service whose releases are compared.
    #[arg(long)]
    service: String,
    /// The release compared against.
    #[arg(long)]
    base: String,
    /// The release compared.
    #[arg(long)]
    head: String,
    /// Only uploads of this environment (default: every environment).
    #[arg(long)]
    environment: Option<String>,
    /// Only this series (`sample_type`: cpu, wall, alloc_space, …; default: every series).
    #[arg(long)]
    series: Option<String>,
    /// Print the report as JSON instead of Markdown.
    #[arg(long)]
    json: bool,
    /// Fewest uploads of each release to flag anything (default 20).
    #[arg(long)]
    min_uploads: Option<usize>,
    /// Fewest samples of each release to flag anything (default 10,000).
    #[arg(long)]
    min_samples: Option<u64>,
    /// Least change of a share to flag, in percent of the base share.
    #[arg(long, default_value_t = 10.0)]
    min_change_percent: f64,
    /// Least change of a share to flag, in percentage points.
    #[arg(long, default_value_t = 0.5)]
    min_change_points: f64,
    /// The false discovery rate across the functions tested.
    #[arg(long, default_value_t = 0.01)]
    fdr: f64,
}

pub(crate) fn compare(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let store = LocalDirStore::new(&args.store);
    let defaults = CompareRequest::new(&args.service, &args.base, &args.head);
    let request = CompareRequest {
        environment: args.environment,
        series: args.series,
        min_uploads: args.min_uploads.unwrap_or(defaults.min_uploads),
        min_samples: args.min_samples.unwrap_or(defaults.min_samples),
        min_relative: args.min_change_percent / 100.0,
        min_absolute: args.min_change_points / 100.0,
        max_q: args.fdr,
        ..defaults
    };
    let report = compare_releases(&store, &request)
        .with_context(|| format!("comparing the releases in {}", args.store.display()))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report.json)?);
    } else {
        print!("{}", report.markdown);
    }
    eprintln!(
        "{} regressions, {} improvements",
        report.regressions, report.improvements
    );
    Ok(ExitCode::SUCCESS)
}
