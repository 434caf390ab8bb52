//! A second pass over a trace, for converting a long trace window by window without holding
//! its samples: the first pass builds the whole model but keeps only a summary of where the
//! samples' times lie, the second decodes the same bytes again and hands each sample on,
//! already on the first pass's clock, as it is read.
//!
//! Both passes run the same importer over the same packets, so the second makes every
//! entity in the order the first made it, and its handles are valid in the first pass's
//! profile.

use std::io::Read;

use super::clocks::{ClockKey, ClockTracker, Place, Placer};
use super::importer::{Importer, Parts, RawTime, Samples};
use super::packets::PacketWalker;
use crate::error::Result;
use crate::formats::second_pass::SamplePass;
use crate::formats::Container;
use crate::limits::Limits;
use crate::model::{Profile, Sample};

/// Samples per block of the summary: the first pass keeps a few numbers per block, so its
/// memory grows with the samples a 4096th as fast as a decode's sample table does.
const BLOCK: u64 = 4096;

/// What the first pass over a trace learns.
pub(crate) struct FirstPass {
    /// The model `decode` gives, without samples: its stats lack `clock_conversion_failed`,
    /// which only placing every sample can count.
    pub profile: Profile,
    /// Bounds on the samples' times, by which the second pass's samples can be gathered in
    /// windows; `None` when a bound cannot be computed (the least or greatest raw time of a
    /// block does not convert, or a bound overflows).
    pub times: Option<SampleTimes>,
    /// Every snapshot of the trace: the second pass reads its snapshots too late to convert
    /// the samples before them.
    clocks: ClockTracker,
    samples: u64,
    entities: Entities,
}

/// Bounds on the times of a trace's samples, block by block of file order. They are the
/// times themselves (the least and greatest of the samples, of those from each block on)
/// when every conversion the samples use is monotone. When one is not (the wall clock slewed
/// back between two snapshots), a later raw time can convert to an earlier time, so a
/// block's bounds hold for every raw time between its least and greatest on each clock: they
/// may be wider than its samples' times by what the conversion's offset drops across those
/// raw times (a little more through a clock with a unit of several ns or several hops, and as
/// much as the offset ever varies when those raw times cross hundreds of snapshots).
pub(crate) struct SampleTimes {
    samples: u64,
    /// By block: a time no placed sample of the block or of a later one is earlier than.
    least_from: Vec<Option<i64>>,
    /// A time no placed sample is later than.
    greatest: Option<i64>,
    /// Whether every conversion the samples use is monotone, so that the bounds are exact.
    #[cfg(test)]
    exact: bool,
}

impl SampleTimes {
    /// How many samples the first pass pushed (file order positions 0..samples), placed or
    /// not.
    #[cfg(test)]
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// A time no delivered sample is earlier than: the least time of any when every
    /// conversion the samples use is monotone, else possibly lower (see [`SampleTimes`]).
    /// `None` when no sample is placed.
    pub fn first_ns(&self) -> Option<i64> {
        self.least_from.first().copied().flatten()
    }

    /// A time no delivered sample is later than: the greatest time of any when every
    /// conversion the samples use is monotone, else possibly higher (see [`SampleTimes`]).
    /// `None` when no sample is placed.
    pub fn last_ns(&self) -> Option<i64> {
        self.greatest
    }

    /// Whether the bounds are the samples' least and greatest times, not just bounds on them.
    #[cfg(test)]
    pub fn exact(&self) -> bool {
        self.exact
    }

    /// A time no delivered sample at file position `position` or later is earlier than, by
    /// block: a lower bound on the least time from `position`'s block on, equal to it when
    /// every conversion the samples use is monotone (so never higher than the least time from
    /// `position` on). `None` past the last sample, and when no sample from that block on is
    /// placed.
    pub fn watermark(&self, position: u64) -> Option<i64> {
        if position >= self.samples {
            return None;
        }
        let block = usize::try_from(position / BLOCK).ok()?;
        self.least_from.get(block).copied().flatten()
    }
}

/// The least and greatest raw time of one block's samples on one clock.
struct Span {
    block: u64,
    clock: Option<ClockKey>,
    least: i64,
    greatest: i64,
}

/// The first pass's destination: samples go nowhere, their raw times into [`Span`]s.
#[derive(Default)]
struct Summary {
    /// By block, then by the clock's first sample in the block. A block has one span per
    /// clock its samples are on, mostly one.
    spans: Vec<Span>,
}

impl Samples for Summary {
    fn push(&mut self, _: &mut Profile, position: u64, _: Sample, time: RawTime) -> Result<()> {
        let block = position / BLOCK;
        let span = self
            .spans
            .iter_mut()
            .rev()
            .take_while(|s| s.block == block)
            .find(|s| s.clock == time.clock);
        match span {
            Some(span) => {
                span.least = span.least.min(time.ts);
                span.greatest = span.greatest.max(time.ts);
            }
            None => self.spans.push(Span {
                block,
                clock: time.clock,
                least: time.ts,
                greatest: time.ts,
            }),
        }
        Ok(())
    }
}

impl Summary {
    /// Bounds on the placed times, from each span's bounds on what the raw times between its
    /// least and greatest convert to; `None` when one of those does not convert or overflows.
    fn times(self, samples: u64, placer: &mut Placer<'_>) -> Option<SampleTimes> {
        let blocks = usize::try_from(samples.div_ceil(BLOCK)).ok()?;
        let mut least_from: Vec<Option<i64>> = vec![None; blocks];
        let mut greatest: Option<i64> = None;
        #[cfg(test)]
        let mut exact = true;
        for span in self.spans {
            let place = placer.place(span.clock);
            let (least, most) = match place {
                // Not one of these samples is placed, so they bound nothing.
                Place::Drop => continue,
                Place::Convert(at) if !placer.conversion(at).links() => continue,
                Place::Convert(at) => {
                    let conversion = placer.conversion(at);
                    #[cfg(test)]
                    {
                        exact &= conversion.is_monotone();
                    }
                    conversion.bounds(span.least, span.greatest)?
                }
                Place::Raw => (span.least, span.greatest),
            };
            let block = &mut least_from[usize::try_from(span.block).ok()?];
            *block = Some(block.map_or(least, |b| b.min(least)));
            greatest = Some(greatest.map_or(most, |g| g.max(most)));
        }
        let mut later: Option<i64> = None;
        for block in least_from.iter_mut().rev() {
            later = match (*block, later) {
                (Some(b), Some(l)) => Some(b.min(l)),
                (b, l) => b.or(l),
            };
            *block = later;
        }
        Some(SampleTimes {
            samples,
            least_from,
            greatest,
            #[cfg(test)]
            exact,
        })
    }
}

/// Decodes a trace as `decode` does, keeping no samples: see [`FirstPass`].
pub(crate) fn decode_without_samples(
    input: impl Read,
    codec: &'static str,
    limits: &Limits,
) -> Result<FirstPass> {
    let mut importer = Importer::with_samples(limits, Summary::default());
    PacketWalker::new(limits).walk(input, codec, &mut |packet| importer.packet(packet))?;
    let Parts {
        profile,
        clocks,
        samples: summary,
        pushed,
    } = importer.finish_parts();
    let times = summary.times(pushed, &mut Placer::new(&clocks));
    Ok(FirstPass {
        entities: Entities::of(&profile),
        profile,
        times,
        clocks,
        samples: pushed,
    })
}

/// The first pass over a trace: its model without samples, and the second pass; `None` when
/// the samples' times cannot be bounded, so they cannot be gathered in windows.
pub(crate) fn first_pass(
    input: impl Read,
    container: Container,
    limits: &Limits,
) -> Result<Option<(Profile, Box<dyn SamplePass>)>> {
    let mut first = decode_without_samples(input, container.name(), limits)?;
    if first.times.is_none() {
        return Ok(None);
    }
    let profile = std::mem::take(&mut first.profile);
    Ok(Some((profile, Box::new(first))))
}

/// The second pass, by what the first learned (its profile taken by the caller).
impl SamplePass for FirstPass {
    fn watermark(&self, position: u64) -> Option<i64> {
        self.times.as_ref()?.watermark(position)
    }

    fn bounds(&self) -> Option<(i64, i64)> {
        let times = self.times.as_ref()?;
        Some((times.first_ns()?, times.last_ns()?))
    }

    fn read(
        &self,
        input: &mut dyn Read,
        codec: &'static str,
        limits: &Limits,
        sample: &mut dyn FnMut(u64, Sample) -> Result<()>,
    ) -> Result<u64> {
        second_pass(input, codec, limits, self, sample)
    }
}

/// The second pass's destination: each sample placed with the first pass's clocks and handed
/// on at once.
struct Forward<'a> {
    placer: Placer<'a>,
    /// The last sample's clock and its place: runs of one clock look it up once.
    last: Option<(Option<ClockKey>, Place)>,
    sink: &'a mut dyn FnMut(u64, Sample) -> Result<()>,
    dropped: u64,
}

impl Samples for Forward<'_> {
    fn push(
        &mut self,
        _: &mut Profile,
        position: u64,
        mut sample: Sample,
        time: RawTime,
    ) -> Result<()> {
        let place = match self.last {
            Some((clock, place)) if clock == time.clock => place,
            _ => {
                let place = self.placer.place(time.clock);
                self.last = Some((time.clock, place));
                place
            }
        };
        match self.placer.time(place, time.ts) {
            Some(ts) => {
                sample.time = Some(ts);
                (self.sink)(position, sample)
            }
            None => {
                self.dropped += 1;
                Ok(())
            }
        }
    }
}

/// Decodes the trace again; hands `sample(position, sample)` every sample whose time
/// converts, in file order, with `sample.time` on the first pass's target clock (exactly the
/// time `decode` would give it). `position` is the sample's index among all samples the first
/// pass pushed. Gives how many samples were dropped because their time could not be placed
/// (what `decode` counts as `clock_conversion_failed`).
pub(crate) fn second_pass(
    input: impl Read,
    codec: &'static str,
    limits: &Limits,
    first: &FirstPass,
    sample: &mut dyn FnMut(u64, Sample) -> Result<()>,
) -> Result<u64> {
    let forward = Forward {
        placer: Placer::new(&first.clocks),
        last: None,
        sink: sample,
        dropped: 0,
    };
    let mut importer = Importer::with_samples(limits, forward);
    PacketWalker::new(limits).walk(input, codec, &mut |packet| importer.packet(packet))?;
    let Parts {
        profile,
        samples: forward,
        pushed,
        ..
    } = importer.into_parts();
    debug_assert_eq!(pushed, first.samples, "the passes read different samples");
    debug_assert_eq!(
        Entities::of(&profile),
        first.entities,
        "the passes made different entities"
    );
    Ok(forward.dropped)
}

/// How many entities of each kind a profile holds: the second pass must make as many as the
/// first did, in the same order, for its handles to mean the same in the first pass's model
/// (which the caller holds and changes meanwhile: it names frames and takes samples in).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entities {
    images: usize,
    frames: usize,
    stacks: usize,
    processes: usize,
    threads: usize,
    series: usize,
}

impl Entities {
    fn of(p: &Profile) -> Self {
        Entities {
            images: p.images().len(),
            frames: p.frames().len(),
            stacks: p.stacks().len(),
            processes: p.processes().len(),
            threads: p.threads().len(),
            series: p.all_series().len(),
        }
    }
}

#[cfg(test)]
#[path = "second_pass_tests.rs"]
mod tests;
