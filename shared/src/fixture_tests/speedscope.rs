//! speedscope documents: sampled profiles keep every sample and weight; evented profiles
//! become span series whose weights add up to the time any span was open, computed here from
//! the events themselves; conversion samples spans for Sample v2 and cuts them at windows for
//! the tables. Fixture provenance: tests/fixtures/speedscope/SOURCES.md and
//! samples/speedscope/SOURCES.md.

use std::collections::BTreeMap;

use super::decode;
use crate::{
    convert_upload, model::FrameKind, model::SeriesKind, writers::sample_v2::check_sample_v2,
    ConvertOptions, ErrorKind, InputFormat, UploadMetadata,
};
use serde_json::Value;

use super::tables::{i64s, read_tables, strings};
use super::util::{
    assert_claims_no_other_input, assert_only_sniffer, fixture, repo_file, samples, stat,
};

const FIXTURES: [&str; 3] = [
    "speedscope/pytorch_pyinstrument-evented.speedscope.json",
    "speedscope/speedscope_invalid-incomplete-trace.json",
    "speedscope/speedscope_invalid-out-of-order-events.json",
];
const EVENTED_SAMPLE: &str = "samples/speedscope/pyinstrument.speedscope.json";
const SAMPLED_SAMPLE: &str = "samples/speedscope/pyspy.speedscope.json";

fn inputs() -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = FIXTURES
        .iter()
        .map(|rel| (rel.to_string(), fixture(rel)))
        .collect();
    for rel in [EVENTED_SAMPLE, SAMPLED_SAMPLE] {
        out.push((rel.to_owned(), repo_file(rel)));
    }
    out
}

/// Nanoseconds per unit, or 1 for values that are no time.
fn scale(unit: &str) -> f64 {
    match unit {
        "seconds" => 1e9,
        "milliseconds" => 1e6,
        "microseconds" => 1e3,
        "nanoseconds" => 1.0,
        _ => 1.0,
    }
}

/// One evented profile as the events say: how many spans open, and the measure of the time
/// during which more spans had opened than closed (up to `endValue` for any left open).
fn open_time(profile: &Value) -> (usize, i64) {
    let k = scale(profile["unit"].as_str().unwrap());
    let mut steps: Vec<(i64, i64)> = profile["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let at = (e["at"].as_f64().unwrap() * k).round() as i64;
            (at, if e["type"] == "O" { 1 } else { -1 })
        })
        .collect();
    let opens = steps.iter().filter(|s| s.1 == 1).count();
    let end = (profile["endValue"].as_f64().unwrap() * k).round() as i64;
    steps.sort_by_key(|s| s.0);
    let (mut depth, mut total) = (0, 0);
    for (i, &(at, step)) in steps.iter().enumerate() {
        depth += step;
        let next = steps.get(i + 1).map_or(end.max(at), |s| s.0);
        if depth > 0 {
            total += next - at;
        }
    }
    (opens, total)
}

#[test]
fn evented_spans_weigh_the_time_any_span_was_open() {
    for (name, bytes) in inputs() {
        let doc: Value = serde_json::from_slice(&bytes).unwrap();
        let decoded = decode(&bytes, None).unwrap_or_else(|e| panic!("{name}: {e}"));
        let rows = samples(&decoded.profile);
        let mut spans = 0;
        for (i, p) in doc["profiles"].as_array().unwrap().iter().enumerate() {
            if p["type"] != "evented" {
                continue;
            }
            let (opens, open_ns) = open_time(p);
            spans += opens;
            let mine: Vec<_> = rows.iter().filter(|s| s.tid == Some(i as i64)).collect();
            assert!(!mine.is_empty(), "{name}: profile {i}");
            let total: i64 = mine.iter().map(|s| s.weight).sum();
            assert_eq!(total, open_ns, "{name}: profile {i}");
            let timed = scale(p["unit"].as_str().unwrap()) > 1.0;
            assert!(mine.iter().all(|s| s.time.is_some() == timed), "{name}");
        }
        assert_eq!(stat(&decoded.profile, "spans"), spans as u64, "{name}");
    }
}

#[test]
fn malformed_span_nesting_is_kept_and_counted() {
    let incomplete = decode(&fixture(FIXTURES[1]), None).unwrap();
    assert_eq!(stat(&incomplete.profile, "spans_unterminated"), 1);
    let out_of_order = decode(&fixture(FIXTURES[2]), None).unwrap();
    let counts = [
        "spans_not_nested",
        "spans_unmatched_end",
        "spans_unterminated",
    ]
    .map(|s| stat(&out_of_order.profile, s));
    // B closes while the A opened after it is open: one overlap, every close matched.
    assert_eq!(counts, [1, 0, 0]);
    // Unit `none`: the values are no times, so the stretches are aggregated.
    assert!(samples(&out_of_order.profile)
        .iter()
        .all(|s| s.time.is_none()));
}

#[test]
fn sampled_profiles_keep_every_sample_and_weight() {
    let bytes = repo_file(SAMPLED_SAMPLE);
    let doc: Value = serde_json::from_slice(&bytes).unwrap();
    let decoded = decode(&bytes, None).unwrap();
    assert_eq!(decoded.format, InputFormat::Speedscope);
    let rows = samples(&decoded.profile);
    let profiles = doc["profiles"].as_array().unwrap();
    assert_eq!(profiles.len(), 2);
    for (i, p) in profiles.iter().enumerate() {
        let want: Vec<i64> = (p["weights"].as_array().unwrap().iter())
            .map(|w| (w.as_f64().unwrap() * 1e9).round() as i64)
            .collect();
        let mine: Vec<_> = rows.iter().filter(|s| s.tid == Some(i as i64)).collect();
        assert_eq!(mine.len(), want.len(), "profile {i}");
        let got: Vec<i64> = mine.iter().map(|s| s.weight).collect();
        assert_eq!(got, want, "profile {i}");
        assert!(mine.iter().all(|s| s.time.is_none()));
        assert!(mine.iter().all(|s| s.series.kind == SeriesKind::WallTime));
        assert!(mine.iter().all(|s| s.series.unit == "nanoseconds"));
        // Each sample's stack is its list of frame indices, root first.
        let frames = doc["shared"]["frames"].as_array().unwrap();
        for (s, stack) in mine.iter().zip(p["samples"].as_array().unwrap()) {
            let names: Vec<&str> = (stack.as_array().unwrap().iter())
                .map(|f| {
                    frames[f.as_u64().unwrap() as usize]["name"]
                        .as_str()
                        .unwrap()
                })
                .collect();
            let got: Vec<&str> = s
                .frames()
                .iter()
                .map(|f| f.function.as_deref().unwrap())
                .collect();
            assert_eq!(got, names);
        }
    }
    let python = decoded
        .profile
        .frames()
        .filter(|(_, f)| f.kind == FrameKind::Python && f.line.is_some())
        .count();
    assert!(python > 0, "py-spy's frames are Python files with lines");
}

#[test]
fn only_the_speedscope_sniffer_claims_speedscope_documents() {
    assert_only_sniffer(InputFormat::Speedscope, &inputs());
}

#[test]
fn the_speedscope_sniffer_claims_no_other_input() {
    assert_claims_no_other_input(InputFormat::Speedscope, "speedscope");
}

fn at_timestamp() -> ConvertOptions {
    ConvertOptions {
        metadata: UploadMetadata {
            timestamp: Some(1_700_000_000.0),
            ..UploadMetadata::default()
        },
        ..ConvertOptions::default()
    }
}

/// How many instants `interval` apart from the first event fall while a span is open: the
/// samples Sample v2 takes of one evented profile.
fn instants_open(profile: &Value, interval_ns: i64) -> usize {
    let k = scale(profile["unit"].as_str().unwrap());
    let mut steps: Vec<(i64, i64)> = (profile["events"].as_array().unwrap().iter())
        .map(|e| {
            let at = (e["at"].as_f64().unwrap() * k).round() as i64;
            (at, if e["type"] == "O" { 1 } else { -1 })
        })
        .collect();
    steps.sort_by_key(|s| s.0);
    let first = steps[0].0;
    let mut count = 0;
    let mut t = first;
    let (mut i, mut depth) = (0, 0);
    while i < steps.len() {
        while i < steps.len() && steps[i].0 <= t {
            depth += steps[i].1;
            i += 1;
        }
        if depth > 0 && i < steps.len() {
            count += 1;
        }
        t += interval_ns;
    }
    count
}

#[test]
fn evented_profiles_convert_to_spans_sampled_for_sample_v2() {
    let bytes = repo_file(EVENTED_SAMPLE);
    let doc: Value = serde_json::from_slice(&bytes).unwrap();
    let err = convert_upload("u/p.json", "e", &bytes, &ConvertOptions::default()).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NoWallClock { .. }), "{err}");

    let converted = convert_upload("u/p.json", "e", &bytes, &at_timestamp()).unwrap();
    let manifest = &converted.manifest;
    assert_eq!(manifest.source.format, "speedscope");
    let expansion = manifest
        .sample_v2
        .expansion
        .as_ref()
        .expect("spans are sampled");
    assert_eq!(expansion.source.as_deref(), Some("spans"));
    assert_eq!(expansion.interval_ns, 10_000_000);
    let profile = &doc["profiles"][0];
    assert_eq!(
        manifest.sample_v2.samples,
        instants_open(profile, 10_000_000) as u64
    );
    for (_, chunk) in converted.sample_v2() {
        assert_eq!(check_sample_v2(chunk), vec![]);
        let chunk: Value = serde_json::from_slice(chunk).unwrap();
        let rule = chunk["synthetic_timestamps"]["rule"].as_str().unwrap();
        assert!(rule.starts_with("span input"), "{rule}");
    }
    // The tables hold every stretch with its exact length.
    let tables = read_tables(&converted);
    let rows: i64 = tables["samples"]
        .iter()
        .flat_map(|b| i64s(b, "weight_ns"))
        .map(|w| w.unwrap())
        .sum();
    assert_eq!(rows, open_time(profile).1);

    // A finer interval is configurable per upload.
    let mut options = at_timestamp();
    options.metadata.span_interval_ms = Some(1);
    let finer = convert_upload("u/p.json", "e", &bytes, &options).unwrap();
    assert_eq!(
        finer.manifest.sample_v2.samples,
        instants_open(profile, 1_000_000) as u64
    );
}

#[test]
fn spans_longer_than_a_window_are_cut_at_its_boundaries() {
    // One 150 s span, with a short one inside it in the second window.
    let doc = r#"{"shared": {"frames": [{"name": "wait"}, {"name": "tool"}]},
      "profiles": [{"type": "evented", "unit": "seconds", "startValue": 0, "endValue": 150,
        "events": [{"type": "O", "frame": 0, "at": 0}, {"type": "O", "frame": 1, "at": 70},
                   {"type": "C", "frame": 1, "at": 71}, {"type": "C", "frame": 0, "at": 150}]}]}"#;
    let converted = convert_upload("u/w.json", "e", doc.as_bytes(), &at_timestamp()).unwrap();
    let tables = read_tables(&converted);
    let mut by_profile: BTreeMap<String, i64> = BTreeMap::new();
    for b in &tables["samples"] {
        for (id, w) in strings(b, "profile_id")
            .into_iter()
            .zip(i64s(b, "weight_ns"))
        {
            *by_profile.entry(id).or_default() += w.unwrap();
        }
    }
    let mut per_window: Vec<i64> = by_profile.into_values().collect();
    per_window.sort_unstable();
    assert_eq!(per_window, [30e9 as i64, 60e9 as i64, 60e9 as i64]);
}

#[test]
fn span_sampling_is_bounded_by_spacing_the_instants_further() {
    // 2 000 s of one span: 200 000 instants at 10 ms, twice the bound.
    let doc = r#"{"shared": {"frames": [{"name": "session"}]},
      "profiles": [{"type": "evented", "unit": "seconds", "startValue": 0, "endValue": 2000,
        "events": [{"type": "O", "frame": 0, "at": 0}, {"type": "C", "frame": 0, "at": 2000}]}]}"#;
    let converted = convert_upload("u/long.json", "e", doc.as_bytes(), &at_timestamp()).unwrap();
    let v2 = &converted.manifest.sample_v2;
    let expansion = v2.expansion.as_ref().unwrap();
    assert_eq!(expansion.scaled_from, Some(200_000));
    assert_eq!(expansion.interval_ns, 20_000_000);
    assert_eq!(v2.samples, 100_000);
    // 34 windows of 60 s (the last one 20 s), each a chunk and a table profile.
    assert_eq!(v2.chunks, 34);
    let tables = read_tables(&converted);
    let rows: usize = tables["samples"].iter().map(|b| b.num_rows()).sum();
    assert_eq!(rows, 34);
}
