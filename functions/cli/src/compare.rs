//! `proflake compare`: which functions of a service got slower or faster from one release to
//! the next, from the `function_rollup` tables of a bucket directory or a bucket.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use proflake::{
    compare::compare_releases, compare::CompareRequest, export::export_tables,
    export::ExportFormat, export::ExportRequest, export::Selection,
};
use proflake::{tables::Table, tables::TablesFrom};

use crate::location::Location;
use crate::tiers::{with_tables, Tier};

#[derive(Args)]
pub(crate) struct CompareArgs {
    /// A directory that mirrors the bucket (with tables/v2/), or the bucket itself as
    /// s3://BUCKET[/PREFIX], the prefix the functions' outputs have (read with the standard
    /// AWS environment: AWS_REGION, credentials or AWS_PROFILE, AWS_ENDPOINT_URL).
    #[arg(long, value_parser = Location::parse)]
    store: Location,
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
    /// Also draw a differential flame graph of the two releases into this SVG: the head
    /// release's stacks, red where they grew and blue where they shrank against the base
    /// (inferno's diff-folded colouring, the base scaled to the head's total).
    #[arg(long)]
    svg: Option<PathBuf>,
    /// The tables read: the landing tables, or the lake (`publish`'s compacted tables, for a
    /// fleet; it lags the landing tables by what is not published yet).
    #[arg(long, value_enum, default_value_t)]
    tier: Tier,
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
    let report = with_tables(&args.store, args.tier, Table::FunctionRollup, |tables| {
        Ok(compare_releases(tables, &request)?)
    })
    .with_context(|| format!("comparing the releases in {}", args.store))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report.json)?);
    } else {
        print!("{}", report.markdown);
    }
    eprintln!(
        "{} regressions, {} improvements",
        report.regressions, report.improvements
    );
    if let Some(path) = &args.svg {
        let svg = with_tables(&args.store, args.tier, Table::Samples, |tables| {
            differential_svg(tables, &request)
        })?;
        std::fs::write(path, svg).with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("differential flame graph -> {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// The two releases' stacks of one series folded, then drawn as inferno's differential flame
/// graph: widths are the head release's, colours the change from the base, normalised so
/// that a release with more uploads does not turn everything red.
fn differential_svg(tables: TablesFrom<'_>, request: &CompareRequest) -> anyhow::Result<Vec<u8>> {
    let tables = tables.read(&ExportRequest::TABLES, None, None)?;
    let fold = |release: &str| {
        let selection = Selection {
            service: Some(request.service.clone()),
            environment: request.environment.clone(),
            release: Some(release.to_owned()),
            series: request.series.iter().cloned().collect(),
            ..Selection::default()
        };
        export_tables(
            &tables,
            &ExportRequest::new(selection, ExportFormat::Folded),
        )
        .with_context(|| format!("folding release {release}"))
    };
    let (base, head) = (fold(&request.base)?, fold(&request.head)?);
    let (b, h) = (&base.series[0], &head.series[0]);
    anyhow::ensure!(
        (&b.sample_type, &b.unit) == (&h.sample_type, &h.unit),
        "the releases' default series differ ({} in {}, {} in {}): choose one with --series",
        b.sample_type,
        request.base,
        h.sample_type,
        request.head
    );
    let mut diff = Vec::new();
    let options = inferno::differential::Options {
        normalize: true,
        strip_hex: false,
    };
    inferno::differential::from_readers(options, &base.bytes[..], &head.bytes[..], &mut diff)
        .context("folding the differential")?;
    let diff = String::from_utf8(diff).context("the differential is not text")?;
    let mut options = inferno::flamegraph::Options::default();
    options.title = format!(
        "{}: {} against {} ({}): red grew, blue shrank",
        request.service, request.head, request.base, h.sample_type
    );
    options.count_name = h.unit.clone();
    options.deterministic = true;
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut options, diff.lines(), &mut svg)
        .context("drawing the differential flame graph")?;
    Ok(svg)
}
