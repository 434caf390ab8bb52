//! The 68-byte chunk header: where the chunk's metadata and constant pools are, and its clock.

use crate::error::Result;

use super::reader::Reader;

pub(crate) const MAGIC: &[u8; 4] = b"FLR\0";
pub(crate) const HEADER_BYTES: usize = 68;

/// Feature bit 0: integers in values are varints.
const COMPRESSED_INTEGERS: u32 = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub major: u16,
    pub minor: u16,
    /// The whole chunk's size, header included.
    pub size: u64,
    /// Offsets from the chunk's start.
    pub constant_pool_offset: u64,
    pub metadata_offset: u64,
    pub start_nanos: i64,
    pub duration_nanos: i64,
    pub start_ticks: i64,
    pub ticks_per_second: i64,
    pub compressed_integers: bool,
}

impl Header {
    /// Reads and checks the header at the start of `bytes` (at least [`HEADER_BYTES`] long);
    /// `base` is the chunk's offset in the file.
    pub(crate) fn read(bytes: &[u8], base: u64) -> Result<Header> {
        let mut r = Reader::new(bytes, 0, base, false);
        if r.take(4)? != MAGIC {
            return Err(Reader::new(bytes, 0, base, false).malformed("no chunk magic FLR\\0"));
        }
        let major = r.int(2, false)? as u16;
        let minor = r.int(2, false)? as u16;
        let header = Header {
            major,
            minor,
            size: r.u64_be()?,
            constant_pool_offset: r.u64_be()?,
            metadata_offset: r.u64_be()?,
            start_nanos: r.u64_be()? as i64,
            duration_nanos: r.u64_be()? as i64,
            start_ticks: r.u64_be()? as i64,
            ticks_per_second: r.u64_be()? as i64,
            compressed_integers: r.int(4, false)? as u32 & COMPRESSED_INTEGERS != 0,
        };
        let at = |pos| Reader::new(bytes, pos, base, false);
        if major != 2 {
            return Err(at(4).malformed(format!(
                "chunk version {major}.{minor}; only version 2 is read"
            )));
        }
        if header.size < HEADER_BYTES as u64 {
            return Err(at(8).malformed(format!("chunk size {} is below 68", header.size)));
        }
        for (offset, what, pos) in [
            (header.constant_pool_offset, "constant pool", 16),
            (header.metadata_offset, "metadata", 24),
        ] {
            if offset < HEADER_BYTES as u64 || offset >= header.size {
                return Err(at(pos).malformed(format!(
                    "{what} offset {offset} is outside the chunk of {} bytes",
                    header.size
                )));
            }
        }
        if header.ticks_per_second <= 0 {
            return Err(at(56).malformed(format!(
                "ticks per second {} is not positive",
                header.ticks_per_second
            )));
        }
        Ok(header)
    }

    /// A time in ticks on the wall clock, ns since the Unix epoch; `None` when it falls outside
    /// what an `i64` of nanoseconds holds.
    pub(crate) fn ticks_to_unix_ns(&self, ticks: i64) -> Option<i64> {
        let since = i128::from(ticks) - i128::from(self.start_ticks);
        let ns = since * 1_000_000_000 / i128::from(self.ticks_per_second);
        i64::try_from(i128::from(self.start_nanos) + ns).ok()
    }

    /// A span of ticks in nanoseconds, saturating.
    pub(crate) fn ticks_to_ns(&self, ticks: i64) -> i64 {
        let ns = i128::from(ticks) * 1_000_000_000 / i128::from(self.ticks_per_second);
        ns.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }
}
