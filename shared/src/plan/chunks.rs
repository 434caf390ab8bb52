//! Sample v2's plan: which observations go into which chunk, by Relay's rules.
//!
//! - one chunk per process and per window of the grid ([`super::windows`]);
//! - only samples of the CPU-time series are written (wall-time ones when the profile has no
//!   CPU-time series); samples without a stack are left out;
//! - threads with fewer than 2 samples with a stack in a chunk are dropped, as Relay would drop
//!   them;
//! - aggregated samples are laid out on a timeline ([`super::timeline`]).

use std::collections::BTreeMap;

use super::grid::{time_windows, Grid};
use super::rows::Rows;
use super::span_sampling::holds_instant;
use super::timeline::{timed_samples, Planned, PlannedSamples, Timed, Timing, NO_STAND_IN};
use crate::error::{ErrorKind, Result};
use crate::ids::derived_id;
use crate::metadata::{normalize_id, UploadMetadata};
use crate::model::{ProcessHandle, Profile, SeriesKind, Timestamps};

/// Longest span of one chunk: one window of the grid, the SDKs' 60 s (Relay allows 66 s).
#[cfg(test)]
pub const MAX_CHUNK_DURATION_NS: i64 = super::grid::WINDOW_NS;

/// Which series Sample v2 carries: the CPU-time ones, else the wall-time ones; `Err` says why
/// none.
fn chosen_series(profile: &Profile) -> std::result::Result<Vec<bool>, String> {
    let kinds: Vec<SeriesKind> = profile.all_series().map(|(_, s)| s.kind).collect();
    let Some(wanted) = [SeriesKind::CpuTime, SeriesKind::WallTime]
        .into_iter()
        .find(|k| kinds.contains(k))
    else {
        let names: Vec<_> = profile
            .all_series()
            .map(|(_, s)| profile.str(s.name).to_owned())
            .collect();
        return Err(format!(
            "no CPU-time or wall-time samples (sampled: {})",
            if names.is_empty() {
                "nothing".into()
            } else {
                names.join(", ")
            }
        ));
    };
    Ok(kinds.iter().map(|&k| k == wanted).collect())
}

/// By series index, whether Sample v2 carries the series (none when it carries no series).
pub(crate) fn carried_series(profile: &Profile) -> Vec<bool> {
    chosen_series(profile).unwrap_or_else(|_| vec![false; profile.all_series().len()])
}

/// One chunk to be written: who it belongs to and its samples, in time order.
#[derive(Clone, Debug)]
pub struct ChunkPlan<'p> {
    /// The profile the samples come from.
    pub profile: &'p Profile,
    /// The process the chunk covers.
    pub pid: Option<i64>,
    /// The chunk id.
    pub chunk_id: String,
    /// The profiler session id.
    pub profiler_id: String,
    /// The samples, in time order, only those Relay keeps.
    pub samples: PlannedSamples,
    /// How the sample times were obtained.
    pub timing: Timing,
    /// Times (ns) whose measurements go into the chunk.
    pub measurement_range: (i64, i64),
    /// The window of the grid the chunk covers.
    pub window: i64,
}

/// Sample v2's plan of a profile: its chunks, and for every series how much of it they carry.
#[derive(Clone, Debug)]
pub struct SampleV2Plan<'p> {
    /// The chunks, by process, then time.
    pub chunks: Vec<ChunkPlan<'p>>,
    /// By series index.
    pub series: Vec<SeriesCoverage>,
    /// Why there are no chunks, when there are none.
    pub why_none: Option<String>,
}

/// How much of one series the chunks carry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SeriesCoverage {
    /// Model samples (observations) of the series that reached a chunk.
    pub observations_in_chunks: u64,
    /// Chunk samples written for them (more than the observations when aggregated weights
    /// were expanded).
    pub chunk_samples: u64,
    /// Observations left out, by reason.
    pub left_out: BTreeMap<&'static str, u64>,
}

/// Why an observation is not in any chunk.
pub mod left_out {
    /// Sample v2 carries one CPU-time series, else one wall-time series.
    pub const SERIES_NOT_CARRIED: &str = "series_not_carried";
    /// A timed sample without a stack.
    pub const NO_STACK: &str = "no_stack";
    /// An aggregated sample in a series that also has timed ones: only the timed ones have
    /// real times.
    pub const AGGREGATED_BESIDE_TIMED: &str = "aggregated_beside_timed";
    /// A weight of zero or less stands for no sample.
    pub const NO_WEIGHT: &str = "no_weight";
    /// Relay drops threads with fewer than two samples with a stack in a chunk.
    pub const LONE_THREAD: &str = "lone_thread";
    /// A span series' stretch that no instant of its sampling fell in (shorter than the
    /// sampling interval).
    pub const BETWEEN_SPAN_SAMPLES: &str = "between_span_samples";
}

#[cfg(test)]
/// Cuts a profile into chunks: per process, per 60 s window, keeping what Relay keeps.
/// `identity` names the input (its source id); ids are derived from it. Fails when nothing is
/// left for Sample v2 (see [`plan_sample_v2`] for a plan that says why instead).
pub fn plan_chunks<'p>(
    profile: &'p Profile,
    meta: &UploadMetadata,
    identity: &str,
) -> Result<Vec<ChunkPlan<'p>>> {
    let plan = plan_sample_v2(profile, meta, identity)?;
    match plan.why_none {
        Some(why) => Err(ErrorKind::NoSamples { why }.into()),
        None => Ok(plan.chunks),
    }
}

#[cfg(test)]
/// Sample v2's plan of a profile. A profile Sample v2 cannot carry (no CPU or wall series, or
/// only lone threads) gives a plan without chunks that says why; only a profile without a
/// wall clock, or aggregated samples without a start time, are errors.
pub fn plan_sample_v2<'p>(
    profile: &'p Profile,
    meta: &UploadMetadata,
    identity: &str,
) -> Result<SampleV2Plan<'p>> {
    plan_sample_v2_on(profile, meta, identity, Grid::of(profile))
}

/// [`plan_sample_v2`] on a given grid: the profile may hold some windows of a longer
/// recording, whose grid starts before its first sample (`None`: no sample has a time).
pub fn plan_sample_v2_on<'p>(
    profile: &'p Profile,
    meta: &UploadMetadata,
    identity: &str,
    grid: Option<Grid>,
) -> Result<SampleV2Plan<'p>> {
    if let Timestamps::TraceClock(clock) = &profile.timestamps {
        return Err(ErrorKind::NoWallClock {
            clock: clock.clone(),
        }
        .into());
    }
    let chosen = match chosen_series(profile) {
        Ok(chosen) => chosen,
        Err(why) => {
            let chosen = vec![false; profile.all_series().len()];
            return Ok(SampleV2Plan {
                series: coverage(profile, &chosen, &[], &[], None),
                chunks: Vec::new(),
                why_none: Some(why),
            });
        }
    };
    let Timed {
        samples: timed,
        timing,
        stand_in,
    } = timed_samples(profile, &chosen, grid, meta.span_interval_ns())?;
    let windows = match timed {
        PlannedSamples::Recorded(rows) => match grid {
            Some(grid) => recorded_windows(profile, rows, grid),
            None => Vec::new(),
        },
        // Span samples are on the upload's grid already.
        PlannedSamples::Expanded(v) if matches!(timing, Timing::Spans { .. }) => match grid {
            Some(grid) => windows_of(profile, v, grid, PlannedSamples::Expanded),
            None => Vec::new(),
        },
        // Laid out from the profile's start: every thread's first sample is the earliest.
        PlannedSamples::Expanded(v) => match v.iter().map(|p| p.time(profile.samples())).min() {
            Some(first) => windows_of(
                profile,
                v,
                Grid::from_first(first),
                PlannedSamples::Expanded,
            ),
            None => Vec::new(),
        },
    };
    let profiler_base = meta.profiler_id.as_deref().and_then(normalize_id);
    let given_chunk = meta.chunk_id.as_deref().and_then(normalize_id);
    let single_window = windows.len() == 1;
    let mut plans = Vec::new();
    let owners: Vec<ProcessHandle> = windows.iter().map(|w| w.0).collect();
    for (i, (process, window, grid, samples)) in windows.into_iter().enumerate() {
        // Measurements go to the window holding their time; a process's first and last
        // windows also take what lies before or after its samples.
        let first = i == 0 || owners[i - 1] != process;
        let last = owners.get(i + 1) != Some(&process);
        let measurement_range = (
            if first { i64::MIN } else { grid.start(window) },
            if last {
                i64::MAX
            } else {
                grid.start(window + 1) - 1
            },
        );
        let pid = profile.process(process).pid;
        let pid_text = pid.map_or_else(|| "unknown".to_owned(), |p| p.to_string());
        let profiler_id = profiler_base
            .clone()
            .unwrap_or_else(|| derived_id(&["profiler", identity, &pid_text]));
        let chunk_id = match (&given_chunk, single_window) {
            // The SDK named the chunk: keep its id when the input maps onto one chunk.
            (Some(given), true) => given.clone(),
            _ => derived_id(&["chunk", identity, &pid_text, &window.to_string()]),
        };
        let kept = kept_by_relay(profile, samples);
        if kept.is_empty() {
            continue;
        }
        plans.push(ChunkPlan {
            profile,
            pid,
            chunk_id,
            profiler_id,
            samples: kept,
            timing,
            measurement_range,
            window,
        });
    }
    let why_none = plans
        .is_empty()
        .then(|| "no thread has at least 2 samples with a stack".to_owned());
    Ok(SampleV2Plan {
        series: coverage(
            profile,
            &chosen,
            &plans,
            &stand_in,
            spans_grid(grid, timing),
        ),
        chunks: plans,
        why_none,
    })
}

/// The grid and spacing span series were sampled at, if they were.
fn spans_grid(grid: Option<Grid>, timing: Timing) -> Option<(Grid, i64)> {
    match (grid, timing) {
        (Some(grid), Timing::Spans { interval_ns, .. }) => Some((grid, interval_ns)),
        _ => None,
    }
}

/// Per series: what the chunks carry, and why the rest is left out. `spans` is where span
/// series were sampled, to tell the stretches no sample fell in.
fn coverage(
    profile: &Profile,
    chosen: &[bool],
    plans: &[ChunkPlan<'_>],
    stand_in: &[u32],
    spans: Option<(Grid, i64)>,
) -> Vec<SeriesCoverage> {
    let mut out = vec![SeriesCoverage::default(); chosen.len()];
    let mut in_chunks = vec![false; profile.samples().len()];
    for p in plans.iter().flat_map(|c| c.samples.iter(profile)) {
        out[profile.samples().series(p.index).index()].chunk_samples += 1;
        in_chunks[p.index] = true;
    }
    // A sample laid out as part of another is carried when that one is. A stand-in comes
    // first, so it is settled by the time the samples it stands in for are reached.
    for (i, &by) in stand_in.iter().enumerate() {
        if by != NO_STAND_IN {
            in_chunks[i] = in_chunks[by as usize];
        }
    }
    let samples = profile.samples();
    let mut chosen_timed = vec![false; chosen.len()];
    for i in 0..samples.len() {
        if samples.time(i).is_some() && samples.stack(i).is_some() {
            chosen_timed[samples.series(i).index()] = true;
        }
    }
    let any_timed = chosen.iter().zip(&chosen_timed).any(|(&c, &t)| c && t);
    for (i, &carried) in in_chunks.iter().enumerate() {
        if carried {
            out[samples.series(i).index()].observations_in_chunks += 1;
            continue;
        }
        // Only what is left out is read whole.
        let s = samples.get(i);
        let series = &mut out[s.series.index()];
        let reason = if !chosen[s.series.index()] {
            left_out::SERIES_NOT_CARRIED
        } else if s.time.is_some() && s.stack.is_none() {
            left_out::NO_STACK
        } else if let (Some((grid, interval)), Some(time)) = (spans, s.time) {
            if holds_instant(grid, interval, time, s.weight) {
                left_out::LONE_THREAD
            } else {
                left_out::BETWEEN_SPAN_SAMPLES
            }
        } else if s.time.is_none() && any_timed {
            left_out::AGGREGATED_BESIDE_TIMED
        } else if s.time.is_none() && s.weight <= 0 {
            left_out::NO_WEIGHT
        } else {
            left_out::LONE_THREAD
        };
        *series.left_out.entry(reason).or_default() += 1;
    }
    out
}

/// Relay keeps a thread only with two or more samples that have a stack; its samples without
/// one (idle) go with it.
/// A chunk's worth of samples: its process, its window's number on the grid, the grid, and
/// the samples.
type Window = (ProcessHandle, i64, Grid, PlannedSamples);

/// Splits the samples into the windows of `grid` per process, processes in handle order,
/// samples in time order (ties in the order given). The samples are moved, not copied: a
/// trace's samples are usually in time order already and fit one window.
fn windows_of<P: Planned>(
    profile: &Profile,
    mut timed: Vec<P>,
    grid: Grid,
    wrap: fn(Vec<P>) -> PlannedSamples,
) -> Vec<Window> {
    let processes: Vec<ProcessHandle> = profile.threads().map(|(_, t)| t.process).collect();
    let samples = profile.samples();
    let process_of = |p: &P| processes[samples.thread(p.index()).index()];
    let key = |p: &P| (process_of(p), p.time(samples));
    if timed.is_sorted_by_key(|p| p.time(samples)) {
        // Samples of several processes in time order: a stable sort by process alone keeps
        // each one's in time order, and is much cheaper with so few distinct keys.
        timed.sort_by_key(process_of);
    } else {
        timed.sort_by_key(key);
    }
    // (process, window, first sample) of each window.
    let mut starts: Vec<(ProcessHandle, i64, usize)> = Vec::new();
    for (i, p) in timed.iter().enumerate() {
        let (process, window) = (process_of(p), grid.window(p.time(samples)));
        if starts
            .last()
            .is_none_or(|w| (w.0, w.1) != (process, window))
        {
            starts.push((process, window, i));
        }
    }
    // From the last window back, so each one's samples leave the list as they are split off.
    let mut windows = Vec::with_capacity(starts.len());
    for (process, window, start) in starts.into_iter().rev() {
        let samples = if start == 0 {
            std::mem::take(&mut timed)
        } else {
            let samples = timed.split_off(start);
            timed.shrink_to_fit();
            samples
        };
        windows.push((process, window, grid, wrap(samples)));
    }
    windows.reverse();
    windows
}

/// [`windows_of`] for recorded samples, which are mostly in time order already: each
/// process's windows are filled in one pass, and no list of positions is sorted or copied.
fn recorded_windows(profile: &Profile, timed: Rows, grid: Grid) -> Vec<Window> {
    let samples = profile.samples();
    let time = |i: u32| samples.time(i as usize).unwrap_or_default();
    if !timed.iter().is_sorted_by_key(time) {
        let timed: Vec<u32> = timed.iter().collect();
        return windows_of(profile, timed, grid, |v| {
            PlannedSamples::Recorded(v.into_iter().collect())
        });
    }
    let processes: Vec<ProcessHandle> = profile.threads().map(|(_, t)| t.process).collect();
    // Each process's samples (by process index), then its windows from its first sample.
    let mut by_process: Vec<Rows> = Vec::new();
    for i in &timed {
        let process = processes[samples.thread(i as usize).index()].index();
        if by_process.len() <= process {
            by_process.resize_with(process + 1, Rows::new);
        }
        by_process[process].push(i);
    }
    drop(timed);
    let mut out = Vec::new();
    for (index, rows) in by_process.into_iter().enumerate() {
        let process = ProcessHandle::from_index(index);
        for w in time_windows(rows.iter(), time, grid) {
            out.push((process, w.number, grid, PlannedSamples::Recorded(w.rows)));
        }
    }
    out
}

fn kept_by_relay(profile: &Profile, planned: PlannedSamples) -> PlannedSamples {
    let samples = profile.samples();
    let thread_of = |i: usize| samples.thread(i).index();
    let kept = |indexes: &mut dyn Iterator<Item = usize>| {
        // Counted by thread index: no hashing per sample.
        let mut with_stack: Vec<u32> = Vec::new();
        for i in indexes {
            let thread = thread_of(i);
            if with_stack.len() <= thread {
                with_stack.resize(thread + 1, 0);
            }
            with_stack[thread] += u32::from(samples.stack(i).is_some());
        }
        move |i: usize| with_stack[thread_of(i)] >= 2
    };
    match planned {
        PlannedSamples::Recorded(rows) => {
            let keep = kept(&mut rows.iter().map(|i| i as usize));
            if rows.iter().all(|i| keep(i as usize)) {
                return PlannedSamples::Recorded(rows);
            }
            PlannedSamples::Recorded(rows.iter().filter(|&i| keep(i as usize)).collect())
        }
        PlannedSamples::Expanded(mut v) => {
            let keep = kept(&mut v.iter().map(|p| p.index));
            v.retain(|p| keep(p.index));
            PlannedSamples::Expanded(v)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Frame, FrameKind, Sample, Series};

    /// Three processes of two threads each over 150 s, samples interleaved, one thread
    /// sampled once per window, some samples without a stack; in time order or not.
    fn profile(in_time_order: bool) -> Profile {
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
        let function = Some(p.intern("work"));
        let frame = p.add_frame(Frame {
            function,
            ..Frame::new(FrameKind::Native)
        });
        let stack = p.add_stack(None, frame);
        let mut threads = Vec::new();
        for pid in [30, 10, 20] {
            let process = p.add_process(Some(pid));
            threads.push(p.add_thread(process, Some(pid * 10)));
            threads.push(p.add_thread(process, Some(pid * 10 + 1)));
        }
        let mut times: Vec<i64> = (0..3_000)
            .map(|i| 1_000_000_000_000 + i * 50_000_000)
            .collect();
        if !in_time_order {
            times.reverse();
        }
        for (i, &t) in times.iter().enumerate() {
            // The last thread has one sample per 60 s window: Relay drops it.
            let thread = if i % 1_200 == 7 { 5 } else { i % 5 };
            let mut s = Sample::new(
                threads[thread],
                Some(stack).filter(|_| i % 11 != 3),
                1,
                series,
            );
            s.time = Some(t);
            p.add_sample(s);
        }
        p
    }

    fn positions(
        windows: Vec<Window>,
        profile: &Profile,
    ) -> Vec<(ProcessHandle, i64, Grid, Vec<usize>)> {
        windows
            .into_iter()
            .map(|(process, window, grid, samples)| {
                let kept = kept_by_relay(profile, samples);
                (
                    process,
                    window,
                    grid,
                    kept.iter(profile).map(|s| s.index).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn recorded_windows_are_the_windows_of_the_sorted_positions() {
        for in_time_order in [true, false] {
            let p = profile(in_time_order);
            let samples = p.samples();
            let timed: Vec<u32> = (0..samples.len() as u32)
                .filter(|&i| samples.stack(i as usize).is_some())
                .collect();
            let grid = Grid::of(&p).unwrap();
            let expected = positions(
                windows_of(&p, timed.clone(), grid, |v| {
                    PlannedSamples::Recorded(v.into_iter().collect())
                }),
                &p,
            );
            let got = positions(
                recorded_windows(&p, timed.iter().copied().collect(), grid),
                &p,
            );
            assert_eq!(got, expected, "in time order: {in_time_order}");
            // 150 s: three windows for each of the three processes.
            assert_eq!(got.len(), 9);
            let processes: Vec<usize> = got.iter().map(|w| w.0.index()).collect();
            assert!(processes.is_sorted());
            // The lone thread's samples are not kept, every other one is.
            let kept: usize = got.iter().map(|w| w.3.len()).sum();
            let lone = (0..samples.len())
                .filter(|&i| samples.thread(i).index() == 5 && samples.stack(i).is_some())
                .count();
            assert!(lone > 0);
            assert_eq!(kept, timed.len() - lone);
        }
    }
}
