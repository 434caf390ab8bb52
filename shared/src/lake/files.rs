//! Reading Parquet files: a landing file's rows, and a lake data file a row group at a time
//! through ranged reads of delta-rs's object store (so a 512 MB file is never held whole).

use std::collections::BTreeSet;
use std::io::Read;
use std::sync::{Arc, Mutex};

use arrow_array::{Array, BooleanArray, RecordBatch, StringArray};
use bytes::{Buf, Bytes};
use deltalake::{ObjectStore, Path};
use object_store::ObjectStoreExt;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;
use parquet::errors::ParquetError;
use parquet::file::properties::ReaderProperties;
use parquet::file::reader::{ChunkReader, FileReader, Length};
use parquet::file::serialized_reader::{ReadOptionsBuilder, SerializedFileReader};
use parquet::file::statistics::Statistics;
use rustc_hash::FxHashSet;
use tokio::runtime::Handle;

use super::schema::{lake_error, with_partition};
use crate::error::Result;
use crate::tables::Table;

/// Rows per batch read back.
const READ_BATCH_ROWS: usize = 16 * 1024;

/// Bytes the first ranged read of a stream fetches; each next one fetches twice as many, up
/// to [`MAX_READ_BYTES`]. Parquet's reader opens a stream per column chunk and reads only that
/// chunk, so a small first read keeps a file of many small chunks from being read many times
/// over, and the doubling keeps a large chunk to a few requests.
const FIRST_READ_BYTES: u64 = 64 << 10;
/// The most one ranged read of a stream fetches.
const MAX_READ_BYTES: u64 = 8 << 20;

/// The rows of a landing file of `table`, in the current schema.
pub(super) fn landing_batches(table: Table, key: &str, bytes: Bytes) -> Result<Vec<RecordBatch>> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
        .and_then(|b| b.with_batch_size(READ_BATCH_ROWS).build())
        .map_err(|e| lake_error(table.name(), format!("{key}: {e}")))?;
    reader
        .map(|batch| {
            let batch = batch.map_err(|e| lake_error(table.name(), format!("{key}: {e}")))?;
            crate::tables::conform(table, &batch)
        })
        .collect()
}

/// Bytes fetched at once from a data file: Parquet's reader asks for each column chunk (a
/// file of copied landing row groups has thousands of small ones), and one request per chunk
/// would cost more than the bytes; the reader goes forward through the file, so one window
/// serves many chunks, and memory holds one window (or one larger chunk) at a time.
const WINDOW_BYTES: u64 = 8 << 20;

/// A data file of a lake table, read by ranges.
#[derive(Clone)]
pub(super) struct LakeFile {
    pub store: Arc<dyn ObjectStore>,
    pub path: Path,
    pub size: u64,
    pub runtime: Handle,
    /// The last window fetched: its offset and bytes.
    pub window: Arc<Mutex<Option<(u64, Bytes)>>>,
}

impl LakeFile {
    /// The bytes `start..end`, from the window when it holds them, else from a new window
    /// starting at `start`.
    fn fetch(&self, start: u64, end: u64) -> parquet::errors::Result<Bytes> {
        let mut window = self.window.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((at, bytes)) = window.as_ref() {
            if *at <= start && end <= at + bytes.len() as u64 {
                return Ok(bytes.slice((start - at) as usize..(end - at) as usize));
            }
        }
        let until = end.max(start.saturating_add(WINDOW_BYTES)).min(self.size);
        let bytes = self
            .runtime
            .block_on(ObjectStoreExt::get_range(
                self.store.as_ref(),
                &self.path,
                start..until,
            ))
            .map_err(|e| ParquetError::External(Box::new(e)))?;
        let wanted = bytes.slice(0..(end - start) as usize);
        *window = Some((start, bytes));
        Ok(wanted)
    }

    /// Whether the file may hold rows of any of `ids`: a row group's `source_id` bloom filter
    /// answers, and a row group without one is read.
    pub fn may_hold(&self, ids: &FxHashSet<&str>) -> Result<bool> {
        let options = ReadOptionsBuilder::new()
            .with_reader_properties(
                ReaderProperties::builder()
                    .set_read_bloom_filter(true)
                    .build(),
            )
            .build();
        let reader = SerializedFileReader::new_with_options(self.clone(), options)
            .map_err(|e| self.error(e))?;
        let Some(column) = reader
            .metadata()
            .file_metadata()
            .schema_descr()
            .columns()
            .iter()
            .position(|c| c.path().string() == "source_id")
        else {
            return Ok(false);
        };
        for group in 0..reader.num_row_groups() {
            // A row group's range of source ids first: a copied landing row group holds one.
            let stats = reader
                .metadata()
                .row_group(group)
                .column(column)
                .statistics();
            if let Some(Statistics::ByteArray(s)) = stats {
                if let (Some(min), Some(max)) = (s.min_opt(), s.max_opt()) {
                    let (min, max) = (min.data(), max.data());
                    let inside = |id: &&str| min <= id.as_bytes() && id.as_bytes() <= max;
                    if !ids.iter().any(inside) {
                        continue;
                    }
                }
            }
            let row_group = reader.get_row_group(group).map_err(|e| self.error(e))?;
            match row_group.get_column_bloom_filter(column) {
                Some(filter) => {
                    if ids.iter().any(|id| filter.check(*id)) {
                        return Ok(true);
                    }
                }
                None => return Ok(true),
            }
        }
        Ok(false)
    }

    /// Which of `ids` the file's rows belong to (reads only the `source_id` column).
    pub fn ids_held(&self, ids: &FxHashSet<&str>) -> Result<BTreeSet<String>> {
        let builder =
            ParquetRecordBatchReaderBuilder::try_new(self.clone()).map_err(|e| self.error(e))?;
        let mask = ProjectionMask::columns(builder.parquet_schema(), ["source_id"]);
        let reader = builder
            .with_projection(mask)
            .with_batch_size(READ_BATCH_ROWS)
            .build()
            .map_err(|e| self.error(e))?;
        let mut held = BTreeSet::new();
        for batch in reader {
            let batch = batch.map_err(|e| lake_error(self.path.as_ref(), e.to_string()))?;
            let Some(column) = batch
                .column_by_name("source_id")
                .and_then(|c| c.as_any().downcast_ref::<StringArray>())
            else {
                continue;
            };
            for id in column.iter().flatten() {
                if ids.contains(id) && !held.contains(id) {
                    held.insert(id.to_owned());
                }
            }
        }
        Ok(held)
    }

    /// The file's rows as lake rows of `table` in partition `dt` (the file itself does not
    /// hold the partition column), a batch at a time, with the rows of `drop` left out.
    pub fn batches_without<'s>(
        &'s self,
        table: Table,
        dt: &'s str,
        drop: &'s FxHashSet<&str>,
    ) -> Result<impl Iterator<Item = Result<RecordBatch>> + 's> {
        let reader = ParquetRecordBatchReaderBuilder::try_new(self.clone())
            .and_then(|b| b.with_batch_size(READ_BATCH_ROWS).build())
            .map_err(|e| self.error(e))?;
        Ok(reader.map(move |batch| {
            let batch = batch.map_err(|e| lake_error(self.path.as_ref(), e.to_string()))?;
            let batch = if drop.is_empty() {
                batch
            } else {
                let keep: BooleanArray =
                    holds(&batch, drop).iter().map(|h| h.map(|h| !h)).collect();
                arrow_select::filter::filter_record_batch(&batch, &keep)
                    .map_err(|e| lake_error(self.path.as_ref(), e.to_string()))?
            };
            with_partition(table, &crate::tables::conform(table, &batch)?, dt)
        }))
    }

    fn error(&self, e: ParquetError) -> crate::Error {
        lake_error(self.path.as_ref(), e.to_string())
    }
}

/// Which rows of `batch` have a `source_id` in `ids`.
fn holds(batch: &RecordBatch, ids: &FxHashSet<&str>) -> BooleanArray {
    let Some(column) = batch
        .column_by_name("source_id")
        .and_then(|c| c.as_any().downcast_ref::<StringArray>())
    else {
        return BooleanArray::from(vec![false; batch.num_rows()]);
    };
    (0..column.len())
        .map(|i| Some(!column.is_null(i) && ids.contains(column.value(i))))
        .collect()
}

impl Length for LakeFile {
    fn len(&self) -> u64 {
        self.size
    }
}

impl ChunkReader for LakeFile {
    type T = RangeReader;

    fn get_read(&self, start: u64) -> parquet::errors::Result<RangeReader> {
        Ok(RangeReader {
            file: self.clone(),
            position: start,
            buffer: Bytes::new(),
            next_read: FIRST_READ_BYTES,
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.fetch(start, start + length as u64)
    }
}

/// A stream over a lake file from some offset, fetched a chunk at a time.
pub(super) struct RangeReader {
    file: LakeFile,
    position: u64,
    buffer: Bytes,
    next_read: u64,
}

impl Read for RangeReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if !self.buffer.has_remaining() {
            if self.position >= self.file.size {
                return Ok(0);
            }
            let end = (self.position + self.next_read).min(self.file.size);
            self.next_read = (self.next_read * 2).min(MAX_READ_BYTES);
            self.buffer = self
                .file
                .fetch(self.position, end)
                .map_err(std::io::Error::other)?;
            self.position = end;
        }
        let n = out.len().min(self.buffer.remaining());
        self.buffer.copy_to_slice(&mut out[..n]);
        Ok(n)
    }
}
