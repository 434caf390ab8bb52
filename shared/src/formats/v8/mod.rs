//! V8 CPU profiles: DevTools `Profiler.Profile` documents, as Node's `--cpu-prof` and the
//! inspector write them (`.cpuprofile`).

mod cpuprofile;

use super::json_scan::top_level_keys;

pub(crate) use cpuprofile::{add_document, decode, Document, Node};

/// The key a node's first field may have: V8 writes `id` first, other writers reorder.
const NODE_KEYS: [&[u8]; 4] = [b"id", b"callFrame", b"hitCount", b"children"];

/// Whether `prefix` starts a `.cpuprofile`: a JSON object with a top-level `nodes` array whose
/// first element is an object starting with one of a node's keys. The top-level keys may come
/// in any order, so every key at depth 1 is looked at, not just the first; a prefix that ends
/// before `nodes` is not claimed (Node writes `nodes` first).
pub(crate) fn test(prefix: &[u8]) -> bool {
    top_level_keys(prefix, |key, scan| {
        (key == b"nodes").then(|| scan.followed_by(b"[{", |k| NODE_KEYS.contains(&k)))
    })
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
