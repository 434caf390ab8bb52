//! The Firefox Profiler export, read back by proflake's own processed-format decoder and checked
//! field by field.

use std::collections::BTreeMap;

use serde_json::Value;

use super::slice::{self, Slice};
use super::tests::{convert, pprof_sample, repo_file, totals, Totals};
use super::*;

/// Per stack (frame names, root first): a sum.
type Stacks = BTreeMap<Vec<String>, i64>;

/// Per (thread name, series `sample_type`, `sample_unit`): the stacks' sums, through the slice.
fn thread_totals(slice: &Slice) -> BTreeMap<(String, String, String), Stacks> {
    let mut out: BTreeMap<(String, String, String), Stacks> = BTreeMap::new();
    let s = &slice.samples;
    for i in 0..s.len() {
        let thread = slice.threads[s.thread[i] as usize]
            .name
            .clone()
            .unwrap_or_default();
        let series = &slice.series[s.series[i] as usize];
        let path = slice.path(s.node[i]);
        *out.entry((thread, series.sample_type.clone(), series.unit.clone()))
            .or_default()
            .entry(path)
            .or_default() += s.value[i];
    }
    out
}

/// What each original series should come back as, with the decoder's names: the weights under
/// `samples`/`count` (`allocations`/`bytes` for a bytes series), in the threads named after the
/// series when there are several.
struct Reimported {
    /// Per original series: the stacks of its weights.
    weights: Totals,
    /// Per original series: the stacks of the decoder's `cpu`/`microseconds` series, which it
    /// reads from `threadCPUDelta`.
    cpu: Totals,
}

fn reimport(original: &Slice, again: &TableBatches) -> Reimported {
    let again = slice::build(again, &Selection::default(), slice::Detail::EveryRow)
        .expect("re-imported slice");
    let several = original.series.len() > 1;
    let mut out = Reimported {
        weights: Totals::new(),
        cpu: Totals::new(),
    };
    for ((thread, ty, unit), stacks) in thread_totals(&again) {
        // The thread's series: named in the thread when there are several, else the only one.
        let series = original
            .series
            .iter()
            .find(|s| !several || thread.ends_with(&format!(" ({})", s.sample_type)))
            .unwrap_or_else(|| panic!("thread {thread:?} names no series"));
        let key = (series.sample_type.clone(), series.unit.clone());
        let target = match (ty.as_str(), unit.as_str()) {
            ("samples", "count") | ("allocations", "bytes") => &mut out.weights,
            ("cpu", "microseconds") => &mut out.cpu,
            other => panic!("unexpected series {other:?} in thread {thread:?}"),
        };
        let into = target.entry(key).or_default();
        for (path, v) in stacks {
            *into.entry(path).or_default() += v;
        }
    }
    out
}

/// Per CPU-time series in ns: the stacks' sums of whole µs, per sample as the CPU delta holds
/// them.
fn cpu_micros(slice: &Slice) -> Totals {
    let mut out = Totals::new();
    let s = &slice.samples;
    for i in 0..s.len() {
        let series = &slice.series[s.series[i] as usize];
        if !series.is_cpu() || series.unit != "nanoseconds" || s.value[i] < 1000 {
            continue;
        }
        let path = slice.path(s.node[i]);
        *out.entry((series.sample_type.clone(), series.unit.clone()))
            .or_default()
            .entry(path)
            .or_default() += s.value[i] / 1000;
    }
    out
}

fn export_firefox(tables: &TableBatches, name: &str) -> Exported {
    let mut request = ExportRequest::new(Selection::default(), ExportFormat::Firefox);
    request.name = name.to_owned();
    export_tables(tables, &request).expect("firefox export")
}

fn perf_sample() -> TableBatches {
    let metadata = String::from_utf8(repo_file(
        "samples/perf-script/simple-with-header.metadata.json",
    ))
    .expect("metadata");
    let metadata = metadata.replacen('{', r#"{"service":"simple","#, 1);
    convert(
        &repo_file("samples/perf-script/simple-with-header.perf.txt"),
        "simple/simple-with-header.perf.txt",
        &metadata,
    )
}

/// Exports `tables`, reads the export back, and compares every series' stacks.
fn assert_round_trip(tables: &TableBatches, key: &str) -> (Exported, Reimported) {
    let before = totals(tables);
    assert!(!before.is_empty(), "{key}: nothing to compare");
    let original =
        slice::build(tables, &Selection::default(), slice::Detail::EveryRow).expect("slice");
    let exported = export_firefox(tables, "round trip");
    let again = convert(&exported.bytes, key, r#"{"service":"again"}"#);
    let back = reimport(&original, &again);
    assert_eq!(back.weights, before, "{key}: weights per series and stack");
    // The CPU deltas: only the CPU-time series carry them, in whole µs per sample.
    assert_eq!(back.cpu, cpu_micros(&original), "{key}: CPU deltas");
    (exported, back)
}

#[test]
fn firefox_round_trip_keeps_perf_script_stacks() {
    let tables = perf_sample();
    let (exported, back) = assert_round_trip(&tables, "again/perf.json");
    assert_eq!(exported.series.len(), 1);
    // cpu-clock samples are CPU time: the activity graph has their CPU.
    assert!(!back.cpu.is_empty(), "the CPU series carries CPU deltas");
}

#[test]
fn firefox_round_trip_keeps_every_pprof_series() {
    let tables = pprof_sample();
    let (exported, back) = assert_round_trip(&tables, "again/pprof.json");
    assert!(exported.series.len() > 1, "the sample has several series");
    assert_eq!(back.weights.len(), exported.series.len());
}

#[test]
fn firefox_round_trip_without_cpu_leaves_out_cpu_deltas() {
    let tables = convert(
        &repo_file("samples/folded/pyspy.folded"),
        "app/pyspy.folded",
        r#"{"service":"app"}"#,
    );
    let (exported, back) = assert_round_trip(&tables, "again/pyspy.json");
    assert!(back.cpu.is_empty());
    let json: Value = serde_json::from_slice(&exported.bytes).expect("JSON");
    for thread in json["threads"].as_array().expect("threads") {
        assert!(thread["samples"].get("threadCPUDelta").is_none());
        assert!(thread["samples"]["weight"].is_array());
    }
}

fn array<'v>(v: &'v Value, what: &str) -> &'v Vec<Value> {
    v.as_array()
        .unwrap_or_else(|| panic!("{what} is not an array: {v}"))
}

#[test]
fn firefox_export_has_the_processed_format_fields() {
    let tables = pprof_sample();
    let slice =
        slice::build(&tables, &Selection::default(), slice::Detail::EveryRow).expect("slice");
    let exported = export_firefox(&tables, "fleet export");
    let json: Value = serde_json::from_slice(&exported.bytes).expect("JSON");
    let meta = &json["meta"];
    assert!(meta["version"].as_u64().is_some(), "meta.version");
    assert!(
        meta["preprocessedProfileVersion"].as_u64().is_some(),
        "processed"
    );
    assert!(meta["interval"].as_f64().is_some_and(|ms| ms > 0.0));
    assert_eq!(meta["product"], "fleet export");
    assert_eq!(
        meta["startTime"]
            .as_f64()
            .map(|ms| (ms * 1e6 / 1e9).round()),
        Some((slice.start_ns as f64 / 1e9).round())
    );
    let categories: Vec<&str> = array(&meta["categories"], "meta.categories")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert!(categories.contains(&"Other"), "{categories:?}");
    assert!(!array(&json["libs"], "libs").is_empty(), "pprof mappings");
    let threads = array(&json["threads"], "threads");
    assert!(!threads.is_empty());
    let mut samples = 0;
    for t in threads {
        let name = t["name"].as_str().expect("thread name");
        assert!(
            slice
                .series
                .iter()
                .any(|s| name.ends_with(&format!(" ({})", s.sample_type))),
            "{name} names its series"
        );
        let s = &t["samples"];
        let n = s["length"].as_u64().expect("samples.length") as usize;
        assert_eq!(array(&s["stack"], "samples.stack").len(), n);
        assert_eq!(array(&s["weight"], "samples.weight").len(), n);
        assert!(s["time"].is_array() || s["timeDeltas"].is_array());
        assert!(s["weightType"].is_string());
        samples += n;
        let strings = t["stringArray"]
            .as_array()
            .or_else(|| json["shared"]["stringArray"].as_array())
            .expect("a string table");
        let stack_table = &t["stackTable"];
        let frame_table = &t["frameTable"];
        let func_table = &t["funcTable"];
        let (stacks, frames, funcs) = (
            array(&stack_table["frame"], "stackTable.frame"),
            array(&frame_table["func"], "frameTable.func"),
            array(&func_table["name"], "funcTable.name"),
        );
        assert_eq!(
            array(&stack_table["prefix"], "stackTable.prefix").len(),
            stacks.len()
        );
        for v in array(&s["stack"], "samples.stack") {
            assert!(v.is_null() || (v.as_u64().unwrap() as usize) < stacks.len());
        }
        for f in stacks {
            assert!((f.as_u64().unwrap() as usize) < frames.len());
        }
        for f in frames {
            assert!((f.as_u64().unwrap() as usize) < funcs.len());
        }
        for name in funcs {
            assert!((name.as_u64().unwrap() as usize) < strings.len());
        }
        assert_eq!(
            array(&frame_table["address"], "frameTable.address").len(),
            frames.len()
        );
        assert_eq!(
            array(&frame_table["category"], "frameTable.category").len(),
            frames.len()
        );
    }
    assert_eq!(samples, slice.samples.len(), "one sample per slice sample");
    assert_eq!(
        samples as u64,
        exported.series.iter().map(|s| s.samples).sum::<u64>()
    );
}
