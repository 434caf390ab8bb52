//! speedscope's own JSON format (`https://www.speedscope.app/file-format-schema.json`): frames
//! shared by every profile, and profiles that are either sampled (stacks with weights, no
//! times) or evented (frames opened and closed at given values).

mod document;
mod evented;
mod sampled;

use super::json_document;
use super::json_scan::top_level_keys;
use crate::error::{Error, Result};
use crate::limits::{exceeded, Limits};
use crate::model::{Frame, FrameHandle, FrameKind, Profile, ThreadHandle, Timestamps};
use document::{Document, FrameDoc};

const FORMAT: &str = "speedscope";

/// The `$schema` speedscope writes (`https://www.speedscope.app/file-format-schema.json`).
const SCHEMA: &[u8] = b"speedscope.app/file-format-schema";

/// Whether `prefix` starts a speedscope document: a top-level `$schema` naming speedscope's,
/// a `shared` object starting with `frames`, or `profiles` starting with an object whose
/// `type` is `evented` or `sampled`. Keys may come in any order.
pub(crate) fn test(prefix: &[u8]) -> bool {
    top_level_keys(prefix, |key, scan| match key {
        b"$schema" => scan
            .followed_by(b"", |v| v.windows(SCHEMA.len()).any(|w| w == SCHEMA))
            .then_some(true),
        b"shared" => scan.followed_by(b"{", |k| k == b"frames").then_some(true),
        b"profiles" => {
            let typed = scan.followed_by(b"[{", |k| k == b"type")
                && scan.followed_by(b":", |v| v == b"evented" || v == b"sampled");
            typed.then_some(true)
        }
        _ => None,
    })
}

fn malformed(what: String) -> Error {
    json_document::malformed(FORMAT, what)
}

/// Decodes a whole speedscope document: one thread per profile, named after it.
pub(crate) fn decode(json: &[u8], limits: &Limits) -> Result<Profile> {
    let doc = Document::parse(json, limits)?;
    let mut profile = Profile::new(FORMAT);
    let frames = doc
        .shared
        .frames
        .iter()
        .map(|f| frame(f, &mut profile))
        .collect::<Vec<_>>();
    if doc.profiles.len() as u64 > limits.max_threads {
        return Err(exceeded("max_threads", limits.max_threads));
    }
    let process = profile.add_process(None);
    if let Some(name) = &doc.name {
        profile.name_process(process, Some(name), None);
    }
    if let Some(exporter) = &doc.exporter {
        profile.set_process_attribute(process, "speedscope.exporter", exporter);
    }
    let mut timed = false;
    for (i, p) in doc.profiles.iter().enumerate() {
        let thread = profile.add_thread(process, Some(i as i64));
        if let Some(name) = &p.name {
            profile.name_thread(thread, name);
        }
        let at = Place { index: i, thread };
        match p.kind.as_str() {
            "evented" => timed |= evented::add(p, at, &frames, &mut profile, limits)?,
            "sampled" => sampled::add(p, at, &frames, &mut profile, limits)?,
            other => {
                return Err(malformed(format!(
                    "profiles[{i}].type {other:?} is neither \"evented\" nor \"sampled\""
                )))
            }
        }
    }
    if timed {
        profile.timestamps = Timestamps::TraceClock(FORMAT.into());
        profile.sort_samples_by_time();
    }
    Ok(profile)
}

/// Which profile of the document is being read, and its thread.
#[derive(Clone, Copy)]
struct Place {
    index: usize,
    thread: ThreadHandle,
}

/// A shared frame. speedscope says nothing of the language: the file's extension tells it.
fn frame(f: &FrameDoc, profile: &mut Profile) -> FrameHandle {
    let file = f.file.as_deref().filter(|f| !f.is_empty());
    let kind = match file.and_then(|f| f.rsplit_once('.')).map(|(_, ext)| ext) {
        Some("py") => FrameKind::Python,
        Some("js" | "mjs" | "cjs" | "ts" | "jsx" | "tsx") => FrameKind::JavaScript,
        _ => FrameKind::Unknown,
    };
    let mut frame = Frame::new(kind);
    frame.function = Some(profile.intern(&f.name));
    frame.file = file.map(|f| profile.intern(f));
    let positive = |n: Option<i64>| n.and_then(|n| u32::try_from(n).ok()).filter(|&n| n > 0);
    frame.line = positive(f.line);
    frame.column = positive(f.col);
    profile.add_frame(frame)
}

/// The frame at `index` of the shared frames, or an error naming where it was used.
fn frame_at(
    frames: &[FrameHandle],
    index: u64,
    at: impl FnOnce() -> String,
) -> Result<FrameHandle> {
    usize::try_from(index)
        .ok()
        .and_then(|i| frames.get(i).copied())
        .ok_or_else(|| {
            malformed(format!(
                "{} names frame {index}, but shared.frames holds {}",
                at(),
                frames.len()
            ))
        })
}

/// Nanoseconds per unit of a speedscope time unit; `None` for `none` and `bytes`.
fn unit_ns(unit: &str) -> Option<f64> {
    Some(match unit {
        "nanoseconds" => 1.0,
        "microseconds" => 1e3,
        "milliseconds" => 1e6,
        "seconds" => 1e9,
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
