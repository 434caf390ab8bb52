//! The Parquet stack tables over every input we have, read back with the parquet crate: they
//! hold exactly the samples of the Sample v2 chunks written beside them, their ids resolve,
//! and weights add up to the model's.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt32Type};
use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use proflake::{time_unit_ns, BuildIdIndexEntry, Converted, Profile, SeriesKind};

use crate::sample_v2::{all_perfetto_fixtures, convert_input, other_format_inputs};

/// Every table file of one conversion, read back and concatenated per table.
fn read_tables(c: &Converted) -> BTreeMap<String, Vec<RecordBatch>> {
    let mut out: BTreeMap<String, Vec<RecordBatch>> = BTreeMap::new();
    for o in &c.manifest.outputs {
        let Some(table) = o.kind.strip_prefix("table:") else {
            continue;
        };
        let bytes = &c
            .objects
            .iter()
            .find(|(k, _)| *k == o.key)
            .expect("listed object")
            .1;
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(bytes.clone()))
            .expect("parquet")
            .build()
            .expect("reader");
        let batches: Vec<RecordBatch> = reader.map(|b| b.expect("batch")).collect();
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        assert_eq!(Some(rows as u64), o.rows, "{}: rows in the manifest", o.key);
        out.entry(table.to_owned()).or_default().extend(batches);
    }
    out
}

fn strings(b: &RecordBatch, col: &str) -> Vec<String> {
    let a = b.column_by_name(col).expect(col).as_string::<i32>();
    (0..a.len()).map(|i| a.value(i).to_owned()).collect()
}

fn u32s(b: &RecordBatch, col: &str) -> Vec<Option<u32>> {
    let a = b
        .column_by_name(col)
        .expect(col)
        .as_primitive::<UInt32Type>();
    (0..a.len())
        .map(|i| a.is_valid(i).then(|| a.value(i)))
        .collect()
}

fn i64s(b: &RecordBatch, col: &str) -> Vec<Option<i64>> {
    let a = b
        .column_by_name(col)
        .expect(col)
        .as_primitive::<Int64Type>();
    (0..a.len())
        .map(|i| a.is_valid(i).then(|| a.value(i)))
        .collect()
}

/// The tables of one conversion agree with its Sample v2 chunks and with themselves.
fn check(name: &str, c: &Converted) {
    let tables = read_tables(c);
    for t in ["profiles", "samples", "stacks", "frames"] {
        assert!(tables.contains_key(t), "{name}: no {t} table");
    }
    // Samples per chunk, from the chunk JSON itself.
    let mut chunk_samples: BTreeMap<String, usize> = BTreeMap::new();
    for o in c.manifest.outputs.iter().filter(|o| o.kind == "sample_v2") {
        let json = &c.objects.iter().find(|(k, _)| *k == o.key).unwrap().1;
        let v: serde_json::Value = serde_json::from_slice(json).unwrap();
        let n = v["profile"]["samples"].as_array().unwrap().len();
        chunk_samples.insert(v["chunk_id"].as_str().unwrap().to_owned(), n);
    }
    let mut profile_rows: BTreeMap<String, usize> = BTreeMap::new();
    let mut profile_weight: BTreeMap<String, i64> = BTreeMap::new();
    for b in &tables["profiles"] {
        for ((id, n), w) in strings(b, "profile_id")
            .into_iter()
            .zip(i64s(b, "samples"))
            .zip(i64s(b, "total_weight"))
        {
            profile_rows.insert(id.clone(), n.unwrap() as usize);
            profile_weight.insert(id, w.unwrap());
        }
    }
    assert_eq!(profile_rows, chunk_samples, "{name}: profiles.samples");

    let mut stacks: HashMap<(String, u32), (Option<u32>, u32, u32)> = HashMap::new();
    for b in &tables["stacks"] {
        let ids = strings(b, "profile_id");
        for (i, ((s, p), (f, d))) in u32s(b, "stack_id")
            .into_iter()
            .zip(u32s(b, "parent_id"))
            .zip(u32s(b, "frame_id").into_iter().zip(u32s(b, "depth")))
            .enumerate()
        {
            stacks.insert((ids[i].clone(), s.unwrap()), (p, f.unwrap(), d.unwrap()));
        }
    }
    let mut frames: BTreeSet<(String, u32)> = BTreeSet::new();
    for b in &tables["frames"] {
        for (id, f) in strings(b, "profile_id")
            .into_iter()
            .zip(u32s(b, "frame_id"))
        {
            frames.insert((id, f.unwrap()));
        }
    }
    check_build_id_index(name, c, &tables["frames"]);
    for ((profile, stack), (parent, frame, depth)) in &stacks {
        assert!(
            frames.contains(&(profile.clone(), *frame)),
            "{name}: stack {stack} of {profile} names a missing frame"
        );
        match parent {
            None => assert_eq!(*depth, 0, "{name}: root depth"),
            Some(p) => {
                assert!(p < stack, "{name}: parent {p} after child {stack}");
                let parent_depth = stacks[&(profile.clone(), *p)].2;
                assert_eq!(parent_depth + 1, *depth, "{name}: depth of {stack}");
            }
        }
    }

    let mut sample_rows: BTreeMap<String, usize> = BTreeMap::new();
    let mut sample_weight: BTreeMap<String, i64> = BTreeMap::new();
    let mut with_stack = 0i64;
    for b in &tables["samples"] {
        let ids = strings(b, "profile_id");
        for (i, (stack, weight)) in u32s(b, "stack_id")
            .into_iter()
            .zip(i64s(b, "weight"))
            .enumerate()
        {
            *sample_rows.entry(ids[i].clone()).or_default() += 1;
            *sample_weight.entry(ids[i].clone()).or_default() += weight.unwrap();
            if let Some(s) = stack {
                with_stack += 1;
                assert!(
                    stacks.contains_key(&(ids[i].clone(), s)),
                    "{name}: sample names missing stack {s}"
                );
            }
        }
    }
    assert_eq!(sample_rows, chunk_samples, "{name}: samples rows per chunk");
    assert_eq!(sample_weight, profile_weight, "{name}: total_weight");
    assert_eq!(
        sample_rows.values().sum::<usize>() as u64,
        c.manifest.profile.samples_written,
        "{name}: samples_written"
    );
    if let Some(rollup) = tables.get("function_rollup") {
        let self_samples: i64 = rollup
            .iter()
            .flat_map(|b| i64s(b, "self_samples"))
            .map(Option::unwrap)
            .sum();
        assert_eq!(self_samples, with_stack, "{name}: rollup self_samples");
    } else {
        assert_eq!(
            with_stack, 0,
            "{name}: no rollup though samples have stacks"
        );
    }
}

/// Every unsymbolized frame of the tables that names an image id is in that image's build-ID
/// index entry, and every entry belongs to this upload.
fn check_build_id_index(name: &str, c: &Converted, frames: &[RecordBatch]) {
    let mut indexed: BTreeMap<String, BTreeSet<(&'static str, u64)>> = BTreeMap::new();
    for o in c
        .manifest
        .outputs
        .iter()
        .filter(|o| o.kind == "build_id_index")
    {
        let json = &c.objects.iter().find(|(k, _)| *k == o.key).unwrap().1;
        let entry: BuildIdIndexEntry = serde_json::from_slice(json).unwrap();
        assert_eq!(entry.source_id, c.manifest.source.source_id, "{name}");
        assert_eq!(
            o.key,
            format!("index/build-id/{}/{}.json", entry.build_id, entry.source_id),
            "{name}"
        );
        assert!(entry.frames > 0, "{name}: empty index entry {}", o.key);
        let addresses = indexed.entry(entry.build_id).or_default();
        for m in entry.mappings {
            addresses.extend(m.absolute.into_iter().map(|a| ("absolute", a)));
            addresses.extend(m.image_relative.into_iter().map(|a| ("image_relative", a)));
        }
    }
    let mut unsymbolized = 0;
    for b in frames {
        let symbolized = b.column_by_name("symbolized").unwrap().as_boolean();
        let address = b
            .column_by_name("address")
            .unwrap()
            .as_primitive::<arrow_array::types::UInt64Type>();
        let space = b
            .column_by_name("address_space")
            .unwrap()
            .as_string::<i32>();
        let code = b.column_by_name("build_id").unwrap().as_string::<i32>();
        let debug = b.column_by_name("debug_id").unwrap().as_string::<i32>();
        for i in 0..b.num_rows() {
            let id = if code.is_valid(i) {
                code.value(i)
            } else if debug.is_valid(i) {
                debug.value(i)
            } else {
                continue;
            };
            if symbolized.value(i) || !address.is_valid(i) {
                continue;
            }
            unsymbolized += 1;
            let space = if space.value(i) == "absolute" {
                "absolute"
            } else {
                "image_relative"
            };
            assert!(
                indexed
                    .get(id)
                    .is_some_and(|a| a.contains(&(space, address.value(i)))),
                "{name}: unsymbolized {space} {:#x} of {id} is not in the build-ID index",
                address.value(i)
            );
        }
    }
    assert_eq!(
        unsymbolized == 0,
        indexed.is_empty(),
        "{name}: index entries without unsymbolized frames in the tables, or the reverse"
    );
}

#[test]
fn tables_hold_exactly_the_sample_v2_samples_of_every_input() {
    let mut checked = 0;
    let inputs = other_format_inputs()
        .into_iter()
        .chain(all_perfetto_fixtures());
    for (name, bytes) in inputs {
        // Inputs that cannot convert (no CPU or wall series, no samples) are covered by the
        // Sample v2 tests; here every converted one must tabulate.
        let Ok(c) = convert_input(&name, &bytes) else {
            continue;
        };
        check(&name, &c);
        checked += 1;
    }
    assert!(checked >= 30, "only {checked} inputs converted");
}

/// Model weight of the chosen series in ns when it measures time.
fn chosen_weight_ns(p: &Profile) -> Option<i64> {
    let kind = [SeriesKind::CpuTime, SeriesKind::WallTime]
        .into_iter()
        .find(|k| p.all_series().any(|(_, s)| s.kind == *k))?;
    let mut total = 0i64;
    for s in p.samples() {
        let series = p.series(s.series);
        if series.kind != kind || s.weight <= 0 {
            continue;
        }
        total += s.weight * time_unit_ns(p.str(series.unit))?;
    }
    Some(total)
}

/// Expansion splits an aggregated weight over the samples it becomes: the tables keep the
/// input's total exactly, in ns.
#[test]
fn aggregated_pprof_weights_add_up_to_the_input_total() {
    for name in [
        "samples/pprof/google-pprof_report_sample.cpu.pb.gz",
        "pprof/google-pprof_proftest_large.cpu.pb.gz",
    ] {
        let bytes = other_format_inputs()
            .into_iter()
            .find(|(n, _)| n == name)
            .expect("input present")
            .1;
        let c = convert_input(name, &bytes).unwrap();
        let expected = chosen_weight_ns(&c.decoded.profile).expect("a time series");
        let tables = read_tables(&c);
        let total: i64 = tables["samples"]
            .iter()
            .flat_map(|b| i64s(b, "weight"))
            .map(Option::unwrap)
            .sum();
        assert_eq!(total, expected, "{name}");
        let units: BTreeSet<String> = tables["profiles"]
            .iter()
            .flat_map(|b| strings(b, "sample_unit"))
            .collect();
        assert_eq!(units, BTreeSet::from(["nanoseconds".to_owned()]), "{name}");
    }
}
