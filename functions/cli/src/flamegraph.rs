//! `proflake flamegraph`: an SVG flame graph from the stack tables of a bucket directory or a
//! bucket, or from one profile file converted in memory exactly as `convert` would convert it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use proflake::{
    convert_upload, export::ExportRequest, store::content_etag, tables::Table,
    tables::TableBatches, tables::TablesFrom, ConvertOptions, InputFormat,
};
use proflake_cli::flame::{fold, parse_time_ns, render_svg, FlameFilter};

use crate::export::SelectionArgs;
use crate::location::Location;
use crate::tiers::{with_tables, Tier};

use super::{modified_ns, parse_format, MetadataArgs};

#[derive(Args)]
pub(crate) struct FlamegraphArgs {
    /// A directory that mirrors the bucket (with tables/v2/), a bucket as
    /// s3://BUCKET[/PREFIX], or a profile file to convert in memory.
    #[arg(required_unless_present = "store", conflicts_with = "store")]
    input: Option<PathBuf>,
    /// A directory that mirrors the bucket, or s3://BUCKET[/PREFIX] (instead of INPUT; read
    /// with the standard AWS environment: AWS_REGION, credentials or AWS_PROFILE,
    /// AWS_ENDPOINT_URL).
    #[arg(long, value_parser = Location::parse)]
    store: Option<Location>,
    /// Where to write the SVG.
    #[arg(long, short)]
    out: PathBuf,
    #[command(flatten)]
    selection: SelectionArgs,
    /// The series to draw (`profiles.sample_type`: cpu, wall, alloc_space, cpu-clock, …).
    /// Default: the CPU-time series, else the wall-time one, else the first by name.
    #[arg(long, visible_alias = "series")]
    sample_type: Option<String>,
    /// For a directory or a bucket: the tables read, the landing tables or the lake.
    #[arg(long, value_enum, default_value_t)]
    tier: Tier,
    /// Count samples rows instead of summing their values (time, for CPU profiles).
    #[arg(long)]
    samples: bool,
    /// Title of the graph (default: the input's name and the filters).
    #[arg(long)]
    title: Option<String>,
    /// For a profile file: decode as this format instead of detecting it.
    #[arg(long, value_parser = parse_format)]
    format: Option<InputFormat>,
    /// For a profile file: its metadata JSON, as for `convert` (the service, the start time).
    #[arg(long)]
    metadata: Option<PathBuf>,
    /// For a profile file: wall-clock start in Unix seconds, as for `convert` (default for
    /// inputs without one, on a clock of their own or aggregated: the file's mtime).
    #[arg(long)]
    start_time: Option<f64>,
}

/// A time given on the command line, as ns since the Unix epoch.
pub(crate) fn parse_time(text: &str) -> Result<i64, String> {
    parse_time_ns(text).ok_or_else(|| {
        format!("{text:?} is not a time: give RFC 3339 (2026-11-22T10:00:00Z) or Unix seconds")
    })
}

pub(crate) fn flamegraph(args: FlamegraphArgs) -> anyhow::Result<ExitCode> {
    let filter = FlameFilter {
        selection: args.selection.selection(Vec::new())?,
        sample_type: args.sample_type.clone(),
        count_samples: args.samples,
    };
    let input = match (&args.store, &args.input) {
        (Some(store), _) => Input::Store(store.clone()),
        (None, Some(input)) => Input::of(input)?,
        (None, None) => anyhow::bail!("give INPUT or --store"),
    };
    let tables = match &input {
        Input::Store(store) => {
            anyhow::ensure!(
                args.format.is_none() && args.metadata.is_none() && args.start_time.is_none(),
                "--format, --metadata and --start-time apply to a profile file, not to the \
                 converted tables of a directory or a bucket"
            );
            // Only the tables a graph reads, and only the days the range can reach.
            let (from, to) = (filter.selection.from_ns, filter.selection.to_ns);
            with_tables(store, args.tier, Table::Samples, |tables| {
                Ok(tables.read(&ExportRequest::TABLES, from, to)?)
            })
            .with_context(|| format!("cannot read the stack tables in {store}"))?
        }
        Input::File(file) => {
            // Only the flags that change what a graph shows: `--service` here is a filter.
            let metadata = MetadataArgs {
                metadata: args.metadata,
                start_time: args.start_time,
                ..MetadataArgs::default()
            };
            convert_in_memory(file, args.format, metadata)?
        }
    };
    let folded = fold(&tables, &filter)?;
    let name = match &input {
        Input::Store(Location::S3(bucket)) => bucket.to_string(),
        Input::Store(Location::Dir(path)) | Input::File(path) => file_name(path),
    };
    let title = args.title.unwrap_or_else(|| default_title(name, &filter));
    let svg = render_svg(&folded, &title)?;
    std::fs::write(&args.out, svg)
        .with_context(|| format!("cannot write {}", args.out.display()))?;
    // The weight only adds news when it is not the row count.
    let weight = match folded.unit.as_str() {
        "samples" if folded.total() == folded.samples => String::new(),
        unit => format!(", {} {unit}", folded.total()),
    };
    eprintln!(
        "{} profile(s) of {}, {} samples rows{weight} -> {}",
        folded.profiles,
        folded
            .sample_types
            .iter()
            .map(|t| format!("{t:?}"))
            .collect::<Vec<_>>()
            .join(", "),
        folded.samples,
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Converts a profile file as `convert` would (same upload key, ETag, metadata and arrival
/// time, so the same ids and times) and reads its tables back from the Parquet it produced.
fn convert_in_memory(
    input: &Path,
    format: Option<InputFormat>,
    metadata: MetadataArgs,
) -> anyhow::Result<TableBatches> {
    let (bytes, name) = crate::read_input(input)?;
    let options = ConvertOptions {
        format,
        metadata: metadata.resolve()?,
        received_at_ns: modified_ns(input),
        limits: crate::limits()?,
        ..ConvertOptions::default()
    };
    // The key `proflake process` stores the file under, so the graph's ids are those the
    // bucket would give it.
    let key = format!("uploads/{name}");
    let converted = convert_upload(&key, &content_etag(&bytes), &bytes, &options)?;
    Ok(TablesFrom::Objects(&converted.objects).read(&Table::ALL, None, None)?)
}

/// What a graph is drawn from.
enum Input {
    /// The tables of a bucket directory or a bucket.
    Store(Location),
    /// One profile file, converted in memory.
    File(PathBuf),
}

impl Input {
    /// INPUT: a directory or an `s3://` URL is a store, anything else a profile file.
    fn of(input: &Path) -> anyhow::Result<Input> {
        if input.is_dir() {
            return Ok(Input::Store(Location::Dir(input.to_owned())));
        }
        match input.to_str().filter(|text| text.starts_with("s3://")) {
            Some(url) => Ok(Input::Store(
                Location::parse(url).map_err(anyhow::Error::msg)?,
            )),
            None => Ok(Input::File(input.to_owned())),
        }
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

fn default_title(name: String, filter: &FlameFilter) -> String {
    match filter.describe() {
        d if d.is_empty() => name,
        d => format!("{name}: {d}"),
    }
}
