//! Just enough of the protobuf wire format to walk a message's fields without decoding them,
//! for what prost cannot tell: which field numbers and wire types a payload uses (sniffing,
//! OTLP layout detection), whether a file is cut off or corrupt, and at which byte offset a
//! record starts. Shared by every protobuf-based format.

use std::fmt;

/// Reads a varint: `Ok((value, length))`, `Err(true)` when the bytes end first, `Err(false)`
/// when it runs over 10 bytes.
#[inline]
pub(crate) fn varint(bytes: &[u8]) -> Result<(u64, usize), bool> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok((value, i + 1));
        }
    }
    Err(bytes.len() < 10)
}

/// One field's value as it sits on the wire.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Value<'a> {
    Varint,
    Fixed64,
    /// A length-delimited body, complete.
    Len(&'a [u8]),
    Fixed32,
}

impl Value<'_> {
    /// The wire type number.
    pub(crate) fn wire_type(&self) -> u8 {
        match self {
            Value::Varint => 0,
            Value::Fixed64 => 1,
            Value::Len(_) => 2,
            Value::Fixed32 => 5,
        }
    }
}

/// What walking a buffer's fields finds next.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Step<'a> {
    /// A complete field starting at `offset`.
    Field {
        number: u64,
        offset: usize,
        value: Value<'a>,
    },
    /// A length-delimited field whose body runs past the end of the buffer: `partial` is the
    /// part that is there.
    CutBody {
        number: u64,
        offset: usize,
        partial: &'a [u8],
    },
    /// The buffer ends inside a tag, a varint or a fixed-size value starting at `offset`.
    Cut { offset: usize },
    /// Bytes that no protobuf encoder writes.
    Invalid { offset: usize, what: &'static str },
    /// The buffer ends cleanly.
    End,
}

/// Walks the fields of one message body, step by step, up to and including the first step
/// that is not a complete field.
pub(crate) struct Steps<'a> {
    bytes: &'a [u8],
    at: usize,
    done: bool,
}

impl<'a> Steps<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Steps {
            bytes,
            at: 0,
            done: false,
        }
    }

    fn step(&mut self) -> Step<'a> {
        let offset = self.at;
        let rest = &self.bytes[offset..];
        if rest.is_empty() {
            return Step::End;
        }
        let overlong = Step::Invalid {
            offset,
            what: "varint longer than 10 bytes",
        };
        let (tag, used) = match varint(rest) {
            Ok(v) => v,
            Err(true) => return Step::Cut { offset },
            Err(false) => return overlong,
        };
        let (number, wire_type) = (tag >> 3, tag & 7);
        if number == 0 || number >= 1 << 29 {
            return Step::Invalid {
                offset,
                what: "invalid field number",
            };
        }
        let rest = &rest[used..];
        let fixed = |n: usize, value: Value<'a>| {
            if rest.len() < n {
                None
            } else {
                Some((value, n))
            }
        };
        let (value, len) = match wire_type {
            0 => match varint(rest) {
                Ok((_, n)) => (Value::Varint, n),
                Err(true) => return Step::Cut { offset },
                Err(false) => return overlong,
            },
            1 => match fixed(8, Value::Fixed64) {
                Some(v) => v,
                None => return Step::Cut { offset },
            },
            5 => match fixed(4, Value::Fixed32) {
                Some(v) => v,
                None => return Step::Cut { offset },
            },
            2 => {
                let (body_len, n) = match varint(rest) {
                    Ok(v) => v,
                    Err(true) => return Step::Cut { offset },
                    Err(false) => return overlong,
                };
                let body = &rest[n..];
                match usize::try_from(body_len) {
                    Ok(l) if l <= body.len() => (Value::Len(&body[..l]), n + l),
                    _ => {
                        return Step::CutBody {
                            number,
                            offset,
                            partial: body,
                        }
                    }
                }
            }
            _ => {
                return Step::Invalid {
                    offset,
                    what: "group or unknown wire type",
                }
            }
        };
        self.at = offset + used + len;
        Step::Field {
            number,
            offset,
            value,
        }
    }
}

impl<'a> Iterator for Steps<'a> {
    type Item = Step<'a>;

    fn next(&mut self) -> Option<Step<'a>> {
        if self.done {
            return None;
        }
        let step = self.step();
        self.done = !matches!(step, Step::Field { .. });
        Some(step)
    }
}

/// One complete field. `offset` is where its tag starts in the whole input.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Field<'a> {
    pub number: u32,
    pub value: Value<'a>,
    pub offset: u64,
}

/// Why a message's bytes do not parse as protobuf fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WireError {
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

/// The fields of one message as results, with offsets in the whole input: for readers that
/// treat anything but a complete field as an error. Stops after the first error.
pub(crate) struct Fields<'a> {
    buf: &'a [u8],
    base: u64,
    steps: Steps<'a>,
}

impl<'a> Fields<'a> {
    /// The fields of `buf`, whose first byte is at `base` in the whole input.
    pub(crate) fn new(buf: &'a [u8], base: u64) -> Self {
        Fields {
            buf,
            base,
            steps: Steps::new(buf),
        }
    }

    /// The base offset a nested reader over `payload` (a slice of this reader's buffer) needs.
    pub(crate) fn base_of(&self, payload: &[u8]) -> u64 {
        let start = payload.as_ptr() as usize - self.buf.as_ptr() as usize;
        self.base + start as u64
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<Field<'a>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        let at = |offset: usize| self.base + offset as u64;
        Some(match self.steps.next()? {
            Step::Field {
                number,
                offset,
                value,
            } => Ok(Field {
                // The walker rejects numbers of 2^29 and above.
                number: number as u32,
                value,
                offset: at(offset),
            }),
            Step::Cut { offset } | Step::CutBody { offset, .. } => {
                Err(WireError::Truncated { offset: at(offset) })
            }
            Step::Invalid { offset, what } => Err(WireError::Invalid {
                offset: at(offset),
                what,
            }),
            Step::End => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_complete_cut_and_invalid_fields() {
        // field 1 varint 150, field 2 LEN "ab", then field 3 LEN claiming 5 bytes of 1.
        let bytes = [0x08, 0x96, 0x01, 0x12, 0x02, b'a', b'b', 0x1a, 0x05, b'x'];
        let steps: Vec<_> = Steps::new(&bytes).collect();
        assert!(matches!(
            steps[0],
            Step::Field {
                number: 1,
                offset: 0,
                value: Value::Varint
            }
        ));
        assert!(matches!(
            steps[1],
            Step::Field {
                number: 2,
                offset: 3,
                value: Value::Len(b"ab")
            }
        ));
        assert!(matches!(
            steps[2],
            Step::CutBody {
                number: 3,
                offset: 7,
                partial: b"x"
            }
        ));
        assert_eq!(steps.len(), 3);
        assert!(matches!(
            Steps::new(&[0x0b]).next(),
            Some(Step::Invalid { offset: 0, .. })
        ));
        assert!(matches!(
            Steps::new(&[0x08]).next(),
            Some(Step::Cut { offset: 0 })
        ));
        assert!(matches!(Steps::new(&[]).next(), Some(Step::End)));
    }

    #[test]
    fn fields_report_offsets_in_the_whole_input() {
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
