//! The samples of a streamed recording between their arrival and their window's turn.
//!
//! A trace's samples arrive in file order, which is time order only roughly (each CPU's or
//! thread's sequence is written in chunks that interleave). The decoder's first pass says,
//! for every point in the file, how early any later sample can still be (the watermark); a
//! window whose end the watermark has passed can get no more samples, so its samples leave
//! the buffer, sorted by time, to be written. The buffer holds about one window of samples,
//! packed as the model packs them, whatever the length of the recording.
//!
//! Where the windows start, the earliest sample, is only known once the watermark has passed
//! the earliest sample seen; until then samples wait. Times are kept as the decoder gives
//! them and moved by the anchoring offset (known with the earliest sample) as they leave.

use crate::model::{Sample, SampleTable};
use crate::pipeline::clock::Anchor;
use crate::plan::Grid;

/// How many samples may wait before those the watermark has passed are handed out as a part
/// of a window not complete yet: a window is held whole only when it is smaller.
pub(crate) const PART_SAMPLES: usize = 1 << 16;

/// Samples waiting for their window to be complete.
pub(crate) struct PendingSamples {
    anchor: Anchor,
    /// The grid and the offset from the decoder's times to the outputs', once known.
    grid: Option<(Grid, i64)>,
    /// The earliest time pushed; once the grid is fixed, the earliest of all.
    least: Option<i64>,
    pending: SampleTable,
    /// The first window not handed out yet: every sample before it has been.
    next: i64,
    /// In the decoder's times, where window `next` starts (a sample before it is late) and
    /// where the window after it starts (a watermark past it completes `next`): compared
    /// with every sample, so worked out only when `next` or the grid changes.
    late_before: i64,
    ready_at: i64,
    /// How many more samples must wait before a part is tried again: a try sorts them all.
    part_samples: usize,
    part_at: usize,
}

impl PendingSamples {
    pub fn new(anchor: Anchor) -> Self {
        PendingSamples {
            anchor,
            grid: None,
            least: None,
            pending: SampleTable::default(),
            next: i64::MIN,
            late_before: i64::MIN,
            ready_at: i64::MIN,
            part_samples: PART_SAMPLES,
            part_at: PART_SAMPLES,
        }
    }

    /// Buffers that hand out parts of a window once `samples` wait.
    #[cfg(test)]
    pub fn with_part_samples(self, samples: usize) -> Self {
        PendingSamples {
            part_samples: samples,
            part_at: samples,
            ..self
        }
    }

    /// Moves `next` on to `window`, and the times compared with it.
    fn advance(&mut self, window: i64) {
        self.next = self.next.max(window);
        if let Some((grid, offset)) = self.grid {
            let start = |n: i64| grid.start(n).saturating_sub(offset);
            self.late_before = start(self.next);
            self.ready_at = start(self.next.saturating_add(1));
        }
    }

    /// The grid, once fixed.
    pub fn grid(&self) -> Option<Grid> {
        self.grid.map(|(grid, _)| grid)
    }

    fn window(&self, time: i64) -> i64 {
        window_of(self.grid, time)
    }

    /// Adds a sample with a time, as the decoder gives it.
    #[inline]
    pub fn push(&mut self, sample: Sample) {
        if let Some(t) = sample.time {
            self.least = Some(self.least.map_or(t, |l| l.min(t)));
        }
        self.pending.push(sample);
    }

    /// Fixes the grid once no sample to come can be earlier than the earliest pushed.
    fn fix_grid(&mut self, watermark: Option<i64>) -> Option<(Grid, i64)> {
        if self.grid.is_none() {
            let first = self.least?;
            if watermark.is_some_and(|w| w < first) {
                return None;
            }
            let offset = match self.anchor {
                Anchor::Keep => 0,
                Anchor::FirstAt(start) => start.saturating_sub(first),
            };
            self.grid = Some((Grid::from_first(first.saturating_add(offset)), offset));
            self.advance(self.next);
        }
        self.grid
    }

    /// Whether a sample at `time` belongs to a window already handed out: the watermark it
    /// came after was wrong.
    #[inline]
    pub fn is_late(&self, time: i64) -> bool {
        self.grid.is_some() && (time < self.late_before || self.least > Some(time))
    }

    /// Whether [`take`](PendingSamples::take) at `watermark` could hand out a window.
    #[inline]
    pub fn ready(&self, watermark: Option<i64>) -> bool {
        if self.pending.is_empty() {
            return false;
        }
        match (self.grid, watermark) {
            (_, None) => true,
            (None, Some(w)) => self.least.is_some_and(|first| w >= first),
            (Some(_), Some(w)) => w >= self.ready_at,
        }
    }

    /// Hands out the samples of every window before the one holding `watermark` (every
    /// sample when `None`: none is left to come), in time order (stable) and moved by the
    /// anchoring offset; `None` when there are none to hand out yet.
    pub fn take(&mut self, watermark: Option<i64>) -> Option<SampleTable> {
        let (_, offset) = self.fix_grid(watermark)?;
        let before = watermark.map_or(i64::MAX, |t| self.window(t));
        // Sorted in place, the samples to hand out are a prefix, and only the few after it
        // are copied: the buffer is never held twice.
        let grid = self.grid;
        let at = self.sorted_split(|time| window_of(grid, time) < before);
        let kept = self.pending.split_off(at);
        let out = std::mem::replace(&mut self.pending, kept);
        self.advance(before);
        tracing::debug!(
            windows_before = before,
            written = out.len(),
            waiting = self.pending.len(),
            "windows complete"
        );
        self.hand_out(out, offset)
    }

    /// When many samples wait in a window not complete at `watermark`, hands out those
    /// before the watermark, a part of the window, as [`take`](PendingSamples::take) would
    /// (in time order, moved by the offset). A sample earlier than the watermark is late from
    /// then on.
    pub fn take_part(&mut self, watermark: i64) -> Option<SampleTable> {
        if self.pending.len() < self.part_at {
            return None;
        }
        let (_, offset) = self.fix_grid(Some(watermark))?;
        if watermark >= self.ready_at {
            return None; // the window is complete: `take` hands it out whole
        }
        // Cut where the watermark's microsecond starts: the tables order rows of one
        // microsecond by profile, so a microsecond is never split between two parts.
        let output_us = watermark.saturating_add(offset).div_euclid(1_000);
        let cut = output_us.saturating_mul(1_000).saturating_sub(offset);
        let at = self.sorted_split(|time| time < cut);
        let kept = self.pending.split_off(at);
        let out = std::mem::replace(&mut self.pending, kept);
        self.part_at = self.pending.len() + self.part_samples;
        self.late_before = self.late_before.max(cut);
        tracing::debug!(
            before = cut,
            written = out.len(),
            waiting = self.pending.len(),
            "part of a window"
        );
        self.hand_out(out, offset)
    }

    /// Sorts the samples waiting by time (stably) and gives how many come first for which
    /// `before` holds of their time (a sample without one counts as the earliest): `before`
    /// must hold of a prefix of the times.
    fn sorted_split(&mut self, before: impl Fn(i64) -> bool) -> usize {
        self.pending.sort_by_time();
        let time = |i: usize| self.pending.time(i).unwrap_or(i64::MIN);
        let (mut lo, mut hi) = (0, self.pending.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if before(time(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    fn hand_out(&mut self, mut out: SampleTable, offset: i64) -> Option<SampleTable> {
        if out.is_empty() {
            return None;
        }
        if offset != 0 {
            out.map_times(|t| t.map(|t| t.saturating_add(offset)));
        }
        out.shrink_to_fit();
        Some(out)
    }
}

/// The window of the grid (with the offset from the decoder's times) a decoder's time is in;
/// before any window while the grid is not fixed.
fn window_of(grid: Option<(Grid, i64)>, time: i64) -> i64 {
    match grid {
        Some((grid, offset)) => grid.window(time.saturating_add(offset)),
        None => i64::MIN,
    }
}
