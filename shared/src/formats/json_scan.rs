//! Just enough of JSON to sniff a document by its top-level keys from a prefix of it, which
//! may end anywhere: keys may come in any order, and values are skipped unread.

/// A cursor over JSON bytes that knows only tokens and strings.
pub(crate) struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scan<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Scan { bytes, at: 0 }
    }

    /// The next byte that is not whitespace, consumed.
    pub(crate) fn next_token(&mut self) -> Option<u8> {
        while let Some(&b) = self.bytes.get(self.at) {
            self.at += 1;
            if !b.is_ascii_whitespace() {
                return Some(b);
            }
        }
        None
    }

    /// The next byte that is not whitespace, left unconsumed.
    fn peek_token(&mut self) -> Option<u8> {
        let b = self.next_token()?;
        self.at -= 1;
        Some(b)
    }

    /// The raw text of the string whose opening quote was just consumed, escapes left as
    /// they are (keys compared by sniffers have none); `None` when the prefix ends inside it.
    pub(crate) fn string(&mut self) -> Option<&'a [u8]> {
        let start = self.at;
        let mut escaped = false;
        while let Some(&b) = self.bytes.get(self.at) {
            self.at += 1;
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => return Some(&self.bytes[start..self.at - 1]),
                _ => {}
            }
        }
        None
    }

    /// Skips to the end of the object or array whose opening bracket was just consumed;
    /// false when the prefix ends first.
    pub(crate) fn skip_rest(&mut self) -> bool {
        let mut depth = 1u32;
        while let Some(b) = self.next_token() {
            match b {
                b'"' if self.string().is_none() => return false,
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        return true;
                    }
                }
                _ => {}
            }
        }
        false
    }

    /// Whether the object whose `{` was just consumed has `key` among its own keys, skipping
    /// every value; `None` when the prefix ends before that is known.
    pub(crate) fn object_has_key(&mut self, key: &[u8]) -> Option<bool> {
        loop {
            match self.next_token()? {
                b'}' => return Some(false),
                b',' => {}
                b'"' => {
                    let k = self.string()?;
                    if self.next_token()? != b':' {
                        return Some(false);
                    }
                    if k == key {
                        return Some(true);
                    }
                    match self.next_token()? {
                        b'"' => {
                            self.string()?;
                        }
                        b'{' | b'[' if !self.skip_rest() => return None,
                        _ => {}
                    }
                }
                _ => {}
            }
        }
    }

    /// Whether what follows is `TOKENS…"KEY"`, with each of `tokens` in turn (whitespace
    /// between them skipped) and then a string for which `key` holds.
    pub(crate) fn followed_by(&mut self, tokens: &[u8], key: impl Fn(&[u8]) -> bool) -> bool {
        tokens.iter().all(|&t| self.next_token() == Some(t))
            && self.next_token() == Some(b'"')
            && self.string().is_some_and(key)
    }
}

/// Walks the top-level keys of the JSON object `prefix` starts (a BOM and blanks before it
/// skipped), in the order written, and asks `decide` about each with the cursor just after
/// its `:`; the first `Some` is the answer. `false` when the prefix is no object, or ends (or
/// the object does) before `decide` answers.
pub(crate) fn top_level_keys(
    prefix: &[u8],
    mut decide: impl FnMut(&[u8], &mut Scan<'_>) -> Option<bool>,
) -> bool {
    let prefix = prefix.strip_prefix(b"\xef\xbb\xbf").unwrap_or(prefix);
    let mut scan = Scan::new(prefix);
    if scan.next_token() != Some(b'{') {
        return false;
    }
    let mut depth = 1u32;
    while let Some(b) = scan.next_token() {
        match b {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                let Some(text) = scan.string() else {
                    return false;
                };
                // A key is a string at depth 1 followed by a colon; a string value is not.
                if depth == 1 && scan.peek_token() == Some(b':') {
                    scan.next_token();
                    if let Some(answer) = decide(text, &mut scan) {
                        return answer;
                    }
                }
            }
            _ => {}
        }
        if depth == 0 {
            return false;
        }
    }
    false
}
