//! The profile as machine words: the header that gives the word layout and the sampling
//! period, then the `count, depth, pc[depth]` records up to the trailer `0, 1, 0`.

use crate::error::{ErrorKind, Result};

/// Words of the header: `0, 3, 0, period_us, 0` (header count, header words, version, sampling
/// period, padding).
const HEADER_WORDS: usize = 5;

/// The width and byte order of the writer's machine words. The profiler dumps its words as
/// they are in memory, so a profile is read in the layout its header reveals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Layout {
    /// Bytes per word: 8 or 4.
    pub width: usize,
    pub big_endian: bool,
}

impl Layout {
    /// Every layout. Each puts the header's `3` at a different byte, so at most one matches.
    const ALL: [Layout; 4] = [
        Layout::new(8, false),
        Layout::new(8, true),
        Layout::new(4, false),
        Layout::new(4, true),
    ];

    const fn new(width: usize, big_endian: bool) -> Layout {
        Layout { width, big_endian }
    }

    /// The word at byte `at`, if the bytes hold one.
    #[inline]
    pub fn word(self, bytes: &[u8], at: usize) -> Option<u64> {
        let b = bytes.get(at..at.checked_add(self.width)?)?;
        Some(match (self.width, self.big_endian) {
            (8, false) => u64::from_le_bytes(b.try_into().ok()?),
            (8, true) => u64::from_be_bytes(b.try_into().ok()?),
            (_, false) => u64::from(u32::from_le_bytes(b.try_into().ok()?)),
            (_, true) => u64::from(u32::from_be_bytes(b.try_into().ok()?)),
        })
    }

    /// The `n` words from byte `at` (which the caller has checked are there).
    pub fn words(self, bytes: &[u8], at: usize, n: usize) -> impl Iterator<Item = u64> + '_ {
        (0..n).map(move |i| self.word(bytes, at + i * self.width).unwrap_or(0))
    }

    /// `64-bit little-endian` and the like, for messages and the profile's attributes.
    pub fn name(self) -> &'static str {
        match (self.width, self.big_endian) {
            (8, false) => "64-bit little-endian",
            (8, true) => "64-bit big-endian",
            (_, false) => "32-bit little-endian",
            (_, true) => "32-bit big-endian",
        }
    }
}

/// The layout and sampling period (µs) of the header `prefix` starts with, if it starts with
/// one in any layout.
pub(super) fn header(prefix: &[u8]) -> Option<(Layout, u64)> {
    Layout::ALL.into_iter().find_map(|layout| {
        let w = |i: usize| layout.word(prefix, i * layout.width);
        let fixed = [w(0)?, w(1)?, w(2)?, w(4)?] == [0, 3, 0, 0];
        let period = w(3)?;
        (fixed && period > 0).then_some((layout, period))
    })
}

/// One record: a stack seen `count` times.
#[derive(Clone, Copy, Debug)]
pub(super) struct Record {
    /// Byte offset of the record in the profile.
    pub offset: usize,
    pub count: u64,
    /// How many program counters, leaf first.
    pub depth: usize,
    /// Byte offset of the first program counter.
    pub pcs: usize,
}

/// The records of a profile, and where the bytes after the trailer start.
#[derive(Debug)]
pub(super) struct Walk {
    pub records: Vec<Record>,
    /// Where the text after the trailer starts; the end of the input when there is no trailer.
    pub rest: usize,
    /// Whether the records ended with the trailer rather than with the input.
    pub trailer: bool,
}

/// Walks the records after the header, at most `max_records` of them. Every word is
/// bounds-checked: a record cut by the end of the input is a `Truncated` error.
pub(super) fn walk(bytes: &[u8], layout: Layout, max_records: u64) -> Result<Walk> {
    let width = layout.width;
    let mut at = HEADER_WORDS * width;
    let mut records = Vec::new();
    while at < bytes.len() {
        let truncated = |what| ErrorKind::Truncated {
            offset: at as u64,
            what,
        };
        let (Some(count), Some(depth)) = (layout.word(bytes, at), layout.word(bytes, at + width))
        else {
            return Err(truncated("a record's count and depth").into());
        };
        let pcs = at + 2 * width;
        let room = (bytes.len() - pcs.min(bytes.len())) / width;
        let depth = match usize::try_from(depth) {
            Ok(d) if d <= room => d,
            _ => return Err(truncated("a record's program counters").into()),
        };
        if count == 0 && depth == 1 && layout.word(bytes, pcs) == Some(0) {
            return Ok(Walk {
                records,
                rest: pcs + width,
                trailer: true,
            });
        }
        if records.len() as u64 >= max_records {
            return Err(crate::limits::exceeded("max_samples", max_records));
        }
        records.push(Record {
            offset: at,
            count,
            depth,
            pcs,
        });
        at = pcs + depth * width;
    }
    Ok(Walk {
        records,
        rest: bytes.len(),
        trailer: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(layout: Layout, words: &[u64]) -> Vec<u8> {
        let mut out = Vec::new();
        for &w in words {
            match (layout.width, layout.big_endian) {
                (8, false) => out.extend(w.to_le_bytes()),
                (8, true) => out.extend(w.to_be_bytes()),
                (_, false) => out.extend((w as u32).to_le_bytes()),
                (_, true) => out.extend((w as u32).to_be_bytes()),
            }
        }
        out
    }

    #[test]
    fn each_layout_is_told_by_its_header_alone() {
        for layout in Layout::ALL {
            let bytes = encode(layout, &[0, 3, 0, 10_000, 0]);
            assert_eq!(header(&bytes), Some((layout, 10_000)), "{}", layout.name());
            let zero_period = encode(layout, &[0, 3, 0, 0, 0]);
            assert_eq!(header(&zero_period), None);
            assert_eq!(header(&bytes[..bytes.len() - 1]), None, "cut header");
        }
    }

    #[test]
    fn records_up_to_the_trailer() {
        let layout = Layout::new(4, true);
        let bytes = encode(
            layout,
            &[0, 3, 0, 100, 0, 2, 2, 0xa, 0xb, 1, 1, 0xc, 0, 1, 0, 0x41],
        );
        let walk = walk(&bytes, layout, 10).unwrap();
        let counts: Vec<_> = walk.records.iter().map(|r| (r.count, r.depth)).collect();
        assert_eq!(counts, [(2, 2), (1, 1)]);
        let pcs: Vec<u64> = layout.words(&bytes, walk.records[0].pcs, 2).collect();
        assert_eq!(pcs, [0xa, 0xb]);
        assert!(walk.trailer);
        assert_eq!(&bytes[walk.rest..], [0, 0, 0, 0x41]);
    }

    #[test]
    fn cut_records_are_truncated_and_records_are_bounded() {
        let layout = Layout::new(8, false);
        let whole = encode(layout, &[0, 3, 0, 100, 0, 1, 3, 0xa, 0xb, 0xc]);
        for cut in [whole.len() - 1, whole.len() - 8, 40 + 12] {
            let err = walk(&whole[..cut], layout, 10).unwrap_err();
            assert!(
                matches!(err.kind(), ErrorKind::Truncated { offset: 40, .. }),
                "{err}"
            );
        }
        let huge = encode(layout, &[0, 3, 0, 100, 0, 1, u64::MAX]);
        assert!(matches!(
            walk(&huge, layout, 10).unwrap_err().kind(),
            ErrorKind::Truncated { .. }
        ));
        let no_trailer = walk(&whole, layout, 10).unwrap();
        assert!(!no_trailer.trailer);
        assert_eq!(no_trailer.rest, whole.len());
        assert!(matches!(
            walk(&whole, layout, 0).unwrap_err().kind(),
            ErrorKind::LimitExceeded { .. }
        ));
    }
}
