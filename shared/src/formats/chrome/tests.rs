use super::{decode, test};
use crate::limits::Limits;
use crate::model::Timestamps;

#[test]
fn sniffs_trace_event_documents_in_their_shapes() {
    assert!(test(br#"{"traceEvents": [{"ph": "X"}]}"#));
    assert!(test(br#"{"displayTimeUnit": "ns", "traceEvents": []}"#));
    assert!(test(br#"[{"name": "a", "ph": "B", "ts": 1}"#));
    assert!(test(b"\xef\xbb\xbf\n[ {\"pid\": 1"));
    assert!(test(
        br#"{"metadata": {"a": [1, 2], "b": {"c": "long and cut"#
    ));
    assert!(test(br#"{"metadata": {"source": "x"}, "traceEvents": ["#));
    assert!(test(
        br#"{"stackFrames": {"1": {"name": "f"}}, "samples": []}"#
    ));
    assert!(test(br#"{"samples": [{"ts": 1, "sf": 2}]}"#));
}

#[test]
fn leaves_other_json_alone() {
    assert!(!test(br#"{"metadata": {"a": 1}}"#));
    assert!(!test(br#"{"nodes": [{"id": 1}], "traceEvents": []}"#));
    assert!(!test(
        br#"{"version": "2", "profile": {"samples": [{"x": 1}]}}"#
    ));
    assert!(!test(br#"{"samples": [1, 2], "nodes": []}"#));
    assert!(!test(br#"[]"#));
    assert!(!test(br#"[{"version": "2"}]"#));
    assert!(!test(br#"{"meta": {}, "traceEvents": []}"#));
}

const SESSION: &str = r#"{"traceEvents": [
  {"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "main"}},
  {"name": "thread_name", "ph": "M", "pid": 1, "tid": 7, "args": {"name": "agent"}},
  {"name": "API Call", "cat": "api", "ph": "B", "ts": 0, "pid": 1, "tid": 7, "args": {"model": "m"}},
  {"name": "Sampling", "ph": "X", "ts": 100, "dur": 300, "pid": 1, "tid": 7},
  {"name": "API Call", "ph": "E", "ts": 500, "pid": 1, "tid": 7, "args": {"ttft_ms": 12}},
  {"name": "Tool: Bash", "ph": "B", "ts": 600, "pid": 1, "tid": 7},
  {"name": "mark", "ph": "i", "ts": 650, "pid": 1, "tid": 7}
], "metadata": {"trace_start_time": "2025-07-30T15:39:37.123Z"}}"#;

#[test]
fn spans_become_stretches_with_their_args_on_the_wall_clock() {
    let p = decode(SESSION.as_bytes(), "plain", &Limits::default()).unwrap();
    assert_eq!(p.timestamps, Timestamps::UnixEpoch);
    let origin = 1_753_889_977_123_000_000i64;
    let rows: Vec<(i64, i64, usize)> = p
        .samples()
        .iter()
        .map(|s| {
            let depth = s.stack.map_or(0, |h| p.stack(h).depth as usize + 1);
            (s.time.unwrap() - origin, s.weight, depth)
        })
        .collect();
    // API Call 0-100, API Call;Sampling 100-400, API Call 400-500, Tool: Bash 600-650 (open
    // to the last event).
    assert_eq!(
        rows,
        [
            (0, 100_000, 1),
            (100_000, 300_000, 2),
            (400_000, 100_000, 1),
            (600_000, 50_000, 1)
        ]
    );
    // The API call's stretches carry its begin's args and its end's.
    let first = p.samples().get(0).labels.unwrap();
    let keys: Vec<&str> = p.label_set(first).iter().map(|l| p.str(l.key)).collect();
    assert_eq!(keys, ["model", "ttft_ms"]);
    assert_eq!(p.stats["spans_unterminated"], 1);
    assert_eq!(p.stats["chrome_instant_events"], 1);
    let (_, thread) = p.threads().next().unwrap();
    assert_eq!(p.opt_str(thread.name), Some("agent"));
}

#[test]
fn a_document_cut_mid_event_keeps_every_whole_event() {
    let cut = &SESSION.as_bytes()[..SESSION.find(r#"{"name": "mark""#).unwrap() + 10];
    let p = decode(cut, "plain", &Limits::default()).unwrap();
    assert_eq!(p.stats["json_incomplete_last_element"], 1);
    assert_eq!(p.timestamps, Timestamps::TraceClock("chrome".into()));
    // The tool span began at the last whole event's time, so it has no length yet.
    assert_eq!(p.samples().len(), 3);
    assert_eq!(p.stats["spans_unterminated"], 1);
}
