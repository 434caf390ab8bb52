//! The convert job: one upload in, Sample v2 chunks and a manifest out.

use std::io::Read;

use super::build_id_index::build_id_index;
use super::decode::{
    decode_opened_with_limits, decode_stream_with_limits, decode_with_limits, Decoded,
};
use super::manifest::{
    Manifest, ManifestExpansion, ManifestProfile, ManifestSampleV2, ManifestSeries, ManifestSource,
    MANIFEST_VERSION,
};
use super::outputs::{MemoryOutputs, OutputSink, Outputs};
use super::series::SeriesTally;
use super::streamed::{streamable, write_streamed, Reopen, StreamedInput};
use super::windows::{index_keys, IndexOf, Windows};
use crate::error::{ErrorKind, Result};
use crate::formats::perfetto::first_pass;
use crate::formats::{open_stream, Container, InputFormat};
use crate::limits::{Limits, LimitsError};
use crate::metadata::UploadMetadata;
use crate::model::{seconds_to_ns, Profile, Timestamps};
use crate::plan::{plan_tables, Grid, TableProfilePlan};
use crate::sample_v2::{PassThrough, SampleV2Chunk};
use crate::store::{manifest_key, source_id, ObjectStore};
use crate::symbolize::{symbolize, NoSymbols, SymbolSource, SymbolizeReport};
use crate::tables::{write_tables_into, TableProfileInput, TableSource};

/// How to convert.
#[derive(Clone, Debug, Default)]
pub struct ConvertOptions {
    /// Decode as this format instead of detecting it.
    pub format: Option<InputFormat>,
    /// Metadata of the upload. It overrides metadata the input carries itself.
    pub metadata: UploadMetadata,
    /// When the upload arrived, ns since the Unix epoch (the object's last-modified time):
    /// the start time of last resort for aggregated inputs that record none.
    pub received_at_ns: Option<i64>,
    /// What the input may make the conversion do.
    pub limits: Limits,
    /// Perfetto uploads of more stored bytes than this that can be read twice are converted
    /// in two passes, a window at a time ([`STREAM_ABOVE_BYTES`] when `None`).
    pub stream_above_bytes: Option<u64>,
}

/// Perfetto uploads larger than this are converted a window at a time when they can be read
/// twice. The second pass costs about a sixth more CPU, for memory that holds a window of
/// samples instead of all of them (12 bytes each): a trace of this size converted whole peaks
/// about as high as a long one converted a window at a time (62 vs 60 MB at 16 threads
/// sampled at 1 kHz), so below it the CPU would buy nothing.
pub const STREAM_ABOVE_BYTES: u64 = 64 << 20;

/// [`ConvertOptions::stream_above_bytes`] as the functions and the command line read it from
/// `PROFLAKE_STREAM_ABOVE_BYTES` (`get` gives a variable's value); `None` when it is unset.
pub fn stream_above_bytes_from(
    get: impl Fn(&str) -> Option<String>,
) -> std::result::Result<Option<u64>, LimitsError> {
    crate::limits::read(&get, "PROFLAKE_STREAM_ABOVE_BYTES", 1, u64::MAX)
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
pub struct ConvertReport {
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

/// An upload's bytes as a conversion reads them.
pub enum UploadInput<'a> {
    /// In memory.
    Bytes(&'a [u8]),
    /// The `len` bytes a reader gives (a stored file, an S3 body): a Perfetto trace is
    /// decoded as it arrives and never held whole, and the reader is dropped once decoded.
    Stream {
        /// The bytes.
        reader: Box<dyn Read + Send + 'a>,
        /// How many there are.
        len: u64,
        /// Reads them again from the first: a long Perfetto trace is then converted in two
        /// passes, a window at a time, so memory does not grow with its length.
        reopen: Option<Box<Reopen<'a>>>,
    },
}

/// Converts one upload, naming its native frames from `symbols`, and hands each object to
/// `sink` as it is produced and the manifest last. Errors name `source_key`.
pub fn convert_into(
    source_key: &str,
    etag: &str,
    bytes: UploadInput<'_>,
    options: &ConvertOptions,
    symbols: &dyn SymbolSource,
    sink: &mut dyn OutputSink,
) -> Result<ConvertReport> {
    convert_inner(source_key, etag, bytes, options, symbols, sink)
        .map_err(|e| e.for_input(source_key))
}

fn convert_inner(
    source_key: &str,
    etag: &str,
    bytes: UploadInput<'_>,
    options: &ConvertOptions,
    symbols: &dyn SymbolSource,
    sink: &mut dyn OutputSink,
) -> Result<ConvertReport> {
    options.metadata.validate()?;
    let (format, limits) = (options.format, &options.limits);
    let (input_bytes, mut decoded) = match bytes {
        UploadInput::Bytes(bytes) => (
            bytes.len() as u64,
            decode_with_limits(bytes, format, limits)?,
        ),
        UploadInput::Stream {
            reader,
            len,
            reopen: Some(mut reopen),
        } if len > options.stream_above_bytes.unwrap_or(STREAM_ABOVE_BYTES)
            && streamable(&options.metadata)
            && format.is_none_or(|f| f == InputFormat::Perfetto) =>
        {
            let opened = open_stream(reader, len, format, limits)?;
            if opened.format != InputFormat::Perfetto {
                (len, decode_opened_with_limits(opened, len, limits)?)
            } else {
                let container = opened.container;
                let mut first = first_pass(opened.stream, container.name(), limits)?;
                if first.times.is_some() {
                    let input = StreamedInput {
                        first: &mut first,
                        container,
                        len,
                        reopen: &mut *reopen,
                        limits,
                    };
                    return convert_streamed(source_key, etag, input, options, symbols, sink);
                }
                // Times the windows cannot be told from: read it again, whole.
                let reader = reopen()?;
                let perfetto = Some(InputFormat::Perfetto);
                (
                    len,
                    decode_stream_with_limits(reader, len, perfetto, limits)?,
                )
            }
        }
        UploadInput::Stream { reader, len, .. } => {
            (len, decode_stream_with_limits(reader, len, format, limits)?)
        }
    };
    let metadata = match decoded.metadata.take() {
        Some(embedded) => embedded.merge(options.metadata.clone()),
        None => options.metadata.clone(),
    };
    let mut timestamps = anchor(&mut decoded.profile, metadata.timestamp)?;
    let naming = Naming::new(source_key, etag);
    let (source_id, etag) = (&naming.source_id, naming.etag);
    let table_source = naming.table_source(decoded.format, &metadata);
    let manifest_key = manifest_key(source_id);
    let mut sample_v2 = ManifestSampleV2::default();
    let mut out = Outputs::new(sink);
    let mut symbolization = SymbolizeReport::default();
    let series = if decoded.chunks.is_empty() {
        let start = place_aggregated(&mut decoded.profile, &metadata, options.received_at_ns);
        symbolization = symbolize(&mut decoded.profile, symbols)?;
        let profile = &decoded.profile;
        let mut windows = Windows::new(&table_source, &metadata);
        if let Some(days) = days_of(profile) {
            let mut keys = windows.table_keys(days);
            keys.extend(index_keys(profile, source_id));
            out.intend(&keys)?;
        }
        windows.add(profile, Grid::of(profile), &mut out)?;
        if let Some(ManifestExpansion { interval_ns, .. }) = windows.expansion {
            timestamps = format!(
                "expanded from aggregated weights, {interval_ns} ns apart per thread, from {start}"
            );
        }
        let index = IndexOf {
            source_key,
            manifest_key: &manifest_key,
            symbolization: &symbolization,
        };
        let (series, written) = windows.finish(profile, index, &mut out)?;
        sample_v2 = written;
        series
    } else {
        // The input already is Sample v2: validated by the decoder, stored unchanged, and
        // tabulated chunk by chunk, each under its own platform, release and environment.
        let (mut profiles, mut chunks): (Vec<Profile>, Vec<SampleV2Chunk>) =
            std::mem::take(&mut decoded.chunks)
                .into_iter()
                .map(PassThrough::into_output)
                .unzip();
        // Chunks stay as received unless symbols name some of their frames; then they are
        // written again through the typed schema.
        for (profile, chunk) in profiles.iter_mut().zip(&mut chunks) {
            let report = symbolize(profile, symbols)?;
            if report.symbolicated() > 0 {
                chunk.rewrite_frames(profile)?;
            }
            symbolization.merge(report);
        }
        let mut table_plans: Vec<Vec<TableProfilePlan>> = Vec::with_capacity(chunks.len());
        for (profile, chunk) in profiles.iter().zip(&chunks) {
            let identity = format!("{source_id}/{}", chunk.chunk_id);
            table_plans.push(plan_tables(profile, &identity)?);
        }
        for chunk in &mut chunks {
            sample_v2.chunks += 1;
            sample_v2.samples += chunk.samples as u64;
            out.chunk(source_id, chunk)?;
        }
        let inputs: Vec<TableProfileInput> = table_plans
            .iter()
            .zip(&chunks)
            .flat_map(|(plans, chunk)| {
                plans.iter().map(move |plan| TableProfileInput {
                    plan,
                    platform: Some(&chunk.platform),
                    release: chunk.release.as_deref(),
                    environment: chunk.environment.as_deref(),
                })
            })
            .collect();
        let index = build_id_index(
            table_plans.iter().flatten(),
            source_key,
            source_id,
            &manifest_key,
            &symbolization,
        );
        let mut series = Vec::new();
        for (profile, plans) in profiles.iter().zip(&table_plans) {
            let mut tally = SeriesTally::new(false);
            tally.add(profile, plans, &[]);
            tally.merge_into(profile, &mut series);
        }
        write_tables_into(&table_source, &inputs, &mut out.tables(&index))?;
        for (key, entry) in index {
            out.index_entry(&key, &entry)?;
        }
        series
    };

    let manifest = manifest_of(ManifestOf {
        source_key,
        etag,
        input_bytes,
        format: decoded.format,
        container: decoded.container,
        source_id,
        profile: &decoded.profile,
        samples: decoded.profile.samples().len() as u64,
        timestamps,
        series,
        sample_v2,
        symbolization,
    });
    let manifest = out.finish(&manifest_key, manifest)?;
    Ok(ConvertReport {
        decoded,
        manifest,
        manifest_key,
        pieces: 1,
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
    profile: &'a Profile,
    samples: u64,
    timestamps: String,
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
        },
        profile: ManifestProfile {
            timestamps: m.timestamps,
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
        }
    }
}

/// Converts a Perfetto trace whose first pass is done, a window at a time.
fn convert_streamed(
    source_key: &str,
    etag: &str,
    mut input: StreamedInput<'_, '_>,
    options: &ConvertOptions,
    symbols: &dyn SymbolSource,
    sink: &mut dyn OutputSink,
) -> Result<ConvertReport> {
    let metadata = &options.metadata;
    options.limits.check_profile(&input.first.profile)?;
    place_aggregated(&mut input.first.profile, metadata, options.received_at_ns);
    let symbolization = symbolize(&mut input.first.profile, symbols)?;
    let naming = Naming::new(source_key, etag);
    let (source_id, etag) = (&naming.source_id, naming.etag);
    let table_source = naming.table_source(InputFormat::Perfetto, metadata);
    let manifest_key = manifest_key(source_id);
    let mut out = Outputs::new(sink);
    let index = IndexOf {
        source_key,
        manifest_key: &manifest_key,
        symbolization: &symbolization,
    };
    let streamed = write_streamed(&mut input, &table_source, metadata, index, &mut out)?;
    let profile = std::mem::take(&mut input.first.profile);
    let manifest = manifest_of(ManifestOf {
        source_key,
        etag,
        input_bytes: input.len,
        format: InputFormat::Perfetto,
        container: input.container,
        source_id,
        profile: &profile,
        samples: streamed.samples,
        timestamps: streamed.timestamps,
        series: streamed.series,
        sample_v2: streamed.sample_v2,
        symbolization,
    });
    let manifest = out.finish(&manifest_key, manifest)?;
    let decoded = Decoded {
        profile,
        format: InputFormat::Perfetto,
        container: input.container,
        metadata: None,
        chunks: Vec::new(),
    };
    Ok(ConvertReport {
        decoded,
        manifest,
        manifest_key,
        pieces: streamed.pieces,
    })
}

/// The UTC days (since the epoch) `profile`'s table profiles can start on: from its first
/// sample to its last, and its start for samples without a time.
fn days_of(profile: &Profile) -> Option<std::ops::RangeInclusive<i64>> {
    let samples = profile.samples();
    let mut range: Option<(i64, i64)> = None;
    for i in 0..samples.len() {
        let Some(t) = samples.time(i).or(profile.start_time) else {
            continue;
        };
        range = Some(range.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
    }
    let day = |ns: i64| ns.div_euclid(1000).div_euclid(86_400_000_000);
    range.map(|(a, b)| day(a)..=day(b))
}

/// Puts trace-clock sample times on the wall clock when the metadata says when the profile
/// started; says how times were obtained.
fn anchor(profile: &mut Profile, start_seconds: Option<f64>) -> Result<String> {
    let Timestamps::TraceClock(clock) = profile.timestamps.clone() else {
        return Ok("unix".into());
    };
    let Some(start) = start_seconds else {
        return Err(ErrorKind::NoWallClock { clock }.into());
    };
    profile.anchor_first_sample_at(seconds_to_ns(start));
    Ok(format!(
        "{clock} clock, anchored at metadata timestamp {start}"
    ))
}

/// Gives an aggregated profile (samples without times) a start time when the input recorded
/// none: the metadata timestamp, else the upload's arrival. Says where the start came from.
fn place_aggregated(
    profile: &mut Profile,
    metadata: &UploadMetadata,
    received_at_ns: Option<i64>,
) -> &'static str {
    if profile.start_time.is_some() {
        return "the input's start time";
    }
    if let Some(start) = metadata.timestamp {
        profile.start_time = Some(seconds_to_ns(start));
        return "the metadata timestamp";
    }
    if let Some(received) = received_at_ns {
        profile.start_time = Some(received);
        return "the upload's arrival time";
    }
    "nowhere"
}

/// Stores a conversion: every output first, the manifest last, so a manifest is never seen
/// before the objects it lists.
pub fn publish(store: &dyn ObjectStore, converted: &Converted) -> Result<()> {
    for (key, bytes) in &converted.objects {
        store.put(key, bytes)?;
    }
    let manifest = serde_json::to_vec_pretty(&converted.manifest).expect("manifest serializes");
    store.put(&converted.manifest_key, &manifest)
}
