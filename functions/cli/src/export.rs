//! `proflake export`: one upload or a slice of the fleet, read back from the stack tables of a
//! bucket directory or a bucket, as pprof, speedscope, folded stacks, a Firefox Profiler
//! profile or OTLP.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use proflake::tables::Table;
use proflake::{
    export::export_profiles, export::ExportFormat, export::ExportRequest, export::IdOrName,
    export::Selection,
};

use crate::location::Location;
use crate::tiers::{with_tables, Tier};

/// Which profiles and samples: shared by `export` and `flamegraph`.
#[derive(Args, Clone, Default)]
pub(crate) struct SelectionArgs {
    /// Only this upload (`source_id` in the tables).
    #[arg(long)]
    pub source_id: Option<String>,
    /// Only profiles of this service.
    #[arg(long)]
    pub service: Option<String>,
    /// Only profiles of this release.
    #[arg(long)]
    pub release: Option<String>,
    /// Only profiles of this environment.
    #[arg(long)]
    pub environment: Option<String>,
    /// Only samples at or after this time: RFC 3339 (2026-11-22T10:00:00Z) or Unix seconds.
    #[arg(long, value_parser = super::flamegraph::parse_time)]
    pub from: Option<i64>,
    /// Only samples at or before this time: RFC 3339 or Unix seconds.
    #[arg(long, value_parser = super::flamegraph::parse_time)]
    pub to: Option<i64>,
    /// Only samples of this thread: a thread id, or a thread name.
    #[arg(long)]
    pub thread: Option<String>,
    /// Only profiles of this process: a pid, or a process name.
    #[arg(long)]
    pub process: Option<String>,
}

impl SelectionArgs {
    pub(crate) fn selection(&self, series: Vec<String>) -> anyhow::Result<Selection> {
        if let (Some(from), Some(to)) = (self.from, self.to) {
            anyhow::ensure!(from <= to, "--from is after --to");
        }
        Ok(Selection {
            source_id: self.source_id.clone(),
            service: self.service.clone(),
            release: self.release.clone(),
            environment: self.environment.clone(),
            from_ns: self.from,
            to_ns: self.to,
            series,
            process: self.process.as_deref().map(IdOrName::parse),
            thread: self.thread.as_deref().map(IdOrName::parse),
        })
    }
}

#[derive(Args)]
pub(crate) struct ExportArgs {
    /// A directory that mirrors the bucket (with tables/v2/), or the bucket itself as
    /// s3://BUCKET[/PREFIX], the prefix the functions' outputs have (read with the standard
    /// AWS environment: AWS_REGION, credentials or AWS_PROFILE, AWS_ENDPOINT_URL).
    #[arg(long, value_parser = Location::parse)]
    store: Location,
    /// The format written.
    #[arg(long, value_parser = parse_export_format)]
    format: ExportFormat,
    /// Where to write it.
    #[arg(long, short)]
    out: PathBuf,
    #[command(flatten)]
    selection: SelectionArgs,
    /// Only this series (`sample_type`: cpu, wall, alloc_space, cpu-clock, …); repeat for
    /// more. Default: every series (folded stacks: the CPU-time one, else the wall-time one).
    #[arg(long)]
    series: Vec<String>,
    /// pprof: only what Go's profile-guided optimisation reads (CPU samples as samples/count
    /// and cpu/nanoseconds, functions and lines, no labels).
    #[arg(long)]
    pgo: bool,
    /// OTLP: write protobuf's JSON encoding (as OTLP/HTTP sends it) instead of binary.
    #[arg(long)]
    json: bool,
    /// A name for the export (document and profile names; default: the selection).
    #[arg(long)]
    name: Option<String>,
    /// The tables read: the landing tables, or the lake (`publish`'s compacted tables, for a
    /// fleet; it lags the landing tables by what is not published yet).
    #[arg(long, value_enum, default_value_t)]
    tier: Tier,
}

fn parse_export_format(text: &str) -> Result<ExportFormat, String> {
    ExportFormat::ALL
        .iter()
        .find(|(name, _)| *name == text)
        .map(|(_, f)| *f)
        .ok_or_else(|| {
            let names: Vec<&str> = ExportFormat::ALL.iter().map(|(n, _)| *n).collect();
            format!("{text:?} is not an export format: {}", names.join(", "))
        })
}

pub(crate) fn export(args: ExportArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        !args.pgo || args.format == ExportFormat::Pprof,
        "--pgo applies to --format pprof"
    );
    anyhow::ensure!(
        !args.json || args.format == ExportFormat::Otlp,
        "--json applies to --format otlp"
    );
    let selection = args.selection.selection(args.series.clone())?;
    let mut request = ExportRequest::new(selection, args.format);
    request.pgo = args.pgo;
    request.json = args.json;
    request.name = args
        .name
        .clone()
        .unwrap_or_else(|| match request.selection.describe() {
            d if d.is_empty() => "proflake export".to_owned(),
            d => format!("proflake export: {d}"),
        });
    let exported = with_tables(&args.store, args.tier, Table::Samples, |tables| {
        Ok(export_profiles(tables, &request)?)
    })
    .with_context(|| format!("exporting from {}", args.store))?;
    std::fs::write(&args.out, &exported.bytes)
        .with_context(|| format!("cannot write {}", args.out.display()))?;
    let series: Vec<String> = exported
        .series
        .iter()
        .map(|s| {
            format!(
                "{} {} {} in {} samples",
                s.sample_type, s.total, s.unit, s.samples
            )
        })
        .collect();
    eprintln!(
        "{} profile(s) of {} upload(s): {} -> {} ({} bytes, {})",
        exported.profiles,
        exported.uploads,
        series.join("; "),
        args.out.display(),
        exported.bytes.len(),
        args.format.name()
    );
    Ok(ExitCode::SUCCESS)
}
