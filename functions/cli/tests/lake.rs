//! The lake tier through the command line: `convert` publishes, a repeated publish writes
//! nothing, new content under a key replaces the old rows, and `compact` packs files without
//! losing or doubling a row. Rows are counted from the Parquet footers of the data files on
//! disk (after a vacuum with no retention, exactly the active ones) against the landing files;
//! tests/lake/test_lake.py reads the lake with an independent reader (DuckDB's delta
//! extension).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use parquet::file::reader::{FileReader, SerializedFileReader};

mod common;

use common::{proflake, repo, text};

const TABLES: [&str; 6] = [
    "profiles",
    "samples",
    "stacks",
    "frames",
    "function_rollup",
    "counters",
];

/// Every `.parquet` file under `dir`.
fn parquet_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                // The log's checkpoints are Parquet too, but hold no table rows.
                if !path.ends_with("_delta_log") {
                    out.extend(parquet_files(&path));
                }
            } else if path.extension().is_some_and(|e| e == "parquet") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn rows(files: &[PathBuf]) -> i64 {
    files
        .iter()
        .map(|f| {
            let reader = SerializedFileReader::new(fs::File::open(f).unwrap()).unwrap();
            reader.metadata().file_metadata().num_rows()
        })
        .sum()
}

fn log_versions(store: &Path, table: &str) -> usize {
    fs::read_dir(store.join("lake").join(table).join("_delta_log"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "json")
        })
        .count()
}

fn run(args: &[&str]) -> String {
    let out = proflake(args);
    assert!(
        out.status.success(),
        "{args:?}: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

fn convert(store: &Path, input: &Path, extra: &[&str]) {
    let mut args = vec![
        "convert",
        input.to_str().unwrap(),
        "--out",
        store.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run(&args);
}

/// Lake rows equal landing rows, table by table, once unreferenced files are vacuumed;
/// `counters` has rows only when an upload has instants or counters.
fn assert_lake_matches_landing(store: &Path, with_counters: bool) {
    run(&[
        "compact",
        "--store",
        store.to_str().unwrap(),
        "--retention-hours",
        "0",
    ]);
    for table in TABLES {
        let landing = rows(&parquet_files(&store.join("tables/v2").join(table)));
        let lake = rows(&parquet_files(&store.join("lake").join(table)));
        assert_eq!(lake, landing, "{table}: lake rows vs landing rows");
        assert_eq!(
            landing > 0,
            table != "counters" || with_counters,
            "{table} rows"
        );
    }
}

#[test]
fn publish_is_idempotent_and_replaces_superseded_content() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path();
    let pprof = repo("samples/pprof/google-pprof_report_sample.cpu.pb.gz");
    let folded = repo("samples/folded/pyspy.folded");
    convert(store, &repo("samples/perfetto/android_app.pftrace"), &[]);
    convert(store, &pprof, &[]);
    // A Chrome trace with instants and counters: the counters table is published too.
    convert(store, &repo("samples/chrome/claude_code.json"), &[]);
    assert_lake_matches_landing(store, true);

    // A repeated publish commits nothing and rewrites no file.
    let versions: Vec<usize> = TABLES.iter().map(|t| log_versions(store, t)).collect();
    let files: BTreeSet<PathBuf> = parquet_files(&store.join("lake")).into_iter().collect();
    let report = run(&["publish", "--store", store.to_str().unwrap()]);
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    assert_eq!(report["keys"], 3);
    assert_eq!(report["up_to_date"], 3);
    assert_eq!(report["commits"], 0);
    let again: Vec<usize> = TABLES.iter().map(|t| log_versions(store, t)).collect();
    assert_eq!(again, versions);
    let files_again: BTreeSet<PathBuf> = parquet_files(&store.join("lake")).into_iter().collect();
    assert_eq!(files_again, files);

    // New content under the pprof upload's key: its old rows leave the lake.
    // (written into the bucket directory as an SDK would overwrite it, then processed).
    let key = "uploads/google-pprof_report_sample.cpu.pb.gz";
    fs::write(store.join(key), fs::read(&folded).unwrap()).unwrap();
    let out = proflake(&[
        "process",
        "--store",
        store.to_str().unwrap(),
        key,
        "--format",
        "folded",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("1 upload(s) published (1 replaced)"),
        "{}",
        text(&out.stderr)
    );
    assert_lake_matches_landing(store, true);
}

#[test]
fn compaction_packs_each_partition_into_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path();
    let input = dir.path().join("input");
    fs::create_dir_all(&input).unwrap();
    // Three uploads published in three batches: three files per table and partition.
    for i in 0..3 {
        let copy = input.join(format!("pyspy-{i}.folded"));
        let mut bytes = fs::read(repo("samples/folded/pyspy.folded")).unwrap();
        bytes.extend_from_slice(format!("extra_{i} 1\n").as_bytes());
        fs::write(&copy, bytes).unwrap();
        convert(store, &copy, &["--start-time", "1764000000"]);
    }
    let before = parquet_files(&store.join("lake/samples")).len();
    assert_eq!(before, 3);
    assert_lake_matches_landing(store, false);
    for table in TABLES {
        let files = parquet_files(&store.join("lake").join(table));
        let partitions: BTreeSet<_> = files.iter().map(|f| f.parent().unwrap()).collect();
        assert_eq!(
            files.len(),
            partitions.len(),
            "{table}: one file per partition"
        );
    }
}

#[test]
fn a_corrupt_landing_file_quarantines_its_publish_and_the_rest_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path();
    let s = store.to_str().unwrap();
    let perfetto = repo("samples/perfetto/android_app.pftrace");
    let pprof = repo("samples/pprof/google-pprof_report_sample.cpu.pb.gz");
    convert(store, &perfetto, &["--no-publish"]);
    convert(store, &pprof, &["--no-publish"]);
    // One landing file of the pprof upload loses its last byte.
    let manifest: serde_json::Value = fs::read_dir(store.join("converted"))
        .unwrap()
        .map(|e| e.unwrap().path().join("manifest.json"))
        .filter(|m| m.is_file())
        .map(|m| serde_json::from_slice::<serde_json::Value>(&fs::read(m).unwrap()).unwrap())
        .find(|m| m["source"]["format"] == "pprof")
        .unwrap();
    let samples_key = manifest["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "table:samples")
        .unwrap()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = store.join(&samples_key);
    let mut bytes = fs::read(&path).unwrap();
    bytes.pop();
    fs::write(&path, bytes).unwrap();

    let out = proflake(&["publish", "--store", s]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["published"], 1);
    assert_eq!(report["quarantined"].as_array().unwrap().len(), 1);
    assert!(
        report["quarantined"][0]["error"]
            .as_str()
            .unwrap()
            .contains(&samples_key),
        "{report}"
    );
    let reports: Vec<_> = fs::read_dir(store.join("lake/_quarantine"))
        .unwrap()
        .collect();
    assert_eq!(reports.len(), 1);
    // The lake holds the perfetto upload alone, in every table.
    for table in TABLES {
        let lake = rows(&parquet_files(&store.join("lake").join(table)));
        let landing: i64 = manifest_rows(store, "perfetto", table);
        assert_eq!(lake, landing, "{table}");
    }
}

/// Rows the manifest of the upload of `format` records for `table`.
fn manifest_rows(store: &Path, format: &str, table: &str) -> i64 {
    fs::read_dir(store.join("converted"))
        .unwrap()
        .map(|e| e.unwrap().path().join("manifest.json"))
        .filter(|m| m.is_file())
        .map(|m| serde_json::from_slice::<serde_json::Value>(&fs::read(m).unwrap()).unwrap())
        .filter(|m| m["source"]["format"] == format)
        .flat_map(|m| m["outputs"].as_array().unwrap().clone())
        .filter(|o| o["kind"] == format!("table:{table}"))
        .map(|o| o["rows"].as_i64().unwrap())
        .sum()
}

#[test]
fn files_a_crash_left_uncommitted_are_vacuumed() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path();
    convert(store, &repo("samples/folded/pyspy.folded"), &[]);
    // A data file written but never committed, as a publish cut short between the two leaves.
    let partition = fs::read_dir(store.join("lake/samples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("dt="))
        .unwrap();
    let committed = parquet_files(&partition)[0].clone();
    let orphan = partition.join("part-00000-orphan-c000.zstd.parquet");
    fs::copy(&committed, &orphan).unwrap();
    // Within the retention it stays (a query may still read it)...
    run(&["compact", "--store", store.to_str().unwrap()]);
    assert!(orphan.exists());
    // ...past it, vacuum removes it, and only it.
    assert_lake_matches_landing(store, false);
    assert!(!orphan.exists());
}

#[test]
fn a_batch_cut_short_is_published_again_from_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path();
    convert(store, &repo("samples/folded/pyspy.folded"), &[]);
    convert(store, &repo("samples/perfetto/android_app.pftrace"), &[]);
    // The record a batch writes before touching any table, left behind as by a batch that
    // stopped after committing: it names the folded upload's key and conversion.
    let records: Vec<PathBuf> = fs::read_dir(store.join("lake/_published"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    let (key_id, held) = records
        .iter()
        .map(|p| {
            let record: serde_json::Value = serde_json::from_slice(&fs::read(p).unwrap()).unwrap();
            let id = p.file_stem().unwrap().to_string_lossy().into_owned();
            (id, record)
        })
        .find(|(_, r)| r["key"] == "uploads/pyspy.folded")
        .map(|(id, r)| (id, r["published"].clone()))
        .unwrap();
    let batches = store.join("lake/_published/_batches");
    fs::create_dir_all(&batches).unwrap();
    let record = serde_json::json!({ "keys": [[key_id, [held]]] });
    fs::write(batches.join("1-cut.json"), record.to_string()).unwrap();

    let report = run(&["publish", "--store", store.to_str().unwrap()]);
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    // That key alone is published again: its rows replaced, once, and the record gone.
    assert_eq!(
        (report["published"].as_u64(), report["up_to_date"].as_u64()),
        (Some(1), Some(1)),
        "{report}"
    );
    assert!(fs::read_dir(&batches).map_or(true, |mut d| d.next().is_none()));
    assert_lake_matches_landing(store, false);
}
