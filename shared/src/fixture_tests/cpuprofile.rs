//! V8 `.cpuprofile` inputs (Node `--cpu-prof`): what the decoder makes of real recordings,
//! checked against counts this file computes from the JSON itself; detection both ways; and
//! the errors of malformed documents. Fixture provenance: tests/fixtures/cpuprofile/SOURCES.md.

use super::decode;
use crate::{
    model::FrameKind, model::SeriesKind, writers::sample_v2::check_sample_v2, ErrorKind,
    InputFormat,
};
use serde_json::Value;

use super::util::{
    assert_claims_no_other_input, assert_only_sniffer, convert_on_a_trace_clock, fixture, samples,
    stat, SampleView,
};

const FIXTURES: [&str; 3] = [
    "cpuprofile/cpu-prof_CPU.20250519.000217.90620.4.005.cpuprofile",
    "cpuprofile/cpu-prof_CPU.20250519.000216.90620.2.003.cpuprofile",
    "cpuprofile/cpu-prof_empty-1000000.cpuprofile",
];

/// What a fixture holds, read with a general JSON parser rather than the decoder.
struct Expected {
    samples: usize,
    idle: usize,
    start_us: i64,
    first_us: i64,
    sum_deltas_us: i64,
    end_us: i64,
}

fn expected(json: &[u8]) -> Expected {
    let doc: Value = serde_json::from_slice(json).unwrap();
    let ints = |key: &str| -> Vec<i64> {
        doc[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap())
            .collect()
    };
    let (ids, deltas) = (ints("samples"), ints("timeDeltas"));
    assert_eq!(ids.len(), deltas.len(), "the fixtures have no mismatch");
    assert!(deltas.iter().all(|&d| d >= 0), "nor negative deltas");
    let idle_nodes: Vec<i64> = (doc["nodes"].as_array().unwrap().iter())
        .filter(|n| n["callFrame"]["functionName"] == "(idle)")
        .map(|n| n["id"].as_i64().unwrap())
        .collect();
    let start = doc["startTime"].as_i64().unwrap();
    Expected {
        samples: ids.len(),
        idle: ids.iter().filter(|id| idle_nodes.contains(id)).count(),
        start_us: start,
        first_us: start + deltas[0],
        sum_deltas_us: deltas.iter().sum(),
        end_us: doc["endTime"].as_i64().unwrap(),
    }
}

fn in_series<'a>(rows: &'a [SampleView], name: &str) -> Vec<&'a SampleView> {
    rows.iter().filter(|s| s.series.name == name).collect()
}

#[test]
fn recordings_decode_to_one_timed_sample_per_tick() {
    for rel in FIXTURES {
        let bytes = fixture(rel);
        let want = expected(&bytes);
        let decoded = decode(&bytes, None).unwrap_or_else(|e| panic!("{rel}: {e}"));
        assert_eq!(decoded.format, InputFormat::V8CpuProfile, "{rel}");
        let rows = samples(&decoded.profile);
        assert_eq!(rows.len(), want.samples, "{rel}");
        let (cpu, idle) = (in_series(&rows, "cpu"), in_series(&rows, "idle"));
        assert_eq!(idle.len(), want.idle, "{rel}");
        assert_eq!(cpu.len(), want.samples - want.idle, "{rel}");
        assert!(cpu.iter().all(|s| s.series.kind == SeriesKind::CpuTime));
        assert!(idle.iter().all(|s| s.series.kind == SeriesKind::Other));
        assert!(rows.iter().all(|s| s.series.unit == "microseconds"));
        // Times: the first delta is from startTime, the others from the previous tick.
        assert_eq!(rows[0].time, Some(want.first_us * 1000), "{rel}");
        let last = rows.last().unwrap().time.unwrap();
        assert_eq!(last, (want.start_us + want.sum_deltas_us) * 1000, "{rel}");
        // Every tick weighs the time to the next, the last one the time to endTime.
        let total: i64 = rows.iter().map(|s| s.weight).sum();
        assert_eq!(total, want.end_us - want.first_us, "{rel}");
        assert_eq!(stat(&decoded.profile, "v8_delta_mismatch"), 0);
        assert_eq!(stat(&decoded.profile, "v8_unknown_parent"), 0);
    }
}

#[test]
fn frames_are_javascript_with_one_based_positions() {
    let bytes = fixture(FIXTURES[0]);
    let decoded = decode(&bytes, None).unwrap();
    let rows = samples(&decoded.profile);
    let frames: Vec<_> = rows.iter().flat_map(|s| s.frames()).collect();
    assert!(frames
        .iter()
        .all(|f| f.function.as_deref() != Some("(root)")));
    let program = frames
        .iter()
        .find(|f| f.function.as_deref() == Some("(program)"))
        .expect("(program) is sampled");
    assert_eq!(
        (program.kind.clone(), program.line, program.file.as_deref()),
        ("runtime".to_owned(), None, None)
    );
    let doc: Value = serde_json::from_slice(&bytes).unwrap();
    // A node with a position: the frame has it one-based.
    let node = (doc["nodes"].as_array().unwrap().iter())
        .find(|n| n["callFrame"]["lineNumber"].as_i64() > Some(0) && n["callFrame"]["url"] != "")
        .unwrap();
    let call = &node["callFrame"];
    let profile = &decoded.profile;
    let (_, frame) = profile
        .frames()
        .find(|(_, f)| {
            profile.opt_str(f.file) == call["url"].as_str()
                && profile.opt_str(f.function) == Some(name(call))
        })
        .expect("the node's frame");
    assert_eq!(frame.kind, FrameKind::JavaScript);
    let one_based = |key: &str| Some(call[key].as_u64().unwrap() as u32 + 1);
    assert_eq!(frame.line, one_based("lineNumber"));
    assert_eq!(frame.column, one_based("columnNumber"));
}

fn name(call: &Value) -> &str {
    match call["functionName"].as_str().unwrap() {
        "" => "(anonymous)",
        name => name,
    }
}

#[test]
fn conversion_needs_a_timestamp_and_reports_every_tick() {
    for rel in FIXTURES {
        let bytes = fixture(rel);
        let want = expected(&bytes);
        let converted = convert_on_a_trace_clock("uploads/p.cpuprofile", &bytes, rel);
        let manifest = &converted.manifest;
        assert_eq!(manifest.source.format, "cpuprofile");
        assert_eq!(manifest.profile.samples, want.samples as u64, "{rel}");
        let series = |name: &str| manifest.series.iter().find(|s| s.sample_type == name);
        let cpu = series("cpu").expect("a cpu series");
        assert_eq!(
            (cpu.kind.as_str(), cpu.sample_unit.as_str()),
            ("cpu_time", "microseconds")
        );
        assert_eq!(cpu.observations, (want.samples - want.idle) as u64, "{rel}");
        let idle = series("idle").map_or(0, |s| s.observations);
        assert_eq!(idle, want.idle as u64, "{rel}");
        for (_, chunk) in converted.sample_v2() {
            assert_eq!(check_sample_v2(chunk), vec![], "{rel}");
        }
    }
}

// ---- detection ---------------------------------------------------------------------------

#[test]
fn only_the_cpuprofile_sniffer_claims_the_recordings() {
    let inputs: Vec<(String, Vec<u8>)> = FIXTURES
        .iter()
        .map(|rel| (rel.to_string(), fixture(rel)))
        .collect();
    assert_only_sniffer(InputFormat::V8CpuProfile, &inputs);
}

#[test]
fn the_cpuprofile_sniffer_claims_no_other_input() {
    assert_claims_no_other_input(InputFormat::V8CpuProfile, "cpuprofile");
}

// ---- malformed input ---------------------------------------------------------------------

fn malformed(bytes: &[u8]) -> String {
    match decode(bytes, Some(InputFormat::V8CpuProfile)) {
        Ok(d) => panic!(
            "expected an error, got {} samples",
            d.profile.samples().len()
        ),
        Err(e) => match e.kind() {
            ErrorKind::Malformed {
                format: "cpuprofile",
                what,
                ..
            } => what.clone(),
            other => panic!("expected a malformed cpuprofile, got {other:?}"),
        },
    }
}

const SMALL: &str = r#"{"nodes":[{"id":1,"callFrame":{"functionName":"(root)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1},"children":[2]},{"id":2,"callFrame":{"functionName":"main","scriptId":"1","url":"file:///a.js","lineNumber":0,"columnNumber":4}}],"startTime":100,"endTime":400,"samples":[2,2],"timeDeltas":[100,100]}"#;

#[test]
fn truncated_and_dangling_documents_are_malformed() {
    let whole = fixture(FIXTURES[2]);
    for cut in [10, whole.len() / 2, whole.len() - 1] {
        let what = malformed(&whole[..cut]);
        assert!(what.contains("EOF"), "cut at {cut}: {what}");
    }
    let what = malformed(
        SMALL
            .replace("\"samples\":[2,2]", "\"samples\":[2,9]")
            .as_bytes(),
    );
    assert!(what.contains("samples[1] names node 9"), "{what}");
    let what = malformed(
        SMALL
            .replace("\"children\":[2]", "\"children\":[7]")
            .as_bytes(),
    );
    assert!(what.contains("node 7"), "{what}");
    let what = malformed(SMALL.replace("\"startTime\":100,", "").as_bytes());
    assert!(what.contains("startTime"), "{what}");
    let what = malformed(SMALL.replace("\"id\":2,", "\"id\":\"2\",").as_bytes());
    assert!(what.contains("nodes[1].id"), "{what}");
}

#[test]
fn mismatched_lengths_and_orphans_are_counted() {
    let text = SMALL
        .replace("\"timeDeltas\":[100,100]", "\"timeDeltas\":[100]")
        .replace("\"children\":[2]", "\"children\":[]");
    let decoded = decode(text.as_bytes(), None).unwrap();
    assert_eq!(decoded.format, InputFormat::V8CpuProfile);
    let rows = samples(&decoded.profile);
    assert_eq!(rows.len(), 1, "the shorter of samples and timeDeltas");
    assert_eq!(stat(&decoded.profile, "v8_delta_mismatch"), 1);
    assert_eq!(stat(&decoded.profile, "v8_unknown_parent"), 1);
    assert_eq!((rows[0].time, rows[0].weight), (Some(200_000), 200));
    let (_, frame) = decoded.profile.frames().next().unwrap();
    assert_eq!((frame.line, frame.column), (Some(1), Some(5)));
    assert_eq!(decoded.profile.opt_str(frame.file), Some("file:///a.js"));
}

#[test]
fn too_deep_stack_keeps_its_tick_without_frames() {
    // A chain (root) -> 1 -> 2 -> ... -> 10 000: deeper than max_stack_depth (8192).
    let depth = 10_000;
    let nodes: Vec<String> = (0..=depth)
        .map(|id| {
            let name = if id == 0 { "(root)".to_owned() } else { format!("f{id}") };
            let children = if id < depth { format!("[{}]", id + 1) } else { "[]".to_owned() };
            format!(r#"{{"id":{id},"callFrame":{{"functionName":"{name}","url":""}},"children":{children}}}"#)
        })
        .collect();
    let text = format!(
        r#"{{"nodes":[{}],"startTime":0,"endTime":30,"samples":[2,{depth}],"timeDeltas":[10,10]}}"#,
        nodes.join(",")
    );
    let decoded = decode(text.as_bytes(), None).unwrap();
    let rows = samples(&decoded.profile);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].frames().len(), 2, "f1, f2");
    assert_eq!((rows[1].stack.is_none(), rows[1].weight), (true, 10));
    assert_eq!(stat(&decoded.profile, "v8_stack_too_deep"), 1);
}

#[test]
fn a_negative_delta_is_kept_and_the_ticks_put_in_time_order() {
    let text = SMALL
        .replace("\"samples\":[2,2]", "\"samples\":[2,2,2]")
        .replace("\"timeDeltas\":[100,100]", "\"timeDeltas\":[100,100,-50]");
    let decoded = decode(text.as_bytes(), None).unwrap();
    assert_eq!(stat(&decoded.profile, "v8_negative_time_delta"), 1);
    let rows = samples(&decoded.profile);
    let times: Vec<_> = rows.iter().map(|s| s.time.unwrap() / 1000).collect();
    assert_eq!(
        times,
        [200, 250, 300],
        "startTime 100, then +100, +100, -50"
    );
}

// ---- the older layout ----------------------------------------------------------------------

const OLD_LAYOUT: [&str; 2] = [
    "cpuprofile/proflake_old-layout_timed.cpuprofile",
    "cpuprofile/proflake_old-layout_hit-counts.cpuprofile",
];

/// Every node of the older layout's `head` tree, read with a general JSON parser.
fn old_nodes(doc: &Value) -> Vec<&Value> {
    let mut nodes = Vec::new();
    let mut pending = vec![&doc["head"]];
    while let Some(node) = pending.pop() {
        nodes.push(node);
        pending.extend(node["children"].as_array().unwrap());
    }
    nodes
}

#[test]
fn only_the_cpuprofile_sniffer_claims_the_older_layout() {
    let inputs: Vec<(String, Vec<u8>)> = OLD_LAYOUT
        .iter()
        .map(|rel| (rel.to_string(), fixture(rel)))
        .collect();
    assert_only_sniffer(InputFormat::V8CpuProfile, &inputs);
}

#[test]
fn the_older_layout_ticks_at_its_timestamps() {
    let bytes = fixture(OLD_LAYOUT[0]);
    let doc: Value = serde_json::from_slice(&bytes).unwrap();
    let decoded = decode(&bytes, None).unwrap();
    assert_eq!(decoded.format, InputFormat::V8CpuProfile);
    let rows = samples(&decoded.profile);
    let timestamps = doc["timestamps"].as_array().unwrap();
    assert_eq!(rows.len(), doc["samples"].as_array().unwrap().len());
    let times: Vec<Option<i64>> = rows.iter().map(|s| s.time).collect();
    let expected: Vec<Option<i64>> = timestamps
        .iter()
        .map(|t| Some((t.as_f64().unwrap().round() as i64) * 1000))
        .collect();
    assert_eq!(times, expected);
    // Each tick's leaf is the function of the node it names.
    let names: std::collections::BTreeMap<u64, &str> = old_nodes(&doc)
        .into_iter()
        .map(|n| {
            (
                n["id"].as_u64().unwrap(),
                n["functionName"].as_str().unwrap(),
            )
        })
        .collect();
    for (row, id) in rows.iter().zip(doc["samples"].as_array().unwrap()) {
        let want = match names[&id.as_u64().unwrap()] {
            "" => "(anonymous)",
            name => name,
        };
        assert_eq!(row.frames().last().unwrap().function.as_deref(), Some(want));
    }
    // It converts like any cpuprofile, at the metadata timestamp or the arrival.
    let converted = convert_on_a_trace_clock("uploads/old.cpuprofile", &bytes, OLD_LAYOUT[0]);
    assert_eq!(converted.manifest.profile.samples, rows.len() as u64);
}

#[test]
fn the_older_layout_without_ticks_is_aggregated_by_hit_count() {
    let bytes = fixture(OLD_LAYOUT[1]);
    let doc: Value = serde_json::from_slice(&bytes).unwrap();
    let hits: Vec<i64> = old_nodes(&doc)
        .into_iter()
        .map(|n| n["hitCount"].as_i64().unwrap())
        .filter(|&h| h > 0)
        .collect();
    let decoded = decode(&bytes, None).unwrap();
    let rows = samples(&decoded.profile);
    assert_eq!(rows.len(), hits.len());
    assert!(rows.iter().all(|s| s.time.is_none()));
    let total: i64 = rows.iter().map(|s| s.weight).sum();
    assert_eq!(total, hits.iter().sum::<i64>());
    let options = crate::ConvertOptions {
        received_at_ns: Some(1_700_000_000_000_000_000),
        ..crate::ConvertOptions::default()
    };
    let converted =
        crate::convert_upload("uploads/old.cpuprofile", "etag", &bytes, &options).unwrap();
    let series = &converted.manifest.series;
    let observed: u64 = series.iter().map(|s| s.observations).sum();
    assert_eq!(observed, hits.len() as u64);
    assert_eq!(converted.manifest.profile.clock_source, "arrival");
}
