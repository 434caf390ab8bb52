//! A long recording with a second pass: the first pass builds the whole model but keeps none
//! of its samples, only the least and greatest time of each run of them (a chunk's, or 16,384
//! of its samples, so the watermark moves on within a chunk); the second pass decodes the
//! chunks again and hands each sample on as it is read.
//!
//! Both passes run the same importer over the same chunks, so the second makes every
//! entity (thread, frame, stack, label set, series) in the order the first made it, and its
//! handles mean the same in the first pass's model. The second pass's own model is
//! dropped.

use std::io::Read;

use super::events::{ChunkTimes, Importer, Samples};
use super::{finish, read_chunks};
use crate::error::Result;
use crate::formats::second_pass::SamplePass;
use crate::formats::Container;
use crate::limits::Limits;
use crate::model::{Profile, Sample};

/// What the first pass learned of where the samples' times lie.
pub(crate) struct ChunkSamples {
    /// How many samples the first pass made.
    samples: u64,
    /// By run of samples, in file order: how many samples the recording has up to its end,
    /// and a time no sample of it or of a later run is earlier than.
    least_from: Vec<(u64, i64)>,
    /// The least and greatest time of any sample.
    bounds: (i64, i64),
}

impl ChunkSamples {
    fn of(samples: u64, chunks: &[ChunkTimes]) -> Option<ChunkSamples> {
        let least = chunks.iter().map(|c| c.least).min()?;
        let greatest = chunks.iter().map(|c| c.greatest).max()?;
        let mut least_from: Vec<(u64, i64)> = chunks
            .iter()
            .rev()
            .scan(i64::MAX, |least, c| {
                *least = (*least).min(c.least);
                Some((c.samples_to_end, *least))
            })
            .collect();
        least_from.reverse();
        Some(ChunkSamples {
            samples,
            least_from,
            bounds: (least, greatest),
        })
    }
}

/// The first pass over a recording: its model without samples, and the second pass; `None`
/// when it has no sample, so there is nothing for a second pass to read.
pub(crate) fn first_pass(
    input: impl Read,
    container: Container,
    limits: &Limits,
) -> Result<Option<(Profile, Box<dyn SamplePass>)>> {
    let mut importer = Importer::new(limits, Samples::Count);
    let chunks = read_chunks(input, container.name(), limits, &mut importer)?;
    let times = std::mem::take(&mut importer.chunk_times);
    let Some(samples) = ChunkSamples::of(importer.samples_made(), &times) else {
        return Ok(None);
    };
    Ok(Some((finish(importer, chunks), Box::new(samples))))
}

impl SamplePass for ChunkSamples {
    fn watermark(&self, position: u64) -> Option<i64> {
        // The first run that ends after `position` holds it.
        let at = self
            .least_from
            .partition_point(|&(to_end, _)| to_end <= position);
        self.least_from.get(at).map(|&(_, least)| least)
    }

    fn bounds(&self) -> Option<(i64, i64)> {
        Some(self.bounds)
    }

    fn read(
        &self,
        input: &mut dyn Read,
        codec: &'static str,
        limits: &Limits,
        sample: &mut dyn FnMut(u64, Sample) -> Result<()>,
    ) -> Result<u64> {
        let mut importer = Importer::new(limits, Samples::Forward(sample));
        read_chunks(input, codec, limits, &mut importer)?;
        debug_assert_eq!(
            importer.samples_made(),
            self.samples,
            "the passes made different samples"
        );
        // Every sample the first pass counted had a time.
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(samples_to_end: u64, least: i64, greatest: i64) -> ChunkTimes {
        ChunkTimes {
            samples_to_end,
            least,
            greatest,
        }
    }

    #[test]
    fn the_watermark_is_the_least_time_of_the_chunks_still_to_come() {
        // Three chunks of 2, 3 and 1 samples; the second's earliest is before the first's.
        let times = ChunkSamples::of(
            6,
            &[chunk(2, 50, 90), chunk(5, 40, 120), chunk(6, 200, 210)],
        )
        .unwrap();
        assert_eq!(times.bounds(), Some((40, 210)));
        let marks: Vec<_> = (0..=6).map(|p| times.watermark(p)).collect();
        assert_eq!(
            marks,
            [
                Some(40),
                Some(40),
                Some(40),
                Some(40),
                Some(40),
                Some(200),
                None
            ]
        );
        assert!(ChunkSamples::of(0, &[]).is_none());
    }
}
