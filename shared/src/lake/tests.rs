//! Tables made by an earlier schema of version 2: the columns added since are added when the
//! table is next opened, rows published before read as null and rows published after carry
//! their values, and tables another schema version made are refused untouched.
//!
//! The old tables are made here with delta-rs itself, as a publisher of the earlier schema
//! made them. Rows are read back as a Delta reader reads them: the active files named by the
//! table's JSON log (replayed here, not through the lake's code), each read by column name
//! with Parquet's reader, a file without a column holding nulls in it.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use deltalake::kernel::{DataType as DeltaType, StructField};
use deltalake::writer::{DeltaWriter, RecordBatchWriter};
use deltalake::DeltaTable;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use tokio::runtime::Runtime;

use super::evolve::add_missing_columns;
use super::schema::delta_columns;
use super::{Lake, LakeSettings, PublishScope, PARTITION_COLUMN};
use crate::error::ErrorKind;
use crate::pipeline::{process_upload, Outcome, ProcessOptions};
use crate::store::{LocalDirStore, ObjectStore};
use crate::tables::Table;

/// The column added to `profiles` within version 2.
const ADDED: &str = "clock_source";

struct Setup {
    dir: tempfile::TempDir,
    runtime: Runtime,
    lake: Lake,
    store: LocalDirStore,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // No retention: compaction's vacuum leaves only the active files.
    let settings = LakeSettings {
        retention_hours: 0,
        ..LakeSettings::default()
    };
    let lake = Lake::local(dir.path(), runtime.handle().clone(), settings).unwrap();
    let store = LocalDirStore::new(dir.path());
    Setup {
        dir,
        runtime,
        lake,
        store,
    }
}

/// Converts `folded` uploaded at `key`: its source id.
fn upload(s: &Setup, key: &str, folded: &[u8]) -> String {
    s.store.put(key, folded).unwrap();
    match process_upload(&s.store, &s.store, key, &ProcessOptions::default()).unwrap() {
        Outcome::Converted(c) => c.source_id,
        other => panic!("{key} not converted: {other:?}"),
    }
}

/// Every file under `dir` whose name ends with `suffix`, sorted.
fn files_under(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).into_iter().flatten() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path, suffix));
        } else if path.to_string_lossy().ends_with(suffix) {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The landing files of `table` of the upload `source_id`, with their partition.
fn landing_files(s: &Setup, table: Table, source_id: &str) -> Vec<(String, PathBuf)> {
    let dir = s.dir.path().join("tables/v2").join(table.name());
    files_under(&dir, &format!("/{source_id}.parquet"))
        .into_iter()
        .map(|path| {
            let partition = path.parent().unwrap().file_name().unwrap();
            let dt = partition.to_str().unwrap().strip_prefix("dt=").unwrap();
            (dt.to_owned(), path)
        })
        .collect()
}

fn read_parquet(path: &Path) -> Vec<RecordBatch> {
    ParquetRecordBatchReaderBuilder::try_new(fs::File::open(path).unwrap())
        .unwrap()
        .build()
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// The values of the string column `name` of `batch`, all null when it has no such column.
fn strings(batch: &RecordBatch, name: &str) -> Vec<Option<String>> {
    match batch.column_by_name(name) {
        Some(column) => {
            let column = column.as_any().downcast_ref::<StringArray>().unwrap();
            column.iter().map(|v| v.map(str::to_owned)).collect()
        }
        None => vec![None; batch.num_rows()],
    }
}

/// The `clock_source` of every landing row of `profiles` of the upload `source_id`.
fn landing_clock_sources(s: &Setup, source_id: &str) -> Vec<Option<String>> {
    let mut values = Vec::new();
    for (_, path) in landing_files(s, Table::Profiles, source_id) {
        for batch in read_parquet(&path) {
            values.extend(strings(&batch, ADDED));
        }
    }
    values
}

/// The table's directory.
fn table_dir(s: &Setup, table: Table) -> PathBuf {
    s.lake.table_url(table).to_file_path().unwrap()
}

/// The data files `table`'s log names as active: its JSON commits replayed, adds and removes.
fn active_files(s: &Setup, table: Table) -> Vec<PathBuf> {
    let dir = table_dir(s, table);
    let mut active = BTreeSet::new();
    for commit in files_under(&dir.join("_delta_log"), ".json") {
        if commit
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with('_')
        {
            continue; // _last_checkpoint
        }
        for line in fs::read_to_string(&commit).unwrap().lines() {
            let action: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(path) = action["add"]["path"].as_str() {
                active.insert(path.to_owned());
            }
            if let Some(path) = action["remove"]["path"].as_str() {
                active.remove(path);
            }
        }
    }
    active.into_iter().map(|p| dir.join(p)).collect()
}

/// The latest version of `table`'s log (the number of its last JSON commit).
fn log_version(s: &Setup, table: Table) -> u64 {
    let commits = files_under(&table_dir(s, table).join("_delta_log"), ".json");
    commits
        .iter()
        .filter_map(|c| c.file_stem()?.to_str()?.parse().ok())
        .max()
        .unwrap()
}

/// Each active row of `profiles` as (source_id, clock_source), read by column name; and
/// whether every active file holds the column itself.
fn lake_clock_sources(s: &Setup) -> (Vec<(String, Option<String>)>, bool) {
    let mut rows = Vec::new();
    let mut every_file_has_it = true;
    for file in active_files(s, Table::Profiles) {
        for batch in read_parquet(&file) {
            every_file_has_it &= batch.column_by_name(ADDED).is_some();
            let ids = strings(&batch, "source_id").into_iter().map(Option::unwrap);
            rows.extend(ids.zip(strings(&batch, ADDED)));
        }
    }
    rows.sort();
    (rows, every_file_has_it)
}

/// The columns of `table`'s Delta table as delta-rs loads them: (name, nullable).
fn delta_schema(s: &Setup, table: Table) -> Vec<(String, bool)> {
    let url = s.lake.table_url(table);
    let delta = s.runtime.block_on(DeltaTable::try_from_url(url)).unwrap();
    let schema = delta.snapshot().unwrap().schema();
    schema
        .fields()
        .map(|f| (f.name().clone(), f.is_nullable()))
        .collect()
}

/// Replaces `table`'s Delta table with one of `columns`, holding the landing rows of
/// `source_ids` in those columns (as a publisher of that schema wrote them): what a lake made
/// before its table's schema changed holds.
fn make_table(s: &Setup, table: Table, columns: Vec<StructField>, source_ids: &[&str]) {
    let dir = table_dir(s, table);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let names: Vec<String> = columns.iter().map(|c| c.name().clone()).collect();
    s.runtime.block_on(async {
        let mut delta = DeltaTable::try_from_url(s.lake.table_url(table))
            .await
            .unwrap()
            .create()
            .with_table_name(table.name())
            .with_columns(columns)
            .with_partition_columns([PARTITION_COLUMN])
            .await
            .unwrap();
        if source_ids.is_empty() {
            return;
        }
        let mut writer = RecordBatchWriter::for_table(&delta).unwrap();
        for id in source_ids {
            for (dt, path) in landing_files(s, table, id) {
                for batch in read_parquet(&path) {
                    writer.write(in_columns(&batch, &names, &dt)).await.unwrap();
                }
            }
        }
        writer.flush_and_commit(&mut delta).await.unwrap();
    });
}

/// The columns `names` of `batch`, `dt` among them.
fn in_columns(batch: &RecordBatch, names: &[String], dt: &str) -> RecordBatch {
    let mut fields = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    for name in names {
        if name == PARTITION_COLUMN {
            fields.push(Field::new(PARTITION_COLUMN, DataType::Utf8, false));
            columns.push(Arc::new(StringArray::from(vec![dt; batch.num_rows()])));
        } else {
            let index = batch.schema().index_of(name).unwrap();
            fields.push(batch.schema().field(index).clone());
            columns.push(batch.column(index).clone());
        }
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

/// The current columns of `table` without `dropped`.
fn columns_without(table: Table, dropped: &str) -> Vec<StructField> {
    let columns: Vec<StructField> = delta_columns(table)
        .unwrap()
        .into_iter()
        .filter(|c| c.name() != dropped)
        .collect();
    assert_eq!(columns.len() + 1, delta_columns(table).unwrap().len());
    columns
}

#[test]
fn a_table_made_before_a_column_was_added_gains_it_and_its_rows_read_null() {
    let s = setup();
    let old = upload(&s, "uploads/old.folded", b"main;work;spin 7\nmain;idle 3\n");
    s.lake
        .publish(&s.store, &s.store, &PublishScope::All)
        .unwrap();
    // The lake as a publisher of the schema before `clock_source` left it: the old upload's
    // profiles rows without the column.
    make_table(
        &s,
        Table::Profiles,
        columns_without(Table::Profiles, ADDED),
        &[&old],
    );
    assert!(!delta_schema(&s, Table::Profiles)
        .iter()
        .any(|(name, _)| name == ADDED));
    let old_rows = landing_clock_sources(&s, &old).len();
    assert!(old_rows > 0);

    let new = upload(&s, "uploads/new.folded", b"main;other 5\nmain;work 2\n");
    let report = s
        .lake
        .publish(&s.store, &s.store, &PublishScope::All)
        .unwrap();
    assert_eq!((report.published, report.up_to_date), (1, 1), "{report:?}");

    // The column was added, nullable, after the partition column.
    let mut expected: Vec<(String, bool)> = Table::Profiles
        .schema()
        .fields()
        .iter()
        .filter(|f| f.name() != ADDED)
        .map(|f| (f.name().clone(), f.is_nullable()))
        .collect();
    expected.push((PARTITION_COLUMN.to_owned(), false));
    expected.push((ADDED.to_owned(), true));
    assert_eq!(delta_schema(&s, Table::Profiles), expected);

    // Rows published before read null; rows published now carry the landing values.
    let new_values = landing_clock_sources(&s, &new);
    assert!(!new_values.is_empty() && new_values.iter().all(Option::is_some));
    let mut want: Vec<(String, Option<String>)> = vec![(old.clone(), None); old_rows];
    want.extend(new_values.iter().map(|v| (new.clone(), v.clone())));
    want.sort();
    let (rows, _) = lake_clock_sources(&s);
    assert_eq!(rows, want);

    // Opening it again adds nothing, and publishing again commits nothing.
    let version = log_version(&s, Table::Profiles);
    let again = s
        .lake
        .publish(&s.store, &s.store, &PublishScope::All)
        .unwrap();
    assert_eq!((again.up_to_date, again.commits), (2, 0), "{again:?}");
    assert_eq!(log_version(&s, Table::Profiles), version);

    // Compaction rewrites the old file and the new one into one file per day, which holds
    // the column itself, with the same values.
    let days: BTreeSet<String> = [&old, &new]
        .iter()
        .flat_map(|id| landing_files(&s, Table::Profiles, id))
        .map(|(dt, _)| dt)
        .collect();
    let compacted = s.lake.compact().unwrap();
    assert_eq!(compacted.conflicts, 0);
    let files = active_files(&s, Table::Profiles);
    assert_eq!(files.len(), days.len(), "{files:?}");
    let (rows, every_file_has_it) = lake_clock_sources(&s);
    assert_eq!(rows, want);
    assert!(every_file_has_it);
}

#[test]
fn a_publisher_that_loses_the_race_to_add_columns_finds_them_added() {
    let s = setup();
    make_table(
        &s,
        Table::Profiles,
        columns_without(Table::Profiles, ADDED),
        &[],
    );
    // Both publishers loaded the table before either added the column.
    let url = s.lake.table_url(Table::Profiles);
    let loser = s.runtime.block_on(DeltaTable::try_from_url(url)).unwrap();
    let winner = s.lake.open(Table::Profiles).unwrap();
    assert_eq!(winner.version(), Some(1));
    let loser = s
        .runtime
        .block_on(add_missing_columns(Table::Profiles, loser))
        .unwrap();
    assert_eq!(loser.version(), Some(1), "one commit added the column");
    assert_eq!(log_version(&s, Table::Profiles), 1);
    let names: Vec<String> = delta_schema(&s, Table::Profiles)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names.iter().filter(|n| *n == ADDED).count(), 1);
}

#[test]
fn a_table_of_another_schema_version_is_refused_untouched() {
    let s = setup();
    // A table made with the current columns needs nothing.
    s.lake.open(Table::Samples).unwrap();
    s.lake.open(Table::Samples).unwrap();
    assert_eq!(log_version(&s, Table::Samples), 0);

    let mut retyped = delta_columns(Table::Profiles).unwrap();
    let at = retyped.iter().position(|c| c.name() == ADDED).unwrap();
    retyped[at] = StructField::new(ADDED, DeltaType::LONG, true);
    let mut unknown = delta_columns(Table::Profiles).unwrap();
    unknown.push(StructField::new(
        "from_a_later_schema",
        DeltaType::STRING,
        true,
    ));
    let cases = [
        ("source_key", columns_without(Table::Profiles, "source_key")),
        (ADDED, retyped),
        ("from_a_later_schema", unknown),
    ];
    for (column, columns) in cases {
        make_table(&s, Table::Profiles, columns, &[]);
        let err = s.lake.open(Table::Profiles).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::LakeSchema { .. }),
            "{column}: {err}"
        );
        let message = err.to_string();
        assert!(
            message.contains(column) && message.contains("incompatible schema version"),
            "{message}"
        );
        assert!(!err.kind().is_transient());
        assert_eq!(log_version(&s, Table::Profiles), 0, "{column}: no commit");
    }
}
