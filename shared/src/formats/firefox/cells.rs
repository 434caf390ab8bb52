//! The gecko layout's tables: `{schema: {column: index}, data: [[cell, ...], ...]}`, rows of
//! mixed JSON scalars whose trailing nulls Firefox leaves out.

use std::fmt;

use rustc_hash::FxHashMap;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

/// One value of a row. Nested values (a marker's payload) are not read.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Cell {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
    Nested,
}

impl Cell {
    pub fn index(&self) -> Option<u64> {
        match *self {
            Cell::Int(i) => u64::try_from(i).ok(),
            _ => None,
        }
    }

    pub fn number(&self) -> Option<f64> {
        match *self {
            Cell::Int(i) => Some(i as f64),
            Cell::Float(f) => Some(f),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Cell {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(CellVisitor)
    }
}

struct CellVisitor;

impl<'de> Visitor<'de> for CellVisitor {
    type Value = Cell;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a table cell")
    }

    fn visit_unit<E>(self) -> Result<Cell, E> {
        Ok(Cell::Null)
    }

    fn visit_none<E>(self) -> Result<Cell, E> {
        Ok(Cell::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Cell, E> {
        Ok(Cell::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Cell, E> {
        Ok(Cell::Int(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Cell, E> {
        Ok(i64::try_from(v).map_or(Cell::Float(v as f64), Cell::Int))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Cell, E> {
        Ok(Cell::Float(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Cell, E> {
        Ok(Cell::Text(v.to_owned()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Cell, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Cell::Nested)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Cell, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Cell::Nested)
    }
}

/// A `{schema, data}` table.
#[derive(Deserialize, Default)]
pub(super) struct Table {
    #[serde(default)]
    pub schema: FxHashMap<String, usize>,
    #[serde(default)]
    pub data: Vec<Vec<Cell>>,
}

const NULL: Cell = Cell::Null;

impl Table {
    /// The column named `name`, if the schema has it.
    pub fn column(&self, name: &str) -> Column {
        Column(self.schema.get(name).copied())
    }
}

/// A column of a [`Table`], read from each row; a row shorter than the schema has nulls at
/// its end.
#[derive(Clone, Copy)]
pub(super) struct Column(Option<usize>);

impl Column {
    pub fn exists(self) -> bool {
        self.0.is_some()
    }

    pub fn of(self, row: &[Cell]) -> &Cell {
        self.0.and_then(|i| row.get(i)).unwrap_or(&NULL)
    }
}
