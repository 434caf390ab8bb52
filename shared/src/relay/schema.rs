//! The JSON shape of a Sample v2 chunk, once: the writer builds these values, the reader parses
//! them, and Relay's rules check them.
//!
//! Lossless by construction, so that rewriting a stored chunk keeps what the SDK sent:
//! - every object keeps the keys it does not know in `other`, in the order serde_json's map
//!   keeps them (sorted), after the known ones;
//! - numbers Relay reads as floats are [`Number`]s, so an integer `66` stays `66`, and they
//!   are read exactly: serde_json's own float parsing may miss the nearest float by one unit
//!   in the last place (unless its `float_roundtrip` feature is on, which would change every
//!   parse in the workspace), and a rewrite would then print other digits;
//! - an optional key that is absent stays absent, and one that is present is never `null`
//!   (Relay's rules count a `null` as a wrong type), except `release`, which is required and
//!   may be `null`.
//!
//! Known keys are written in Relay's order (`measurements`, `chunk_id`, ..., `profile`), then
//! `timestamp`, then `other`. Nothing in `other` may share a known key's name.

use std::collections::BTreeMap;

use serde::de::{Error as _, Unexpected};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Number, Value};

/// Keys an object carries that the schema does not name, kept as sent.
pub type Other = Map<String, Value>;

/// One profile chunk.
///
/// `S` is how the samples are held: a `Vec` of [`Sample`]s when read, or a view that
/// serializes each sample from the model as it is written, so a large chunk is never a second
/// copy of its samples in memory.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Chunk<S = Vec<Sample>> {
    /// Measurements recorded beside the profile, by name.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub measurements: Option<BTreeMap<String, Measurement>>,
    /// The chunk's id: 32 lowercase hex digits.
    pub chunk_id: String,
    /// The profiler session's id, the same for all of a session's chunks.
    pub profiler_id: String,
    /// The images frames point into.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub debug_meta: Option<DebugMeta>,
    /// The deployment environment.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub environment: Option<String>,
    /// The Sentry platform (`android`, `cocoa`, `python`, ...).
    pub platform: String,
    /// What the SDK said the profile was recorded as (`perfetto`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub content_type: Option<String>,
    /// The release; required, and `null` when there is none.
    #[serde(deserialize_with = "nullable")]
    pub release: Option<String>,
    /// The SDK that recorded the profile.
    pub client_sdk: ClientSdk,
    /// The format version, `"2"`.
    pub version: String,
    /// How sample times were laid out when the input recorded none (not Relay's; it ignores it).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub synthetic_timestamps: Option<SyntheticTimestamps>,
    /// Samples, stacks, frames and threads.
    pub profile: ProfileData<S>,
    /// When the SDK started the chunk, Unix seconds (SDKs send it; Relay drops it).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present_number"
    )]
    pub timestamp: Option<Number>,
    /// Other keys.
    #[serde(flatten)]
    pub other: Other,
}

/// One named measurement.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// The unit of every value, as sent (`byte`, `hz`, ...).
    pub unit: String,
    /// The points, in the order sent.
    pub values: Vec<MeasurementValue>,
    /// Other keys.
    #[serde(flatten)]
    pub other: Other,
}

/// One point of a measurement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeasurementValue {
    /// Unix time in seconds.
    #[serde(deserialize_with = "number")]
    pub timestamp: Number,
    /// The value.
    #[serde(deserialize_with = "number")]
    pub value: Number,
    /// Other keys (SDKs send `elapsed_since_start_ns`).
    #[serde(flatten)]
    pub other: Other,
}

/// The SDK that recorded a profile.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientSdk {
    /// SDK name (`sentry.java.android`).
    pub name: String,
    /// SDK version.
    pub version: String,
    /// Other keys (`packages`, `integrations`).
    #[serde(flatten)]
    pub other: Other,
}

/// Debug information: the images frames point into.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DebugMeta {
    /// The images, in the order sent.
    pub images: Vec<DebugImage>,
    /// Other keys.
    #[serde(flatten)]
    pub other: Other,
}

/// One debug image, of any type: native ones (`symbolic`, `macho`) give an address range and a
/// debug id, ProGuard ones a `uuid`; keys of other types stay in `other`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DebugImage {
    /// The image's path.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub code_file: Option<String>,
    /// The code id: the GNU build ID for ELF, lowercase hex. What debug files are stored by.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub code_id: Option<String>,
    /// The debug id, hyphenated lowercase.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub debug_id: Option<String>,
    /// The image type (`symbolic`, `macho`, `proguard`, `sourcemap`, `jvm`).
    #[serde(
        rename = "type",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub kind: Option<String>,
    /// Load address, `0x` hex.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub image_addr: Option<String>,
    /// The address the image was linked at, `0x` hex.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub image_vmaddr: Option<String>,
    /// Size in bytes.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub image_size: Option<u64>,
    /// A ProGuard mapping's id, hyphenated lowercase UUID.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub uuid: Option<String>,
    /// Other keys (`arch`, `debug_file`, ...).
    #[serde(flatten)]
    pub other: Other,
}

/// Says that sample times were laid out from aggregated weights, and how.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SyntheticTimestamps {
    /// Time between a thread's consecutive samples.
    pub interval_ns: i64,
    /// The rule, in words.
    pub rule: String,
    /// The observations the weights stood for, when they were scaled down to fit the bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scaled_from: Option<u64>,
    /// Other keys.
    #[serde(flatten)]
    pub other: Other,
}

/// The profile proper: samples point at stacks, stacks at frames.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProfileData<S = Vec<Sample>> {
    /// The samples, sorted by time.
    pub samples: S,
    /// Stacks as frame indices, leaf first; `[]` is an idle sample's stack.
    pub stacks: Vec<Vec<usize>>,
    /// The frames.
    pub frames: Vec<Frame>,
    /// Thread names and priorities by thread id.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub thread_metadata: Option<BTreeMap<String, ThreadMetadata>>,
    /// Other keys.
    #[serde(flatten)]
    pub other: Other,
}

/// One sample.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Unix time in seconds.
    #[serde(deserialize_with = "number")]
    pub timestamp: Number,
    /// Index into `stacks`.
    pub stack_id: usize,
    /// The thread, decimal (or `0x` hex on Apple platforms).
    pub thread_id: String,
    /// Other keys.
    #[serde(flatten)]
    pub other: Other,
}

impl Sample {
    /// The timestamp as float seconds, as Relay reads it.
    pub fn seconds(&self) -> f64 {
        // Without serde_json's arbitrary_precision every number is an f64, i64 or u64.
        self.timestamp.as_f64().unwrap_or(f64::NAN)
    }
}

/// One frame.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Frame {
    /// The absolute source path.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub abs_path: Option<String>,
    /// The source column.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub colno: Option<u32>,
    /// The source file.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub filename: Option<String>,
    /// The function.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub function: Option<String>,
    /// Whether the frame is the application's own code.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub in_app: Option<bool>,
    /// The absolute address, `0x` hex.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub instruction_addr: Option<String>,
    /// The source line.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub lineno: Option<u32>,
    /// The module (a Java frame's class).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub module: Option<String>,
    /// The image path of a native frame, or the dex/oat path of a Java one.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub package: Option<String>,
    /// The frame's own platform (`java`, `native`, ...) in mixed profiles.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub platform: Option<String>,
    /// What symbolication made of the frame (`symbolicated`, `missing_symbol`,
    /// `unknown_image`, `malformed`, or another word of symbolicator's), on every frame it
    /// expanded. Relay drops it on ingest; symbolication sets it.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub status: Option<String>,
    /// Where the function holding the code starts, absolute `0x` hex; only on the outermost
    /// frame of an inline chain (so an inlined frame is one with `status` and no `sym_addr`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub sym_addr: Option<String>,
    /// The raw (mangled) symbol `function` was demangled from.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub symbol: Option<String>,
    /// Other keys (`data`, `lang`, ...).
    #[serde(flatten)]
    pub other: Other,
}

/// What is known of a thread.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadMetadata {
    /// The thread's name.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub name: Option<String>,
    /// The thread's priority.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub priority: Option<u32>,
    /// Other keys.
    #[serde(flatten)]
    pub other: Other,
}

/// An optional key that, when present, holds a value: `null` is a wrong type, not an absence,
/// so that a rewrite cannot turn one into the other.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// A required key that may be `null`. Serde treats a missing `Option` field as `None` unless
/// the field has its own deserializer, so this makes absence an error.
fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    Option::<T>::deserialize(d)
}

/// A number read from its own text, with the standard library's parse, which rounds
/// correctly. Integers stay integers, as serde_json reads them.
fn number<'de, D: Deserializer<'de>>(d: D) -> Result<Number, D::Error> {
    let raw = Box::<RawValue>::deserialize(d)?;
    let text = raw.get();
    if !text.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
        let found: Value = serde_json::from_str(text).map_err(D::Error::custom)?;
        let unexpected = match &found {
            Value::String(s) => Unexpected::Str(s),
            Value::Bool(b) => Unexpected::Bool(*b),
            Value::Array(_) => Unexpected::Seq,
            Value::Object(_) => Unexpected::Map,
            _ => Unexpected::Other("null"),
        };
        return Err(D::Error::invalid_type(unexpected, &"a JSON number"));
    }
    if !text.contains(['.', 'e', 'E']) {
        if let Ok(n) = text.parse::<u64>() {
            return Ok(n.into());
        }
        if let Ok(n) = text.parse::<i64>() {
            return Ok(n.into());
        }
    }
    text.parse::<f64>()
        .ok()
        .and_then(Number::from_f64)
        .ok_or_else(|| D::Error::custom(format!("{OUT_OF_RANGE}: {text}")))
}

/// What serde_json says of a number too large for an f64.
pub(super) const OUT_OF_RANGE: &str = "number out of range";

fn present_number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Number>, D::Error> {
    number(d).map(Some)
}
