//! Relay's acceptance rules for Sample v2 profile chunks, as a pure check over JSON bytes.
//!
//! Relay parses a chunk into its own structs (`relay-profiling/src/sample/v2.rs`), runs
//! `ProfileData::normalize`, and re-serializes it. Anything that parse step rejects, and
//! anything normalize rejects, drops or rewrites, is reported here. We are deliberately
//! stricter than Relay: a chunk our converter writes should come out of Relay unchanged, so
//! silent repairs (dropping lone-sample threads, re-sorting samples, stripping zero padding
//! from addresses, ...) count as violations too.
//!
//! Not checked: `measurements` (Relay's own shape for it is unconfirmed; our converter omits
//! it), `content_type`, the SDK's top-level `timestamp` (Relay drops it harmlessly), duplicate
//! JSON keys (`serde_json::Value` keeps the last one) and the payload size limit.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::fmt::{self, Display};
use std::str::FromStr;

use serde_json::{Map, Value};

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

/// Optional string fields of Relay's `sample::Frame`.
const FRAME_STRING_FIELDS: [&str; 6] = [
    "function", "module", "package", "filename", "abs_path", "platform",
];

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
    /// The bytes are not JSON at all (Relay: `InvalidJson`).
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

/// Checks a Sample v2 chunk; an empty list means Relay accepts it unchanged.
pub fn check_sample_v2(json: &[u8]) -> Vec<Violation> {
    match serde_json::from_slice::<Value>(json) {
        Ok(root) => {
            let mut checker = Checker::default();
            checker.check_chunk(&root);
            checker.violations
        }
        Err(err) => vec![Violation {
            rule: Rule::InvalidJson,
            detail: format!("$: {err}"),
        }],
    }
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

    fn wrong_type(expected: &str, found: &Value) -> Self {
        Flaw::new(
            Rule::WrongType,
            format!("expected {expected}, found {}", describe(found)),
        )
    }
}

/// What one sample contributed, kept for the cross-sample checks.
struct SampleFacts<'a> {
    index: usize,
    timestamp: Option<f64>,
    stack_id: Option<usize>,
    thread_id: Option<&'a str>,
}

#[derive(Default)]
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

    fn check_chunk(&mut self, root: &Value) {
        let Some(top) = self.ok("$", as_object(root)) else {
            return;
        };
        self.check_version(top);
        self.check_forbidden_top_level(top);
        for key in ["chunk_id", "profiler_id"] {
            self.ok(key, field(top, key).and_then(event_id));
        }
        self.check_metadata(top);
        if let Some(debug_meta) = top.get("debug_meta") {
            self.check_debug_meta(debug_meta);
        }
        if let Some(profile) = self.ok("profile", field(top, "profile").and_then(as_object)) {
            self.check_profile(profile);
        }
    }

    fn check_version(&mut self, top: &Map<String, Value>) {
        match top.get("version") {
            Some(Value::String(v)) if v == "2" => {}
            // Relay routes a version-less chunk to legacy parsers (android) or rejects it.
            None => self.report(
                Rule::PlatformNotSupported,
                "version",
                "missing, expected \"2\"",
            ),
            Some(other) => self.report(
                Rule::PlatformNotSupported,
                "version",
                format!("expected \"2\", found {}", describe(other)),
            ),
        }
    }

    fn check_forbidden_top_level(&mut self, top: &Map<String, Value>) {
        if top.contains_key("sampled_profile") {
            self.report(
                Rule::ForbiddenField,
                "sampled_profile",
                "routes the chunk to Relay's legacy Android parser",
            );
        }
        for key in SERVER_ONLY_FIELDS {
            if top.contains_key(key) {
                self.report(
                    Rule::ForbiddenField,
                    key,
                    "server-only field, added by Sentry after Relay",
                );
            }
        }
    }

    fn check_metadata(&mut self, top: &Map<String, Value>) {
        if let Some(platform) = self.ok("platform", field(top, "platform").and_then(as_str)) {
            if platform.is_empty() {
                self.report(Rule::MissingField, "platform", "empty string");
            }
            self.cocoa = platform == "cocoa";
        }
        // Relay serializes an absent release as `null`, so only presence is required.
        if let Some(release) = self.ok("release", field(top, "release")) {
            if !(release.is_string() || release.is_null()) {
                self.ok(
                    "release",
                    Err::<(), _>(Flaw::wrong_type("a string or null", release)),
                );
            }
        }
        if let Some(environment) = top.get("environment") {
            self.ok("environment", as_str(environment));
        }
        if let Some(sdk) = self.ok("client_sdk", field(top, "client_sdk").and_then(as_object)) {
            for key in ["name", "version"] {
                self.ok(
                    format_args!("client_sdk.{key}"),
                    field(sdk, key).and_then(as_str),
                );
            }
        }
    }

    fn check_debug_meta(&mut self, debug_meta: &Value) {
        let Some(meta) = self.ok("debug_meta", as_object(debug_meta)) else {
            return;
        };
        let Some(images) = self.ok(
            "debug_meta.images",
            field(meta, "images").and_then(as_array),
        ) else {
            return;
        };
        for (i, image) in images.iter().enumerate() {
            if let Some(image) = self.ok(format_args!("debug_meta.images[{i}]"), as_object(image)) {
                self.check_image(i, image);
            }
        }
    }

    fn check_image(&mut self, i: usize, image: &Map<String, Value>) {
        let path = format!("debug_meta.images[{i}]");
        let image_type = self.ok(format_args!("{path}.type"), image_type(image));
        let native = image_type.is_some_and(|t| NATIVE_IMAGE_TYPES.contains(&t));
        // Without these, a native image cannot be matched to frames or symbol files.
        for key in ["debug_id", "code_file", "image_addr"] {
            if native && !image.contains_key(key) {
                let msg = format!(
                    "missing, required for {} images",
                    image_type.unwrap_or_default()
                );
                self.report(Rule::InvalidDebugImage, format_args!("{path}.{key}"), msg);
            }
        }
        if let Some(id) = image.get("debug_id") {
            self.ok(
                format_args!("{path}.debug_id"),
                as_str(id).and_then(debug_id),
            );
        }
        if let Some(code_file) = image.get("code_file") {
            self.ok(format_args!("{path}.code_file"), as_str(code_file));
        }
        for key in ["image_addr", "image_vmaddr"] {
            if let Some(addr) = image.get(key) {
                self.ok(format_args!("{path}.{key}"), address(addr));
            }
        }
        if let Some(size) = image.get("image_size") {
            self.ok(format_args!("{path}.image_size"), as_u64(size));
        }
        if let Some(uuid) = image.get("uuid") {
            self.ok(
                format_args!("{path}.uuid"),
                as_str(uuid).and_then(hyphenated_uuid),
            );
        }
        self.check_aliases(&path, image, &IMAGE_ALIASES);
    }

    fn check_aliases(&mut self, path: &str, obj: &Map<String, Value>, aliases: &[(&str, &str)]) {
        for (alias, canonical) in aliases {
            if obj.contains_key(*alias) {
                self.report(
                    Rule::ForbiddenField,
                    format_args!("{path}.{alias}"),
                    format!("Relay renames it to `{canonical}`"),
                );
            }
        }
    }

    fn check_profile(&mut self, profile: &Map<String, Value>) {
        let frames = self.ok(
            "profile.frames",
            field(profile, "frames").and_then(as_array),
        );
        let stacks = self.ok(
            "profile.stacks",
            field(profile, "stacks").and_then(as_array),
        );
        let samples = self.ok(
            "profile.samples",
            field(profile, "samples").and_then(as_array),
        );

        if let Some(frames) = frames {
            self.check_frames(frames);
        }
        let stack_lens = stacks.map(|stacks| self.check_stacks(stacks, frames.map(Vec::len)));
        let facts = samples.map(|samples| self.check_samples(samples, stack_lens.as_deref()));

        if let Some(facts) = &facts {
            self.check_order(facts);
            self.check_duration(facts);
            if let Some(stack_lens) = &stack_lens {
                self.check_threads(facts, stack_lens);
            }
        }
        if let Some(metadata) = profile.get("thread_metadata") {
            self.check_thread_metadata(metadata, facts.as_deref());
        }
    }

    fn check_frames(&mut self, frames: &[Value]) {
        let mut seen: HashMap<String, usize> = HashMap::with_capacity(frames.len());
        for (i, frame) in frames.iter().enumerate() {
            let Some(obj) = self.ok(format_args!("profile.frames[{i}]"), as_object(frame)) else {
                continue;
            };
            self.check_frame(i, obj);
            match seen.entry(canonical_json(frame)) {
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

    fn check_frame(&mut self, i: usize, frame: &Map<String, Value>) {
        let path = format!("profile.frames[{i}]");
        for key in FRAME_STRING_FIELDS {
            if let Some(value) = frame.get(key) {
                self.ok(format_args!("{path}.{key}"), as_str(value));
            }
        }
        for key in ["lineno", "colno"] {
            if let Some(value) = frame.get(key) {
                self.ok(format_args!("{path}.{key}"), as_u32(value));
            }
        }
        if let Some(in_app) = frame.get("in_app") {
            if !in_app.is_boolean() {
                self.ok(
                    format_args!("{path}.in_app"),
                    Err::<(), _>(Flaw::wrong_type("a bool", in_app)),
                );
            }
        }
        if let Some(addr) = frame.get("instruction_addr") {
            let cocoa = self.cocoa;
            self.ok(
                format_args!("{path}.instruction_addr"),
                address(addr).and_then(|a| pac_free(a, cocoa)),
            );
        }
        self.check_aliases(&path, frame, &FRAME_ALIASES);
        // The spec requires something to show or symbolicate; Relay itself lets it pass.
        let has_identity = ["filename", "function", "instruction_addr"]
            .iter()
            .any(|key| frame.get(*key).is_some_and(|v| !v.is_null()));
        if !has_identity {
            self.report(
                Rule::EmptyFrame,
                path,
                "none of filename, function, instruction_addr",
            );
        }
    }

    /// Returns each stack's length (None where the stack is not an array).
    fn check_stacks(&mut self, stacks: &[Value], frame_count: Option<usize>) -> Vec<Option<usize>> {
        let mut seen: HashMap<Vec<u64>, usize> = HashMap::with_capacity(stacks.len());
        let mut lens = Vec::with_capacity(stacks.len());
        for (i, stack) in stacks.iter().enumerate() {
            let Some(entries) = self.ok(format_args!("profile.stacks[{i}]"), as_array(stack))
            else {
                lens.push(None);
                continue;
            };
            let mut indices = Vec::with_capacity(entries.len());
            for (j, entry) in entries.iter().enumerate() {
                let Some(index) = self.ok(format_args!("profile.stacks[{i}][{j}]"), as_u64(entry))
                else {
                    continue;
                };
                if let Some(count) = frame_count.filter(|&count| index >= count as u64) {
                    self.report(
                        Rule::MalformedStacks,
                        format_args!("profile.stacks[{i}][{j}]"),
                        format!("{index} >= {count} frames"),
                    );
                }
                indices.push(index);
            }
            // Only compare stacks whose every entry parsed; a partial one would mislead.
            if indices.len() == entries.len() {
                if let Some(&first) = seen.get(&indices) {
                    self.report(
                        Rule::DuplicateEntries,
                        format_args!("profile.stacks[{i}]"),
                        format!(
                            "duplicate of profile.stacks[{first}]; stacks must be deduplicated"
                        ),
                    );
                } else {
                    seen.insert(indices, i);
                }
            }
            lens.push(Some(entries.len()));
        }
        lens
    }

    fn check_samples<'a>(
        &mut self,
        samples: &'a [Value],
        stack_lens: Option<&[Option<usize>]>,
    ) -> Vec<SampleFacts<'a>> {
        let mut facts = Vec::with_capacity(samples.len());
        for (i, sample) in samples.iter().enumerate() {
            let Some(obj) = self.ok(format_args!("profile.samples[{i}]"), as_object(sample)) else {
                continue;
            };
            let timestamp = self.ok(
                format_args!("profile.samples[{i}].timestamp"),
                field(obj, "timestamp")
                    .and_then(as_f64)
                    .and_then(finite_timestamp),
            );
            let mut stack_id = self.ok(
                format_args!("profile.samples[{i}].stack_id"),
                field(obj, "stack_id").and_then(as_index),
            );
            if let (Some(id), Some(lens)) = (stack_id, stack_lens) {
                if id >= lens.len() {
                    self.report(
                        Rule::MalformedSamples,
                        format_args!("profile.samples[{i}].stack_id"),
                        format!("{id} >= {} stacks", lens.len()),
                    );
                    stack_id = None;
                }
            }
            let thread_id = self.ok(
                format_args!("profile.samples[{i}].thread_id"),
                field(obj, "thread_id").and_then(as_str),
            );
            facts.push(SampleFacts {
                index: i,
                timestamp,
                stack_id,
                thread_id,
            });
        }
        facts
    }

    /// Relay re-sorts samples (stable), so equal timestamps are fine but any decrease is not.
    fn check_order(&mut self, facts: &[SampleFacts<'_>]) {
        let timed: Vec<(usize, f64)> = facts
            .iter()
            .filter_map(|f| Some((f.index, f.timestamp?)))
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

    fn check_duration(&mut self, facts: &[SampleFacts<'_>]) {
        let timestamps = facts.iter().filter_map(|f| f.timestamp);
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
    fn check_threads(&mut self, facts: &[SampleFacts<'_>], stack_lens: &[Option<usize>]) {
        if facts.is_empty() {
            self.report(Rule::NotEnoughSamples, "profile.samples", "no samples");
            return;
        }
        // Vec + index map keeps reports in first-appearance order, so output is deterministic.
        let mut threads: Vec<(&str, usize)> = Vec::new();
        let mut position: HashMap<&str, usize> = HashMap::new();
        for fact in facts {
            let Some(thread) = fact.thread_id else {
                continue;
            };
            let slot = *position.entry(thread).or_insert_with(|| {
                threads.push((thread, 0));
                threads.len() - 1
            });
            let non_empty = fact
                .stack_id
                .and_then(|id| stack_lens[id])
                .is_some_and(|len| len > 0);
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

    /// `facts` is None when the samples could not be read; then references can't be judged.
    fn check_thread_metadata(&mut self, metadata: &Value, facts: Option<&[SampleFacts<'_>]>) {
        let Some(entries) = self.ok("profile.thread_metadata", as_object(metadata)) else {
            return;
        };
        let referenced: Option<HashSet<&str>> =
            facts.map(|facts| facts.iter().filter_map(|f| f.thread_id).collect());
        for (thread, entry) in entries {
            let path = format!("profile.thread_metadata[{thread:?}]");
            if let Some(obj) = self.ok(&path, as_object(entry)) {
                if let Some(name) = obj.get("name") {
                    self.ok(format_args!("{path}.name"), as_str(name));
                }
                if let Some(priority) = obj.get("priority") {
                    self.ok(format_args!("{path}.priority"), as_u32(priority));
                }
            }
            if referenced
                .as_ref()
                .is_some_and(|ids| !ids.contains(thread.as_str()))
            {
                self.report(
                    Rule::UnreferencedThreadMetadata,
                    &path,
                    "no sample has this thread_id; Relay drops the entry",
                );
            }
        }
    }
}

fn field<'a>(obj: &'a Map<String, Value>, key: &str) -> Result<&'a Value, Flaw> {
    obj.get(key)
        .ok_or_else(|| Flaw::new(Rule::MissingField, "missing"))
}

fn as_object(value: &Value) -> Result<&Map<String, Value>, Flaw> {
    value
        .as_object()
        .ok_or_else(|| Flaw::wrong_type("an object", value))
}

fn as_array(value: &Value) -> Result<&Vec<Value>, Flaw> {
    value
        .as_array()
        .ok_or_else(|| Flaw::wrong_type("an array", value))
}

fn as_str(value: &Value) -> Result<&str, Flaw> {
    value
        .as_str()
        .ok_or_else(|| Flaw::wrong_type("a string", value))
}

fn as_f64(value: &Value) -> Result<f64, Flaw> {
    value
        .as_f64()
        .ok_or_else(|| Flaw::wrong_type("a number", value))
}

/// Rejects floats too: serde refuses `1.0` for Relay's integer fields.
fn as_u64(value: &Value) -> Result<u64, Flaw> {
    value
        .as_u64()
        .ok_or_else(|| Flaw::wrong_type("a non-negative integer", value))
}

fn as_u32(value: &Value) -> Result<u32, Flaw> {
    as_u64(value).and_then(|n| {
        u32::try_from(n).map_err(|_| Flaw::wrong_type("an integer that fits in u32", value))
    })
}

fn as_index(value: &Value) -> Result<usize, Flaw> {
    as_u64(value).and_then(|n| {
        usize::try_from(n).map_err(|_| Flaw::wrong_type("an index that fits in usize", value))
    })
}

/// Plain serde_json cannot even hold NaN or infinity, but builds with `arbitrary_precision`
/// turn `1e400` into infinity, which Relay's `FiniteF64` rejects.
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
fn event_id(value: &Value) -> Result<(), Flaw> {
    let id = as_str(value)?;
    if id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        Ok(())
    } else {
        Err(Flaw::new(
            Rule::InvalidId,
            format!("{id:?} is not 32 lowercase hex characters"),
        ))
    }
}

fn image_type(image: &Map<String, Value>) -> Result<&str, Flaw> {
    let value = image
        .get("type")
        .ok_or_else(|| Flaw::new(Rule::InvalidDebugImage, "missing"))?;
    let image_type = as_str(value)?;
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
fn address(value: &Value) -> Result<u64, Flaw> {
    let text = as_str(value)?;
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

/// A short description of a value for messages: scalars verbatim, containers by kind.
fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("bool {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) => format!("string {s:?}"),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}

/// Serializes with object keys sorted, so equal frames compare equal even if serde_json's
/// `preserve_order` feature gets switched on by another crate.
fn canonical_json(value: &Value) -> String {
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
    write(value, &mut out);
    out
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
