//! Typed access to the tables' columns by name. The tables may come from files of another
//! writer (an older version, the lake), so a missing or mistyped column is a typed error
//! naming it, never a panic.

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, TimestampMicrosecondType};
use arrow_array::{Array, ListArray, MapArray, PrimitiveArray, RecordBatch, StringArray};

use crate::error::{Error, ErrorKind, Result};

pub(super) fn malformed(what: String) -> Error {
    ErrorKind::Malformed {
        format: "stack tables",
        offset: 0,
        what,
    }
    .into()
}

fn missing(table: &str, name: &str, expected: &str) -> Error {
    malformed(format!("{table} has no column {name} of type {expected}"))
}

pub(super) fn text<'b>(b: &'b RecordBatch, table: &str, name: &str) -> Result<&'b StringArray> {
    b.column_by_name(name)
        .and_then(|c| c.as_string_opt::<i32>())
        .ok_or_else(|| missing(table, name, "Utf8"))
}

pub(super) fn int32<'b>(
    b: &'b RecordBatch,
    table: &str,
    name: &str,
) -> Result<&'b PrimitiveArray<Int32Type>> {
    b.column_by_name(name)
        .and_then(|c| c.as_primitive_opt::<Int32Type>())
        .ok_or_else(|| missing(table, name, "Int32"))
}

pub(super) fn int64<'b>(
    b: &'b RecordBatch,
    table: &str,
    name: &str,
) -> Result<&'b PrimitiveArray<Int64Type>> {
    b.column_by_name(name)
        .and_then(|c| c.as_primitive_opt::<Int64Type>())
        .ok_or_else(|| missing(table, name, "Int64"))
}

pub(super) fn micros<'b>(
    b: &'b RecordBatch,
    table: &str,
    name: &str,
) -> Result<&'b PrimitiveArray<TimestampMicrosecondType>> {
    b.column_by_name(name)
        .and_then(|c| c.as_primitive_opt::<TimestampMicrosecondType>())
        .ok_or_else(|| missing(table, name, "Timestamp(Microsecond)"))
}

pub(super) fn map<'b>(b: &'b RecordBatch, table: &str, name: &str) -> Result<&'b MapArray> {
    b.column_by_name(name)
        .and_then(|c| c.as_map_opt())
        .ok_or_else(|| missing(table, name, "Map(Utf8, Utf8)"))
}

pub(super) fn list<'b>(b: &'b RecordBatch, table: &str, name: &str) -> Result<&'b ListArray> {
    b.column_by_name(name)
        .and_then(|c| c.as_list_opt::<i32>())
        .ok_or_else(|| missing(table, name, "List"))
}

/// Row `i`, `None` when null.
#[inline]
pub(super) fn get<A: ValueAt>(a: &A, i: usize) -> Option<A::Value<'_>> {
    a.is_valid(i).then(|| a.value_at(i))
}

/// Row `i` of a column the contract says is never null.
#[inline]
pub(super) fn required<'a, A: ValueAt>(
    a: &'a A,
    table: &str,
    name: &str,
    i: usize,
) -> Result<A::Value<'a>> {
    get(a, i).ok_or_else(|| malformed(format!("{table}.{name} is null in row {i}")))
}

/// A row without a text in [`TextKeys::keys`].
pub(super) const NO_TEXT: u32 = u32::MAX;

/// A text column as keys into its distinct texts: a dictionary column as Parquet stores it
/// (profile ids, thread names: a few values over many rows), or a plain column keyed here.
pub(super) struct TextKeys<'a> {
    /// Per row, the index of its text in `texts`, [`NO_TEXT`] when null.
    pub keys: Vec<u32>,
    pub texts: Vec<&'a str>,
}

impl<'a> TextKeys<'a> {
    pub fn new(b: &'a RecordBatch, table: &str, name: &str) -> Result<Self> {
        let column = b
            .column_by_name(name)
            .ok_or_else(|| missing(table, name, "Utf8"))?;
        if let Some(dictionary) = column.as_dictionary_opt::<Int32Type>() {
            let values = dictionary
                .values()
                .as_string_opt::<i32>()
                .ok_or_else(|| missing(table, name, "Dictionary(Int32, Utf8)"))?;
            let texts = (0..values.len())
                .map(|i| get(values, i).unwrap_or(""))
                .collect();
            let keys = dictionary
                .keys()
                .iter()
                .map(|k| k.and_then(|k| u32::try_from(k).ok()).unwrap_or(NO_TEXT))
                .collect();
            return Ok(TextKeys { keys, texts });
        }
        let plain = column
            .as_string_opt::<i32>()
            .ok_or_else(|| missing(table, name, "Utf8"))?;
        let mut index: rustc_hash::FxHashMap<&str, u32> = Default::default();
        let mut texts = Vec::new();
        let keys = (0..plain.len())
            .map(|i| match get(plain, i) {
                None => NO_TEXT,
                Some(text) => *index.entry(text).or_insert_with(|| {
                    texts.push(text);
                    texts.len() as u32 - 1
                }),
            })
            .collect();
        Ok(TextKeys { keys, texts })
    }

    /// Row `i`'s text.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&'a str> {
        match self.keys[i] {
            NO_TEXT => None,
            k => Some(self.texts[k as usize]),
        }
    }
}

/// A `MAP(VARCHAR, VARCHAR)` column, its entries read row by row.
pub(super) struct MapRows<'a> {
    map: &'a MapArray,
    keys: &'a StringArray,
    values: &'a StringArray,
}

impl<'a> MapRows<'a> {
    pub fn new(map: &'a MapArray) -> Result<Self> {
        match (
            map.keys().as_string_opt::<i32>(),
            map.values().as_string_opt::<i32>(),
        ) {
            (Some(keys), Some(values)) => Ok(MapRows { map, keys, values }),
            _ => Err(malformed(
                "a map column's keys or values are not text".into(),
            )),
        }
    }

    /// Row `i`'s entries, in their stored order; null values read as empty text.
    #[inline]
    pub fn entries(&self, i: usize) -> impl Iterator<Item = (&'a str, &'a str)> + '_ {
        let offsets = self.map.value_offsets();
        let range = if self.map.is_valid(i) {
            offsets[i] as usize..offsets[i + 1] as usize
        } else {
            0..0
        };
        range.map(move |j| (self.keys.value(j), get(self.values, j).unwrap_or("")))
    }
}

/// What a column holds at a row.
pub(super) trait ValueAt: Array {
    type Value<'a>
    where
        Self: 'a;
    fn value_at(&self, i: usize) -> Self::Value<'_>;
}

impl ValueAt for StringArray {
    type Value<'a> = &'a str;
    #[inline]
    fn value_at(&self, i: usize) -> &str {
        self.value(i)
    }
}

impl ValueAt for PrimitiveArray<Int32Type> {
    type Value<'a> = i32;
    #[inline]
    fn value_at(&self, i: usize) -> i32 {
        // The values' slice, which indexes inline; `value` is a call per row.
        self.values()[i]
    }
}

impl ValueAt for PrimitiveArray<Int64Type> {
    type Value<'a> = i64;
    #[inline]
    fn value_at(&self, i: usize) -> i64 {
        self.values()[i]
    }
}

impl ValueAt for PrimitiveArray<TimestampMicrosecondType> {
    type Value<'a> = i64;
    #[inline]
    fn value_at(&self, i: usize) -> i64 {
        self.values()[i]
    }
}
