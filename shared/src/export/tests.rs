//! Exports of converted samples, read back: every format's round trip through proflake's own
//! decoders gives the per-series, per-stack totals of the tables it came from.

use std::collections::BTreeMap;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::Array;

use super::*;
use crate::metadata::UploadMetadata;
use crate::pipeline::{convert_upload, ConvertOptions};
use crate::tables::read_table_objects;

/// Per series (`sample_type`, `sample_unit`), per stack (frame names, root first): the sum of
/// `samples.value`.
pub(super) type Totals = BTreeMap<(String, String), BTreeMap<Vec<String>, i64>>;

/// The repository's file at `path` (relative to the workspace root).
pub(super) fn repo_file(path: &str) -> Vec<u8> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let path = root.join(path);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `bytes` converted as `convert` would, with `metadata` (JSON), and its tables read back.
pub(super) fn convert(bytes: &[u8], key: &str, metadata: &str) -> TableBatches {
    let options = ConvertOptions {
        metadata: UploadMetadata::from_json(metadata.as_bytes()).expect("metadata"),
        received_at_ns: Some(1_764_000_000_000_000_000),
        ..ConvertOptions::default()
    };
    let converted = convert_upload(&format!("uploads/{key}"), "etag", bytes, &options)
        .unwrap_or_else(|e| panic!("{key}: {}", crate::error_chain(&e)));
    read_table_objects(
        converted
            .objects
            .iter()
            .map(|(k, b)| (k.as_str(), b.as_slice())),
    )
    .expect("tables")
}

/// The totals of `tables`, walked from the tables themselves (not through the slice).
pub(super) fn totals(tables: &TableBatches) -> Totals {
    let text = |b: &arrow_array::RecordBatch, c: &str| {
        b.column_by_name(c).unwrap().as_string::<i32>().clone()
    };
    let (fp, fid, fname) = (
        text(&tables.frames, "profile_id"),
        tables
            .frames
            .column_by_name("frame_id")
            .unwrap()
            .as_primitive::<Int32Type>()
            .clone(),
        text(&tables.frames, "name"),
    );
    let mut names = BTreeMap::new();
    for i in 0..fp.len() {
        names.insert(
            (fp.value(i).to_owned(), fid.value(i)),
            fname.value(i).to_owned(),
        );
    }
    let st = &tables.stacks;
    let (sp, sid, spar, sfr) = (
        text(st, "profile_id"),
        st.column_by_name("stack_id")
            .unwrap()
            .as_primitive::<Int32Type>()
            .clone(),
        st.column_by_name("parent_id")
            .unwrap()
            .as_primitive::<Int32Type>()
            .clone(),
        st.column_by_name("frame_id")
            .unwrap()
            .as_primitive::<Int32Type>()
            .clone(),
    );
    let mut nodes = BTreeMap::new();
    for i in 0..sp.len() {
        let parent = spar.is_valid(i).then(|| spar.value(i));
        nodes.insert(
            (sp.value(i).to_owned(), sid.value(i)),
            (parent, sfr.value(i)),
        );
    }
    let s = &tables.samples;
    let (pid, ty, unit, stack, value) = (
        text(s, "profile_id"),
        text(s, "sample_type"),
        text(s, "sample_unit"),
        s.column_by_name("stack_id")
            .unwrap()
            .as_primitive::<Int32Type>()
            .clone(),
        s.column_by_name("value")
            .unwrap()
            .as_primitive::<Int64Type>()
            .clone(),
    );
    let mut out = Totals::new();
    for i in 0..s.num_rows() {
        let profile = pid.value(i).to_owned();
        let mut path = Vec::new();
        let mut at = stack.is_valid(i).then(|| stack.value(i));
        while let Some(id) = at {
            let (parent, frame) = nodes[&(profile.clone(), id)];
            path.push(names[&(profile.clone(), frame)].clone());
            at = parent;
        }
        path.reverse();
        *out.entry((ty.value(i).to_owned(), unit.value(i).to_owned()))
            .or_default()
            .entry(path)
            .or_default() += value.value(i);
    }
    out
}

/// The pprof sample's tables.
pub(super) fn pprof_sample() -> TableBatches {
    convert(
        &repo_file("samples/pprof/google-pprof_report_sample.cpu.pb.gz"),
        "app/cpu.pb.gz",
        r#"{"service":"app","release":"1.0","environment":"prod"}"#,
    )
}

#[test]
fn pprof_round_trip_keeps_every_series_and_stack() {
    let tables = pprof_sample();
    let request = ExportRequest::new(Selection::default(), ExportFormat::Pprof);
    let exported = export_tables(&tables, &request).expect("export");
    assert_eq!(&exported.bytes[..2], &[0x1f, 0x8b], "gzipped");
    let again = convert(&exported.bytes, "again.pb.gz", r#"{"service":"app"}"#);
    let (before, after) = (totals(&tables), totals(&again));
    assert!(!before.is_empty());
    assert_eq!(before, after);
    for series in &exported.series {
        let sum: i64 = before[&(series.sample_type.clone(), series.unit.clone())]
            .values()
            .sum();
        assert_eq!(series.total, sum, "{}", series.sample_type);
    }
}

#[test]
fn folded_round_trip_keeps_the_series_stacks() {
    let tables = convert(
        &repo_file("samples/folded/pyspy.folded"),
        "app/pyspy.folded",
        r#"{"service":"app"}"#,
    );
    let request = ExportRequest::new(Selection::default(), ExportFormat::Folded);
    let exported = export_tables(&tables, &request).expect("export");
    let again = convert(&exported.bytes, "again.folded", r#"{"service":"app"}"#);
    // Folded stacks cannot hold an empty stack: such samples come back under one frame.
    let mut before = totals(&tables);
    for stacks in before.values_mut() {
        if let Some(v) = stacks.remove(&Vec::new()) {
            stacks.insert(vec![NO_STACK.to_owned()], v);
        }
    }
    assert!(before
        .values()
        .any(|s| s.contains_key(&vec![NO_STACK.to_owned()])));
    assert_eq!(before, totals(&again));
}

#[test]
fn selection_narrows_and_names_what_exists() {
    let tables = pprof_sample();
    let mut selection = Selection {
        release: Some("2.0".into()),
        ..Selection::default()
    };
    let request = ExportRequest::new(selection.clone(), ExportFormat::Pprof);
    let error = export_tables(&tables, &request).unwrap_err();
    assert_eq!(error.kind().reason(), "no_samples");
    assert!(error.to_string().contains("1.0"), "{error}");
    selection.release = Some("1.0".into());
    selection.series = vec!["samples".into()];
    let request = ExportRequest::new(selection, ExportFormat::Folded);
    let exported = export_tables(&tables, &request).expect("one series");
    assert_eq!(exported.series.len(), 1);
    assert_eq!(exported.series[0].sample_type, "samples");
}

#[test]
fn a_pgo_export_says_it_holds_only_cpu_series() {
    let tables = convert(
        &repo_file("samples/perf-script/simple-with-header.perf.txt"),
        "app/perf.txt",
        r#"{"service":"app","timestamp":1534348884.0}"#,
    );
    let mut tables_and_trace = tables.clone();
    // A trace of spans: wall time, not CPU.
    let trace = convert(
        &repo_file("samples/chrome/claude_code.json"),
        "agent/trace.json",
        r#"{"service":"agent"}"#,
    );
    for (into, from) in [
        (&mut tables_and_trace.profiles, &trace.profiles),
        (&mut tables_and_trace.samples, &trace.samples),
        (&mut tables_and_trace.stacks, &trace.stacks),
        (&mut tables_and_trace.frames, &trace.frames),
    ] {
        *into = arrow_select::concat::concat_batches(&into.schema(), [&*into, from]).unwrap();
    }
    let mut request = ExportRequest::new(Selection::default(), ExportFormat::Pprof);
    request.pgo = true;
    let exported = export_tables(&tables_and_trace, &request).expect("export");
    let names: Vec<&str> = exported
        .series
        .iter()
        .map(|s| s.sample_type.as_str())
        .collect();
    assert_eq!(names, ["cpu-clock"]);
}

#[test]
fn a_pgo_export_counts_every_cpu_row_and_its_cpu_time() {
    use prost::Message;
    use std::io::Read;
    let tables = convert(
        &repo_file("samples/perf-script/simple-with-header.perf.txt"),
        "app/perf.txt",
        r#"{"service":"app","timestamp":1534348884.0}"#,
    );
    // What Go's PGO should read, from the tables' rows: one count per row (a counted series'
    // value), and each row's CPU time.
    let p = &tables.profiles;
    let unit = p.column_by_name("sample_unit").unwrap().as_string::<i32>();
    assert_eq!(p.num_rows(), 1, "one CPU series");
    let counted = matches!(unit.value(0), "count" | "samples");
    let s = &tables.samples;
    let value = s
        .column_by_name("value")
        .unwrap()
        .as_primitive::<Int64Type>();
    let weight = s
        .column_by_name("weight_ns")
        .unwrap()
        .as_primitive::<Int64Type>();
    let rows = s.num_rows() as i64;
    let want_count: i64 = if counted {
        value.iter().flatten().sum()
    } else {
        rows
    };
    let want_ns: i64 = weight.iter().flatten().sum();
    assert!(want_ns > 0 && rows > 1);

    let mut request = ExportRequest::new(Selection::default(), ExportFormat::Pprof);
    request.pgo = true;
    let exported = export_tables(&tables, &request).expect("export");
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(exported.bytes.as_slice())
        .read_to_end(&mut bytes)
        .expect("gzip");
    let profile = proflake_proto::pprof::Profile::decode(bytes.as_slice()).expect("pprof");
    let text = |i: i64| std::str::from_utf8(&profile.string_table[i as usize]).unwrap();
    let types: Vec<(&str, &str)> = profile
        .sample_type
        .iter()
        .map(|t| (text(t.r#type), text(t.unit)))
        .collect();
    assert_eq!(types, [("samples", "count"), ("cpu", "nanoseconds")]);
    let sum = |k: usize| profile.sample.iter().map(|s| s.value[k]).sum::<i64>();
    assert_eq!((sum(0), sum(1)), (want_count, want_ns));
    // Rows of one stack are one pprof sample.
    assert!((profile.sample.len() as i64) < rows);
}

#[test]
fn stacks_stored_children_first_merge_as_stored_parents_first() {
    let tables = pprof_sample();
    let request = ExportRequest::new(Selection::default(), ExportFormat::Pprof);
    let stored = export_tables(&tables, &request).expect("export");
    // The same rows, children before their parents.
    let mut reversed = tables.clone();
    let n = tables.stacks.num_rows() as u32;
    let order = arrow_array::UInt32Array::from_iter_values((0..n).rev());
    reversed.stacks = arrow_select::take::take_record_batch(&tables.stacks, &order).unwrap();
    let exported = export_tables(&reversed, &request).expect("export");
    let again = |bytes: &[u8]| totals(&convert(bytes, "again.pb.gz", r#"{"service":"app"}"#));
    assert_eq!(again(&exported.bytes), again(&stored.bytes));
    assert_eq!(again(&exported.bytes), totals(&tables));

    // A parent that is not shallower than its child is refused, naming the row.
    let depth = reversed
        .stacks
        .column_by_name("depth")
        .unwrap()
        .as_primitive::<Int32Type>();
    let flat = arrow_array::Int32Array::from(vec![0; depth.len()]);
    let mut columns = reversed.stacks.columns().to_vec();
    let at = reversed.stacks.schema().index_of("depth").unwrap();
    columns[at] = std::sync::Arc::new(flat);
    reversed.stacks = arrow_array::RecordBatch::try_new(reversed.stacks.schema(), columns).unwrap();
    let err = export_tables(&reversed, &request).unwrap_err();
    assert!(err.to_string().contains("is not a shallower node"), "{err}");
}
