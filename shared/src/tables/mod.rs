//! The stack tables: Arrow record batches built from the tables' plan, written as Parquet
//! (schema and layout in `docs/tables.md`).
//!
//! Every planned table profile becomes a `TableProfile` first (its call tree, series and day);
//! the tables are then read off those, whole for [`build_tables`] or one UTC day at a time for
//! [`write_tables`].

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

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::ops::Range;

use arrow_array::RecordBatch;

pub use read::{read_table_objects, read_tables, table_prefix};
pub use schema::{Table, TABLES_SCHEMA_VERSION};

use crate::error::Result;
use crate::plan::TableProfilePlan;
use crate::store::table_key;
use call_tree::stacks_batch;
use frames::frames_batch;
use partition::{day_of_us, dt};
use profiles::{profiles_batch, TableProfile};
use rollup::{rollup, rollup_batch, RollupKey, RollupSums};
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
        // The two tables as long as the profiles' call trees are built a slice at a time.
        match table {
            Table::Stacks => {
                let profiles = self.pick(&self.by_id, Some(day));
                let slices = slices(&profiles, |p| p.tree.stacks.len());
                let batches = slices.iter().map(|s| stacks_batch(source_id, s));
                return parquet_file::encode_batches(table, batches, out);
            }
            Table::Frames => {
                let profiles = self.pick(&self.by_id, Some(day));
                let slices = slices(&profiles, |p| p.tree.frames.len());
                let batches = slices.iter().map(|s| frames_batch(source_id, s));
                return parquet_file::encode_batches(table, batches, out);
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

    fn new(source: &'a TableSource<'a>, inputs: &'a [TableProfileInput<'a, 'a>]) -> Self {
        let profiles: Vec<TableProfile<'a>> = inputs
            .iter()
            .map(|c| TableProfile::new(source, c))
            .collect();
        let mut by_start: Vec<usize> = (0..profiles.len()).collect();
        by_start.sort_by_key(|&i| (profiles[i].start_us, profiles[i].profile_id()));
        let mut by_id: Vec<usize> = (0..profiles.len()).collect();
        by_id.sort_by_key(|&i| profiles[i].profile_id());
        Tabulation {
            source,
            profiles,
            by_start,
            by_id,
        }
    }

    /// The profiles in `order` (`by_start` or `by_id`), all of them or those of one day.
    fn pick(&self, order: &[usize], day: Option<i64>) -> Vec<&TableProfile<'a>> {
        order
            .iter()
            .map(|&i| &self.profiles[i])
            .filter(|p| day.is_none_or(|d| p.day == d))
            .collect()
    }

    /// Every sample row, in no particular order: for sums, which need no merge.
    fn rows_in_any_order(&self) -> impl Iterator<Item = SampleRow> + '_ {
        self.profiles.iter().enumerate().flat_map(|(profile, p)| {
            let samples = p.plan.profile.samples();
            p.plan.samples.iter().map(move |index| SampleRow {
                profile,
                time_us: samples.time(index as usize).map(profiles::micros),
                index: index as usize,
            })
        })
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
            Table::Stacks => {
                let whole = whole(&self.pick(&self.by_id, day), |p| p.tree.stacks.len());
                stacks_batch(self.source.source_id, &whole)
            }
            Table::Frames => {
                let whole = whole(&self.pick(&self.by_id, day), |p| p.tree.frames.len());
                frames_batch(self.source.source_id, &whole)
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

/// Rows `range` of one table profile's rows in a table.
type Segment<'a, 'p> = (&'a TableProfile<'p>, Range<usize>);

/// Every row of each profile, in order; `len` counts a profile's rows.
fn whole<'a, 'p>(
    profiles: &[&'a TableProfile<'p>],
    len: impl Fn(&TableProfile<'p>) -> usize,
) -> Vec<Segment<'a, 'p>> {
    profiles.iter().map(|&p| (p, 0..len(p))).collect()
}

/// The rows of `profiles`, in order, cut into slices of [`parquet_file::WRITE_BATCH_ROWS`]
/// (the last one shorter); `len` counts a profile's rows.
fn slices<'a, 'p>(
    profiles: &[&'a TableProfile<'p>],
    len: impl Fn(&TableProfile<'p>) -> usize,
) -> Vec<Vec<Segment<'a, 'p>>> {
    let mut slices = Vec::new();
    let (mut slice, mut room) = (Vec::new(), parquet_file::WRITE_BATCH_ROWS);
    for &p in profiles {
        let mut start = 0;
        while start < len(p) {
            let end = len(p).min(start + room);
            slice.push((p, start..end));
            room -= end - start;
            start = end;
            if room == 0 {
                slices.push(std::mem::take(&mut slice));
                room = parquet_file::WRITE_BATCH_ROWS;
            }
        }
    }
    if !slice.is_empty() {
        slices.push(slice);
    }
    slices
}

/// Builds the five tables of one upload from its planned profiles.
pub fn build_tables(
    source: &TableSource<'_>,
    inputs: &[TableProfileInput<'_, '_>],
) -> Result<TableBatches> {
    let tab = Tabulation::new(source, inputs);
    let rollup = rollup(&tab.profiles, tab.rows_in_any_order());
    let batch = |table| tab.batch(&rollup, table, None);
    Ok(TableBatches {
        profiles: batch(Table::Profiles)?,
        samples: batch(Table::Samples)?,
        stacks: batch(Table::Stacks)?,
        frames: batch(Table::Frames)?,
        function_rollup: batch(Table::FunctionRollup)?,
    })
}

/// Where an upload's table files go as they are encoded.
pub trait TableSink {
    /// Every file's key, told before any file is written.
    fn intend(&mut self, keys: &[String]) -> Result<()>;
    /// Stores one file of `table` at `key`: `encode` writes its Parquet bytes into the writer
    /// it is given, as they are produced, and says how many rows they hold.
    fn put(
        &mut self,
        table: Table,
        key: &str,
        encode: &mut dyn FnMut(&mut dyn Write) -> Result<u64>,
    ) -> Result<()>;
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
    let tab = Tabulation::new(source, inputs);
    let rollup = rollup(&tab.profiles, tab.rows_in_any_order());
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

    fn put(
        &mut self,
        table: Table,
        key: &str,
        encode: &mut dyn FnMut(&mut dyn Write) -> Result<u64>,
    ) -> Result<()> {
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
