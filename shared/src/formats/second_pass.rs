//! Decoding a long recording with a second pass over its upload, so its samples are never
//! held all at once.
//!
//! A format that can tell its samples from the rest of the recording (Perfetto, JFR) builds the
//! whole model but its samples in a first pass, and learns bounds on where their times
//! lie. A second pass then hands each sample on as it is decoded, with a watermark: a time
//! no later sample is earlier than. The pipeline gathers them into windows with that and
//! writes each window as it completes. Formats that cannot be read this way, and recordings
//! whose times cannot be bounded, are decoded whole.

use std::io::Read;

use rustc_hash::FxHashMap;

use super::binaries::UnwindBinaries;
use super::{decode_opened, decode_stream, open_stream, Container, Decoded, InputFormat};
use crate::error::Result;
use crate::limits::Limits;
use crate::metadata::UploadMetadata;
use crate::model::{LabelSetHandle, Profile, Sample};

/// Reads an upload again from its first byte.
pub type Reopen<'a> = dyn FnMut() -> Result<Box<dyn Read + Send + 'a>> + 'a;

/// An upload decoded whole, or its model now and its samples in a second pass.
pub(crate) enum Decoding<'a> {
    /// Every sample is in the model.
    Whole(Decoded),
    /// The model holds no samples yet.
    SecondPass(SecondPass<'a>),
}

/// What a first pass learned, and how to read the samples in the second.
pub(crate) struct SecondPass<'a> {
    /// The model, whole but for its samples.
    pub profile: Profile,
    pub format: InputFormat,
    pub container: Container,
    /// Stored bytes of the upload.
    pub len: u64,
    /// No sample is earlier than the first nor later than the second; `None` when no sample
    /// has a time.
    pub bounds: Option<(i64, i64)>,
    /// What the recording says of itself (see `Decoded::metadata`).
    pub metadata: Option<Box<UploadMetadata>>,
    /// The label set each sample with one of these sets gets instead (context labels, which
    /// are applied to a whole decode's samples once they are decoded).
    relabel: FxHashMap<LabelSetHandle, LabelSetHandle>,
    samples: Box<dyn SamplePass>,
    reopen: Box<Reopen<'a>>,
    limits: Limits,
}

/// A format's second pass over an upload.
pub(crate) trait SamplePass {
    /// A time no sample at file position `position` or later is earlier than; `None` past
    /// the last sample, and when none from there on has a time.
    fn watermark(&self, position: u64) -> Option<i64>;

    /// Bounds on the samples' times (see [`SecondPass::bounds`]).
    fn bounds(&self) -> Option<(i64, i64)>;

    /// Decodes the (decompressed) upload again and hands `sample(position, sample)` every
    /// sample whose time could be placed, in file order, with the model's handles. Gives how
    /// many samples were dropped because their time could not be placed.
    fn read(
        &self,
        input: &mut dyn Read,
        codec: &'static str,
        limits: &Limits,
        sample: &mut dyn FnMut(u64, Sample) -> Result<()>,
    ) -> Result<u64>;
}

impl SecondPass<'_> {
    /// Gives the samples read from here on the sets `relabel` maps their label sets to.
    pub fn relabel(&mut self, relabel: FxHashMap<LabelSetHandle, LabelSetHandle>) {
        self.relabel = relabel;
    }

    /// Reads the upload again and hands `each(position, sample, watermark)` every sample
    /// whose time could be placed (see [`SamplePass::read`]), with the watermark after it
    /// (see [`SamplePass::watermark`]). Gives how many samples were dropped.
    pub fn read_samples(
        &mut self,
        each: &mut dyn FnMut(u64, Sample, Option<i64>) -> Result<()>,
    ) -> Result<u64> {
        let reader = (self.reopen)()?;
        let mut opened = open_stream(reader, self.len, Some(self.format), &self.limits)?;
        let codec = self.container.name();
        let samples = &*self.samples;
        let relabel = &self.relabel;
        samples.read(
            &mut opened.stream,
            codec,
            &self.limits,
            &mut |position, mut sample| {
                if let Some(&new) = sample.labels.and_then(|set| relabel.get(&set)) {
                    sample.labels = Some(new);
                }
                each(position, sample, samples.watermark(position + 1))
            },
        )
    }
}

/// Decodes the first pass over the `len` bytes `input` reads when the format allows a second
/// pass, `reopen` giving the second; otherwise decodes them whole. `format` overrides
/// detection.
pub(crate) fn decode_first_pass<'a>(
    input: impl Read,
    len: u64,
    format: Option<InputFormat>,
    limits: &Limits,
    mut reopen: Box<Reopen<'a>>,
    binaries: &dyn UnwindBinaries,
) -> Result<Decoding<'a>> {
    let opened = open_stream(input, len, format, limits)?;
    let container = opened.container;
    let format = opened.format;
    let (first, metadata) = match format {
        InputFormat::Perfetto => (
            super::perfetto::first_pass(opened.stream, container, limits)?,
            None,
        ),
        InputFormat::Jfr => (
            super::jfr::first_pass(opened.stream, container, limits)?,
            super::jfr::extras().metadata.map(Box::new),
        ),
        _ => {
            return Ok(Decoding::Whole(decode_opened(
                opened, len, limits, binaries,
            )?))
        }
    };
    let Some((profile, samples)) = first else {
        // Times the windows cannot be told from (or no samples): read it again, whole.
        let whole = decode_stream(reopen()?, len, Some(format), limits)?;
        return Ok(Decoding::Whole(whole));
    };
    limits.check_profile(&profile)?;
    Ok(Decoding::SecondPass(SecondPass {
        profile,
        format,
        container,
        len,
        bounds: samples.bounds(),
        metadata,
        relabel: FxHashMap::default(),
        samples,
        reopen,
        limits: limits.clone(),
    }))
}
