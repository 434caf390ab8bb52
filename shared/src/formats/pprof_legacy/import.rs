//! The records into the model: one stack per record, two samples per record (its count and
//! its CPU time).

use rustc_hash::FxHashMap;

use super::artifacts::{SignalFrames, REPEATED_LEAF, SIGNAL_FRAMES};
use super::maps::Maps;
use super::words::{self, Layout, Record};
use super::{malformed, FORMAT};
use crate::error::Result;
use crate::limits::{exceeded, Limits};
use crate::model::{
    Frame, FrameAddress, FrameHandle, FrameKind, Profile, Sample, Series, SeriesHandle, SeriesKind,
    StackHandle, ThreadHandle,
};

/// Stat: records with a count of 0, which stand for nothing and are not kept.
const ZERO_COUNT: &str = "pprof_legacy_zero_count";
/// Stat: records whose stack exceeds `max_stack_depth`, kept without a stack.
const STACK_TOO_DEEP: &str = "pprof_legacy_stack_too_deep";
/// Stat: the records ended with the input rather than with the trailer `0, 1, 0` (read as pprof
/// reads them).
const NO_TRAILER: &str = "pprof_legacy_no_trailer";

/// The two series of every legacy profile, as `go tool pprof` names them.
struct TwoSeries {
    samples: SeriesHandle,
    cpu: SeriesHandle,
    period_ns: i64,
}

/// Imports the records and maps text of `bytes`, whose header says `layout` and `period_us`.
pub(super) fn import(
    bytes: &[u8],
    layout: Layout,
    period_us: u64,
    limits: &Limits,
) -> Result<Profile> {
    let mut profile = Profile::new(FORMAT);
    // The writer's word layout, which says what kind of machine recorded the profile.
    profile
        .attributes
        .insert("pprof_legacy.words".into(), layout.name().into());
    let series = series(&mut profile, layout, period_us)?;
    let walk = words::walk(bytes, layout, limits.max_samples)?;
    if !walk.trailer {
        profile.count(NO_TRAILER);
    }
    let maps = Maps::read(&bytes[walk.rest..], &mut profile, limits)?;
    let signal = SignalFrames::find(bytes, layout, &walk.records);
    let process = profile.add_process(None);
    let mut stacks = Stacks {
        thread: profile.add_thread(process, None),
        maps,
        frames: FxHashMap::default(),
        pcs: Vec::new(),
        leaf_first: Vec::new(),
    };
    let mut kept = 0u64;
    for record in &walk.records {
        if record.count == 0 {
            profile.count(ZERO_COUNT);
            continue;
        }
        let count = i64::try_from(record.count).ok();
        let Some((count, cpu)) = count.and_then(|c| Some((c, c.checked_mul(series.period_ns)?)))
        else {
            return Err(malformed(
                record.offset as u64,
                format!(
                    "a record of {} samples at {} ns each overflows",
                    record.count, series.period_ns
                ),
            ));
        };
        let stack = stacks.stack(&mut profile, bytes, layout, &signal, record, limits);
        kept += 2;
        if kept > limits.max_samples {
            return Err(exceeded("max_samples", limits.max_samples));
        }
        let thread = stacks.thread;
        profile.add_sample(Sample::new(thread, stack, count, series.samples));
        profile.add_sample(Sample::new(thread, stack, cpu, series.cpu));
    }
    Ok(profile)
}

/// `samples/count` at the sampling frequency and `cpu/nanoseconds` at the sampling period.
fn series(profile: &mut Profile, layout: Layout, period_us: u64) -> Result<TwoSeries> {
    let period_ns = period_us
        .checked_mul(1000)
        .and_then(|ns| i64::try_from(ns).ok())
        .ok_or_else(|| {
            malformed(
                3 * layout.width as u64,
                format!("a sampling period of {period_us} µs is out of range"),
            )
        })?;
    let hz = (1e9 / period_ns as f64).round() as u64;
    let source = Some(profile.intern(FORMAT));
    let mut add = |name: &str, unit: &str, kind, frequency_hz, period| {
        let series = Series {
            kind,
            name: profile.intern(name),
            unit: profile.intern(unit),
            source,
            frequency_hz,
            period,
            spans: false,
        };
        profile.add_series(series)
    };
    Ok(TwoSeries {
        samples: add(
            "samples",
            "count",
            SeriesKind::Other,
            (hz > 0).then_some(hz),
            None,
        ),
        cpu: add(
            "cpu",
            "nanoseconds",
            SeriesKind::CpuTime,
            None,
            Some(period_ns as u64),
        ),
        period_ns,
    })
}

/// Frames by program counter, and the scratch space one record's stack is built in.
struct Stacks {
    thread: ThreadHandle,
    maps: Maps,
    frames: FxHashMap<u64, FrameHandle>,
    pcs: Vec<u64>,
    leaf_first: Vec<FrameHandle>,
}

impl Stacks {
    /// The record's stack; `None` when it has no frames or is deeper than `max_stack_depth`.
    fn stack(
        &mut self,
        profile: &mut Profile,
        bytes: &[u8],
        layout: Layout,
        signal: &SignalFrames,
        record: &Record,
        limits: &Limits,
    ) -> Option<StackHandle> {
        if record.depth as u64 > limits.max_stack_depth {
            profile.count(STACK_TOO_DEEP);
            return None;
        }
        let (dropped, repeated) = signal.stack(bytes, layout, record, &mut self.pcs);
        if dropped > 0 {
            *profile.stats.entry(SIGNAL_FRAMES).or_default() += dropped as u64;
        }
        if repeated > 0 {
            *profile.stats.entry(REPEATED_LEAF).or_default() += repeated as u64;
        }
        self.leaf_first.clear();
        for &pc in &self.pcs {
            let frame = *self.frames.entry(pc).or_insert_with(|| {
                let mut frame = Frame::new(FrameKind::Native);
                frame.address = Some(FrameAddress::Absolute(pc));
                frame.image = self.maps.image(pc);
                profile.add_frame(frame)
            });
            self.leaf_first.push(frame);
        }
        profile.add_stack_from_root(self.leaf_first.iter().rev().copied())
    }
}
