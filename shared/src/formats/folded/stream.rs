//! Reading folded text a block of lines at a time, with the result reading it whole gives.
//!
//! Two things of a folded file are settled only by lines far into it: the dialect (by the
//! first of up to 1,000 lines that tells one), and the scale of the weights, which is 10^d
//! for d the most decimals of any count. The first is read ahead; for the second, weights are
//! kept at the scale of the lines so far and multiplied when a line with more decimals comes.
//! A count that overflows at the final scale, or a total that does, is an error that names
//! the first line where it happens at that scale, as if that scale had been known from the
//! start; so [`Scan`] follows every scale from 0 to [`MAX_DECIMALS`] decimals alongside, a few
//! additions a line.

use std::io::Read;

use super::importer::Importer;
use super::lines::{Line, Lines, MAX_DECIMALS};
use crate::error::{Error, ErrorKind, Result};
use crate::formats::text_blocks::TextBlocks;
use crate::limits::{exceeded, Limits};
use crate::model::{scaled_count_unit, Profile};

/// Lines the dialect is told by, at most (as `Dialect::detect` looks at).
const HEAD_LINES: usize = 1000;

/// Most bytes read ahead for the dialect: 1,000 lines of 16 KB.
const HEAD_BYTES: usize = 16 << 20;

/// The input, a block of complete lines at a time.
pub(super) struct Blocks<R> {
    text: TextBlocks<R>,
    max_line_bytes: u64,
    /// Where the unread text starts in the input, and the lines before it.
    position: (u64, u64),
    /// Whether the unread text starts the input (which may start with a byte order mark).
    at_start: bool,
}

impl<R: Read> Blocks<R> {
    pub(super) fn new(input: R, codec: &'static str, max_line_bytes: u64) -> Self {
        Blocks {
            text: TextBlocks::new(input, codec, "folded text", max_line_bytes),
            max_line_bytes,
            position: (0, 0),
            at_start: true,
        }
    }

    #[cfg(test)]
    pub(super) fn with_block_bytes(mut self, block_bytes: usize) -> Self {
        self.text = self.text.with_block_bytes(block_bytes);
        self
    }

    /// The first lines, enough to tell the dialect and read austin's header: read ahead until
    /// they hold [`HEAD_LINES`] stacks or a line that does not decode, or [`HEAD_BYTES`].
    pub(super) fn head(&mut self) -> Result<&[u8]> {
        loop {
            let complete = &self.text.buffered()[..self.text.complete()];
            let mut stacks = 0;
            let mut bad = false;
            for line in Lines::new(complete, self.max_line_bytes).take(HEAD_LINES) {
                bad = line.is_err();
                stacks += 1;
            }
            let told = bad || stacks == HEAD_LINES;
            if told || self.text.buffered().len() >= HEAD_BYTES || !self.text.fill()? {
                let end = self.text.complete();
                return Ok(&self.text.buffered()[..end]);
            }
        }
    }

    /// The lines of the next block, or `None` at the end. Call [`Blocks::consumed`] with their
    /// position once read.
    pub(super) fn next_block(&mut self) -> Result<Option<Lines<'_>>> {
        let (offset, number) = self.position;
        let Some((block, _)) = self.text.next_block()? else {
            return Ok(None);
        };
        Ok(Some(if self.at_start {
            Lines::new(block, self.max_line_bytes)
        } else {
            Lines::continuing(block, offset, number, self.max_line_bytes)
        }))
    }

    /// The block [`Blocks::next_block`] gave is read, up to `position` (its lines' end).
    pub(super) fn consumed(&mut self, position: (u64, u64)) {
        self.text.consume();
        self.position = position;
        self.at_start = false;
    }
}

/// Where an error happens: a line, and the order of checks within a line.
type At = (u64, Phase);

/// The order of the checks on one line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Phase {
    /// The count at the file's scale.
    Count,
    /// `max_samples`.
    Samples,
    /// The total of the counts.
    Total,
    /// The stack.
    Stack,
}

/// The lines read so far, imported at the scale of their most decimals, and the first error
/// each final scale would give.
pub(super) struct Scan {
    importer: Importer,
    austin: bool,
    max_samples: u64,
    samples: u64,
    /// The most decimals so far: the scale weights are kept at.
    decimals: usize,
    /// Per scale (decimals), the total of the counts so far.
    totals: [i128; MAX_DECIMALS + 1],
    /// Per scale, the first line whose count or the total overflows at that scale.
    overflow: [Option<(At, Error)>; MAX_DECIMALS + 1],
    /// The first error of a check that does not depend on the scale.
    failed: Option<(At, Error)>,
}

impl Scan {
    pub(super) fn new(importer: Importer, austin: bool, limits: &Limits) -> Self {
        Scan {
            importer,
            austin,
            max_samples: limits.max_samples,
            samples: 0,
            decimals: 0,
            totals: [0; MAX_DECIMALS + 1],
            overflow: Default::default(),
            failed: None,
        }
    }

    /// Whether every line so far is imported: no error is certain yet.
    fn importing(&self) -> bool {
        self.failed.is_none() && self.overflow[self.decimals].is_none()
    }

    /// Reads one line. Fails at once only where reading the file whole failed before
    /// decoding any line: a fractional count in an austin file.
    pub(super) fn line(&mut self, line: &Line<'_>) -> Result<()> {
        let own = line.count.decimals();
        if self.austin && own > 0 {
            return Err(line.error(format!(
                "austin counts are whole microseconds, not {}",
                line.count.text()
            )));
        }
        for scale in own..=MAX_DECIMALS {
            if self.overflow[scale].is_some() {
                continue;
            }
            match line.weight(scale) {
                Err(e) => self.overflow[scale] = Some(((line.number, Phase::Count), e)),
                Ok(w) => {
                    self.totals[scale] += i128::from(w);
                    if self.totals[scale] > i128::from(i64::MAX) {
                        let e = total_exceeded();
                        self.overflow[scale] = Some(((line.number, Phase::Total), e));
                    }
                }
            }
        }
        if own > self.decimals {
            // Every line before this one was imported at the old scale unless an error was
            // already certain; they move to the new scale unless one of them overflows it.
            let was_importing = self.importing();
            let factor = 10i64.pow((own - self.decimals) as u32);
            self.decimals = own;
            // Their total fits the new scale unless one of them overflows it.
            if was_importing && self.nothing_failed_before(line) {
                self.importer.rescale(factor);
            }
        }
        if self.failed.is_some() || !self.nothing_failed_before(line) {
            return Ok(());
        }
        // This line's own checks, in the order reading the file whole made them.
        let total_overflows = match &self.overflow[self.decimals] {
            Some(((_, Phase::Count), _)) => return Ok(()),
            other => other.is_some(),
        };
        let Ok(weight) = line.weight(self.decimals) else {
            return Ok(());
        };
        if weight != 0 && self.samples >= self.max_samples {
            let e = exceeded("max_samples", self.max_samples);
            self.failed = Some(((line.number, Phase::Samples), e));
            return Ok(());
        }
        if total_overflows {
            return Ok(());
        }
        self.samples += u64::from(weight != 0);
        if let Err(e) = self.importer.line(line.stack, weight) {
            self.failed = Some(((line.number, Phase::Stack), e));
        }
        Ok(())
    }

    /// Whether no line before `line` overflows the current scale.
    fn nothing_failed_before(&self, line: &Line<'_>) -> bool {
        self.overflow[self.decimals]
            .as_ref()
            .is_none_or(|((number, _), _)| *number == line.number)
    }

    /// The first error in line order, at the final scale.
    fn first_error(&mut self) -> Option<Error> {
        let overflow = self.overflow[self.decimals].take();
        match (overflow, self.failed.take()) {
            (Some((a, e)), Some((b, f))) => Some(if a <= b { e } else { f }),
            (one, other) => one.or(other).map(|(_, e)| e),
        }
    }

    /// The error of a file whose line `e` is about does not decode: the first error of the
    /// lines before it, else `e`.
    pub(super) fn stopped_by(mut self, e: Error) -> Error {
        self.first_error().unwrap_or(e)
    }

    /// The profile of every line, in its final unit.
    pub(super) fn finish(mut self) -> Result<Profile> {
        if let Some(e) = self.first_error() {
            return Err(e);
        }
        let unit = if self.austin {
            "microseconds".to_owned()
        } else {
            scaled_count_unit(self.decimals)
        };
        Ok(self.importer.finish(&unit))
    }
}

fn total_exceeded() -> Error {
    ErrorKind::LimitExceeded {
        limit: "folded total sample count",
        max: i64::MAX as u64,
    }
    .into()
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
