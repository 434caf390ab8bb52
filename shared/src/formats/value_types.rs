//! Which of a profile's sample types measures CPU or wall time: one rule shared by the
//! formats that name their sample types with a `(type, unit)` pair (pprof, OTLP).
//!
//! The rule, in order, over the sample types of one profile (pprof) or of one scope's
//! profiles (OTLP):
//! 1. a type named `cpu` (or `cpu-time`, `cpu_time`, `on_cpu`) with a time unit is the CPU-time
//!    series; a type named `wall` (or `wall-time`, `wall_time`, `wallclock`) with a time unit is
//!    the wall-time series;
//!
//!    1b. failing that, a type named `cpu` (or `wall`) whose unit counts samples (`count`,
//!    `samples`, none) is that series, each sample standing for one sampling interval: pprof-rs
//!    writes `cpu/count`, with a `cpu/nanoseconds` period type or with none at all. Without a
//!    period its rate is unknown; Sample v2 lays it out at the default interval and the tables
//!    give it no nanoseconds;
//! 2. if there is no CPU-time type, a count type (`samples`/`sample`, unit `count`) whose
//!    period type is `cpu` is the CPU-time series, each sample standing for one period
//!    (eBPF profilers, Go's `samples/count` next to `cpu/nanoseconds`); the same for `wall`;
//! 3. everything else (allocations, off-CPU time, events) is `Other`.
//!
//! So a profile has at most one CPU-time and one wall-time series, and Sample v2 (which takes
//! CPU time, else wall time) never counts the same samples twice.

use crate::model::{time_unit_ns, SeriesKind};

/// One sample type as the input names it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ValueType<'a> {
    pub kind: &'a str,
    pub unit: &'a str,
}

fn is_cpu(kind: &str) -> bool {
    matches!(kind, "cpu" | "cpu-time" | "cpu_time" | "on_cpu" | "on-cpu")
}

fn is_wall(kind: &str) -> bool {
    matches!(kind, "wall" | "wall-time" | "wall_time" | "wallclock")
}

fn counts_samples(unit: &str) -> bool {
    matches!(unit, "count" | "samples" | "")
}

fn is_count(t: ValueType) -> bool {
    matches!(t.kind, "samples" | "sample") && matches!(t.unit, "count" | "")
}

/// The series kind of each sample type, by the rule in the module docs.
pub(crate) fn classify(types: &[ValueType], period_type: Option<ValueType>) -> Vec<SeriesKind> {
    let timed =
        |t: &ValueType, pick: fn(&str) -> bool| pick(t.kind) && time_unit_ns(t.unit).is_some();
    let counted = |t: &ValueType, pick: fn(&str) -> bool| pick(t.kind) && counts_samples(t.unit);
    let first = |pick: fn(&str) -> bool| {
        let named = (types.iter().position(|t| timed(t, pick)))
            .or_else(|| types.iter().position(|t| counted(t, pick)));
        named.or_else(|| {
            let period_matches = period_type.is_some_and(|p| pick(p.kind));
            period_matches
                .then(|| types.iter().position(|t| is_count(*t)))
                .flatten()
        })
    };
    let cpu = first(is_cpu);
    let wall = first(is_wall).filter(|&w| Some(w) != cpu);
    (0..types.len())
        .map(|i| {
            if Some(i) == cpu {
                SeriesKind::CpuTime
            } else if Some(i) == wall {
                SeriesKind::WallTime
            } else {
                SeriesKind::Other
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vt<'a>(kind: &'a str, unit: &'a str) -> ValueType<'a> {
        ValueType { kind, unit }
    }

    #[test]
    fn cpu_type_wins_over_sample_counts() {
        let kinds = classify(
            &[vt("samples", "count"), vt("cpu", "nanoseconds")],
            Some(vt("cpu", "nanoseconds")),
        );
        assert_eq!(kinds, [SeriesKind::Other, SeriesKind::CpuTime]);
    }

    #[test]
    fn sample_counts_with_a_cpu_period_are_cpu_time() {
        let kinds = classify(&[vt("samples", "count")], Some(vt("cpu", "nanoseconds")));
        assert_eq!(kinds, [SeriesKind::CpuTime]);
        let kinds = classify(&[vt("samples", "count")], Some(vt("space", "bytes")));
        assert_eq!(kinds, [SeriesKind::Other]);
    }

    #[test]
    fn a_cpu_type_counting_samples_is_cpu_time() {
        // pprof-rs: `cpu/count`, with no period type or a `cpu/nanoseconds` one.
        for period in [None, Some(vt("cpu", "nanoseconds"))] {
            assert_eq!(
                classify(&[vt("cpu", "count")], period),
                [SeriesKind::CpuTime]
            );
        }
        for unit in ["samples", ""] {
            assert_eq!(classify(&[vt("cpu", unit)], None), [SeriesKind::CpuTime]);
        }
        assert_eq!(
            classify(&[vt("wall", "count")], None),
            [SeriesKind::WallTime]
        );
        // Counted, not timed: bytes or events named `cpu` are not CPU time.
        assert_eq!(classify(&[vt("cpu", "bytes")], None), [SeriesKind::Other]);
    }

    #[test]
    fn a_timed_cpu_type_wins_over_a_counted_one() {
        let kinds = classify(
            &[vt("cpu", "count"), vt("cpu", "nanoseconds")],
            Some(vt("cpu", "nanoseconds")),
        );
        assert_eq!(kinds, [SeriesKind::Other, SeriesKind::CpuTime]);
    }

    #[test]
    fn a_counted_cpu_type_wins_over_sample_counts() {
        let kinds = classify(
            &[vt("samples", "count"), vt("cpu", "count")],
            Some(vt("cpu", "nanoseconds")),
        );
        assert_eq!(kinds, [SeriesKind::Other, SeriesKind::CpuTime]);
    }

    #[test]
    fn wall_and_allocations() {
        let kinds = classify(
            &[
                vt("samples", "count"),
                vt("wall", "microseconds"),
                vt("alloc_space", "bytes"),
                vt("off_cpu", "nanoseconds"),
            ],
            Some(vt("wall", "microseconds")),
        );
        assert_eq!(
            kinds,
            [
                SeriesKind::Other,
                SeriesKind::WallTime,
                SeriesKind::Other,
                SeriesKind::Other
            ]
        );
    }
}
