//! Where an upload's samples come from, whatever the decoder gave: the whole model at once;
//! the windows of a long recording, as a second pass of the upload completes them; or the
//! Sample v2 chunks an input already held, each with its own model. A [`SampleSource`] hands
//! them to the [`Writers`] one [`Piece`] at a time, through the one entry the writers have.
//!
//! A second pass's samples wait in [`PendingSamples`] until no later one can fall into
//! their window, then go to the writers, which write them exactly as a conversion of the
//! whole recording would. Memory then holds about one window of samples however long the
//! recording is.

mod pending;
#[cfg(test)]
mod second_pass_tests;
#[cfg(test)]
mod tests;

use super::clock::{days_between, days_of, Anchor};
use super::pass_through::rewrite_chunk;
use crate::error::{ErrorKind, Result};
use crate::formats::{apply_context_labels, context_relabeling, ContextLabels, SecondPass};
use crate::model::{Profile, SampleTable};
use crate::plan::Grid;
use crate::symbolize::{symbolize, SymbolSource, SymbolizeReport};
use crate::writers::outputs::Outputs;
use crate::writers::sample_v2::SampleV2Chunk;
use crate::writers::{Piece, Writers};
use pending::PendingSamples;

/// Where an upload's samples come from.
pub(crate) enum SampleSource<'a> {
    /// The upload's model holds them all: one piece.
    Whole,
    /// A second pass over the upload hands them over; the model holds none yet.
    SecondPass(Box<SecondPass<'a>>),
    /// Sample v2 chunks the input held, passed through: each with its own model.
    Given {
        models: Vec<Profile>,
        chunks: Vec<SampleV2Chunk>,
    },
}

/// What feeding the writers did.
pub(crate) struct Fed {
    /// Samples the outputs were written from.
    pub samples: u64,
    /// How many pieces they came in.
    pub pieces: u64,
}

impl SampleSource<'_> {
    /// Names native frames from `symbols`: in `profile`, the upload's model, or in each given
    /// chunk's own model, whose chunk is then written again through the typed schema.
    pub fn symbolize(
        &mut self,
        profile: &mut Profile,
        symbols: &dyn SymbolSource,
    ) -> Result<SymbolizeReport> {
        let SampleSource::Given { models, chunks } = self else {
            return symbolize(profile, symbols);
        };
        let mut symbolization = SymbolizeReport::default();
        for (model, chunk) in models.iter_mut().zip(chunks) {
            let report = symbolize(model, symbols)?;
            if report.symbolicated() > 0 {
                rewrite_chunk(chunk, model)?;
            }
            symbolization.merge(report);
        }
        Ok(symbolization)
    }

    /// Gives the samples with a context `contexts` knows that context's labels: those in
    /// `profile`, the upload's model, now, and a second pass's as they are read.
    pub fn apply_context_labels(&mut self, profile: &mut Profile, contexts: &ContextLabels) {
        match self {
            SampleSource::SecondPass(pass) => pass.relabel(context_relabeling(profile, contexts)),
            _ => apply_context_labels(profile, contexts),
        }
    }

    /// The UTC days the samples can lie on once moved by `anchor`; `profile` is the upload's
    /// model.
    pub fn days(&self, profile: &Profile, anchor: Anchor) -> Option<std::ops::RangeInclusive<i64>> {
        match self {
            SampleSource::SecondPass(pass) => pass.bounds.map(|b| days_between(b, anchor)),
            _ => days_of(profile),
        }
    }

    /// Hands every sample to `writers`, a piece at a time; `profile` is the upload's model.
    /// The samples a second pass hands over are moved by `anchor` as they are handed on.
    pub fn feed(
        &mut self,
        profile: &mut Profile,
        anchor: Anchor,
        writers: &mut Writers,
        out: &mut Outputs,
    ) -> Result<Fed> {
        let samples = profile.samples().len() as u64;
        let piece = match self {
            SampleSource::Whole => {
                // The model is complete: only read from here on.
                profile.release_stack_lookups();
                Piece::Windows(Grid::of(profile))
            }
            SampleSource::SecondPass(pass) => {
                return feed_read(pass, profile, anchor, writers, out)
            }
            SampleSource::Given { models, chunks } => Piece::Given { models, chunks },
        };
        writers.add(profile, piece, out)?;
        Ok(Fed { samples, pieces: 1 })
    }

    /// The models the outputs were written from: `profile`, the upload's, or the chunks' own.
    pub fn models<'p>(&'p self, profile: &'p Profile) -> Vec<&'p Profile> {
        match self {
            SampleSource::Given { models, .. } => models.iter().collect(),
            _ => vec![profile],
        }
    }
}

/// Reads the samples again and hands their windows on as they complete. With two or more
/// threads the writers run on a thread of their own, at most a piece behind the second pass;
/// they take the pieces in the same order either way, so the outputs are the same bytes.
fn feed_read(
    pass: &mut SecondPass<'_>,
    profile: &mut Profile,
    anchor: Anchor,
    writers: &mut Writers,
    out: &mut Outputs,
) -> Result<Fed> {
    let mut fed = Fed {
        samples: 0,
        pieces: 0,
    };
    let mut pending = PendingSamples::new(anchor);
    let dropped = if writers.threads() < 2 {
        let mut hand_on = |samples: SampleTable, piece: Piece<'static>| {
            write_piece(profile, samples, piece, writers, out)
        };
        read_pieces(pass, &mut pending, &mut fed, &mut hand_on)?
    } else {
        let model = &mut *profile;
        std::thread::scope(|scope| -> Result<u64> {
            let (send, pieces) = std::sync::mpsc::sync_channel::<(SampleTable, Piece)>(1);
            let writing = scope.spawn(move || -> Result<()> {
                for (samples, piece) in pieces {
                    write_piece(model, samples, piece, writers, out)?;
                }
                Ok(())
            });
            let mut hand_on = move |samples: SampleTable, piece: Piece<'static>| {
                // Only a failed writer stops taking pieces; its error is the one returned.
                send.send((samples, piece)).map_err(|_| writers_stopped())
            };
            let read = read_pieces(pass, &mut pending, &mut fed, &mut hand_on);
            // The writers end once the last piece is handed on.
            drop(hand_on);
            let written = writing
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            written?;
            read
        })?
    };
    if dropped > 0 {
        *profile.stats.entry("clock_conversion_failed").or_default() += dropped;
    }
    Ok(fed)
}

/// Writes one piece of samples of `profile`, the upload's model.
fn write_piece(
    profile: &mut Profile,
    samples: SampleTable,
    piece: Piece<'_>,
    writers: &mut Writers,
    out: &mut Outputs,
) -> Result<()> {
    profile.replace_samples(samples);
    writers.add(profile, piece, out)?;
    profile.replace_samples(SampleTable::default());
    Ok(())
}

/// What a piece is handed on to.
type HandOn<'h> = dyn FnMut(SampleTable, Piece<'static>) -> Result<()> + 'h;

/// Reads the samples of the second pass into `pending` and hands each piece to `hand_on` as
/// it completes; gives how many samples the pass dropped.
fn read_pieces(
    pass: &mut SecondPass<'_>,
    pending: &mut PendingSamples,
    fed: &mut Fed,
    hand_on: &mut HandOn<'_>,
) -> Result<u64> {
    let format = pass.format.name();
    let dropped = pass.read_samples(&mut |position, sample, watermark| {
        let time = sample.time.unwrap_or_default();
        if pending.is_late(time) {
            return Err(late(format, position, time));
        }
        pending.push(sample);
        fed.samples += 1;
        // The last windows wait for the second pass to end, its decoder's state freed.
        match watermark {
            Some(mark) => {
                hand_on_complete(pending, Some(mark), fed, hand_on)?;
                hand_on_part(pending, mark, fed, hand_on)
            }
            None => Ok(()),
        }
    })?;
    hand_on_complete(pending, None, fed, hand_on)?;
    Ok(dropped)
}

/// Hands on the windows complete at `watermark` (all that wait when `None`), as one piece.
fn hand_on_complete(
    pending: &mut PendingSamples,
    watermark: Option<i64>,
    fed: &mut Fed,
    hand_on: &mut HandOn<'_>,
) -> Result<()> {
    if !pending.ready(watermark) {
        return Ok(());
    }
    match pending.take(watermark) {
        Some(samples) => {
            fed.pieces += 1;
            hand_on(samples, Piece::Windows(pending.grid()))
        }
        None => Ok(()),
    }
}

/// Hands on the samples before `watermark` of a window not complete yet, when many wait.
fn hand_on_part(
    pending: &mut PendingSamples,
    watermark: i64,
    fed: &mut Fed,
    hand_on: &mut HandOn<'_>,
) -> Result<()> {
    match pending.take_part(watermark) {
        Some(samples) => {
            fed.pieces += 1;
            hand_on(samples, Piece::PartOfWindow(pending.grid()))
        }
        None => Ok(()),
    }
}

/// The writers stopped taking pieces: they failed writing an output, and their error is the
/// one reported (this one never is).
fn writers_stopped() -> crate::Error {
    ErrorKind::Storage {
        key: "the outputs".into(),
    }
    .into()
}

/// A sample that arrived after the first pass said none that early was left.
fn late(format: &'static str, position: u64, time: i64) -> crate::Error {
    ErrorKind::Malformed {
        format,
        offset: 0,
        what: format!(
            "sample {position} at {time} ns came after the first pass said no sample that early \
             was left"
        ),
    }
    .into()
}
