//! The stack tables: Arrow record batches built from the tables' plan, written as Parquet
//! (schema and layout in `docs/tables.md`).
//!
//! Every planned table profile becomes a `TableProfile` first (its series, day and totals, and
//! the rollup's sums); the tables are then read off those, whole for [`build_tables`] or one
//! UTC day at a time for [`write_tables_into`]. A profile's call tree is as large as the part
//! of the stack tree its samples reach, so it is built again for each table that needs it,
//! from the few leaves that add nodes, and dropped after its rows.

mod call_tree;
mod columns;
mod frames;
mod parquet_file;
mod partition;
mod profiles;
mod read;
mod rollup;
mod samples;
mod schema;
mod series;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io::Write;
use std::ops::Range;

use arrow_array::RecordBatch;

pub use read::{read_table_objects, read_tables, table_prefix};
pub use schema::{Table, TABLES_SCHEMA_VERSION};

use crate::error::Result;
use crate::plan::TableProfilePlan;
use crate::store::table_key;
use call_tree::{stacks_batch, CallTree};
use frames::frames_batch;
use partition::{day_of_us, dt};
use profiles::{profiles_batch, TableProfile};
use rollup::{profile_sums, rollup, rollup_batch, ProfileSums, RollupKey, RollupSums};
use samples::{sample_rows, samples_batch, SampleRow};

/// The upload the tables describe.
#[derive(Clone, Debug)]
pub struct TableSource<'a> {
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
}

/// One planned table profile to tabulate, with what the upload's metadata says of it.
#[derive(Clone, Debug)]
pub struct TableProfileInput<'a, 'p> {
    /// The profile's observations.
    pub plan: &'a TableProfilePlan<'p>,
    /// The Sentry platform the metadata gives; derived from the frames when `None`.
    pub platform: Option<&'a str>,
    /// Its release.
    pub release: Option<&'a str>,
    /// Its environment.
    pub environment: Option<&'a str>,
}

/// The five tables of one upload, in memory.
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
}

/// One Parquet file to store.
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

/// The rows of one upload, before they become batches.
struct Tabulation<'a> {
    source: &'a TableSource<'a>,
    profiles: Vec<TableProfile<'a>>,
    /// `profiles` order: by `start_time`, `profile_id`.
    by_start: Vec<usize>,
    /// `stacks` and `frames` order: by `profile_id` (ids within a profile ascend).
    by_id: Vec<usize>,
}

impl<'a> Tabulation<'a> {
    /// Writes the Parquet file of `table`'s rows on `day` into `out`; gives how many rows it
    /// holds. The samples table, the one as long as the input, is built a few thousand rows
    /// at a time.
    fn encode(
        &self,
        rollup: &BTreeMap<RollupKey<'_>, RollupSums>,
        table: Table,
        day: i64,
        out: &mut dyn Write,
    ) -> Result<u64> {
        let source_id = self.source.source_id;
        match table {
            // The two tables as long as the profiles' call trees are built a slice at a time,
            // each profile's tree built for the table and dropped once its rows are written.
            Table::Stacks | Table::Frames => {
                let profiles = self.pick(&self.by_id, Some(day));
                let (len, build) = tree_table(table);
                let mut encoder = parquet_file::Encoder::new(table)?;
                tree_slices(&profiles, len, &mut |segments| {
                    encoder.write(&build(source_id, segments)?, out)
                })?;
                return encoder.finish(out);
            }
            Table::Samples => {}
            Table::Profiles | Table::FunctionRollup => {
                let batch = self.batch(rollup, table, Some(day))?;
                return parquet_file::encode_batches(table, std::iter::once(Ok(batch)), out);
            }
        }
        let mut rows = sample_rows(&self.profiles, |p| p.day == day).peekable();
        let mut group = Vec::with_capacity(parquet_file::WRITE_BATCH_ROWS);
        let batches = std::iter::from_fn(|| {
            rows.peek()?;
            group.clear();
            group.extend(rows.by_ref().take(parquet_file::WRITE_BATCH_ROWS));
            Some(samples_batch(self.source.source_id, &self.profiles, &group))
        });
        parquet_file::encode_batches(table, batches, out)
    }

    /// The profiles of `inputs`, and the rollup sums of each, read off its call tree while
    /// it is built (the tree itself is not kept).
    fn new(
        source: &'a TableSource<'a>,
        inputs: &'a [TableProfileInput<'a, 'a>],
    ) -> (Self, Vec<ProfileSums>) {
        let (profiles, sums): (Vec<TableProfile<'a>>, Vec<ProfileSums>) = inputs
            .iter()
            .map(|c| {
                let (profile, tree) = TableProfile::new(source, c);
                let sums = profile_sums(&profile, &tree);
                (profile, sums)
            })
            .unzip();
        let mut by_start: Vec<usize> = (0..profiles.len()).collect();
        by_start.sort_by_key(|&i| (profiles[i].start_us, profiles[i].profile_id()));
        let mut by_id: Vec<usize> = (0..profiles.len()).collect();
        by_id.sort_by_key(|&i| profiles[i].profile_id());
        let tab = Tabulation {
            source,
            profiles,
            by_start,
            by_id,
        };
        (tab, sums)
    }

    /// The profiles in `order` (`by_start` or `by_id`), all of them or those of one day.
    fn pick(&self, order: &[usize], day: Option<i64>) -> Vec<&TableProfile<'a>> {
        order
            .iter()
            .map(|&i| &self.profiles[i])
            .filter(|p| day.is_none_or(|d| p.day == d))
            .collect()
    }

    /// One table's rows, all of them or those of one day (`day` since the epoch).
    fn batch(
        &self,
        rollup: &BTreeMap<RollupKey<'_>, RollupSums>,
        table: Table,
        day: Option<i64>,
    ) -> Result<RecordBatch> {
        let on_day = |p: &TableProfile<'_>| day.is_none_or(|d| p.day == d);
        match table {
            Table::Profiles => profiles_batch(self.source, &self.pick(&self.by_start, day)),
            Table::Samples => {
                let rows: Vec<SampleRow> = sample_rows(&self.profiles, on_day).collect();
                samples_batch(self.source.source_id, &self.profiles, &rows)
            }
            Table::Stacks | Table::Frames => {
                let profiles = self.pick(&self.by_id, day);
                let trees: Vec<CallTree> = profiles.iter().map(|p| p.tree()).collect();
                let held: Vec<_> = profiles.into_iter().zip(&trees).collect();
                let (len, build) = tree_table(table);
                build(self.source.source_id, &whole(&held, len))
            }
            Table::FunctionRollup => {
                let rows: Vec<_> = rollup
                    .iter()
                    .filter(|(k, _)| day.is_none_or(|d| day_of_us(k.hour_us) == d))
                    .collect();
                rollup_batch(self.source.source_id, &rows)
            }
        }
    }
}

/// Rows `range` of one table profile's rows in a table, with its call tree.
type Segment<'a, 'p> = (&'a TableProfile<'p>, &'a CallTree, Range<usize>);

/// The batch of a table's rows from slices of call trees (`source_id`, the slices).
type TreeBatch = for<'a, 'p> fn(&str, &[Segment<'a, 'p>]) -> Result<RecordBatch>;

/// How many rows of `table` (`stacks` or `frames`) a call tree gives, and the batch of them.
fn tree_table(table: Table) -> (fn(&CallTree) -> usize, TreeBatch) {
    match table {
        Table::Stacks => (|t| t.stacks.len(), stacks_batch),
        _ => (|t| t.frames.len(), frames_batch),
    }
}

/// Every row of each profile, in order; `len` counts a profile's rows.
fn whole<'a, 'p>(
    profiles: &[(&'a TableProfile<'p>, &'a CallTree)],
    len: impl Fn(&CallTree) -> usize,
) -> Vec<Segment<'a, 'p>> {
    profiles.iter().map(|&(p, t)| (p, t, 0..len(t))).collect()
}

/// Hands `emit` the rows of `profiles`, in order, in slices of
/// [`parquet_file::WRITE_BATCH_ROWS`] (the last one shorter); `len` counts a profile's rows
/// in its tree. Each profile's tree is built in turn and dropped once its rows are emitted.
fn tree_slices<'p>(
    profiles: &[&TableProfile<'p>],
    len: impl Fn(&CallTree) -> usize,
    emit: &mut dyn FnMut(&[Segment<'_, 'p>]) -> Result<()>,
) -> Result<()> {
    const SLICE: usize = parquet_file::WRITE_BATCH_ROWS;
    // The profiles whose rows are not all emitted yet, the first one's from row `offset`.
    let mut held: VecDeque<(&TableProfile<'p>, CallTree)> = VecDeque::new();
    let (mut offset, mut pending) = (0, 0);
    let mut emit_slice = |held: &mut VecDeque<(&TableProfile<'p>, CallTree)>,
                          offset: &mut usize,
                          n: usize|
     -> Result<()> {
        let mut segments = Vec::new();
        let (mut start, mut need) = (*offset, n);
        for (p, tree) in held.iter() {
            let take = (len(tree) - start).min(need);
            if take > 0 {
                segments.push((*p, tree, start..start + take));
            }
            need -= take;
            start = 0;
            if need == 0 {
                break;
            }
        }
        emit(&segments)?;
        let mut left = n;
        while let Some((_, tree)) = held.front() {
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
    for &p in profiles {
        let tree = p.tree();
        pending += len(&tree);
        held.push_back((p, tree));
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

/// Builds the five tables of one upload from its planned profiles.
pub fn build_tables(
    source: &TableSource<'_>,
    inputs: &[TableProfileInput<'_, '_>],
) -> Result<TableBatches> {
    let (tab, sums) = Tabulation::new(source, inputs);
    let rollup = rollup(&tab.profiles, sums);
    let batch = |table| tab.batch(&rollup, table, None);
    Ok(TableBatches {
        profiles: batch(Table::Profiles)?,
        samples: batch(Table::Samples)?,
        stacks: batch(Table::Stacks)?,
        frames: batch(Table::Frames)?,
        function_rollup: batch(Table::FunctionRollup)?,
    })
}

/// What writes one table file's Parquet bytes into the writer it is given, and says how many
/// rows they hold.
pub type EncodeTable<'a> = dyn FnMut(&mut dyn Write) -> Result<u64> + 'a;

/// Where an upload's table files go as they are encoded.
pub trait TableSink {
    /// Every file's key, told before any file is written.
    fn intend(&mut self, keys: &[String]) -> Result<()>;
    /// Stores one file of `table` at `key`: `encode` writes its Parquet bytes into the writer
    /// it is given, as they are produced, and says how many rows they hold.
    fn put(&mut self, table: Table, key: &str, encode: &mut EncodeTable<'_>) -> Result<()>;
}

/// Builds the tables and encodes them as Parquet, one file per table and UTC day, each handed
/// to `sink` as it is encoded, so no file is held whole.
///
/// Files come in [`Table::ALL`] order, days ascending within a table. Every day that has a
/// profile gets all four profile tables, even a `stacks` or `frames` file without rows (a
/// profile whose samples have no stacks), so a query over one day's partitions never finds a
/// table missing; `function_rollup` only has the days its hours fall on.
pub fn write_tables_into(
    source: &TableSource<'_>,
    inputs: &[TableProfileInput<'_, '_>],
    sink: &mut dyn TableSink,
) -> Result<()> {
    let (tab, sums) = Tabulation::new(source, inputs);
    let rollup = rollup(&tab.profiles, sums);
    let profile_days: BTreeSet<i64> = tab.profiles.iter().map(|p| p.day).collect();
    let rollup_days: BTreeSet<i64> = rollup.keys().map(|k| day_of_us(k.hour_us)).collect();
    let files: Vec<(Table, i64, String)> = Table::ALL
        .into_iter()
        .flat_map(|table| {
            let days = match table {
                Table::FunctionRollup => &rollup_days,
                _ => &profile_days,
            };
            days.iter().map(move |&day| {
                let key = table_key(
                    TABLES_SCHEMA_VERSION,
                    table.name(),
                    &dt(day),
                    source.source_id,
                );
                (table, day, key)
            })
        })
        .collect();
    let keys: Vec<String> = files.iter().map(|(_, _, key)| key.clone()).collect();
    sink.intend(&keys)?;
    for (table, day, key) in files {
        sink.put(table, &key, &mut |w| tab.encode(&rollup, table, day, w))?;
    }
    Ok(())
}

/// [`write_tables_into`] memory: every file, encoded.
pub fn write_tables(
    source: &TableSource<'_>,
    inputs: &[TableProfileInput<'_, '_>],
) -> Result<Vec<TableObject>> {
    let mut objects = Vec::new();
    write_tables_into(source, inputs, &mut objects)?;
    Ok(objects)
}

impl TableSink for Vec<TableObject> {
    fn intend(&mut self, _keys: &[String]) -> Result<()> {
        Ok(())
    }

    fn put(&mut self, table: Table, key: &str, encode: &mut EncodeTable<'_>) -> Result<()> {
        let mut bytes = Vec::new();
        let rows = encode(&mut bytes)?;
        self.push(TableObject {
            table,
            key: key.to_owned(),
            rows,
            bytes,
        });
        Ok(())
    }
}
