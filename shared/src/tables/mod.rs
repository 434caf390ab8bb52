//! The stack tables: Arrow record batches built from the tables' plan, written as Parquet
//! (schema and layout in `docs/tables.md`).
//!
//! A `TableWriter` takes an upload's planned table profiles a window of the grid at a time
//! (or all at once): each window's `samples` rows go straight into the day's open file, and
//! what the other tables need of each profile (its `profiles` row, the leaves its call tree is
//! built again from, its rollup sums) is kept, small, until the end. A profile's call tree is
//! as large as the part of the stack tree its samples reach, so it is built again for each
//! table that needs it and dropped after its rows.

mod call_tree;
mod columns;
mod counters;
mod frames;
mod parquet_file;
mod partition;
mod profiles;
mod read;
mod rollup;
mod samples;
mod schema;
mod series;
mod source;
#[cfg(test)]
mod tests;
mod writer;

use std::collections::{BTreeMap, VecDeque};
use std::io::{self, Write};
use std::ops::Range;

use arrow_array::RecordBatch;

#[cfg(feature = "lake")]
pub(crate) use parquet_file::encoding;
pub(crate) use read::read_table_objects;
pub use read::read_tables;
pub(crate) use read::table_prefix;
#[cfg(feature = "lake")]
pub(crate) use read::{collect_tables, conform, parquet_batches};
pub(crate) use read::{for_each_batch, Projection};
pub use schema::Table;
pub(crate) use schema::TABLES_SCHEMA_VERSION;
pub use source::TablesFrom;
pub(crate) use writer::TableWriter;

use crate::error::{to_io, Result};
use crate::model::{Profile, StackHandle};
use crate::plan::TableProfilePlan;
use call_tree::{stacks_batch, CallTree};
use frames::frames_batch;

/// The upload the tables describe.
#[derive(Clone, Debug)]
pub(crate) struct TableSource<'a> {
    /// The upload's identity.
    pub source_id: &'a str,
    /// The upload's object key.
    pub source_key: &'a str,
    /// Its ETag, without quotes.
    pub source_etag: &'a str,
    /// The detected input format's name.
    pub source_format: &'a str,
    /// `proflake <version>`.
    pub converter: &'a str,
    /// The service the upload metadata names; wins over what the profile says.
    pub service: Option<&'a str>,
    /// Labels the upload metadata attaches to every profile; they win over the profile's own
    /// attributes of the same name.
    pub labels: &'a BTreeMap<String, String>,
    /// What placed the profiles whose samples have times on the wall clock (`input`,
    /// `metadata`, `arrival`): their `clock_source`.
    pub timed_clock: &'a str,
    /// What gave aggregated profiles their start: their `clock_source`.
    pub aggregated_clock: &'a str,
}

/// One planned table profile to tabulate, with what the upload's metadata says of it.
#[derive(Clone, Debug)]
pub(crate) struct TableProfileInput<'a, 'p> {
    /// The profile's observations.
    pub plan: &'a TableProfilePlan<'p>,
    /// The Sentry platform the metadata gives; derived from the frames when `None`.
    pub platform: Option<&'a str>,
    /// Its release.
    pub release: Option<&'a str>,
    /// Its environment.
    pub environment: Option<&'a str>,
}

/// The six tables of one upload, in memory.
#[derive(Clone, Debug)]
pub struct TableBatches {
    /// `profiles`.
    pub profiles: RecordBatch,
    /// `samples`.
    pub samples: RecordBatch,
    /// `stacks`.
    pub stacks: RecordBatch,
    /// `frames`.
    pub frames: RecordBatch,
    /// `function_rollup`.
    pub function_rollup: RecordBatch,
    /// `counters`.
    pub counters: RecordBatch,
}

/// One Parquet file to store.
#[cfg(test)]
#[derive(Clone, Debug)]
pub struct TableObject {
    /// Which table.
    pub table: Table,
    /// Its key (`tables/v2/<table>/dt=YYYY-MM-DD/<source_id>.parquet`).
    pub key: String,
    /// Rows in the file.
    pub rows: u64,
    /// The Parquet bytes.
    pub bytes: Vec<u8>,
}

/// Rows `range` of one table profile's rows in a table: its id, its model and its call tree.
type Segment<'a> = (&'a str, &'a Profile, &'a CallTree, Range<usize>);

/// The batch of a table's rows from slices of call trees (`source_id`, the slices).
type TreeBatch = for<'a> fn(&str, &[Segment<'a>]) -> Result<RecordBatch>;

/// How many rows of `table` (`stacks` or `frames`) a call tree gives, and the batch of them.
fn tree_table(table: Table) -> (fn(&CallTree) -> usize, TreeBatch) {
    match table {
        Table::Stacks => (|t| t.stacks.len(), stacks_batch),
        _ => (|t| t.frames.len(), frames_batch),
    }
}

/// A table profile as the call tree tables read it: its id, its model, and the leaves its
/// tree is built again from.
type TreeSource<'a> = (&'a str, &'a Profile, &'a [StackHandle]);

/// Hands `emit` the rows of `profiles`, in order, in slices of
/// [`parquet_file::WRITE_BATCH_ROWS`] (the last one shorter); `len` counts a profile's rows
/// in its tree. Each profile's tree is built in turn and dropped once its rows are emitted.
fn tree_slices(
    profiles: &[TreeSource<'_>],
    len: impl Fn(&CallTree) -> usize,
    emit: &mut dyn FnMut(&[Segment<'_>]) -> Result<()>,
) -> Result<()> {
    const SLICE: usize = parquet_file::WRITE_BATCH_ROWS;
    // The profiles whose rows are not all emitted yet, the first one's from row `offset`.
    type Held<'a> = VecDeque<(&'a str, &'a Profile, CallTree)>;
    let mut held: Held<'_> = VecDeque::new();
    let (mut offset, mut pending) = (0, 0);
    let mut emit_slice = |held: &mut Held<'_>, offset: &mut usize, n: usize| -> Result<()> {
        let mut segments = Vec::new();
        let (mut start, mut need) = (*offset, n);
        for (id, model, tree) in held.iter() {
            let take = (len(tree) - start).min(need);
            if take > 0 {
                segments.push((*id, *model, tree, start..start + take));
            }
            need -= take;
            start = 0;
            if need == 0 {
                break;
            }
        }
        emit(&segments)?;
        let mut left = n;
        while let Some((_, _, tree)) = held.front() {
            let rest = len(tree) - *offset;
            if rest > left {
                *offset += left;
                break;
            }
            left -= rest;
            held.pop_front();
            *offset = 0;
        }
        Ok(())
    };
    for &(id, model, leaves) in profiles {
        let tree = CallTree::of(model, leaves);
        pending += len(&tree);
        held.push_back((id, model, tree));
        while pending >= SLICE {
            emit_slice(&mut held, &mut offset, SLICE)?;
            pending -= SLICE;
        }
    }
    if pending > 0 {
        emit_slice(&mut held, &mut offset, pending)?;
    }
    Ok(())
}

/// Builds the six tables of one upload from its planned profiles, each as one batch: the
/// files [`write_tables`] would write if every row were on one day, read back.
#[cfg(test)]
pub(crate) fn build_tables(
    source: &TableSource<'_>,
    inputs: &[TableProfileInput<'_, '_>],
) -> Result<TableBatches> {
    let mut files = TableObjects::default();
    let mut writer = TableWriter::one_file_per_table(source);
    writer.add(inputs, &mut files)?;
    writer.finish(&models_of(inputs), &mut files)?;
    let objects = files
        .done
        .iter()
        .map(|o| (o.key.as_str(), o.bytes.as_slice()));
    read_table_objects(objects)
}

/// An open table file, as its sink numbers it.
pub(crate) type FileId = usize;

/// Where an upload's table files go as they are encoded. Several may be open at once: a
/// day's `samples` file stays open while the windows of a long recording are written.
pub(crate) trait TableSink {
    /// Opens the file of `table` at `key`.
    fn open(&mut self, table: Table, key: &str) -> Result<FileId>;
    /// Appends bytes to an open file.
    fn write(&mut self, file: FileId, bytes: &[u8]) -> Result<()>;
    /// Stores a file that holds `rows` rows; it appears at its key now.
    fn close(&mut self, file: FileId, rows: u64) -> Result<()>;
}

/// An open file of a sink as a writer.
struct SinkFile<'a> {
    sink: &'a mut dyn TableSink,
    file: FileId,
}

impl Write for SinkFile<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.sink.write(self.file, buf).map_err(to_io)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The models of `inputs`, each once, in order of first use: what [`TableWriter::finish`]
/// builds the kept profiles' trees from.
#[cfg(test)]
fn models_of<'p>(inputs: &[TableProfileInput<'_, 'p>]) -> Vec<&'p Profile> {
    let mut models: Vec<&Profile> = Vec::new();
    for input in inputs {
        if !models.iter().any(|m| std::ptr::eq(*m, input.plan.profile)) {
            models.push(input.plan.profile);
        }
    }
    models
}

/// Builds the tables and encodes them as Parquet, one file per table and UTC day, each handed
/// to `sink` as it is encoded, so no file is held whole.
///
/// Files are stored in [`Table::ALL`] order, days ascending within a table. Every day that
/// has a profile gets all four profile tables, even a `stacks` or `frames` file without rows
/// (a profile whose samples have no stacks), so a query over one day's partitions never finds
/// a table missing; `function_rollup` only has the days its hours fall on, and `counters` only
/// the days its instants and counter values fall on (none without any).
#[cfg(test)]
pub(crate) fn write_tables_into(
    source: &TableSource<'_>,
    inputs: &[TableProfileInput<'_, '_>],
    sink: &mut dyn TableSink,
) -> Result<()> {
    let mut writer = TableWriter::new(source);
    writer.add(inputs, sink)?;
    writer.finish(&models_of(inputs), sink)
}

/// The tables of `inputs`, written into memory: every file, encoded.
#[cfg(test)]
pub(crate) fn write_tables(
    source: &TableSource<'_>,
    inputs: &[TableProfileInput<'_, '_>],
) -> Result<Vec<TableObject>> {
    let mut objects = TableObjects::default();
    write_tables_into(source, inputs, &mut objects)?;
    Ok(objects.done)
}

/// Table files in memory, in the order they are stored.
#[cfg(test)]
#[derive(Default)]
struct TableObjects {
    open: Vec<Option<TableObject>>,
    done: Vec<TableObject>,
}

#[cfg(test)]
impl TableSink for TableObjects {
    fn open(&mut self, table: Table, key: &str) -> Result<FileId> {
        self.open.push(Some(TableObject {
            table,
            key: key.to_owned(),
            rows: 0,
            bytes: Vec::new(),
        }));
        Ok(self.open.len() - 1)
    }

    fn write(&mut self, file: FileId, bytes: &[u8]) -> Result<()> {
        let object = self.open[file]
            .as_mut()
            .expect("a file is written while open");
        object.bytes.extend_from_slice(bytes);
        Ok(())
    }

    fn close(&mut self, file: FileId, rows: u64) -> Result<()> {
        let mut object = self.open[file].take().expect("a file is closed once");
        object.rows = rows;
        self.done.push(object);
        Ok(())
    }
}
