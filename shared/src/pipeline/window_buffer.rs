//! The samples of a streamed recording between their arrival and their window's turn.
//!
//! A trace's samples arrive in file order, which is time order only roughly (each CPU's or
//! thread's sequence is written in chunks that interleave). The decoder's first pass says,
//! for every point in the file, how early any later sample can still be (the watermark); a
//! window whose end the watermark has passed can get no more samples, so its samples leave
//! the buffer, sorted by time, to be written. The buffer holds about one window of samples,
//! packed as the model packs them, whatever the length of the recording.

use crate::model::{Profile, Sample, SampleTable};
use crate::plan::Grid;

/// Samples waiting for their window to be complete.
pub(crate) struct WindowBuffer {
    grid: Grid,
    pending: SampleTable,
    /// The first window not handed out yet: every sample before it has been.
    next: i64,
}

impl WindowBuffer {
    pub fn new(grid: Grid) -> Self {
        WindowBuffer {
            grid,
            pending: SampleTable::default(),
            next: i64::MIN,
        }
    }

    /// Adds a sample with a time.
    #[inline]
    pub fn push(&mut self, sample: Sample) {
        self.pending.push(sample);
    }

    /// Whether a sample at `time` belongs to a window already handed out: the watermark it
    /// came after was wrong.
    pub fn is_late(&self, time: i64) -> bool {
        self.grid.window(time) < self.next
    }

    /// Whether [`take`](WindowBuffer::take) at `watermark` would hand out a window.
    #[inline]
    pub fn ready(&self, watermark: Option<i64>) -> bool {
        !self.pending.is_empty() && watermark.is_none_or(|t| self.grid.window(t) > self.next)
    }

    /// Puts into `profile` the samples of every window before the one holding `watermark`
    /// (every sample when `None`: none is left to come), in time order (stable), and gives
    /// back the samples it held; `None` when there are none to hand out.
    pub fn take(&mut self, watermark: Option<i64>, profile: &mut Profile) -> Option<SampleTable> {
        let before = watermark.map_or(i64::MAX, |t| self.grid.window(t));
        // Sorted in place, the samples to hand out are a prefix, and only the few after it
        // are copied: the buffer is never held twice.
        self.pending.sort_by_time();
        let window = |i: usize| self.grid.window(self.pending.time(i).unwrap_or(i64::MIN));
        let (mut lo, mut hi) = (0, self.pending.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if window(mid) < before {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let kept = self.pending.split_off(lo);
        let mut out = std::mem::replace(&mut self.pending, kept);
        self.next = self.next.max(before);
        tracing::debug!(
            windows_before = before,
            written = out.len(),
            waiting = self.pending.len(),
            "windows complete"
        );
        if out.is_empty() {
            return None;
        }
        out.shrink_to_fit();
        Some(profile.replace_samples(out))
    }
}
