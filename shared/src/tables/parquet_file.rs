//! Encoding one table's rows as a Parquet file, with the settings `docs/tables.md` promises.

use std::io::Write;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::metadata::{KeyValue, SortingColumn};
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterPropertiesBuilder};
use parquet::schema::types::ColumnPath;

use super::columns::encoding_error;
use super::schema::{Table, TABLES_SCHEMA_VERSION};
use crate::error::{from_io, Result};

/// Most rows in one row group.
pub(super) const MAX_ROW_GROUP_ROWS: usize = 128 * 1024;

/// The ZSTD level of every column.
const ZSTD_LEVEL: i32 = 3;

/// Columns of small, mostly increasing integers, and cumulative counters: a dictionary of ids
/// is as large as the ids, while deltas pack them into a few bits each (a CPU's counter rows
/// differ by about one period).
const DELTA_COLUMNS: [&str; 6] = [
    "stack_id",
    "parent_id",
    "frame_id",
    "timestamp",
    "start_time",
    "counter",
];

/// Leaf columns a field takes in the Parquet schema (sorting columns count leaves).
fn leaves(field: &Field) -> usize {
    match field.data_type() {
        DataType::Struct(fields) => fields.iter().map(|f| leaves(f)).sum(),
        DataType::List(item) | DataType::LargeList(item) | DataType::Map(item, _) => leaves(item),
        _ => 1,
    }
}

/// The writer settings of `table`'s landing files: [`encoding`], and the sort they declare.
pub(super) fn properties(table: Table) -> Result<WriterProperties> {
    let schema = table.schema();
    let sorting = table
        .sort_columns()
        .iter()
        .map(|name| {
            let index = schema
                .index_of(name)
                .map_err(|e| encoding_error(table, e))?;
            let leaf: usize = schema.fields()[..index].iter().map(|f| leaves(f)).sum();
            Ok(SortingColumn {
                column_idx: i32::try_from(leaf).map_err(|e| encoding_error(table, e))?,
                descending: false,
                // Rows are sorted with Rust's `Option` order: `None` first.
                nulls_first: true,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(encoding(table)?.set_sorting_columns(Some(sorting)).build())
}

/// The settings every file of `table` is encoded with, in the landing tier and in the lake:
/// ZSTD, dictionaries, page statistics, delta-packed ids and times, row-group size, and the
/// key-value metadata naming the table and schema version.
pub(crate) fn encoding(table: Table) -> Result<WriterPropertiesBuilder> {
    let schema = table.schema();
    let level = ZstdLevel::try_new(ZSTD_LEVEL).map_err(|e| encoding_error(table, e))?;
    let mut builder = WriterProperties::builder()
        .set_compression(Compression::ZSTD(level))
        .set_dictionary_enabled(true)
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_max_row_group_row_count(Some(MAX_ROW_GROUP_ROWS))
        .set_key_value_metadata(Some(vec![
            KeyValue::new(
                "proflake.schema_version".to_owned(),
                TABLES_SCHEMA_VERSION.to_string(),
            ),
            KeyValue::new("proflake.table".to_owned(), table.name().to_owned()),
        ]));
    for name in DELTA_COLUMNS {
        if schema.index_of(name).is_ok() {
            let path = ColumnPath::from(name);
            builder = builder
                .set_column_dictionary_enabled(path.clone(), false)
                .set_column_encoding(path, Encoding::DELTA_BINARY_PACKED);
        }
    }
    Ok(builder)
}

/// Rows handed to the Parquet writer at once. Where the writer closes a page depends on the
/// batches it is handed (it encodes each in runs whose length depends on the batch), so it
/// is always handed this many rows (but for a file's last ones), whatever batches they came
/// in, and the same rows give the same bytes however they were batched. The samples table is
/// built this many rows at a time too, so its Arrow arrays (text columns repeat their value
/// on every row) stay small.
pub(super) const WRITE_BATCH_ROWS: usize = 4 * 1024;

/// `batches` (of one schema) as one batch.
fn concat(batches: &[&RecordBatch], table: Table) -> Result<RecordBatch> {
    arrow_select::concat::concat_batches(&batches[0].schema(), batches.iter().copied())
        .map_err(|e| encoding_error(table, e))
}

/// The Parquet bytes of `batch`, a batch of `table`. Nothing in them depends on when or
/// where they were written, so the same rows always give the same bytes.
#[cfg(test)]
pub(super) fn encode(table: Table, batch: &RecordBatch) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    let mut encoder = Encoder::new(table)?;
    encoder.write(batch, &mut bytes)?;
    encoder.finish(&mut bytes)?;
    Ok(bytes)
}

/// One Parquet file being written: rows go in batch by batch, and the bytes are passed on as
/// the writer closes each row group. The writer is handed [`WRITE_BATCH_ROWS`] rows at a time
/// whatever batches they come in (the rest wait for the next batch), so any batching of the
/// same rows gives the same bytes: a window written whole or in parts.
pub(super) struct Encoder {
    table: Table,
    writer: ArrowWriter<Vec<u8>>,
    rows: u64,
    /// Fewer than [`WRITE_BATCH_ROWS`] rows not handed to the writer yet.
    waiting: Option<RecordBatch>,
}

impl Encoder {
    pub fn new(table: Table) -> Result<Self> {
        let props = properties(table)?;
        let writer = ArrowWriter::try_new(Vec::new(), table.schema(), Some(props))
            .map_err(|e| encoding_error(table, e))?;
        Ok(Encoder {
            table,
            writer,
            rows: 0,
            waiting: None,
        })
    }

    /// Adds the rows of `batch`; what the writer has finished goes to `out`.
    pub fn write(&mut self, batch: &RecordBatch, out: &mut dyn Write) -> Result<()> {
        let table = self.table;
        let rows = batch.num_rows();
        self.rows += rows as u64;
        let mut start = 0;
        // The few rows waiting are topped up from this batch: only they are copied.
        if let Some(waiting) = self.waiting.take() {
            start = (WRITE_BATCH_ROWS - waiting.num_rows()).min(rows);
            let joined = concat(&[&waiting, &batch.slice(0, start)], table)?;
            if joined.num_rows() < WRITE_BATCH_ROWS {
                self.waiting = Some(joined);
                return Ok(());
            }
            self.hand_over(&joined, out)?;
        }
        while rows - start >= WRITE_BATCH_ROWS {
            self.hand_over(&batch.slice(start, WRITE_BATCH_ROWS), out)?;
            start += WRITE_BATCH_ROWS;
        }
        if start < rows {
            // Copied out, so the batch's arrays are not kept for a few of their rows.
            self.waiting = Some(concat(&[&batch.slice(start, rows - start)], table)?);
        }
        Ok(())
    }

    /// Gives the writer `batch`; what it has finished goes to `out`.
    fn hand_over(&mut self, batch: &RecordBatch, out: &mut dyn Write) -> Result<()> {
        let table = self.table;
        self.writer
            .write(batch)
            .map_err(|e| encoding_error(table, e))?;
        // The writer counts what it wrote itself, so taking the bytes it has put into its
        // buffer leaves the file it goes on writing whole.
        let written = std::mem::take(self.writer.inner_mut());
        out.write_all(&written)
            .map_err(|e| from_io(table.name(), e))
    }

    /// Ends the file into `out`; gives how many rows it holds.
    pub fn finish(mut self, out: &mut dyn Write) -> Result<u64> {
        let table = self.table;
        if let Some(waiting) = self.waiting.take() {
            self.hand_over(&waiting, out)?;
        }
        let bytes = self
            .writer
            .into_inner()
            .map_err(|e| encoding_error(table, e))?;
        out.write_all(&bytes)
            .map_err(|e| from_io(table.name(), e))?;
        Ok(self.rows)
    }
}
