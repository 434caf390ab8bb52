//! Typed access to a table's columns by name. The tables may come from files of another
//! writer, so a missing or mistyped column is a typed error, never a panic.

use arrow_array::{
    Array, Int32Array, Int64Array, RecordBatch, StringArray, TimestampMicrosecondArray,
};

use proflake::{Error, ErrorKind, Result};

/// A malformed-tables error.
pub(super) fn error(what: String) -> Error {
    ErrorKind::Malformed {
        format: "stack tables",
        offset: 0,
        what,
    }
    .into()
}

fn column<'a, T: Array + 'static>(
    batch: &'a RecordBatch,
    table: &str,
    name: &str,
    expected: &str,
) -> Result<&'a T> {
    let column = batch
        .column_by_name(name)
        .ok_or_else(|| error(format!("{table} has no column {name}")))?;
    column.as_any().downcast_ref::<T>().ok_or_else(|| {
        error(format!(
            "{table}.{name} is {}, expected {expected}",
            column.data_type()
        ))
    })
}

pub(super) fn strings<'a>(b: &'a RecordBatch, table: &str, name: &str) -> Result<&'a StringArray> {
    column(b, table, name, "Utf8")
}

pub(super) fn i32s<'a>(b: &'a RecordBatch, table: &str, name: &str) -> Result<&'a Int32Array> {
    column(b, table, name, "Int32")
}

pub(super) fn i64s<'a>(b: &'a RecordBatch, table: &str, name: &str) -> Result<&'a Int64Array> {
    column(b, table, name, "Int64")
}

/// The value at `i`, `None` when null.
pub(super) fn opt_time(a: &TimestampMicrosecondArray, i: usize) -> Option<i64> {
    a.is_valid(i).then(|| a.value(i))
}

pub(super) fn timestamps<'a>(
    b: &'a RecordBatch,
    table: &str,
    name: &str,
) -> Result<&'a TimestampMicrosecondArray> {
    column(b, table, name, "Timestamp(Microsecond)")
}

/// The value at `i`, `None` when null.
pub(super) fn opt_str(a: &StringArray, i: usize) -> Option<&str> {
    a.is_valid(i).then(|| a.value(i))
}

/// The value at `i`, `None` when null.
pub(super) fn opt_i32(a: &Int32Array, i: usize) -> Option<i32> {
    a.is_valid(i).then(|| a.value(i))
}

/// The value at `i`, `None` when null.
pub(super) fn opt_i64(a: &Int64Array, i: usize) -> Option<i64> {
    a.is_valid(i).then(|| a.value(i))
}

/// A required value: null where the contract says never is a malformed table.
pub(super) fn required<T>(value: Option<T>, table: &str, name: &str, row: usize) -> Result<T> {
    value.ok_or_else(|| error(format!("{table}.{name} is null in row {row}")))
}
