//! What a function counts of its work: per message, summed over the batch, reported as one log
//! line and as the batch's metrics.

use std::collections::BTreeMap;

use crate::metrics::Metric;

/// The counts of one message, or of a whole batch (its messages' counts merged).
///
/// The function decides what it counts; the batch adds what only it knows: messages whose task
/// panicked ([`fail`](Tally::fail) with `panic`), and how many messages it reported to SQS as
/// failed.
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
