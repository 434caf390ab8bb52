//! What a sample is tagged with beyond its stack: key-value labels (pprof labels, OTLP sample
//! attributes) and the trace span it was taken in.

use super::StringHandle;

/// The value of one label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LabelValue {
    /// A string.
    Str(StringHandle),
    /// A number, with its unit when the producer gave one (`bytes`, `ms`).
    Num {
        /// The number.
        value: i64,
        /// Its unit.
        unit: Option<StringHandle>,
    },
}

/// One key-value label of a sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Label {
    /// The key (`thread.name`, `span_id`, `http.route`).
    pub key: StringHandle,
    /// The value.
    pub value: LabelValue,
}

/// The distributed-tracing span a sample was taken in (an OTLP link).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Link {
    /// W3C trace id.
    pub trace_id: [u8; 16],
    /// W3C span id.
    pub span_id: [u8; 8],
}
