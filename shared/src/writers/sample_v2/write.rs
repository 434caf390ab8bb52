//! Writing planned chunks as Sentry Sample v2 JSON, exactly as Relay accepts them.
//!
//! Which samples go into which chunk is decided by the plan ([`crate::plan`]); here:
//! - stacks are leaf first and deduplicated, frames are deduplicated, indices always in range;
//! - native images become `debug_meta.images` of type `symbolic` with the debug id derived
//!   from the ELF build id;
//! - ids are derived from the input's identity unless given, so converting the same input
//!   twice gives byte-identical chunks.

use std::collections::BTreeMap;
use std::io::{self, Write};

use indexmap::IndexSet;
use rustc_hash::{FxBuildHasher, FxHashMap, FxHashSet};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Number};

use crate::error::{ErrorKind, Result};
use crate::metadata::{Measurement, UploadMetadata};
use crate::model::{
    FrameAddress, FrameHandle, FrameKind, Image, ImageHandle, Profile, StackHandle, StringHandle,
    SymbolStatus, ThreadHandle,
};
#[cfg(test)]
use crate::plan::plan_chunks;
use crate::plan::{ChunkPlan, PlannedSamples, Runtimes, Timing};
use crate::relay::schema::{self, Chunk};

/// One written chunk.
#[derive(Clone, Debug)]
pub struct SampleV2Chunk {
    /// The process the chunk covers.
    pub pid: Option<i64>,
    /// The chunk id.
    pub chunk_id: String,
    /// First and last sample time, ns since the Unix epoch.
    pub start_ns: i64,
    /// Last sample time.
    pub end_ns: i64,
    /// Number of samples written.
    pub samples: usize,
    /// Whether the sample times were recorded or laid out from aggregated weights.
    #[cfg(test)]
    pub timing: Timing,
    /// The chunk's Sentry platform.
    pub platform: String,
    /// The release it names.
    pub release: Option<String>,
    /// The environment it names.
    pub environment: Option<String>,
    /// The chunk JSON.
    pub json: Vec<u8>,
}

const EXPANSION_RULE: &str = "aggregated input: each stack's weight expanded into samples one \
     sampling interval apart per thread, from the profile's start time";

const SPAN_SAMPLING_RULE: &str =
    "span input: each thread sampled one interval apart on the upload's \
     window grid, with the stack of the spans open at each instant";

/// A frame as the writer deduplicates it, borrowing from the profile; only the distinct ones
/// become [`schema::Frame`]s. Every field is part of the key, so the inline levels of one
/// address (same `instruction_addr`, other `function`, `lineno`, `sym_addr`) stay apart.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct FrameRow<'a> {
    pub abs_path: Option<&'a str>,
    pub colno: Option<u32>,
    pub filename: Option<&'a str>,
    pub function: Option<&'a str>,
    pub instruction_addr: Option<String>,
    pub lineno: Option<u32>,
    pub module: Option<&'a str>,
    pub package: Option<&'a str>,
    pub platform: Option<&'static str>,
    pub status: Option<&'static str>,
    pub sym_addr: Option<String>,
    pub symbol: Option<&'a str>,
}

impl FrameRow<'_> {
    pub(crate) fn into_schema(self) -> schema::Frame {
        let owned = |s: Option<&str>| s.map(str::to_owned);
        schema::Frame {
            abs_path: owned(self.abs_path),
            colno: self.colno,
            filename: owned(self.filename),
            function: owned(self.function),
            in_app: None,
            instruction_addr: self.instruction_addr,
            lineno: self.lineno,
            module: owned(self.module),
            package: owned(self.package),
            platform: owned(self.platform),
            status: owned(self.status),
            sym_addr: self.sym_addr,
            symbol: owned(self.symbol),
            other: Map::new(),
        }
    }
}

/// Writes a chunk's JSON.
pub fn write_chunk(chunk: &Chunk) -> Vec<u8> {
    // Only a map with non-string keys or a failing Serialize impl can fail, and the schema
    // has neither.
    serde_json::to_vec(chunk).expect("a Sample v2 chunk always serializes")
}

/// Converts ns since the epoch to Relay's float seconds: integer arithmetic first, one
/// conversion to f64 at the end.
fn seconds(ns: i64) -> f64 {
    ns.div_euclid(1_000_000_000) as f64 + ns.rem_euclid(1_000_000_000) as f64 / 1e9
}

fn hex_addr(addr: u64) -> String {
    format!("{addr:#x}")
}

#[cfg(test)]
/// Writes a profile as Sample v2 chunks. `identity` names the input (its source id); ids are
/// derived from it.
pub fn write_sample_v2(
    profile: &Profile,
    meta: &UploadMetadata,
    identity: &str,
) -> Result<Vec<SampleV2Chunk>> {
    plan_chunks(profile, meta, identity)?
        .iter()
        .map(|plan| write_planned_chunk(meta, plan))
        .collect()
}

/// What a frame and the calls inlined into it share: where the code is, and what
/// symbolization made of it.
struct NativeParts<'a> {
    instruction_addr: Option<String>,
    package: Option<&'a str>,
    platform: Option<&'static str>,
    status: Option<&'static str>,
}

/// The last component of a path, `/` or `\\` separated (symbolicator's `filename` of a
/// symbolicated frame); the whole path when it ends in a separator.
fn basename(path: &str) -> &str {
    path.rsplit(['/', '\\'])
        .next()
        .filter(|name| !name.is_empty())
        .unwrap_or(path)
}

/// A value in the space of `address` made absolute, as `instruction_addr` and `sym_addr`
/// are: an image-relative one is moved by the image's start (kept as is without an image).
fn absolute(address: FrameAddress, value: u64, image: Option<&Image>) -> Option<u64> {
    match (address, image) {
        (FrameAddress::ImageRelative(_), Some(img)) => img.start.checked_add(value),
        _ => Some(value),
    }
}

/// One output frame. The file of a symbolized frame is split as symbolicator does (`abs_path`
/// the full path, `filename` its last component); any other frame's file is its `filename`,
/// doubling as `abs_path` when it is absolute.
fn row<'a>(
    profile: &'a Profile,
    function: Option<&'a str>,
    module: Option<&'a str>,
    symbol: Option<StringHandle>,
    (file, line, column): (Option<StringHandle>, Option<u32>, Option<u32>),
    native: &NativeParts<'a>,
) -> FrameRow<'a> {
    let file = profile.opt_str(file);
    let (abs_path, filename) = if native.status.is_some() {
        (file, file.map(basename))
    } else {
        (file.filter(|f| f.starts_with('/')), file)
    };
    FrameRow {
        abs_path,
        colno: column,
        filename,
        function,
        instruction_addr: native.instruction_addr.clone(),
        lineno: line,
        module,
        package: native.package,
        platform: native.platform,
        status: native.status,
        sym_addr: None,
        symbol: profile.opt_str(symbol),
    }
}

/// The output rows of one model frame, as Sentry stores a symbolicated frame: the frame, then
/// the functions it was inlined into (leaf first, as stacks are), all at the same
/// `instruction_addr` and with the frame's `status`, each with its raw `symbol`, and
/// `sym_addr` (the function start, absolute) only on the last, outermost one. Also the image
/// `debug_meta` must list for them, if any.
pub(crate) fn model_frame_rows(
    profile: &Profile,
    handle: FrameHandle,
) -> (Vec<FrameRow<'_>>, Option<ImageHandle>) {
    let frame = profile.frame(handle);
    let image = frame.image.map(|i| profile.image(i));
    let jvm = frame.kind == FrameKind::Jvm;
    let address = if jvm {
        None
    } else {
        frame.address.and_then(|a| match a {
            FrameAddress::Absolute(a) => Some(a),
            // Placed at the base `debug_meta` gives the image, so that the relative address
            // symbolicator computes is this one.
            FrameAddress::BaseRelative(a) => match (frame.image, image) {
                (Some(h), Some(img)) if img.debug_id.is_some() => image_base(h, img).checked_add(a),
                _ => Some(a),
            },
            FrameAddress::ImageRelative(r) => match image {
                Some(img) => img.start.checked_add(r),
                None => Some(r),
            },
        })
    };
    let function_start = match (jvm, frame.address, frame.function_start) {
        (false, Some(space), Some(start)) => absolute(space, start, image),
        (false, None, Some(start)) => Some(start),
        _ => None,
    };
    let listed = match (frame.image, jvm, image) {
        (Some(i), false, Some(img)) if img.debug_id.is_some() => Some(i),
        _ => None,
    };
    let platform = match frame.kind {
        FrameKind::Jvm => Some("java"),
        FrameKind::Python => Some("python"),
        FrameKind::JavaScript => Some("javascript"),
        _ if address.is_some() => Some("native"),
        _ => None,
    };
    let native = NativeParts {
        instruction_addr: address.map(hex_addr),
        package: image.and_then(|img| profile.opt_str(img.path)),
        platform,
        status: frame.symbol_status.map(SymbolStatus::name),
    };
    let mut rows = Vec::with_capacity(1 + frame.inlined_into.len());
    let own = row(
        profile,
        profile.opt_str(frame.function),
        profile.opt_str(frame.module),
        frame.system_name,
        (frame.file, frame.line, frame.column),
        &native,
    );
    let own = if own.function.is_none() && own.filename.is_none() && own.instruction_addr.is_none()
    {
        // Relay wants at least a function, file or address: name the unknown.
        FrameRow {
            function: Some("<unknown>"),
            ..own
        }
    } else {
        own
    };
    rows.push(own);
    for call in frame.inlined_into.iter() {
        let function = profile.opt_str(call.function).or(Some("<unknown>"));
        rows.push(row(
            profile,
            function,
            None,
            call.system_name,
            (call.file, call.line, call.column),
            &native,
        ));
    }
    if let Some(outermost) = rows.last_mut() {
        outermost.sym_addr = function_start.map(hex_addr);
    }
    (rows, listed)
}

/// Per-chunk tables under construction.
struct ChunkBuilder<'a> {
    profile: &'a Profile,
    frames: IndexSet<FrameRow<'a>, FxBuildHasher>,
    stacks: IndexSet<Vec<usize>, FxBuildHasher>,
    images: IndexSet<ImageHandle, FxBuildHasher>,
    /// Images whose frames have base-relative addresses (placed by [`image_base`]).
    base_relative: FxHashSet<ImageHandle>,
    frame_rows: FxHashMap<FrameHandle, Vec<usize>>,
    /// Each leaf stack's row in `stacks`, so a stack's frames are walked once a chunk.
    stack_rows: FxHashMap<StackHandle, usize>,
    runtimes: Runtimes,
}

impl<'a> ChunkBuilder<'a> {
    fn new(profile: &'a Profile) -> Self {
        ChunkBuilder {
            profile,
            frames: IndexSet::default(),
            stacks: IndexSet::default(),
            images: IndexSet::default(),
            base_relative: FxHashSet::default(),
            frame_rows: FxHashMap::default(),
            stack_rows: FxHashMap::default(),
            runtimes: Runtimes::default(),
        }
    }

    /// The row in `stacks` of a sample's stack, laid out on first sight.
    #[inline]
    fn stack_row(&mut self, stack: Option<StackHandle>) -> usize {
        match stack {
            // An idle sample: Sample v2's empty stack.
            None => self.stacks.insert_full(Vec::new()).0,
            Some(leaf) => match self.stack_rows.get(&leaf) {
                Some(&id) => id,
                None => {
                    let mut rows = Vec::new();
                    for f in self.profile.stack_frames(leaf) {
                        rows.extend(self.frame_rows(f));
                    }
                    let id = self.stacks.insert_full(rows).0;
                    self.stack_rows.insert(leaf, id);
                    id
                }
            },
        }
    }

    /// The indices of one model frame's output rows ([`model_frame_rows`]).
    fn frame_rows(&mut self, handle: FrameHandle) -> Vec<usize> {
        if let Some(rows) = self.frame_rows.get(&handle) {
            return rows.clone();
        }
        let profile = self.profile;
        self.runtimes.saw(profile.frame(handle).kind);
        let (rows, image) = model_frame_rows(profile, handle);
        if let Some(i) = image {
            self.images.insert(i);
            if matches!(
                profile.frame(handle).address,
                Some(FrameAddress::BaseRelative(_))
            ) {
                self.base_relative.insert(i);
            }
        }
        let rows: Vec<usize> = rows
            .into_iter()
            .map(|row| self.frames.insert_full(row).0)
            .collect();
        self.frame_rows.insert(handle, rows.clone());
        rows
    }
}

/// A chunk's threads: each one's id as Sample v2 writes it, and the names of those that have
/// one.
#[derive(Default)]
struct ChunkThreads {
    ids: Vec<String>,
    rows: FxHashMap<ThreadHandle, u32>,
    metadata: BTreeMap<String, schema::ThreadMetadata>,
}

impl ChunkThreads {
    /// The thread's position in `ids`, added on first sight.
    #[inline]
    fn row(&mut self, profile: &Profile, thread: ThreadHandle) -> u32 {
        let Self {
            ids,
            rows,
            metadata,
        } = self;
        *rows.entry(thread).or_insert_with(|| {
            let thread = profile.thread(thread);
            let thread_id = thread.tid.unwrap_or(0).to_string();
            if let Some(name) = thread.name {
                metadata
                    .entry(thread_id.clone())
                    .or_insert_with(|| schema::ThreadMetadata {
                        name: Some(profile.str(name).to_owned()),
                        ..Default::default()
                    });
            }
            ids.push(thread_id);
            (ids.len() - 1) as u32
        })
    }
}

/// What the manifest says of a chunk written as a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamedChunk {
    /// The process the chunk covers.
    pub pid: Option<i64>,
    /// Number of samples written.
    pub samples: usize,
    /// First sample time, ns since the Unix epoch.
    pub start_ns: i64,
    /// Last sample time.
    pub end_ns: i64,
}

/// A planned chunk with everything but its samples laid out: stacks, frames, images and
/// threads. Its samples are serialized from the plan as the JSON is written, so a chunk of a
/// million samples costs 8 bytes a sample beside the plan, not a copy of every sample.
pub struct PreparedChunk<'p> {
    chunk: Chunk<ChunkSamples<'p>>,
    info: StreamedChunk,
    #[cfg(test)]
    timing: Timing,
}

impl PreparedChunk<'_> {
    /// The chunk id.
    pub fn chunk_id(&self) -> &str {
        &self.chunk.chunk_id
    }

    /// What the manifest says of it.
    pub fn info(&self) -> StreamedChunk {
        self.info
    }

    /// Writes the chunk's JSON to `w`.
    pub fn write_to(&self, w: &mut dyn Write) -> io::Result<()> {
        // The serializer writes a token at a time: into a buffer it can inline, not through
        // a call on `dyn Write` per token (which doubles the cost of writing a chunk).
        let mut buffered = io::BufWriter::with_capacity(256 * 1024, w);
        serde_json::to_writer(&mut buffered, &self.chunk).map_err(io::Error::from)?;
        buffered.flush()
    }

    /// The chunk's JSON in memory, with what the manifest says of it.
    #[cfg(test)]
    pub fn into_written(self) -> SampleV2Chunk {
        let mut json = Vec::new();
        self.write_to(&mut json)
            .expect("a Sample v2 chunk always serializes into memory");
        let chunk = self.chunk;
        SampleV2Chunk {
            pid: self.info.pid,
            chunk_id: chunk.chunk_id,
            start_ns: self.info.start_ns,
            end_ns: self.info.end_ns,
            samples: self.info.samples,
            timing: self.timing,
            platform: chunk.platform,
            release: chunk.release,
            environment: chunk.environment,
            json,
        }
    }
}

/// The samples of a planned chunk, serialized one at a time as `schema::Sample`s are.
struct ChunkSamples<'p> {
    profile: &'p Profile,
    samples: &'p PlannedSamples,
    /// Per sample: its row in `stacks` and its thread's position in `thread_ids`.
    rows: Vec<(u32, u32)>,
    /// Each thread's id as Sample v2 writes it, once per thread rather than once per sample.
    thread_ids: Vec<String>,
}

/// One sample as [`schema::Sample`] serializes it (its `other` is always empty here).
#[derive(Serialize)]
struct SampleRef<'a> {
    timestamp: Number,
    stack_id: usize,
    thread_id: &'a str,
}

impl Serialize for ChunkSamples<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.samples.len()))?;
        for (p, &(stack_id, thread)) in self.samples.iter(self.profile).zip(&self.rows) {
            seq.serialize_element(&SampleRef {
                timestamp: seconds_number(p.time),
                stack_id: stack_id as usize,
                thread_id: &self.thread_ids[thread as usize],
            })?;
        }
        seq.end()
    }
}

#[cfg(test)]
/// Writes one planned chunk into memory. Fails only on metadata debug images that are not
/// Sample v2 ones.
pub fn write_planned_chunk(meta: &UploadMetadata, plan: &ChunkPlan<'_>) -> Result<SampleV2Chunk> {
    Ok(prepare_planned_chunk(meta, plan)?.into_written())
}

/// Lays out one planned chunk for writing. Fails only on metadata debug images that are not
/// Sample v2 ones.
pub fn prepare_planned_chunk<'p>(
    meta: &UploadMetadata,
    plan: &'p ChunkPlan<'p>,
) -> Result<PreparedChunk<'p>> {
    let profile = plan.profile;
    let kept = &plan.samples;
    let mut b = ChunkBuilder::new(profile);
    let mut threads = ChunkThreads::default();
    let rows = sample_rows(&mut b, &mut threads, kept);
    let images = debug_images(meta, profile, &b.images, &b.base_relative)?;
    let platform = b.runtimes.platform(meta.platform.as_deref());
    let start_ns = kept.first(profile).map_or(0, |p| p.time);
    let end_ns = kept.last(profile).map_or(0, |p| p.time);
    let client_sdk = meta.client_sdk.clone().unwrap_or_default();
    let chunk = Chunk {
        measurements: measurements(meta, plan.measurement_range),
        chunk_id: plan.chunk_id.clone(),
        profiler_id: plan.profiler_id.clone(),
        debug_meta: (!images.is_empty()).then(|| schema::DebugMeta {
            images,
            other: Map::new(),
        }),
        environment: meta.environment.clone(),
        platform,
        content_type: meta.content_type.clone(),
        release: meta.release.clone(),
        client_sdk: schema::ClientSdk {
            name: client_sdk.name,
            version: client_sdk.version,
            other: Map::new(),
        },
        version: "2".to_owned(),
        synthetic_timestamps: synthetic_timestamps(plan.timing),
        profile: profile_data(b, threads, kept, rows),
        timestamp: None,
        other: Map::new(),
    };
    Ok(PreparedChunk {
        chunk,
        info: StreamedChunk {
            pid: plan.pid,
            samples: kept.len(),
            start_ns,
            end_ns,
        },
        #[cfg(test)]
        timing: plan.timing,
    })
}

/// Each sample's row in `stacks` and its thread's position in `threads.ids`, laying out the
/// stacks, frames and threads as they are first seen.
fn sample_rows(
    b: &mut ChunkBuilder<'_>,
    threads: &mut ChunkThreads,
    kept: &PlannedSamples,
) -> Vec<(u32, u32)> {
    let profile = b.profile;
    let mut rows = Vec::with_capacity(kept.len());
    let samples = profile.samples();
    for p in kept.iter(profile) {
        let (stack, thread) = (samples.stack(p.index), samples.thread(p.index));
        let stack_id = b.stack_row(stack);
        let thread_row = threads.row(profile, thread);
        let stack_id = u32::try_from(stack_id).expect("stacks are fewer than samples");
        rows.push((stack_id, thread_row));
    }
    rows
}

/// The chunk's `profile`: its samples as the plan holds them, its stacks, frames and
/// threads as laid out.
fn profile_data<'p>(
    b: ChunkBuilder<'p>,
    threads: ChunkThreads,
    kept: &'p PlannedSamples,
    rows: Vec<(u32, u32)>,
) -> schema::ProfileData<ChunkSamples<'p>> {
    schema::ProfileData {
        samples: ChunkSamples {
            profile: b.profile,
            samples: kept,
            rows,
            thread_ids: threads.ids,
        },
        stacks: b.stacks.into_iter().collect(),
        frames: b.frames.into_iter().map(FrameRow::into_schema).collect(),
        thread_metadata: (!threads.metadata.is_empty()).then_some(threads.metadata),
        other: Map::new(),
    }
}

/// Where Sample v2 places an image whose frames have addresses relative to its base: at its
/// start when the input gave one, else at a slot of its own (1 TiB apart, by handle), so that
/// images of unknown range do not all overlap at 0 and each frame resolves to its image.
fn image_base(handle: ImageHandle, img: &Image) -> u64 {
    if img.start != 0 || img.end != 0 {
        return img.start;
    }
    (handle.index() as u64 + 1) << 40
}

/// The metadata's debug images, then the chunk's native images that have a debug id.
fn debug_images(
    meta: &UploadMetadata,
    profile: &Profile,
    used: &IndexSet<ImageHandle, FxBuildHasher>,
    base_relative: &FxHashSet<ImageHandle>,
) -> Result<Vec<schema::DebugImage>> {
    let mut images = given_images(meta)?;
    for &h in used {
        let img = profile.image(h);
        let Some(debug_id) = img.debug_id else {
            continue;
        };
        let code_file = img
            .path
            .map(|p| profile.str(p))
            .or(img.code_id.as_ref().map(|c| c.as_str()))
            .unwrap_or("<unknown>");
        images.push(schema::DebugImage {
            code_file: Some(code_file.to_owned()),
            code_id: img.code_id.as_ref().map(|c| c.as_str().to_owned()),
            debug_id: Some(debug_id.to_string()),
            kind: Some("symbolic".to_owned()),
            image_addr: Some(hex_addr(if base_relative.contains(&h) {
                image_base(h, img)
            } else {
                img.start
            })),
            image_vmaddr: Some(hex_addr(img.load_bias)),
            image_size: img.end.checked_sub(img.start).filter(|&s| s > 0),
            ..Default::default()
        });
    }
    Ok(images)
}

/// The metadata's measurements within the chunk's range; `None` when none has a value there.
fn measurements(
    meta: &UploadMetadata,
    (from, to): (i64, i64),
) -> Option<BTreeMap<String, schema::Measurement>> {
    let measurements: BTreeMap<String, schema::Measurement> = meta
        .measurements
        .iter()
        .map(|(name, m)| (name.clone(), measurement(&m.between(from, to))))
        .filter(|(_, m)| !m.values.is_empty())
        .collect();
    (!measurements.is_empty()).then_some(measurements)
}

/// How the sample times were laid out, when the input recorded none.
fn synthetic_timestamps(timing: Timing) -> Option<schema::SyntheticTimestamps> {
    match timing {
        Timing::Recorded => None,
        Timing::Expanded {
            interval_ns,
            scaled_from,
        } => Some(schema::SyntheticTimestamps {
            interval_ns,
            rule: EXPANSION_RULE.to_owned(),
            scaled_from,
            other: Map::new(),
        }),
        Timing::Spans {
            interval_ns,
            scaled_from,
        } => Some(schema::SyntheticTimestamps {
            interval_ns,
            rule: SPAN_SAMPLING_RULE.to_owned(),
            scaled_from,
            other: Map::new(),
        }),
    }
}

/// Seconds as a JSON number.
fn seconds_number(ns: i64) -> Number {
    Number::from_f64(seconds(ns)).expect("seconds from i64 nanoseconds are finite")
}

/// The metadata's debug images (ProGuard mappings and the like), ahead of the native ones.
fn given_images(meta: &UploadMetadata) -> Result<Vec<schema::DebugImage>> {
    meta.debug_images
        .iter()
        .enumerate()
        .map(|(i, image)| {
            schema::DebugImage::deserialize(image).map_err(|e| {
                ErrorKind::InvalidMetadata {
                    what: format!("debug_meta.images[{i}]: {e}"),
                }
                .into()
            })
        })
        .collect()
}

/// A measurement in Relay's form: the unit's full name, `{timestamp, value}` points.
fn measurement(m: &Measurement) -> schema::Measurement {
    let values = m
        .values
        .iter()
        // JSON has no NaN or infinity; only a caller's own values can hold them.
        .filter_map(|v| {
            Some(schema::MeasurementValue {
                timestamp: Number::from_f64(v.timestamp)?,
                value: Number::from_f64(v.value)?,
                other: Map::new(),
            })
        })
        .collect();
    schema::Measurement {
        unit: m.unit.name().to_owned(),
        values,
        other: Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_keep_sub_microsecond_precision() {
        assert_eq!(seconds(1_700_000_001_010_000_000), 1700000001.01);
        assert!((seconds(-1) + 1e-9).abs() < 1e-12);
        assert_eq!(seconds(1_763_800_001_001_044_178), 1763800001.0010443);
    }
}
