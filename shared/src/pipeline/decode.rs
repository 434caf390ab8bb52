//! Decoding an upload: the format's decoder builds the model (the Sample v2 chunks an input
//! already holds are passed through, each with a model of its own). A long recording whose
//! format allows it is decoded as its model first, its samples left for a second pass.

use std::cell::RefCell;
use std::io::Read;
use std::sync::Arc;

use super::pass_through::pass_through;
use super::source::SampleSource;
use crate::error::{Error, Result};
use crate::formats::binaries::{has_unwind_tables, UnwindBinaries};
pub use crate::formats::Decoded;
use crate::formats::{self, Decoding, InputFormat, Reopen};
use crate::limits::Limits;
use crate::model::{BuildId, Profile};
use crate::symbolize::SymbolSource;
use crate::writers::sample_v2::SampleV2Chunk;

/// Decodes `bytes` (compressed or not) into a profile within `limits`; `format` overrides
/// detection.
pub fn decode(bytes: &[u8], format: Option<InputFormat>, limits: &Limits) -> Result<Decoded> {
    formats::decode(bytes, format, limits)
}

/// An upload's bytes as a conversion reads them.
pub(crate) enum UploadInput<'a> {
    /// In memory.
    Bytes(&'a [u8]),
    /// The `len` bytes a reader gives (a stored file, an S3 body): a Perfetto trace is
    /// decoded as it arrives and never held whole, and the reader is dropped once decoded.
    Stream {
        /// The bytes.
        reader: Box<dyn Read + Send + 'a>,
        /// How many there are.
        len: u64,
        /// Reads them again from the first: a long Perfetto trace is then converted in two
        /// passes, a window at a time, so memory does not grow with its length.
        reopen: Option<Box<Reopen<'a>>>,
    },
}

/// An upload decoded as far as its model, and where its samples come from.
pub(crate) struct DecodedUpload<'a> {
    /// The decoded input; its profile is the upload's model.
    pub decoded: Decoded,
    /// Stored bytes of the upload.
    pub input_bytes: u64,
    pub source: SampleSource<'a>,
}

/// The runtime binaries a decoder asks for, fetched from the symbols' source (the decoder asks
/// once per build ID). A store failure is kept, to fail the decode with it once done.
struct BinariesFrom<'s> {
    symbols: &'s dyn SymbolSource,
    failure: RefCell<Option<Error>>,
}

impl UnwindBinaries for BinariesFrom<'_> {
    fn binary(&self, build_id: &BuildId) -> Option<Arc<[u8]>> {
        match self.symbols.binary(build_id, &has_unwind_tables) {
            Ok(binary) => binary.map(Arc::from),
            Err(e) => {
                self.failure.borrow_mut().get_or_insert(e);
                None
            }
        }
    }
}

/// Decodes an upload for conversion: its samples left for a second pass when it is a stream
/// that can be read again, longer than `second_pass_above` bytes (`None`: never), and of a
/// format that allows it; otherwise whole. Stacks recorded as bytes are unwound with the
/// runtime binaries `symbols` holds.
pub(crate) fn decode_upload<'a>(
    input: UploadInput<'a>,
    format: Option<InputFormat>,
    limits: &Limits,
    second_pass_above: Option<u64>,
    symbols: &dyn SymbolSource,
) -> Result<DecodedUpload<'a>> {
    let binaries = BinariesFrom {
        symbols,
        failure: RefCell::new(None),
    };
    let decoded = decode_with_binaries(input, format, limits, second_pass_above, &binaries);
    if let Some(failure) = binaries.failure.into_inner() {
        return Err(failure);
    }
    decoded
}

fn decode_with_binaries<'a>(
    input: UploadInput<'a>,
    format: Option<InputFormat>,
    limits: &Limits,
    second_pass_above: Option<u64>,
    binaries: &dyn UnwindBinaries,
) -> Result<DecodedUpload<'a>> {
    let (input_bytes, decoding) = match input {
        UploadInput::Bytes(bytes) => {
            let len = bytes.len() as u64;
            let whole = formats::decode_stream_with(bytes, len, format, limits, binaries)?;
            (len, Decoding::Whole(whole))
        }
        UploadInput::Stream {
            reader,
            len,
            reopen: Some(reopen),
        } if second_pass_above.is_some_and(|above| len > above) => (
            len,
            formats::decode_first_pass(reader, len, format, limits, reopen, binaries)?,
        ),
        UploadInput::Stream { reader, len, .. } => {
            let whole = formats::decode_stream_with(reader, len, format, limits, binaries)?;
            (len, Decoding::Whole(whole))
        }
    };
    let (mut decoded, source) = match decoding {
        Decoding::Whole(mut decoded) => {
            let source = match std::mem::take(&mut decoded.chunks) {
                chunks if chunks.is_empty() => SampleSource::Whole,
                chunks => {
                    let (models, chunks): (Vec<Profile>, Vec<SampleV2Chunk>) =
                        chunks.into_iter().map(pass_through).unzip();
                    SampleSource::Given { models, chunks }
                }
            };
            (decoded, source)
        }
        Decoding::SecondPass(mut pass) => {
            let decoded = Decoded {
                profile: std::mem::take(&mut pass.profile),
                format: pass.format,
                container: pass.container,
                metadata: pass.metadata.take().map(|m| *m),
                chunks: Vec::new(),
            };
            (decoded, SampleSource::SecondPass(Box::new(pass)))
        }
    };
    // The model is held until every output is written.
    decoded.profile.shrink_to_fit();
    Ok(DecodedUpload {
        decoded,
        input_bytes,
        source,
    })
}
