//! What both layouts do with a thread once its tables are read: the stack table onto the
//! model's stacks, and each sample onto its series.

use std::borrow::Cow;

use super::malformed;
use super::meta::{Clock, Targets};
use crate::error::Result;
use crate::model::{FrameHandle, Profile, Sample, StackHandle, ThreadHandle};

/// Where a stack-table row's samples go.
#[derive(Clone, Copy)]
pub(super) enum Place {
    Stack(StackHandle),
    /// Deeper than `max_stack_depth`: its samples are kept without frames and counted, as
    /// other decoders keep theirs.
    TooDeep,
}

/// The model stack of every stack-table row. Both layouts write a row after its prefix, so
/// one pass in row order builds them; a prefix that comes later is malformed.
pub(super) fn places(
    prefix: &[Option<u64>],
    frame: &[u64],
    frames: &[FrameHandle],
    profile: &mut Profile,
    max_depth: u64,
) -> Result<Vec<Place>> {
    if prefix.len() != frame.len() {
        return Err(malformed(format!(
            "stackTable has {} prefixes and {} frames",
            prefix.len(),
            frame.len()
        )));
    }
    let mut places: Vec<Place> = Vec::with_capacity(prefix.len());
    for (row, (&p, &f)) in prefix.iter().zip(frame).enumerate() {
        let parent = match p.map(|p| (p, places.get(p as usize))) {
            None => None,
            Some((_, Some(Place::Stack(stack)))) => Some(*stack),
            Some((_, Some(Place::TooDeep))) => {
                places.push(Place::TooDeep);
                continue;
            }
            Some((p, None)) => {
                return Err(malformed(format!(
                    "stackTable row {row}: its prefix {p} does not come before it"
                )))
            }
        };
        let Some(&frame) = usize::try_from(f).ok().and_then(|f| frames.get(f)) else {
            return Err(malformed(format!(
                "stackTable row {row}: frame {f} is not in the frameTable"
            )));
        };
        // Depth 0 is a root frame: a stack of n frames ends at depth n - 1.
        let depth = parent.map_or(0, |p| u64::from(profile.stack_depth(p)) + 1);
        places.push(if depth >= max_depth {
            Place::TooDeep
        } else {
            Place::Stack(profile.add_stack(parent, frame))
        });
    }
    Ok(places)
}

/// One thread's samples, as columns of equal length: borrowed from a processed thread,
/// built from a gecko thread's rows.
pub(super) struct SampleColumns<'a> {
    /// Stack-table rows; `None` for a sample without a stack.
    pub stack: Cow<'a, [Option<u64>]>,
    /// ms after the profile's start.
    pub time_ms: Cow<'a, [f64]>,
    /// `None` when every weight is 1; a null weight is 1 too.
    pub weight: Option<Cow<'a, [Option<f64>]>>,
    /// CPU time since the previous sample, in `meta.sampleUnits.threadCPUDelta`.
    pub cpu_delta: Option<Cow<'a, [Option<f64>]>>,
}

impl SampleColumns<'_> {
    fn check(&self) -> Result<()> {
        let n = self.stack.len();
        let lengths = [
            ("time", Some(self.time_ms.len())),
            ("weight", self.weight.as_deref().map(<[_]>::len)),
            ("threadCPUDelta", self.cpu_delta.as_deref().map(<[_]>::len)),
        ];
        for (name, len) in lengths {
            if let Some(len) = len.filter(|&len| len != n) {
                return Err(malformed(format!(
                    "samples has {n} stacks but {len} values of {name}"
                )));
            }
        }
        Ok(())
    }
}

/// Adds each sample to the thread's weight series, and its CPU time (when the thread has
/// `threadCPUDelta` and the delta is above 0) to the CPU series with the same stack and time.
pub(super) fn add_samples(
    profile: &mut Profile,
    thread: ThreadHandle,
    columns: &SampleColumns<'_>,
    places: &[Place],
    targets: Targets,
    clock: Clock,
) -> Result<()> {
    columns.check()?;
    for (i, (&row, &ms)) in columns.stack.iter().zip(columns.time_ms.iter()).enumerate() {
        let stack = match row.map(|r| (r, usize::try_from(r).ok().and_then(|r| places.get(r)))) {
            None => None,
            Some((_, Some(Place::Stack(stack)))) => Some(*stack),
            Some((_, Some(Place::TooDeep))) => {
                profile.count("firefox_stack_too_deep");
                None
            }
            Some((r, None)) => {
                return Err(malformed(format!(
                    "samples.stack[{i}] = {r} is not in the stackTable"
                )))
            }
        };
        let time = clock.at(ms, &|| format!("samples[{i}]"))?;
        let weight = columns
            .weight
            .as_deref()
            .and_then(|w| w[i])
            .map_or(1, |w| targets.weight_type.scale(w));
        let mut sample = Sample::new(thread, stack, weight, targets.weights);
        sample.time = Some(time);
        profile.add_sample(sample);
        let delta = columns.cpu_delta.as_deref().map(|d| d[i]);
        if let (Some(cpu), Some(delta)) = (targets.cpu, delta) {
            match delta {
                Some(d) if d > 0.0 => {
                    let mut sample = Sample::new(thread, stack, d.round() as i64, cpu);
                    sample.time = Some(time);
                    profile.add_sample(sample);
                }
                Some(d) if d < 0.0 => profile.count("firefox_cpu_delta_negative"),
                Some(_) => {}
                None => profile.count("firefox_cpu_delta_missing"),
            }
        }
    }
    Ok(())
}
