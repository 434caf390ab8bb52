//! One Sample v2 chunk: checked against Relay's rules, kept as sent, and read into the model.

use std::collections::{BTreeMap, HashMap};

use debugid::DebugId;
use serde::Deserialize;

use crate::error::{ErrorKind, Result};
use crate::formats::Extras;
use crate::metadata::normalize_id;
use crate::model::{
    seconds_to_ns, Frame, FrameAddress, FrameKind, Image, ImageHandle, Profile, Sample, Series,
    SeriesKind,
};
use crate::plan::Timing;
use crate::sample_v2::check_sample_v2;
use crate::sample_v2::SampleV2Chunk;

const FORMAT: &str = "sample-v2";

/// How many violations an error message details.
const LISTED_VIOLATIONS: usize = 5;

#[derive(Deserialize)]
struct Chunk {
    chunk_id: String,
    profiler_id: String,
    platform: String,
    #[serde(default)]
    release: Option<String>,
    #[serde(default)]
    environment: Option<String>,
    #[serde(default)]
    debug_meta: DebugMeta,
    profile: ProfileData,
}

#[derive(Deserialize, Default)]
struct DebugMeta {
    #[serde(default)]
    images: Vec<DebugImage>,
}

#[derive(Deserialize)]
struct DebugImage {
    #[serde(rename = "type")]
    kind: Option<String>,
    code_file: Option<String>,
    debug_id: Option<String>,
    image_addr: Option<String>,
    image_vmaddr: Option<String>,
    image_size: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct ProfileData {
    samples: Vec<ChunkSample>,
    stacks: Vec<Vec<usize>>,
    frames: Vec<ChunkFrame>,
    #[serde(default)]
    thread_metadata: BTreeMap<String, ThreadMeta>,
}

#[derive(Deserialize)]
struct ChunkSample {
    timestamp: f64,
    stack_id: usize,
    thread_id: String,
}

#[derive(Deserialize)]
struct ThreadMeta {
    name: Option<String>,
}

#[derive(Deserialize)]
struct ChunkFrame {
    function: Option<String>,
    module: Option<String>,
    filename: Option<String>,
    abs_path: Option<String>,
    lineno: Option<u32>,
    colno: Option<u32>,
    instruction_addr: Option<String>,
    package: Option<String>,
    platform: Option<String>,
}

/// Decodes a standalone Sample v2 chunk.
pub(crate) fn decode_chunk(bytes: &[u8]) -> Result<(Profile, Extras)> {
    let mut profile = Profile::new(FORMAT);
    let chunk = read_chunk(&mut profile, bytes, 0, None)?;
    profile.sort_samples_by_time();
    Ok((
        profile,
        Extras {
            metadata: None,
            chunks: vec![chunk],
        },
    ))
}

/// The model of one chunk that [`read_chunk`] already accepted (a passed-through chunk, read
/// on its own for the tables): parsed and imported, not checked against Relay's rules again.
pub(crate) fn accepted_chunk_profile(bytes: &[u8]) -> Result<Profile> {
    let chunk: Chunk = serde_json::from_slice(bytes).map_err(|e| ErrorKind::Malformed {
        format: FORMAT,
        offset: 0,
        what: e.to_string(),
    })?;
    let mut profile = Profile::new(FORMAT);
    import(&mut profile, &chunk);
    profile.sort_samples_by_time();
    Ok(profile)
}

/// Checks one chunk (at byte `offset` of the input) and adds its samples to `profile`.
/// `platform` is the envelope item's platform header, which must agree with the chunk's.
pub(crate) fn read_chunk(
    profile: &mut Profile,
    bytes: &[u8],
    offset: u64,
    platform: Option<&str>,
) -> Result<SampleV2Chunk> {
    let malformed = |what: String| ErrorKind::Malformed {
        format: FORMAT,
        offset,
        what,
    };
    let violations = check_sample_v2(bytes);
    let (rejected, repaired): (Vec<_>, Vec<_>) =
        violations.into_iter().partition(|v| v.rule.relay_rejects());
    if !rejected.is_empty() {
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for v in &rejected {
            *counts.entry(format!("{:?}", v.rule)).or_default() += 1;
        }
        let rules: Vec<String> = counts.iter().map(|(r, n)| format!("{r} x{n}")).collect();
        let first: Vec<String> = rejected
            .iter()
            .take(LISTED_VIOLATIONS)
            .map(|v| v.detail.clone())
            .collect();
        return Err(malformed(format!(
            "Relay would reject this chunk ({}): {}",
            rules.join(", "),
            first.join("; ")
        ))
        .into());
    }
    // What Relay would repair (re-sort, drop lone threads) is passed through as sent, and said.
    profile.findings.extend(
        repaired
            .iter()
            .map(|v| format!("sample v2 at byte {offset}: {v}")),
    );
    let chunk: Chunk = serde_json::from_slice(bytes).map_err(|e| malformed(e.to_string()))?;
    if let Some(header) = platform {
        if header != chunk.platform {
            return Err(malformed(format!(
                "item header platform {header:?} differs from the chunk's {:?} (Relay: InvalidProfileType)",
                chunk.platform
            ))
            .into());
        }
    }
    let chunk_id = normalize_id(&chunk.chunk_id)
        .ok_or_else(|| malformed(format!("chunk_id {:?} is not a UUID", chunk.chunk_id)))?;
    let profiler_id = normalize_id(&chunk.profiler_id)
        .ok_or_else(|| malformed(format!("profiler_id {:?} is not a UUID", chunk.profiler_id)))?;
    let (start_ns, end_ns, samples) = import(profile, &chunk);
    Ok(SampleV2Chunk {
        pid: None,
        chunk_id,
        profiler_id,
        start_ns,
        end_ns,
        samples,
        timing: Timing::Recorded,
        platform: chunk.platform.clone(),
        release: chunk.release.clone(),
        environment: chunk.environment.clone(),
        json: bytes.to_vec(),
    })
}

fn parse_addr(text: &str) -> Option<u64> {
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))?;
    u64::from_str_radix(digits, 16).ok()
}

/// A thread id as Sentry writes it: decimal, or `0x` hex on Apple platforms.
fn parse_tid(text: &str) -> Option<i64> {
    text.parse::<i64>()
        .ok()
        .or_else(|| parse_addr(text).map(|v| v as i64))
}

fn frame_kind(profile: &mut Profile, platform: &str) -> FrameKind {
    match platform {
        "java" | "android" => FrameKind::Jvm,
        "native" | "cocoa" | "c" | "cpp" | "rust" => FrameKind::Native,
        "python" => FrameKind::Python,
        "javascript" | "node" => FrameKind::JavaScript,
        "" => FrameKind::Unknown,
        other => FrameKind::Other(profile.intern(other)),
    }
}

/// Adds the chunk's images, frames, stacks and samples; returns its time range and count.
fn import(profile: &mut Profile, chunk: &Chunk) -> (i64, i64, usize) {
    let mut images: HashMap<&str, ImageHandle> = HashMap::new();
    for img in &chunk.debug_meta.images {
        // Only images that native frames map into: ProGuard and source maps have no range.
        if !matches!(
            img.kind.as_deref(),
            Some("symbolic" | "macho" | "elf" | "pe")
        ) {
            continue;
        }
        let Some(code_file) = img.code_file.as_deref() else {
            continue;
        };
        let start = img.image_addr.as_deref().and_then(parse_addr).unwrap_or(0);
        let size = match &img.image_size {
            Some(serde_json::Value::Number(n)) => n.as_u64(),
            Some(serde_json::Value::String(s)) => s.parse().ok(),
            _ => None,
        };
        let path = profile.intern(code_file);
        let mut image = Image::new(
            Some(path),
            start,
            size.map_or(0, |s| start.saturating_add(s)),
        );
        image.debug_id = img
            .debug_id
            .as_deref()
            .and_then(|d| d.parse::<DebugId>().ok());
        image.load_bias = img
            .image_vmaddr
            .as_deref()
            .and_then(parse_addr)
            .unwrap_or(0);
        let handle = profile.add_image(image);
        images.insert(code_file, handle);
    }
    let frames: Vec<_> = chunk
        .profile
        .frames
        .iter()
        .map(|f| {
            let platform = f.platform.as_deref().unwrap_or(&chunk.platform);
            let mut frame = Frame::new(frame_kind(profile, platform));
            frame.function = f.function.as_deref().map(|s| profile.intern(s));
            frame.module = f.module.as_deref().map(|s| profile.intern(s));
            frame.file = f
                .filename
                .as_deref()
                .or(f.abs_path.as_deref())
                .map(|s| profile.intern(s));
            frame.line = f.lineno;
            frame.column = f.colno;
            frame.address = f
                .instruction_addr
                .as_deref()
                .and_then(parse_addr)
                .map(FrameAddress::Absolute);
            frame.image = f.package.as_deref().map(|p| match images.get(p) {
                Some(&h) => h,
                None => {
                    let path = profile.intern(p);
                    profile.add_image(Image::new(Some(path), 0, 0))
                }
            });
            profile.add_frame(frame)
        })
        .collect();
    // Relay's checks passed, so every index is in range.
    let stacks: Vec<_> = chunk
        .profile
        .stacks
        .iter()
        .map(|s| profile.add_stack_from_root(s.iter().rev().map(|&i| frames[i])))
        .collect();
    let process = profile.add_process(None);
    let name = profile.intern("samples");
    let unit = profile.intern("count");
    let source = profile.intern("sentry");
    let series = profile.add_series(Series {
        kind: SeriesKind::WallTime,
        name,
        unit,
        source: Some(source),
        frequency_hz: None,
        period: None,
    });
    let mut range = (i64::MAX, i64::MIN);
    for s in &chunk.profile.samples {
        let tid = parse_tid(&s.thread_id);
        let thread = profile.add_thread(process, tid);
        if tid.is_none() {
            // Ids that are not numbers share one model thread; the first names it.
            profile.count("sample v2 thread ids that are not numbers");
            profile.name_thread(thread, &s.thread_id);
        }
        if let Some(name) = chunk
            .profile
            .thread_metadata
            .get(&s.thread_id)
            .and_then(|m| m.name.as_deref())
        {
            profile.name_thread(thread, name);
        }
        let time = seconds_to_ns(s.timestamp);
        range = (range.0.min(time), range.1.max(time));
        let mut sample = Sample::new(thread, stacks[s.stack_id], 1, series);
        sample.time = Some(time);
        profile.add_sample(sample);
    }
    (range.0, range.1, chunk.profile.samples.len())
}
