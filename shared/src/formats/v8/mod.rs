//! V8 CPU profiles: DevTools `Profiler.Profile` documents, as Node's `--cpu-prof` and the
//! inspector write them (`.cpuprofile`).

mod cpuprofile;

pub(crate) use cpuprofile::decode;

/// The key a node's first field may have: V8 writes `id` first, other writers reorder.
const NODE_KEYS: [&[u8]; 4] = [b"id", b"callFrame", b"hitCount", b"children"];

/// Whether `prefix` starts a `.cpuprofile`: a JSON object with a top-level `nodes` array whose
/// first element is an object starting with one of a node's keys. The top-level keys may come
/// in any order, so every key at depth 1 is looked at, not just the first; a prefix that ends
/// before `nodes` is not claimed (Node writes `nodes` first).
pub(crate) fn test(prefix: &[u8]) -> bool {
    let mut scan = Scan {
        bytes: prefix,
        at: 0,
    };
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
                if depth == 1 && text == b"nodes" && scan.next_token() == Some(b':') {
                    return scan.starts_node_array();
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

/// A cursor over JSON bytes that knows only what the sniffer needs: tokens and strings.
struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Scan<'_> {
    /// The next byte that is not whitespace, consumed.
    fn next_token(&mut self) -> Option<u8> {
        while let Some(&b) = self.bytes.get(self.at) {
            self.at += 1;
            if !b.is_ascii_whitespace() {
                return Some(b);
            }
        }
        None
    }

    /// The raw text of the string whose opening quote was just consumed, escapes left as
    /// they are (keys compared here have none); `None` when the prefix ends inside it.
    fn string(&mut self) -> Option<&[u8]> {
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

    /// Whether what follows is `[{"KEY"` with KEY one of a node's keys.
    fn starts_node_array(&mut self) -> bool {
        if self.next_token() != Some(b'[') || self.next_token() != Some(b'{') {
            return false;
        }
        if self.next_token() != Some(b'"') {
            return false;
        }
        self.string().is_some_and(|key| NODE_KEYS.contains(&key))
    }
}

#[cfg(test)]
mod tests {
    use super::test;

    #[test]
    fn sniffs_nodes_in_any_key_order() {
        assert!(test(br#"{"nodes":[{"id":1,"callFrame":{}}]}"#));
        assert!(test(
            br#" { "startTime": 1, "samples": [1], "nodes" : [ { "callFrame": {}"#
        ));
        assert!(test(br#"{"meta":{"nodes":[]},"nodes":[{"hitCount":0"#));
    }

    #[test]
    fn rejects_other_json() {
        assert!(!test(br#"{"nodes":[]}"#));
        assert!(!test(br#"{"x":{"nodes":[{"id":1}]}}"#));
        assert!(!test(br#"{"nodes":[{"name":"a"}]}"#));
        assert!(!test(br#"[{"nodes":[{"id":1}]}]"#));
        assert!(!test(b"nodes"));
        assert!(!test(br#"{"resourceProfiles":[]}"#));
    }
}
