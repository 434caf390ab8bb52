//! When each written sample happened: recorded times where the input has them, otherwise a
//! timeline laid out from aggregated weights.
//!
//! Aggregated inputs (most pprof, folded stacks, OTLP values-only samples) say how much of
//! each stack was seen but not when. Sample v2 needs one timestamped sample per observation,
//! so the rule is:
//! - aggregated samples of one thread, stack and series are taken together, with the sum of
//!   their weights (Sample v2 cannot tell them apart);
//! - each stands for `weight / interval` observations when its series
//!   measures time (`weight` is converted from the series unit to ns), or `weight`
//!   observations when it counts samples (`weight / 10^D`, rounded, for fractional counts in
//!   `count*1e-D`);
//! - the interval is the series' sampling period, else `1 / frequency`, else
//!   [`DEFAULT_INTERVAL_NS`] (100 Hz, the common profiler default);
//! - observations are placed one interval apart on their own thread's timeline, starting at
//!   the profile's start time, in input order, so the same stack stays contiguous;
//! - writers then cut that timeline into ≤ 60 s chunks like any other.
//!
//! A sample with a weight under half an interval still counts once, so no stack disappears.
//!
//! The expansion is bounded: intervals are at least [`MIN_INTERVAL_NS`] (a 1 ns pprof period
//! would otherwise turn a second of CPU into a billion samples), and when the observations
//! still exceed [`MAX_EXPANDED_SAMPLES`] every count is scaled down by the same factor (each
//! stack keeping at least one), so proportions stay as they were and the timeline is shorter
//! by that factor. The chunk (`synthetic_timestamps.scaled_from`) and the manifest say when
//! that happened.
//! When a profile mixes timed and aggregated samples in the chosen series, only the timed
//! ones are written: their times are real, and laying synthetic ones beside them would
//! double-count the same threads.

use rustc_hash::FxHashMap;

use super::grid::Grid;
use super::rows::{Rows, RowsIter};
use super::span_sampling::sample_spans;
use crate::error::{ErrorKind, Result};
use crate::model::{
    count_unit_scale, time_unit_ns, Profile, Sample, SampleTable, SeriesHandle, StackHandle,
    ThreadHandle,
};

/// Spacing of expanded samples when the input names no period or frequency: 10 ms (100 Hz).
pub const DEFAULT_INTERVAL_NS: i64 = 10_000_000;

/// Most samples an upload's aggregated weights expand into before counts are scaled down:
/// 1,000 s at 100 Hz, a size Sentry's UI and memory handle well.
pub const MAX_EXPANDED_SAMPLES: u64 = 100_000;

/// Shortest spacing of expanded samples: 1 ms (1 kHz, the fastest common profiler rate).
pub const MIN_INTERVAL_NS: i64 = 1_000_000;

/// How the written samples got their times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timing {
    /// Times as recorded by the input.
    Recorded,
    /// Times laid out from aggregated weights, `interval_ns` apart (the smallest interval
    /// when series differ).
    Expanded {
        /// Spacing of consecutive samples of one thread.
        interval_ns: i64,
        /// The observations the weights stood for, when more than [`MAX_EXPANDED_SAMPLES`]
        /// and so scaled down; `None` when every observation was written.
        scaled_from: Option<u64>,
    },
    /// Times at which span series were sampled, `interval_ns` apart on the window grid
    /// (docs/outputs.md, "Spans in Sample v2").
    Spans {
        /// Spacing of the instants sampled.
        interval_ns: i64,
        /// The instants the requested spacing would have given, when more than
        /// [`MAX_EXPANDED_SAMPLES`] and so spaced further apart.
        scaled_from: Option<u64>,
    },
}

/// Spacing of one series' observations, in ns.
pub(crate) fn interval_ns(profile: &Profile, sample: &Sample) -> i64 {
    let series = profile.series(sample.series);
    let unit_ns = time_unit_ns(profile.str(series.unit));
    if let (Some(period), Some(unit_ns)) = (series.period, unit_ns) {
        let ns = i64::try_from(period)
            .unwrap_or(i64::MAX)
            .saturating_mul(unit_ns);
        if ns > 0 {
            return ns;
        }
    }
    match series.frequency_hz {
        Some(hz) if hz > 0 && hz <= 1_000_000_000 => 1_000_000_000 / hz as i64,
        _ => DEFAULT_INTERVAL_NS,
    }
}

/// The spacing of one series' expanded samples: its interval, at least [`MIN_INTERVAL_NS`].
fn expansion_interval_ns(profile: &Profile, sample: &Sample) -> i64 {
    interval_ns(profile, sample).max(MIN_INTERVAL_NS)
}

/// How many observations an aggregated sample stands for.
fn repetitions(profile: &Profile, sample: &Sample, interval: i64) -> u64 {
    if sample.weight <= 0 {
        return 0;
    }
    let unit = profile.str(profile.series(sample.series).unit);
    match time_unit_ns(unit) {
        Some(unit_ns) => {
            let total = i128::from(sample.weight) * i128::from(unit_ns);
            let n = (total + i128::from(interval) / 2) / i128::from(interval);
            u64::try_from(n).unwrap_or(u64::MAX).max(1)
        }
        None => match count_unit_scale(unit) {
            // Fractional counts: a weight of `scale` is one sample.
            Some(scale) if scale > 1 => {
                let n = (i128::from(sample.weight) + i128::from(scale) / 2) / i128::from(scale);
                u64::try_from(n).unwrap_or(u64::MAX).max(1)
            }
            _ => sample.weight as u64,
        },
    }
}

/// One sample as written: its time, ns since the Unix epoch, and its share of the model
/// sample's weight (the whole weight for recorded samples; expanded samples split it so the
/// shares add up to it exactly). The model sample's other fields are read from the profile by
/// `index`. Plans hold recorded samples as positions alone (see [`PlannedSamples`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlannedSample {
    /// When, ns since the Unix epoch.
    pub time: i64,
    /// The model sample's position in [`Profile::samples`].
    pub index: usize,
    /// Weight in the sample's series unit.
    pub weight: i64,
}

/// The samples of one chunk, or of all chunks before they are cut.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlannedSamples {
    /// Samples with recorded times, by position in [`Profile::samples`]: their times and
    /// weights are the model's, so they cost a few bytes per run of positions.
    Recorded(Rows),
    /// Samples laid out from aggregated weights (at most [`MAX_EXPANDED_SAMPLES`]).
    Expanded(Vec<PlannedSample>),
}

impl PlannedSamples {
    /// How many.
    pub fn len(&self) -> usize {
        match self {
            PlannedSamples::Recorded(v) => v.len(),
            PlannedSamples::Expanded(v) => v.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The first sample with its time and weight.
    pub fn first(&self, profile: &Profile) -> Option<PlannedSample> {
        match self {
            PlannedSamples::Recorded(v) => v.first().map(|p| p.planned(profile.samples())),
            PlannedSamples::Expanded(v) => v.first().copied(),
        }
    }

    /// The last sample with its time and weight.
    pub fn last(&self, profile: &Profile) -> Option<PlannedSample> {
        match self {
            PlannedSamples::Recorded(v) => v.last().map(|p| p.planned(profile.samples())),
            PlannedSamples::Expanded(v) => v.last().copied(),
        }
    }

    /// Each sample with its time and weight, in order.
    pub fn iter<'a>(&'a self, profile: &'a Profile) -> PlannedIter<'a> {
        PlannedIter {
            profile,
            inner: match self {
                PlannedSamples::Recorded(v) => Inner::Recorded(v.iter()),
                PlannedSamples::Expanded(v) => Inner::Expanded(v.iter()),
            },
        }
    }
}

/// The samples of [`PlannedSamples::iter`].
pub struct PlannedIter<'a> {
    profile: &'a Profile,
    inner: Inner<'a>,
}

enum Inner<'a> {
    Recorded(RowsIter<'a>),
    Expanded(std::slice::Iter<'a, PlannedSample>),
}

impl Iterator for PlannedIter<'_> {
    type Item = PlannedSample;

    #[inline]
    fn next(&mut self) -> Option<PlannedSample> {
        match &mut self.inner {
            Inner::Recorded(it) => it.next().map(|i| i.planned(self.profile.samples())),
            Inner::Expanded(it) => it.next().copied(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.inner {
            Inner::Recorded(it) => it.size_hint(),
            Inner::Expanded(it) => it.size_hint(),
        }
    }
}

impl ExactSizeIterator for PlannedIter<'_> {}

/// A planned sample as the plan holds it: a model sample's position, or a [`PlannedSample`].
pub(super) trait Planned: Copy {
    /// Its model sample's position in [`Profile::samples`].
    fn index(self) -> usize;
    /// It with its time and weight.
    fn planned(self, samples: &SampleTable) -> PlannedSample;
    /// Its time.
    fn time(self, samples: &SampleTable) -> i64 {
        self.planned(samples).time
    }
}

impl Planned for u32 {
    #[inline]
    fn index(self) -> usize {
        self as usize
    }

    #[inline]
    fn planned(self, samples: &SampleTable) -> PlannedSample {
        let i = self as usize;
        PlannedSample {
            // Only samples with a time are planned as recorded.
            time: samples.time(i).unwrap_or_default(),
            index: i,
            weight: samples.weight(i),
        }
    }

    #[inline]
    fn time(self, samples: &SampleTable) -> i64 {
        samples.time(self as usize).unwrap_or_default()
    }
}

impl Planned for PlannedSample {
    #[inline]
    fn index(self) -> usize {
        self.index
    }

    #[inline]
    fn planned(self, _: &SampleTable) -> PlannedSample {
        self
    }
}

/// The samples to write, with how they got their times.
pub(crate) struct Timed {
    /// The samples.
    pub samples: PlannedSamples,
    /// How they got their times.
    pub timing: Timing,
    /// For expanded samples: per model sample, the position of the sample that stands in for
    /// it ([`NO_STAND_IN`] for none), so that what the chunks carry counts every sample
    /// merged into another. Empty for recorded samples.
    pub stand_in: Vec<u32>,
}

/// In [`Timed::stand_in`]: a model sample that was not laid out.
pub(crate) const NO_STAND_IN: u32 = u32::MAX;

/// The samples to write with their times. `chosen` flags the series to write, by series index.
///
/// Aggregated samples of one thread, stack and series are laid out as one: Sample v2 carries
/// no labels or other fields to tell them apart, so a profile whose every sample has its own
/// labels (a goroutine id, a request) still expands into at most [`MAX_EXPANDED_SAMPLES`]
/// (unless it has more distinct stacks than that), and its rounding happens once per stack,
/// not once per sample.
///
/// Span series are sampled every `span_interval_ns` on `grid` instead.
pub(crate) fn timed_samples(
    profile: &Profile,
    chosen: &[bool],
    grid: Option<Grid>,
    span_interval_ns: i64,
) -> Result<Timed> {
    let samples = profile.samples();
    let wanted = |i: &usize| chosen[samples.series(*i).index()];
    let spans = profile
        .all_series()
        .any(|(h, s)| chosen[h.index()] && s.spans);
    if let (true, Some(grid)) = (spans, grid) {
        let stretches = (0..samples.len())
            .filter(wanted)
            .filter(|&i| samples.stack(i).is_some() && samples.time(i).is_some());
        let taken = sample_spans(profile, stretches, grid, span_interval_ns);
        return Ok(Timed {
            samples: PlannedSamples::Expanded(taken.samples),
            timing: Timing::Spans {
                interval_ns: taken.interval_ns,
                scaled_from: taken.scaled_from,
            },
            stand_in: Vec::new(),
        });
    }
    let recorded: Rows = (0..samples.len())
        .filter(wanted)
        .filter(|&i| samples.stack(i).is_some() && samples.time(i).is_some())
        .map(|i| u32::try_from(i).expect("samples are fewer than 2^32"))
        .collect();
    let aggregated = || {
        (0..samples.len())
            .filter(wanted)
            .filter(|&i| samples.time(i).is_none())
    };
    if !recorded.is_empty() || aggregated().next().is_none() {
        return Ok(Timed {
            samples: PlannedSamples::Recorded(recorded),
            timing: Timing::Recorded,
            stand_in: Vec::new(),
        });
    }
    let start = profile.start_time.ok_or(ErrorKind::NoStartTime)?;
    // One sample per thread, stack and series, in order of first appearance (so a stack
    // stays contiguous on its thread's timeline), with the weights of all of them.
    let mut stand_in = vec![NO_STAND_IN; samples.len()];
    // Each group's first sample's position, and the group as one sample.
    let mut merged: Vec<(usize, Sample)> = Vec::new();
    let mut groups: FxHashMap<(ThreadHandle, Option<StackHandle>, SeriesHandle), usize> =
        FxHashMap::default();
    for i in aggregated().filter(|&i| samples.weight(i) > 0) {
        let key = (samples.thread(i), samples.stack(i), samples.series(i));
        let group = *groups.entry(key).or_insert_with(|| {
            merged.push((
                i,
                Sample {
                    weight: 0,
                    ..samples.get(i)
                },
            ));
            merged.len() - 1
        });
        let (first, sample) = &mut merged[group];
        sample.weight = sample.weight.saturating_add(samples.weight(i));
        stand_in[i] = *first as u32;
    }
    drop(groups);
    // First pass: how many observations the weights stand for, to scale them into the bound
    // before anything is laid out.
    let total = merged.iter().fold(0u64, |sum, (_, s)| {
        sum.saturating_add(repetitions(profile, s, expansion_interval_ns(profile, s)))
    });
    let scale = (total > MAX_EXPANDED_SAMPLES).then(|| MAX_EXPANDED_SAMPLES as f64 / total as f64);
    let mut clocks: FxHashMap<ThreadHandle, i64> = FxHashMap::default();
    let mut out = Vec::new();
    let mut smallest: Option<i64> = None;
    for &(index, ref s) in &merged {
        let interval = expansion_interval_ns(profile, s);
        let full = repetitions(profile, s, interval);
        let n = match scale {
            Some(k) if full > 0 => ((full as f64 * k).round() as u64).max(1),
            _ => full,
        };
        if n > 0 {
            smallest = Some(smallest.map_or(interval, |s| s.min(interval)));
        }
        let clock = clocks.entry(s.thread).or_insert(start);
        // n > 0 only for positive weights; the first `rest` shares take one unit more.
        let n_i64 = i64::try_from(n).unwrap_or(i64::MAX);
        let (share, rest) = (s.weight / n_i64.max(1), s.weight % n_i64.max(1));
        out.reserve(usize::try_from(n).unwrap_or(0));
        for i in 0..n_i64 {
            out.push(PlannedSample {
                time: *clock,
                index,
                weight: share + i64::from(i < rest),
            });
            *clock = clock.saturating_add(interval);
        }
    }
    let interval_ns = smallest.unwrap_or(DEFAULT_INTERVAL_NS);
    Ok(Timed {
        samples: PlannedSamples::Expanded(out),
        timing: Timing::Expanded {
            interval_ns,
            scaled_from: scale.map(|_| total),
        },
        stand_in,
    })
}
