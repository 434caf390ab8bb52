//! Arrow arrays from row values, with the 32-bit offset limits of `Utf8`, `List` and `Map`
//! checked up front: arrow's builders panic on overflow, and a huge input must fail as an
//! error, not bring the process down.

use std::sync::Arc;

use arrow_array::builder::{NullBufferBuilder, OffsetBufferBuilder};
use arrow_array::{
    ArrayRef, BooleanArray, Int32Array, Int64Array, ListArray, MapArray, RecordBatch, StringArray,
    StructArray, TimestampMicrosecondArray,
};
use arrow_schema::{DataType, SchemaRef};

use super::schema::{inlined_call_fields, string_map_type, Table};
use crate::error::{ErrorKind, Result};

/// What went wrong while building `table`, as the library's error.
pub(super) fn encoding_error(table: Table, what: impl std::fmt::Display) -> crate::error::Error {
    ErrorKind::TableEncoding {
        table: table.name(),
        what: what.to_string(),
    }
    .into()
}

/// A `Utf8` column; fails when its bytes would not fit 32-bit offsets.
pub(super) fn strings<'s>(
    table: Table,
    values: impl IntoIterator<Item = Option<&'s str>>,
) -> Result<ArrayRef> {
    let values: Vec<Option<&str>> = values.into_iter().collect();
    let bytes: usize = values.iter().flatten().map(|s| s.len()).sum();
    if i32::try_from(bytes).is_err() {
        return Err(encoding_error(
            table,
            format!("a text column holds {bytes} bytes, over the 2 GiB of one Arrow array"),
        ));
    }
    Ok(Arc::new(StringArray::from(values)))
}

pub(super) fn int64s(values: impl IntoIterator<Item = Option<i64>>) -> ArrayRef {
    Arc::new(values.into_iter().collect::<Int64Array>())
}

/// An `INTEGER` column of unsigned values (ids, lines, CPUs). A value past `i32::MAX` cannot
/// be a real line or CPU, and ids never get there (a profile would need 2^31 rows), so it is
/// written as NULL rather than wrapped into a misleading negative number.
pub(super) fn int32s(values: impl IntoIterator<Item = Option<u32>>) -> ArrayRef {
    Arc::new(
        values
            .into_iter()
            .map(|v| v.and_then(|v| i32::try_from(v).ok()))
            .collect::<Int32Array>(),
    )
}

/// A `BIGINT` column holding the 64 bits of unsigned addresses: engines without unsigned
/// types read addresses at or above 2^63 as negative numbers (`docs/tables.md`).
pub(super) fn addresses(values: impl IntoIterator<Item = Option<u64>>) -> ArrayRef {
    Arc::new(
        values
            .into_iter()
            .map(|v| v.map(|a| a as i64))
            .collect::<Int64Array>(),
    )
}

pub(super) fn booleans(values: impl IntoIterator<Item = Option<bool>>) -> ArrayRef {
    Arc::new(values.into_iter().collect::<BooleanArray>())
}

/// UTC microsecond timestamps (the schema's `TIMESTAMP WITH TIME ZONE`).
pub(super) fn timestamps(values: impl IntoIterator<Item = i64>) -> ArrayRef {
    opt_timestamps(values.into_iter().map(Some))
}

/// Nullable UTC microsecond timestamps.
pub(super) fn opt_timestamps(values: impl IntoIterator<Item = Option<i64>>) -> ArrayRef {
    Arc::new(
        values
            .into_iter()
            .collect::<TimestampMicrosecondArray>()
            .with_timezone("UTC"),
    )
}

/// Offsets for lists of the given lengths; fails past `i32::MAX` entries.
fn offsets(
    table: Table,
    lengths: impl IntoIterator<Item = usize>,
) -> Result<OffsetBufferBuilder<i32>> {
    let lengths = lengths.into_iter();
    let mut builder = OffsetBufferBuilder::<i32>::new(lengths.size_hint().0);
    let mut total: usize = 0;
    for n in lengths {
        total = total.saturating_add(n);
        if total > i32::MAX as usize {
            return Err(encoding_error(
                table,
                format!("a list column holds more than {} entries", i32::MAX),
            ));
        }
        builder.push_length(n);
    }
    Ok(builder)
}

/// A `MAP(VARCHAR, VARCHAR)` column; `None` rows are NULL maps.
pub(super) fn string_maps<K: AsRef<str>, V: AsRef<str>>(
    table: Table,
    rows: &[Option<Vec<(K, V)>>],
) -> Result<ArrayRef> {
    let DataType::Map(entries_field, ordered) = string_map_type() else {
        unreachable!("string_map_type is a map");
    };
    let DataType::Struct(entry_fields) = entries_field.data_type().clone() else {
        unreachable!("map entries are a struct");
    };
    let entries = rows.iter().flatten().flatten();
    let keys = strings(table, entries.clone().map(|(k, _)| Some(k.as_ref())))?;
    let values = strings(table, entries.map(|(_, v)| Some(v.as_ref())))?;
    let entries = StructArray::try_new(entry_fields, vec![keys, values], None)
        .map_err(|e| encoding_error(table, e))?;
    let offsets = offsets(table, rows.iter().map(|r| r.as_ref().map_or(0, Vec::len)))?.finish();
    let mut nulls = NullBufferBuilder::new(rows.len());
    for r in rows {
        nulls.append(r.is_some());
    }
    let map = MapArray::try_new(entries_field, offsets, entries, nulls.finish(), ordered)
        .map_err(|e| encoding_error(table, e))?;
    Ok(Arc::new(map))
}

/// One `frames.inlined_into` entry.
pub(super) struct InlinedEntry<'s> {
    pub function: Option<&'s str>,
    pub file: Option<&'s str>,
    pub line: Option<u32>,
    pub column: Option<u32>,
    pub system_name: Option<&'s str>,
}

/// The `frames.inlined_into` column: a list per row, never NULL (empty when nothing was
/// inlined).
pub(super) fn inlined_lists(
    table: Table,
    list_field: &arrow_schema::FieldRef,
    rows: &[Vec<InlinedEntry<'_>>],
) -> Result<ArrayRef> {
    let entries = rows.iter().flatten();
    let columns = vec![
        strings(table, entries.clone().map(|e| e.function))?,
        strings(table, entries.clone().map(|e| e.file))?,
        int32s(entries.clone().map(|e| e.line)),
        int32s(entries.clone().map(|e| e.column)),
        strings(table, entries.map(|e| e.system_name))?,
    ];
    let items = StructArray::try_new(inlined_call_fields(), columns, None)
        .map_err(|e| encoding_error(table, e))?;
    let offsets = offsets(table, rows.iter().map(Vec::len))?.finish();
    let list = ListArray::try_new(list_field.clone(), offsets, Arc::new(items), None)
        .map_err(|e| encoding_error(table, e))?;
    Ok(Arc::new(list))
}

/// The element field of a list column of `schema`.
pub(super) fn list_item_field(schema: &SchemaRef, column: &str) -> arrow_schema::FieldRef {
    match schema
        .field_with_name(column)
        .map(|f| f.data_type().clone())
    {
        Ok(DataType::List(item)) => item,
        _ => unreachable!("{column} is a list column of the schema"),
    }
}

/// A batch of `table`'s schema from its columns, in schema order.
pub(super) fn batch(table: Table, columns: Vec<ArrayRef>) -> Result<RecordBatch> {
    RecordBatch::try_new(table.schema(), columns).map_err(|e| encoding_error(table, e))
}
