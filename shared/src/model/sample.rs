//! Samples and the series they belong to.

use super::{LabelSetHandle, LinkHandle, SeriesHandle, StackHandle, StringHandle, ThreadHandle};

/// What a series of samples measures. Writers that only take time-based profiles (Sample v2)
/// pick their series by this.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SeriesKind {
    /// On-CPU time (perf `cpu-clock`/`task-clock`, pprof `cpu`).
    CpuTime,
    /// Wall-clock time, on or off CPU.
    WallTime,
    /// Anything else: hardware events, page faults, allocations.
    Other,
}

impl SeriesKind {
    /// Lowercase name, as the tables and the manifest spell it.
    pub fn name(self) -> &'static str {
        match self {
            SeriesKind::CpuTime => "cpu_time",
            SeriesKind::WallTime => "wall_time",
            SeriesKind::Other => "other",
        }
    }
}

/// One sample series: a sampling session and the unit of its weights.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Series {
    /// What it measures.
    pub kind: SeriesKind,
    /// Name of the measured event (`cpu-clock`, `wall-time`, `page-faults`).
    pub name: StringHandle,
    /// Unit of the measured event (`ns`, `count`, `cycles`, `bytes`).
    pub unit: StringHandle,
    /// Where the samples came from (`linux.perf`, `chrome`, a producer's own source name).
    pub source: Option<StringHandle>,
    /// Sampling frequency in Hz, when the producer sampled at a fixed frequency.
    pub frequency_hz: Option<u64>,
    /// Sampling period in `unit`, when the producer sampled every N units.
    pub period: Option<u64>,
    /// Whether the samples are spans rather than samples: each weighs the nanoseconds from its
    /// time during which its stack of spans was open. Such a series can be cut at any instant,
    /// and Sample v2 carries it only as samples taken at a fixed interval.
    pub spans: bool,
}

/// The processor mode a sample was taken in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum CpuMode {
    /// Not recorded.
    #[default]
    Unknown,
    /// Kernel mode.
    Kernel,
    /// User mode.
    User,
    /// Hypervisor.
    Hypervisor,
    /// Guest kernel.
    GuestKernel,
    /// Guest user space.
    GuestUser,
}

impl CpuMode {
    /// Every mode, in the order of their discriminants (perf's numbering).
    pub(crate) const ALL: [CpuMode; 6] = [
        CpuMode::Unknown,
        CpuMode::Kernel,
        CpuMode::User,
        CpuMode::Hypervisor,
        CpuMode::GuestKernel,
        CpuMode::GuestUser,
    ];

    /// Lowercase name, as trace_processor spells it.
    pub fn name(self) -> &'static str {
        match self {
            CpuMode::Unknown => "unknown",
            CpuMode::Kernel => "kernel",
            CpuMode::User => "user",
            CpuMode::Hypervisor => "hypervisor",
            CpuMode::GuestKernel => "guest_kernel",
            CpuMode::GuestUser => "guest_user",
        }
    }
}

/// One sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// When it was taken: ns since the Unix epoch, or since the trace clock's origin when the
    /// profile has no wall-clock reference (see [`Timestamps`](super::Timestamps)).
    /// `None` for aggregated inputs that carry no per-sample time.
    pub time: Option<i64>,
    /// The thread it was taken on.
    pub thread: ThreadHandle,
    /// The leaf of its stack; `None` when the producer recorded no stack (unwinding failed or
    /// was skipped).
    pub stack: Option<StackHandle>,
    /// Weight in the series' unit (1 for one sample of a fixed-rate sampler).
    pub weight: i64,
    /// The series it belongs to.
    pub series: SeriesHandle,
    /// The CPU it ran on.
    pub cpu: Option<u32>,
    /// Processor mode.
    pub cpu_mode: CpuMode,
    /// Why the stack is incomplete, as the producer said (unwinder error name).
    pub unwind_error: Option<StringHandle>,
    /// The sampler's running counter value at this sample (perf timebase count).
    pub counter: Option<u64>,
    /// Labels the producer attached (pprof labels, OTLP sample attributes).
    pub labels: Option<LabelSetHandle>,
    /// The trace span the sample was taken in.
    pub link: Option<LinkHandle>,
}

impl Sample {
    /// A sample with nothing but its thread, stack, weight and series; every other field is
    /// unknown until set.
    pub fn new(
        thread: ThreadHandle,
        stack: Option<StackHandle>,
        weight: i64,
        series: SeriesHandle,
    ) -> Self {
        Sample {
            time: None,
            thread,
            stack,
            weight,
            series,
            cpu: None,
            cpu_mode: CpuMode::Unknown,
            unwind_error: None,
            counter: None,
            labels: None,
            link: None,
        }
    }
}

/// Unix seconds as SDKs send them (f64) to ns since the epoch. f64 seconds carry ~0.2 µs at
/// today's epoch, so the result is rounded to whole microseconds.
pub(crate) fn seconds_to_ns(seconds: f64) -> i64 {
    // Inputs are checked with `checked_seconds_to_ns`; saturating keeps a time that slipped
    // past a check from overflowing.
    ((seconds * 1e6).round() as i64).saturating_mul(1000)
}

/// [`seconds_to_ns`], or `None` for a time that is not finite or that ns since the epoch in
/// an `i64` cannot hold (before 1677 or after 2262): the check for times read from an input.
pub(crate) fn checked_seconds_to_ns(seconds: f64) -> Option<i64> {
    let micros = (seconds * 1e6).round();
    // `as` saturates, so a time far out of range ends in the overflow of the multiplication.
    micros
        .is_finite()
        .then(|| (micros as i64).checked_mul(1000))
        .flatten()
}

/// The unit of counts scaled by 10^`decimals` to keep fractional counts exact in integer
/// weights: `count`, or `count*1e-D` (a weight of 25 in `count*1e-2` is 0.25 samples).
pub(crate) fn scaled_count_unit(decimals: usize) -> String {
    match decimals {
        0 => "count".to_owned(),
        d => format!("count*1e-{d}"),
    }
}

/// How many weight units make one sample in a unit of counted samples: 1 for `count`,
/// 10^D for `count*1e-D` (D from 1 to 18); `None` for any other unit.
pub(crate) fn count_unit_scale(unit: &str) -> Option<i64> {
    if unit == "count" {
        return Some(1);
    }
    let decimals = unit.strip_prefix("count*1e-")?;
    if decimals.starts_with('0') || !decimals.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    10i64.checked_pow(decimals.parse().ok()?)
}

/// Nanoseconds per unit for the time units profilers write (`nanoseconds`, `ns`, `ms`, ...);
/// `None` for anything that is not a time.
pub fn time_unit_ns(unit: &str) -> Option<i64> {
    Some(match unit {
        "nanoseconds" | "nanosecond" | "ns" => 1,
        "microseconds" | "microsecond" | "us" | "µs" => 1_000,
        "milliseconds" | "millisecond" | "ms" => 1_000_000,
        "seconds" | "second" | "s" => 1_000_000_000,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trace holds millions of samples, so each byte here is megabytes of every large
    /// conversion's memory: handles are niche-packed so that `Option`s of them cost nothing.
    #[test]
    fn a_sample_takes_80_bytes() {
        assert_eq!(std::mem::size_of::<Sample>(), 80);
    }

    #[test]
    fn cpu_modes_are_listed_by_discriminant() {
        for (i, mode) in CpuMode::ALL.into_iter().enumerate() {
            assert_eq!(mode as usize, i, "{mode:?}");
        }
    }

    #[test]
    fn scaled_count_units_round_trip() {
        for decimals in 0..=9 {
            let unit = scaled_count_unit(decimals);
            assert_eq!(
                count_unit_scale(&unit),
                Some(10i64.pow(decimals as u32)),
                "{unit}"
            );
        }
        assert_eq!(scaled_count_unit(2), "count*1e-2");
        for other in [
            "counts",
            "count*1e-",
            "count*1e-02",
            "count*1e-x",
            "count*1e-99",
            "ns",
        ] {
            assert_eq!(count_unit_scale(other), None, "{other}");
        }
    }
}
