//! Marks: the instants and counter values a trace records beside its samples and spans. They
//! are no observations of a stack, so they stay out of the sample table and its series; the
//! tables write them to their own `counters` table.

use super::{LabelSetHandle, StringHandle, ThreadHandle};

/// What a mark records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MarkKind {
    /// Something that happened at one time (a trace-event `i`, `I` or `R`).
    Instant,
    /// One value of a counter series at one time (one numeric arg of a `C` event).
    Counter,
}

impl MarkKind {
    /// The kind as the `counters` table writes it.
    pub fn name(self) -> &'static str {
        match self {
            MarkKind::Instant => "instant",
            MarkKind::Counter => "counter",
        }
    }
}

/// How far an instant reaches: the trace-event `s` of an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MarkScope {
    /// The whole trace (`g`).
    Global,
    /// Its process (`p`).
    Process,
    /// Its thread (`t`, the default).
    Thread,
}

impl MarkScope {
    /// The scope from its trace-event letter; `None` for any other text.
    pub fn from_letter(s: &str) -> Option<Self> {
        match s {
            "g" => Some(MarkScope::Global),
            "p" => Some(MarkScope::Process),
            "t" => Some(MarkScope::Thread),
            _ => None,
        }
    }

    /// The trace-event letter, as the `counters` table writes it.
    pub fn letter(self) -> &'static str {
        match self {
            MarkScope::Global => "g",
            MarkScope::Process => "p",
            MarkScope::Thread => "t",
        }
    }
}

/// One instant or counter value. Its time is on the profile's clock, as sample times are, and
/// moves with them when the profile is put on the wall clock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mark {
    /// Nanoseconds, on the clock [`Profile::timestamps`](super::Profile::timestamps) names.
    pub time: i64,
    /// The thread that recorded it.
    pub thread: ThreadHandle,
    /// Instant or counter value.
    pub kind: MarkKind,
    /// The event's name (a counter's series name).
    pub name: StringHandle,
    /// The event's category.
    pub category: Option<StringHandle>,
    /// A counter's key: the arg the value came from (`input`, `output`).
    pub key: Option<StringHandle>,
    /// A counter's value.
    pub value: Option<f64>,
    /// An instant's scope.
    pub scope: Option<MarkScope>,
    /// An instant's args.
    pub labels: Option<LabelSetHandle>,
}
