//! Chrome trace-event JSON: real traces from Chrome, DevTools, catapult and clang, each checked
//! against what this file computes from the events themselves (per thread, the time during
//! which any span was open; the spans begun; the spans never ended); detection both ways;
//! streaming leniency. Fixture provenance: tests/fixtures/chrome/SOURCES.md.

use std::collections::BTreeMap;

use super::decode;
use crate::{
    process_upload, store::LocalDirStore, store::ObjectStore, InputFormat, Outcome, ProcessOptions,
};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, TimestampMicrosecondType};
use arrow_array::{Array, RecordBatch};
use serde_json::Value;

use super::sample_v2::convert_input;
use super::tables::{i64s, read_tables};
use super::util::{
    assert_claims_no_other_input, assert_only_sniffer, first_output_start_ns, fixture, plain,
    repo_file, samples, stat,
};

const FIXTURES: [&str; 9] = [
    "chrome/catapult_nanoseconds.json",
    "chrome/catapult_traceviewify.json",
    "chrome/catapult_webview.json.gz",
    "chrome/clangbuildanalyzer_clang11-pid-45.json",
    "chrome/clangbuildanalyzer_clang19.1-win-main.json",
    "chrome/speedscope_chrome66-worker-cpuprofile-events.json",
    "chrome/speedscope_chrome69-devtools-simple.json",
    "chrome/speedscope_hermes-multi-thread-with-samples.json",
    "chrome/speedscope_trace-event-simple-partial.json",
];

/// Every trace-event input: the real fixtures, the Claude Code sample and its variants.
fn inputs() -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = FIXTURES
        .iter()
        .chain(&[
            "chrome/claude_code_snapshot.json",
            "chrome/claude_code_truncated.json",
        ])
        .map(|rel| (rel.to_string(), fixture(rel)))
        .collect();
    let sample = "samples/chrome/claude_code.json";
    out.push((sample.to_owned(), repo_file(sample)));
    out
}

/// The events of a document, read with a general JSON parser; a bare array Chrome left
/// without its `]` is closed first.
fn events(bytes: &[u8]) -> Vec<Value> {
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap_or_else(|_| {
        let closed = format!("{}]", text.trim_end().trim_end_matches(','));
        serde_json::from_str(&closed).unwrap()
    });
    match doc {
        Value::Array(events) => events,
        doc => doc["traceEvents"].as_array().cloned().unwrap_or_default(),
    }
}

/// Microseconds (a number or a string of one) in ns, as the format means them.
fn ns(v: &Value) -> Option<i64> {
    let n = match v {
        Value::String(s) => s.parse::<f64>().ok()?,
        v => v.as_f64()?,
    };
    match v.as_i64() {
        Some(i) => Some(i * 1000),
        None => Some((n * 1000.0).round() as i64),
    }
}

fn id(v: &Value) -> Option<i64> {
    match v {
        Value::String(s) => s.parse().ok(),
        v => v.as_i64(),
    }
}

/// What the events say, per (pid, tid).
#[derive(Default, Debug)]
struct Thread {
    /// +1 at each begin and -1 at each end, in file order within a time.
    steps: Vec<(i64, i32, bool)>,
    begun: u64,
    /// Begins and ends written as separate events.
    written_begun: u64,
    ended: u64,
}

struct Expected {
    threads: BTreeMap<(Option<i64>, Option<i64>), Thread>,
    last_ns: i64,
}

fn expected(bytes: &[u8]) -> Expected {
    let mut threads: BTreeMap<_, Thread> = BTreeMap::new();
    let mut last_ns = 0;
    for e in events(bytes) {
        let ph = e["ph"].as_str().unwrap_or("");
        if ph == "M" {
            continue;
        }
        let Some(ts) = ns(&e["ts"]) else { continue };
        let dur = ns(&e["dur"]);
        last_ns = last_ns.max(ts + dur.unwrap_or(0).max(0));
        let key = (id(&e["pid"]), id(&e["tid"]));
        match ph {
            "B" => {
                let t = threads.entry(key).or_default();
                t.steps.push((ts, 1, false));
                t.begun += 1;
                t.written_begun += 1;
            }
            "E" => {
                let t = threads.entry(key).or_default();
                t.steps.push((ts, -1, false));
                t.ended += 1;
            }
            "X" if dur.is_some_and(|d| d > 0) => {
                let t = threads.entry(key).or_default();
                t.steps.push((ts, 1, true));
                t.steps.push((ts + dur.unwrap(), -1, true));
                t.begun += 1;
            }
            _ => {}
        }
    }
    Expected { threads, last_ns }
}

/// The time during which any span of the thread was open: begins and ends as two counts
/// (an end closes no complete span), spans left open lasting to the document's last time.
fn open_ns(t: &Thread, last_ns: i64) -> i64 {
    let mut steps = t.steps.clone();
    // Ends of complete spans first at a time, then the rest in file order (a stable sort).
    steps.sort_by_key(|&(ts, step, complete)| (ts, !(complete && step < 0)));
    let (mut written, mut complete, mut total) = (0i64, 0i64, 0i64);
    for (i, &(ts, step, is_complete)) in steps.iter().enumerate() {
        if is_complete {
            complete += i64::from(step);
        } else {
            written = (written + i64::from(step)).max(0);
        }
        let next = steps.get(i + 1).map_or(last_ns.max(ts), |s| s.0);
        if written + complete > 0 {
            total += next - ts;
        }
    }
    total
}

#[test]
fn spans_weigh_the_time_any_span_was_open_on_each_thread() {
    for (rel, bytes) in inputs() {
        let bytes = plain(bytes, &rel);
        let want = expected(&bytes);
        let decoded = match decode(&bytes, None) {
            Ok(d) => d,
            Err(e) => {
                // Only a trace without any span may hold nothing to convert.
                let begun: u64 = want.threads.values().map(|t| t.begun).sum();
                assert_eq!(begun, 0, "{rel}: {e}");
                continue;
            }
        };
        assert_eq!(decoded.format, InputFormat::ChromeJson, "{rel}");
        let rows = samples(&decoded.profile);
        let mut got: BTreeMap<(Option<i64>, Option<i64>), i64> = BTreeMap::new();
        for s in rows.iter().filter(|s| s.series.name == "spans") {
            *got.entry((s.pid, s.tid)).or_default() += s.weight;
        }
        let mut begun = 0;
        let mut unterminated = 0;
        for (key, t) in &want.threads {
            let open = open_ns(t, want.last_ns);
            assert_eq!(
                got.get(key).copied().unwrap_or(0),
                open,
                "{rel}: thread {key:?}"
            );
            begun += t.begun;
            unterminated += t.written_begun.saturating_sub(t.ended);
        }
        // Async begins are spans too, on tracks of their own.
        let async_begun = events(&bytes)
            .iter()
            .filter(|e| e["ph"] == "b" && ns(&e["ts"]).is_some())
            .count() as u64;
        assert_eq!(
            stat(&decoded.profile, "spans"),
            begun + async_begun,
            "{rel}"
        );
        assert_eq!(
            stat(&decoded.profile, "spans_unterminated"),
            unterminated,
            "{rel}"
        );
        assert!(rows
            .iter()
            .all(|s| s.series.name != "spans" || s.series.unit == "nanoseconds"));
    }
}

#[test]
fn spans_nest_by_the_order_they_began() {
    // clang writes complete events children first; each still nests in its parent.
    let bytes = fixture("chrome/clangbuildanalyzer_clang11-pid-45.json");
    let decoded = decode(&bytes, None).unwrap();
    assert_eq!(stat(&decoded.profile, "spans_not_nested"), 0);
    let deepest = samples(&decoded.profile)
        .iter()
        .map(|s| s.frames().len())
        .max()
        .unwrap();
    assert!(deepest >= 3, "clang's spans nest: {deepest}");
}

#[test]
fn a_trace_chrome_left_without_its_bracket_converts() {
    let bytes = fixture("chrome/speedscope_trace-event-simple-partial.json");
    let decoded = decode(&bytes, None).unwrap();
    // One X has only thread time (`tdur`), so no wall-clock length.
    assert_eq!(stat(&decoded.profile, "spans_without_duration"), 1);
    assert_eq!(stat(&decoded.profile, "json_incomplete_last_element"), 0);
}

#[test]
fn only_the_chrome_sniffer_claims_trace_event_documents() {
    assert_only_sniffer(InputFormat::ChromeJson, &inputs());
}

#[test]
fn the_chrome_sniffer_claims_no_other_input() {
    assert_claims_no_other_input(InputFormat::ChromeJson, "chrome");
}

/// The manifests in a store, by key.
fn manifests(store: &LocalDirStore) -> Vec<(String, Value)> {
    store
        .list("")
        .unwrap()
        .into_iter()
        .filter(|k| k.ends_with("/manifest.json"))
        .map(|k| {
            let manifest = serde_json::from_slice(&store.get(&k).unwrap().unwrap()).unwrap();
            (k, manifest)
        })
        .collect()
}

#[test]
fn a_session_written_twice_under_one_key_keeps_only_the_last_conversion() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalDirStore::new(dir.path());
    let key = "uploads/agents/trace-5f0c3a52.json";
    let options = ProcessOptions::default();
    // A periodic write: the last tool and interaction are still open.
    store
        .put(key, &fixture("chrome/claude_code_snapshot.json"))
        .unwrap();
    assert!(matches!(
        process_upload(&store, &store, key, &options).unwrap(),
        Outcome::Converted(_)
    ));
    let first = manifests(&store);
    assert_eq!(first.len(), 1);
    let stats = &first[0].1["profile"]["stats"];
    assert_eq!(stats["spans_unterminated"], 2, "{stats}");
    let first_id = first[0].1["source"]["source_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // Its instants and counters too, which the last conversion must replace.
    let outputs = first[0].1["outputs"].as_array().unwrap();
    assert!(outputs.iter().any(|o| o["kind"] == "table:counters"));

    // The final write of the same session, under the same key.
    store
        .put(key, &repo_file("samples/chrome/claude_code.json"))
        .unwrap();
    assert!(matches!(
        process_upload(&store, &store, key, &options).unwrap(),
        Outcome::Converted(_)
    ));
    let last = manifests(&store);
    assert_eq!(last.len(), 1, "{last:?}");
    let source_id = last[0].1["source"]["source_id"].as_str().unwrap();
    assert_ne!(source_id, first_id);
    assert!(last[0].1["profile"]["stats"]
        .get("spans_unterminated")
        .is_none());
    // Nothing of the first conversion is left: no chunk, table file or manifest.
    let left: Vec<String> = store
        .list("")
        .unwrap()
        .into_iter()
        .filter(|k| k.contains(&first_id))
        .collect();
    assert_eq!(left, Vec::<String>::new());
}

#[test]
fn events_the_producer_dropped_are_a_finding_with_their_number() {
    let bytes = fixture("chrome/claude_code_truncated.json");
    let dropped: u64 = events(&bytes)
        .iter()
        .filter(|e| e["name"] == "trace_truncated")
        .map(|e| e["args"]["dropped_events"].as_u64().unwrap())
        .sum();
    assert_eq!(dropped, 20);
    let converted =
        crate::convert_upload("u/t.json", "e", &bytes, &crate::ConvertOptions::default()).unwrap();
    let profile = &converted.manifest.profile;
    assert_eq!(profile.stats["chrome_events_dropped_by_producer"], dropped);
    assert_eq!(profile.findings.len(), 1);
    assert!(
        profile.findings[0]
            .starts_with(&format!("the producer dropped {dropped} events before ts")),
        "{:?}",
        profile.findings
    );
    // The orphaned ends are counted, and still close a span each.
    assert!(profile.stats["spans_unmatched_end"] > 0);
}

/// V8's ticks in a trace, read from its events: per `Profile`/`ProfileChunk`/`CpuProfile`
/// event the sampled node ids, and the ids of `(idle)` nodes.
fn v8_ticks(bytes: &[u8]) -> (usize, usize) {
    let (mut ticks, mut idle_nodes, mut sampled) = (0, Vec::new(), Vec::new());
    for (i, e) in events(bytes).into_iter().enumerate() {
        let name = e["name"].as_str().unwrap_or("");
        if !matches!(name, "Profile" | "ProfileChunk" | "CpuProfile") {
            continue;
        }
        // A CpuProfile is a profile of its own; chunks belong to the profile of their id.
        let profile_key = match name {
            "CpuProfile" => Value::from(i),
            _ => e["id"].clone(),
        };
        // DevTools writes the fields in `args.data`, or (Chrome 141's export) in `args`.
        let data = match &e["args"]["data"] {
            Value::Null => &e["args"],
            data => data,
        };
        let profile = &data["cpuProfile"];
        for n in profile["nodes"].as_array().into_iter().flatten() {
            if n["callFrame"]["functionName"] == "(idle)" {
                idle_nodes.push((profile_key.clone(), n["id"].as_u64().unwrap()));
            }
        }
        for id in profile["samples"].as_array().into_iter().flatten() {
            ticks += 1;
            sampled.push((profile_key.clone(), id.as_u64().unwrap()));
        }
    }
    let idle = sampled.iter().filter(|s| idle_nodes.contains(s)).count();
    (ticks, idle)
}

#[test]
fn v8_samples_in_traces_are_one_timed_sample_per_tick() {
    for rel in [
        "chrome/speedscope_chrome69-devtools-simple.json",
        "chrome/speedscope_chrome66-worker-cpuprofile-events.json",
    ] {
        let bytes = fixture(rel);
        let (ticks, idle) = v8_ticks(&bytes);
        assert!(ticks > 2000, "{rel}: {ticks}");
        let decoded = decode(&bytes, None).unwrap();
        let rows = samples(&decoded.profile);
        let cpu = rows.iter().filter(|s| s.series.name == "cpu").count();
        let idle_rows = rows.iter().filter(|s| s.series.name == "idle").count();
        assert_eq!(cpu + idle_rows, ticks, "{rel}");
        assert_eq!(idle_rows, idle, "{rel}");
        assert_eq!(stat(&decoded.profile, "v8_profiles_malformed"), 0, "{rel}");
        // JavaScript frames with their positions, on the threads of the profiles' events.
        let js = rows
            .iter()
            .filter(|s| s.series.name == "cpu")
            .flat_map(|s| s.frames())
            .filter(|f| f.kind == "javascript" && f.line.is_some())
            .count();
        assert!(js > 0, "{rel}");
        assert!(rows
            .iter()
            .filter(|s| s.series.name == "cpu")
            .all(|s| s.tid.is_some()));
    }
}

#[test]
fn catapult_samples_resolve_their_stack_frames() {
    for rel in [
        "chrome/catapult_traceviewify.json",
        "chrome/speedscope_hermes-multi-thread-with-samples.json",
    ] {
        let bytes = fixture(rel);
        let doc: Value = serde_json::from_slice(&bytes).unwrap();
        let want = doc["samples"].as_array().unwrap();
        let frames = doc["stackFrames"].as_object().unwrap();
        let decoded = decode(&bytes, None).unwrap_or_else(|e| panic!("{rel}: {e}"));
        let rows: Vec<_> = samples(&decoded.profile)
            .into_iter()
            .filter(|s| s.series.name == "samples")
            .collect();
        assert_eq!(rows.len(), want.len(), "{rel}");
        // Each sample's stack is its frame's chain of parents, checked for every sample.
        let mut by_time: Vec<(i64, Vec<String>)> = want
            .iter()
            .map(|s| {
                let mut names = Vec::new();
                let mut at = s["sf"].clone();
                while let Some(f) = frames.get(&id_text(&at)) {
                    names.push(f["name"].as_str().unwrap().to_owned());
                    at = f["parent"].clone();
                }
                names.reverse();
                (ns(&s["ts"]).unwrap(), names)
            })
            .collect();
        by_time.sort();
        let mut got: Vec<(i64, Vec<String>)> = rows
            .iter()
            .map(|s| {
                let names = s
                    .frames()
                    .iter()
                    .map(|f| f.function.clone().unwrap())
                    .collect();
                (s.time.unwrap(), names)
            })
            .collect();
        got.sort();
        assert_eq!(got, by_time, "{rel}");
    }
}

fn id_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        v => v.to_string(),
    }
}

#[test]
fn async_spans_are_tracks_of_their_own() {
    let bytes = fixture("chrome/clangbuildanalyzer_clang19.1-win-main.json");
    // Per `<cat>:<id>`, the time during which any of its async spans was open.
    let mut want: BTreeMap<String, Thread> = BTreeMap::new();
    let mut last_ns = 0;
    for e in events(&bytes) {
        let Some(ts) = ns(&e["ts"]) else { continue };
        last_ns = last_ns.max(ts + ns(&e["dur"]).unwrap_or(0).max(0));
        let ph = e["ph"].as_str().unwrap_or("");
        if ph != "b" && ph != "e" {
            continue;
        }
        let key = format!("{}:{}", e["cat"].as_str().unwrap(), id_text(&e["id"]));
        let t = want.entry(key).or_default();
        t.steps.push((ts, if ph == "b" { 1 } else { -1 }, false));
    }
    assert!(!want.is_empty());
    let decoded = decode(&bytes, None).unwrap();
    let p = &decoded.profile;
    let mut got: BTreeMap<String, i64> = BTreeMap::new();
    for s in p.samples().iter() {
        if p.str(p.series(s.series).name) != "async_spans" {
            continue;
        }
        let track = p
            .label_set(s.labels.unwrap())
            .iter()
            .find(|l| p.str(l.key) == "async_track")
            .map(|l| match l.value {
                crate::model::LabelValue::Str(v) => p.str(v).to_owned(),
                _ => panic!("a text label"),
            })
            .unwrap();
        *got.entry(track).or_default() += s.weight;
    }
    let want: BTreeMap<String, i64> = want
        .iter()
        .map(|(k, t)| (k.clone(), open_ns(t, last_ns)))
        .collect();
    assert_eq!(got, want);
    let (_, series) = p
        .all_series()
        .find(|(_, s)| p.str(s.name) == "async_spans")
        .unwrap();
    assert_eq!(series.kind, crate::model::SeriesKind::Other);
}

#[test]
fn clang_traces_are_on_the_wall_clock_from_their_beginning_of_time() {
    let bytes = fixture("chrome/clangbuildanalyzer_clang11-pid-45.json");
    let doc: Value = serde_json::from_slice(&bytes).unwrap();
    let origin_ns = doc["beginningOfTime"].as_i64().unwrap() * 1000;
    let first_ts = events(&bytes)
        .iter()
        .filter(|e| e["ph"] == "X" && ns(&e["dur"]).is_some_and(|d| d > 0))
        .filter_map(|e| ns(&e["ts"]))
        .min()
        .unwrap();
    let decoded = decode(&bytes, None).unwrap();
    assert_eq!(
        decoded.profile.timestamps,
        crate::model::Timestamps::UnixEpoch
    );
    let first = samples(&decoded.profile)
        .iter()
        .filter_map(|s| s.time)
        .min()
        .unwrap();
    assert_eq!(first, origin_ns + first_ts);
}

#[test]
fn devtools_start_time_places_a_trace_unless_the_metadata_says_otherwise() {
    let doc = br#"{"metadata": {"source": "DevTools", "startTime": "2025-11-22T08:26:40.000Z"},
      "traceEvents": [{"ph": "X", "name": "RunTask", "ts": 5000000, "dur": 50000, "pid": 1, "tid": 1},
                      {"ph": "X", "name": "RunTask", "ts": 5060000, "dur": 50000, "pid": 1, "tid": 1}]}"#;
    let converted =
        crate::convert_upload("u/d.json", "e", doc, &crate::ConvertOptions::default()).unwrap();
    let manifest = &converted.manifest;
    assert!(manifest
        .profile
        .timestamps
        .contains("anchored at the input's start time"));
    // 2025-11-22T08:26:40Z is 1 763 800 000 s.
    let first = manifest
        .outputs
        .iter()
        .filter_map(|o| o.start_ns)
        .min()
        .unwrap();
    assert_eq!(first, 1_763_800_000_000_000_000);
    let options = crate::ConvertOptions {
        metadata: crate::UploadMetadata {
            timestamp: Some(1_700_000_000.0),
            ..crate::UploadMetadata::default()
        },
        ..crate::ConvertOptions::default()
    };
    let converted = crate::convert_upload("u/d.json", "e", doc, &options).unwrap();
    let first = first_output_start_ns(&converted.manifest);
    assert_eq!(first, 1_700_000_000_000_000_000);
}

/// One `counters` row: (µs after the first mark, kind, name, key, value, pid, tid).
type MarkRow = (
    i64,
    String,
    String,
    Option<String>,
    Option<f64>,
    Option<i64>,
    Option<i64>,
);

/// The instants and numeric counter args of a document, read from its events: an instant per
/// timed `i`/`I`/`R`, a counter value per numeric arg of a timed `C` (named `<name> <id>` when
/// it has an id), sorted as rows are.
fn marks_of(bytes: &[u8]) -> Vec<MarkRow> {
    let mut out = Vec::new();
    for e in events(bytes) {
        let (Some(ph), Some(ts)) = (e["ph"].as_str(), e.get("ts").and_then(ns)) else {
            continue;
        };
        let name = e["name"].as_str().unwrap_or("").to_owned();
        let (pid, tid) = (id(&e["pid"]), id(&e["tid"]));
        let row = |kind: &str, name: String, key: Option<&String>, value| {
            (
                ts / 1000,
                kind.to_owned(),
                name,
                key.cloned(),
                value,
                pid,
                tid,
            )
        };
        match ph {
            "i" | "I" | "R" => out.push(row("instant", name, None, None)),
            "C" => {
                let name = match &e["id"] {
                    Value::Null => name,
                    Value::String(id) => format!("{name} {id}"),
                    id => format!("{name} {id}"),
                };
                let args = e["args"].as_object().cloned().unwrap_or_default();
                for (key, value) in &args {
                    if let Some(v) = value.as_f64().filter(|_| value.is_number()) {
                        out.push(row("counter", name.clone(), Some(key), Some(v)));
                    }
                }
            }
            _ => {}
        }
    }
    let first = out.iter().map(|r| r.0).min().unwrap_or(0);
    for r in &mut out {
        r.0 -= first;
    }
    out.sort_by_key(|r| (r.0, r.5, r.6));
    out
}

/// The rows of a `counters` table, times after its first row's.
fn counter_rows(t: &RecordBatch) -> Vec<MarkRow> {
    let col = |c: &str| t.column_by_name(c).unwrap();
    let opt_str = |c: &str, i: usize| {
        let a = col(c).as_string::<i32>();
        a.is_valid(i).then(|| a.value(i).to_owned())
    };
    let times = col("timestamp").as_primitive::<TimestampMicrosecondType>();
    let values = col("value").as_primitive::<Float64Type>();
    let (pids, tids) = (i64s(t, "pid"), i64s(t, "thread_id"));
    let first = times.iter().flatten().min().unwrap_or(0);
    (0..t.num_rows())
        .map(|i| {
            let (kind, name) = (opt_str("kind", i).unwrap(), opt_str("name", i).unwrap());
            let value = values.is_valid(i).then(|| values.value(i));
            (
                times.value(i) - first,
                kind,
                name,
                opt_str("key", i),
                value,
                pids[i],
                tids[i],
            )
        })
        .collect()
}

#[test]
fn instants_and_counter_values_are_counters_rows() {
    let inputs = [
        repo_file("samples/chrome/claude_code.json"),
        fixture("chrome/speedscope_chrome69-devtools-simple.json"),
    ];
    let mut seen = Vec::new();
    for bytes in inputs {
        let want = marks_of(&bytes);
        let converted = convert_input("uploads/trace.json", &bytes).unwrap();
        let tables = read_tables(&converted);
        let rows: Vec<MarkRow> = tables["counters"].iter().flat_map(counter_rows).collect();
        // Rows are sorted by timestamp, pid and thread, and are the document's marks.
        assert!(rows.is_sorted_by_key(|r| (r.0, r.5, r.6)));
        let sorted = |mut v: Vec<MarkRow>| {
            v.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
            v
        };
        assert_eq!(sorted(rows.clone()), sorted(want.clone()));
        let count = |kind: &str| want.iter().filter(|r| r.1 == kind).count() as u64;
        let stats = &converted.manifest.profile.stats;
        assert_eq!(
            stats.get("chrome_instants").copied().unwrap_or(0),
            count("instant")
        );
        assert_eq!(
            stats.get("chrome_counters").copied().unwrap_or(0),
            count("counter")
        );
        let listed = converted.manifest.outputs.iter();
        let files: Vec<_> = listed.filter(|o| o.kind == "table:counters").collect();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].rows, Some(rows.len() as u64));
        seen.push((count("instant"), count("counter")));
    }
    // Claude Code's sample: a turn_start instant and two tokens counters of two args each.
    assert_eq!(seen[0], (1, 4));
    assert!(seen[1].0 > 50, "{seen:?}");
}

/// The node ids a trace's V8 chunks define and the ids its ticks name, read from its events
/// with a general JSON parser (either layout of `args`).
fn chunk_nodes_and_ticks(bytes: &[u8]) -> (Vec<u64>, Vec<u64>) {
    let (mut nodes, mut ticks) = (Vec::new(), Vec::new());
    for e in events(bytes) {
        if e["name"] != "ProfileChunk" {
            continue;
        }
        let data = match &e["args"]["data"] {
            Value::Null => &e["args"],
            data => data,
        };
        let profile = &data["cpuProfile"];
        for n in profile["nodes"].as_array().into_iter().flatten() {
            nodes.push(n["id"].as_u64().unwrap());
        }
        for id in profile["samples"].as_array().into_iter().flatten() {
            ticks.push(id.as_u64().unwrap());
        }
    }
    (nodes, ticks)
}

#[test]
fn chrome_141_devtools_exports_keep_every_tick() {
    let rel = "chrome/proflake_devtools-chrome141.json";
    let bytes = fixture(rel);
    let (nodes, ticks) = chunk_nodes_and_ticks(&bytes);
    assert_eq!(ticks.len(), 421);
    let decoded = decode(&bytes, None).unwrap();
    assert_eq!(decoded.format, InputFormat::ChromeJson);
    assert_eq!(samples(&decoded.profile).len(), ticks.len());
    // Ticks naming a node the cut window took keep their time, without a stack.
    let orphaned = ticks.iter().filter(|id| !nodes.contains(id)).count();
    assert!(orphaned > 0);
    assert_eq!(stat(&decoded.profile, "v8_unknown_node"), orphaned as u64);
    let stackless = samples(&decoded.profile)
        .iter()
        .filter(|s| s.frames().is_empty())
        .count();
    assert_eq!(stackless, orphaned);
    assert_eq!(stat(&decoded.profile, "v8_profiles_malformed"), 0);
    // Converted with nothing but its arrival time.
    let options = crate::ConvertOptions {
        received_at_ns: Some(1_760_997_340_761_000_000),
        ..crate::ConvertOptions::default()
    };
    let converted = crate::convert_upload("uploads/t.json", "etag", &bytes, &options).unwrap();
    assert_eq!(converted.manifest.profile.samples, ticks.len() as u64);
    assert!(converted.manifest.sample_v2.samples > 0);
}

#[test]
fn a_cpu_profile_instant_of_an_older_devtools_export_keeps_its_ticks() {
    let rel = "chrome/proflake_devtools-cpuprofile-instant.json";
    let bytes = fixture(rel);
    let (ticks, idle) = v8_ticks(&bytes);
    assert_eq!((ticks, idle), (20, 0));
    let decoded = decode(&bytes, None).unwrap();
    let rows = samples(&decoded.profile);
    assert_eq!(rows.len(), ticks);
    // Times from the fractional startTime and the deltas beside the profile.
    let doc: Value = serde_json::from_slice(&bytes).unwrap();
    let data = &doc[1]["args"]["data"];
    let start = data["cpuProfile"]["startTime"].as_f64().unwrap().round() as i64;
    let mut t = start;
    let expected: Vec<Option<i64>> = data["timeDeltas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            t += d.as_i64().unwrap();
            Some(t * 1000)
        })
        .collect();
    assert_eq!(rows.iter().map(|s| s.time).collect::<Vec<_>>(), expected);
}
