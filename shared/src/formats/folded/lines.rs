//! Splitting folded text into `STACK COUNT` lines, plus the cheap check the sniffer runs on
//! the first bytes. Errors name the 1-based line number (blank lines counted) and carry the
//! byte offset where the line starts.

use crate::error::{Error, ErrorKind, Result};
use crate::limits::exceeded;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Most decimals a count may have: the weights of a file with fractional counts are scaled
/// by 10^decimals to stay exact, and 10^9 times a count leaves room for counts up to 9.2e9.
pub(super) const MAX_DECIMALS: usize = 9;

/// One line with a stack and a count.
#[derive(Clone, Copy, Debug)]
pub(super) struct Line<'a> {
    /// The frames, root first, separated by `;`; empty for py-spy's "no Python frames" line.
    pub stack: &'a str,
    /// The sample count as written.
    pub count: Count<'a>,
    /// 1-based line number, blank and comment lines counted.
    pub number: u64,
    /// Byte offset where the line starts.
    pub offset: u64,
}

impl Line<'_> {
    /// An error about this line.
    pub(super) fn error(&self, what: String) -> Error {
        malformed(self.offset, self.number, what)
    }

    /// The count scaled by 10^`decimals` (the most decimals of any count in the file).
    pub(super) fn weight(&self, decimals: usize) -> Result<i64> {
        self.count.scaled(decimals).ok_or_else(|| {
            let what = if decimals == 0 {
                format!(
                    "sample count {} does not fit in a signed 64-bit integer",
                    clip(self.count.text)
                )
            } else {
                format!(
                    "sample count {} times 10^{decimals} (the file's most decimals) does not \
                     fit in a signed 64-bit integer",
                    clip(self.count.text)
                )
            };
            self.error(what)
        })
    }
}

/// A non-negative decimal count: digits, then optionally `.` and more digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Count<'a> {
    text: &'a str,
    whole: &'a str,
    fraction: &'a str,
}

impl<'a> Count<'a> {
    fn parse(text: &'a str) -> Option<Self> {
        let (whole, fraction) = match text.split_once('.') {
            Some((whole, fraction)) if is_digits(fraction) => (whole, fraction),
            Some(_) => return None,
            None => (text, ""),
        };
        is_digits(whole).then_some(Count {
            text,
            whole,
            fraction,
        })
    }

    /// The count as written.
    pub(super) fn text(&self) -> &'a str {
        self.text
    }

    /// How many digits follow the decimal point.
    pub(super) fn decimals(&self) -> usize {
        self.fraction.len()
    }

    /// The exact count times 10^`decimals`; `None` if that overflows. `decimals` is at least
    /// the count's own and at most [`MAX_DECIMALS`].
    fn scaled(&self, decimals: usize) -> Option<i64> {
        let pow = |n: usize| 10i64.checked_pow(u32::try_from(n).ok()?);
        let whole: i64 = self.whole.parse().ok()?;
        let fraction: i64 = match self.fraction {
            "" => 0,
            f => f.parse().ok()?,
        };
        let fraction = fraction.checked_mul(pow(decimals.checked_sub(self.decimals())?)?)?;
        whole.checked_mul(pow(decimals)?)?.checked_add(fraction)
    }
}

/// Why a line's trailing count is not usable.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum BadCount<'a> {
    Missing,
    NotANumber(&'a str),
    Negative(&'a str),
    TooPrecise(&'a str),
}

/// Splits `STACK COUNT` at the last space or tab. Frame names may hold spaces
/// (`<module> (prog.py:12)`), the count never does. Only that one separator goes: the rest
/// is the stack, so a leaf frame that is a blank (perf's empty symbol: `a;b;  5`) stays a
/// frame.
pub(super) fn split_count(line: &str) -> Result<(&str, Count<'_>), BadCount<'_>> {
    let Some(at) = line.rfind([' ', '\t']) else {
        return Err(BadCount::Missing);
    };
    let (stack, token) = (&line[..at], &line[at + 1..]);
    if let Some(magnitude) = token.strip_prefix('-') {
        if Count::parse(magnitude).is_some() {
            return Err(BadCount::Negative(token));
        }
    }
    let count = Count::parse(token).ok_or(BadCount::NotANumber(token))?;
    if count.decimals() > MAX_DECIMALS {
        return Err(BadCount::TooPrecise(token));
    }
    Ok((stack, count))
}

/// Whether a line is a comment, as austin writes its header (`# austin: 3.7.0`,
/// `# mode: wall`) and trailer (`# duration: 123555`).
pub(super) fn is_comment(line: &str) -> bool {
    line.starts_with('#')
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn malformed(offset: u64, number: u64, what: String) -> Error {
    ErrorKind::Malformed {
        format: "folded",
        offset,
        what: format!("line {number}: {what}"),
    }
    .into()
}

/// Whether `prefix` (the first bytes of the input; `whole` when that is all of it) reads as
/// folded text: UTF-8 without NULs, not JSON, and every complete line that is not blank or a
/// comment ending in a count, with at least one such line.
pub(super) fn looks_folded(prefix: &[u8], whole: bool) -> bool {
    let prefix = prefix.strip_prefix(BOM).unwrap_or(prefix);
    if matches!(
        prefix.iter().find(|b| !b.is_ascii_whitespace()),
        Some(b'{' | b'[')
    ) {
        return false;
    }
    let text = match std::str::from_utf8(prefix) {
        Ok(text) => text,
        // The sniff window may cut a multi-byte character in two.
        Err(e) if !whole && e.error_len().is_none() => {
            std::str::from_utf8(&prefix[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(_) => return false,
    };
    if text.contains('\0') {
        return false;
    }
    let complete = if whole {
        text
    } else {
        match text.rfind('\n') {
            Some(end) => &text[..end],
            None => return false,
        }
    };
    let mut counted = 0usize;
    for line in complete.lines() {
        let line = line.trim_end_matches([' ', '\t', '\r']);
        if line.trim_start().is_empty() || is_comment(line) {
            continue;
        }
        // A count too large or too precise still reads as folded; decoding then says what is
        // wrong.
        if matches!(
            split_count(line),
            Err(BadCount::Missing | BadCount::NotANumber(_) | BadCount::Negative(_))
        ) {
            return false;
        }
        counted += 1;
    }
    counted > 0
}

/// The lines of an input that are not blank or comments. Stops after the first error.
pub(super) struct Lines<'a> {
    rest: &'a [u8],
    max_line_bytes: usize,
    offset: u64,
    number: u64,
}

impl<'a> Lines<'a> {
    /// The lines of `input`, each at most `max_line_bytes` long.
    pub(super) fn new(input: &'a [u8], max_line_bytes: u64) -> Self {
        let (rest, offset) = match input.strip_prefix(BOM) {
            Some(rest) => (rest, BOM.len() as u64),
            None => (input, 0),
        };
        Lines {
            rest,
            max_line_bytes: usize::try_from(max_line_bytes).unwrap_or(usize::MAX),
            offset,
            number: 0,
        }
    }

    /// The lines of `block`, a part of an input that starts a line: at byte `offset`, after
    /// `number` lines.
    pub(super) fn continuing(
        block: &'a [u8],
        offset: u64,
        number: u64,
        max_line_bytes: u64,
    ) -> Self {
        Lines {
            rest: block,
            max_line_bytes: usize::try_from(max_line_bytes).unwrap_or(usize::MAX),
            offset,
            number,
        }
    }

    /// Where the next line starts, and how many lines came before it.
    pub(super) fn position(&self) -> (u64, u64) {
        (self.offset, self.number)
    }

    /// The next raw line (ending removed) and its offset, within the length limit.
    fn next_raw(&mut self) -> Option<Result<(&'a [u8], u64)>> {
        if self.rest.is_empty() {
            return None;
        }
        // Look no further than the limit, so one endless line costs at most the limit's scanning.
        let max = self.max_line_bytes;
        let window = &self.rest[..self.rest.len().min(max.saturating_add(1))];
        let (len, advance) = match window.iter().position(|&b| b == b'\n') {
            Some(i) => (i, i + 1),
            None if self.rest.len() > max => (window.len(), window.len()),
            None => (self.rest.len(), self.rest.len()),
        };
        let raw = &self.rest[..len];
        let offset = self.offset;
        self.rest = &self.rest[advance..];
        self.offset += advance as u64;
        self.number += 1;
        if len > max {
            self.rest = &[];
            return Some(Err(exceeded("max_line_bytes", max as u64)));
        }
        Some(Ok((raw.strip_suffix(b"\r").unwrap_or(raw), offset)))
    }

    fn malformed(&mut self, offset: u64, what: String) -> Error {
        self.rest = &[];
        malformed(offset, self.number, what)
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = Result<Line<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let (raw, offset) = match self.next_raw()? {
                Ok(line) => line,
                Err(e) => return Some(Err(e)),
            };
            let Ok(text) = std::str::from_utf8(raw) else {
                return Some(Err(self.malformed(offset, "not valid UTF-8".into())));
            };
            if text.contains('\0') {
                return Some(Err(self.malformed(offset, "contains a NUL byte".into())));
            }
            let text = text.trim_end_matches([' ', '\t']);
            if text.trim_start().is_empty() || is_comment(text) {
                continue;
            }
            let (stack, count) = match split_count(text) {
                Ok(parts) => parts,
                Err(bad) => {
                    let what = match bad {
                        BadCount::Missing => "no sample count (expected `STACK COUNT`)".to_owned(),
                        BadCount::NotANumber(t) => {
                            format!("sample count `{}` is not a decimal number", clip(t))
                        }
                        BadCount::Negative(t) => format!("negative sample count {}", clip(t)),
                        BadCount::TooPrecise(t) => format!(
                            "sample count {} has more than {MAX_DECIMALS} decimals",
                            clip(t)
                        ),
                    };
                    return Some(Err(self.malformed(offset, what)));
                }
            };
            return Some(Ok(Line {
                stack,
                count,
                number: self.number,
                offset,
            }));
        }
    }
}

/// At most 40 characters of `s`, so error messages stay one line.
fn clip(s: &str) -> &str {
    s.char_indices().nth(40).map_or(s, |(i, _)| &s[..i])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stack and the count scaled by 10^`decimals`.
    fn split(line: &str, decimals: usize) -> Result<(&str, Option<i64>), BadCount<'_>> {
        split_count(line).map(|(stack, count)| (stack, count.scaled(decimals)))
    }

    #[test]
    fn count_is_the_last_token() {
        assert_eq!(
            split("a b;c (x.py:1) 12", 0),
            Ok(("a b;c (x.py:1)", Some(12)))
        );
        assert_eq!(split(" 1", 0), Ok(("", Some(1))));
        assert_eq!(
            split("a;b;  3", 0),
            Ok(("a;b; ", Some(3))),
            "the leaf is a blank"
        );
        assert_eq!(split("a;b\t 3", 0), Ok(("a;b\t", Some(3))));
        assert_eq!(split("a;b", 0), Err(BadCount::Missing));
        assert_eq!(split("a -3", 0), Err(BadCount::Negative("-3")));
        assert_eq!(split("a -0.5", 0), Err(BadCount::Negative("-0.5")));
        assert_eq!(split("a +3", 0), Err(BadCount::NotANumber("+3")));
        for bad in ["1.", ".5", "1.2.3", "1e3", "0x10", "1,5"] {
            assert_eq!(
                split(&format!("a {bad}"), 0),
                Err(BadCount::NotANumber(bad))
            );
        }
        assert_eq!(split("a 9223372036854775808", 0), Ok(("a", None)));
        assert_eq!(split("a 9223372036854775807", 0), Ok(("a", Some(i64::MAX))));
    }

    #[test]
    fn fractional_counts_scale_exactly() {
        assert_eq!(split("a 1.5", 1), Ok(("a", Some(15))));
        assert_eq!(split("a 1.5", 3), Ok(("a", Some(1500))));
        assert_eq!(split("a 12", 2), Ok(("a", Some(1200))));
        assert_eq!(split("a 0.000000001", 9), Ok(("a", Some(1))));
        assert_eq!(split("a 274.321", 3), Ok(("a", Some(274_321))));
        assert_eq!(
            split("a 0.1234567891", 9),
            Err(BadCount::TooPrecise("0.1234567891"))
        );
        // 9223372036854775807 fits, but not times 10.
        assert_eq!(split("a 9223372036854775807", 1), Ok(("a", None)));
        assert_eq!(
            split("a 922337203685477580.7", 1),
            Ok(("a", Some(i64::MAX)))
        );
    }

    #[test]
    fn lines_skip_blanks_and_comments_and_errors_locate_the_line() {
        let input = b"\xEF\xBB\xBFa;b 2\r\n\r\n  \n#c 3\nd x\n";
        let mut lines = Lines::new(input, 1 << 20);
        let first = lines.next().unwrap().unwrap();
        assert_eq!((first.stack, first.weight(0).unwrap()), ("a;b", 2));
        assert_eq!((first.number, first.offset), (1, 3));
        let err = lines.next().unwrap().unwrap_err();
        match err.kind() {
            ErrorKind::Malformed { offset, what, .. } => {
                assert_eq!(*offset, 20);
                assert!(what.starts_with("line 5:"), "{what}");
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(lines.next().is_none(), "iteration stops after an error");
    }

    #[test]
    fn sniff_needs_a_complete_counted_line() {
        assert!(looks_folded(b"a;b 1\n", false));
        assert!(looks_folded(b"a;b 1", true));
        assert!(!looks_folded(b"a;b 1", false), "no complete line");
        assert!(!looks_folded(b"a;b\n", true));
        assert!(!looks_folded(b"[1, 2]\n", true));
        assert!(!looks_folded(b"a\0 1\n", true));
        assert!(!looks_folded(b"a -1\n", true));
        assert!(looks_folded(b"a 99999999999999999999\n", true));
        assert!(looks_folded(b"a;b 0.5\na;c 12.25\n", true));
        assert!(
            looks_folded(b"a 0.1234567891\n", true),
            "decoding says what is wrong"
        );
        assert!(!looks_folded(b"a 1.\n", true));
        assert!(looks_folded(
            b"# austin: 3.7.0\n# mode: wall\n\nP1;T0:1;a.py:f:1 10\n",
            true
        ));
        assert!(!looks_folded(b"# only a comment\n", true));
        // A multi-byte character cut by the sniff window.
        assert!(looks_folded(
            "a 1\n\u{e9}".as_bytes().split_last().unwrap().1,
            false
        ));
    }
}
