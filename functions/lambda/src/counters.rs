//! A function's counters declared once: [`counters!`](crate::counters) turns one list of
//! counters into the struct, its [`Tally`](crate::Tally) (merge, metrics, the batch's log line)
//! and nothing else, so a counter cannot be added to one of them and forgotten in another.

use std::collections::BTreeMap;

/// Declares a function's counters: a struct of `u64` counters and a `failures` map (failures by
/// reason), and its [`Tally`](crate::Tally).
///
/// Each counter is `name: Unit "MetricName" options`, in the order of the batch's metrics
/// document and of the batch's `batch done` log line (whose field is the counter's name). The
/// unit is one of [`Unit`](crate::Unit)'s variants. Options:
///
/// - `max`: merged by taking the larger value (a longest time) instead of adding;
/// - `unlogged`: a metric only, not a field of the log line.
///
/// A `failed_messages` counter is required: the batch sets it to the number of messages it
/// reported to SQS as failed. The `failures` entry comes first and carries the map's docs.
///
/// ```
/// proflake_lambda::counters! {
///     /// What one batch did.
///     pub struct Counts {
///         /// Failures by reason.
///         failures,
///         /// Items handled.
///         items: Count "Items",
///         /// Bytes read.
///         bytes: Bytes "Bytes" unlogged,
///         /// The longest wait.
///         lag_ms: Milliseconds "LagMs" max,
///         /// Messages reported back to SQS as failed.
///         failed_messages: Count "FailedMessages",
///     }
/// }
/// ```
#[macro_export]
macro_rules! counters {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(#[$failures_doc:meta])*
            failures,
            $(
                $(#[$doc:meta])*
                $field:ident: $unit:ident $metric:literal $($option:ident)*
            ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Default, PartialEq, Eq)]
        $vis struct $name {
            $($(#[$doc])* pub $field: u64,)+
            $(#[$failures_doc])*
            pub failures: ::std::collections::BTreeMap<::std::string::String, u64>,
        }

        impl $crate::Tally for $name {
            fn merge(&mut self, other: Self) {
                $($crate::__merge_counter!(self.$field, other.$field, $($option)*);)+
                $crate::__private::merge_failures(&mut self.failures, other.failures);
            }

            fn fail(&mut self, reason: &str) {
                *self.failures.entry(reason.to_owned()).or_default() += 1;
            }

            fn set_failed_messages(&mut self, n: u64) {
                self.failed_messages = n;
            }

            fn metrics(&self) -> ::std::vec::Vec<$crate::Metric> {
                ::std::vec![$($crate::Metric {
                    name: $metric,
                    value: self.$field,
                    unit: $crate::Unit::$unit,
                },)+]
            }

            fn failures(&self) -> &::std::collections::BTreeMap<::std::string::String, u64> {
                &self.failures
            }

            fn log_batch(&self, duration_ms: u64) {
                $crate::__log_counters!(self, duration_ms, [] $($field [$($option)*])+);
            }
        }
    };
}

/// One counter's merge, by its options (see [`counters!`](crate::counters)).
#[doc(hidden)]
#[macro_export]
macro_rules! __merge_counter {
    ($into:expr, $from:expr, max $($rest:ident)*) => {
        $into = ::std::cmp::max($into, $from)
    };
    ($into:expr, $from:expr, unlogged $($rest:ident)*) => {
        $crate::__merge_counter!($into, $from, $($rest)*)
    };
    ($into:expr, $from:expr, $other:ident $($rest:ident)*) => {
        ::std::compile_error!(::std::concat!(
            "unknown counter option `",
            ::std::stringify!($other),
            "`: expected `max` or `unlogged`"
        ))
    };
    ($into:expr, $from:expr,) => {
        $into += $from
    };
}

/// The `batch done` line: the counters not marked `unlogged`, in order, then `duration_ms`.
/// Written field by field because tracing needs each field's name where the line is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __log_counters {
    ($counters:expr, $duration_ms:ident, [$($logged:tt)*]) => {
        $crate::__private::tracing::info!($($logged)* $duration_ms, "batch done")
    };
    ($counters:expr, $duration_ms:ident, [$($logged:tt)*]
        $field:ident [unlogged $($option:ident)*] $($rest:tt)*) => {
        $crate::__log_counters!($counters, $duration_ms, [$($logged)*] $($rest)*)
    };
    ($counters:expr, $duration_ms:ident, [$($logged:tt)*]
        $field:ident [$first:ident $($option:ident)*] $($rest:tt)*) => {
        $crate::__log_counters!($counters, $duration_ms, [$($logged)*] $field [$($option)*] $($rest)*)
    };
    ($counters:expr, $duration_ms:ident, [$($logged:tt)*] $field:ident [] $($rest:tt)*) => {
        $crate::__log_counters!(
            $counters, $duration_ms, [$($logged)* $field = $counters.$field,] $($rest)*
        )
    };
}

/// Adds `from`'s failures to `into`'s.
pub fn merge_failures(into: &mut BTreeMap<String, u64>, from: BTreeMap<String, u64>) {
    for (reason, n) in from {
        *into.entry(reason).or_default() += n;
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use crate::{Metric, Tally, Unit};

    crate::counters! {
        /// Counts of a test.
        struct Counts {
            /// Failures by reason.
            failures,
            /// Items.
            items: Count "Items",
            /// Bytes, a metric only.
            bytes: Bytes "Bytes" unlogged,
            /// The longest wait.
            lag_ms: Milliseconds "LagMs" max,
            /// Messages reported as failed.
            failed_messages: Count "FailedMessages",
        }
    }

    #[test]
    fn counters_add_up_except_those_merged_by_maximum() {
        let mut a = Counts {
            items: 2,
            bytes: 10,
            lag_ms: 7,
            ..Counts::default()
        };
        a.fail("storage");
        let mut b = Counts {
            items: 3,
            bytes: 5,
            lag_ms: 4,
            ..Counts::default()
        };
        b.fail("storage");
        b.fail("panic");
        a.merge(b);
        a.set_failed_messages(1);
        assert_eq!(
            (a.items, a.bytes, a.lag_ms, a.failed_messages),
            (5, 15, 7, 1)
        );
        let failures: Vec<_> = a.failures().iter().map(|(r, n)| (r.as_str(), *n)).collect();
        assert_eq!(failures, [("panic", 1), ("storage", 2)]);
    }

    #[test]
    fn metrics_follow_the_declaration_with_their_units() {
        let counts = Counts {
            items: 1,
            bytes: 2,
            lag_ms: 3,
            failed_messages: 4,
            ..Counts::default()
        };
        let metric = |name, value, unit| Metric { name, value, unit };
        assert_eq!(
            counts.metrics(),
            [
                metric("Items", 1, Unit::Count),
                metric("Bytes", 2, Unit::Bytes),
                metric("LagMs", 3, Unit::Milliseconds),
                metric("FailedMessages", 4, Unit::Count),
            ]
        );
    }

    /// Collects what the subscriber writes.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_log_line_has_the_logged_counters_then_the_duration() {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .json()
            .flatten_event(true)
            .with_writer(move || writer.clone())
            .finish();
        let counts = Counts {
            items: 1,
            bytes: 2,
            lag_ms: 3,
            failed_messages: 4,
            ..Counts::default()
        };
        tracing::subscriber::with_default(subscriber, || counts.log_batch(9));
        let line = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        let line: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
        let mut fields: Vec<_> = line.as_object().unwrap().keys().cloned().collect();
        fields.sort();
        let mut expected = [
            "timestamp",
            "level",
            "message",
            "target",
            "items",
            "lag_ms",
            "failed_messages",
            "duration_ms",
        ];
        expected.sort();
        assert_eq!(fields, expected, "{line}");
        assert_eq!(line["message"], "batch done");
        assert_eq!(
            (line["items"].as_u64(), line["lag_ms"].as_u64()),
            (Some(1), Some(3))
        );
        assert_eq!(line["duration_ms"], 9);
    }
}
