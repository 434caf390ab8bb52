//! Relay's acceptance rules for Sample v2 profile chunks, checked on the typed chunk.
//!
//! Relay parses a chunk into its own structs (`relay-profiling/src/sample/v2.rs`), runs
//! `ProfileData::normalize`, and re-serializes it. Anything that parse step rejects, and
//! anything normalize rejects, drops or rewrites, is reported here. We are deliberately
//! stricter than Relay: a chunk our converter writes should come out of Relay unchanged, so
//! silent repairs (dropping lone-sample threads, re-sorting samples, stripping zero padding
//! from addresses, ...) count as violations too.
//!
//! The parse is [`schema::Chunk`]'s: like Relay's, it stops at the first key of a wrong type,
//! missing, or repeated, which is then the one violation reported, at its JSON path. The
//! rules proper run on a chunk that parsed.
//!
//! Not checked beyond their JSON types: `measurements` (Relay's own shape for it is
//! unconfirmed), `content_type` and the SDK's top-level `timestamp` (Relay drops it
//! harmlessly). Not checked at all: the payload size limit.

use std::collections::hash_map::Entry;
use std::fmt::{self, Display, Write};
use std::str::FromStr;

use rustc_hash::{FxHashMap, FxHashSet};
use serde::de::IgnoredAny;
use serde_json::error::Category;
use serde_json::{Map, Value};
use serde_path_to_error::Segment;

use super::schema::{Chunk, DebugImage, Frame, Other, ProfileData, OUT_OF_RANGE};

/// Longest chunk Relay accepts (`MAX_PROFILE_CHUNK_DURATION`: 60 s chunks plus slack).
const MAX_CHUNK_DURATION_SECS: f64 = 66.0;

/// Relay masks `instruction_addr` with this on `platform: "cocoa"` to drop pointer
/// authentication bits, so any higher bit would be rewritten.
const COCOA_PAC_MASK: u64 = 0x0000_000F_FFFF_FFFF;

/// Sentry adds these after Relay (vroomrs requires them there); clients must not send them.
const SERVER_ONLY_FIELDS: [&str; 4] = [
    "organization_id",
    "project_id",
    "received",
    "retention_days",
];

/// Relay's `ImageType` enum (lowercase); anything else, notably `elf`, fails the whole parse.
const IMAGE_TYPES: [&str; 5] = ["macho", "symbolic", "sourcemap", "proguard", "jvm"];

/// Image types that symbolicate by address and so need an id, a file and a load address.
const NATIVE_IMAGE_TYPES: [&str; 2] = ["macho", "symbolic"];

/// Input aliases Relay renames on output (alias, canonical name). Sending both names makes
/// serde fail with a duplicate field, so the alias is never worth emitting.
const FRAME_ALIASES: [(&str, &str); 4] = [
    ("name", "function"),
    ("file", "filename"),
    ("line", "lineno"),
    ("column", "colno"),
];

/// Input aliases of Relay's `DebugImage` (alias, canonical name).
const IMAGE_ALIASES: [(&str, &str); 3] = [
    ("name", "code_file"),
    ("id", "debug_id"),
    ("build_id", "uuid"),
];

/// Keys whose values are maps keyed by the sender's names (thread ids, measurement names):
/// their keys are quoted in paths, as `profile.thread_metadata["42"]`.
const MAP_KEYS: [&str; 2] = ["thread_metadata", "measurements"];

/// One rule a chunk breaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Which rule is broken.
    pub rule: Rule,
    /// The offending JSON path and what is wrong there, e.g.
    /// `profile.samples[3].stack_id: 7 >= 5 stacks`.
    pub detail: String,
}

impl Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.rule, self.detail)
    }
}

/// The rules (mirror Relay's ProfileError variants where one exists).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// The bytes are not JSON at all, or an object repeats a key (Relay: `InvalidJson`).
    InvalidJson,
    /// `version` is missing or not `"2"` (Relay: `PlatformNotSupported`).
    PlatformNotSupported,
    /// A required field is absent or empty (Relay: `InvalidJson`).
    MissingField,
    /// A field has the wrong JSON type or range (Relay: `InvalidJson`).
    WrongType,
    /// `chunk_id` / `profiler_id` is not 32 lowercase hex characters.
    InvalidId,
    /// No thread keeps at least two samples with a non-empty stack (Relay: `NotEnoughSamples`).
    NotEnoughSamples,
    /// A sample points past `stacks` (Relay: `MalformedSamples`).
    MalformedSamples,
    /// Samples are not sorted by time (Relay re-sorts them silently).
    UnsortedSamples,
    /// A stack points past `frames` (Relay: `MalformedStacks`).
    MalformedStacks,
    /// Two stacks or two frames are identical (Relay keeps them; the format asks for
    /// deduplicated tables).
    DuplicateEntries,
    /// Samples span more than 66 s (Relay: `DurationIsTooLong`).
    DurationIsTooLong,
    /// A debug image has a bad type or debug id, or lacks what native symbolication needs.
    InvalidDebugImage,
    /// An address string is not `0x` hex that fits in 64 bits (Relay: `InvalidJson`).
    InvalidAddress,
    /// A debug id or address Relay accepts but rewrites: letter case, zero padding, pointer
    /// authentication bits on cocoa.
    NonCanonical,
    /// A sample timestamp is NaN or infinite (Relay: `FiniteF64` fails to parse).
    NonFiniteTimestamp,
    /// A key that must not be sent (`sampled_profile`, server-only fields, input aliases).
    ForbiddenField,
    /// A `thread_metadata` entry no sample refers to (Relay drops it).
    UnreferencedThreadMetadata,
    /// A thread with fewer than two non-empty-stack samples (Relay drops all its samples).
    SingleSampleThread,
    /// A frame with none of `filename`, `function`, `instruction_addr`.
    EmptyFrame,
}

impl Rule {
    /// Whether Relay rejects a chunk that breaks this rule, as opposed to accepting it and
    /// repairing or ignoring what is wrong (re-sorting, dropping lone threads, ...). Image,
    /// id and address rules count as rejections: some of their cases fail Relay's parse.
    pub fn relay_rejects(self) -> bool {
        match self {
            Rule::InvalidJson
            | Rule::PlatformNotSupported
            | Rule::MissingField
            | Rule::WrongType
            | Rule::InvalidId
            | Rule::NotEnoughSamples
            | Rule::MalformedSamples
            | Rule::MalformedStacks
            | Rule::DurationIsTooLong
            | Rule::InvalidDebugImage
            | Rule::InvalidAddress
            | Rule::NonFiniteTimestamp => true,
            Rule::UnsortedSamples
            | Rule::NonCanonical
            | Rule::DuplicateEntries
            | Rule::ForbiddenField
            | Rule::UnreferencedThreadMetadata
            | Rule::SingleSampleThread
            | Rule::EmptyFrame => false,
        }
    }
}

#[cfg(test)]
/// Checks a Sample v2 chunk; an empty list means Relay accepts it unchanged.
pub fn check_sample_v2(json: &[u8]) -> Vec<Violation> {
    match parse(json) {
        Ok(chunk) => check_chunk(&chunk),
        Err(violation) => vec![violation],
    }
}

/// Parses a chunk as Relay's parse would accept it; the error is the violation that stops it.
pub(crate) fn parse(json: &[u8]) -> Result<Chunk, Violation> {
    let mut de = serde_json::Deserializer::from_slice(json);
    let parsed = serde_path_to_error::deserialize::<_, Chunk>(&mut de);
    let error = match parsed {
        Ok(chunk) => match de.end() {
            Ok(()) => return Ok(chunk),
            Err(e) => return Err(invalid_json(&e)),
        },
        Err(e) => e,
    };
    let (path, inner) = (error.path(), error.inner());
    if inner.classify() != Category::Data {
        return Err(invalid_json(inner));
    }
    // The typed parse stops at the first wrong value; bytes that are not JSON further on
    // are the graver fault.
    if let Err(syntax) = serde_json::from_slice::<IgnoredAny>(json) {
        return Err(invalid_json(&syntax));
    }
    Err(data_violation(path, inner))
}

/// Checks a parsed chunk; an empty list means Relay accepts it unchanged.
pub fn check_chunk(chunk: &Chunk) -> Vec<Violation> {
    let mut checker = Checker {
        violations: Vec::new(),
        cocoa: chunk.platform == "cocoa",
    };
    checker.check_chunk(chunk);
    checker.violations
}

fn invalid_json(e: &serde_json::Error) -> Violation {
    Violation {
        rule: Rule::InvalidJson,
        detail: format!("$: {e}"),
    }
}

/// Names a serde data error by rule and JSON path. Serde says what kind of error it is only
/// in its message, whose wording serde has kept since 1.0.
fn data_violation(path: &serde_path_to_error::Path, e: &serde_json::Error) -> Violation {
    let text = e.to_string();
    let location = format!(" at line {} column {}", e.line(), e.column());
    let message = text.strip_suffix(&location).unwrap_or(&text);
    let named = |prefix: &str| {
        message
            .strip_prefix(prefix)
            .and_then(|rest| rest.split('`').next())
            .map(str::to_owned)
    };
    let (rule, field, message) = if let Some(field) = named("missing field `") {
        (Rule::MissingField, Some(field), "missing".to_owned())
    } else if let Some(field) = named("duplicate field `") {
        (Rule::InvalidJson, Some(field), "duplicate key".to_owned())
    } else if message.starts_with(OUT_OF_RANGE) {
        // serde_json's own parse, as Relay runs it, fails on such a number.
        (Rule::InvalidJson, None, message.to_owned())
    } else {
        (Rule::WrongType, None, message.to_owned())
    };
    let path = json_path(path, field.as_deref());
    // Relay dispatches on `version` before it parses anything else.
    let rule = if path == "version" && rule != Rule::InvalidJson {
        Rule::PlatformNotSupported
    } else {
        rule
    };
    Violation {
        rule,
        detail: format!("{path}: {message}"),
    }
}

/// A serde path as the rules write paths: `profile.samples[3].stack_id`,
/// `profile.thread_metadata["42"].name`, `$` for the whole chunk.
fn json_path(path: &serde_path_to_error::Path, field: Option<&str>) -> String {
    fn push_key(out: &mut String, key: &str) {
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(key);
    }
    let mut out = String::new();
    let mut in_map = false;
    for segment in path {
        match segment {
            Segment::Seq { index } => {
                let _ = write!(out, "[{index}]");
                in_map = false;
            }
            Segment::Map { key } if in_map => {
                let _ = write!(out, "[{key:?}]");
                in_map = false;
            }
            Segment::Map { key } | Segment::Enum { variant: key } => {
                push_key(&mut out, key);
                in_map = MAP_KEYS.contains(&key.as_str());
            }
            Segment::Unknown => {
                push_key(&mut out, "?");
                in_map = false;
            }
        }
    }
    if let Some(field) = field {
        if in_map {
            let _ = write!(out, "[{field:?}]");
        } else {
            push_key(&mut out, field);
        }
    }
    if out.is_empty() {
        out.push('$');
    }
    out
}

/// Why a value fails, before we know where it sits; callers attach the path.
struct Flaw {
    rule: Rule,
    msg: String,
}

impl Flaw {
    fn new(rule: Rule, msg: impl Into<String>) -> Self {
        Flaw {
            rule,
            msg: msg.into(),
        }
    }
}

struct Checker {
    violations: Vec<Violation>,
    /// Relay strips pointer authentication bits only when the chunk platform is cocoa.
    cocoa: bool,
}

impl Checker {
    fn report(&mut self, rule: Rule, path: impl Display, msg: impl Display) {
        self.violations.push(Violation {
            rule,
            detail: format!("{path}: {msg}"),
        });
    }

    /// Reports a flaw at `path`; `path` is formatted only on failure, so valid samples and
    /// frames cost no string building.
    fn ok<T>(&mut self, path: impl Display, result: Result<T, Flaw>) -> Option<T> {
        match result {
            Ok(value) => Some(value),
            Err(flaw) => {
                self.report(flaw.rule, path, flaw.msg);
                None
            }
        }
    }

    fn check_chunk(&mut self, chunk: &Chunk) {
        if chunk.version != "2" {
            // Relay routes other versions to legacy parsers (android) or rejects them.
            self.report(
                Rule::PlatformNotSupported,
                "version",
                format!("expected \"2\", found {:?}", chunk.version),
            );
        }
        self.check_forbidden_top_level(&chunk.other);
        self.ok("chunk_id", event_id(&chunk.chunk_id));
        self.ok("profiler_id", event_id(&chunk.profiler_id));
        if chunk.platform.is_empty() {
            self.report(Rule::MissingField, "platform", "empty string");
        }
        if let Some(debug_meta) = &chunk.debug_meta {
            for (i, image) in debug_meta.images.iter().enumerate() {
                self.check_image(i, image);
            }
        }
        self.check_profile(&chunk.profile);
    }

    fn check_forbidden_top_level(&mut self, other: &Other) {
        if other.contains_key("sampled_profile") {
            self.report(
                Rule::ForbiddenField,
                "sampled_profile",
                "routes the chunk to Relay's legacy Android parser",
            );
        }
        for key in SERVER_ONLY_FIELDS {
            if other.contains_key(key) {
                self.report(
                    Rule::ForbiddenField,
                    key,
                    "server-only field, added by Sentry after Relay",
                );
            }
        }
    }

    fn check_image(&mut self, i: usize, image: &DebugImage) {
        let path = format!("debug_meta.images[{i}]");
        let image_type = self.ok(format_args!("{path}.type"), image_type(image));
        let native = image_type.is_some_and(|t| NATIVE_IMAGE_TYPES.contains(&t));
        // Without these, a native image cannot be matched to frames or symbol files.
        let required = [
            ("debug_id", image.debug_id.is_some()),
            ("code_file", image.code_file.is_some()),
            ("image_addr", image.image_addr.is_some()),
        ];
        for (key, present) in required {
            if native && !present {
                let msg = format!(
                    "missing, required for {} images",
                    image_type.unwrap_or_default()
                );
                self.report(Rule::InvalidDebugImage, format_args!("{path}.{key}"), msg);
            }
        }
        if let Some(id) = &image.debug_id {
            self.ok(format_args!("{path}.debug_id"), debug_id(id));
        }
        for (key, addr) in [
            ("image_addr", &image.image_addr),
            ("image_vmaddr", &image.image_vmaddr),
        ] {
            if let Some(addr) = addr {
                self.ok(format_args!("{path}.{key}"), address(addr));
            }
        }
        if let Some(uuid) = &image.uuid {
            self.ok(format_args!("{path}.uuid"), hyphenated_uuid(uuid));
        }
        self.check_aliases(&path, &image.other, &IMAGE_ALIASES);
    }

    fn check_aliases(&mut self, path: &str, other: &Other, aliases: &[(&str, &str)]) {
        for (alias, canonical) in aliases {
            if other.contains_key(*alias) {
                self.report(
                    Rule::ForbiddenField,
                    format_args!("{path}.{alias}"),
                    format!("Relay renames it to `{canonical}`"),
                );
            }
        }
    }

    fn check_profile(&mut self, profile: &ProfileData) {
        self.check_frames(&profile.frames);
        self.check_stacks(&profile.stacks, profile.frames.len());
        let stack_ids = self.check_samples(profile);
        self.check_order(profile);
        self.check_duration(profile);
        self.check_threads(profile, &stack_ids);
        self.check_thread_metadata(profile);
    }

    fn check_frames(&mut self, frames: &[Frame]) {
        let mut seen: FxHashMap<String, usize> =
            FxHashMap::with_capacity_and_hasher(frames.len(), Default::default());
        for (i, frame) in frames.iter().enumerate() {
            self.check_frame(i, frame);
            match seen.entry(canonical_frame(frame)) {
                Entry::Vacant(slot) => {
                    slot.insert(i);
                }
                Entry::Occupied(first) => self.report(
                    Rule::DuplicateEntries,
                    format_args!("profile.frames[{i}]"),
                    format!(
                        "duplicate of profile.frames[{}]; frames must be deduplicated",
                        first.get()
                    ),
                ),
            }
        }
    }

    fn check_frame(&mut self, i: usize, frame: &Frame) {
        if let Some(addr) = &frame.instruction_addr {
            let cocoa = self.cocoa;
            self.ok(
                format_args!("profile.frames[{i}].instruction_addr"),
                address(addr).and_then(|a| pac_free(a, cocoa)),
            );
        }
        let path = format!("profile.frames[{i}]");
        self.check_aliases(&path, &frame.other, &FRAME_ALIASES);
        // The spec requires something to show or symbolicate; Relay itself lets it pass.
        if frame.filename.is_none() && frame.function.is_none() && frame.instruction_addr.is_none()
        {
            self.report(
                Rule::EmptyFrame,
                path,
                "none of filename, function, instruction_addr",
            );
        }
    }

    fn check_stacks(&mut self, stacks: &[Vec<usize>], frame_count: usize) {
        let mut seen: FxHashMap<&[usize], usize> =
            FxHashMap::with_capacity_and_hasher(stacks.len(), Default::default());
        for (i, stack) in stacks.iter().enumerate() {
            for (j, &index) in stack.iter().enumerate() {
                if index >= frame_count {
                    self.report(
                        Rule::MalformedStacks,
                        format_args!("profile.stacks[{i}][{j}]"),
                        format!("{index} >= {frame_count} frames"),
                    );
                }
            }
            match seen.entry(stack) {
                Entry::Vacant(slot) => {
                    slot.insert(i);
                }
                Entry::Occupied(first) => self.report(
                    Rule::DuplicateEntries,
                    format_args!("profile.stacks[{i}]"),
                    format!(
                        "duplicate of profile.stacks[{}]; stacks must be deduplicated",
                        first.get()
                    ),
                ),
            }
        }
    }

    /// Returns each sample's stack id, `None` where it points past `stacks`.
    fn check_samples(&mut self, profile: &ProfileData) -> Vec<Option<usize>> {
        let stacks = profile.stacks.len();
        let mut ids = Vec::with_capacity(profile.samples.len());
        for (i, sample) in profile.samples.iter().enumerate() {
            self.ok(
                format_args!("profile.samples[{i}].timestamp"),
                finite_timestamp(sample.seconds()),
            );
            let id = sample.stack_id;
            if id >= stacks {
                self.report(
                    Rule::MalformedSamples,
                    format_args!("profile.samples[{i}].stack_id"),
                    format!("{id} >= {stacks} stacks"),
                );
                ids.push(None);
            } else {
                ids.push(Some(id));
            }
        }
        ids
    }

    /// Relay re-sorts samples (stable), so equal timestamps are fine but any decrease is not.
    fn check_order(&mut self, profile: &ProfileData) {
        let timed: Vec<(usize, f64)> = profile
            .samples
            .iter()
            .map(|s| s.seconds())
            .enumerate()
            .filter(|(_, t)| t.is_finite())
            .collect();
        let mut inversions = timed.windows(2).filter(|w| w[1].1 < w[0].1);
        let Some(first) = inversions.next() else {
            return;
        };
        let (prev, prev_ts) = first[0];
        let (index, ts) = first[1];
        let more = inversions.count();
        self.report(
            Rule::UnsortedSamples,
            format_args!("profile.samples[{index}].timestamp"),
            format!("{ts} is earlier than profile.samples[{prev}].timestamp {prev_ts}; samples must be sorted ascending ({more} more out of order)"),
        );
    }

    fn check_duration(&mut self, profile: &ProfileData) {
        let timestamps = profile
            .samples
            .iter()
            .map(|s| s.seconds())
            .filter(|t| t.is_finite());
        let (min, max) = timestamps.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), t| {
            (lo.min(t), hi.max(t))
        });
        if max - min > MAX_CHUNK_DURATION_SECS {
            self.report(
                Rule::DurationIsTooLong,
                "profile.samples",
                format!("timestamps span {:.3} s ({min} to {max}), more than {MAX_CHUNK_DURATION_SECS} s", max - min),
            );
        }
    }

    /// Mirrors Relay's `remove_single_samples_per_thread`: a thread survives only with at least
    /// two samples whose stack exists and is non-empty; idle samples ride along but don't count.
    fn check_threads(&mut self, profile: &ProfileData, stack_ids: &[Option<usize>]) {
        if profile.samples.is_empty() {
            self.report(Rule::NotEnoughSamples, "profile.samples", "no samples");
            return;
        }
        // Vec + index map keeps reports in first-appearance order, so output is deterministic.
        let mut threads: Vec<(&str, usize)> = Vec::new();
        let mut position: FxHashMap<&str, usize> = FxHashMap::default();
        for (sample, stack_id) in profile.samples.iter().zip(stack_ids) {
            let thread = sample.thread_id.as_str();
            let slot = *position.entry(thread).or_insert_with(|| {
                threads.push((thread, 0));
                threads.len() - 1
            });
            let non_empty = stack_id.is_some_and(|id| !profile.stacks[id].is_empty());
            threads[slot].1 += usize::from(non_empty);
        }
        let mut kept = 0;
        for (thread, count) in &threads {
            if *count >= 2 {
                kept += 1;
            } else {
                self.report(
                    Rule::SingleSampleThread,
                    "profile.samples",
                    format!("thread {thread:?} has {count} sample(s) with a non-empty stack; Relay drops threads with fewer than 2"),
                );
            }
        }
        if kept == 0 {
            self.report(
                Rule::NotEnoughSamples,
                "profile.samples",
                "no thread has at least 2 samples with a non-empty stack",
            );
        }
    }

    fn check_thread_metadata(&mut self, profile: &ProfileData) {
        let Some(entries) = &profile.thread_metadata else {
            return;
        };
        let referenced: FxHashSet<&str> = profile
            .samples
            .iter()
            .map(|s| s.thread_id.as_str())
            .collect();
        for thread in entries.keys() {
            if !referenced.contains(thread.as_str()) {
                self.report(
                    Rule::UnreferencedThreadMetadata,
                    format_args!("profile.thread_metadata[{thread:?}]"),
                    "no sample has this thread_id; Relay drops the entry",
                );
            }
        }
    }
}

/// Serde_json keeps NaN and infinity out of its numbers, but builds with
/// `arbitrary_precision` turn `1e400` into infinity, which Relay's `FiniteF64` rejects.
fn finite_timestamp(ts: f64) -> Result<f64, Flaw> {
    if ts.is_finite() {
        Ok(ts)
    } else {
        Err(Flaw::new(
            Rule::NonFiniteTimestamp,
            format!("{ts} is not finite"),
        ))
    }
}

/// Relay accepts any UUID spelling but re-serializes the simple lowercase form.
fn event_id(id: &str) -> Result<(), Flaw> {
    if id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        Ok(())
    } else {
        Err(Flaw::new(
            Rule::InvalidId,
            format!("{id:?} is not 32 lowercase hex characters"),
        ))
    }
}

fn image_type(image: &DebugImage) -> Result<&str, Flaw> {
    let image_type = image
        .kind
        .as_deref()
        .ok_or_else(|| Flaw::new(Rule::InvalidDebugImage, "missing"))?;
    if IMAGE_TYPES.contains(&image_type) {
        Ok(image_type)
    } else {
        Err(Flaw::new(
            Rule::InvalidDebugImage,
            format!(
                "{image_type:?} is not one of {}; Relay rejects the chunk",
                IMAGE_TYPES.join("|")
            ),
        ))
    }
}

/// Relay parses any debug id spelling but writes the lowercase hyphenated form back.
fn debug_id(id: &str) -> Result<(), Flaw> {
    let parsed = debugid::DebugId::from_str(id)
        .map_err(|_| Flaw::new(Rule::InvalidDebugImage, format!("{id:?} is not a debug id")))?;
    let canonical = parsed.to_string();
    if canonical == id {
        Ok(())
    } else {
        Err(Flaw::new(
            Rule::NonCanonical,
            format!("{id:?} is not canonical, Relay writes {canonical:?}"),
        ))
    }
}

/// Proguard build ids: the lowercase hyphenated UUID form Relay's `Uuid` writes back.
fn hyphenated_uuid(uuid: &str) -> Result<(), Flaw> {
    let groups: Vec<&str> = uuid.split('-').collect();
    let shape_ok = groups.len() == 5
        && groups.iter().zip([8, 4, 4, 4, 12]).all(|(group, len)| {
            group.len() == len
                && group
                    .bytes()
                    .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        });
    if shape_ok {
        Ok(())
    } else {
        Err(Flaw::new(
            Rule::InvalidDebugImage,
            format!("{uuid:?} is not a lowercase hyphenated UUID"),
        ))
    }
}

/// Relay's `Addr` is a u64 written as `0x` + lowercase hex without leading zeros; any other
/// spelling is accepted on input but rewritten, so we insist on exactly that form.
fn address(text: &str) -> Result<u64, Flaw> {
    let bad = |why: &str| Flaw::new(Rule::InvalidAddress, format!("{text:?} {why}"));
    let digits = text
        .strip_prefix("0x")
        .ok_or_else(|| bad("lacks the 0x prefix"))?;
    if digits.is_empty() {
        return Err(bad("has no hex digits"));
    }
    if digits.chars().any(|c| !c.is_ascii_hexdigit()) {
        return Err(bad("has a non-hex character"));
    }
    let value = u64::from_str_radix(digits, 16).map_err(|_| bad("does not fit in 64 bits"))?;
    let rewritten = |why: &str| Flaw::new(Rule::NonCanonical, format!("{text:?} {why}"));
    if digits.chars().any(|c| c.is_ascii_uppercase()) {
        return Err(rewritten("has uppercase hex digits"));
    }
    if digits.len() > 1 && digits.starts_with('0') {
        return Err(rewritten("is zero-padded"));
    }
    Ok(value)
}

fn pac_free(addr: u64, cocoa: bool) -> Result<u64, Flaw> {
    if cocoa && addr & !COCOA_PAC_MASK != 0 {
        let msg = format!(
            "{addr:#x} has bits above {COCOA_PAC_MASK:#x}, which Relay strips on cocoa (to {:#x})",
            addr & COCOA_PAC_MASK
        );
        Err(Flaw::new(Rule::NonCanonical, msg))
    } else {
        Ok(addr)
    }
}

/// A frame's identity for deduplication: its JSON with object keys sorted, so frames that
/// differ only in the order of their unknown keys (serde_json's `preserve_order`, if another
/// crate switches it on) still compare equal.
pub(crate) fn canonical_frame(frame: &Frame) -> String {
    fn write(value: &Value, out: &mut String) {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<_> = map.iter().collect();
                entries.sort_unstable_by_key(|(key, _)| key.as_str());
                out.push('{');
                for (n, (key, item)) in entries.into_iter().enumerate() {
                    if n > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::from(key.as_str()).to_string());
                    out.push(':');
                    write(item, out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (n, item) in items.iter().enumerate() {
                    if n > 0 {
                        out.push(',');
                    }
                    write(item, out);
                }
                out.push(']');
            }
            scalar => out.push_str(&scalar.to_string()),
        }
    }
    let mut out = String::new();
    // A frame is strings, numbers, bools and `other`: it always converts.
    let value = serde_json::to_value(frame).unwrap_or(Value::Object(Map::new()));
    write(&value, &mut out);
    out
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
