//! Just enough of the protobuf wire format to walk a message's fields without decoding them:
//! the sniffer checks shapes with it, and the decoder uses it to tell a cut-off file from a
//! corrupt one and to give errors the byte offset of the record they concern.

/// One field's value as it sits on the wire.
#[derive(Clone, Copy, Debug)]
pub(super) enum Value<'a> {
    Varint,
    /// A length-delimited body, complete.
    Len(&'a [u8]),
    Fixed,
}

/// What walking a buffer's fields finds next.
#[derive(Clone, Copy, Debug)]
pub(super) enum Step<'a> {
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
    /// Bytes that no protobuf encoder writes (field 0, a group, a varint over 10 bytes).
    Invalid { offset: usize },
    /// The buffer ends cleanly.
    End,
}

/// Walks the fields of one message body.
pub(super) struct Fields<'a> {
    bytes: &'a [u8],
    at: usize,
    done: bool,
}

impl<'a> Fields<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Self {
        Fields {
            bytes,
            at: 0,
            done: false,
        }
    }
}

/// Reads a varint: `Ok((value, length))`, `Err(true)` when the bytes end first, `Err(false)`
/// when it runs over 10 bytes.
pub(super) fn varint(bytes: &[u8]) -> Result<(u64, usize), bool> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok((value, i + 1));
        }
    }
    Err(bytes.len() < 10)
}

impl<'a> Iterator for Fields<'a> {
    type Item = Step<'a>;

    /// Yields steps until (and including) the first that is not a complete field.
    fn next(&mut self) -> Option<Step<'a>> {
        if self.done {
            return None;
        }
        let step = self.step();
        self.done = !matches!(step, Step::Field { .. });
        Some(step)
    }
}

impl<'a> Fields<'a> {
    fn step(&mut self) -> Step<'a> {
        let offset = self.at;
        let rest = &self.bytes[offset..];
        if rest.is_empty() {
            return Step::End;
        }
        let (tag, used) = match varint(rest) {
            Ok(v) => v,
            Err(true) => return Step::Cut { offset },
            Err(false) => return Step::Invalid { offset },
        };
        let (number, wire_type) = (tag >> 3, tag & 7);
        if number == 0 {
            return Step::Invalid { offset };
        }
        let rest = &rest[used..];
        let (value, len) = match wire_type {
            0 => match varint(rest) {
                Ok((_, n)) => (Value::Varint, n),
                Err(true) => return Step::Cut { offset },
                Err(false) => return Step::Invalid { offset },
            },
            1 | 5 => {
                let n = if wire_type == 1 { 8 } else { 4 };
                if rest.len() < n {
                    return Step::Cut { offset };
                }
                (Value::Fixed, n)
            }
            2 => {
                let (body_len, n) = match varint(rest) {
                    Ok(v) => v,
                    Err(true) => return Step::Cut { offset },
                    Err(false) => return Step::Invalid { offset },
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
            _ => return Step::Invalid { offset },
        };
        self.at = offset + used + len;
        Step::Field {
            number,
            offset,
            value,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_complete_cut_and_invalid_fields() {
        // field 1 varint 150, field 2 LEN "ab", then field 3 LEN claiming 5 bytes of 1.
        let bytes = [0x08, 0x96, 0x01, 0x12, 0x02, b'a', b'b', 0x1a, 0x05, b'x'];
        let steps: Vec<_> = Fields::new(&bytes).collect();
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
            Fields::new(&[0x0b]).next(),
            Some(Step::Invalid { offset: 0 })
        ));
        assert!(matches!(
            Fields::new(&[0x08]).next(),
            Some(Step::Cut { offset: 0 })
        ));
        assert!(matches!(Fields::new(&[]).next(), Some(Step::End)));
    }
}
