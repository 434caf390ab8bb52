//! The stack tables' place in the family: the table writer ([`crate::tables`]) encodes its
//! Parquet files into [`Outputs`], which hash and list them for the manifest as they pass.

use super::manifest::ManifestOutput;
use super::outputs::Outputs;
use crate::error::Result;
use crate::tables::{FileId, Table, TableSink};

/// [`Outputs`] as where the tables go. It holds no state of its own, so one may be made for
/// each call while files stay open in the outputs.
pub(crate) struct TableOutputs<'o, 's> {
    pub(super) out: &'o mut Outputs<'s>,
}

impl TableSink for TableOutputs<'_, '_> {
    fn intend(&mut self, keys: &[String]) -> Result<()> {
        self.out.intend(keys)
    }

    fn open(&mut self, table: Table, key: &str) -> Result<FileId> {
        self.out.open(key, format!("table:{}", table.name()))
    }

    fn write(&mut self, file: FileId, bytes: &[u8]) -> Result<()> {
        self.out.write(file, bytes)
    }

    fn close(&mut self, file: FileId, rows: u64) -> Result<()> {
        self.out.close(file, |listed| ManifestOutput {
            rows: Some(rows),
            ..listed
        })
    }
}
