//! The convert job: one upload in, Sample v2 chunks and a manifest out.

use super::clock::{anchor, place_aggregated, Anchor, ClockSource};
use super::decode::{decode_upload, Decoded, UploadInput};
use super::source::SampleSource;
use crate::error::Result;
use crate::formats::{Container, InputFormat};
use crate::limits::{Limits, LimitsError};
use crate::metadata::UploadMetadata;
use crate::model::Profile;
use crate::plan::cut_spans_at_windows;
use crate::store::{manifest_key, source_id};
use crate::symbolize::{NoSymbols, SymbolSource, SymbolizeReport};
use crate::tables::TableSource;
use crate::writers::manifest::{
    Manifest, ManifestExpansion, ManifestProfile, ManifestSampleV2, ManifestSeries, ManifestSource,
    MANIFEST_VERSION,
};
use crate::writers::outputs::{MemoryOutputs, OutputSink, Outputs};
use crate::writers::{IndexOf, Writers};

/// How to convert.
#[derive(Clone, Debug, Default)]
pub struct ConvertOptions {
    /// Decode as this format instead of detecting it.
    pub format: Option<InputFormat>,
    /// Metadata of the upload. It overrides metadata the input carries itself.
    pub metadata: UploadMetadata,
    /// When the upload arrived, ns since the Unix epoch (the object's last-modified time):
    /// the start time of last resort for inputs that record none, aggregated ones and those
    /// on a clock of their own (a trace clock) alike.
    pub received_at_ns: Option<i64>,
    /// Refuse an input on a clock of its own (`ErrorKind::NoWallClock`) unless the metadata or
    /// the input says when it started, instead of placing it at `received_at_ns`.
    pub require_start_time: bool,
    /// What the input may make the conversion do.
    pub limits: Limits,
    /// Perfetto uploads of more stored bytes than this that can be read again are converted
    /// with a second pass, a window at a time ([`ProcessOptions::STREAM_ABOVE_BYTES`](crate::ProcessOptions::STREAM_ABOVE_BYTES) when `None`).
    pub stream_above_bytes: Option<u64>,
    /// The ETag of the metadata sidecar `metadata` was read from, recorded in the manifest.
    pub metadata_etag: Option<String>,
    /// Threads a conversion may use (`None`: as many as the machine has). With 1 it runs on
    /// the caller's thread alone; the outputs are the same bytes either way.
    pub threads: Option<usize>,
}

/// The threads a conversion uses: `threads`, or as many as the machine has.
fn threads_of(threads: Option<usize>) -> usize {
    threads
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(1)
        .max(1)
}

/// Perfetto uploads larger than this are converted a window at a time, with a second pass,
/// when they can be read again. The second pass costs about a sixth more CPU, for memory that
/// holds a window of samples instead of all of them (12 bytes each): a trace of this size
/// converted whole peaks about as high as a long one converted a window at a time (62 vs 60 MB
/// at 16 threads sampled at 1 kHz), so below it the CPU would buy nothing.
pub(crate) const STREAM_ABOVE_BYTES: u64 = 64 << 20;

/// [`ConvertOptions::stream_above_bytes`] as the functions and the command line read it from
/// `PROFLAKE_STREAM_ABOVE_BYTES` (`get` gives a variable's value); `None` when it is unset.
pub(crate) fn stream_above_bytes_from(
    get: impl Fn(&str) -> Option<String>,
) -> std::result::Result<Option<u64>, LimitsError> {
    crate::limits::read(&get, "PROFLAKE_STREAM_ABOVE_BYTES", 1, u64::MAX)
}

/// Whether an upload with this metadata may be converted window by window: the metadata
/// names no chunk id (kept only when the whole upload is one chunk, which only the end can
/// tell) and no measurements (each chunk takes those of its window, its process's first and
/// last also what lies before and after, which only the end can tell either).
fn streamable(metadata: &UploadMetadata) -> bool {
    metadata.chunk_id.is_none() && metadata.measurements.is_empty()
}

/// The outputs of one conversion, not yet stored.
#[derive(Debug)]
pub struct Converted {
    /// The decoded input.
    pub decoded: Decoded,
    /// Objects to write, in order.
    pub objects: Vec<(String, Vec<u8>)>,
    /// The manifest, written after the objects.
    pub manifest: Manifest,
    /// Where the manifest goes.
    pub manifest_key: String,
}

impl Converted {
    /// The Sample v2 chunk objects, in write order (the tables follow them in `objects`).
    pub fn sample_v2(&self) -> Vec<&(String, Vec<u8>)> {
        self.objects
            .iter()
            .zip(&self.manifest.outputs)
            .filter(|(_, o)| o.kind == "sample_v2")
            .map(|(object, _)| object)
            .collect()
    }
}

/// What a conversion into a sink produced, beside the objects themselves.
#[derive(Debug)]
pub(crate) struct ConvertReport {
    /// The decoded input.
    pub decoded: Decoded,
    /// The manifest, written to the sink last.
    pub manifest: Manifest,
    /// Where the manifest went.
    pub manifest_key: String,
    /// How many pieces the samples were written in: one for an upload decoded whole, one per
    /// few windows for a long trace converted a window at a time.
    pub pieces: u64,
}

/// Converts one upload in memory. Pure: nothing is read or written, so the same input always
/// gives the same outputs. Errors name `source_key`.
pub fn convert_upload(
    source_key: &str,
    etag: &str,
    bytes: &[u8],
    options: &ConvertOptions,
) -> Result<Converted> {
    convert_upload_with(source_key, etag, bytes, options, &NoSymbols)
}

/// [`convert_upload`] with the symbols `symbols` holds.
pub fn convert_upload_with(
    source_key: &str,
    etag: &str,
    bytes: &[u8],
    options: &ConvertOptions,
    symbols: &dyn SymbolSource,
) -> Result<Converted> {
    let mut memory = MemoryOutputs::default();
    let input = UploadInput::Bytes(bytes);
    let report = convert_into(source_key, etag, input, options, symbols, &mut memory)?;
    // The manifest is the sink's last object; `Converted` keeps it apart.
    memory.objects.pop();
    Ok(Converted {
        decoded: report.decoded,
        objects: memory.objects,
        manifest: report.manifest,
        manifest_key: report.manifest_key,
    })
}

/// Converts one upload, naming its native frames from `symbols`, and hands each object to
/// `sink` as it is produced and the manifest last. Errors name `source_key`.
pub(crate) fn convert_into(
    source_key: &str,
    etag: &str,
    bytes: UploadInput<'_>,
    options: &ConvertOptions,
    symbols: &dyn SymbolSource,
    sink: &mut dyn OutputSink<'_>,
) -> Result<ConvertReport> {
    convert_inner(source_key, etag, bytes, options, symbols, sink)
        .map_err(|e| e.for_input(source_key))
}

/// Decodes the upload, puts its samples on the wall clock, names its frames, writes its
/// pieces and, last, the manifest.
fn convert_inner(
    source_key: &str,
    etag: &str,
    bytes: UploadInput<'_>,
    options: &ConvertOptions,
    symbols: &dyn SymbolSource,
    sink: &mut dyn OutputSink<'_>,
) -> Result<ConvertReport> {
    options.metadata.validate()?;
    // A long recording gets a second pass only when the end need not be known before the
    // first window is written (see `streamable`).
    let second_pass_above = streamable(&options.metadata)
        .then(|| options.stream_above_bytes.unwrap_or(STREAM_ABOVE_BYTES));
    let upload = decode_upload(
        bytes,
        options.format,
        &options.limits,
        second_pass_above,
        symbols,
    )?;
    let (mut decoded, mut source) = (upload.decoded, upload.source);
    // The caller's metadata takes precedence over what the input carries itself.
    let metadata = match decoded.metadata.take() {
        Some(embedded) => embedded.merge(options.metadata.clone()),
        None => options.metadata.clone(),
    };
    let profile = &mut decoded.profile;
    source.apply_context_labels(profile, &metadata.context_labels);
    if let Some(hz) = metadata.sample_rate_hz {
        profile.set_unstated_sampling_rate(hz);
    }
    let trace_clock_start = (!options.require_start_time)
        .then_some(options.received_at_ns)
        .flatten();
    let clock = place_on_wall_clock(
        profile,
        &source,
        &metadata,
        options.received_at_ns,
        trace_clock_start,
    )?;
    let symbolization = source.symbolize(profile, symbols)?;
    let naming = Naming::new(source_key, etag);
    let mut table_source = naming.table_source(decoded.format, &metadata);
    table_source.timed_clock = clock.timed.name();
    table_source.aggregated_clock = clock.aggregated.name();
    let clock_source = clock.upload.name();
    let manifest_key = manifest_key(&naming.source_id);
    let mut out = Outputs::new(sink);
    let index = IndexOf {
        source_key,
        manifest_key: &manifest_key,
        symbolization: &symbolization,
    };
    let writers = Writers::new(&table_source, &metadata, threads_of(options.threads));
    let wrote = write_outputs(profile, &mut source, clock.anchor, writers, index, &mut out)?;
    let timestamps = clock.timestamps(&wrote.sample_v2);
    let manifest = manifest_of(ManifestOf {
        source_key,
        etag: naming.etag,
        input_bytes: upload.input_bytes,
        format: decoded.format,
        container: decoded.container,
        source_id: &naming.source_id,
        metadata_etag: options.metadata_etag.as_deref(),
        profile: &decoded.profile,
        samples: wrote.samples,
        timestamps,
        clock_source,
        series: wrote.series,
        sample_v2: wrote.sample_v2,
        symbolization,
    });
    let manifest = out.finish(&manifest_key, manifest)?;
    Ok(ConvertReport {
        decoded,
        manifest,
        manifest_key,
        pieces: wrote.pieces,
    })
}

/// Most findings a manifest lists: a malformed input can have one per element.
const MAX_MANIFEST_FINDINGS: usize = 100;

/// How an upload's samples were put on the wall clock.
struct WallClockPlacement {
    anchor: Anchor,
    /// How the manifest says the times were obtained.
    timestamps: String,
    /// Where aggregated samples got their start from.
    start: &'static str,
    /// What placed the samples with times, and those without.
    timed: ClockSource,
    aggregated: ClockSource,
    /// What placed the upload, for the manifest: its samples with times, if it has any, else
    /// its aggregated ones.
    upload: ClockSource,
}

impl WallClockPlacement {
    /// How the manifest says the times were obtained, once the chunks are written: laid out
    /// from aggregated weights, or as the clock gave them (and spans sampled, if they were).
    fn timestamps(self, sample_v2: &ManifestSampleV2) -> String {
        match &sample_v2.expansion {
            Some(ManifestExpansion {
                interval_ns,
                source: Some(source),
                ..
            }) => format!(
                "{}; Sample v2: {source} sampled {interval_ns} ns apart on the window grid",
                self.timestamps
            ),
            Some(ManifestExpansion { interval_ns, .. }) => format!(
                "expanded from aggregated weights, {interval_ns} ns apart per thread, from {}",
                self.start
            ),
            None => self.timestamps,
        }
    }
}

/// Puts `profile` on the wall clock and gives aggregated samples a start (chunks given whole
/// carry their own times). A trace clock starts at `trace_clock_start` when nothing else says
/// when (`None`: it is refused).
fn place_on_wall_clock(
    profile: &mut Profile,
    source: &SampleSource<'_>,
    metadata: &UploadMetadata,
    received_at_ns: Option<i64>,
    trace_clock_start: Option<i64>,
) -> Result<WallClockPlacement> {
    let anchored = anchor(profile, metadata.timestamp, trace_clock_start)?;
    let (start, aggregated) = match source {
        SampleSource::Given { .. } => ("", None),
        _ => place_aggregated(profile, metadata, received_at_ns),
    };
    // Without a start, aggregated samples are refused when planned: none are written.
    let aggregated = aggregated.unwrap_or(anchored.source);
    let samples = profile.samples();
    let untimed = matches!(source, SampleSource::Whole)
        && !samples.is_empty()
        && (0..samples.len()).all(|i| samples.time(i).is_none());
    let upload = if untimed { aggregated } else { anchored.source };
    // Only now are the windows known: they are counted from the first sample on the wall
    // clock.
    if let SampleSource::Whole = source {
        cut_spans_at_windows(profile);
    }
    Ok(WallClockPlacement {
        anchor: anchored.anchor,
        timestamps: anchored.text,
        start,
        timed: anchored.source,
        aggregated,
        upload,
    })
}

/// What writing an upload's outputs gives the manifest.
struct Wrote {
    samples: u64,
    pieces: u64,
    series: Vec<ManifestSeries>,
    sample_v2: ManifestSampleV2,
}

/// Tells `out` the keys outside the conversion's folder it may write, then feeds every sample
/// of `source` to `writers` and finishes the tables and the build-ID index.
fn write_outputs(
    profile: &mut Profile,
    source: &mut SampleSource<'_>,
    anchor: Anchor,
    mut writers: Writers<'_>,
    index: IndexOf<'_>,
    out: &mut Outputs,
) -> Result<Wrote> {
    if let Some(days) = source.days(profile, anchor) {
        out.record_pending(&writers.keys(days, profile))?;
    }
    let fed = source.feed(profile, anchor, &mut writers, out)?;
    let (series, sample_v2) = writers.finish(&source.models(profile), index, out)?;
    Ok(Wrote {
        samples: fed.samples,
        pieces: fed.pieces,
        series,
        sample_v2,
    })
}

/// What a manifest says before its outputs are listed.
struct ManifestOf<'a> {
    source_key: &'a str,
    /// Without quotes.
    etag: &'a str,
    input_bytes: u64,
    format: InputFormat,
    container: Container,
    source_id: &'a str,
    metadata_etag: Option<&'a str>,
    profile: &'a Profile,
    samples: u64,
    timestamps: String,
    clock_source: &'static str,
    series: Vec<ManifestSeries>,
    sample_v2: ManifestSampleV2,
    symbolization: SymbolizeReport,
}

fn manifest_of(m: ManifestOf<'_>) -> Manifest {
    Manifest {
        manifest_version: MANIFEST_VERSION,
        converter: converter(),
        source: ManifestSource {
            key: m.source_key.into(),
            etag: m.etag.into(),
            bytes: m.input_bytes,
            format: m.format.name().into(),
            container: m.container.name().into(),
            source_id: m.source_id.to_owned(),
            metadata_etag: m.metadata_etag.map(str::to_owned),
        },
        profile: ManifestProfile {
            timestamps: m.timestamps,
            clock_source: m.clock_source.into(),
            samples: m.samples,
            samples_written: m.sample_v2.samples,
            processes: m.profile.processes().len() as u64,
            threads: m.profile.threads().len() as u64,
            stats: m
                .profile
                .stats
                .iter()
                .map(|(k, v)| ((*k).to_owned(), *v))
                .collect(),
            findings: m
                .profile
                .findings
                .iter()
                .take(MAX_MANIFEST_FINDINGS)
                .cloned()
                .collect(),
        },
        series: m.series,
        sample_v2: m.sample_v2,
        symbols: m.symbolization.images,
        outputs: Vec::new(),
    }
}

/// `proflake <version>`: what wrote the outputs.
fn converter() -> String {
    format!("proflake {}", env!("CARGO_PKG_VERSION"))
}

/// How the outputs name the upload and what converted it.
struct Naming<'a> {
    source_key: &'a str,
    source_id: String,
    /// Without quotes.
    etag: &'a str,
    converter: String,
}

impl<'a> Naming<'a> {
    fn new(source_key: &'a str, etag: &'a str) -> Self {
        Naming {
            source_key,
            source_id: source_id(source_key, etag),
            etag: etag.trim_matches('"'),
            converter: converter(),
        }
    }

    /// The upload as the tables describe it, decoded as `format`, under `metadata`.
    fn table_source<'s>(
        &'s self,
        format: InputFormat,
        metadata: &'s UploadMetadata,
    ) -> TableSource<'s> {
        TableSource {
            source_id: &self.source_id,
            source_key: self.source_key,
            source_etag: self.etag,
            source_format: format.name(),
            converter: &self.converter,
            service: metadata.service.as_deref(),
            labels: &metadata.labels,
            timed_clock: ClockSource::Input.name(),
            aggregated_clock: ClockSource::Input.name(),
        }
    }
}
