//! Where a job reads the tables from: the landing tier of a store (one file per upload, as
//! converted), or the lake (the same rows, compacted into Delta tables).

use super::{read_tables, Table, TableBatches};
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
        }
    }

    /// `landing` or `lake`, for messages.
    pub fn tier(self) -> &'static str {
        match self {
            TablesFrom::Landing(_) => "landing",
            #[cfg(feature = "lake")]
            TablesFrom::Lake(_) => "lake",
        }
    }
}
