//! A trace-event document read as a stream: its top level walked key by key, and the events
//! array handed over one element at a time, so that the document is never held whole.
//!
//! Only the structure is scanned here (strings, nesting); each element is then parsed on its
//! own. The buffer grows only to the largest element, within `max_event_bytes`. As
//! trace_processor does, a document cut short is read up to its last whole element: Chrome
//! leaves a trace without its closing `]` when it is stopped, and periodic writers may be
//! caught mid-write.

use std::io::Read;

use crate::error::{ErrorKind, Result};
use crate::formats::io_error;
use crate::limits::exceeded;

const BLOCK: usize = 1 << 20;

/// What the top level of a document is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Root {
    /// `{…}`: keys to walk.
    Object,
    /// `[…]`: the events themselves.
    Array,
}

/// How a scan of one value ended.
enum Scanned {
    /// The value ends before `end` (exclusive), which is where the next token may start.
    Whole(usize),
    /// The buffer ends inside it.
    Cut,
}

pub(crate) struct JsonStream<R> {
    reader: R,
    codec: &'static str,
    buf: Vec<u8>,
    /// The unread part of `buf` is `at..len`.
    at: usize,
    len: usize,
    /// Offset in the document of `buf[0]`.
    base: u64,
    eof: bool,
    max_value: u64,
}

impl<R: Read> JsonStream<R> {
    pub(crate) fn new(reader: R, codec: &'static str, max_value: u64) -> Self {
        JsonStream {
            reader,
            codec,
            buf: vec![0; BLOCK],
            at: 0,
            len: 0,
            base: 0,
            eof: false,
            max_value,
        }
    }

    /// Offset of the next unread byte in the document.
    pub(crate) fn offset(&self) -> u64 {
        self.base + self.at as u64
    }

    /// Reads more, keeping `at..len`; false at the end of the input.
    fn fill(&mut self) -> Result<bool> {
        if self.eof {
            return Ok(false);
        }
        if self.at > 0 {
            self.buf.copy_within(self.at..self.len, 0);
            self.base += self.at as u64;
            self.len -= self.at;
            self.at = 0;
        }
        if self.len == self.buf.len() {
            if self.buf.len() as u64 >= self.max_value {
                return Err(exceeded("max_event_bytes", self.max_value));
            }
            let grown =
                (self.buf.len() * 2).min(usize::try_from(self.max_value).unwrap_or(usize::MAX));
            self.buf.resize(grown.max(self.len + 1), 0);
        }
        let n = loop {
            match self.reader.read(&mut self.buf[self.len..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(io_error(e, self.codec, self.offset(), "trace events")),
            }
        };
        self.len += n;
        self.eof = n == 0;
        Ok(n > 0)
    }

    /// The next byte that is not whitespace (nor a BOM at the start), not consumed; `None` at
    /// the end of the input.
    fn peek(&mut self) -> Result<Option<u8>> {
        loop {
            while self.at < self.len {
                let b = self.buf[self.at];
                if b.is_ascii_whitespace() {
                    self.at += 1;
                } else if self.offset() == 0
                    && self.buf[self.at..self.len].starts_with(b"\xef\xbb\xbf")
                {
                    self.at += 3;
                } else {
                    return Ok(Some(b));
                }
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    /// The top level's kind.
    pub(crate) fn root(&mut self) -> Result<Root> {
        match self.peek()? {
            Some(b'{') => {
                self.at += 1;
                Ok(Root::Object)
            }
            Some(b'[') => {
                self.at += 1;
                Ok(Root::Array)
            }
            _ => Err(self.malformed("the document is neither a JSON object nor an array")),
        }
    }

    fn malformed(&self, what: &str) -> crate::error::Error {
        ErrorKind::Malformed {
            format: super::FORMAT,
            offset: self.offset(),
            what: what.to_owned(),
        }
        .into()
    }

    /// The next key of the object being walked (after its `:`), `None` at its end (or at the
    /// end of the input). Keys with escapes are compared unescaped-as-written.
    pub(crate) fn next_key(&mut self) -> Result<Option<Vec<u8>>> {
        loop {
            match self.peek()? {
                None | Some(b'}') => {
                    self.at = (self.at + 1).min(self.len);
                    return Ok(None);
                }
                Some(b',') => self.at += 1,
                Some(b'"') => break,
                Some(_) => return Err(self.malformed("expected a key of the top-level object")),
            }
        }
        let Some(key) = self.value()? else {
            return Ok(None);
        };
        let key = key[1..key.len() - 1].to_vec();
        match self.peek()? {
            Some(b':') => {
                self.at += 1;
                Ok(Some(key))
            }
            None => Ok(None),
            Some(_) => Err(self.malformed("expected ':' after a key")),
        }
    }

    /// Whether the next value is an array, which is then entered.
    pub(crate) fn enter_array(&mut self) -> Result<bool> {
        if self.peek()? == Some(b'[') {
            self.at += 1;
            return Ok(true);
        }
        Ok(false)
    }

    /// The next whole value, its bytes borrowed until the next call; `None` when the input
    /// ends before it does (a document cut short).
    pub(crate) fn value(&mut self) -> Result<Option<&[u8]>> {
        if self.peek()?.is_none() {
            return Ok(None);
        }
        let mut scanner = Scanner::default();
        let mut from = self.at;
        loop {
            match scanner.scan(&self.buf[..self.len], from) {
                Scanned::Whole(end) => {
                    let start = self.at;
                    self.at = end;
                    return Ok(Some(&self.buf[start..end]));
                }
                Scanned::Cut => {
                    let scanned = self.len - self.at;
                    if !self.fill()? {
                        // A scalar at the very end is whole; anything else is cut.
                        return Ok(scanner.whole_at_eof().then(|| {
                            let start = self.at;
                            self.at = self.len;
                            &self.buf[start..self.len]
                        }));
                    }
                    from = self.at + scanned;
                }
            }
        }
    }

    /// Each element of the array just entered, until its `]` (or the input's end); `on`
    /// gets its offset and bytes. Says whether the last element was cut off by the input's
    /// end.
    pub(crate) fn elements(
        &mut self,
        mut on: impl FnMut(u64, &[u8]) -> Result<()>,
    ) -> Result<bool> {
        loop {
            match self.peek()? {
                None => return Ok(false),
                Some(b']') => {
                    self.at += 1;
                    return Ok(false);
                }
                Some(b',') => {
                    self.at += 1;
                    continue;
                }
                Some(_) => {}
            }
            let offset = self.offset();
            match self.value()? {
                Some(bytes) => on(offset, bytes)?,
                None => return Ok(true),
            }
        }
    }
}

/// The state of a scan through one value, kept across refills.
#[derive(Default)]
struct Scanner {
    depth: u32,
    in_string: bool,
    /// Whether a scalar (number, literal) has begun at depth 0.
    scalar: bool,
}

impl Scanner {
    /// Scans `buf` from `from` to the end of the value that started where the scan did.
    fn scan(&mut self, buf: &[u8], mut i: usize) -> Scanned {
        while i < buf.len() {
            if self.in_string {
                // Skip to the next quote or backslash.
                match memchr::memchr2(b'"', b'\\', &buf[i..]) {
                    None => return Scanned::Cut,
                    Some(k) => i += k,
                }
                if buf[i] == b'\\' {
                    // The escaped byte is skipped with it; a cut between them is rescanned.
                    if i + 1 >= buf.len() {
                        return Scanned::Cut;
                    }
                    i += 2;
                    continue;
                }
                self.in_string = false;
                i += 1;
                if self.depth == 0 {
                    return Scanned::Whole(i);
                }
                continue;
            }
            let b = buf[i];
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    if self.depth == 0 {
                        // The end of the enclosing container ends a scalar.
                        return Scanned::Whole(i);
                    }
                    self.depth -= 1;
                    if self.depth == 0 {
                        return Scanned::Whole(i + 1);
                    }
                }
                b',' if self.depth == 0 => return Scanned::Whole(i),
                _ if self.depth == 0 && b.is_ascii_whitespace() && self.scalar => {
                    return Scanned::Whole(i)
                }
                _ if self.depth == 0 => self.scalar = true,
                _ => {}
            }
            i += 1;
        }
        Scanned::Cut
    }

    fn whole_at_eof(&self) -> bool {
        self.scalar && self.depth == 0 && !self.in_string
    }
}

#[cfg(test)]
mod tests {
    use super::{JsonStream, Root};

    fn walk(doc: &[u8], block: usize) -> (Vec<String>, bool) {
        let mut s = JsonStream::new(doc, "plain", 1 << 20);
        s.buf = vec![0; block];
        let mut out = Vec::new();
        let text = |e: &[u8]| String::from_utf8(e.to_vec()).unwrap();
        let mut cut = false;
        match s.root().unwrap() {
            Root::Array => {
                cut = s
                    .elements(|_, e| {
                        out.push(text(e));
                        Ok(())
                    })
                    .unwrap()
            }
            Root::Object => {
                while let Some(key) = s.next_key().unwrap() {
                    if key == b"traceEvents" && s.enter_array().unwrap() {
                        cut = s
                            .elements(|_, e| {
                                out.push(text(e));
                                Ok(())
                            })
                            .unwrap();
                    } else {
                        let v = s
                            .value()
                            .unwrap()
                            .map(|v| String::from_utf8(v.to_vec()).unwrap());
                        out.push(format!(
                            "{}={}",
                            String::from_utf8(key).unwrap(),
                            v.unwrap_or_default()
                        ));
                    }
                }
            }
        }
        (out, cut)
    }

    #[test]
    fn elements_and_keys_in_any_block_size() {
        let doc = br#"{"metadata": {"a": [1, "]}"]}, "traceEvents": [{"ph":"B","name":"x\"}"} , {"ph":"E"}], "n": 12, "s": "v"}"#;
        for block in [1, 2, 3, 7, 64, 4096] {
            let (out, cut) = walk(doc, block);
            assert_eq!(
                out,
                [
                    r#"metadata={"a": [1, "]}"]}"#,
                    r#"{"ph":"B","name":"x\"}"}"#,
                    r#"{"ph":"E"}"#,
                    "n=12",
                    r#"s="v""#
                ],
                "block {block}"
            );
            assert!(!cut);
        }
    }

    #[test]
    fn a_document_cut_short_is_read_to_its_last_whole_element() {
        for doc in [
            &br#"[{"ph":"X"},{"ph":"B"},"#[..],
            br#"[{"ph":"X"},{"ph":"B"}"#,
            br#"[{"ph":"X"},{"ph":"B"},{"ph":"#,
        ] {
            let (out, cut) = walk(doc, 5);
            assert_eq!(out[..2], [r#"{"ph":"X"}"#, r#"{"ph":"B"}"#]);
            assert_eq!(cut, doc.ends_with(b"\"ph\":"));
        }
    }
}
