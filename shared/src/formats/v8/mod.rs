//! V8 CPU profiles: DevTools `Profiler.Profile` documents, as Node's `--cpu-prof` and the
//! inspector write them (`.cpuprofile`).

mod cpuprofile;

use super::json_scan::top_level_keys;

pub(crate) use cpuprofile::{add_document, decode, Document, Node};

/// The key a node's first field may have: V8 writes `id` first, other writers reorder.
const NODE_KEYS: [&[u8]; 4] = [b"id", b"callFrame", b"hitCount", b"children"];

/// The key the older layout's `head` node may start with: Chrome wrote `functionName` first.
const HEAD_KEYS: [&[u8]; 9] = [
    b"functionName",
    b"scriptId",
    b"url",
    b"lineNumber",
    b"columnNumber",
    b"hitCount",
    b"callUID",
    b"children",
    b"id",
];

/// Whether `prefix` starts a `.cpuprofile`: a JSON object with a top-level `nodes` array whose
/// first element is an object starting with one of a node's keys, or (the older layout) a
/// top-level `head` object starting with one of its node's keys. The top-level keys may come
/// in any order, so every key at depth 1 is looked at, not just the first; a prefix that ends
/// before `nodes` or `head` is not claimed (both are written first).
pub(crate) fn test(prefix: &[u8]) -> bool {
    top_level_keys(prefix, |key, scan| match key {
        b"nodes" => Some(scan.followed_by(b"[{", |k| NODE_KEYS.contains(&k))),
        b"head" => Some(scan.followed_by(b"{", |k| HEAD_KEYS.contains(&k))),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::{decode, test};
    use crate::limits::Limits;
    use crate::model::Profile;

    /// The older layout: `head` with nested `children`, 1-based positions, seconds in
    /// `startTime`/`endTime`, absolute µs in `timestamps`.
    const OLD: &str = r#"{"head": {"functionName": "(root)", "url": "", "lineNumber": 0,
      "columnNumber": 0, "hitCount": 0, "callUID": 10, "id": 1, "children": [
        {"functionName": "main", "url": "a.js", "lineNumber": 3, "columnNumber": 5,
         "hitCount": 1, "callUID": 11, "id": 2, "children": [
           {"functionName": "", "url": "a.js", "lineNumber": 9, "columnNumber": 1,
            "hitCount": 2, "callUID": 12, "id": 3, "children": []}]},
        {"functionName": "(idle)", "url": "", "lineNumber": 0, "columnNumber": 0,
         "hitCount": 4, "callUID": 13, "id": 4, "children": []}]},
      "startTime": 12.5, "endTime": 12.5001"#;

    fn leaf_and_line(p: &Profile, i: usize) -> (String, Option<u32>) {
        let stack = p.samples().get(i).stack.unwrap();
        let frame = p.frame(p.stack_frames(stack).next().unwrap());
        let name = p.opt_str(frame.function).unwrap_or_default().to_owned();
        (name, frame.line)
    }

    #[test]
    fn the_older_layout_ticks_at_its_timestamps() {
        let doc = format!(
            "{OLD}, \"samples\": [2, 3, 4], \"timestamps\": [12500010, 12500030, 12500060]}}"
        );
        let p = decode(doc.as_bytes(), &Limits::default()).unwrap();
        let times: Vec<Option<i64>> = p.samples().iter().map(|s| s.time).collect();
        // startTime 12.5 s is 12,500,000 µs: the ticks keep their own times, in ns.
        assert_eq!(
            times,
            [
                Some(12_500_010_000),
                Some(12_500_030_000),
                Some(12_500_060_000)
            ]
        );
        // Each weighs the time to the next tick, the last to endTime (12,500,100 µs).
        let weights: Vec<i64> = p.samples().iter().map(|s| s.weight).collect();
        assert_eq!(weights, [20, 30, 40]);
        // Positions are 1-based in this layout and stay so.
        assert_eq!(leaf_and_line(&p, 0), ("main".to_owned(), Some(3)));
        assert_eq!(leaf_and_line(&p, 1), ("(anonymous)".to_owned(), Some(9)));
    }

    #[test]
    fn the_older_layout_in_microseconds_is_recognised_by_its_ticks() {
        let doc = OLD.replace(
            "\"startTime\": 12.5, \"endTime\": 12.5001",
            "\"startTime\": 12500000, \"endTime\": 12500100",
        );
        let doc = format!("{doc}, \"samples\": [2], \"timestamps\": [12500010]}}");
        let p = decode(doc.as_bytes(), &Limits::default()).unwrap();
        assert_eq!(p.samples().get(0).time, Some(12_500_010_000));
        assert_eq!(p.samples().get(0).weight, 90);
    }

    #[test]
    fn the_older_layout_without_ticks_is_aggregated_by_hit_count() {
        let p = decode(format!("{OLD}}}").as_bytes(), &Limits::default()).unwrap();
        let rows: Vec<(String, i64, bool, &str)> = (0..p.samples().len())
            .map(|i| {
                let s = p.samples().get(i);
                let series = p.str(p.series(s.series).name);
                (leaf_and_line(&p, i).0, s.weight, s.time.is_none(), series)
            })
            .collect();
        assert_eq!(
            rows,
            [
                ("main".to_owned(), 1, true, "samples"),
                ("(anonymous)".to_owned(), 2, true, "samples"),
                ("(idle)".to_owned(), 4, true, "idle")
            ]
        );
    }

    #[test]
    fn sniffs_nodes_in_any_key_order() {
        assert!(test(br#"{"nodes":[{"id":1,"callFrame":{}}]}"#));
        assert!(test(
            br#" { "startTime": 1, "samples": [1], "nodes" : [ { "callFrame": {}"#
        ));
        assert!(test(br#"{"meta":{"nodes":[]},"nodes":[{"hitCount":0"#));
    }

    #[test]
    fn sniffs_the_older_head_layout() {
        assert!(test(br#"{"head":{"functionName":"(root)","url":"","#));
        assert!(test(br#"{"startTime":1.5,"head":{"callUID":3,"#));
        assert!(!test(br#"{"head":{"title":"x"}}"#));
        assert!(!test(br#"{"head":[{"functionName":"a"}]}"#));
        assert!(!test(br#"{"x":{"head":{"functionName":"a"}}}"#));
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
