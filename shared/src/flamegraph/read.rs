//! Reading stack tables back from Parquet: from a directory that mirrors the bucket, or from
//! the objects a conversion produced in memory.

use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::{
    cast::AsArray, new_null_array, types::TimestampMicrosecondType, ArrayRef, RecordBatch,
};
use arrow_schema::{DataType, TimeUnit};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::file::reader::ChunkReader;

use crate::error::{Error, ErrorKind, Result};
use crate::store::TABLES_PREFIX;
use crate::tables::{Table, TableBatches, TABLES_SCHEMA_VERSION};

/// The tables a flame graph needs; `function_rollup` is left empty.
const NEEDED: [Table; 4] = [
    Table::Profiles,
    Table::Samples,
    Table::Stacks,
    Table::Frames,
];

const NS_PER_DAY: i64 = 86_400_000_000_000;

/// Reads the `profiles`, `samples`, `stacks` and `frames` tables under
/// `root/tables/v1/` (every `dt=*` partition). `function_rollup` is returned empty.
pub fn read_tables(root: &Path) -> Result<TableBatches> {
    read_tables_between(root, None, None)
}

/// As [`read_tables`], skipping `dt=` partitions that cannot hold samples between `from_ns`
/// and `to_ns` (ns since the Unix epoch, inclusive).
///
/// `dt` is the UTC day a profile *starts*, and a profile (one Sample v2 chunk) spans at most
/// about a minute, so a profile that starts the day before `from` may still reach into the
/// range: that day is kept too.
pub fn read_tables_between(
    root: &Path,
    from_ns: Option<i64>,
    to_ns: Option<i64>,
) -> Result<TableBatches> {
    let base = root
        .join(TABLES_PREFIX.trim_end_matches('/'))
        .join(format!("v{TABLES_SCHEMA_VERSION}"));
    let first_day = from_ns.map(|t| t.div_euclid(NS_PER_DAY) - 1);
    let last_day = to_ns.map(|t| t.div_euclid(NS_PER_DAY));
    let read = |table: Table| -> Result<RecordBatch> {
        let dir = base.join(table.name());
        if !dir.is_dir() {
            return Err(ErrorKind::NoTables {
                path: dir.display().to_string(),
            }
            .into());
        }
        let mut files = Vec::new();
        for partition in list(&dir)? {
            let Some(day) = partition_day(&partition) else {
                continue;
            };
            if first_day.is_some_and(|f| day < f) || last_day.is_some_and(|l| day > l) {
                continue;
            }
            parquet_files(&partition, &mut files)?;
        }
        files.sort();
        let mut batches = Vec::new();
        for path in &files {
            let name = path.display().to_string();
            let file = File::open(path).map_err(|e| storage_error(&name, e))?;
            batches.extend(read_parquet(table, file).map_err(|e| e.for_input(&name))?);
        }
        concat(table, &batches)
    };
    Ok(TableBatches {
        profiles: read(Table::Profiles)?,
        samples: read(Table::Samples)?,
        stacks: read(Table::Stacks)?,
        frames: read(Table::Frames)?,
        function_rollup: RecordBatch::new_empty(Table::FunctionRollup.schema()),
    })
}

/// Reads the tables from stored objects, `(key, Parquet bytes)` as a conversion produces them
/// (`tables/v1/<table>/dt=…/<source_id>.parquet`); other keys are ignored.
pub fn read_table_objects<'a>(
    objects: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> Result<TableBatches> {
    let prefix = format!("{TABLES_PREFIX}v{TABLES_SCHEMA_VERSION}/");
    let mut found: [Vec<RecordBatch>; 4] = Default::default();
    for (key, bytes) in objects {
        let Some(rest) = key.strip_prefix(&prefix) else {
            continue;
        };
        let name = rest.split('/').next().unwrap_or_default();
        let Some(i) = NEEDED.iter().position(|t| t.name() == name) else {
            continue;
        };
        let bytes = bytes::Bytes::copy_from_slice(bytes);
        found[i].extend(read_parquet(NEEDED[i], bytes).map_err(|e| e.for_input(key))?);
    }
    let [profiles, samples, stacks, frames] = found;
    Ok(TableBatches {
        profiles: concat(Table::Profiles, &profiles)?,
        samples: concat(Table::Samples, &samples)?,
        stacks: concat(Table::Stacks, &stacks)?,
        frames: concat(Table::Frames, &frames)?,
        function_rollup: RecordBatch::new_empty(Table::FunctionRollup.schema()),
    })
}

fn storage_error(key: &str, e: std::io::Error) -> Error {
    Error::new(ErrorKind::Storage { key: key.into() }).with_source(e)
}

fn malformed(what: String) -> Error {
    ErrorKind::Malformed {
        format: "parquet",
        offset: 0,
        what,
    }
    .into()
}

/// Entries of a directory, sorted so reads are deterministic.
fn list(dir: &Path) -> Result<Vec<PathBuf>> {
    let name = dir.display().to_string();
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| storage_error(&name, e))? {
        out.push(entry.map_err(|e| storage_error(&name, e))?.path());
    }
    out.sort();
    Ok(out)
}

/// Every `.parquet` file below `dir`, at any depth.
fn parquet_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for path in list(dir)? {
        if path.is_dir() {
            parquet_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "parquet") {
            out.push(path);
        }
    }
    Ok(())
}

/// Day number (days since 1970-01-01) of a `dt=YYYY-MM-DD` directory; `None` for anything
/// else, which is not a partition and is skipped.
fn partition_day(dir: &Path) -> Option<i64> {
    if !dir.is_dir() {
        return None;
    }
    let date = dir.file_name()?.to_str()?.strip_prefix("dt=")?;
    let mut parts = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (y, m, d) = (parts.next()??, parts.next()??, parts.next()??);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    Some(crate::calendar::days_from_civil(y, m, d))
}

/// Every record batch of one Parquet file, conformed to `table`'s schema.
fn read_parquet<R: ChunkReader + 'static>(table: Table, reader: R) -> Result<Vec<RecordBatch>> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(reader)
        .and_then(|b| b.build())
        .map_err(|e| malformed(e.to_string()))?;
    reader
        .map(|batch| {
            let batch = batch.map_err(|e| malformed(e.to_string()))?;
            conform(table, &batch)
        })
        .collect()
}

fn concat(table: Table, batches: &[RecordBatch]) -> Result<RecordBatch> {
    arrow_select::concat::concat_batches(&table.schema(), batches)
        .map_err(|e| malformed(format!("{}: {e}", table.name())))
}

/// Puts a batch read from a file into the current schema of its table, by column name, so
/// files of different writers concatenate: columns are only ever added within a version, so
/// a column an older file lacks is null (it must be nullable), and columns a newer writer
/// added are dropped. Timestamps keep their values whatever time zone name the file used
/// (files written without the Arrow schema say `+00:00`).
pub(super) fn conform(table: Table, batch: &RecordBatch) -> Result<RecordBatch> {
    let schema = table.schema();
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    for field in schema.fields() {
        let column = match batch.column_by_name(field.name()) {
            Some(c) if c.data_type() == field.data_type() => c.clone(),
            Some(c) => match (c.data_type(), field.data_type()) {
                (
                    DataType::Timestamp(TimeUnit::Microsecond, _),
                    DataType::Timestamp(TimeUnit::Microsecond, Some(tz)),
                ) => {
                    let values = c.as_primitive::<TimestampMicrosecondType>().clone();
                    std::sync::Arc::new(values.with_timezone(tz.clone())) as ArrayRef
                }
                (found, expected) => {
                    return Err(malformed(format!(
                        "{}.{} is {found}, expected {expected}",
                        table.name(),
                        field.name()
                    )))
                }
            },
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{StringArray, TimestampMicrosecondArray, UInt32Array};
    use arrow_schema::{Field, Schema};
    use parquet::arrow::ArrowWriter;

    use super::*;

    fn stacks_batch(profile: &str, ids: &[u32]) -> RecordBatch {
        let n = ids.len();
        RecordBatch::try_new(
            Table::Stacks.schema(),
            vec![
                Arc::new(StringArray::from(vec![profile; n])),
                Arc::new(UInt32Array::from(ids.to_vec())),
                Arc::new(UInt32Array::from(vec![None; n])),
                Arc::new(UInt32Array::from(ids.to_vec())),
                Arc::new(UInt32Array::from(vec![0; n])),
            ],
        )
        .unwrap()
    }

    fn write(path: &Path, batch: &RecordBatch) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut w =
            ArrowWriter::try_new(File::create(path).unwrap(), batch.schema(), None).unwrap();
        w.write(batch).unwrap();
        w.close().unwrap();
    }

    /// A bucket with an empty file per table and stack rows on two days.
    fn bucket() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let v1 = dir.path().join("tables/v1");
        for table in NEEDED {
            let path = v1.join(table.name()).join("dt=2026-11-21/empty.parquet");
            write(&path, &RecordBatch::new_empty(table.schema()));
        }
        write(
            &v1.join("stacks/dt=2026-11-20/a.parquet"),
            &stacks_batch("a", &[0, 1]),
        );
        write(
            &v1.join("stacks/dt=2026-11-22/b.parquet"),
            &stacks_batch("b", &[0, 1, 2]),
        );
        dir
    }

    #[test]
    fn reads_every_partition_and_concatenates() {
        let dir = bucket();
        let t = read_tables(dir.path()).unwrap();
        assert_eq!(t.stacks.num_rows(), 5);
        assert_eq!(t.profiles.num_rows(), 0);
        assert_eq!(t.stacks.schema(), Table::Stacks.schema());
        assert_eq!(t.function_rollup.schema(), Table::FunctionRollup.schema());
        let ids = t.stacks.column(0).as_string::<i32>();
        // Partitions are read in date order.
        assert_eq!(ids.value(0), "a");
        assert_eq!(ids.value(4), "b");
    }

    #[test]
    fn skips_partitions_outside_the_time_range() {
        let dir = bucket();
        let day = |d: i64| crate::calendar::days_from_civil(2026, 11, d) * NS_PER_DAY;
        // From 2026-11-22 12:00: the 21st may still reach in, the 20th cannot.
        let t = read_tables_between(dir.path(), Some(day(22) + NS_PER_DAY / 2), None).unwrap();
        assert_eq!(t.stacks.num_rows(), 3);
        // Up to the 21st: the 22nd starts later.
        let t = read_tables_between(dir.path(), None, Some(day(21) + 5)).unwrap();
        assert_eq!(t.stacks.num_rows(), 2);
    }

    #[test]
    fn missing_tables_name_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_tables(dir.path()).unwrap_err();
        match err.kind() {
            ErrorKind::NoTables { path } => assert!(path.ends_with("tables/v1/profiles"), "{path}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn reads_objects_by_key() {
        let mut bytes = Vec::new();
        let batch = stacks_batch("p", &[0, 1, 2]);
        let mut w = ArrowWriter::try_new(&mut bytes, batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let objects = [
            ("tables/v1/stacks/dt=2026-11-22/x.parquet", bytes.as_slice()),
            ("converted/x/manifest.json", b"{}".as_slice()),
        ];
        let t = read_table_objects(objects).unwrap();
        assert_eq!(t.stacks.num_rows(), 3);
        assert_eq!(t.samples.num_rows(), 0);

        let bad = [(
            "tables/v1/frames/dt=2026-11-22/x.parquet",
            b"nope".as_slice(),
        )];
        let err = read_table_objects(bad).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Malformed { .. }), "{err}");
        assert_eq!(
            err.input(),
            Some("tables/v1/frames/dt=2026-11-22/x.parquet")
        );
    }

    #[test]
    fn conform_fills_added_columns_and_rejects_missing_required_ones() {
        // An "older" stacks file without the nullable parent_id.
        let old = RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("profile_id", DataType::Utf8, false),
                Field::new("stack_id", DataType::UInt32, false),
                Field::new("frame_id", DataType::UInt32, false),
                Field::new("depth", DataType::UInt32, false),
            ])),
            vec![
                Arc::new(StringArray::from(vec!["p"])),
                Arc::new(UInt32Array::from(vec![0])),
                Arc::new(UInt32Array::from(vec![7])),
                Arc::new(UInt32Array::from(vec![0])),
            ],
        )
        .unwrap();
        let c = conform(Table::Stacks, &old).unwrap();
        assert_eq!(c.schema(), Table::Stacks.schema());
        assert_eq!(c.column_by_name("parent_id").unwrap().null_count(), 1);
        assert_eq!(
            c.column_by_name("frame_id")
                .unwrap()
                .as_primitive::<arrow_array::types::UInt32Type>()
                .value(0),
            7
        );

        let without_depth = old.project(&[0, 1, 2]).unwrap();
        let err = conform(Table::Stacks, &without_depth).unwrap_err();
        assert!(
            err.to_string().contains("stacks has no column depth"),
            "{err}"
        );
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
                "profile_id" => Arc::new(StringArray::from(vec!["p"])),
                "weight" => Arc::new(arrow_array::Int64Array::from(vec![1])),
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
