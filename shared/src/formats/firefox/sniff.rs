//! Telling a Firefox Profiler document from the other JSON inputs by its first bytes.

/// Keys Firefox and samply write first in `meta`: both layouts start it with one of these,
/// whatever version wrote them.
const META_KEYS: [&[u8]; 12] = [
    b"version",
    b"preprocessedProfileVersion",
    b"interval",
    b"startTime",
    b"categories",
    b"product",
    b"debug",
    b"extensions",
    b"abi",
    b"platform",
    b"processType",
    b"stackwalk",
];

/// Keys a gecko profile starts with when the DevTools Performance panel wraps it in `profile`.
const WRAPPED_KEYS: [&[u8]; 3] = [b"libs", b"meta", b"threads"];

/// The keys a DevTools Performance panel recording starts with, in its order: its `markers`
/// can fill the prefix before `profile` comes.
const RECORDING_KEYS: [&[u8]; 3] = [b"label", b"duration", b"markers"];

/// Whether `prefix` starts a Firefox Profiler document: a JSON object with a top-level `meta`
/// object starting with one of [`META_KEYS`], or a DevTools recording (`profile` holding a
/// gecko profile, `fileType` "Recorded Performance Data", or the recording's first three
/// keys). Top-level keys may come in any order, so each one at depth 1 is looked at; nested
/// keys never count, so a `meta` inside another document's arguments does not claim it.
pub(crate) fn test(prefix: &[u8]) -> bool {
    let mut cursor = Cursor {
        bytes: prefix,
        at: 0,
    };
    if cursor.token() != Some(b'{') {
        return false;
    }
    // Whether the keys so far are the first of RECORDING_KEYS.
    let mut recording = true;
    for position in 0.. {
        // At depth 1, before a key.
        if cursor.token() != Some(b'"') {
            return false;
        }
        let Some(key) = cursor.quoted() else {
            return false;
        };
        if cursor.token() != Some(b':') {
            return false;
        }
        recording &= RECORDING_KEYS.get(position) == Some(&key);
        let verdict = match key {
            b"meta" => Some(cursor.object_starting_with(&META_KEYS)),
            b"profile" => Some(cursor.object_starting_with(&WRAPPED_KEYS)),
            b"fileType" => Some(
                cursor.token() == Some(b'"')
                    && cursor.quoted() == Some(b"Recorded Performance Data"),
            ),
            b"markers" if recording => Some(cursor.token() == Some(b'[')),
            _ => None,
        };
        match verdict {
            Some(verdict) => return verdict,
            None if cursor.skip_value() && cursor.token() == Some(b',') => {}
            None => return false,
        }
    }
    false
}

/// A position in the prefix; every method returns `None` or `false` once the prefix ends.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    /// The next byte that is not JSON whitespace (nor a byte order mark), consumed.
    fn token(&mut self) -> Option<u8> {
        if self.at == 0 && self.bytes.starts_with(b"\xEF\xBB\xBF") {
            self.at = 3;
        }
        let skip = self.bytes[self.at.min(self.bytes.len())..]
            .iter()
            .position(|b| !b.is_ascii_whitespace())?;
        self.at += skip + 1;
        Some(self.bytes[self.at - 1])
    }

    /// The raw text up to the closing quote of a string whose opening quote was consumed.
    fn quoted(&mut self) -> Option<&'a [u8]> {
        let bytes: &'a [u8] = self.bytes;
        let start = self.at;
        let mut i = start;
        while i < bytes.len() {
            match bytes[i] {
                b'\\' => i += 2,
                b'"' => {
                    self.at = i + 1;
                    return Some(&bytes[start..i]);
                }
                _ => i += 1,
            }
        }
        None
    }

    /// Whether an object follows whose first key is one of `keys`.
    fn object_starting_with(&mut self, keys: &[&[u8]]) -> bool {
        self.token() == Some(b'{')
            && self.token() == Some(b'"')
            && self.quoted().is_some_and(|key| keys.contains(&key))
    }

    /// Steps over one value: a scalar, or a whole object or array with the strings in it.
    fn skip_value(&mut self) -> bool {
        let mut depth = 0usize;
        loop {
            match self.token() {
                None => return false,
                Some(b'"') => {
                    if self.quoted().is_none() {
                        return false;
                    }
                }
                // Inside a container: separators between its members.
                Some(b':' | b',') if depth > 0 => {}
                Some(b'{' | b'[') => depth += 1,
                Some(b'}' | b']') => match depth.checked_sub(1) {
                    Some(d) => depth = d,
                    None => return false,
                },
                Some(_) => {
                    // A scalar runs to the next delimiter.
                    let rest = &self.bytes[self.at..];
                    let end = rest.iter().position(|b| b",}] \t\r\n".contains(b));
                    match end {
                        Some(n) => self.at += n,
                        None => return false,
                    }
                }
            }
            if depth == 0 {
                return true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test;

    #[test]
    fn sniffs_both_layouts_and_recordings() {
        assert!(test(
            br#"{"meta":{"interval":1,"preprocessedProfileVersion":41}"#
        ));
        assert!(test(br#"{"meta":{"version":24,"startTime":1}}"#));
        assert!(test(br#" {"libs":[{"a":"}"}],"meta":{"categories":[]"#));
        assert!(test(br#"{"label":"x","duration":2,"profile":{"libs":[]"#));
        assert!(test(br#"{"fileType":"Recorded Performance Data","x":1}"#));
        assert!(test(
            br#"{"label":"","duration":51.3,"markers":[{"name":"Javascript""#
        ));
        assert!(test(br#"{"a":{"b":[1,{"c":":"}]},"meta":{"version":1}}"#));
        assert!(test(b"\xEF\xBB\xBF{\"meta\" : { \"version\": 9"));
    }

    #[test]
    fn rejects_other_json() {
        assert!(!test(br#"{"traceEvents":[],"metadata":{"version":1}}"#));
        assert!(!test(br#"{"x":{"meta":{"version":1}}}"#));
        assert!(!test(br#"{"meta":{"name":"a"}}"#));
        assert!(!test(br#"{"version":"2","profile":{"samples":[]}}"#));
        assert!(!test(br#"{"nodes":[{"id":1}],"meta":"#));
        assert!(!test(br#"[{"meta":{"version":1}}]"#));
        assert!(!test(b"meta"));
        assert!(!test(br#"{"label":"","markers":[]}"#));
        assert!(!test(br#"{"label":"","duration":1,"markers":{}}"#));
    }
}
