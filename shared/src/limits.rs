//! Every bound on what an input may make the converter do, in one place.
//!
//! Everything that comes from outside is hostile: an upload, a debug file, a sidecar. Each
//! limit caps one way an input could make a conversion use memory, time or output without
//! bound. Exceeding one fails with [`ErrorKind::LimitExceeded`] whose `limit` is the field's
//! name, so an upload that trips one is quarantined with a report that names it. The defaults
//! are far above what real producers write; the functions read overrides from
//! `PROFLAKE_LIMIT_<FIELD>` variables ([`Limits::from_env`]).

use crate::error::{Error, ErrorKind, Result};
use crate::model::Profile;

const MIB: u64 = 1 << 20;

/// Below this many inflated bytes the ratio limit does not apply: small inputs compress
/// unevenly, and a megabyte costs nothing whatever its ratio.
pub const RATIO_FLOOR_BYTES: u64 = MIB;

/// The deepest JSON nesting `max_json_depth` may allow: serde_json stops at 128 levels on its
/// own with a syntax error, which would hide the limit.
const SERDE_JSON_DEPTH: u64 = 127;

/// Defines [`Limits`] from one line per limit, so that the struct, its defaults, its variables
/// and their bounds cannot drift apart.
macro_rules! limits {
    ($(
        $(#[doc = $doc:literal])+
        $field:ident: $variable:literal = $default:expr, $min:literal ..= $max:expr;
    )+) => {
        /// Limits on everything that comes from outside. See the module documentation;
        /// `docs/limits.md` lists each with its variable and default.
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub struct Limits {
            $( $(#[doc = $doc])+ pub $field: u64, )+
        }

        impl Default for Limits {
            fn default() -> Self {
                Limits { $( $field: $default, )+ }
            }
        }

        impl Limits {
            /// Every limit's field name and environment variable.
            pub const VARIABLES: &'static [(&'static str, &'static str)] =
                &[$( (stringify!($field), $variable), )+];

            /// The limits with the overrides `get` returns for `PROFLAKE_LIMIT_*` variables
            /// (`None`, empty or blank: the default). A value that is not a whole number in
            /// the limit's range is an error naming the variable and the value.
            pub fn from_vars(
                get: impl Fn(&str) -> Option<String>,
            ) -> std::result::Result<Limits, LimitsError> {
                let mut limits = Limits::default();
                $(
                    if let Some(value) = read(&get, $variable, $min, $max)? {
                        limits.$field = value;
                    }
                )+
                Ok(limits)
            }

            /// The value of the limit named `name` (a field name).
            pub fn get(&self, name: &str) -> Option<u64> {
                match name {
                    $( stringify!($field) => Some(self.$field), )+
                    _ => None,
                }
            }
        }
    };
}

limits! {
    /// Largest upload (or metadata sidecar) read, in bytes; a larger one is quarantined unread.
    max_object_bytes: "PROFLAKE_LIMIT_MAX_OBJECT_BYTES" = 256 * MIB, 1..=u64::MAX;
    /// Largest debug file (under `debuginfo/`) read, in bytes; a larger one is refused unread.
    max_debug_file_bytes: "PROFLAKE_LIMIT_MAX_DEBUG_FILE_BYTES" = 2048 * MIB, 1..=u64::MAX;
    /// Most bytes a gzip or zstd upload may inflate to: the guard against decompression bombs.
    max_decompressed_bytes: "PROFLAKE_LIMIT_MAX_DECOMPRESSED_BYTES" = 4096 * MIB, 1..=u64::MAX;
    /// Most bytes one compressed byte may inflate to, for a whole compressed upload and for
    /// each Perfetto `compressed_packets` payload. Outputs up to 1 MiB are always allowed.
    /// Profiles compress a few times to a few dozen times; deflate bombs reach 1000:1 and
    /// zstd ones far more.
    max_decompression_ratio: "PROFLAKE_LIMIT_MAX_DECOMPRESSION_RATIO" = 200, 1..=u64::MAX;
    /// Largest single Perfetto `TracePacket`, in bytes (traced writes a few KB).
    max_packet_bytes: "PROFLAKE_LIMIT_MAX_PACKET_BYTES" = 64 * MIB, 1..=u64::MAX;
    /// Most bytes one Perfetto `compressed_packets` payload may inflate to.
    max_inflated_packet_bytes: "PROFLAKE_LIMIT_MAX_INFLATED_PACKET_BYTES" = 256 * MIB, 1..=u64::MAX;
    /// Deepest nesting of Perfetto compressed packets inside compressed packets (0 refuses
    /// compressed packets).
    max_packet_nesting: "PROFLAKE_LIMIT_MAX_PACKET_NESTING" = 4, 0..=u64::MAX;
    /// Most Perfetto trace packets, counting empty and nested ones.
    max_packets: "PROFLAKE_LIMIT_MAX_PACKETS" = 50_000_000, 1..=u64::MAX;
    /// Most Perfetto writer sequences (`trusted_packet_sequence_id` values).
    max_sequences: "PROFLAKE_LIMIT_MAX_SEQUENCES" = 65_536, 1..=u64::MAX;
    /// Most Perfetto interned entries alive at once, over all sequences and kinds.
    max_interned_entries: "PROFLAKE_LIMIT_MAX_INTERNED_ENTRIES" = 20_000_000, 1..=u64::MAX;
    /// Most Perfetto `ClockSnapshot` packets.
    max_clock_snapshots: "PROFLAKE_LIMIT_MAX_CLOCK_SNAPSHOTS" = 1_000_000, 1..=u64::MAX;
    /// Most symbol lines kept from Perfetto `module_symbols` packets.
    max_module_symbol_lines: "PROFLAKE_LIMIT_MAX_MODULE_SYMBOL_LINES" = 20_000_000, 1..=u64::MAX;
    /// Most requests in one length-prefixed OTLP stream.
    max_stream_messages: "PROFLAKE_LIMIT_MAX_STREAM_MESSAGES" = 1_000_000, 1..=u64::MAX;
    /// Most entries in any one table of a pprof profile (strings, functions, locations,
    /// mappings) or of an OTLP dictionary, counted on the wire before the message is decoded:
    /// an empty entry of two bytes decodes into a struct of tens of bytes. Also the nodes of a
    /// V8 cpuprofile, the shared frames of a speedscope document, each table of a Firefox
    /// profile (libs, strings, stacks, frames, functions), the maps lines of a legacy CPU
    /// profile, and the executable mappings a perf.data decoder holds over all processes.
    max_table_entries: "PROFLAKE_LIMIT_MAX_TABLE_ENTRIES" = 5_000_000, 1..=u64::MAX;
    /// Most samples in one upload: model samples (one per timestamp or non-zero value, one per
    /// perf script record or perf.data sample), pprof and OTLP sample records on the wire, a speedscope document's
    /// events and samples, the records of a legacy CPU profile, and the marks of a Chrome trace
    /// (its instants and counter values, counted apart).
    max_samples: "PROFLAKE_LIMIT_MAX_SAMPLES" = 20_000_000, 1..=u64::MAX;
    /// Most frames in one stack. The decoders keep a deeper stack's sample without its frames
    /// and count it (`*stack_too_deep` stats); a Sample v2 chunk, which is passed through
    /// unchanged, is refused.
    max_stack_depth: "PROFLAKE_LIMIT_MAX_STACK_DEPTH" = 8192, 1..=u64::MAX;
    /// Most distinct call paths (nodes of the stack prefix tree).
    max_stack_nodes: "PROFLAKE_LIMIT_MAX_STACK_NODES" = 20_000_000, 1..=u64::MAX;
    /// Longest line of folded stacks, perf script text or a legacy CPU profile's maps text, in
    /// bytes.
    max_line_bytes: "PROFLAKE_LIMIT_MAX_LINE_BYTES" = MIB, 1..=u64::MAX;
    /// Longest string in the profile (function, file, image, thread, label, attribute), in
    /// bytes.
    max_string_bytes: "PROFLAKE_LIMIT_MAX_STRING_BYTES" = MIB, 1..=u64::MAX;
    /// Deepest nesting of arrays and objects in JSON input (OTLP/JSON, Sample v2, cpuprofile,
    /// speedscope, Firefox profiles, envelope headers, chunk metadata, sidecars), checked before
    /// a parser recurses into it. At most 127, serde_json's own bound.
    max_json_depth: "PROFLAKE_LIMIT_MAX_JSON_DEPTH" = 64, 1..=SERDE_JSON_DEPTH;
    /// Most events in one trace-event document (the elements of `traceEvents` or of a bare
    /// array), counted as they are read.
    max_events: "PROFLAKE_LIMIT_MAX_EVENTS" = 50_000_000, 1..=u64::MAX;
    /// Largest single JSON value a streamed document holds at once: one trace event, or its
    /// `metadata` object. The read buffer grows to the largest one. Also the largest chunk of a
    /// JFR recording, which is read whole.
    max_event_bytes: "PROFLAKE_LIMIT_MAX_EVENT_BYTES" = 64 * MIB, 1..=u64::MAX;
    /// Most args of one span kept as labels; the rest are dropped and counted
    /// (`span_args_dropped`).
    max_span_args: "PROFLAKE_LIMIT_MAX_SPAN_ARGS" = 64, 0..=u64::MAX;
    /// Most distinct threads.
    max_threads: "PROFLAKE_LIMIT_MAX_THREADS" = 100_000, 1..=u64::MAX;
    /// Most distinct processes: each gets Sample v2 chunks of its own.
    max_processes: "PROFLAKE_LIMIT_MAX_PROCESSES" = 10_000, 1..=u64::MAX;
    /// Largest request body the HTTP receiver takes, in bytes, both as sent and once its
    /// `Content-Encoding` is undone (OTLP/HTTP recommends 64 MiB); a larger one is answered 413.
    max_request_bytes: "PROFLAKE_LIMIT_MAX_REQUEST_BYTES" = 64 * MIB, 1..=u64::MAX;
}

/// A `PROFLAKE_LIMIT_*` variable holds a value the limits cannot take.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{variable}={value:?} is invalid: {expected}")]
pub struct LimitsError {
    /// The environment variable.
    pub variable: &'static str,
    /// What it holds.
    pub value: String,
    /// What it should hold.
    pub expected: String,
}

pub(crate) fn read(
    get: &impl Fn(&str) -> Option<String>,
    variable: &'static str,
    min: u64,
    max: u64,
) -> std::result::Result<Option<u64>, LimitsError> {
    let Some(value) = get(variable).filter(|v| !v.trim().is_empty()) else {
        return Ok(None);
    };
    match value.trim().parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(Some(n)),
        _ => Err(LimitsError {
            variable,
            expected: if max < u64::MAX {
                format!("expected a whole number from {min} to {max}")
            } else if min > 0 {
                format!("expected a whole number of at least {min}")
            } else {
                "expected a whole number".to_owned()
            },
            value,
        }),
    }
}

impl Limits {
    /// The limits with overrides from the process environment; see [`Limits::from_vars`].
    pub fn from_env() -> std::result::Result<Limits, LimitsError> {
        Limits::from_vars(|name| std::env::var(name).ok())
    }

    /// The environment variable of the limit named `name`.
    pub fn variable(name: &str) -> Option<&'static str> {
        Limits::VARIABLES
            .iter()
            .find(|(field, _)| *field == name)
            .map(|&(_, variable)| variable)
    }

    /// How far `compressed` bytes may inflate under the size limit `size_limit` (a field name
    /// and its value), or under the ratio limit when that binds first.
    pub(crate) fn inflate_cap(&self, compressed: usize, size_limit: (&'static str, u64)) -> Cap {
        let by_ratio = self
            .max_decompression_ratio
            .saturating_mul(compressed as u64)
            .max(RATIO_FLOOR_BYTES);
        if by_ratio < size_limit.1 {
            Cap {
                bytes: by_ratio,
                limit: "max_decompression_ratio",
                max: self.max_decompression_ratio,
            }
        } else {
            Cap {
                bytes: size_limit.1,
                limit: size_limit.0,
                max: size_limit.1,
            }
        }
    }

    /// Refuses JSON nested deeper than `max_json_depth`, before a parser recurses into it.
    /// Only brackets outside strings count; a document that is not JSON is the parser's to
    /// report.
    pub(crate) fn check_json_depth(&self, json: &[u8]) -> Result<()> {
        let max = self.max_json_depth;
        let (mut depth, mut in_string, mut escaped) = (0u64, false, false);
        for &b in json {
            if in_string {
                match b {
                    _ if escaped => escaped = false,
                    b'\\' => escaped = true,
                    b'"' => in_string = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => in_string = true,
                b'[' | b'{' => {
                    depth += 1;
                    if depth > max {
                        return Err(exceeded("max_json_depth", max));
                    }
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        Ok(())
    }

    /// Checks a decoded profile against the limits on what the model holds. The decoders stop
    /// early where they can (samples, stack nodes); this catches what no decoder checks as it
    /// goes (threads, processes, strings) and what reaches the model without a decoder (Sample
    /// v2 chunks).
    pub(crate) fn check_profile(&self, profile: &Profile) -> Result<()> {
        let counts = [
            ("max_samples", profile.samples().len(), self.max_samples),
            (
                "max_stack_nodes",
                profile.stacks().len(),
                self.max_stack_nodes,
            ),
            ("max_threads", profile.threads().len(), self.max_threads),
            (
                "max_processes",
                profile.processes().len(),
                self.max_processes,
            ),
        ];
        for (name, count, max) in counts {
            if count as u64 > max {
                return Err(exceeded(name, max));
            }
        }
        // Depth 0 is a root frame: a stack of n frames ends at depth n - 1.
        let deepest = profile.max_stack_depth();
        if deepest.is_some_and(|d| u64::from(d) >= self.max_stack_depth) {
            return Err(exceeded("max_stack_depth", self.max_stack_depth));
        }
        let attributes = profile.attributes.iter().flat_map(|(k, v)| [k, v]);
        let mut strings = profile.strings().chain(attributes.map(String::as_str));
        if strings.any(|s| s.len() as u64 > self.max_string_bytes) {
            return Err(exceeded("max_string_bytes", self.max_string_bytes));
        }
        Ok(())
    }
}

/// How many bytes an inflating reader may produce, and the limit it reports when the input
/// wants more.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cap {
    pub(crate) bytes: u64,
    pub(crate) limit: &'static str,
    pub(crate) max: u64,
}

/// The error for input beyond the limit `name` (a [`Limits`] field), whose value is `max`.
pub(crate) fn exceeded(name: &'static str, max: u64) -> Error {
    debug_assert!(Limits::variable(name).is_some(), "{name} is no limit");
    ErrorKind::LimitExceeded { limit: name, max }.into()
}

#[cfg(test)]
#[path = "limits_tests.rs"]
mod tests;
