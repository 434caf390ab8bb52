//! Sample v2's view of a span series: samples taken at a fixed interval.
//!
//! Sample v2 holds samples, one stack at one instant, and Sentry reads their spacing as the
//! sampling rate. A span series holds stretches of time instead (see `formats::spans`), so
//! it is sampled the way a wall-clock sampler would have sampled it:
//! - instants are `interval` apart on the upload's window grid (`origin + k × interval`), the
//!   same instants for every thread;
//! - at each instant, each thread with a span open gets one sample with the stack of the spans
//!   open then;
//! - a stretch shorter than the interval that no instant falls in is left out, and counted;
//! - the interval is [`DEFAULT_SPAN_INTERVAL_NS`] unless configured, at least
//!   [`MIN_INTERVAL_NS`]; when the instants would exceed [`MAX_EXPANDED_SAMPLES`] the interval
//!   is multiplied until they do not, and the chunk and manifest say from how many.

use super::grid::Grid;
use super::timeline::{PlannedSample, MAX_EXPANDED_SAMPLES, MIN_INTERVAL_NS};
use crate::model::Profile;

/// Spacing of the samples taken of span series unless configured: 10 ms (100 Hz).
pub const DEFAULT_SPAN_INTERVAL_NS: i64 = 10_000_000;

/// The instants one stretch `[time, time + weight)` holds: `(first k, count)`.
fn instants(origin: i64, interval: i64, time: i64, weight: i64) -> (i64, u64) {
    let from = time.saturating_sub(origin);
    let to = from.saturating_add(weight);
    // The first k with origin + k·interval ≥ time, and the first with it ≥ time + weight.
    let first = from.div_euclid(interval) + i64::from(from.rem_euclid(interval) != 0);
    let end = to.div_euclid(interval) + i64::from(to.rem_euclid(interval) != 0);
    (first, u64::try_from(end - first).unwrap_or(0))
}

/// The samples taken of the stretches at `rows` (positions of timed samples with a stack),
/// their spacing, and how many there would have been at the requested spacing when that was
/// too many.
pub(crate) struct SpanSamples {
    pub samples: Vec<PlannedSample>,
    pub interval_ns: i64,
    pub scaled_from: Option<u64>,
}

/// Samples the stretches at `rows` every `requested_ns` on `grid`.
pub(crate) fn sample_spans(
    profile: &Profile,
    rows: impl Iterator<Item = usize> + Clone,
    grid: Grid,
    requested_ns: i64,
) -> SpanSamples {
    let samples = profile.samples();
    let stretch = |i: usize| (samples.time(i).unwrap_or(0), samples.weight(i));
    let count = |interval: i64| -> u64 {
        rows.clone()
            .map(|i| {
                let (t, w) = stretch(i);
                instants(grid.origin_ns, interval, t, w).1
            })
            .fold(0u64, u64::saturating_add)
    };
    let mut interval_ns = requested_ns.max(MIN_INTERVAL_NS);
    let total = count(interval_ns);
    let scaled_from = (total > MAX_EXPANDED_SAMPLES).then_some(total);
    if scaled_from.is_some() {
        let factor = total.div_ceil(MAX_EXPANDED_SAMPLES);
        interval_ns = interval_ns.saturating_mul(i64::try_from(factor).unwrap_or(i64::MAX));
    }
    let mut out = Vec::with_capacity(usize::try_from(total.min(MAX_EXPANDED_SAMPLES)).unwrap_or(0));
    for index in rows {
        let (t, w) = stretch(index);
        let (first, n) = instants(grid.origin_ns, interval_ns, t, w);
        let n = i64::try_from(n).unwrap_or(i64::MAX);
        if n == 0 {
            continue;
        }
        // The shares of the stretch's time add up to it: the first `rest` take one ns more.
        let (share, rest) = (w / n, w % n);
        for k in 0..n {
            out.push(PlannedSample {
                time: grid.start_at(first + k, interval_ns),
                index,
                weight: share + i64::from(k < rest),
            });
        }
    }
    SpanSamples {
        samples: out,
        interval_ns,
        scaled_from,
    }
}

/// Whether a stretch holds an instant of the sampling grid, so that Sample v2 has a sample of
/// it (one left out for another reason is not "between samples").
pub(crate) fn holds_instant(grid: Grid, interval_ns: i64, time: i64, weight: i64) -> bool {
    instants(grid.origin_ns, interval_ns, time, weight).1 > 0
}

#[cfg(test)]
mod tests {
    use super::instants;

    #[test]
    fn instants_of_a_stretch_are_those_inside_it() {
        // [0, 10) at 3: 0, 3, 6, 9.
        assert_eq!(instants(0, 3, 0, 10), (0, 4));
        // [1, 3) at 3: none; [1, 4): 3.
        assert_eq!(instants(0, 3, 1, 2).1, 0);
        assert_eq!(instants(0, 3, 1, 3), (1, 1));
        // The end is not inside: [3, 6) at 3 holds 3 only.
        assert_eq!(instants(0, 3, 3, 3), (1, 1));
        // A stretch before the origin.
        assert_eq!(instants(10, 3, 4, 3), (-2, 1));
    }
}
