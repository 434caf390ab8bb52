//! The OTLP export, read back by proflake's own OTLP decoders (binary and OTLP/JSON) and
//! compared sample by sample: series, stack, time, process, thread, labels and trace link.

use std::collections::{BTreeMap, BTreeSet};

use proflake_proto::otlp::opentelemetry::proto::collector::profiles::v1development::ExportProfilesServiceRequest;
use prost::Message;

use super::slice::{self, Slice};
use super::tests::{convert, pprof_sample, repo_file, totals};
use super::*;

/// Everything a sample row says beyond its value: series (type, unit), stack (frame names,
/// root first), time (ns), process (pid, name, service), thread (id, name), labels, and
/// trace link (trace id, span id).
type RowKey = (
    (String, String),
    Vec<String>,
    Option<i64>,
    (Option<i64>, Option<String>, Option<String>),
    (Option<i64>, Option<String>),
    Vec<(String, String)>,
    Option<(String, String)>,
);

/// The slice's rows, summed per [`RowKey`]: rows without a time that share everything else
/// are one aggregate in OTLP, as in any aggregate format.
fn rows(tables: &TableBatches) -> BTreeMap<RowKey, i64> {
    let slice =
        slice::build(tables, &Selection::default(), slice::Detail::EveryRow).expect("slice");
    rows_of(&slice)
}

fn rows_of(slice: &Slice) -> BTreeMap<RowKey, i64> {
    let s = &slice.samples;
    let mut out = BTreeMap::new();
    for i in 0..s.len() {
        let series = &slice.series[s.series[i] as usize];
        let path = slice.path(s.node[i]);
        let thread = &slice.threads[s.thread[i] as usize];
        let process = &slice.processes[thread.process as usize];
        let mut labels = match s.labels[i] {
            slice::NONE => Vec::new(),
            l => slice.label_sets[l as usize].clone(),
        };
        labels.sort();
        let link = (s.link[i] != slice::NONE).then(|| slice.links[s.link[i] as usize].clone());
        let key = (
            (series.sample_type.clone(), series.unit.clone()),
            path,
            s.time_ns[i],
            (process.pid, process.name.clone(), process.service.clone()),
            (thread.tid, thread.name.clone()),
            labels,
            link,
        );
        *out.entry(key).or_default() += s.value[i];
    }
    out
}

fn export_otlp(tables: &TableBatches, json: bool) -> Exported {
    let mut request = ExportRequest::new(Selection::default(), ExportFormat::Otlp);
    request.json = json;
    export_tables(tables, &request).expect("otlp export")
}

/// Exports `tables` in both encodings, reads each back with `metadata`, and compares the
/// per-series, per-stack totals and every row's time, process, thread, labels and link.
/// Returns the rows read back from the binary export.
fn assert_round_trip(tables: &TableBatches, name: &str, metadata: &str) -> BTreeMap<RowKey, i64> {
    let before = totals(tables);
    assert!(!before.is_empty(), "{name}: nothing to compare");
    let before_rows = rows(tables);
    let mut back = BTreeMap::new();
    for json in [false, true] {
        let exported = export_otlp(tables, json);
        if json {
            assert_eq!(exported.bytes.first(), Some(&b'{'), "{name}: JSON");
            let doc: serde_json::Value = serde_json::from_slice(&exported.bytes).expect("JSON");
            assert!(doc["resourceProfiles"].is_array(), "{name}: lowerCamelCase");
        } else {
            ExportProfilesServiceRequest::decode(exported.bytes.as_slice()).expect("protobuf");
        }
        // Sniffed as OTLP, and clean by every profcheck rule.
        let decoded = crate::formats::decode(&exported.bytes, None, &crate::Limits::default())
            .expect("decode");
        let format = if json {
            crate::InputFormat::OtlpJson
        } else {
            crate::InputFormat::Otlp
        };
        assert_eq!(decoded.format, format, "{name}");
        assert_eq!(
            decoded.profile.findings,
            Vec::<String>::new(),
            "{name}: profcheck"
        );
        let key = format!("again/{name}.{}", if json { "json" } else { "otlp" });
        let again = convert(&exported.bytes, &key, metadata);
        assert_eq!(totals(&again), before, "{key}: totals per series and stack");
        let again_rows = rows(&again);
        assert_eq!(again_rows, before_rows, "{key}: rows");
        for series in &exported.series {
            let sum: i64 = before[&(series.sample_type.clone(), series.unit.clone())]
                .values()
                .sum();
            assert_eq!(series.total, sum, "{key}: {}", series.sample_type);
        }
        back = again_rows;
    }
    back
}

/// The perf script sample with its metadata (and a service), and that metadata without the
/// service, for reading its export back: the service comes back from `service.name`.
fn perf_sample() -> (TableBatches, String) {
    let metadata = String::from_utf8(repo_file(
        "samples/perf-script/simple-with-header.metadata.json",
    ))
    .expect("metadata");
    let with_service = metadata.replacen('{', r#"{"service":"simple","#, 1);
    let tables = convert(
        &repo_file("samples/perf-script/simple-with-header.perf.txt"),
        "simple/simple-with-header.perf.txt",
        &with_service,
    );
    (tables, metadata)
}

#[test]
fn otlp_round_trip_keeps_pprof_series_and_stacks() {
    let metadata = r#"{"service":"app","release":"1.0","environment":"prod"}"#;
    let back = assert_round_trip(&pprof_sample(), "pprof", metadata);
    let series: BTreeSet<_> = back.keys().map(|k| k.0.clone()).collect();
    assert!(
        series.len() > 1,
        "the sample has several series: {series:?}"
    );
}

#[test]
fn otlp_round_trip_keeps_perf_script_times_and_threads() {
    let (tables, metadata) = perf_sample();
    let back = assert_round_trip(&tables, "perf", &metadata);
    assert!(back.keys().all(|k| k.2.is_some()), "every sample is timed");
    assert!(
        back.keys().any(|k| k.4 .0.is_some() && k.4 .1.is_some()),
        "threads have ids and names"
    );
    assert!(
        back.keys().all(|k| k.3 .2.as_deref() == Some("simple")),
        "the service, from the resource's service.name"
    );
}

#[test]
fn otlp_round_trip_keeps_the_ebpf_capture() {
    let metadata = r#"{"service":"ebpf"}"#;
    let tables = convert(
        &repo_file("samples/otlp/sig-profiling_profile.v1_10.pb"),
        "ebpf/profile.otlp",
        metadata,
    );
    let back = assert_round_trip(&tables, "ebpf", metadata);
    assert_eq!(back.values().sum::<i64>(), 189, "one count per timestamp");
    assert!(back.keys().all(|k| k.2.is_some()), "every sample is timed");
    assert!(back.keys().any(|k| k.4 .1.is_some()), "thread names");
}

#[test]
fn otlp_round_trip_keeps_links_labels_and_inlined_frames() {
    let metadata = r#"{"service":"checkout"}"#;
    let tables = convert(
        &repo_file("tests/fixtures/otlp/synthetic_edge_cases.v1_10.pb"),
        "checkout/edge.otlp",
        metadata,
    );
    let back = assert_round_trip(&tables, "edge", metadata);
    assert!(back.keys().any(|k| k.6.is_some()), "a trace link");
    assert!(back.keys().any(|k| !k.5.is_empty()), "labels");
    assert!(back.keys().any(|k| k.2.is_none()), "an aggregated sample");
    // Frames come back with their build IDs and inlined calls.
    let frames = |t: &TableBatches| {
        let s = slice::build(t, &Selection::default(), slice::Detail::EveryRow).expect("slice");
        s.frames
            .iter()
            .map(|f| {
                let inlined: Vec<_> = f.inlined_into.iter().map(|c| c.function.clone()).collect();
                (
                    f.name.clone(),
                    f.build_id.clone(),
                    f.image_path.clone(),
                    inlined,
                )
            })
            .collect::<BTreeSet<_>>()
    };
    let before = frames(&tables);
    assert!(before.iter().any(|f| f.1.is_some()), "a build ID");
    assert!(before.iter().any(|f| !f.3.is_empty()), "an inlined frame");
    let exported = export_otlp(&tables, false);
    assert_eq!(
        frames(&convert(&exported.bytes, "edge2.otlp", metadata)),
        before
    );
}

/// The request, decoded.
fn request(bytes: &[u8]) -> ExportProfilesServiceRequest {
    ExportProfilesServiceRequest::decode(bytes).expect("protobuf")
}

#[test]
fn otlp_reexport_keeps_the_dictionary_small() {
    let input = repo_file("samples/otlp/sig-profiling_profile.v1_10.pb");
    let original = request(&input);
    let o = original.dictionary.as_ref().expect("dictionary");
    let tables = convert(&input, "ebpf/profile.otlp", r#"{"service":"ebpf"}"#);
    let exported = request(&export_otlp(&tables, false).bytes);
    let d = exported.dictionary.as_ref().expect("dictionary");
    // Every table holds its zero value first.
    assert_eq!(d.string_table[0], b"");
    assert_eq!(d.mapping_table[0], Default::default());
    assert_eq!(d.location_table[0], Default::default());
    assert_eq!(d.function_table[0], Default::default());
    assert_eq!(d.link_table[0], Default::default());
    assert_eq!(d.attribute_table[0], Default::default());
    assert_eq!(d.stack_table[0], Default::default());
    // No entry twice.
    fn distinct<T: Message>(table: &[T]) -> usize {
        table
            .iter()
            .map(|t| t.encode_to_vec())
            .collect::<BTreeSet<_>>()
            .len()
    }
    assert_eq!(
        distinct(&d.function_table),
        d.function_table.len(),
        "functions"
    );
    assert_eq!(
        distinct(&d.location_table),
        d.location_table.len(),
        "locations"
    );
    assert_eq!(
        distinct(&d.mapping_table),
        d.mapping_table.len(),
        "mappings"
    );
    assert_eq!(distinct(&d.stack_table), d.stack_table.len(), "stacks");
    assert_eq!(
        distinct(&d.attribute_table),
        d.attribute_table.len(),
        "attributes"
    );
    let strings: BTreeSet<_> = d.string_table.iter().collect();
    assert_eq!(strings.len(), d.string_table.len(), "strings");
    // No more than the capture itself needed.
    for (what, ours, theirs) in [
        ("functions", d.function_table.len(), o.function_table.len()),
        ("locations", d.location_table.len(), o.location_table.len()),
        ("mappings", d.mapping_table.len(), o.mapping_table.len()),
        ("stacks", d.stack_table.len(), o.stack_table.len()),
    ] {
        assert!(
            ours <= theirs,
            "{what}: {ours} entries, the capture has {theirs}"
        );
        assert!(ours > 1, "{what}: the export has entries");
    }
    // 49 OTLP samples of 189 timestamps in, no more samples out than (stack, thread) pairs.
    let samples: usize = exported
        .resource_profiles
        .iter()
        .flat_map(|r| &r.scope_profiles)
        .flat_map(|s| &s.profiles)
        .map(|p| p.samples.len())
        .sum();
    assert!(samples <= 49, "{samples} samples");
}

#[test]
fn otlp_export_is_shaped_as_otlp_says() {
    let (tables, _) = perf_sample();
    let exported = export_otlp(&tables, false);
    let r = request(&exported.bytes);
    assert!(!r.resource_profiles.is_empty());
    let d = r.dictionary.as_ref().expect("dictionary");
    let string = |i: i32| String::from_utf8_lossy(&d.string_table[i as usize]).into_owned();
    for rp in &r.resource_profiles {
        let keys: Vec<&str> = rp
            .resource
            .as_ref()
            .expect("resource")
            .attributes
            .iter()
            .map(|kv| kv.key.as_str())
            .collect();
        assert!(keys.contains(&"service.name"), "{keys:?}");
        assert!(keys.contains(&"service.version"), "{keys:?}");
        assert!(keys.contains(&"deployment.environment.name"), "{keys:?}");
        let unique: BTreeSet<_> = keys.iter().collect();
        assert_eq!(unique.len(), keys.len(), "{keys:?}");
        assert_eq!(rp.scope_profiles.len(), 1);
        let scope = &rp.scope_profiles[0];
        assert_eq!(
            scope.scope.as_ref().map(|s| s.name.as_str()),
            Some("proflake")
        );
        for p in &scope.profiles {
            assert!(p.time_unix_nano > 0 && p.duration_nano > 0);
            let end = p.time_unix_nano + p.duration_nano;
            for s in &p.samples {
                assert_eq!(s.values.len(), s.timestamps_unix_nano.len());
                assert!(s
                    .timestamps_unix_nano
                    .iter()
                    .all(|&t| t >= p.time_unix_nano && t < end));
                let keys: Vec<String> = s
                    .attribute_indices
                    .iter()
                    .map(|&a| string(d.attribute_table[a as usize].key_strindex))
                    .collect();
                assert!(keys.contains(&"thread.id".to_owned()), "{keys:?}");
                let unique: BTreeSet<_> = keys.iter().collect();
                assert_eq!(unique.len(), keys.len(), "{keys:?}");
            }
        }
    }
    // The JSON encoding is the same request.
    let json: serde_json::Value =
        serde_json::from_slice(&export_otlp(&tables, true).bytes).expect("JSON");
    let samples = &json["resourceProfiles"][0]["scopeProfiles"][0]["profiles"][0]["samples"][0];
    assert!(
        samples["timestampsUnixNano"][0].is_string(),
        "fixed64 as a string"
    );
    assert!(samples["values"][0].is_string(), "int64 as a string");
    assert!(samples["stackIndex"].is_number(), "int32 as a number");
    assert_eq!(
        json["dictionary"]["stringTable"].as_array().map(Vec::len),
        Some(d.string_table.len())
    );
}

#[test]
fn otlp_json_writes_ids_as_hex() {
    let metadata = r#"{"service":"checkout"}"#;
    let tables = convert(
        &repo_file("tests/fixtures/otlp/synthetic_edge_cases.v1_10.pb"),
        "checkout/edge.otlp",
        metadata,
    );
    let slice =
        slice::build(&tables, &Selection::default(), slice::Detail::EveryRow).expect("slice");
    let (trace, span) = slice.links.first().expect("a link").clone();
    let json: serde_json::Value =
        serde_json::from_slice(&export_otlp(&tables, true).bytes).expect("JSON");
    let links = json["dictionary"]["linkTable"].as_array().expect("links");
    assert_eq!(links[0], serde_json::json!({}), "the zero link");
    assert_eq!(links[1]["traceId"], trace.to_ascii_lowercase());
    assert_eq!(links[1]["spanId"], span.to_ascii_lowercase());
}
