//! Chrome's Trace Event Format (JSON): what Chrome's tracing, DevTools, catapult and agent
//! tracers such as Claude Code's write. A document is an object with `traceEvents` (keys in
//! any order) or a bare array of events; it is read as a stream, an event at a time.

mod args;
mod catapult;
mod event;
mod events;
mod marks;
mod stream;
mod v8;

use std::borrow::Cow;
use std::io::Read;

use serde::Deserialize;

use super::json_scan::{top_level_keys, Scan};
use crate::calendar::parse_rfc3339;
use crate::error::{ErrorKind, Result};
use crate::limits::Limits;
use crate::model::{Profile, Timestamps};
use event::RawEvent;
use events::Events;
use stream::{JsonStream, Root};

const FORMAT: &str = "chrome-json";

/// Keys an event may start with (the Trace Event Format's, and what producers add).
const EVENT_KEYS: [&[u8]; 23] = [
    b"name",
    b"cat",
    b"ph",
    b"ts",
    b"tts",
    b"pid",
    b"tid",
    b"dur",
    b"tdur",
    b"args",
    b"id",
    b"id2",
    b"bind_id",
    b"s",
    b"cname",
    b"sf",
    b"stack",
    b"esf",
    b"estack",
    b"bp",
    b"flow_in",
    b"flow_out",
    b"scope",
];

/// Top-level keys other formats own: a document with one of them before any of ours is not a
/// trace-event document.
const OTHERS_KEYS: [&[u8]; 8] = [
    b"nodes",
    b"timeDeltas",
    b"meta",
    b"$schema",
    b"shared",
    b"profiles",
    b"resourceProfiles",
    b"version",
];

/// Whether `prefix` starts a trace-event document: a bare array whose first element is an
/// event (its first key one an event has), or an object with `traceEvents`, a catapult
/// `stackFrames` or `samples` dictionary, `systemTraceEvents` or `displayTimeUnit`, in any
/// order. A `metadata` object the prefix ends inside is taken as DevTools', which writes it
/// first.
pub(crate) fn test(prefix: &[u8]) -> bool {
    let trimmed = prefix.strip_prefix(b"\xef\xbb\xbf").unwrap_or(prefix);
    let mut scan = Scan::new(trimmed);
    if scan.next_token() == Some(b'[') {
        return scan.followed_by(b"{", |k| EVENT_KEYS.contains(&k));
    }
    top_level_keys(prefix, |key, scan| match key {
        b"traceEvents" => Some(scan.next_token() == Some(b'[')),
        b"systemTraceEvents" | b"displayTimeUnit" => Some(true),
        b"stackFrames" => Some(scan.next_token() == Some(b'{')),
        // catapult's samples name their stack frame (`sf`).
        b"samples" => match (scan.next_token(), scan.next_token()) {
            (Some(b'['), Some(b'{')) => Some(scan.object_has_key(b"sf").unwrap_or(false)),
            _ => Some(false),
        },
        b"metadata" => match scan.next_token() {
            Some(b'{') => (!scan.skip_rest()).then_some(true),
            _ => Some(false),
        },
        _ if OTHERS_KEYS.contains(&key) => Some(false),
        _ => None,
    })
}

/// What the document's `metadata` says that decoding uses.
#[derive(Deserialize, Default)]
struct DocMetadata<'a> {
    /// Claude Code's: the wall-clock time of `ts` 0.
    #[serde(borrow, default)]
    trace_start_time: Option<Cow<'a, str>>,
    /// DevTools': about when the recording started, on the wall clock (not exactly the time of
    /// its first event).
    #[serde(borrow, default, rename = "startTime")]
    start_time: Option<Cow<'a, str>>,
}

/// Decodes a trace-event document from `input`, an event at a time.
pub(crate) fn decode(input: impl Read, codec: &'static str, limits: &Limits) -> Result<Profile> {
    let mut stream = JsonStream::new(input, codec, limits.max_event_bytes);
    let mut events = Events::new(limits);
    let mut origin_ns = None;
    let mut approximate_start = None;
    match stream.root()? {
        Root::Array => {
            read_events(&mut stream, &mut events)?;
        }
        Root::Object => {
            while let Some(key) = stream.next_key()? {
                match key.as_slice() {
                    b"traceEvents" if stream.enter_array()? => {
                        if read_events(&mut stream, &mut events)? {
                            // The document ends inside its events: nothing follows.
                            break;
                        }
                    }
                    b"metadata" => {
                        let offset = stream.offset();
                        if let Some(value) = stream.value()? {
                            let meta: DocMetadata<'_> = serde_json::from_slice(value)
                                .map_err(|e| malformed(offset, format!("metadata: {e}")))?;
                            origin_ns = meta.trace_start_time.as_deref().and_then(parse_rfc3339);
                            approximate_start = meta.start_time.as_deref().and_then(parse_rfc3339);
                        }
                    }
                    // clang's -ftime-trace: the wall-clock time of ts 0, in µs since the epoch.
                    b"beginningOfTime" => {
                        if let Some(value) = stream.value()? {
                            origin_ns = std::str::from_utf8(value)
                                .ok()
                                .and_then(|v| v.trim().parse::<i64>().ok())
                                .and_then(|us| us.checked_mul(1000))
                                .or(origin_ns);
                        }
                    }
                    b"stackFrames" => {
                        let offset = stream.offset();
                        if let Some(value) = stream.value()? {
                            events
                                .stack_frames(value)
                                .map_err(|e| malformed(offset, format!("stackFrames: {e}")))?;
                        }
                    }
                    b"samples" if stream.enter_array()? => {
                        let cut = stream.elements(|offset, bytes| {
                            let sample = serde_json::from_slice(bytes).map_err(|e| {
                                malformed(
                                    offset,
                                    format!("a sample that is not a sample object: {e}"),
                                )
                            })?;
                            events.catapult_sample(&sample)
                        })?;
                        if cut {
                            events.profile.count("json_incomplete_last_element");
                            break;
                        }
                    }
                    _ => {
                        stream.value()?;
                    }
                }
            }
        }
    }
    let mut profile = events.finish();
    match origin_ns {
        Some(origin) => profile.offset_from(origin),
        None => {
            profile.timestamps = Timestamps::TraceClock("chrome".into());
            // The first event is placed there unless the upload's metadata says otherwise.
            profile.start_time = approximate_start;
        }
    }
    Ok(profile)
}

/// Reads the events of the array just entered; says whether the input ended inside it.
fn read_events<R: Read>(stream: &mut JsonStream<R>, events: &mut Events<'_>) -> Result<bool> {
    let cut = stream.elements(|offset, bytes| {
        let event: RawEvent<'_> = serde_json::from_slice(bytes)
            .map_err(|e| malformed(offset, format!("an event that is not an event object: {e}")))?;
        events.event(&event)
    })?;
    if cut {
        events.profile.count("json_incomplete_last_element");
    }
    Ok(cut)
}

fn malformed(offset: u64, what: String) -> crate::error::Error {
    ErrorKind::Malformed {
        format: FORMAT,
        offset,
        what,
    }
    .into()
}

#[cfg(test)]
mod tests;
