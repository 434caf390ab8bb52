//! The time windows every output is cut into.
//!
//! Sample v2 chunks and table profiles both span at most 60 s, and both are cut on one grid:
//! windows of [`WINDOW_NS`] counted from the profile's first timed sample (floored to a
//! microsecond). A process or series that starts late has its windows on the same boundaries
//! as every other, so a window's outputs depend on that window's samples alone, and a long
//! recording can be converted one window at a time.

use crate::model::{Profile, Sample, SampleTable};
use crate::plan::rows::Rows;

/// Span of one window: the SDKs' 60 s chunks (Relay allows 66 s).
pub const WINDOW_NS: i64 = 60_000_000_000;

/// Where windows start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grid {
    /// Start of window 0, ns since the epoch: a microsecond, so no two windows share the
    /// microsecond the tables store times in.
    pub origin_ns: i64,
}

impl Grid {
    /// The grid of windows from `first_ns`, the earliest sample time.
    pub fn from_first(first_ns: i64) -> Grid {
        Grid {
            origin_ns: first_ns.div_euclid(1000).saturating_mul(1000),
        }
    }

    /// The grid of `profile`'s timed samples; `None` when none has a time.
    pub fn of(profile: &Profile) -> Option<Grid> {
        let samples = profile.samples();
        (0..samples.len())
            .filter_map(|i| samples.time(i))
            .min()
            .map(Grid::from_first)
    }

    /// The window holding time `t` (never before the origin for a sample of the profile).
    #[inline]
    pub fn window(self, t: i64) -> i64 {
        match t.checked_sub(self.origin_ns) {
            Some(d) => d.div_euclid(WINDOW_NS),
            // Only times some 292 years from the origin get here.
            None => {
                let d = i128::from(t) - i128::from(self.origin_ns);
                let n = d.div_euclid(i128::from(WINDOW_NS));
                i64::try_from(n).unwrap_or(if n < 0 { i64::MIN } else { i64::MAX })
            }
        }
    }

    /// Instant `k` of a sampling `interval_ns` apart from the origin, saturated at the ends of
    /// time.
    pub fn start_at(self, k: i64, interval_ns: i64) -> i64 {
        let t = i128::from(self.origin_ns) + i128::from(k) * i128::from(interval_ns);
        i64::try_from(t).unwrap_or(if t < 0 { i64::MIN } else { i64::MAX })
    }

    /// Where window `n` starts, saturated at the ends of time.
    pub fn start(self, n: i64) -> i64 {
        self.start_at(n, WINDOW_NS)
    }
}

/// Cuts every stretch of a span series that crosses a window boundary into one stretch per
/// window, so that each window's table rows and chunks hold exactly the time spent in it.
/// Samples of other series are points in time and stay as they are; so does a profile without
/// span series.
pub(crate) fn cut_spans_at_windows(profile: &mut Profile) {
    let spans: Vec<bool> = profile.all_series().map(|(_, s)| s.spans).collect();
    let Some(grid) = Grid::of(profile) else {
        return;
    };
    let samples = profile.samples();
    let crosses = |i: usize| {
        spans[samples.series(i).index()]
            && samples.time(i).is_some_and(|t| {
                let w = samples.weight(i);
                w > 1 && grid.window(t) != grid.window(t.saturating_add(w - 1))
            })
    };
    if !(0..samples.len()).any(crosses) {
        return;
    }
    let mut cut = SampleTable::default();
    for i in 0..samples.len() {
        let sample = samples.get(i);
        let (Some(mut t), true) = (sample.time, crosses(i)) else {
            cut.push(sample);
            continue;
        };
        let end = t.saturating_add(sample.weight);
        while t < end {
            let next = grid.start(grid.window(t) + 1).min(end);
            cut.push(Sample {
                time: Some(t),
                weight: next - t,
                ..sample
            });
            t = next;
        }
    }
    profile.replace_samples(cut);
    profile.sort_samples_by_time();
}

/// One window of [`time_windows`].
#[derive(Debug)]
pub(crate) struct TimeWindow {
    /// Its number on the grid.
    pub number: i64,
    /// Its first and last sample's time.
    pub first_ns: i64,
    pub last_ns: i64,
    pub rows: Rows,
}

/// Cuts positions of samples in time order into the windows of `grid`; `time` gives a
/// position's time.
pub(crate) fn time_windows(
    timed: impl Iterator<Item = u32>,
    time: impl Fn(u32) -> i64,
    grid: Grid,
) -> Vec<TimeWindow> {
    let mut windows: Vec<TimeWindow> = Vec::new();
    // Where the last window ends: in time order, a sample before it is in that window, so
    // the window is worked out only for a sample that starts a new one.
    let mut end = i64::MIN;
    for row in timed {
        let t = time(row);
        match windows.last_mut() {
            Some(w) if t < end => {
                w.last_ns = t;
                w.rows.push(row);
            }
            last => {
                if let Some(w) = last {
                    w.rows.shrink_to_fit();
                }
                let number = grid.window(t);
                end = grid.start(number.saturating_add(1));
                let mut rows = Rows::new();
                rows.push(row);
                windows.push(TimeWindow {
                    number,
                    first_ns: t,
                    last_ns: t,
                    rows,
                });
            }
        }
    }
    if let Some(w) = windows.last_mut() {
        w.rows.shrink_to_fit();
    }
    windows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_counted_from_the_first_microsecond() {
        let grid = Grid::from_first(1_700_000_000_123_456_789);
        assert_eq!(grid.origin_ns, 1_700_000_000_123_456_000);
        assert_eq!(grid.window(1_700_000_000_123_456_789), 0);
        assert_eq!(grid.window(grid.origin_ns + WINDOW_NS - 1), 0);
        assert_eq!(grid.window(grid.origin_ns + WINDOW_NS), 1);
        assert_eq!(grid.start(2), grid.origin_ns + 2 * WINDOW_NS);
        // Times before 1970 floor towards the past, so the first sample is in window 0.
        let before = Grid::from_first(-1_500);
        assert_eq!(before.origin_ns, -2_000);
        assert_eq!(before.window(-1_500), 0);
        // The ends of time saturate rather than overflow.
        let far = Grid::from_first(i64::MIN);
        assert!(far.window(i64::MAX) > 0);
        assert_eq!(far.start(i64::MAX), i64::MAX);
    }

    #[test]
    fn positions_in_time_order_fall_into_their_grid_windows() {
        let grid = Grid::from_first(0);
        // Samples every 7 s for 200 s, and one more after a gap of two empty windows.
        let mut times: Vec<i64> = (0..29).map(|i| i * 7_000_000_000).collect();
        times.push(370_000_000_000);
        let windows = time_windows(0..times.len() as u32, |i| times[i as usize], grid);
        let numbers: Vec<i64> = windows.iter().map(|w| w.number).collect();
        assert_eq!(numbers, [0, 1, 2, 3, 6]);
        for w in &windows {
            for row in &w.rows {
                assert_eq!(grid.window(times[row as usize]), w.number);
            }
            assert_eq!(w.first_ns, times[w.rows.first().unwrap() as usize]);
            assert_eq!(w.last_ns, times[w.rows.last().unwrap() as usize]);
        }
        assert_eq!(
            windows.iter().map(|w| w.rows.len()).sum::<usize>(),
            times.len()
        );
    }

    /// Process 1 is sampled for 150 s; process 2 starts 45 s in and stops 60 s later.
    fn late_starter() -> Profile {
        use crate::model::{Frame, FrameKind, Sample, Series, SeriesKind};
        let mut p = Profile::new("test");
        let (name, unit) = (p.intern("cpu"), p.intern("nanoseconds"));
        let series = p.add_series(Series {
            kind: SeriesKind::CpuTime,
            name,
            unit,
            source: None,
            frequency_hz: None,
            period: None,
            spans: false,
        });
        let frame = p.add_frame(Frame::new(FrameKind::Native));
        let stack = p.add_stack(None, frame);
        let first = p.add_process(Some(1));
        let first = p.add_thread(first, Some(1));
        let late = p.add_process(Some(2));
        let late = p.add_thread(late, Some(2));
        let t0 = 1_700_000_000_000_000_500;
        for i in 0..1_500i64 {
            let t = t0 + i * 100_000_000;
            for (thread, from, to) in [(first, 0, 150), (late, 45, 105)] {
                if (from * 10..to * 10).contains(&i) {
                    let mut s = Sample::new(thread, Some(stack), 1, series);
                    s.time = Some(t);
                    p.add_sample(s);
                }
            }
        }
        p
    }

    #[test]
    fn a_late_process_is_cut_on_the_grid_of_the_first() {
        use crate::metadata::UploadMetadata;
        use crate::plan::{plan_sample_v2, plan_tables};
        let p = late_starter();
        let grid = Grid::of(&p).unwrap();
        assert_eq!(grid.origin_ns, 1_700_000_000_000_000_000);
        let tables = plan_tables(&p, "upload").unwrap();
        let chunks = plan_sample_v2(&p, &UploadMetadata::default(), "upload").unwrap();
        let mut table_windows: Vec<(Option<i64>, i64, i64)> = tables
            .iter()
            .map(|t| (p.process(t.process).pid, t.window.unwrap(), t.start_ns))
            .collect();
        table_windows.sort();
        let mut chunk_windows: Vec<(Option<i64>, i64)> =
            chunks.chunks.iter().map(|c| (c.pid, c.window)).collect();
        chunk_windows.sort();
        // The late process's 60 s fall into windows 0 and 1 of the first one's grid, not
        // into one window of its own.
        let expected = [
            (Some(1), 0),
            (Some(1), 1),
            (Some(1), 2),
            (Some(2), 0),
            (Some(2), 1),
        ];
        assert_eq!(chunk_windows, expected);
        let numbered: Vec<(Option<i64>, i64)> =
            table_windows.iter().map(|&(pid, w, _)| (pid, w)).collect();
        assert_eq!(numbered, expected);
        for t in &tables {
            let w = t.window.unwrap();
            assert!(grid.start(w) <= t.start_ns && t.end_ns < grid.start(w + 1));
        }
        for c in &chunks.chunks {
            for s in c.samples.iter(&p) {
                assert_eq!(grid.window(p.samples().time(s.index).unwrap()), c.window);
            }
        }
        // Every sample is in exactly one table profile.
        assert_eq!(
            tables.iter().map(|t| t.samples.len()).sum::<usize>(),
            p.samples().len()
        );
    }
}
