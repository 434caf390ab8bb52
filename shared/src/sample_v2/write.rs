//! Writing planned chunks as Sentry Sample v2 JSON, exactly as Relay accepts them.
//!
//! Which samples go into which chunk is decided by the plan ([`crate::plan`]); here:
//! - stacks are leaf first and deduplicated, frames are deduplicated, indices always in range;
//! - native images become `debug_meta.images` of type `symbolic` with the debug id derived
//!   from the ELF build id;
//! - ids are derived from the input's identity unless given, so converting the same input
//!   twice gives byte-identical chunks.

use std::collections::{BTreeMap, HashMap};

use indexmap::IndexSet;
use serde::Deserialize;
use serde_json::{Map, Number};

use super::schema::{self, Chunk};
use crate::error::{ErrorKind, Result};
use crate::metadata::{Measurement, UploadMetadata};
use crate::model::{FrameAddress, FrameHandle, FrameKind, ImageHandle, Profile, StringHandle};
use crate::plan::{plan_chunks, ChunkPlan, Runtimes, Timing};

/// One written chunk.
#[derive(Clone, Debug)]
pub struct SampleV2Chunk {
    /// The process the chunk covers.
    pub pid: Option<i64>,
    /// The chunk id.
    pub chunk_id: String,
    /// The profiler session id.
    pub profiler_id: String,
    /// First and last sample time, ns since the Unix epoch.
    pub start_ns: i64,
    /// Last sample time.
    pub end_ns: i64,
    /// Number of samples written.
    pub samples: usize,
    /// Whether the sample times were recorded or laid out from aggregated weights.
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

/// A frame as the writer deduplicates it, borrowing from the profile; only the distinct ones
/// become [`schema::Frame`]s.
#[derive(Clone, PartialEq, Eq, Hash)]
struct FrameRow<'a> {
    abs_path: Option<&'a str>,
    colno: Option<u32>,
    filename: Option<&'a str>,
    function: Option<&'a str>,
    instruction_addr: Option<String>,
    lineno: Option<u32>,
    module: Option<&'a str>,
    package: Option<&'a str>,
    platform: Option<&'static str>,
}

impl FrameRow<'_> {
    fn into_schema(self) -> schema::Frame {
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

/// What a frame and the calls inlined into it share: where the code is.
struct NativeParts<'a> {
    instruction_addr: Option<String>,
    package: Option<&'a str>,
    platform: Option<&'static str>,
}

/// Per-chunk tables under construction.
struct ChunkBuilder<'a> {
    profile: &'a Profile,
    frames: IndexSet<FrameRow<'a>>,
    stacks: IndexSet<Vec<usize>>,
    images: IndexSet<ImageHandle>,
    frame_rows: HashMap<FrameHandle, Vec<usize>>,
    runtimes: Runtimes,
}

impl<'a> ChunkBuilder<'a> {
    fn s(&self, h: Option<StringHandle>) -> Option<&'a str> {
        let profile: &'a Profile = self.profile;
        h.map(|h| profile.str(h))
    }

    /// One output frame; the file doubles as `abs_path` when it is absolute.
    fn row(
        &self,
        function: Option<&'a str>,
        module: Option<&'a str>,
        file: Option<StringHandle>,
        line: Option<u32>,
        column: Option<u32>,
        native: &NativeParts<'a>,
    ) -> FrameRow<'a> {
        let file = self.s(file);
        FrameRow {
            abs_path: file.filter(|f| f.starts_with('/')),
            colno: column,
            filename: file,
            function,
            instruction_addr: native.instruction_addr.clone(),
            lineno: line,
            module,
            package: native.package,
            platform: native.platform,
        }
    }

    /// The output rows of one model frame: the frame, then the functions it was inlined into
    /// (leaf first, as stacks are).
    fn frame_rows(&mut self, handle: FrameHandle) -> Vec<usize> {
        if let Some(rows) = self.frame_rows.get(&handle) {
            return rows.clone();
        }
        let profile: &'a Profile = self.profile;
        let frame = profile.frame(handle);
        let image = frame.image.map(|i| profile.image(i));
        let jvm = frame.kind == FrameKind::Jvm;
        self.runtimes.saw(frame.kind);
        let address = if jvm {
            None
        } else {
            frame.address.and_then(|a| match a {
                FrameAddress::Absolute(a) => Some(a),
                FrameAddress::ImageRelative(r) => match image {
                    Some(img) => img.start.checked_add(r),
                    None => Some(r),
                },
            })
        };
        if let (Some(i), false, Some(img)) = (frame.image, jvm, image) {
            if img.debug_id.is_some() {
                self.images.insert(i);
            }
        }
        let platform = match frame.kind {
            FrameKind::Jvm => Some("java"),
            FrameKind::Python => Some("python"),
            FrameKind::JavaScript => Some("javascript"),
            _ if address.is_some() => Some("native"),
            _ => None,
        };
        let native = NativeParts {
            instruction_addr: address.map(hex_addr),
            package: image.and_then(|img| self.s(img.path)),
            platform,
        };
        let mut rows = Vec::with_capacity(1 + frame.inlined_into.len());
        let own = self.row(
            self.s(frame.function),
            self.s(frame.module),
            frame.file,
            frame.line,
            frame.column,
            &native,
        );
        let own =
            if own.function.is_none() && own.filename.is_none() && own.instruction_addr.is_none() {
                // Relay wants at least a function, file or address: name the unknown.
                FrameRow {
                    function: Some("<unknown>"),
                    ..own
                }
            } else {
                own
            };
        rows.push(self.frames.insert_full(own).0);
        for call in frame.inlined_into.iter() {
            let function = self.s(call.function).or(Some("<unknown>"));
            let row = self.row(function, None, call.file, call.line, call.column, &native);
            rows.push(self.frames.insert_full(row).0);
        }
        self.frame_rows.insert(handle, rows.clone());
        rows
    }
}

/// Writes one planned chunk. Fails only on metadata debug images that are not Sample v2 ones.
pub fn write_planned_chunk(meta: &UploadMetadata, plan: &ChunkPlan<'_>) -> Result<SampleV2Chunk> {
    let profile = plan.profile;
    let (from, to) = plan.measurement_range;
    let kept = &plan.samples;
    let mut b = ChunkBuilder {
        profile,
        frames: IndexSet::new(),
        stacks: IndexSet::new(),
        images: IndexSet::new(),
        frame_rows: HashMap::new(),
        runtimes: Runtimes::default(),
    };
    let mut samples = Vec::with_capacity(kept.len());
    let mut thread_metadata = BTreeMap::new();
    let mut stack_rows: HashMap<crate::model::StackHandle, usize> = HashMap::new();
    for p in kept {
        let (t, s) = (p.time, p.sample);
        let stack_id = match s.stack {
            // An idle sample: Sample v2's empty stack.
            None => b.stacks.insert_full(Vec::new()).0,
            Some(leaf) => match stack_rows.get(&leaf) {
                Some(&id) => id,
                None => {
                    let mut rows = Vec::new();
                    for f in profile.stack_frames(leaf) {
                        rows.extend(b.frame_rows(f));
                    }
                    let id = b.stacks.insert_full(rows).0;
                    stack_rows.insert(leaf, id);
                    id
                }
            },
        };
        let thread = profile.thread(s.thread);
        let thread_id = thread.tid.unwrap_or(0).to_string();
        if let Some(name) = thread.name {
            thread_metadata
                .entry(thread_id.clone())
                .or_insert_with(|| schema::ThreadMetadata {
                    name: Some(profile.str(name).to_owned()),
                    ..Default::default()
                });
        }
        samples.push(schema::Sample {
            timestamp: seconds_number(t),
            stack_id,
            thread_id,
            other: Map::new(),
        });
    }
    let mut images = given_images(meta)?;
    for &h in &b.images {
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
            debug_id: Some(debug_id.to_string()),
            kind: Some("symbolic".to_owned()),
            image_addr: Some(hex_addr(img.start)),
            image_vmaddr: Some(hex_addr(img.load_bias)),
            image_size: img.end.checked_sub(img.start).filter(|&s| s > 0),
            ..Default::default()
        });
    }
    let platform = b.runtimes.platform(meta.platform.as_deref());
    let start_ns = kept.first().map_or(0, |p| p.time);
    let end_ns = kept.last().map_or(0, |p| p.time);
    let measurements: BTreeMap<String, schema::Measurement> = meta
        .measurements
        .iter()
        .map(|(name, m)| (name.clone(), measurement(&m.between(from, to))))
        .filter(|(_, m)| !m.values.is_empty())
        .collect();
    let client_sdk = meta.client_sdk.clone().unwrap_or_default();
    let chunk = Chunk {
        measurements: (!measurements.is_empty()).then_some(measurements),
        chunk_id: plan.chunk_id.clone(),
        profiler_id: plan.profiler_id.clone(),
        debug_meta: (!images.is_empty()).then(|| schema::DebugMeta {
            images,
            other: Map::new(),
        }),
        environment: meta.environment.clone(),
        platform: platform.clone(),
        content_type: meta.content_type.clone(),
        release: meta.release.clone(),
        client_sdk: schema::ClientSdk {
            name: client_sdk.name,
            version: client_sdk.version,
            other: Map::new(),
        },
        version: "2".to_owned(),
        synthetic_timestamps: match plan.timing {
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
        },
        profile: schema::ProfileData {
            samples,
            stacks: b.stacks.into_iter().collect(),
            frames: b.frames.into_iter().map(FrameRow::into_schema).collect(),
            thread_metadata: (!thread_metadata.is_empty()).then_some(thread_metadata),
            other: Map::new(),
        },
        timestamp: None,
        other: Map::new(),
    };
    Ok(SampleV2Chunk {
        pid: plan.pid,
        chunk_id: chunk.chunk_id.clone(),
        profiler_id: chunk.profiler_id.clone(),
        start_ns,
        end_ns,
        samples: kept.len(),
        timing: plan.timing,
        platform,
        release: chunk.release.clone(),
        environment: chunk.environment.clone(),
        json: write_chunk(&chunk),
    })
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
