//! Reading the stack tables back from Parquet, through an [`ObjectStore`]: the same code reads
//! a local directory that mirrors the bucket ([`LocalDirStore`](crate::LocalDirStore)), the
//! bucket itself (`S3Store`), or the objects a conversion produced in memory.

use std::sync::Arc;

use arrow_array::{
    cast::AsArray, new_null_array, types::TimestampMicrosecondType, Array, ArrayRef, ListArray,
    RecordBatch, StructArray,
};
use arrow_schema::{DataType, Field, FieldRef, Schema, TimeUnit};
use bytes::Bytes;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::ProjectionMask;
use parquet::file::reader::ChunkReader;

use super::{Table, TableBatches, TABLES_SCHEMA_VERSION};
use crate::error::{Error, ErrorKind, Result};
use crate::store::ObjectStore;

const NS_PER_DAY: i64 = 86_400_000_000_000;

/// Rows per batch read back.
const READ_BATCH_ROWS: usize = 16 * 1024;

/// The key prefix of one table's files: `tables/v2/<table>/`.
pub fn table_prefix(table: Table) -> String {
    crate::store::table_prefix(TABLES_SCHEMA_VERSION, table.name())
}

/// Reads `tables` from `store` (every `dt=` partition of the current schema version); the
/// other tables come back empty, with their schema. Files are read in key order, so the rows
/// come in the same order on every read.
///
/// With `from_ns` or `to_ns` (ns since the Unix epoch, inclusive), partitions that cannot hold
/// samples between them are skipped without being read. `dt` is the UTC day a profile
/// *starts*, and a profile spans at most a minute, so a profile that starts the day before
/// `from` may still reach into the range: that day is kept too.
///
/// A store without any file of `profiles`, `samples`, `stacks` or `frames` among `tables` is
/// [`ErrorKind::NoTables`] (nothing was converted into it, or it is the wrong place); a store
/// without `function_rollup` or `counters` files is not, since an upload whose samples have no
/// stack writes no `function_rollup`, and one without instants or counters no `counters`.
pub fn read_tables(
    store: &dyn ObjectStore,
    tables: &[Table],
    from_ns: Option<i64>,
    to_ns: Option<i64>,
) -> Result<TableBatches> {
    collect_tables(tables, &mut |table, f| {
        for_each_batch(store, table, from_ns, to_ns, None, f)
    })
}

/// Reads a table: hands each of its batches to the function it is given.
pub(crate) type EachBatch<'e> =
    dyn FnMut(Table, &mut dyn FnMut(RecordBatch) -> Result<()>) -> Result<()> + 'e;

/// The batches `each(table, f)` hands `f` for each of `tables`, concatenated; the other
/// tables empty, with their schema.
pub(crate) fn collect_tables(tables: &[Table], each: &mut EachBatch<'_>) -> Result<TableBatches> {
    let mut read = |table: Table| -> Result<RecordBatch> {
        if !tables.contains(&table) {
            return Ok(RecordBatch::new_empty(table.schema()));
        }
        let mut batches = Vec::new();
        each(table, &mut |batch| {
            batches.push(batch);
            Ok(())
        })?;
        concat(table, &batches)
    };
    Ok(TableBatches {
        profiles: read(Table::Profiles)?,
        samples: read(Table::Samples)?,
        stacks: read(Table::Stacks)?,
        frames: read(Table::Frames)?,
        function_rollup: read(Table::FunctionRollup)?,
        counters: read(Table::Counters)?,
    })
}

/// Which columns of a table to read, as stored, and which of those text columns to read as
/// dictionaries (keys into their distinct values).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Projection<'c> {
    pub columns: &'c [&'c str],
    pub dictionary: &'c [&'c str],
    /// Whether a column that a file holds no value of (its statistics count only nulls) is
    /// handed out as nulls without being decoded. An empty list or map is then a null one,
    /// which a reader that takes both as "none" cannot tell apart.
    pub skip_null_columns: bool,
}

/// Hands `f` every batch of `table` in `store` (every `dt=` partition `from_ns`..`to_ns` can
/// reach, as [`read_tables`] reads them), file by file in key order: with `columns`, only
/// those columns as stored; else every column, conformed to the current schema. Nothing is
/// concatenated, so a large table is never held whole.
pub(crate) fn for_each_batch(
    store: &dyn ObjectStore,
    table: Table,
    from_ns: Option<i64>,
    to_ns: Option<i64>,
    columns: Option<Projection<'_>>,
    f: &mut dyn FnMut(RecordBatch) -> Result<()>,
) -> Result<()> {
    let first_day = from_ns.map(|t| t.div_euclid(NS_PER_DAY) - 1);
    let last_day = to_ns.map(|t| t.div_euclid(NS_PER_DAY));
    let prefix = table_prefix(table);
    let keys: Vec<String> = store
        .list(&prefix)?
        .into_iter()
        .filter(|k| k.ends_with(".parquet"))
        .collect();
    if keys.is_empty() && !matches!(table, Table::FunctionRollup | Table::Counters) {
        return Err(ErrorKind::NoTables { path: prefix }.into());
    }
    for key in keys {
        // Only `dt=YYYY-MM-DD/<file>` is a partition's file; anything else is not ours.
        let Some(day) = crate::store::keys::partition_day(&key[prefix.len()..]) else {
            continue;
        };
        if first_day.is_some_and(|f| day < f) || last_day.is_some_and(|l| day > l) {
            continue;
        }
        // Listed then gone: replaced between the two calls by a reconversion, which
        // writes the same rows under the same key; the next read sees it again.
        let Some(bytes) = store.get(&key)? else {
            continue;
        };
        parquet_batches(table, Bytes::from(bytes), columns, &|e| malformed(e), f)
            .map_err(|e| e.for_input(&key))?;
    }
    Ok(())
}

/// Hands `f` every batch of one Parquet file of `table`: with `columns`, only those as
/// stored, else every column conformed to the current schema. `error` makes a reader's
/// message an error.
pub(crate) fn parquet_batches<R: ChunkReader + 'static>(
    table: Table,
    file: R,
    columns: Option<Projection<'_>>,
    error: &dyn Fn(String) -> crate::Error,
    f: &mut dyn FnMut(RecordBatch) -> Result<()>,
) -> Result<()> {
    let mut metadata = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new())
        .map_err(|e| error(e.to_string()))?;
    if let Some(Projection { dictionary, .. }) = columns.filter(|p| !p.dictionary.is_empty()) {
        // Text columns of few distinct values (a file's profile ids, thread names) come as
        // keys into their distinct values, as Parquet stores them, not a copy per row.
        let fields: Vec<FieldRef> = metadata
            .schema()
            .fields()
            .iter()
            .map(|field| match field.data_type() {
                DataType::Utf8 if dictionary.contains(&field.name().as_str()) => {
                    Arc::new(Field::new(
                        field.name(),
                        DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
                        field.is_nullable(),
                    ))
                }
                _ => field.clone(),
            })
            .collect();
        let schema = Arc::new(Schema::new_with_metadata(
            fields,
            metadata.schema().metadata().clone(),
        ));
        metadata = ArrowReaderMetadata::try_new(
            metadata.metadata().clone(),
            ArrowReaderOptions::new().with_schema(schema),
        )
        .map_err(|e| error(e.to_string()))?;
    }
    let mut builder = ParquetRecordBatchReaderBuilder::new_with_metadata(file, metadata)
        .with_batch_size(READ_BATCH_ROWS);
    // With columns left undecoded, the schema every batch is handed out in.
    let mut with_nulls = None;
    if let Some(projection) = columns {
        let mut read: Vec<&str> = projection.columns.to_vec();
        if projection.skip_null_columns {
            // A column that may not be null is read, even when its statistics count only
            // nulls (an empty list's slot counts as one).
            let nullable = |c: &str| {
                builder
                    .schema()
                    .field_with_name(c)
                    .is_ok_and(|f| f.is_nullable())
            };
            read.retain(|c| !(nullable(c) && only_nulls(builder.metadata(), c)));
            if read.len() < projection.columns.len() {
                let schema = builder.schema();
                let kept: Vec<usize> = (0..schema.fields().len())
                    .filter(|&i| {
                        projection
                            .columns
                            .contains(&schema.field(i).name().as_str())
                    })
                    .collect();
                with_nulls = Some(Arc::new(
                    schema.project(&kept).map_err(|e| error(e.to_string()))?,
                ));
            }
        }
        let mask = ProjectionMask::columns(builder.parquet_schema(), read.iter().copied());
        builder = builder.with_projection(mask);
    }
    for batch in builder.build().map_err(|e| error(e.to_string()))? {
        let batch = batch.map_err(|e| error(e.to_string()))?;
        f(match (columns, &with_nulls) {
            (Some(_), None) => batch,
            (Some(_), Some(schema)) => {
                let arrays = schema
                    .fields()
                    .iter()
                    .map(|field| match batch.column_by_name(field.name()) {
                        Some(read) => read.clone(),
                        None => new_null_array(field.data_type(), batch.num_rows()),
                    })
                    .collect();
                RecordBatch::try_new(schema.clone(), arrays).map_err(|e| error(e.to_string()))?
            }
            (None, _) => conform(table, &batch)?,
        })?;
    }
    Ok(())
}

/// Whether every value the file holds of top-level column `name`, in every row group and
/// every leaf, is null, as the statistics say; `false` when they say nothing.
fn only_nulls(metadata: &parquet::file::metadata::ParquetMetaData, name: &str) -> bool {
    let schema = metadata.file_metadata().schema_descr();
    let leaves: Vec<usize> = (0..schema.num_columns())
        .filter(|&i| schema.column(i).path().parts().first().map(String::as_str) == Some(name))
        .collect();
    !leaves.is_empty()
        && metadata.row_groups().iter().all(|group| {
            leaves.iter().all(|&i| {
                let chunk = group.column(i);
                chunk
                    .statistics()
                    .and_then(|s| s.null_count_opt())
                    .is_some_and(|nulls| i64::try_from(nulls).ok() == Some(chunk.num_values()))
            })
        })
}

/// Reads every table from stored objects, `(key, Parquet bytes)` as a conversion produces
/// them (`tables/v2/<table>/dt=…/<source_id>.parquet`); other keys are ignored.
pub(crate) fn read_table_objects<'a>(
    objects: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> Result<TableBatches> {
    let mut found: [Vec<RecordBatch>; 6] = Default::default();
    for (key, bytes) in objects {
        let Some(i) = Table::ALL
            .iter()
            .position(|&t| key.starts_with(&table_prefix(t)))
        else {
            continue;
        };
        let table = Table::ALL[i];
        let bytes = Bytes::copy_from_slice(bytes);
        found[i].extend(read_parquet(table, bytes).map_err(|e| e.for_input(key))?);
    }
    let [profiles, samples, stacks, frames, function_rollup, counters] = found;
    Ok(TableBatches {
        profiles: concat(Table::Profiles, &profiles)?,
        samples: concat(Table::Samples, &samples)?,
        stacks: concat(Table::Stacks, &stacks)?,
        frames: concat(Table::Frames, &frames)?,
        function_rollup: concat(Table::FunctionRollup, &function_rollup)?,
        counters: concat(Table::Counters, &counters)?,
    })
}

fn malformed(what: String) -> Error {
    ErrorKind::Malformed {
        format: "parquet",
        offset: 0,
        what,
    }
    .into()
}

/// Every record batch of one stored Parquet file of `table`, conformed to its schema.
pub(crate) fn read_object(table: Table, bytes: &[u8]) -> Result<Vec<RecordBatch>> {
    read_parquet(table, Bytes::copy_from_slice(bytes))
}

/// Every record batch of one Parquet file, conformed to `table`'s schema.
fn read_parquet(table: Table, bytes: Bytes) -> Result<Vec<RecordBatch>> {
    let mut batches = Vec::new();
    parquet_batches(table, bytes, None, &|e| malformed(e), &mut |batch| {
        batches.push(batch);
        Ok(())
    })?;
    Ok(batches)
}

/// `batches` of `table`, as one.
pub(crate) fn concat(table: Table, batches: &[RecordBatch]) -> Result<RecordBatch> {
    arrow_select::concat::concat_batches(&table.schema(), batches)
        .map_err(|e| malformed(format!("{}: {e}", table.name())))
}

/// Puts a batch read from a file into the current schema of its table, by column name, so
/// files of different writers concatenate: columns (and fields of struct columns, such as
/// `frames.inlined_into`'s) are only ever added within a version, so a column or field an
/// older file lacks is null (it must be nullable), and columns a newer writer added are
/// dropped. Timestamps keep their values whatever time zone name the file used (files written
/// without the Arrow schema say `+00:00`).
pub(crate) fn conform(table: Table, batch: &RecordBatch) -> Result<RecordBatch> {
    let schema = table.schema();
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    for field in schema.fields() {
        let path = format!("{}.{}", table.name(), field.name());
        let column = match batch.column_by_name(field.name()) {
            Some(c) => conform_array(&path, c, field.data_type())?,
            None if field.is_nullable() => new_null_array(field.data_type(), batch.num_rows()),
            None => {
                return Err(malformed(format!(
                    "{} has no column {}",
                    table.name(),
                    field.name()
                )))
            }
        };
        columns.push(column);
    }
    RecordBatch::try_new(schema, columns).map_err(|e| malformed(format!("{}: {e}", table.name())))
}

/// One column (or nested field, at `path`) in the current type `expected`.
fn conform_array(path: &str, c: &ArrayRef, expected: &DataType) -> Result<ArrayRef> {
    if c.data_type() == expected {
        return Ok(c.clone());
    }
    let conformed: ArrayRef = match (c.data_type(), expected) {
        (
            DataType::Timestamp(TimeUnit::Microsecond, _),
            DataType::Timestamp(TimeUnit::Microsecond, Some(tz)),
        ) => {
            let values = c.as_primitive::<TimestampMicrosecondType>().clone();
            Arc::new(values.with_timezone(tz.clone()))
        }
        (DataType::List(_), DataType::List(item)) => {
            let list = c.as_list::<i32>();
            let values = conform_array(path, list.values(), item.data_type())?;
            let list = ListArray::try_new(
                item.clone(),
                list.offsets().clone(),
                values,
                list.nulls().cloned(),
            )
            .map_err(|e| malformed(format!("{path}: {e}")))?;
            Arc::new(list)
        }
        (DataType::Struct(_), DataType::Struct(fields)) => {
            let found = c.as_struct();
            let mut columns = Vec::with_capacity(fields.len());
            for field in fields {
                let inner = format!("{path}.{}", field.name());
                columns.push(match found.column_by_name(field.name()) {
                    Some(f) => conform_array(&inner, f, field.data_type())?,
                    None if field.is_nullable() => new_null_array(field.data_type(), found.len()),
                    None => return Err(malformed(format!("{path} has no field {}", field.name()))),
                });
            }
            let found = StructArray::try_new(fields.clone(), columns, found.nulls().cloned())
                .map_err(|e| malformed(format!("{path}: {e}")))?;
            Arc::new(found)
        }
        (found, expected) => {
            return Err(malformed(format!("{path} is {found}, expected {expected}")))
        }
    };
    Ok(conformed)
}

#[cfg(test)]
mod tests {
    use arrow_array::{Int32Array, StringArray, TimestampMicrosecondArray};
    use arrow_schema::{Field, Schema};
    use parquet::arrow::ArrowWriter;

    use super::*;
    use crate::store::{LocalDirStore, TABLES_PREFIX};

    const FLAME: [Table; 4] = [
        Table::Profiles,
        Table::Samples,
        Table::Stacks,
        Table::Frames,
    ];

    fn stacks_batch(profile: &str, ids: &[i32]) -> RecordBatch {
        let n = ids.len();
        RecordBatch::try_new(
            Table::Stacks.schema(),
            vec![
                Arc::new(StringArray::from(vec!["src"; n])),
                Arc::new(StringArray::from(vec![profile; n])),
                Arc::new(Int32Array::from(ids.to_vec())),
                Arc::new(Int32Array::from(vec![None; n])),
                Arc::new(Int32Array::from(ids.to_vec())),
                Arc::new(Int32Array::from(vec![0; n])),
            ],
        )
        .unwrap()
    }

    fn parquet(batch: &RecordBatch) -> Vec<u8> {
        let mut bytes = Vec::new();
        let mut w = ArrowWriter::try_new(&mut bytes, batch.schema(), None).unwrap();
        w.write(batch).unwrap();
        w.close().unwrap();
        bytes
    }

    fn key(table: Table, dt: &str, file: &str) -> String {
        format!("{}dt={dt}/{file}", table_prefix(table))
    }

    /// A store with an empty file per table and stack rows on two days, plus files that are
    /// not partitions.
    fn bucket() -> (tempfile::TempDir, LocalDirStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalDirStore::new(dir.path());
        for table in Table::ALL {
            let empty = RecordBatch::new_empty(table.schema());
            store
                .put(&key(table, "2026-11-21", "empty.parquet"), &parquet(&empty))
                .unwrap();
        }
        let put = |k: String, b: &RecordBatch| store.put(&k, &parquet(b)).unwrap();
        put(
            key(Table::Stacks, "2026-11-20", "a.parquet"),
            &stacks_batch("a", &[0, 1]),
        );
        put(
            key(Table::Stacks, "2026-11-22", "b.parquet"),
            &stacks_batch("b", &[0, 1, 2]),
        );
        // Not partitions: skipped, not read (they are not Parquet files of this table).
        store
            .put(
                &format!("{}README.parquet", table_prefix(Table::Stacks)),
                b"x",
            )
            .unwrap();
        store
            .put(&key(Table::Stacks, "2026-11-22", "notes.txt"), b"x")
            .unwrap();
        store
            .put(
                &format!("{TABLES_PREFIX}v1/stacks/dt=2026-11-22/old.parquet"),
                b"x",
            )
            .unwrap();
        (dir, store)
    }

    #[test]
    fn reads_every_partition_in_key_order() {
        let (_dir, store) = bucket();
        let t = read_tables(&store, &FLAME, None, None).unwrap();
        assert_eq!(t.stacks.num_rows(), 5);
        assert_eq!(t.profiles.num_rows(), 0);
        assert_eq!(t.stacks.schema(), Table::Stacks.schema());
        let ids = t
            .stacks
            .column_by_name("profile_id")
            .unwrap()
            .as_string::<i32>();
        assert_eq!(ids.value(0), "a");
        assert_eq!(ids.value(4), "b");
        // Tables not asked for are empty, with their schema.
        assert_eq!(t.function_rollup.num_rows(), 0);
        assert_eq!(t.function_rollup.schema(), Table::FunctionRollup.schema());
    }

    #[test]
    fn skips_partitions_outside_the_time_range() {
        let (_dir, store) = bucket();
        let day = |d: i64| crate::calendar::days_from_civil(2026, 11, d) * NS_PER_DAY;
        // From 2026-11-22 12:00: the 21st may still reach in, the 20th cannot.
        let from = Some(day(22) + NS_PER_DAY / 2);
        let t = read_tables(&store, &FLAME, from, None).unwrap();
        assert_eq!(t.stacks.num_rows(), 3);
        // Up to the 21st: the 22nd starts later.
        let t = read_tables(&store, &FLAME, None, Some(day(21) + 5)).unwrap();
        assert_eq!(t.stacks.num_rows(), 2);
    }

    #[test]
    fn a_store_without_tables_names_the_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalDirStore::new(dir.path());
        let err = read_tables(&store, &FLAME, None, None).unwrap_err();
        match err.kind() {
            ErrorKind::NoTables { path } => assert_eq!(path, "tables/v2/profiles/"),
            other => panic!("{other:?}"),
        }
        // Version 1 files are not version 2 tables.
        store
            .put("tables/v1/profiles/dt=2026-11-22/x.parquet", b"x")
            .unwrap();
        assert!(read_tables(&store, &FLAME, None, None).is_err());
    }

    #[test]
    fn a_broken_file_names_its_key() {
        let (_dir, store) = bucket();
        let bad = key(Table::Frames, "2026-11-22", "x.parquet");
        store.put(&bad, b"nope").unwrap();
        let err = read_tables(&store, &FLAME, None, None).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Malformed { .. }), "{err}");
        assert_eq!(err.input(), Some(bad.as_str()));
        // A table not asked for is not read.
        assert!(read_tables(&store, &[Table::Stacks], None, None).is_ok());
    }

    #[test]
    fn reads_objects_by_key() {
        let bytes = parquet(&stacks_batch("p", &[0, 1, 2]));
        let stacks = key(Table::Stacks, "2026-11-22", "x.parquet");
        let objects = [
            (stacks.as_str(), bytes.as_slice()),
            ("tables/v1/stacks/dt=2026-11-22/x.parquet", bytes.as_slice()),
            ("converted/x/manifest.json", b"{}".as_slice()),
        ];
        let t = read_table_objects(objects).unwrap();
        assert_eq!(t.stacks.num_rows(), 3);
        assert_eq!(t.samples.num_rows(), 0);

        let frames = key(Table::Frames, "2026-11-22", "x.parquet");
        let err = read_table_objects([(frames.as_str(), b"nope".as_slice())]).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Malformed { .. }), "{err}");
        assert_eq!(err.input(), Some(frames.as_str()));
    }

    #[test]
    fn conform_fills_added_columns_and_rejects_missing_required_ones() {
        // An "older" stacks file without the nullable parent_id.
        let old = RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("source_id", DataType::Utf8, false),
                Field::new("profile_id", DataType::Utf8, false),
                Field::new("stack_id", DataType::Int32, false),
                Field::new("frame_id", DataType::Int32, false),
                Field::new("depth", DataType::Int32, false),
            ])),
            vec![
                Arc::new(StringArray::from(vec!["s"])),
                Arc::new(StringArray::from(vec!["p"])),
                Arc::new(Int32Array::from(vec![0])),
                Arc::new(Int32Array::from(vec![7])),
                Arc::new(Int32Array::from(vec![0])),
            ],
        )
        .unwrap();
        let c = conform(Table::Stacks, &old).unwrap();
        assert_eq!(c.schema(), Table::Stacks.schema());
        assert_eq!(c.column_by_name("parent_id").unwrap().null_count(), 1);
        assert_eq!(
            c.column_by_name("frame_id")
                .unwrap()
                .as_primitive::<arrow_array::types::Int32Type>()
                .value(0),
            7
        );

        let without_depth = old.project(&[0, 1, 2, 3]).unwrap();
        let err = conform(Table::Stacks, &without_depth).unwrap_err();
        assert!(
            err.to_string().contains("stacks has no column depth"),
            "{err}"
        );

        // Version 1's unsigned ids are not version 2's.
        let unsigned = RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("source_id", DataType::Utf8, false),
                Field::new("profile_id", DataType::Utf8, false),
                Field::new("stack_id", DataType::UInt32, false),
            ])),
            vec![
                Arc::new(StringArray::from(vec!["s"])),
                Arc::new(StringArray::from(vec!["p"])),
                Arc::new(arrow_array::UInt32Array::from(vec![0])),
            ],
        )
        .unwrap();
        let err = conform(Table::Stacks, &unsigned).unwrap_err();
        assert!(
            err.to_string().contains("stacks.stack_id is UInt32"),
            "{err}"
        );
    }

    #[test]
    fn a_column_of_only_nulls_comes_as_nulls_without_being_read() {
        let read = |bytes: &[u8], skip: bool| {
            let projection = Projection {
                columns: &["profile_id", "parent_id", "stack_id"],
                dictionary: &[],
                skip_null_columns: skip,
            };
            let mut batches = Vec::new();
            parquet_batches(
                Table::Stacks,
                Bytes::from(bytes.to_vec()),
                Some(projection),
                &|e| malformed(e),
                &mut |b| {
                    batches.push(b);
                    Ok(())
                },
            )
            .unwrap();
            batches
        };
        let metadata = |bytes: &[u8]| {
            ArrowReaderMetadata::load(&Bytes::from(bytes.to_vec()), ArrowReaderOptions::new())
                .unwrap()
                .metadata()
                .clone()
        };
        // `parent_id` is null in every row of one file, set in one row of the other.
        let nulls = parquet(&stacks_batch("a", &[0, 1, 2]));
        let mut one_set = stacks_batch("b", &[0, 1]);
        let mut columns = one_set.columns().to_vec();
        columns[3] = Arc::new(Int32Array::from(vec![None, Some(0)]));
        one_set = RecordBatch::try_new(one_set.schema(), columns).unwrap();
        let one_set = parquet(&one_set);
        assert!(only_nulls(&metadata(&nulls), "parent_id"));
        assert!(!only_nulls(&metadata(&nulls), "stack_id"));
        assert!(!only_nulls(&metadata(&one_set), "parent_id"));
        assert!(!only_nulls(&metadata(&nulls), "no_such_column"));
        for bytes in [&nulls, &one_set] {
            let (skipped, decoded) = (read(bytes, true), read(bytes, false));
            assert_eq!(skipped, decoded);
            assert_eq!(skipped[0].num_columns(), 3);
        }
        // A column that may not be null is read whatever its statistics say: a frame
        // without inlined callers holds an empty list, which they count as a null.
        let schema = Table::Frames.schema();
        let frame: Vec<ArrayRef> = schema
            .fields()
            .iter()
            .map(|f| match f.data_type() {
                _ if f.is_nullable() => new_null_array(f.data_type(), 1),
                DataType::Utf8 => Arc::new(StringArray::from(vec!["x"])) as ArrayRef,
                DataType::Int32 => Arc::new(Int32Array::from(vec![0])),
                DataType::Boolean => Arc::new(arrow_array::BooleanArray::from(vec![false])),
                DataType::List(element) => Arc::new(ListArray::new(
                    element.clone(),
                    {
                        let mut offsets = arrow_array::builder::OffsetBufferBuilder::new(1);
                        offsets.push_length(0);
                        offsets.finish()
                    },
                    arrow_array::new_empty_array(element.data_type()),
                    None,
                )),
                other => panic!("no value for {other}"),
            })
            .collect();
        let frames = parquet(&RecordBatch::try_new(schema, frame).unwrap());
        assert!(only_nulls(&metadata(&frames), "inlined_into"));
        let mut batches = Vec::new();
        parquet_batches(
            Table::Frames,
            Bytes::from(frames),
            Some(Projection {
                columns: &["frame_id", "function", "inlined_into"],
                dictionary: &[],
                skip_null_columns: true,
            }),
            &|e| malformed(e),
            &mut |b| {
                batches.push(b);
                Ok(())
            },
        )
        .unwrap();
        let inlined = batches[0].column_by_name("inlined_into").unwrap();
        assert_eq!((inlined.len(), inlined.null_count()), (1, 0));
        assert_eq!(
            batches[0].column_by_name("function").unwrap().null_count(),
            1
        );

        // Without statistics nothing is known, and the column is read.
        let mut plain = Vec::new();
        let props = parquet::file::properties::WriterProperties::builder()
            .set_statistics_enabled(parquet::file::properties::EnabledStatistics::None)
            .build();
        let batch = stacks_batch("c", &[0]);
        let mut w = ArrowWriter::try_new(&mut plain, batch.schema(), Some(props)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        assert!(!only_nulls(&metadata(&plain), "parent_id"));
    }

    #[test]
    fn conform_accepts_any_utc_spelling() {
        // Files written without the Arrow schema read back as `+00:00`, not `UTC`.
        let schema = Table::Samples.schema();
        let utc = schema
            .field_with_name("timestamp")
            .unwrap()
            .data_type()
            .clone();
        let offset = DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into()));
        let fields: Vec<Field> = schema
            .fields()
            .iter()
            .map(|f| match f.name().as_str() {
                "timestamp" => f.as_ref().clone().with_data_type(offset.clone()),
                _ => f.as_ref().clone(),
            })
            .collect();
        let columns: Vec<ArrayRef> = fields
            .iter()
            .map(|f| match f.name().as_str() {
                "timestamp" => {
                    Arc::new(TimestampMicrosecondArray::from(vec![5]).with_timezone("+00:00"))
                        as ArrayRef
                }
                "source_id" | "profile_id" | "sample_type" | "sample_unit" => {
                    Arc::new(StringArray::from(vec!["p"]))
                }
                "value" => Arc::new(arrow_array::Int64Array::from(vec![1])),
                _ => new_null_array(f.data_type(), 1),
            })
            .collect();
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap();
        let c = conform(Table::Samples, &batch).unwrap();
        let ts = c.column_by_name("timestamp").unwrap();
        assert_eq!(ts.data_type(), &utc);
        assert_eq!(ts.as_primitive::<TimestampMicrosecondType>().value(0), 5);
    }
}
