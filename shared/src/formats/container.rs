//! Whole-file compression, undone before a format is sniffed.

use std::io::{self, Read};

use crate::limits::{Cap, Limits};

/// How the input bytes are wrapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Container {
    /// Not compressed.
    Plain,
    /// gzip (`1f 8b`), possibly several members.
    Gzip,
    /// zstd (`28 b5 2f fd`).
    Zstd,
}

impl Container {
    /// Detects the container from the first bytes, whatever the file is called.
    pub fn sniff(prefix: &[u8]) -> Container {
        if prefix.starts_with(&[0x1f, 0x8b]) {
            Container::Gzip
        } else if prefix.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Container::Zstd
        } else {
            Container::Plain
        }
    }

    /// Lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Container::Plain => "plain",
            Container::Gzip => "gzip",
            Container::Zstd => "zstd",
        }
    }
}

/// Marker carried inside an `io::Error` when a reader hit a size limit, so that callers can
/// report a limit rather than corrupt data.
#[derive(Debug)]
pub(crate) struct LimitHit {
    pub(crate) limit: &'static str,
    pub(crate) max: u64,
}

impl std::fmt::Display for LimitHit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} exceeds {}", self.limit, self.max)
    }
}

impl std::error::Error for LimitHit {}

/// A reader that fails with [`LimitHit`] once more than its cap came through: the guard
/// against decompression bombs.
pub(crate) struct CappedReader<R> {
    inner: R,
    remaining: u64,
    limit: &'static str,
    max: u64,
}

impl<R: Read> CappedReader<R> {
    pub(crate) fn new(inner: R, cap: Cap) -> Self {
        CappedReader {
            inner,
            remaining: cap.bytes,
            limit: cap.limit,
            max: cap.max,
        }
    }
}

impl<R: Read> Read for CappedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.remaining == 0 {
            // Only an error if there really is more data.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(io::Error::other(LimitHit {
                    limit: self.limit,
                    max: self.max,
                })),
            };
        }
        let want = buf
            .len()
            .min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.remaining -= n as u64;
        Ok(n)
    }
}

/// Opens the `len` bytes `input` reads for streaming reads, undoing its container, within the
/// decompressed size and ratio limits.
pub(crate) fn open<'a>(
    input: impl Read + 'a,
    len: u64,
    container: Container,
    limits: &Limits,
) -> io::Result<Box<dyn Read + 'a>> {
    let cap = limits.inflate_cap(
        usize::try_from(len).unwrap_or(usize::MAX),
        ("max_decompressed_bytes", limits.max_decompressed_bytes),
    );
    Ok(match container {
        Container::Plain => Box::new(input),
        Container::Gzip => Box::new(CappedReader::new(
            flate2::read::MultiGzDecoder::new(input),
            cap,
        )),
        Container::Zstd => Box::new(CappedReader::new(
            zstd::stream::read::Decoder::new(input)?,
            cap,
        )),
    })
}
