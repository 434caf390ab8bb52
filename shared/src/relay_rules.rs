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
    /// A sample points past `stacks`, or samples are not sorted by time (Relay:
    /// `MalformedSamples`, or a silent re-sort).
    MalformedSamples,
    /// A stack points past `frames`, or stacks/frames are not deduplicated (Relay:
    /// `MalformedStacks`).
    MalformedStacks,
    /// Samples span more than 66 s (Relay: `DurationIsTooLong`).
    DurationIsTooLong,
    /// A debug image has a bad type or debug id, or lacks what native symbolication needs.
    InvalidDebugImage,
    /// An address string is not canonical lowercase `0x` hex that fits in 64 bits, or Relay
    /// would strip bits from it.
    InvalidAddress,
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
                    Rule::MalformedStacks,
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
                        Rule::MalformedStacks,
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
            Rule::MalformedSamples,
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
            Rule::InvalidDebugImage,
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
    if let Some(c) = digits.chars().find(|c| !matches!(c, '0'..='9' | 'a'..='f')) {
        let why = if c.is_ascii_hexdigit() {
            "has uppercase hex digits"
        } else {
            "has a non-hex character"
        };
        return Err(bad(why));
    }
    if digits.len() > 1 && digits.starts_with('0') {
        return Err(bad("is zero-padded"));
    }
    u64::from_str_radix(digits, 16).map_err(|_| bad("does not fit in 64 bits"))
}

fn pac_free(addr: u64, cocoa: bool) -> Result<u64, Flaw> {
    if cocoa && addr & !COCOA_PAC_MASK != 0 {
        let msg = format!(
            "{addr:#x} has bits above {COCOA_PAC_MASK:#x}, which Relay strips on cocoa (to {:#x})",
            addr & COCOA_PAC_MASK
        );
        Err(Flaw::new(Rule::InvalidAddress, msg))
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
mod tests {
    use super::*;
    use serde_json::json;

    /// A chunk that exercises every optional field and still passes: two threads, an idle
    /// sample, mixed native/java frames and a native image.
    fn valid() -> Value {
        json!({
            "version": "2",
            "chunk_id": "0123456789abcdef0123456789abcdef",
            "profiler_id": "fedcba9876543210fedcba9876543210",
            "platform": "android",
            "release": "app@1.0",
            "environment": "production",
            "client_sdk": {"name": "proflake", "version": "0.1.0"},
            "debug_meta": {"images": [{
                "type": "symbolic",
                "debug_id": "7f4a3eb0-885e-8d4c-a04b-05fa32cc4cbd",
                "code_file": "/system/lib64/libc.so",
                "image_addr": "0x7328f11000",
                "image_vmaddr": "0x4000",
                "image_size": 503808
            }]},
            "profile": {
                "samples": [
                    {"timestamp": 1700000001.0, "stack_id": 0, "thread_id": "42"},
                    {"timestamp": 1700000001.01, "stack_id": 1, "thread_id": "42"},
                    {"timestamp": 1700000001.02, "stack_id": 2, "thread_id": "42"},
                    {"timestamp": 1700000001.03, "stack_id": 0, "thread_id": "43"},
                    {"timestamp": 1700000001.04, "stack_id": 0, "thread_id": "43"}
                ],
                "stacks": [[1, 0], [2, 1, 0], []],
                "frames": [
                    {"function": "main", "instruction_addr": "0x7328f12000",
                     "package": "/system/lib64/libc.so", "platform": "native"},
                    {"function": "run", "module": "com.example.Worker", "package": "base.odex",
                     "platform": "java", "lineno": 12, "in_app": true},
                    {"function": "foo", "filename": "foo.c", "abs_path": "/src/foo.c",
                     "lineno": 3, "colno": 7, "instruction_addr": "0x0", "platform": "native"}
                ],
                "thread_metadata": {"42": {"name": "main", "priority": 5}, "43": {"name": "worker"}}
            }
        })
    }

    fn check(value: &Value) -> Vec<Violation> {
        check_sample_v2(&serde_json::to_vec(value).unwrap())
    }

    fn mutated(mutate: impl FnOnce(&mut Value)) -> Vec<Violation> {
        let mut chunk = valid();
        mutate(&mut chunk);
        check(&chunk)
    }

    /// Replaces the value at a JSON pointer (the parent must exist).
    fn set(chunk: &mut Value, pointer: &str, new: Value) {
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        match chunk
            .pointer_mut(parent)
            .unwrap_or_else(|| panic!("no {parent}"))
        {
            Value::Object(map) => {
                map.insert(key.to_owned(), new);
            }
            Value::Array(items) => items[key.parse::<usize>().unwrap()] = new,
            other => panic!("{parent} is {other}"),
        }
    }

    fn remove(chunk: &mut Value, pointer: &str) {
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        let map = chunk
            .pointer_mut(parent)
            .and_then(Value::as_object_mut)
            .unwrap();
        assert!(map.remove(key).is_some(), "{pointer} was not there");
    }

    #[track_caller]
    fn assert_breaks(violations: &[Violation], rule: Rule) {
        assert!(
            violations.iter().any(|v| v.rule == rule),
            "expected {rule:?}, got {violations:#?}"
        );
    }

    #[track_caller]
    fn assert_breaks_at(violations: &[Violation], rule: Rule, detail_prefix: &str) {
        assert!(
            violations
                .iter()
                .any(|v| v.rule == rule && v.detail.starts_with(detail_prefix)),
            "expected {rule:?} at {detail_prefix}, got {violations:#?}"
        );
    }

    /// The distinct rules broken, in a stable order, for exact comparisons.
    fn rule_set(violations: &[Violation]) -> Vec<Rule> {
        let mut rules: Vec<Rule> = Vec::new();
        for v in violations {
            if !rules.contains(&v.rule) {
                rules.push(v.rule);
            }
        }
        rules.sort_by_key(|r| format!("{r:?}"));
        rules
    }

    fn sorted(mut rules: Vec<Rule>) -> Vec<Rule> {
        rules.sort_by_key(|r| format!("{r:?}"));
        rules
    }

    #[test]
    fn valid_chunk_passes() {
        assert_eq!(check(&valid()), vec![]);
    }

    #[test]
    fn spec_minimal_example_passes() {
        // Spec §1.6 (Relay's test_convert_minimal_trace output), wrapped with required metadata.
        let profile: Value = serde_json::from_str(
            r#"{"samples":[{"timestamp":1700000001.0,"stack_id":0,"thread_id":"42"},
                        {"timestamp":1700000001.01,"stack_id":0,"thread_id":"42"}],
             "stacks":[[1,0]],
             "frames":[{"function":"main","instruction_addr":"0x1000","platform":"native"},
                       {"function":"foo","instruction_addr":"0x2000","platform":"native"}],
             "thread_metadata":{"42":{"name":"main"}}}"#,
        )
        .unwrap();
        let chunk = json!({
            "version": "2",
            "chunk_id": "11cde81c68384f67afd587b3766f1285",
            "profiler_id": "76e564243495495da5bb90152d3afdef",
            "platform": "android",
            "release": null,
            "client_sdk": {"name": "sentry.java.android", "version": "8.38.0"},
            "profile": profile
        });
        assert_eq!(check(&chunk), vec![]);
    }

    #[test]
    fn vroomrs_python_fixture_is_rejected() {
        let v = check_sample_v2(
            include_str!("../../tests/fixtures/sentry/vroomrs_sample_v2_valid_python.json")
                .as_bytes(),
        );
        // As SOURCES.md says: stack [0..6] over a single frame, and a single sample.
        assert_breaks_at(
            &v,
            Rule::MalformedStacks,
            "profile.stacks[0][1]: 1 >= 1 frames",
        );
        assert_breaks(&v, Rule::NotEnoughSamples);
        // Also: it carries the server-only fields vroomrs needs, its lone thread gets dropped,
        // and two thread_metadata entries name threads without samples.
        assert_eq!(
            rule_set(&v),
            sorted(vec![
                Rule::ForbiddenField,
                Rule::MalformedStacks,
                Rule::NotEnoughSamples,
                Rule::SingleSampleThread,
                Rule::UnreferencedThreadMetadata,
            ])
        );
    }

    #[test]
    fn vroomrs_android_fixture_breaks_only_strict_rules() {
        let v = check_sample_v2(
            include_str!("../../tests/fixtures/sentry/vroomrs_sample_v2_valid_android.json")
                .as_bytes(),
        );
        // Relay would accept this chunk, but not unchanged: it carries the four server-only
        // fields (a vroomrs fixture is post-ingest data), and samples are grouped by thread
        // rather than sorted by time (thread "2" restarts at .1179), so Relay re-sorts them.
        assert_eq!(
            rule_set(&v),
            sorted(vec![Rule::ForbiddenField, Rule::MalformedSamples])
        );
        assert_eq!(
            v.iter().filter(|v| v.rule == Rule::ForbiddenField).count(),
            4
        );
        assert_breaks_at(&v, Rule::MalformedSamples, "profile.samples[3].timestamp");
    }

    #[test]
    fn vroomrs_cocoa_fixture_breaks_only_strict_rules() {
        let v = check_sample_v2(
            include_str!("../../tests/fixtures/sentry/vroomrs_sample_v2_valid_cocoa.json")
                .as_bytes(),
        );
        // Relay would accept it after rewriting: server-only fields; an uppercase debug_id
        // (written back lowercase); zero-padded image_addr/image_vmaddr (written back
        // unpadded); frame addresses with PAC bits that Relay masks off on cocoa; and a
        // thread_metadata entry for a thread with no samples (dropped).
        assert_eq!(
            rule_set(&v),
            sorted(vec![
                Rule::ForbiddenField,
                Rule::InvalidDebugImage,
                Rule::InvalidAddress,
                Rule::UnreferencedThreadMetadata,
            ])
        );
        assert_breaks_at(&v, Rule::InvalidDebugImage, "debug_meta.images[0].debug_id");
        assert_breaks_at(&v, Rule::InvalidAddress, "debug_meta.images[0].image_addr");
        assert_breaks_at(
            &v,
            Rule::InvalidAddress,
            "debug_meta.images[0].image_vmaddr",
        );
        assert_breaks_at(
            &v,
            Rule::InvalidAddress,
            "profile.frames[0].instruction_addr",
        );
        assert_breaks_at(
            &v,
            Rule::UnreferencedThreadMetadata,
            "profile.thread_metadata[\"0x000000016d8fb180\"]",
        );
    }

    #[test]
    fn invalid_json_gives_one_violation() {
        let v = check_sample_v2(b"{\"version\": \"2\",");
        assert_eq!(v.len(), 1, "{v:#?}");
        assert_eq!(v[0].rule, Rule::InvalidJson);
    }

    #[test]
    fn out_of_range_number_is_invalid_json() {
        // Without serde_json's arbitrary_precision, 1e400 does not parse at all.
        let text = serde_json::to_string(&valid()).unwrap();
        assert!(text.contains("\"timestamp\":1700000001.0"), "{text}");
        let text = text.replace("\"timestamp\":1700000001.0", "\"timestamp\":1e400");
        assert_eq!(
            rule_set(&check_sample_v2(text.as_bytes())),
            vec![Rule::InvalidJson]
        );
    }

    #[test]
    fn top_level_must_be_object() {
        assert_eq!(
            check(&json!([1, 2]))
                .iter()
                .map(|v| v.rule)
                .collect::<Vec<_>>(),
            vec![Rule::WrongType]
        );
    }

    #[test]
    fn version_must_be_string_two() {
        assert_breaks(
            &mutated(|c| remove(c, "/version")),
            Rule::PlatformNotSupported,
        );
        assert_breaks(
            &mutated(|c| set(c, "/version", json!("1"))),
            Rule::PlatformNotSupported,
        );
        assert_breaks(
            &mutated(|c| set(c, "/version", json!(2))),
            Rule::PlatformNotSupported,
        );
    }

    #[test]
    fn sampled_profile_and_server_fields_are_forbidden() {
        assert_breaks_at(
            &mutated(|c| set(c, "/sampled_profile", json!(""))),
            Rule::ForbiddenField,
            "sampled_profile",
        );
        for key in SERVER_ONLY_FIELDS {
            assert_breaks_at(
                &mutated(|c| set(c, &format!("/{key}"), json!(1))),
                Rule::ForbiddenField,
                key,
            );
        }
    }

    #[test]
    fn ids_must_be_32_lowercase_hex() {
        for key in ["chunk_id", "profiler_id"] {
            let pointer = format!("/{key}");
            for bad in [
                "0123456789ABCDEF0123456789ABCDEF",
                "01234567-89ab-cdef-0123-456789abcdef",
                "0123",
                "",
            ] {
                assert_breaks_at(
                    &mutated(|c| set(c, &pointer, json!(bad))),
                    Rule::InvalidId,
                    key,
                );
            }
            assert_breaks_at(
                &mutated(|c| set(c, &pointer, json!(7))),
                Rule::WrongType,
                key,
            );
            assert_breaks_at(&mutated(|c| remove(c, &pointer)), Rule::MissingField, key);
        }
    }

    #[test]
    fn platform_is_a_required_non_empty_string() {
        assert_breaks_at(
            &mutated(|c| remove(c, "/platform")),
            Rule::MissingField,
            "platform",
        );
        assert_breaks_at(
            &mutated(|c| set(c, "/platform", json!(""))),
            Rule::MissingField,
            "platform",
        );
        assert_breaks_at(
            &mutated(|c| set(c, "/platform", json!(1))),
            Rule::WrongType,
            "platform",
        );
    }

    #[test]
    fn release_is_present_string_or_null() {
        assert_eq!(mutated(|c| set(c, "/release", Value::Null)), vec![]);
        assert_breaks_at(
            &mutated(|c| remove(c, "/release")),
            Rule::MissingField,
            "release",
        );
        assert_breaks_at(
            &mutated(|c| set(c, "/release", json!(1))),
            Rule::WrongType,
            "release",
        );
    }

    #[test]
    fn environment_is_an_optional_string() {
        assert_eq!(mutated(|c| remove(c, "/environment")), vec![]);
        assert_breaks_at(
            &mutated(|c| set(c, "/environment", json!(1))),
            Rule::WrongType,
            "environment",
        );
        // Relay would drop a null, so it is not sent unchanged.
        assert_breaks_at(
            &mutated(|c| set(c, "/environment", Value::Null)),
            Rule::WrongType,
            "environment",
        );
    }

    #[test]
    fn client_sdk_needs_name_and_version() {
        assert_breaks_at(
            &mutated(|c| remove(c, "/client_sdk")),
            Rule::MissingField,
            "client_sdk",
        );
        assert_breaks_at(
            &mutated(|c| set(c, "/client_sdk", json!("x"))),
            Rule::WrongType,
            "client_sdk",
        );
        assert_breaks_at(
            &mutated(|c| remove(c, "/client_sdk/version")),
            Rule::MissingField,
            "client_sdk.version",
        );
        assert_breaks_at(
            &mutated(|c| set(c, "/client_sdk/name", json!(1))),
            Rule::WrongType,
            "client_sdk.name",
        );
    }

    #[test]
    fn debug_meta_is_optional_but_needs_images() {
        assert_eq!(mutated(|c| remove(c, "/debug_meta")), vec![]);
        assert_breaks_at(
            &mutated(|c| set(c, "/debug_meta", json!({}))),
            Rule::MissingField,
            "debug_meta.images",
        );
        assert_breaks_at(
            &mutated(|c| set(c, "/debug_meta/images", json!({}))),
            Rule::WrongType,
            "debug_meta.images",
        );
    }

    #[test]
    fn image_type_must_be_a_relay_variant() {
        let v = mutated(|c| set(c, "/debug_meta/images/0/type", json!("elf")));
        assert_breaks_at(
            &v,
            Rule::InvalidDebugImage,
            "debug_meta.images[0].type: \"elf\"",
        );
        assert_breaks(
            &mutated(|c| remove(c, "/debug_meta/images/0/type")),
            Rule::InvalidDebugImage,
        );
        assert_eq!(
            mutated(|c| set(c, "/debug_meta/images/0/type", json!("macho"))),
            vec![]
        );
    }

    #[test]
    fn native_image_needs_canonical_debug_id() {
        let path = "/debug_meta/images/0/debug_id";
        for bad in [
            "7F4A3EB0-885E-8D4C-A04B-05FA32CC4CBD",
            "7f4a3eb0885e8d4ca04b05fa32cc4cbd",
            "not-an-id",
        ] {
            assert_breaks_at(
                &mutated(|c| set(c, path, json!(bad))),
                Rule::InvalidDebugImage,
                "debug_meta.images[0].debug_id",
            );
        }
        assert_breaks_at(
            &mutated(|c| remove(c, path)),
            Rule::InvalidDebugImage,
            "debug_meta.images[0].debug_id",
        );
        // An appendix (PDB age) is part of the canonical form.
        assert_eq!(
            mutated(|c| set(c, path, json!("7f4a3eb0-885e-8d4c-a04b-05fa32cc4cbd-a"))),
            vec![]
        );
    }

    #[test]
    fn native_image_needs_code_file_and_address() {
        assert_breaks_at(
            &mutated(|c| remove(c, "/debug_meta/images/0/code_file")),
            Rule::InvalidDebugImage,
            "debug_meta.images[0].code_file",
        );
        assert_breaks_at(
            &mutated(|c| set(c, "/debug_meta/images/0/code_file", json!(1))),
            Rule::WrongType,
            "debug_meta.images[0].code_file",
        );
        assert_breaks_at(
            &mutated(|c| remove(c, "/debug_meta/images/0/image_addr")),
            Rule::InvalidDebugImage,
            "debug_meta.images[0].image_addr",
        );
        assert_eq!(
            mutated(|c| remove(c, "/debug_meta/images/0/image_vmaddr")),
            vec![]
        );
        assert_eq!(
            mutated(|c| remove(c, "/debug_meta/images/0/image_size")),
            vec![]
        );
    }

    #[test]
    fn image_addresses_and_size_are_checked() {
        assert_breaks_at(
            &mutated(|c| set(c, "/debug_meta/images/0/image_addr", json!("0x07328f11000"))),
            Rule::InvalidAddress,
            "debug_meta.images[0].image_addr",
        );
        assert_breaks_at(
            &mutated(|c| set(c, "/debug_meta/images/0/image_vmaddr", json!("4000"))),
            Rule::InvalidAddress,
            "debug_meta.images[0].image_vmaddr",
        );
        assert_breaks_at(
            &mutated(|c| set(c, "/debug_meta/images/0/image_addr", json!(4096))),
            Rule::WrongType,
            "debug_meta.images[0].image_addr",
        );
        assert_breaks_at(
            &mutated(|c| set(c, "/debug_meta/images/0/image_size", json!(-1))),
            Rule::WrongType,
            "debug_meta.images[0].image_size",
        );
        assert_breaks_at(
            &mutated(|c| set(c, "/debug_meta/images/0/image_size", json!("4096"))),
            Rule::WrongType,
            "debug_meta.images[0].image_size",
        );
    }

    #[test]
    fn proguard_image_needs_only_a_canonical_uuid() {
        let proguard = json!({"type": "proguard", "uuid": "32420279-25e2-34e6-8bc7-8a006a8f2425"});
        assert_eq!(
            mutated(|c| set(c, "/debug_meta/images/0", proguard)),
            vec![]
        );
        let upper = json!({"type": "proguard", "uuid": "32420279-25E2-34E6-8BC7-8A006A8F2425"});
        assert_breaks_at(
            &mutated(|c| set(c, "/debug_meta/images/0", upper)),
            Rule::InvalidDebugImage,
            "debug_meta.images[0].uuid",
        );
    }

    #[test]
    fn image_aliases_are_forbidden() {
        let v = mutated(|c| set(c, "/debug_meta/images/0/name", json!("libc.so")));
        assert_breaks_at(&v, Rule::ForbiddenField, "debug_meta.images[0].name");
    }

    #[test]
    fn address_syntax() {
        let addr = |s: &str| address(&json!(s)).map_err(|f| f.rule);
        assert_eq!(addr("0x0").ok(), Some(0));
        assert_eq!(addr("0x735d14b000").ok(), Some(0x73_5d14_b000));
        assert_eq!(addr("0xffffffffffffffff").ok(), Some(u64::MAX));
        for bad in [
            "",
            "0x",
            "735d14b000",
            "0X10",
            "0xABC",
            "0x00",
            "0x0001",
            "0xg",
            " 0x1",
            "0x1ffffffffffffffff",
            "-0x1",
        ] {
            assert_eq!(addr(bad).err(), Some(Rule::InvalidAddress), "{bad:?}");
        }
        assert_eq!(
            address(&json!(16)).err().map(|f| f.rule),
            Some(Rule::WrongType)
        );
    }

    #[test]
    fn profile_and_its_arrays_are_required() {
        assert_breaks_at(
            &mutated(|c| remove(c, "/profile")),
            Rule::MissingField,
            "profile",
        );
        for key in ["samples", "stacks", "frames"] {
            let path = format!("profile.{key}");
            assert_breaks_at(
                &mutated(|c| remove(c, &format!("/profile/{key}"))),
                Rule::MissingField,
                &path,
            );
            assert_breaks_at(
                &mutated(|c| set(c, &format!("/profile/{key}"), json!({}))),
                Rule::WrongType,
                &path,
            );
        }
    }

    #[test]
    fn sample_fields_have_types() {
        assert_breaks_at(
            &mutated(|c| set(c, "/profile/samples/0", json!(1))),
            Rule::WrongType,
            "profile.samples[0]",
        );
        assert_breaks_at(
            &mutated(|c| remove(c, "/profile/samples/0/timestamp")),
            Rule::MissingField,
            "profile.samples[0].timestamp",
        );
        assert_breaks_at(
            &mutated(|c| set(c, "/profile/samples/0/timestamp", json!("1700000001"))),
            Rule::WrongType,
            "profile.samples[0].timestamp",
        );
        assert_breaks_at(
            &mutated(|c| set(c, "/profile/samples/0/stack_id", json!(-1))),
            Rule::WrongType,
            "profile.samples[0].stack_id",
        );
        assert_breaks_at(
            &mutated(|c| set(c, "/profile/samples/0/stack_id", json!(1.0))),
            Rule::WrongType,
            "profile.samples[0].stack_id",
        );
        assert_breaks_at(
            &mutated(|c| set(c, "/profile/samples/0/thread_id", json!(42))),
            Rule::WrongType,
            "profile.samples[0].thread_id",
        );
        assert_breaks_at(
            &mutated(|c| remove(c, "/profile/samples/0/thread_id")),
            Rule::MissingField,
            "profile.samples[0].thread_id",
        );
    }

    #[test]
    fn integer_timestamps_are_numbers_too() {
        assert_eq!(
            mutated(|c| set(c, "/profile/samples/0/timestamp", json!(1700000001_u64))),
            vec![]
        );
    }

    #[test]
    fn non_finite_timestamp() {
        // serde_json::Value cannot hold NaN/inf, so the check is exercised directly.
        for ts in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(
                finite_timestamp(ts).err().map(|f| f.rule),
                Some(Rule::NonFiniteTimestamp)
            );
        }
        assert!(finite_timestamp(1.7e9).is_ok());
    }

    #[test]
    fn stack_id_must_be_in_range() {
        let v = mutated(|c| set(c, "/profile/samples/3/stack_id", json!(7)));
        assert!(
            v.contains(&Violation {
                rule: Rule::MalformedSamples,
                detail: "profile.samples[3].stack_id: 7 >= 3 stacks".into()
            }),
            "{v:#?}"
        );
    }

    #[test]
    fn samples_must_be_sorted() {
        let v = mutated(|c| set(c, "/profile/samples/1/timestamp", json!(1700000000.5)));
        assert_breaks_at(
            &v,
            Rule::MalformedSamples,
            "profile.samples[1].timestamp: 1700000000.5 is earlier than profile.samples[0]",
        );
        // Equal timestamps keep their order under Relay's stable sort.
        assert_eq!(
            mutated(|c| set(c, "/profile/samples/1/timestamp", json!(1700000001.0))),
            vec![]
        );
    }

    #[test]
    fn duration_limit_is_66_seconds() {
        let v = mutated(|c| set(c, "/profile/samples/4/timestamp", json!(1700000067.5)));
        assert_eq!(rule_set(&v), vec![Rule::DurationIsTooLong]);
        assert_eq!(
            mutated(|c| set(c, "/profile/samples/4/timestamp", json!(1700000067.0))),
            vec![]
        );
    }

    #[test]
    fn stacks_are_arrays_of_frame_indices() {
        let v = mutated(|c| set(c, "/profile/stacks/1/0", json!(9)));
        assert!(
            v.contains(&Violation {
                rule: Rule::MalformedStacks,
                detail: "profile.stacks[1][0]: 9 >= 3 frames".into()
            }),
            "{v:#?}"
        );
        assert_breaks_at(
            &mutated(|c| set(c, "/profile/stacks/1/0", json!(-1))),
            Rule::WrongType,
            "profile.stacks[1][0]",
        );
        assert_breaks_at(
            &mutated(|c| set(c, "/profile/stacks/1", json!("0,1"))),
            Rule::WrongType,
            "profile.stacks[1]",
        );
    }

    #[test]
    fn duplicate_stacks_are_malformed() {
        let v = mutated(|c| set(c, "/profile/stacks/1", json!([1, 0])));
        assert_eq!(rule_set(&v), vec![Rule::MalformedStacks]);
        assert!(
            v[0].detail.contains("duplicate of profile.stacks[0]"),
            "{v:#?}"
        );
    }

    #[test]
    fn duplicate_frames_are_malformed() {
        let v = mutated(|c| {
            let first = c.pointer("/profile/frames/0").unwrap().clone();
            set(c, "/profile/frames/2", first);
        });
        assert_eq!(rule_set(&v), vec![Rule::MalformedStacks]);
        assert!(
            v[0].detail
                .starts_with("profile.frames[2]: duplicate of profile.frames[0]"),
            "{v:#?}"
        );
    }

    #[test]
    fn frame_fields_have_types() {
        for key in FRAME_STRING_FIELDS {
            let path = format!("profile.frames[1].{key}");
            assert_breaks_at(
                &mutated(|c| set(c, &format!("/profile/frames/1/{key}"), json!(1))),
                Rule::WrongType,
                &path,
            );
        }
        for (key, bad) in [
            ("lineno", json!(-1)),
            ("colno", json!(1.5)),
            ("lineno", json!(u64::from(u32::MAX) + 1)),
            ("in_app", json!("yes")),
        ] {
            let path = format!("profile.frames[1].{key}");
            assert_breaks_at(
                &mutated(|c| set(c, &format!("/profile/frames/1/{key}"), bad)),
                Rule::WrongType,
                &path,
            );
        }
    }

    #[test]
    fn frame_instruction_addr_is_an_address() {
        let v = mutated(|c| {
            set(
                c,
                "/profile/frames/0/instruction_addr",
                json!("0x7328F12000"),
            )
        });
        assert_breaks_at(
            &v,
            Rule::InvalidAddress,
            "profile.frames[0].instruction_addr",
        );
    }

    #[test]
    fn frame_aliases_are_forbidden() {
        let v = mutated(|c| set(c, "/profile/frames/1/line", json!(3)));
        assert_breaks_at(&v, Rule::ForbiddenField, "profile.frames[1].line");
    }

    #[test]
    fn cocoa_addresses_must_be_free_of_pac_bits() {
        let pac = |c: &mut Value| {
            set(
                c,
                "/profile/frames/0/instruction_addr",
                json!("0xa722447ffffffffc"),
            )
        };
        // Only cocoa chunks get masked; elsewhere a high address is left alone.
        assert_eq!(mutated(pac), vec![]);
        let v = mutated(|c| {
            set(c, "/platform", json!("cocoa"));
            pac(c);
        });
        assert_eq!(rule_set(&v), vec![Rule::InvalidAddress]);
    }

    #[test]
    fn frame_needs_something_to_show() {
        let v = mutated(|c| {
            set(
                c,
                "/profile/frames/1",
                json!({"module": "com.example.Worker", "platform": "java"}),
            )
        });
        assert_eq!(rule_set(&v), vec![Rule::EmptyFrame]);
        assert!(v[0].detail.starts_with("profile.frames[1]:"), "{v:#?}");
        for key in ["filename", "function", "instruction_addr"] {
            let frame = json!({key: "0x1"});
            assert_eq!(
                mutated(|c| set(c, "/profile/frames/1", frame)),
                vec![],
                "{key}"
            );
        }
    }

    #[test]
    fn thread_with_one_non_empty_sample_is_dropped() {
        let v = mutated(|c| set(c, "/profile/samples/4/stack_id", json!(2)));
        assert_eq!(rule_set(&v), vec![Rule::SingleSampleThread]);
        assert!(v[0].detail.contains("thread \"43\" has 1 sample"), "{v:#?}");
    }

    #[test]
    fn idle_only_thread_is_dropped_once() {
        let v = mutated(|c| {
            set(c, "/profile/samples/3/stack_id", json!(2));
            set(c, "/profile/samples/4/stack_id", json!(2));
        });
        assert_eq!(v.len(), 1, "{v:#?}");
        assert!(
            v[0].rule == Rule::SingleSampleThread && v[0].detail.contains("has 0 sample"),
            "{v:#?}"
        );
    }

    #[test]
    fn no_samples_is_not_enough() {
        let v = mutated(|c| set(c, "/profile/samples", json!([])));
        assert_breaks_at(&v, Rule::NotEnoughSamples, "profile.samples: no samples");
    }

    #[test]
    fn no_surviving_thread_is_not_enough() {
        let v = mutated(|c| {
            let samples = c
                .pointer_mut("/profile/samples")
                .and_then(Value::as_array_mut)
                .unwrap();
            samples.retain(|s| s["thread_id"] == "42");
            samples.truncate(1);
            remove(c, "/profile/thread_metadata/43");
        });
        assert_eq!(
            rule_set(&v),
            sorted(vec![Rule::SingleSampleThread, Rule::NotEnoughSamples])
        );
    }

    #[test]
    fn thread_metadata_must_be_referenced() {
        let v = mutated(|c| set(c, "/profile/thread_metadata/99", json!({"name": "ghost"})));
        assert_eq!(v, vec![Violation { rule: Rule::UnreferencedThreadMetadata, detail: "profile.thread_metadata[\"99\"]: no sample has this thread_id; Relay drops the entry".into() }]);
        assert_eq!(mutated(|c| remove(c, "/profile/thread_metadata")), vec![]);
    }

    #[test]
    fn thread_metadata_fields_have_types() {
        assert_breaks_at(
            &mutated(|c| set(c, "/profile/thread_metadata", json!([]))),
            Rule::WrongType,
            "profile.thread_metadata",
        );
        assert_breaks_at(
            &mutated(|c| set(c, "/profile/thread_metadata/42/priority", json!(-1))),
            Rule::WrongType,
            "profile.thread_metadata[\"42\"].priority",
        );
        assert_breaks_at(
            &mutated(|c| set(c, "/profile/thread_metadata/42/name", json!(1))),
            Rule::WrongType,
            "profile.thread_metadata[\"42\"].name",
        );
        assert_breaks_at(
            &mutated(|c| set(c, "/profile/thread_metadata/42", json!("main"))),
            Rule::WrongType,
            "profile.thread_metadata[\"42\"]",
        );
    }
}
