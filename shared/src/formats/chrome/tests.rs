use super::{decode, test};
use crate::limits::Limits;
use crate::model::{MarkKind, MarkScope, Timestamps};

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
            let depth = s.stack.map_or(0, |h| p.stack_depth(h) as usize + 1);
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
    assert_eq!(p.stats["chrome_instants"], 1);
    let mark = p.marks()[0];
    assert_eq!((mark.time - origin, p.str(mark.name)), (650_000, "mark"));
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

const MARKS: &str = r#"[
  {"name": "tokens", "cat": "usage", "ph": "C", "ts": 10, "pid": 1, "tid": 2,
   "args": {"input": 18000, "output": 450.5, "model": "m", "nested": {"a": 1}, "list": [1]}},
  {"name": "heap", "ph": "C", "ts": 20, "pid": 1, "id": "7", "args": {"value": -3}},
  {"name": "heap", "ph": "C", "ts": 21, "pid": 1, "id": 8, "args": {"value": 4e3}},
  {"name": "start", "cat": "nav", "ph": "R", "ts": 30, "pid": 1, "tid": 2},
  {"name": "gc", "ph": "i", "s": "g", "ts": 40, "pid": 1, "tid": 2, "args": {"bytes": 12}},
  {"name": "old", "ph": "I", "ts": 50, "pid": 1, "tid": 3},
  {"name": "trace_truncated", "ph": "i", "ts": 60, "pid": 1, "tid": 2,
   "args": {"dropped_events": 5}},
  {"name": "untimed", "ph": "C", "pid": 1, "args": {"value": 1}}
]"#;

#[test]
fn instants_and_numeric_counter_args_become_marks() {
    let p = decode(MARKS.as_bytes(), "plain", &Limits::default()).unwrap();
    type Row<'a> = (i64, MarkKind, &'a str, Option<&'a str>, Option<f64>);
    let marks: Vec<Row<'_>> = p
        .marks()
        .iter()
        .map(|m| {
            let key = p.opt_str(m.key);
            (m.time / 1000, m.kind, p.str(m.name), key, m.value)
        })
        .collect();
    let (c, i) = (MarkKind::Counter, MarkKind::Instant);
    assert_eq!(
        marks,
        [
            (10, c, "tokens", Some("input"), Some(18000.0)),
            (10, c, "tokens", Some("output"), Some(450.5)),
            // catapult names a counter with an id `<name> <id>`.
            (20, c, "heap 7", Some("value"), Some(-3.0)),
            (21, c, "heap 8", Some("value"), Some(4000.0)),
            (30, i, "start", None, None),
            (40, i, "gc", None, None),
            (50, i, "old", None, None),
            (60, i, "trace_truncated", None, None),
        ]
    );
    let scopes: Vec<Option<MarkScope>> = p.marks()[4..].iter().map(|m| m.scope).collect();
    let t = Some(MarkScope::Thread);
    assert_eq!(scopes, [None, Some(MarkScope::Global), t, t]);
    assert_eq!(p.opt_str(p.marks()[0].category), Some("usage"));
    assert_eq!(p.opt_str(p.marks()[4].category), Some("nav"));
    let gc = p.label_set(p.marks()[5].labels.unwrap());
    assert_eq!(p.str(gc[0].key), "bytes");
    // The thread the instants name, and the counter without a tid on its own.
    let tid = |m: usize| p.thread(p.marks()[m].thread).tid;
    assert_eq!((tid(0), tid(2), tid(6)), (Some(2), None, Some(3)));
    assert_eq!(p.stats["chrome_counters"], 4);
    assert_eq!(p.stats["chrome_instants"], 4);
    assert_eq!(p.stats["chrome_counter_args_skipped"], 3);
    assert_eq!(p.stats["chrome_events_without_ts"], 1);
    // The truncation marker is a finding too.
    assert_eq!(p.stats["chrome_events_dropped_by_producer"], 5);
    assert_eq!(p.findings.len(), 1);
    assert_eq!(p.timestamps, Timestamps::TraceClock("chrome".into()));
}

#[test]
fn marks_are_bounded_by_max_samples() {
    let limits = Limits {
        max_samples: 3,
        ..Limits::default()
    };
    let err = decode(MARKS.as_bytes(), "plain", &limits).unwrap_err();
    assert!(err.to_string().contains("max_samples"), "{err}");
}

#[test]
fn args_past_max_span_args_are_counted_and_left_out() {
    let limits = Limits {
        max_span_args: 1,
        ..Limits::default()
    };
    let doc = r#"[{"name": "gc", "ph": "i", "ts": 1, "args": {"a": 1, "b": 2, "c": 3}}]"#;
    let p = decode(doc.as_bytes(), "plain", &limits).unwrap();
    let labels = p.label_set(p.marks()[0].labels.unwrap());
    assert_eq!(labels.len(), 1);
    assert_eq!(p.stats["span_args_dropped"], 2);
}

/// A DevTools profile in chunks: `(root)` and `(program)` first, then a chunk whose node names
/// a parent (9) and a tick naming a node (8) that the trace window cut away, one written
/// without the `data` wrapper, and the closing chunk with empty `args`.
const CHUNKED: &str = r#"{"metadata": {"source": "DevTools"}, "traceEvents": [
  {"name": "Profile", "ph": "P", "id": "0x1", "pid": 1, "tid": 2, "ts": 1000,
   "args": {"data": {"startTime": 1000.4}}},
  {"name": "ProfileChunk", "ph": "P", "id": "0x1", "pid": 1, "tid": 3, "ts": 1100,
   "args": {"data": {"cpuProfile": {"nodes": [
     {"id": 1, "callFrame": {"functionName": "(root)"}},
     {"id": 2, "callFrame": {"functionName": "(program)"}, "parent": 1}],
     "samples": [2, 2]}, "timeDeltas": [10, 20]}}},
  {"name": "ProfileChunk", "ph": "P", "id": "0x1", "pid": 1, "tid": 3, "ts": 1200,
   "args": {"cpuProfile": {"nodes": [
     {"id": 5, "callFrame": {"functionName": "f", "url": "a.js", "lineNumber": 0}, "parent": 9}],
     "samples": [5, 8, 2]}, "timeDeltas": [30, 40, 50]}},
  {"name": "ProfileChunk", "ph": "P", "id": "0x1", "pid": 1, "tid": 3, "ts": 1300, "args": {}}
]}"#;

#[test]
fn chunked_profiles_read_both_layouts_and_keep_ticks_a_cut_window_orphaned() {
    let p = decode(CHUNKED.as_bytes(), "plain", &Limits::default()).unwrap();
    let rows: Vec<(Option<i64>, Option<String>)> = p
        .samples()
        .iter()
        .map(|s| {
            let name = s.stack.map(|h| {
                let frame = p.frame(p.stack_frames(h).next().unwrap());
                p.opt_str(frame.function).unwrap_or_default().to_owned()
            });
            (s.time, name)
        })
        .collect();
    // Ticks at startTime (1000 µs) + the running sum of the deltas, in µs → ns.
    let times: Vec<Option<i64>> = [1010, 1030, 1060, 1100, 1150]
        .iter()
        .map(|us| Some(us * 1000))
        .collect();
    assert_eq!(rows.iter().map(|r| r.0).collect::<Vec<_>>(), times);
    let names: Vec<Option<&str>> = rows.iter().map(|r| r.1.as_deref()).collect();
    assert_eq!(
        names,
        [
            Some("(program)"),
            Some("(program)"),
            Some("f"),
            None,
            Some("(program)")
        ]
    );
    assert_eq!(p.stats.get("v8_unknown_node"), Some(&1));
    assert_eq!(p.stats.get("v8_unknown_parent"), Some(&1));
    assert_eq!(p.stats.get("v8_chunks_empty"), Some(&1));
    assert_eq!(p.stats.get("v8_profiles_malformed"), None);
}

#[test]
fn a_cpu_profile_instant_with_fractional_times_and_deltas_beside_it_is_read() {
    let trace = r#"[{"name": "CpuProfile", "ph": "I", "s": "t", "pid": 1, "tid": 2, "ts": 5000,
      "args": {"data": {"cpuProfile": {"nodes": [
        {"id": 1, "callFrame": {"functionName": "(root)"}, "children": [2]},
        {"id": 2, "callFrame": {"functionName": "g"}}],
        "startTime": 100.75, "endTime": 160.25, "samples": [2, 2, 2]},
        "timeDeltas": [10, 20, 20]}}}]"#;
    let p = decode(trace.as_bytes(), "plain", &Limits::default()).unwrap();
    let times: Vec<Option<i64>> = p.samples().iter().map(|s| s.time).collect();
    // startTime 100.75 µs rounds to 101.
    assert_eq!(times, [Some(111_000), Some(131_000), Some(151_000)]);
    let weights: Vec<i64> = p.samples().iter().map(|s| s.weight).collect();
    // Each weighs the time to the next tick; the last, to endTime (160).
    assert_eq!(weights, [20, 20, 9]);
}
