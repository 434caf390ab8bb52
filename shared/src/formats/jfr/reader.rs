//! Reading a chunk's bytes: JFR's variable-length integers, fixed big-endian numbers and its
//! encoded strings, each bounds-checked so that a cut or lying record is an error.

use std::borrow::Cow;

use crate::error::{Error, ErrorKind, Result};

use super::FORMAT;

/// How a string value is encoded: the byte before it.
const STRING_NULL: u8 = 0;
const STRING_EMPTY: u8 = 1;
const STRING_POOL: u8 = 2;
const STRING_UTF8: u8 = 3;
const STRING_CHARS: u8 = 4;
const STRING_LATIN1: u8 = 5;

/// A string value as it is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RawString<'a> {
    Null,
    /// A reference into the chunk's `java.lang.String` constant pool.
    Pool(u64),
    Utf8(&'a [u8]),
    /// UTF-16 code units, each a varint, starting at this byte with this many units.
    Chars {
        at: usize,
        len: usize,
    },
    Latin1(&'a [u8]),
}

/// A position in one chunk's bytes. `base` is the chunk's offset in the file, for errors.
#[derive(Clone, Debug)]
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    base: u64,
    /// Whether numbers in values are varints (the chunk header's feature bit 0); the event
    /// and pool headers and the metadata always are.
    compressed: bool,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8], pos: usize, base: u64, compressed: bool) -> Self {
        Reader {
            bytes,
            pos,
            base,
            compressed,
        }
    }

    /// A reader of the same bytes at `pos`.
    pub(crate) fn at(&self, pos: usize) -> Self {
        Reader {
            pos,
            ..self.clone()
        }
    }

    /// A reader of the bytes from `start` to `end` (within these bytes), at `start`: one
    /// record, so that nothing in it reads past its end.
    pub(crate) fn window(&self, start: usize, end: usize) -> Self {
        let end = end.min(self.bytes.len());
        Reader {
            bytes: &self.bytes[..end],
            pos: start.min(end),
            ..self.clone()
        }
    }

    /// The record at `at`: its size (a varint counting itself) read and checked to fit in
    /// these bytes, and a reader of the record alone, just past the size. `what` names the
    /// record in the error.
    pub(crate) fn record(&self, at: usize, what: &str) -> Result<Self> {
        let mut r = self.at(at);
        let size = r.varint()?;
        if size < 2 || (at as u64).saturating_add(size) > self.len() as u64 {
            return Err(r.malformed(format!("{what} of {size} bytes does not fit in its chunk")));
        }
        Ok(self.window(r.pos(), at + size as usize))
    }

    /// How many bytes there are, read or not.
    pub(crate) fn len(&self) -> usize {
        self.bytes.len()
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
    }

    /// The error for something wrong at the current position.
    pub(crate) fn malformed(&self, what: impl Into<String>) -> Error {
        ErrorKind::Malformed {
            format: FORMAT,
            offset: self.base + self.pos as u64,
            what: what.into(),
        }
        .into()
    }

    fn cut(&self, what: &str) -> Error {
        self.malformed(format!("{what} runs past the end of its record"))
    }

    pub(crate) fn u8(&mut self) -> Result<u8> {
        let b = *self.bytes.get(self.pos).ok_or_else(|| self.cut("a byte"))?;
        self.pos += 1;
        Ok(b)
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| self.cut("a value"))?;
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn fixed<const N: usize>(&mut self) -> Result<[u8; N]> {
        let b = self.take(N)?;
        Ok(b.try_into().expect("N bytes taken"))
    }

    /// A LEB128 varint as JFR writes them: seven bits a byte for eight bytes, then a ninth
    /// byte of eight bits.
    pub(crate) fn varint(&mut self) -> Result<u64> {
        let mut value = 0u64;
        for shift in (0..56).step_by(7) {
            let b = self.u8()?;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Ok(value | u64::from(self.u8()?) << 56)
    }

    /// A count or length: a varint no larger than the bytes left, each item taking at least
    /// `min_item_bytes`, so a lying count is refused before anything is allocated for it.
    pub(crate) fn count(&mut self, min_item_bytes: usize, what: &str) -> Result<usize> {
        let n = self.varint()?;
        let most = self.remaining() / min_item_bytes.max(1);
        match usize::try_from(n) {
            Ok(n) if n <= most => Ok(n),
            _ => Err(self.malformed(format!(
                "{what} count {n} is more than the {} bytes left can hold",
                self.remaining()
            ))),
        }
    }

    /// An integer of a value field `width` bytes wide (1, 2, 4 or 8), as the chunk encodes
    /// them: varints truncated to the width (the JVM writes an `int` -1 as a 32-bit varint), or
    /// fixed big-endian. `signed` says how a narrow value widens.
    pub(crate) fn int(&mut self, width: u8, signed: bool) -> Result<i64> {
        if width == 1 {
            let b = self.u8()?;
            return Ok(if signed {
                i64::from(b as i8)
            } else {
                i64::from(b)
            });
        }
        let raw = if self.compressed {
            self.varint()?
        } else {
            match width {
                2 => u64::from(u16::from_be_bytes(self.fixed()?)),
                4 => u64::from(u32::from_be_bytes(self.fixed()?)),
                _ => u64::from_be_bytes(self.fixed()?),
            }
        };
        Ok(match (width, signed) {
            (2, true) => i64::from(raw as u16 as i16),
            (2, false) => i64::from(raw as u16),
            (4, true) => i64::from(raw as u32 as i32),
            (4, false) => i64::from(raw as u32),
            _ => raw as i64,
        })
    }

    pub(crate) fn f32(&mut self) -> Result<f64> {
        Ok(f64::from(f32::from_be_bytes(self.fixed()?)))
    }

    pub(crate) fn f64(&mut self) -> Result<f64> {
        Ok(f64::from_be_bytes(self.fixed()?))
    }

    /// A big-endian u64 of the chunk header.
    pub(crate) fn u64_be(&mut self) -> Result<u64> {
        Ok(u64::from_be_bytes(self.fixed()?))
    }

    /// An encoded string, not yet decoded.
    pub(crate) fn raw_string(&mut self) -> Result<RawString<'a>> {
        let encoding = self.u8()?;
        Ok(match encoding {
            STRING_NULL => RawString::Null,
            STRING_EMPTY => RawString::Utf8(&[]),
            STRING_POOL => RawString::Pool(self.varint()?),
            STRING_UTF8 => {
                let n = self.count(1, "UTF-8 string byte")?;
                RawString::Utf8(self.take(n)?)
            }
            STRING_LATIN1 => {
                let n = self.count(1, "Latin-1 string byte")?;
                RawString::Latin1(self.take(n)?)
            }
            STRING_CHARS => {
                let len = self.count(1, "string character")?;
                let at = self.pos;
                for _ in 0..len {
                    self.varint()?;
                }
                RawString::Chars { at, len }
            }
            other => {
                self.pos -= 1;
                return Err(self.malformed(format!("unknown string encoding {other}")));
            }
        })
    }

    /// The text of a string that is stored in place (`None` for null and pool references,
    /// which the caller resolves). Broken UTF-8 and lone surrogates are replaced, not refused.
    pub(crate) fn text(&self, raw: RawString<'a>) -> Result<Option<Cow<'a, str>>> {
        Ok(match raw {
            RawString::Null | RawString::Pool(_) => None,
            RawString::Utf8(b) => Some(String::from_utf8_lossy(b)),
            RawString::Latin1(b) => Some(Cow::Owned(b.iter().map(|&c| char::from(c)).collect())),
            RawString::Chars { at, len } => {
                let mut r = self.at(at);
                let mut units = Vec::with_capacity(len);
                for _ in 0..len {
                    units.push(r.varint()? as u16);
                }
                Some(Cow::Owned(String::from_utf16_lossy(&units)))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(bytes: &[u8], compressed: bool) -> Reader<'_> {
        Reader::new(bytes, 0, 0, compressed)
    }

    #[test]
    fn varints_take_eight_seven_bit_bytes_then_a_whole_byte() {
        assert_eq!(reader(&[0x05], true).varint().unwrap(), 5);
        assert_eq!(reader(&[0x80 | 0x2c, 0x02], true).varint().unwrap(), 300);
        let mut max = vec![0xff; 8];
        max.push(0xff);
        assert_eq!(reader(&max, true).varint().unwrap(), u64::MAX);
        assert!(reader(&[0x80, 0x80], true).varint().is_err(), "cut short");
    }

    #[test]
    fn narrow_ints_are_truncated_to_their_width() {
        // An int -1 written as a 32-bit varint.
        let minus_one = [0xff, 0xff, 0xff, 0xff, 0x0f];
        assert_eq!(reader(&minus_one, true).int(4, true).unwrap(), -1);
        assert_eq!(reader(&minus_one, true).int(8, true).unwrap(), 0xffff_ffff);
        assert_eq!(reader(&[0xff, 0xff], false).int(2, true).unwrap(), -1);
        assert_eq!(reader(&[0, 0, 1, 0], false).int(4, true).unwrap(), 256);
        assert_eq!(reader(&[0x80], true).int(1, true).unwrap(), -128);
    }

    #[test]
    fn strings_in_every_encoding() {
        let text = |bytes: &[u8]| {
            let mut r = reader(bytes, true);
            let raw = r.raw_string().unwrap();
            assert_eq!(r.remaining(), 0, "{bytes:?} read whole");
            r.text(raw).unwrap().map(|s| s.into_owned())
        };
        assert_eq!(text(&[0]), None);
        assert_eq!(text(&[1]).as_deref(), Some(""));
        assert_eq!(text(&[3, 2, b'h', b'i']).as_deref(), Some("hi"));
        assert_eq!(text(&[5, 2, 0xe9, b't']).as_deref(), Some("ét"));
        // "é€": U+00E9 and U+20AC as varint UTF-16 units.
        assert_eq!(text(&[4, 2, 0xe9, 0x01, 0xac, 0x41]).as_deref(), Some("é€"));
        assert_eq!(
            reader(&[2, 7], true).raw_string().unwrap(),
            RawString::Pool(7)
        );
        assert!(
            reader(&[3, 9, b'x'], true).raw_string().is_err(),
            "length past the end"
        );
        assert!(reader(&[6], true).raw_string().is_err(), "unknown encoding");
    }
}
