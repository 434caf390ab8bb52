//! A minimal protobuf wire reader for what prost cannot tell us: which field numbers and wire
//! types a payload uses (format sniffing, layout detection) before it is decoded as messages.

use std::fmt;

/// One field's payload, by wire type.
#[derive(Clone, Copy, Debug)]
pub(super) enum Value<'a> {
    Varint,
    Fixed64,
    Len(&'a [u8]),
    Fixed32,
}

impl Value<'_> {
    pub(super) fn wire_type(&self) -> u8 {
        match self {
            Value::Varint => 0,
            Value::Fixed64 => 1,
            Value::Len(_) => 2,
            Value::Fixed32 => 5,
        }
    }
}

/// One field of a message. `offset` is where its tag starts, relative to the buffer the
/// reader was made for plus the reader's base offset.
#[derive(Clone, Copy, Debug)]
pub(super) struct Field<'a> {
    pub number: u32,
    pub value: Value<'a>,
    pub offset: u64,
}

/// Why a message's bytes do not parse as protobuf fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WireError {
    /// The bytes end inside a tag, varint or length-delimited payload.
    Truncated { offset: u64 },
    /// A tag with field number 0, an unknown wire type, a group or an over-long varint.
    Invalid { offset: u64, what: &'static str },
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Truncated { offset } => write!(f, "truncated field at byte {offset}"),
            WireError::Invalid { offset, what } => write!(f, "{what} at byte {offset}"),
        }
    }
}

/// Iterates over the fields of one message; stops after the first error.
pub(super) struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
    base: u64,
    failed: bool,
}

impl<'a> Fields<'a> {
    /// The fields of `buf`, whose first byte is at `base` in the whole input.
    pub(super) fn new(buf: &'a [u8], base: u64) -> Self {
        Fields {
            buf,
            pos: 0,
            base,
            failed: false,
        }
    }

    fn at(&self, pos: usize) -> u64 {
        self.base + pos as u64
    }

    fn varint(&mut self) -> Result<u64, WireError> {
        let start = self.pos;
        let mut value = 0u64;
        for i in 0..10 {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err(WireError::Truncated {
                    offset: self.at(start),
                });
            };
            self.pos += 1;
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(WireError::Invalid {
            offset: self.at(start),
            what: "varint longer than 10 bytes",
        })
    }

    fn skip(&mut self, n: usize, start: usize) -> Result<&'a [u8], WireError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or(WireError::Truncated {
                offset: self.at(start),
            })?;
        let bytes = &self.buf[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }

    fn field(&mut self) -> Result<Field<'a>, WireError> {
        let start = self.pos;
        let tag = self.varint()?;
        let number = u32::try_from(tag >> 3).unwrap_or(0);
        if number == 0 || number >= 1 << 29 {
            return Err(WireError::Invalid {
                offset: self.at(start),
                what: "invalid field number",
            });
        }
        let value = match tag & 7 {
            0 => self.varint().map(|_| Value::Varint)?,
            1 => self.skip(8, start).map(|_| Value::Fixed64)?,
            2 => {
                let len = self.varint()?;
                let len = usize::try_from(len).map_err(|_| WireError::Truncated {
                    offset: self.at(start),
                })?;
                Value::Len(self.skip(len, start)?)
            }
            5 => self.skip(4, start).map(|_| Value::Fixed32)?,
            _ => {
                return Err(WireError::Invalid {
                    offset: self.at(start),
                    what: "group or unknown wire type",
                })
            }
        };
        Ok(Field {
            number,
            value,
            offset: self.at(start),
        })
    }

    /// The base offset a nested reader over `payload` (a slice of this reader's buffer) needs.
    pub(super) fn base_of(&self, payload: &[u8]) -> u64 {
        let start = payload.as_ptr() as usize - self.buf.as_ptr() as usize;
        self.at(start)
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<Field<'a>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.buf.len() {
            return None;
        }
        let field = self.field();
        self.failed = field.is_err();
        Some(field)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fields_and_reports_truncation() {
        // field 1 varint 150, field 2 "ab", field 3 fixed64, then a cut LEN field.
        let bytes = [
            0x08, 0x96, 0x01, 0x12, 0x02, b'a', b'b', 0x19, 0, 0, 0, 0, 0, 0, 0, 0, 0x22, 0x05, 1,
        ];
        let mut fields = Fields::new(&bytes, 100);
        let f = fields.next().unwrap().unwrap();
        assert!(matches!(f.value, Value::Varint) && f.number == 1 && f.offset == 100);
        let f = fields.next().unwrap().unwrap();
        assert!(matches!(f.value, Value::Len(b"ab")) && f.offset == 103);
        let f = fields.next().unwrap().unwrap();
        assert_eq!((f.number, f.value.wire_type()), (3, 1));
        assert_eq!(
            fields.next().unwrap().unwrap_err(),
            WireError::Truncated { offset: 116 }
        );
        assert!(fields.next().is_none());
    }

    #[test]
    fn rejects_field_zero_and_groups() {
        assert!(matches!(
            Fields::new(&[0x00, 0x01], 0).next(),
            Some(Err(WireError::Invalid { .. }))
        ));
        assert!(matches!(
            Fields::new(&[0x0b], 0).next(),
            Some(Err(WireError::Invalid { .. }))
        ));
    }
}
