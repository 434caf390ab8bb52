//! The lake tables' columns: a landing table's columns, then `dt`, its partition.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use deltalake::kernel::engine::arrow_conversion::TryIntoKernel;
use deltalake::kernel::{StructField, StructType};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

use crate::error::{Error, ErrorKind, Result};
use crate::tables::Table;

/// The partition column: the landing file's `dt=YYYY-MM-DD`, as a string.
pub const PARTITION_COLUMN: &str = "dt";

/// False-positive rate of the `source_id` bloom filters: finding an upload's files reads a
/// row group's filter, and a false positive costs one read of its `source_id` column.
const BLOOM_FPP: f64 = 0.01;

/// The Arrow schema of `table` in the lake: the landing columns, then `dt`. (A Delta table
/// created before a landing column was added has it after `dt`: see `evolve.rs`.)
pub fn lake_schema(table: Table) -> SchemaRef {
    let landing = table.schema();
    let mut fields: Vec<Field> = landing
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(Field::new(PARTITION_COLUMN, DataType::Utf8, false));
    Arc::new(Schema::new(fields))
}

/// The Delta columns of `table` (created from the Arrow schema, so the two cannot differ).
pub(super) fn delta_columns(table: Table) -> Result<Vec<StructField>> {
    let schema = lake_schema(table);
    let kernel: StructType = schema
        .as_ref()
        .try_into_kernel()
        .map_err(|e| lake_error(table.name(), format!("schema: {e}")))?;
    Ok(kernel.fields().cloned().collect())
}

/// `batch`, a batch of landing rows of `table`, with the `dt` column added.
pub(super) fn with_partition(table: Table, batch: &RecordBatch, dt: &str) -> Result<RecordBatch> {
    let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
    columns.push(Arc::new(StringArray::from(vec![dt; batch.num_rows()])));
    RecordBatch::try_new(lake_schema(table), columns)
        .map_err(|e| lake_error(table.name(), format!("rows for dt={dt}: {e}")))
}

/// The settings of the lake's data files: those of the landing files (without a declared
/// sort, since a file holds many uploads), plus a bloom filter on `source_id`, which is how
/// an upload's files are found when its rows are replaced (and how engines skip row groups
/// on `source_id = …`).
pub(super) fn writer_properties(table: Table) -> Result<WriterProperties> {
    let source_id = ColumnPath::from("source_id");
    Ok(crate::tables::encoding(table)?
        .set_column_bloom_filter_enabled(source_id.clone(), true)
        .set_column_bloom_filter_fpp(source_id, BLOOM_FPP)
        .build())
}

/// A lake error on `table`.
pub(super) fn lake_error(table: &str, what: impl Into<String>) -> Error {
    Error::new(ErrorKind::Lake {
        table: table.into(),
        what: what.into(),
    })
}
