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
use serde::Serialize;

use crate::error::Result;
use crate::metadata::{ClientSdk, Measurement, UploadMetadata};
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

#[derive(Serialize)]
struct Chunk<'a> {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    measurements: BTreeMap<&'a str, Measurement>,
    chunk_id: &'a str,
    profiler_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    debug_meta: Option<DebugMeta<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    environment: Option<&'a str>,
    platform: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    content_type: Option<&'a str>,
    release: Option<&'a str>,
    client_sdk: &'a ClientSdk,
    version: &'static str,
    /// Present when the input had no per-sample times (Relay ignores unknown keys).
    #[serde(skip_serializing_if = "Option::is_none")]
    synthetic_timestamps: Option<SyntheticTimestamps>,
    profile: ProfileData<'a>,
}

/// Says that sample times were laid out from aggregated weights, and how.
#[derive(Serialize)]
struct SyntheticTimestamps {
    interval_ns: i64,
    rule: &'static str,
    /// The observations the weights stood for, when they were scaled down to fit the bound.
    #[serde(skip_serializing_if = "Option::is_none")]
    scaled_from: Option<u64>,
}

const EXPANSION_RULE: &str = "aggregated input: each stack's weight expanded into samples one \
     sampling interval apart per thread, from the profile's start time";

impl Serialize for ClientSdk {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("ClientSdk", 2)?;
        st.serialize_field("name", &self.name)?;
        st.serialize_field("version", &self.version)?;
        st.end()
    }
}

#[derive(Serialize)]
struct DebugMeta<'a> {
    images: Vec<DebugImage<'a>>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum DebugImage<'a> {
    Given(&'a serde_json::Value),
    Native(NativeImage<'a>),
}

#[derive(Serialize)]
struct NativeImage<'a> {
    code_file: &'a str,
    debug_id: String,
    #[serde(rename = "type")]
    kind: &'static str,
    image_addr: String,
    image_vmaddr: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    image_size: Option<u64>,
}

#[derive(Serialize)]
struct ProfileData<'a> {
    samples: Vec<OutSample>,
    stacks: Vec<Vec<usize>>,
    frames: Vec<OutFrame<'a>>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    thread_metadata: BTreeMap<String, ThreadMeta<'a>>,
}

#[derive(Serialize)]
struct OutSample {
    timestamp: f64,
    stack_id: usize,
    thread_id: String,
}

#[derive(Serialize)]
struct ThreadMeta<'a> {
    name: &'a str,
}

#[derive(Serialize, Clone, PartialEq, Eq, Hash)]
struct OutFrame<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    abs_path: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    colno: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    filename: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    function: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    instruction_addr: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lineno: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    module: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    package: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    platform: Option<&'static str>,
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
    Ok(plan_chunks(profile, meta, identity)?
        .iter()
        .map(|plan| write_planned_chunk(meta, plan))
        .collect())
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
    frames: IndexSet<OutFrame<'a>>,
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
    ) -> OutFrame<'a> {
        let file = self.s(file);
        OutFrame {
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
                OutFrame {
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

/// Writes one planned chunk.
pub fn write_planned_chunk(meta: &UploadMetadata, plan: &ChunkPlan<'_>) -> SampleV2Chunk {
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
    let mut out_samples = Vec::with_capacity(kept.len());
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
                .or_insert(ThreadMeta {
                    name: profile.str(name),
                });
        }
        out_samples.push(OutSample {
            timestamp: seconds(t),
            stack_id,
            thread_id,
        });
    }
    let mut images: Vec<DebugImage> = meta.debug_images.iter().map(DebugImage::Given).collect();
    for &h in &b.images {
        let img = profile.image(h);
        let Some(debug_id) = img.debug_id else {
            continue;
        };
        images.push(DebugImage::Native(NativeImage {
            code_file: img
                .path
                .map(|p| profile.str(p))
                .or(img.code_id.as_ref().map(|c| c.as_str()))
                .unwrap_or("<unknown>"),
            debug_id: debug_id.to_string(),
            kind: "symbolic",
            image_addr: hex_addr(img.start),
            image_vmaddr: hex_addr(img.load_bias),
            image_size: img.end.checked_sub(img.start).filter(|&s| s > 0),
        }));
    }
    let platform = b.runtimes.platform(meta.platform.as_deref());
    let default_sdk = ClientSdk::default();
    let start_ns = kept.first().map_or(0, |p| p.time);
    let end_ns = kept.last().map_or(0, |p| p.time);
    let measurements = meta
        .measurements
        .iter()
        .map(|(name, m)| (name.as_str(), m.between(from, to)))
        .filter(|(_, m)| !m.values.is_empty())
        .collect();
    let chunk = Chunk {
        measurements,
        chunk_id: &plan.chunk_id,
        profiler_id: &plan.profiler_id,
        debug_meta: (!images.is_empty()).then_some(DebugMeta { images }),
        environment: meta.environment.as_deref(),
        platform: &platform,
        content_type: meta.content_type.as_deref(),
        release: meta.release.as_deref(),
        client_sdk: meta.client_sdk.as_ref().unwrap_or(&default_sdk),
        version: "2",
        synthetic_timestamps: match plan.timing {
            Timing::Recorded => None,
            Timing::Expanded {
                interval_ns,
                scaled_from,
            } => Some(SyntheticTimestamps {
                interval_ns,
                rule: EXPANSION_RULE,
                scaled_from,
            }),
        },
        profile: ProfileData {
            samples: out_samples,
            stacks: b.stacks.into_iter().collect(),
            frames: b.frames.into_iter().collect(),
            thread_metadata,
        },
    };
    let json = serde_json::to_vec(&chunk).expect("chunk serialization cannot fail");
    SampleV2Chunk {
        pid: plan.pid,
        chunk_id: plan.chunk_id.clone(),
        profiler_id: plan.profiler_id.clone(),
        start_ns,
        end_ns,
        samples: kept.len(),
        timing: plan.timing,
        platform,
        release: meta.release.clone(),
        environment: meta.environment.clone(),
        json,
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
