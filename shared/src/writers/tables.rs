//! The stack tables' place in the family: the table writer ([`crate::tables`]) encodes its
//! Parquet files into the tables' lane of the [`Outputs`](super::outputs::Outputs), which hash
//! and list them for the manifest as they pass.

use super::manifest::ManifestOutput;
use super::outputs::{Listing, OutputSink};
use crate::error::Result;
use crate::tables::{FileId, Table, TableSink};

/// The tables' lane of the outputs as where the tables go. It holds no state of its own, so
/// one may be made for each call while files stay open in the lane.
pub(crate) struct TableOutputs<'a, 'st> {
    pub(super) sink: &'a mut dyn OutputSink<'st>,
    pub(super) listing: &'a mut Listing,
}

impl TableSink for TableOutputs<'_, '_> {
    fn open(&mut self, table: Table, key: &str) -> Result<FileId> {
        self.listing
            .open(self.sink, key, format!("table:{}", table.name()))
    }

    fn write(&mut self, file: FileId, bytes: &[u8]) -> Result<()> {
        self.listing.write(self.sink, file, bytes)
    }

    fn close(&mut self, file: FileId, rows: u64) -> Result<()> {
        self.listing
            .close(self.sink, file, |listed| ManifestOutput {
                rows: Some(rows),
                ..listed
            })
    }
}
