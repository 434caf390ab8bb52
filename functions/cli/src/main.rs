//! `proflake`: run the conversion pipeline on a local directory laid out like the bucket.

mod bucket;
mod compare;
mod export;
mod flamegraph;
mod lake;
mod location;
mod output;
mod serve;
mod symbols;
mod tiers;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use output::Stdout;
use proflake::store::{list_uploads, store_upload, LocalDirStore, ObjectStore};
use proflake::{
    process_upload, InputFormat, Limits, Manifest, Outcome, ProcessOptions, UploadMetadata,
};

#[derive(Parser)]
#[command(
    name = "proflake",
    version,
    about = "Convert profiles to Sentry Sample v2 chunks and Parquet stack tables"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Upload each input into DIR/uploads/ and convert it, as the cloud pipeline would.
    Convert(Box<ConvertArgs>),
    /// Convert uploads already in DIR/uploads/ (all that have no manifest yet, or the given
    /// keys), exactly as the convert function does for bucket notifications.
    Process(Box<ProcessArgs>),
    /// Print a summary of one input: format, time range, processes, threads, top functions.
    Inspect(InspectArgs),
    /// Draw an SVG flame graph from a bucket directory's stack tables or one profile file.
    Flamegraph(Box<flamegraph::FlamegraphArgs>),
    /// Export one upload or a slice of the fleet from the stack tables as pprof, speedscope,
    /// folded stacks, a Firefox Profiler profile or OTLP.
    Export(Box<export::ExportArgs>),
    /// Compare two releases of a service: the functions whose share of a series got larger
    /// (regressions) or smaller (improvements) beyond noise.
    Compare(Box<compare::CompareArgs>),
    /// Debug files: store them by build ID, list them.
    #[command(subcommand)]
    Symbols(symbols::SymbolsCommand),
    /// Convert kept uploads again with the debug files stored now (those whose images have
    /// new symbols, every upload with --all, or the given keys).
    Rehydrate(symbols::RehydrateArgs),
    /// Publish settled conversions from the landing tables into the lake (DIR/lake/, Delta
    /// tables): new uploads appended, rehydrated or replaced ones swapped, removed ones dropped.
    Publish(lake::PublishArgs),
    /// Lake maintenance: pack small files to the target size, checkpoint, vacuum.
    Compact(lake::CompactArgs),
    /// Receive profiles over HTTP (OTLP/HTTP, Pyroscope's push and ingest APIs) into
    /// DIR/uploads/, converting each in the background.
    Serve(serve::ServeArgs),
}

#[derive(Args)]
struct ConvertArgs {
    /// Profile files to convert.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Directory that mirrors the bucket.
    #[arg(long, short, visible_alias = "store")]
    out: PathBuf,
    /// Decode as this format instead of detecting it.
    #[arg(long, value_parser = parse_format)]
    format: Option<InputFormat>,
    #[command(flatten)]
    metadata: MetadataArgs,
    /// Refuse a profile on a clock of its own (a trace, a cpuprofile) that neither it nor
    /// the metadata places on the wall clock, instead of placing it at the upload's arrival
    /// (the file's mtime).
    #[arg(long)]
    require_start_time: bool,
    /// Threads one conversion may use (default: every core). With 1 it runs on one thread;
    /// the outputs are the same bytes either way.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
    /// Do not publish the conversions into the lake (DIR/lake/) at the end.
    #[arg(long)]
    no_publish: bool,
}

// Default: `flamegraph` builds one from the few metadata flags it takes.
#[derive(Args, Default)]
struct MetadataArgs {
    /// Metadata JSON (a Sentry profile-chunk metadata object); flags override its fields.
    #[arg(long)]
    metadata: Option<PathBuf>,
    /// Sentry platform (default: android when the profile has ART frames, else native).
    #[arg(long)]
    platform: Option<String>,
    /// Release of the profiled program.
    #[arg(long)]
    release: Option<String>,
    /// Deployment environment.
    #[arg(long)]
    environment: Option<String>,
    /// Service the profiled program belongs to (the tables' `service`; default: the
    /// profile's `service.name`, else the process name).
    #[arg(long)]
    service: Option<String>,
    /// SDK name for client_sdk (default: proflake).
    #[arg(long, requires = "sdk_version")]
    sdk_name: Option<String>,
    /// SDK version for client_sdk.
    #[arg(long, requires = "sdk_name")]
    sdk_version: Option<String>,
    /// Profiler session id (32 hex digits; default: derived from the input).
    #[arg(long)]
    profiler_id: Option<String>,
    /// Wall-clock start of the profile in Unix seconds, for traces without a REALTIME clock
    /// and aggregated inputs without a start time (default for those: the file's mtime, the
    /// upload's arrival).
    #[arg(long)]
    start_time: Option<f64>,
    /// Spacing, in ms, of the samples Sample v2 takes of span series (agent traces, evented
    /// profiles; default: 10).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    span_interval_ms: Option<u64>,
}

#[derive(Args)]
struct ProcessArgs {
    /// Directory that mirrors the bucket (or give it with --store).
    #[arg(required_unless_present = "store")]
    dir: Option<PathBuf>,
    /// Upload keys to process (default: every upload under uploads/).
    keys: Vec<String>,
    /// Directory that mirrors the bucket; every positional argument is then a key.
    #[arg(long)]
    store: Option<PathBuf>,
    /// Convert again even uploads that already have a manifest.
    #[arg(long)]
    reconvert: bool,
    /// Decode as this format instead of detecting it.
    #[arg(long, value_parser = parse_format)]
    format: Option<InputFormat>,
    /// Uploads larger than this many bytes are quarantined unread (default:
    /// PROFLAKE_LIMIT_MAX_OBJECT_BYTES, else 256 MiB).
    #[arg(long)]
    max_object_bytes: Option<u64>,
    /// Refuse a profile on a clock of its own (a trace, a cpuprofile) that neither it nor
    /// the metadata places on the wall clock, instead of placing it at the upload's arrival
    /// (the file's mtime).
    #[arg(long)]
    require_start_time: bool,
    /// Threads one conversion may use (default: every core). With 1 it runs on one thread;
    /// the outputs are the same bytes either way.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
    /// Do not publish the conversions into the lake (DIR/lake/) at the end.
    #[arg(long)]
    no_publish: bool,
}

#[derive(Args)]
struct InspectArgs {
    /// The profile file.
    input: PathBuf,
    /// Decode as this format instead of detecting it.
    #[arg(long, value_parser = parse_format)]
    format: Option<InputFormat>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Only decode: print the format and the number of samples, no summary. What is left of
    /// `inspect`'s time is the decoder's (BENCHMARKS.md times the two against each other).
    #[arg(long)]
    decode_only: bool,
}

fn parse_format(name: &str) -> Result<InputFormat, String> {
    InputFormat::from_name(name).ok_or_else(|| {
        let names: Vec<_> = InputFormat::ALL.iter().map(|f| f.name()).collect();
        format!("unknown format {name:?}; known: {}", names.join(", "))
    })
}

impl MetadataArgs {
    /// The metadata as a sidecar object: the metadata file's JSON with the flags set over it,
    /// `None` when nothing was given.
    fn sidecar(&self) -> anyhow::Result<Option<serde_json::Value>> {
        let mut doc = match &self.metadata {
            Some(path) => {
                let bytes = std::fs::read(path)
                    .with_context(|| format!("cannot read metadata file {}", path.display()))?;
                serde_json::from_slice(&bytes)
                    .with_context(|| format!("metadata file {}", path.display()))?
            }
            None => serde_json::json!({}),
        };
        let object = doc
            .as_object_mut()
            .context("the metadata file holds no JSON object")?;
        let mut set = |name: &str, value: Option<serde_json::Value>| {
            if let Some(value) = value {
                object.insert(name.into(), value);
            }
        };
        set("platform", self.platform.clone().map(Into::into));
        set("release", self.release.clone().map(Into::into));
        set("environment", self.environment.clone().map(Into::into));
        set("service", self.service.clone().map(Into::into));
        set("profiler_id", self.profiler_id.clone().map(Into::into));
        set("timestamp", self.start_time.map(Into::into));
        set(
            "client_sdk",
            self.sdk_name
                .clone()
                .zip(self.sdk_version.clone())
                .map(|(name, version)| serde_json::json!({"name": name, "version": version})),
        );
        Ok((!object.is_empty()).then_some(doc))
    }

    fn resolve(self) -> anyhow::Result<UploadMetadata> {
        let base = match &self.metadata {
            Some(path) => {
                let bytes = std::fs::read(path)
                    .with_context(|| format!("cannot read metadata file {}", path.display()))?;
                UploadMetadata::from_json(&bytes)
                    .with_context(|| format!("metadata file {}", path.display()))?
            }
            None => UploadMetadata::default(),
        };
        let mut flags = UploadMetadata {
            platform: self.platform,
            release: self.release,
            environment: self.environment,
            service: self.service,
            profiler_id: self.profiler_id,
            timestamp: self.start_time,
            span_interval_ms: self.span_interval_ms,
            ..UploadMetadata::default()
        };
        if let Some((name, version)) = self.sdk_name.zip(self.sdk_version) {
            flags = flags.with_client_sdk(name, version);
        }
        let merged = base.merge(flags);
        merged.validate()?;
        Ok(merged)
    }
}

/// The limits, with the overrides the functions read from `PROFLAKE_LIMIT_*` variables.
pub(crate) fn limits() -> anyhow::Result<Limits> {
    Ok(Limits::from_env()?)
}

/// `PROFLAKE_STREAM_ABOVE_BYTES`, as the convert function reads it: Perfetto uploads larger
/// than this are converted with a second pass, a window at a time.
fn stream_above_bytes() -> anyhow::Result<Option<u64>> {
    Ok(ProcessOptions::stream_above_bytes_from(|name| {
        std::env::var(name).ok()
    })?)
}

fn main() -> ExitCode {
    proflake::return_large_blocks();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("PROFLAKE_LOG")
                .unwrap_or_else(|_| "warn,buoyant_kernel::snapshot::builder=off".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Convert(args) => convert(*args),
        Command::Process(args) => process(*args),
        Command::Inspect(args) => inspect(args),
        Command::Flamegraph(args) => flamegraph::flamegraph(*args),
        Command::Compare(args) => compare::compare(*args),
        Command::Export(args) => export::export(*args),
        Command::Symbols(command) => symbols::symbols(command),
        Command::Rehydrate(args) => symbols::rehydrate_command(args),
        Command::Publish(args) => lake::publish(args),
        Command::Compact(args) => lake::compact(args),
        Command::Serve(args) => serve::serve(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn convert(args: ConvertArgs) -> anyhow::Result<ExitCode> {
    // The metadata goes beside each upload as its sidecar, as an SDK would put it, so that
    // every later conversion of the upload (`process --reconvert`, rehydration) uses it too.
    let sidecar = args.metadata.sidecar()?;
    args.metadata.resolve()?; // refused here, before anything is written
                              // The user asked for these files now: convert them even if converted before.
    let options = ProcessOptions {
        format: args.format,
        reconvert: true,
        limits: limits()?,
        stream_above_bytes: stream_above_bytes()?,
        require_start_time: args.require_start_time,
        threads: args.threads.map(usize::from),
        ..ProcessOptions::default()
    };
    let store = LocalDirStore::new(&args.out);
    let bar = if args.inputs.len() > 1 {
        ProgressBar::new(args.inputs.len() as u64)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {wide_msg}").expect("static template"),
    );
    let mut failed = 0usize;
    let mut stdout = Stdout::default();
    let mut keys = Vec::new();
    for input in &args.inputs {
        bar.set_message(input.display().to_string());
        match convert_one(&store, input, sidecar.as_ref(), &options, &mut keys) {
            // suspend() prints above a visible bar and still prints when the bar is hidden.
            Ok(line) => bar.suspend(|| stdout.line(&line))?,
            Err(e) => {
                failed += 1;
                bar.suspend(|| eprintln!("error: {e:#}"));
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let ok = args.inputs.len() - failed;
    eprintln!("{ok} converted, {failed} failed");
    if !args.no_publish {
        failed += publish_after(&args.out, keys)?;
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The bytes of an input file and the file name it is uploaded under.
fn read_input(input: &Path) -> anyhow::Result<(Vec<u8>, &str)> {
    let bytes = std::fs::read(input).with_context(|| format!("cannot read {}", input.display()))?;
    Ok((bytes, upload_name(input)?))
}

/// The file name an input is uploaded under.
fn upload_name(input: &Path) -> anyhow::Result<&str> {
    input
        .file_name()
        .and_then(|n| n.to_str())
        .with_context(|| format!("{} has no usable file name", input.display()))
}

/// Uploads one file into the local bucket and converts it.
fn convert_one(
    store: &LocalDirStore,
    input: &Path,
    sidecar: Option<&serde_json::Value>,
    options: &ProcessOptions,
    keys: &mut Vec<String>,
) -> anyhow::Result<String> {
    let name = upload_name(input)?;
    // Copied into the bucket as a stream: conversion reads the upload back as the bucket
    // holds it, so the file is never held whole.
    let mut file =
        std::fs::File::open(input).with_context(|| format!("cannot read {}", input.display()))?;
    let sidecar = sidecar.map(serde_json::to_vec_pretty).transpose()?;
    let key = store_upload(store, name, &mut file, sidecar.as_deref())?;
    // Published after, whether its conversion succeeds or not.
    keys.push(key.clone());
    // The object keeps the file's modification time, as the bucket's last-modified time: the
    // start of last resort for aggregated inputs with no time of their own.
    if let Ok(modified) = std::fs::metadata(input).and_then(|m| m.modified()) {
        store.set_modified(&key, modified)?;
    }
    let outcome = process_upload(store, store, &key, options)?;
    describe(store, &outcome, &input.display().to_string())
}

/// One line for an outcome; an error for a quarantined upload.
fn describe(store: &LocalDirStore, outcome: &Outcome, name: &str) -> anyhow::Result<String> {
    match outcome {
        Outcome::Converted(c) => {
            let json = store
                .get(&c.manifest_key)?
                .with_context(|| format!("{} vanished after it was written", c.manifest_key))?;
            let m: Manifest = serde_json::from_slice(&json)?;
            let count = |kind: fn(&str) -> bool| m.outputs.iter().filter(|o| kind(&o.kind)).count();
            let replaced = c
                .replaced
                .as_ref()
                .map(|id| format!(" (replaces the earlier upload {id})"))
                .unwrap_or_default();
            Ok(format!(
                "{name}: {} ({}), {} chunk(s), {} table file(s), {} build-id index entr{}, {} of {} samples -> {}{replaced}",
                m.source.format,
                m.source.container,
                count(|k| k == "sample_v2"),
                count(|k| k.starts_with("table:")),
                count(|k| k == "build_id_index"),
                if count(|k| k == "build_id_index") == 1 { "y" } else { "ies" },
                m.profile.samples_written,
                m.profile.samples,
                c.manifest_key
            ))
        }
        Outcome::AlreadyConverted { manifest_key, .. } => {
            Ok(format!("{name}: already converted -> {manifest_key}"))
        }
        Outcome::Quarantined(q) => anyhow::bail!(
            "{} (quarantined: {}, report at {})",
            q.message,
            q.reason,
            q.report_key
        ),
        Outcome::Skipped { why, .. } => Ok(format!("{name}: skipped ({})", why.name())),
    }
}

fn process(mut args: ProcessArgs) -> anyhow::Result<ExitCode> {
    let dir = match (args.store, args.dir) {
        (Some(store), Some(first_key)) => {
            args.keys
                .insert(0, first_key.to_str().context("keys are text")?.to_owned());
            store
        }
        (Some(store), None) => store,
        (None, Some(dir)) => dir,
        (None, None) => unreachable!("clap requires one"),
    };
    let store = LocalDirStore::new(&dir);
    let keys = if args.keys.is_empty() {
        // Sidecars and reports are read along with their uploads.
        list_uploads(&store)?
    } else {
        args.keys
    };
    let mut limits = limits()?;
    if let Some(max) = args.max_object_bytes {
        limits.max_object_bytes = max;
    }
    let options = ProcessOptions {
        format: args.format,
        limits,
        reconvert: args.reconvert,
        stream_above_bytes: stream_above_bytes()?,
        require_start_time: args.require_start_time,
        threads: args.threads.map(usize::from),
        ..ProcessOptions::default()
    };
    let (mut done, mut failed) = (0usize, 0usize);
    let mut stdout = Stdout::default();
    for key in &keys {
        let line = process_upload(&store, &store, key, &options)
            .map_err(anyhow::Error::new)
            .and_then(|outcome| describe(&store, &outcome, key));
        match line {
            Ok(line) => {
                done += 1;
                stdout.line(&line)?;
            }
            Err(e) => {
                failed += 1;
                eprintln!("error: {e:#}");
            }
        }
    }
    eprintln!("{done} processed, {failed} failed");
    if !args.no_publish {
        failed += publish_after(&dir, keys)?;
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Publishes the keys just converted into the lake; the number of keys it could not publish.
fn publish_after(dir: &Path, keys: Vec<String>) -> anyhow::Result<usize> {
    let scope = proflake::lake::PublishScope::Keys(keys);
    let report = lake::publish_store(dir, &scope, &Default::default(), false)?;
    eprintln!("{}", lake::summary(&report));
    lake::report_quarantined(&report);
    Ok(report.quarantined.len())
}

fn modified_ns(path: &Path) -> Option<i64> {
    let modified = std::fs::metadata(path).ok()?.modified().ok()?;
    let since = modified.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(since.as_nanos()).ok()
}

fn inspect(args: InspectArgs) -> anyhow::Result<ExitCode> {
    let bytes = std::fs::read(&args.input)
        .with_context(|| format!("cannot read {}", args.input.display()))?;
    let decoded = match proflake::decode(&bytes, args.format, &limits()?) {
        Ok(d) => d,
        Err(e) => {
            eprintln!(
                "error: {:#}",
                anyhow::Error::new(e.for_input(&args.input.display().to_string()))
            );
            return Ok(ExitCode::from(1));
        }
    };
    if args.decode_only {
        let line = format!(
            "{}: {} ({}), {} samples",
            args.input.display(),
            decoded.format.name(),
            decoded.container.name(),
            decoded.profile.samples().len()
        );
        Stdout::default().line(&line)?;
        return Ok(ExitCode::SUCCESS);
    }
    let summary = decoded.summary();
    if args.json {
        let doc = serde_json::json!({
            "input": args.input.display().to_string(),
            "bytes": bytes.len(),
            "format": decoded.format.name(),
            "container": decoded.container.name(),
            "chunks_in_input": decoded.chunks.len(),
            "summary": summary,
        });
        Stdout::default().line(&serde_json::to_string_pretty(&doc)?)?;
    } else {
        Stdout::default().write(&format!(
            "input       {} ({} bytes)\n{summary}",
            args.input.display(),
            bytes.len()
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
