//! Input formats: sniffing and one decoder per format, each turning bytes into a
//! [`Profile`].
//!
//! Decompression of the whole file is its own step ([`Container`]); the format is then
//! detected from the decompressed content, never from a file name.

mod container;
mod perfetto;

use std::io::{self, Read};

pub use container::Container;
pub(crate) use container::LimitHit;

use crate::error::{Error, ErrorKind, Result};
use crate::model::Profile;

/// Upper bound on decompressed input, whatever the container: the guard against
/// decompression bombs.
pub const MAX_DECOMPRESSED_BYTES: u64 = 4 << 30;

/// How many leading bytes the sniffers look at.
const SNIFF_LEN: usize = 4096;

/// The input formats proflake decodes. Closed: a new format is a new variant, a new module and
/// one arm in [`sniff`] and [`decode`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InputFormat {
    /// Perfetto protobuf trace (`.pftrace`, `.perfetto-trace`).
    Perfetto,
}

impl InputFormat {
    /// Every format, in the order the sniffer tries them.
    pub const ALL: &'static [InputFormat] = &[InputFormat::Perfetto];

    /// The format's short name, as used on the command line and in outputs.
    pub fn name(self) -> &'static str {
        match self {
            InputFormat::Perfetto => "perfetto",
        }
    }

    /// Parses a short name.
    pub fn from_name(name: &str) -> Option<InputFormat> {
        Self::ALL.iter().copied().find(|f| f.name() == name)
    }
}

/// A decoded input.
#[derive(Debug)]
pub struct Decoded {
    /// The profile.
    pub profile: Profile,
    /// The detected format.
    pub format: InputFormat,
    /// The whole-file compression that was undone.
    pub container: Container,
}

/// Detects the format of decompressed content from its first bytes.
pub fn sniff(prefix: &[u8]) -> Option<InputFormat> {
    if perfetto::test(prefix) {
        return Some(InputFormat::Perfetto);
    }
    None
}

/// Decodes `bytes` (compressed or not) into a profile. `format` overrides detection.
pub fn decode(bytes: &[u8], format: Option<InputFormat>) -> Result<Decoded> {
    let container = Container::sniff(bytes);
    let mut reader = container::open(bytes, container, MAX_DECOMPRESSED_BYTES)
        .map_err(|e| io_error(e, container.name(), 0, "container header"))?;
    let mut prefix = Vec::with_capacity(SNIFF_LEN);
    (&mut reader)
        .take(SNIFF_LEN as u64)
        .read_to_end(&mut prefix)
        .map_err(|e| io_error(e, container.name(), 0, "first bytes"))?;
    let format = match format.or_else(|| sniff(&prefix)) {
        Some(f) => f,
        None => {
            let tried: Vec<_> = InputFormat::ALL.iter().map(|f| f.name()).collect();
            return Err(ErrorKind::UnsupportedFormat {
                tried: tried.join(", "),
            }
            .into());
        }
    };
    let stream = io::Cursor::new(prefix).chain(reader);
    let profile = match format {
        InputFormat::Perfetto => perfetto::decode(stream, container.name())?,
    };
    Ok(Decoded {
        profile,
        format,
        container,
    })
}

/// Maps an I/O error from a decompressing reader onto the error kinds callers match on.
pub(crate) fn io_error(
    e: io::Error,
    codec: &'static str,
    offset: u64,
    what: &'static str,
) -> Error {
    if let Some(hit) = e.get_ref().and_then(|r| r.downcast_ref::<LimitHit>()) {
        return ErrorKind::LimitExceeded {
            limit: hit.limit,
            max: hit.max,
        }
        .into();
    }
    let kind = if e.kind() == io::ErrorKind::UnexpectedEof {
        ErrorKind::Truncated { offset, what }
    } else {
        ErrorKind::Decompression { container: codec }
    };
    Error::new(kind).with_source(e)
}
