//! What a function counts of its work: per message, summed over the batch, reported as one log
//! line and as the batch's metrics (each a [`Metric`] with its [`Unit`]).

use std::collections::BTreeMap;

/// The counts of one message, or of a whole batch (its messages' counts merged).
///
/// The function decides what it counts; the batch adds what only it knows: messages whose task
/// panicked ([`fail`](Tally::fail) with `panic`), and how many messages it reported to SQS as
/// failed. A function declares its counts with [`counters!`](crate::counters), which writes
/// this trait's methods from the one list of its counters.
pub trait Tally: Default + Send + 'static {
    /// Adds `other`'s counts to these.
    fn merge(&mut self, other: Self);

    /// Counts one failure for `reason`.
    fn fail(&mut self, reason: &str);

    /// Records how many messages of the batch were reported to SQS as failed.
    fn set_failed_messages(&mut self, n: u64);

    /// The batch's metrics, in the order its EMF document lists them (`DurationMs` follows).
    fn metrics(&self) -> Vec<Metric>;

    /// Failures by reason; each reason gets its own `Failures` metric document, in this order.
    fn failures(&self) -> &BTreeMap<String, u64>;

    /// Logs the batch's summary line. The function writes it because the line's fields are its
    /// counts.
    fn log_batch(&self, duration_ms: u64);
}

/// The unit of a metric, as CloudWatch names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// `Count`.
    Count,
    /// `Bytes`.
    Bytes,
    /// `Milliseconds`.
    Milliseconds,
}

impl Unit {
    /// CloudWatch's name of the unit.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Count => "Count",
            Unit::Bytes => "Bytes",
            Unit::Milliseconds => "Milliseconds",
        }
    }
}

/// One value of a batch's metrics document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metric {
    /// The metric's name.
    pub name: &'static str,
    /// Its value for the batch.
    pub value: u64,
    /// Its unit.
    pub unit: Unit,
}

impl Metric {
    /// A count.
    pub fn count(name: &'static str, value: u64) -> Metric {
        Metric {
            name,
            value,
            unit: Unit::Count,
        }
    }

    /// A number of bytes.
    pub fn bytes(name: &'static str, value: u64) -> Metric {
        Metric {
            name,
            value,
            unit: Unit::Bytes,
        }
    }

    /// A duration in milliseconds.
    pub fn milliseconds(name: &'static str, value: u64) -> Metric {
        Metric {
            name,
            value,
            unit: Unit::Milliseconds,
        }
    }
}
