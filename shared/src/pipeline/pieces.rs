//! An upload's samples in the pieces its outputs are written from: the whole model at once;
//! the windows of a long recording, as a second pass over the upload completes them; or the
//! Sample v2 chunks an input already held, each with its own model.
//!
//! A second pass's samples wait in [`PendingSamples`] until no later one can fall into
//! their window, then go to the [`ProfileWriter`], which writes them exactly as a conversion
//! of the whole recording would. Memory then holds about one window of samples however long
//! the recording is.

use super::clock::{days_between, days_of, Anchor};
use super::outputs::Outputs;
use super::pending_samples::PendingSamples;
use super::profile_writer::ProfileWriter;
use crate::error::{ErrorKind, Result};
use crate::formats::{apply_context_labels, context_relabeling, ContextLabels, SecondPass};
use crate::model::{Profile, SampleTable};
use crate::plan::Grid;
use crate::sample_v2::SampleV2Chunk;
use crate::symbolize::{symbolize, SymbolSource, SymbolizeReport};

/// Where an upload's samples come from.
pub(crate) enum Pieces<'a> {
    /// The upload's model holds them all: one piece.
    Whole,
    /// A second pass over the upload hands them over; the model holds none yet.
    Read(Box<SecondPass<'a>>),
    /// Sample v2 chunks the input held, passed through: each with its own model.
    Chunks {
        models: Vec<Profile>,
        chunks: Vec<SampleV2Chunk>,
    },
}

/// What writing the pieces did.
pub(crate) struct Written {
    /// Samples the outputs were written from.
    pub samples: u64,
    /// How many pieces they came in.
    pub pieces: u64,
}

impl Pieces<'_> {
    /// Names native frames from `symbols`: in `profile`, the upload's model, or in each given
    /// chunk's own model, whose chunk is then written again through the typed schema.
    pub fn symbolize(
        &mut self,
        profile: &mut Profile,
        symbols: &dyn SymbolSource,
    ) -> Result<SymbolizeReport> {
        let Pieces::Chunks { models, chunks } = self else {
            return symbolize(profile, symbols);
        };
        let mut symbolization = SymbolizeReport::default();
        for (model, chunk) in models.iter_mut().zip(chunks) {
            let report = symbolize(model, symbols)?;
            if report.symbolicated() > 0 {
                chunk.rewrite_frames(model)?;
            }
            symbolization.merge(report);
        }
        Ok(symbolization)
    }

    /// Gives the samples with a context `contexts` knows that context's labels: those in
    /// `profile`, the upload's model, now, and a second pass's as they are read.
    pub fn apply_context_labels(&mut self, profile: &mut Profile, contexts: &ContextLabels) {
        match self {
            Pieces::Read(pass) => pass.relabel(context_relabeling(profile, contexts)),
            _ => apply_context_labels(profile, contexts),
        }
    }

    /// The UTC days the samples can lie on once moved by `anchor`; `profile` is the upload's
    /// model.
    pub fn days(&self, profile: &Profile, anchor: Anchor) -> Option<std::ops::RangeInclusive<i64>> {
        match self {
            Pieces::Read(pass) => pass.bounds.map(|b| days_between(b, anchor)),
            _ => days_of(profile),
        }
    }

    /// Writes every piece's outputs; `profile` is the upload's model. The samples a second
    /// pass hands over are moved by `anchor` as they are written.
    pub fn write(
        &mut self,
        profile: &mut Profile,
        anchor: Anchor,
        writer: &mut ProfileWriter,
        out: &mut Outputs,
    ) -> Result<Written> {
        let samples = profile.samples().len() as u64;
        match self {
            Pieces::Whole => {
                // The model is complete: only read from here on.
                profile.release_stack_lookups();
                writer.add(profile, Grid::of(profile), out)?
            }
            Pieces::Read(pass) => return write_read(pass, profile, anchor, writer, out),
            Pieces::Chunks { models, chunks } => writer.add_given(models, chunks, out)?,
        }
        Ok(Written { samples, pieces: 1 })
    }

    /// The models the outputs were written from: `profile`, the upload's, or the chunks' own.
    pub fn models<'p>(&'p self, profile: &'p Profile) -> Vec<&'p Profile> {
        match self {
            Pieces::Chunks { models, .. } => models.iter().collect(),
            _ => vec![profile],
        }
    }
}

/// Reads the samples again and writes their windows as they complete.
fn write_read(
    pass: &mut SecondPass<'_>,
    profile: &mut Profile,
    anchor: Anchor,
    writer: &mut ProfileWriter,
    out: &mut Outputs,
) -> Result<Written> {
    let mut written = Written {
        samples: 0,
        pieces: 0,
    };
    let mut pending = PendingSamples::new(anchor);
    let format = pass.format.name();
    let dropped = pass.read_samples(&mut |position, sample, watermark| {
        let time = sample.time.unwrap_or_default();
        if pending.is_late(time) {
            return Err(late(format, position, time));
        }
        pending.push(sample);
        written.samples += 1;
        // The last windows wait for the second pass to end, its decoder's state freed.
        match watermark {
            Some(mark) => {
                write_complete(&mut pending, Some(mark), profile, writer, out, &mut written)?;
                write_part(&mut pending, mark, profile, writer, out, &mut written)
            }
            None => Ok(()),
        }
    })?;
    write_complete(&mut pending, None, profile, writer, out, &mut written)?;
    if dropped > 0 {
        *profile.stats.entry("clock_conversion_failed").or_default() += dropped;
    }
    Ok(written)
}

/// Writes the windows complete at `watermark` (all that wait when `None`), as one piece.
fn write_complete(
    pending: &mut PendingSamples,
    watermark: Option<i64>,
    profile: &mut Profile,
    writer: &mut ProfileWriter,
    out: &mut Outputs,
    written: &mut Written,
) -> Result<()> {
    if pending.ready(watermark) && pending.take(watermark, profile).is_some() {
        written.pieces += 1;
        writer.add(profile, pending.grid(), out)?;
        profile.replace_samples(SampleTable::default());
    }
    Ok(())
}

/// Writes the samples before `watermark` of a window not complete yet, when many wait.
fn write_part(
    pending: &mut PendingSamples,
    watermark: i64,
    profile: &mut Profile,
    writer: &mut ProfileWriter,
    out: &mut Outputs,
    written: &mut Written,
) -> Result<()> {
    if pending.take_part(watermark, profile).is_some() {
        written.pieces += 1;
        writer.add_part(profile, pending.grid(), out)?;
        profile.replace_samples(SampleTable::default());
    }
    Ok(())
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
