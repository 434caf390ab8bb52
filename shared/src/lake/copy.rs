//! Landing files copied into lake data files row group by row group, without decoding them.
//!
//! A landing file is already encoded as the lake wants its rows (same columns, encodings and
//! compression), so publishing appends its row groups to the day's open data file byte for
//! byte: nothing is decompressed, decoded or encoded again. (Decoding costs more than it
//! seems: the Parquet reader makes a ZSTD context per column chunk, and each one asks the CPU
//! what it supports, an instruction a virtual machine traps.) A landing file of another
//! writer, whose columns differ, is decoded instead (`publish.rs`).
//!
//! The copies keep each upload's row group, so a day's file holds many small row groups until
//! compaction rewrites it into large ones; its add action is tagged [`PER_UPLOAD_TAG`] so that
//! compaction does, whatever the file's size. Each row group holds one upload, so its
//! `source_id` statistics (minimum equals maximum) say exactly which upload it holds.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::sync::Arc;

use arrow_schema::Schema;
use bytes::Bytes;
use deltalake::kernel::Add;
use deltalake::{ObjectStore, Path};
use object_store::buffered::BufWriter;
use parquet::arrow::parquet_to_arrow_schema;
use parquet::column::writer::ColumnCloseResult;
use parquet::file::metadata::{KeyValue, ParquetMetaData, ParquetMetaDataReader};
use parquet::file::writer::SerializedFileWriter;
use tokio::io::AsyncWriteExt;
use tokio::runtime::Handle;

use super::schema::{lake_error, PARTITION_COLUMN};
use super::{now_ms, Lake};
use crate::error::Result;
use crate::tables::Table;

/// The tag of data files whose row groups are the landing files' (see the module's doc).
pub(super) const PER_UPLOAD_TAG: &str = "proflake.row_groups";

/// The tag's value.
const PER_UPLOAD: &str = "per_upload";

/// Row groups a copied file holds at most: the writer keeps every row group's metadata until
/// the footer: a batch of 10,000 uploads in one file peaked at 400 MB, and at 1,024 row groups
/// a file at 183 MB, at 256 at 108 MB. Compaction merges the files anyway.
const MAX_ROW_GROUPS: usize = 256;

/// One table's open data files, one per day, written by copying row groups.
pub(super) struct RowGroupCopier {
    table: Table,
    store: Arc<dyn ObjectStore>,
    runtime: Handle,
    target_bytes: u64,
    open: BTreeMap<String, OpenFile>,
    adds: Vec<Add>,
    rows: u64,
}

struct OpenFile {
    path: String,
    writer: SerializedFileWriter<Upload>,
    rows: u64,
    row_groups: usize,
}

impl RowGroupCopier {
    pub fn new(lake: &Lake, table: Table, store: Arc<dyn ObjectStore>) -> Self {
        RowGroupCopier {
            table,
            store,
            runtime: lake.runtime.clone(),
            target_bytes: lake.settings.target_file_bytes,
            open: BTreeMap::new(),
            adds: Vec::new(),
            rows: 0,
        }
    }

    /// Appends the row groups of `bytes`, a landing file of partition `dt`, to that day's
    /// open file; `false` when its columns are not the table's current ones (nothing written).
    pub fn copy(&mut self, key: &str, dt: &str, bytes: &Bytes) -> Result<bool> {
        let err =
            |e: parquet::errors::ParquetError| lake_error(self.table.name(), format!("{key}: {e}"));
        let metadata = ParquetMetaDataReader::new()
            .parse_and_finish(bytes)
            .map_err(err)?;
        if !has_current_columns(self.table, &metadata) {
            return Ok(false);
        }
        if !self.open.contains_key(dt) {
            let file = self.open_file(dt, &metadata)?;
            self.open.insert(dt.to_owned(), file);
        }
        let file = self.open.get_mut(dt).expect("opened above");
        for group in metadata.row_groups() {
            let mut out = file.writer.next_row_group().map_err(err)?;
            for column in group.columns() {
                let close = ColumnCloseResult {
                    bytes_written: column.compressed_size() as u64,
                    rows_written: group.num_rows() as u64,
                    metadata: column.clone(),
                    bloom_filter: None,
                    column_index: None,
                    offset_index: None,
                };
                out.append_column(bytes, close).map_err(err)?;
            }
            out.close().map_err(err)?;
            let rows = u64::try_from(group.num_rows()).unwrap_or(0);
            file.rows += rows;
            file.row_groups += 1;
            self.rows += rows;
        }
        if file.writer.bytes_written() as u64 >= self.target_bytes
            || file.row_groups >= MAX_ROW_GROUPS
        {
            let file = self.open.remove(dt).expect("open");
            self.close(dt, file)?;
        }
        Ok(true)
    }

    /// Rows copied.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Closes every open file: the add actions of all files written.
    pub fn finish(mut self) -> Result<Vec<Add>> {
        for (dt, file) in std::mem::take(&mut self.open) {
            self.close(&dt, file)?;
        }
        Ok(self.adds)
    }

    fn open_file(&self, dt: &str, like: &ParquetMetaData) -> Result<OpenFile> {
        let err = |e: parquet::errors::ParquetError| lake_error(self.table.name(), e.to_string());
        let path = format!(
            "{PARTITION_COLUMN}={dt}/part-{}-c000.zstd.parquet",
            uuid::Uuid::new_v4()
        );
        let location = Path::from(path.as_str());
        let upload = Upload {
            inner: Some(BufWriter::new(self.store.clone(), location)),
            runtime: self.runtime.clone(),
            written: 0,
        };
        // The landing file's own metadata (the Arrow schema among it) goes along, so the file
        // reads back with the same types.
        let kv: Vec<KeyValue> = like
            .file_metadata()
            .key_value_metadata()
            .cloned()
            .unwrap_or_default();
        let properties = crate::tables::encoding(self.table)?
            .set_key_value_metadata(Some(kv))
            .build();
        let schema = like.file_metadata().schema_descr().root_schema_ptr();
        let writer =
            SerializedFileWriter::new(upload, schema, Arc::new(properties)).map_err(err)?;
        Ok(OpenFile {
            path,
            writer,
            rows: 0,
            row_groups: 0,
        })
    }

    fn close(&mut self, dt: &str, file: OpenFile) -> Result<()> {
        let err = |e: parquet::errors::ParquetError| lake_error(self.table.name(), e.to_string());
        let mut upload = file.writer.into_inner().map_err(err)?;
        let size = upload
            .finish()
            .map_err(|e| lake_error(self.table.name(), e.to_string()))?;
        self.adds.push(Add {
            path: file.path,
            partition_values: HashMap::from([(PARTITION_COLUMN.to_owned(), Some(dt.to_owned()))]),
            size: i64::try_from(size).unwrap_or(i64::MAX),
            modification_time: now_ms(),
            data_change: true,
            stats: Some(format!(r#"{{"numRecords":{}}}"#, file.rows)),
            tags: Some(HashMap::from([(
                PER_UPLOAD_TAG.to_owned(),
                Some(PER_UPLOAD.to_owned()),
            )])),
            ..Add::default()
        });
        Ok(())
    }
}

/// Whether a file's columns are exactly `table`'s current ones (names, types, nullability).
fn has_current_columns(table: Table, metadata: &ParquetMetaData) -> bool {
    let file = metadata.file_metadata();
    let Ok(schema) = parquet_to_arrow_schema(file.schema_descr(), file.key_value_metadata()) else {
        return false;
    };
    let current = table.schema();
    let strip = |s: &Schema| -> Vec<(String, arrow_schema::DataType, bool)> {
        s.fields()
            .iter()
            .map(|f| (f.name().clone(), f.data_type().clone(), f.is_nullable()))
            .collect()
    };
    strip(&schema) == strip(&current)
}

/// Whether add actions are tagged as holding the landing files' row groups.
pub(super) fn is_per_upload(tags: Option<&HashMap<String, Option<String>>>) -> bool {
    tags.and_then(|t| t.get(PER_UPLOAD_TAG))
        .is_some_and(|v| v.as_deref() == Some(PER_UPLOAD))
}

/// A data file streamed into the lake's object store (a multipart upload past a few MB), for
/// Parquet's synchronous writer.
struct Upload {
    inner: Option<BufWriter>,
    runtime: Handle,
    written: u64,
}

impl Upload {
    /// Completes the upload: the file's size.
    fn finish(&mut self) -> std::io::Result<u64> {
        let mut inner = self
            .inner
            .take()
            .ok_or_else(|| std::io::Error::other("finished"))?;
        self.runtime.block_on(inner.shutdown())?;
        Ok(self.written)
    }
}

impl Write for Upload {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let inner = self
            .inner
            .as_mut()
            .ok_or_else(|| std::io::Error::other("finished"))?;
        self.runtime.block_on(inner.write_all(buf))?;
        self.written += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
