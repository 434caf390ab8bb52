//! Reading Sample v2 chunks: bytes into the typed [`Chunk`], checked against Relay's rules,
//! then into the model so that a chunk an input already holds can be tabulated.

use std::collections::BTreeMap;

use debugid::{CodeId, DebugId};
use rustc_hash::FxHashMap;

use crate::error::{ErrorKind, Result};
use crate::model::{
    checked_seconds_to_ns, seconds_to_ns, Frame, FrameAddress, FrameHandle, FrameKind, Image,
    ImageHandle, Profile, Sample, Series, SeriesKind, SymbolStatus,
};
use crate::relay::schema::Chunk;
use crate::relay::{check_chunk, parse, Violation};

pub(crate) const FORMAT: &str = "sample-v2";

/// How many violations an error message details.
const LISTED_VIOLATIONS: usize = 5;

/// A Sample v2 chunk an input already holds. Relay accepts it, so it is stored exactly as
/// received (`json`) rather than written again from the model.
#[derive(Clone, Debug)]
pub struct PassThrough {
    /// What the chunk says.
    pub chunk: Chunk,
    /// The chunk as received.
    pub json: Vec<u8>,
}

/// Reads a chunk. Only its JSON shape is checked, not Relay's other rules
/// ([`check_chunk`] does that).
pub fn read_chunk(json: &[u8]) -> Result<Chunk> {
    parse(json).map_err(|v| rejected(0, &[v]))
}

fn malformed(offset: u64, what: String) -> crate::error::Error {
    ErrorKind::Malformed {
        format: FORMAT,
        offset,
        what,
    }
    .into()
}

/// The error for a chunk Relay would reject: each broken rule with its count, then the first
/// few details.
fn rejected(offset: u64, violations: &[Violation]) -> crate::error::Error {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for v in violations {
        *counts.entry(format!("{:?}", v.rule)).or_default() += 1;
    }
    let rules: Vec<String> = counts.iter().map(|(r, n)| format!("{r} x{n}")).collect();
    let first: Vec<&str> = violations
        .iter()
        .take(LISTED_VIOLATIONS)
        .map(|v| v.detail.as_str())
        .collect();
    malformed(
        offset,
        format!(
            "Relay would reject this chunk ({}): {}",
            rules.join(", "),
            first.join("; ")
        ),
    )
}

/// Takes in a chunk an input holds at byte `offset`: Relay must accept it, and `platform`, the
/// envelope item's header, must agree with the chunk's. Returns the chunk and what Relay would
/// repair in it (re-sorting, dropping lone threads), which is passed through as sent.
pub(crate) fn accept(
    json: Vec<u8>,
    offset: u64,
    platform: Option<&str>,
) -> Result<(PassThrough, Vec<Violation>)> {
    let chunk = parse(&json).map_err(|v| rejected(offset, &[v]))?;
    let (rejects, repairs): (Vec<_>, Vec<_>) = check_chunk(&chunk)
        .into_iter()
        .partition(|v| v.rule.relay_rejects());
    if !rejects.is_empty() {
        return Err(rejected(offset, &rejects));
    }
    // Relay takes any finite time, but the model's are i64 ns since the epoch.
    let out_of_range = (chunk.profile.samples.iter().enumerate())
        .find(|(_, s)| checked_seconds_to_ns(s.seconds()).is_none());
    if let Some((i, sample)) = out_of_range {
        return Err(malformed(
            offset,
            format!(
                "profile.samples[{i}].timestamp {:?} is outside the Unix times proflake holds \
                 (1677 to 2262)",
                sample.seconds()
            ),
        ));
    }
    if let Some(header) = platform.filter(|&h| h != chunk.platform) {
        return Err(malformed(
            offset,
            format!(
                "item header platform {header:?} differs from the chunk's {:?} (Relay: InvalidProfileType)",
                chunk.platform
            ),
        ));
    }
    Ok((PassThrough { chunk, json }, repairs))
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

/// What [`import`] added.
pub(crate) struct Imported {
    /// The first sample's time, ns since the epoch.
    pub start_ns: i64,
    /// The last sample's time.
    pub end_ns: i64,
    /// Samples added.
    pub samples: usize,
}

/// The model frame handle of each of `chunk`'s frames (by index in `profile.frames`) in a
/// profile that holds that chunk alone, as the Sample v2 writer's pass-through builds it.
///
/// The reader adds the chunk's images first, then its frames in index order, one
/// [`Profile::add_frame`] each, before anything else; `add_frame` deduplicates, so frames
/// that read as equal model frames (the same function, file, line, address, ... whatever
/// their unknown keys) share a handle, numbered in order of first appearance. Symbolizing
/// the model in place keeps every handle, so a symbolized frame is found at the handle of the
/// chunk frame it was read from.
pub fn frame_handles(chunk: &Chunk) -> Vec<FrameHandle> {
    import_frames(&mut Profile::new(FORMAT), chunk)
}

/// A symbolicator frame status as the model's, `None` for words the model has none for
/// (`missing`, or anything newer).
fn symbol_status(status: &str) -> Option<SymbolStatus> {
    [
        SymbolStatus::Symbolicated,
        SymbolStatus::MissingSymbol,
        SymbolStatus::UnknownImage,
        SymbolStatus::Malformed,
    ]
    .into_iter()
    .find(|s| s.name() == status)
}

/// Adds a chunk's images and frames to `profile`; returns each chunk frame's model handle.
pub(crate) fn import_frames(profile: &mut Profile, chunk: &Chunk) -> Vec<FrameHandle> {
    let mut images: FxHashMap<&str, ImageHandle> = FxHashMap::default();
    for img in chunk.debug_meta.iter().flat_map(|m| &m.images) {
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
        let path = profile.intern(code_file);
        let mut image = Image::new(
            Some(path),
            start,
            img.image_size.map_or(0, |s| start.saturating_add(s)),
        );
        image.code_id = img
            .code_id
            .as_deref()
            .map(|c| CodeId::new(c.to_ascii_lowercase()))
            .filter(|c| !c.is_nil());
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
    chunk
        .profile
        .frames
        .iter()
        .map(|f| {
            let platform = f.platform.as_deref().unwrap_or(&chunk.platform);
            let mut frame = Frame::new(frame_kind(profile, platform));
            frame.function = f.function.as_deref().map(|s| profile.intern(s));
            frame.module = f.module.as_deref().map(|s| profile.intern(s));
            // Symbolicator splits a symbolicated frame's file into `abs_path` (the full path)
            // and `filename` (its last component): the full path is the file.
            let (first, second) = match f.status {
                Some(_) => (&f.abs_path, &f.filename),
                None => (&f.filename, &f.abs_path),
            };
            frame.file = first
                .as_deref()
                .or(second.as_deref())
                .map(|s| profile.intern(s));
            frame.symbol_status = f.status.as_deref().and_then(symbol_status);
            frame.system_name = f
                .symbol
                .as_deref()
                .filter(|&s| Some(s) != f.function.as_deref())
                .map(|s| profile.intern(s));
            frame.function_start = f.sym_addr.as_deref().and_then(parse_addr);
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
        .collect()
}

/// Adds a chunk's images, frames, stacks and samples to `profile`; returns the chunk's time
/// range and sample count. Stack and frame indices out of range are skipped
/// (Relay's rules reject such chunks before they get here).
pub(crate) fn import(profile: &mut Profile, chunk: &Chunk) -> Imported {
    let frames = import_frames(profile, chunk);
    let stacks: Vec<_> = chunk
        .profile
        .stacks
        .iter()
        .map(|s| {
            let root_first = s.iter().rev().filter_map(|&i| frames.get(i).copied());
            profile.add_stack_from_root(root_first)
        })
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
        spans: false,
    });
    let thread_metadata = chunk.profile.thread_metadata.as_ref();
    let mut range = (i64::MAX, i64::MIN);
    let mut count = 0;
    for s in &chunk.profile.samples {
        let Some(&stack) = stacks.get(s.stack_id) else {
            continue;
        };
        let tid = parse_tid(&s.thread_id);
        let thread = profile.add_thread(process, tid);
        if tid.is_none() {
            // Ids that are not numbers share one model thread; the first names it.
            profile.count("sample v2 thread ids that are not numbers");
            profile.name_thread(thread, &s.thread_id);
        }
        if let Some(name) = thread_metadata
            .and_then(|m| m.get(&s.thread_id))
            .and_then(|m| m.name.as_deref())
        {
            profile.name_thread(thread, name);
        }
        let time = seconds_to_ns(s.seconds());
        range = (range.0.min(time), range.1.max(time));
        let mut sample = Sample::new(thread, stack, 1, series);
        sample.time = Some(time);
        profile.add_sample(sample);
        count += 1;
    }
    Imported {
        start_ns: range.0,
        end_ns: range.1,
        samples: count,
    }
}

#[cfg(test)]
mod tests {
    use crate::{ErrorKind, InputFormat};

    /// A chunk Relay accepts (finite times) whose times overflowed the conversion to ns.
    #[test]
    fn times_past_2262_are_malformed() {
        let json = include_bytes!(
            "../../../../../tests/fuzz/regressions/sample_v2/timestamp_past_2262.json"
        );
        let err = crate::decode(json, Some(InputFormat::SampleV2), &crate::Limits::default())
            .unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::Malformed { format: "sample-v2", what, .. }
                if what.starts_with("profile.samples[0].timestamp 1e300 is outside")),
            "{err}"
        );
        let in_range = String::from_utf8_lossy(json).replace("1e+300", "9200000000");
        let decoded = crate::decode(
            in_range.as_bytes(),
            Some(InputFormat::SampleV2),
            &crate::Limits::default(),
        )
        .unwrap();
        let times: Vec<_> = decoded.profile.samples().iter().map(|s| s.time).collect();
        assert_eq!(times, [Some(9_200_000_000_000_000_000); 2]);
    }
}
