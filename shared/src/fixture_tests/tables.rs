//! The Parquet stack tables over every input we have, read back with the parquet crate: they
//! hold every observation of every series with its exact value, their ids resolve, and per
//! series they agree with the manifest and with counts taken from the input itself.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::{writers::build_id_index::BuildIdIndexEntry, Converted};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use prost::Message;

use super::sample_v2::{all_perfetto_fixtures, convert_input, other_format_inputs};

/// Every table file of one conversion, read back and concatenated per table.
pub(crate) fn read_tables(c: &Converted) -> BTreeMap<String, Vec<RecordBatch>> {
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

pub(crate) fn strings(b: &RecordBatch, col: &str) -> Vec<String> {
    let a = b.column_by_name(col).expect(col).as_string::<i32>();
    (0..a.len()).map(|i| a.value(i).to_owned()).collect()
}

fn i32s(b: &RecordBatch, col: &str) -> Vec<Option<i32>> {
    let a = b
        .column_by_name(col)
        .expect(col)
        .as_primitive::<Int32Type>();
    (0..a.len())
        .map(|i| a.is_valid(i).then(|| a.value(i)))
        .collect()
}

pub(crate) fn i64s(b: &RecordBatch, col: &str) -> Vec<Option<i64>> {
    let a = b
        .column_by_name(col)
        .expect(col)
        .as_primitive::<Int64Type>();
    (0..a.len())
        .map(|i| a.is_valid(i).then(|| a.value(i)))
        .collect()
}

/// Rows and sum of `value` per series (`sample_type`, `sample_unit`).
type SeriesTotals = BTreeMap<(String, String), (u64, i128)>;

/// The tables of one conversion agree with themselves and with the manifest; returns the
/// per-series totals of `samples`.
fn check(name: &str, c: &Converted) -> SeriesTotals {
    let tables = read_tables(c);
    for t in ["profiles", "samples", "stacks", "frames"] {
        assert!(tables.contains_key(t), "{name}: no {t} table");
    }
    for (t, batches) in &tables {
        for b in batches {
            assert!(
                strings(b, "source_id")
                    .iter()
                    .all(|s| *s == c.manifest.source.source_id),
                "{name}: {t}.source_id"
            );
        }
    }
    let mut profile_rows: BTreeMap<String, usize> = BTreeMap::new();
    let mut profile_weight: BTreeMap<String, i64> = BTreeMap::new();
    for b in &tables["profiles"] {
        for ((id, n), w) in strings(b, "profile_id")
            .into_iter()
            .zip(i64s(b, "samples"))
            .zip(i64s(b, "total_value"))
        {
            profile_rows.insert(id.clone(), n.unwrap() as usize);
            profile_weight.insert(id, w.unwrap());
        }
    }

    let mut stacks: HashMap<(String, i32), (Option<i32>, i32, i32)> = HashMap::new();
    for b in &tables["stacks"] {
        let ids = strings(b, "profile_id");
        for (i, ((s, p), (f, d))) in i32s(b, "stack_id")
            .into_iter()
            .zip(i32s(b, "parent_id"))
            .zip(i32s(b, "frame_id").into_iter().zip(i32s(b, "depth")))
            .enumerate()
        {
            stacks.insert((ids[i].clone(), s.unwrap()), (p, f.unwrap(), d.unwrap()));
        }
    }
    let mut frames: BTreeSet<(String, i32)> = BTreeSet::new();
    for b in &tables["frames"] {
        for (id, f) in strings(b, "profile_id")
            .into_iter()
            .zip(i32s(b, "frame_id"))
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
    let mut series = SeriesTotals::new();
    let mut with_stack = 0i64;
    for b in &tables["samples"] {
        let ids = strings(b, "profile_id");
        let types = strings(b, "sample_type");
        let units = strings(b, "sample_unit");
        for (i, (stack, value)) in i32s(b, "stack_id")
            .into_iter()
            .zip(i64s(b, "value"))
            .enumerate()
        {
            let value = value.unwrap();
            *sample_rows.entry(ids[i].clone()).or_default() += 1;
            *sample_weight.entry(ids[i].clone()).or_default() += value;
            let totals = series
                .entry((types[i].clone(), units[i].clone()))
                .or_default();
            totals.0 += 1;
            totals.1 += i128::from(value);
            if let Some(s) = stack {
                with_stack += 1;
                assert!(
                    stacks.contains_key(&(ids[i].clone(), s)),
                    "{name}: sample names missing stack {s}"
                );
            }
        }
    }
    assert_eq!(sample_rows, profile_rows, "{name}: profiles.samples");
    assert_eq!(sample_weight, profile_weight, "{name}: total_value");
    let manifest: SeriesTotals = c
        .manifest
        .series
        .iter()
        .map(|s| {
            assert_eq!(s.table_rows, s.observations, "{name}: {}", s.sample_type);
            (
                (s.sample_type.clone(), s.sample_unit.clone()),
                (s.table_rows, s.total_value),
            )
        })
        .collect();
    assert_eq!(series, manifest, "{name}: series in the manifest");
    if let Some(rollup) = tables.get("function_rollup") {
        let self_rows: i64 = rollup
            .iter()
            .flat_map(|b| i64s(b, "self_rows"))
            .map(Option::unwrap)
            .sum();
        assert_eq!(self_rows, with_stack, "{name}: rollup self_rows");
    } else {
        assert_eq!(
            with_stack, 0,
            "{name}: no rollup though samples have stacks"
        );
    }
    series
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
        let addresses = indexed.entry(entry.build_id.into()).or_default();
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
            .as_primitive::<Int64Type>();
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
            // The column holds the address's 64 bits as a signed number.
            let address = address.value(i) as u64;
            assert!(
                indexed
                    .get(id)
                    .is_some_and(|a| a.contains(&(space, address))),
                "{name}: unsymbolized {space} {address:#x} of {id} is not in the build-ID index"
            );
        }
    }
    assert_eq!(
        unsymbolized == 0,
        indexed.is_empty(),
        "{name}: index entries without unsymbolized frames in the tables, or the reverse"
    );
}

/// Per series, from the input's own bytes: a pprof sample is one observation in each sample
/// type whose value is not zero.
fn pprof_totals(bytes: &[u8]) -> SeriesTotals {
    let p = proflake_proto::pprof::Profile::decode(bytes).expect("pprof decodes");
    let s = |i: i64| String::from_utf8_lossy(&p.string_table[i as usize]).into_owned();
    let mut out = SeriesTotals::new();
    for (i, t) in p.sample_type.iter().enumerate() {
        let mut totals = (0u64, 0i128);
        for sample in &p.sample {
            let v = sample.value[i];
            if v != 0 {
                totals.0 += 1;
                totals.1 += i128::from(v);
            }
        }
        if totals.0 > 0 {
            out.insert((s(t.r#type), s(t.unit)), totals);
        }
    }
    out
}

/// Per series, from the text: every `STACK COUNT` line is one observation of its count, and
/// fractional counts are exact in units of 10^-D for the file's largest number of decimals D.
fn folded_totals(bytes: &[u8]) -> (u64, i128) {
    let text = std::str::from_utf8(bytes).expect("folded is text");
    let counts: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| l.rsplit([' ', '\t']).next().unwrap())
        .collect();
    let decimals = |c: &str| c.split_once('.').map_or(0, |(_, f)| f.len() as u32);
    let d = counts.iter().map(|c| decimals(c)).max().unwrap_or(0);
    let total = counts
        .iter()
        .map(|c| {
            let (whole, frac) = c.split_once('.').unwrap_or((c, ""));
            let frac_value: i128 = if frac.is_empty() {
                0
            } else {
                frac.parse().unwrap()
            };
            whole.parse::<i128>().expect("a count") * 10i128.pow(d)
                + frac_value * 10i128.pow(d - decimals(c))
        })
        .sum();
    (counts.len() as u64, total)
}

#[test]
fn tables_hold_every_observation_of_every_input() {
    let mut checked = 0;
    let mut independent = 0;
    let inputs = other_format_inputs()
        .into_iter()
        .chain(all_perfetto_fixtures());
    for (name, bytes) in inputs {
        // Inputs that cannot convert at all (no observations, no wall clock) are covered by
        // the Sample v2 tests; here every converted one must tabulate.
        let Ok(c) = convert_input(&name, &bytes) else {
            continue;
        };
        let series = check(&name, &c);
        checked += 1;
        if name.contains("pprof/") {
            assert_eq!(
                series,
                pprof_totals(&bytes),
                "{name}: against the pprof itself"
            );
            independent += 1;
        } else if name.starts_with("folded/") || name.starts_with("samples/folded/") {
            let totals: Vec<(u64, i128)> = series.values().copied().collect();
            assert_eq!(totals, [folded_totals(&bytes)], "{name}: against the text");
            independent += 1;
        }
    }
    assert!(checked >= 30, "only {checked} inputs converted");
    assert!(independent >= 8, "only {independent} checked independently");
}
