//! Where a job reads the tables from: the landing tier of a store (one file per upload, as
//! converted), or the lake (the same rows, compacted into Delta tables).

use super::{read_table_objects, read_tables, table_prefix, Projection, Table, TableBatches};
use crate::error::Result;
use crate::store::ObjectStore;

/// The tables a job reads.
#[derive(Clone, Copy)]
pub enum TablesFrom<'a> {
    /// The landing tables (`tables/v2/`) of a store: a directory or the bucket.
    Landing(&'a dyn ObjectStore),
    /// The lake's Delta tables.
    #[cfg(feature = "lake")]
    Lake(&'a crate::lake::Lake),
    /// Objects as a conversion produces them in memory, `(key, Parquet bytes)` (see
    /// [`Converted::objects`](crate::Converted::objects)): every table file among them, whatever
    /// its days; other keys are ignored.
    Objects(&'a [(String, Vec<u8>)]),
}

impl TablesFrom<'_> {
    /// Reads `tables`, only the days between `from_ns` and `to_ns` can reach (see
    /// [`read_tables`]).
    pub fn read(
        self,
        tables: &[Table],
        from_ns: Option<i64>,
        to_ns: Option<i64>,
    ) -> Result<TableBatches> {
        match self {
            TablesFrom::Landing(store) => read_tables(store, tables, from_ns, to_ns),
            #[cfg(feature = "lake")]
            TablesFrom::Lake(lake) => lake.read_tables(tables, from_ns, to_ns),
            TablesFrom::Objects(objects) => read_table_objects(
                objects
                    .iter()
                    .filter(|(key, _)| tables.iter().any(|t| key.starts_with(&table_prefix(*t))))
                    .map(|(key, bytes)| (key.as_str(), bytes.as_slice())),
            ),
        }
    }

    /// Hands `f` every batch of `table` the days between `from_ns` and `to_ns` can reach, as
    /// stored: only `columns`, nothing concatenated (for a table too large to hold whole).
    pub(crate) fn for_each_batch(
        self,
        table: Table,
        from_ns: Option<i64>,
        to_ns: Option<i64>,
        columns: Projection<'_>,
        f: &mut dyn FnMut(arrow_array::RecordBatch) -> Result<()>,
    ) -> Result<()> {
        match self {
            TablesFrom::Landing(store) => {
                super::for_each_batch(store, table, from_ns, to_ns, Some(columns), f)
            }
            #[cfg(feature = "lake")]
            TablesFrom::Lake(lake) => lake.for_each_batch(table, from_ns, to_ns, Some(columns), f),
            TablesFrom::Objects(objects) => {
                for (key, bytes) in objects
                    .iter()
                    .filter(|(k, _)| k.starts_with(&table_prefix(table)))
                {
                    for batch in
                        super::read::read_object(table, bytes).map_err(|e| e.for_input(key))?
                    {
                        let schema = batch.schema();
                        let indices: Vec<usize> = (columns.columns.iter())
                            .filter_map(|c| schema.index_of(c).ok())
                            .collect();
                        f(batch.project(&indices).map_err(|e| table_error(table, e))?)?;
                    }
                }
                Ok(())
            }
        }
    }

    /// `table`'s columns `projection` names, as stored, in one batch (see
    /// [`Self::for_each_batch`]).
    pub(crate) fn read_columns(
        self,
        table: Table,
        from_ns: Option<i64>,
        to_ns: Option<i64>,
        projection: Projection<'_>,
    ) -> Result<arrow_array::RecordBatch> {
        let columns = projection.columns;
        let mut batches = Vec::new();
        self.for_each_batch(table, from_ns, to_ns, projection, &mut |batch| {
            batches.push(batch);
            Ok(())
        })?;
        let schema = match batches.first() {
            Some(batch) => batch.schema(),
            None => {
                let all = table.schema();
                let indices: Vec<usize> = columns
                    .iter()
                    .filter_map(|c| all.index_of(c).ok())
                    .collect();
                std::sync::Arc::new(all.project(&indices).map_err(|e| table_error(table, e))?)
            }
        };
        arrow_select::concat::concat_batches(&schema, &batches).map_err(|e| table_error(table, e))
    }

    /// `landing` or `lake`, for messages.
    pub fn tier(self) -> &'static str {
        match self {
            TablesFrom::Landing(_) => "landing",
            #[cfg(feature = "lake")]
            TablesFrom::Lake(_) => "lake",
            TablesFrom::Objects(_) => "conversion",
        }
    }
}

fn table_error(table: Table, e: arrow_schema::ArrowError) -> crate::Error {
    crate::error::ErrorKind::Malformed {
        format: "parquet",
        offset: 0,
        what: format!("{}: {e}", table.name()),
    }
    .into()
}
