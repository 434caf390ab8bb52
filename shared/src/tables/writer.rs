//! Writing an upload's tables a window at a time.
//!
//! The `samples` table is as long as the input, so each window's rows are encoded into the
//! day's open file as soon as the window is added. The other tables are a few rows per table
//! profile: what they need of each profile is kept, small, until [`TableWriter::finish`]
//! writes them sorted as `docs/tables.md` says. Windows of the grid are disjoint in time (and
//! in microseconds), so `samples` rows added window after window are in timestamp order, as
//! one merge of every row would put them.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::ops::Range;

use super::call_tree::CallTree;
use super::counters::{counter_rows, counters_batch, mark_days};
use super::parquet_file::{Encoder, WRITE_BATCH_ROWS};
use super::partition::{day_of_us, dt};
use super::profiles::{profiles_batch, Earlier, ProfileRow, TableProfile};
use super::rollup::{rollup_batch, LeafSums};
use super::rollup::{Rollup, RollupGroup, RollupKey, RollupSums};
use super::samples::{sample_rows, samples_batch};
use super::{tree_slices, tree_table, FileId, SinkFile, Table, TableProfileInput, TableSink};
use super::{TableSource, TABLES_SCHEMA_VERSION};
use crate::error::Result;
use crate::model::{Profile, StackHandle};
use crate::store::table_key;

/// What the tables keep of a table profile once its window is written.
struct Kept {
    /// Which model, by order of first use (see [`TableWriter::finish`]).
    model: usize,
    /// The leaves its call tree is built again from.
    leaves: Vec<StackHandle>,
    /// Its partition.
    day: i64,
    row: ProfileRow,
}

/// A table profile whose window is being added in parts ([`TableWriter::add_part`]): what
/// its next part goes on from, and its `profiles` row and rollup as they stand.
struct OpenProfile {
    profile_id: String,
    earlier: Earlier,
    model: usize,
    day: i64,
    row: ProfileRow,
    group: RollupGroup,
    sums: LeafSums,
}

/// A day's `samples` file, open while windows are added.
struct OpenFile {
    file: FileId,
    encoder: Encoder,
}

/// A table file encoded in memory, stored once the files before it are.
struct EncodedFile {
    table: Table,
    key: String,
    bytes: Vec<u8>,
    rows: u64,
}

impl EncodedFile {
    /// The file of `table` on `day` of `source`'s upload that `fill` fills.
    fn of(
        source: &TableSource<'_>,
        table: Table,
        day: i64,
        fill: &mut dyn FnMut(&mut Encoder, &mut dyn Write) -> Result<()>,
    ) -> Result<Self> {
        let mut encoder = Encoder::new(table)?;
        let mut bytes = Vec::new();
        fill(&mut encoder, &mut bytes)?;
        let rows = encoder.finish(&mut bytes)?;
        Ok(EncodedFile {
            table,
            key: file_key(source, table, day),
            bytes,
            rows,
        })
    }

    fn store(self, sink: &mut dyn TableSink) -> Result<()> {
        let file = sink.open(self.table, &self.key)?;
        sink.write(file, &self.bytes)?;
        sink.close(file, self.rows)
    }
}

/// Writes the tables of one upload: [`add`](TableWriter::add) each window's planned table
/// profiles (or all of them at once), then [`finish`](TableWriter::finish).
pub struct TableWriter<'s> {
    source: &'s TableSource<'s>,
    /// One file per table and UTC day; otherwise one file per table.
    by_day: bool,
    samples: BTreeMap<i64, OpenFile>,
    kept: Vec<Kept>,
    /// Profiles of a window being added in parts.
    open: Vec<OpenProfile>,
    rollup: Rollup,
    /// The models seen, by address, in order of first use.
    models: Vec<usize>,
    /// Whether `samples` batches are built on a thread of their own while the last ones are
    /// encoded.
    pipelined: bool,
}

impl<'s> TableWriter<'s> {
    /// A writer of one file per table and UTC day.
    pub fn new(source: &'s TableSource<'s>) -> Self {
        TableWriter {
            source,
            by_day: true,
            samples: BTreeMap::new(),
            kept: Vec::new(),
            open: Vec::new(),
            rollup: Rollup::default(),
            models: Vec::new(),
            pipelined: false,
        }
    }

    /// The same writer, building each `samples` batch on a thread of its own while the last
    /// ones are encoded when `pipelined`. The bytes are the same either way.
    pub fn pipelined(self, pipelined: bool) -> Self {
        TableWriter { pipelined, ..self }
    }

    /// A writer of one file per table, whatever the days of its rows.
    #[cfg(test)]
    pub(super) fn one_file_per_table(source: &'s TableSource<'s>) -> Self {
        TableWriter {
            by_day: false,
            ..TableWriter::new(source)
        }
    }

    /// The partition of rows on `day`.
    fn partition(&self, day: i64) -> i64 {
        if self.by_day {
            day
        } else {
            0
        }
    }

    fn key(&self, table: Table, day: i64) -> String {
        file_key(self.source, table, day)
    }

    /// The keys of the files `inputs` could give, in [`Table::ALL`] order: the four profile
    /// tables on each day a profile starts, `function_rollup` on each day from the first
    /// profile's start to the last one's end (its hours), and `counters` on each day a mark of
    /// their models falls on, so a store can be told of every key before the first is written.
    #[cfg(test)]
    pub fn keys(&self, inputs: &[TableProfileInput<'_, '_>]) -> Vec<String> {
        let day = |ns: i64| self.partition(day_of_us(super::profiles::micros(ns)));
        let starts: BTreeSet<i64> = inputs.iter().map(|i| day(i.plan.start_ns)).collect();
        let first = inputs.iter().map(|i| day(i.plan.start_ns)).min();
        let last = inputs.iter().map(|i| day(i.plan.end_ns)).max();
        let hours: BTreeSet<i64> = match (first, last) {
            (Some(first), Some(last)) => (first..=last).collect(),
            _ => BTreeSet::new(),
        };
        self.keys_of(&starts, &hours, &self.mark_days(&super::models_of(inputs)))
    }

    /// The partitions of the `counters` files the marks of `models` give.
    pub fn mark_days(&self, models: &[&Profile]) -> BTreeSet<i64> {
        let days = mark_days(models);
        days.into_iter().map(|day| self.partition(day)).collect()
    }

    /// The keys of the four profile tables on `profile_days`, of `function_rollup` on
    /// `rollup_days` and of `counters` on `mark_days`, in [`Table::ALL`] order.
    pub fn keys_of(
        &self,
        profile_days: &BTreeSet<i64>,
        rollup_days: &BTreeSet<i64>,
        mark_days: &BTreeSet<i64>,
    ) -> Vec<String> {
        Table::ALL
            .into_iter()
            .flat_map(|table| {
                let days = match table {
                    Table::FunctionRollup => rollup_days,
                    Table::Counters => mark_days,
                    _ => profile_days,
                };
                days.iter().map(move |&day| self.key(table, day))
            })
            .collect()
    }

    fn model(&mut self, profile: &Profile) -> usize {
        let address = std::ptr::from_ref(profile) as usize;
        match self.models.iter().position(|&m| m == address) {
            Some(i) => i,
            None => {
                self.models.push(address);
                self.models.len() - 1
            }
        }
    }

    /// Tabulates `inputs`, the table profiles of one window (or of every window): their
    /// `samples` rows are encoded into `sink` now, the rest is kept for
    /// [`finish`](TableWriter::finish). Windows must come in time order. A profile of a window
    /// added in parts before goes on from its parts and is complete; the window's other
    /// profiles wait for [`complete_window`](Self::complete_window).
    pub fn add<'a>(
        &mut self,
        inputs: &'a [TableProfileInput<'a, 'a>],
        sink: &mut dyn TableSink,
    ) -> Result<()>
    where
        's: 'a,
    {
        self.add_rows(inputs, sink, false)
    }

    /// Tabulates `inputs`, the samples of one window before some time, which later calls
    /// continue: the profiles' rows are encoded now, and each profile goes on in the next
    /// part with the ids, sums and bounds it has so far, so the window's rows are those it
    /// would have added whole. The window is complete with the next [`add`](Self::add).
    pub fn add_part<'a>(
        &mut self,
        inputs: &'a [TableProfileInput<'a, 'a>],
        sink: &mut dyn TableSink,
    ) -> Result<()>
    where
        's: 'a,
    {
        self.add_rows(inputs, sink, true)
    }

    fn add_rows<'a>(
        &mut self,
        inputs: &'a [TableProfileInput<'a, 'a>],
        sink: &mut dyn TableSink,
        continued: bool,
    ) -> Result<()>
    where
        's: 'a,
    {
        let mut profiles: Vec<TableProfile<'a>> = Vec::with_capacity(inputs.len());
        // The trees and sums of profiles whose window goes on in a later part.
        let mut going_on: Vec<(CallTree, LeafSums)> = Vec::new();
        for input in inputs {
            let open = self
                .open
                .iter()
                .position(|o| o.profile_id == input.plan.profile_id)
                .map(|at| self.open.swap_remove(at));
            let (earlier, earlier_sums) = match open {
                Some(o) => (Some(o.earlier), Some(o.sums)),
                None => (None, None),
            };
            let (profile, tree) = TableProfile::new(self.source, input, earlier);
            let mut sums = earlier_sums.unwrap_or_default();
            sums.add(&profile, &tree);
            if continued {
                going_on.push((tree, sums));
            } else {
                let by_function = sums.by_function(profile.profile, &tree);
                self.rollup.add(Rollup::group_of(&profile), by_function);
            }
            profiles.push(profile);
        }
        let days: BTreeSet<i64> = profiles.iter().map(|p| self.partition(p.day)).collect();
        for day in days {
            let file = match self.samples.get(&day) {
                Some(open) => open.file,
                None => {
                    let file = sink.open(Table::Samples, &self.key(Table::Samples, day))?;
                    let encoder = Encoder::new(Table::Samples)?;
                    self.samples.insert(day, OpenFile { file, encoder });
                    file
                }
            };
            let open = self.samples.get_mut(&day).expect("opened above");
            let by_day = self.by_day;
            let source_id = self.source.source_id;
            let profiles = &profiles;
            let batches = move || {
                let mut rows = sample_rows(profiles, move |p| !by_day || p.day == day).peekable();
                let mut group = Vec::with_capacity(WRITE_BATCH_ROWS);
                std::iter::from_fn(move || {
                    rows.peek()?;
                    group.clear();
                    group.extend(rows.by_ref().take(WRITE_BATCH_ROWS));
                    Some(samples_batch(source_id, profiles, &group))
                })
            };
            let mut out = SinkFile {
                sink: &mut *sink,
                file,
            };
            if !self.pipelined {
                for batch in batches() {
                    open.encoder.write(&batch?, &mut out)?;
                }
                continue;
            }
            // The rows of the next batches are gathered and built while this one is encoded; a
            // few batches wait at most.
            std::thread::scope(|scope| -> Result<()> {
                let (send, built) = std::sync::mpsc::sync_channel(2);
                scope.spawn(move || {
                    for batch in batches() {
                        // The encoder stopped: nothing is left to build for.
                        if send.send(batch).is_err() {
                            break;
                        }
                    }
                });
                for batch in built {
                    open.encoder.write(&batch?, &mut out)?;
                }
                Ok(())
            })?;
        }
        let mut going_on = going_on.into_iter();
        for p in profiles {
            let model = self.model(p.profile);
            let day = self.partition(p.day);
            let row = p.row();
            match going_on.next() {
                Some((mut tree, sums)) => {
                    let group = Rollup::group_of(&p);
                    tree.new_leaves = p.leaves;
                    self.open.push(OpenProfile {
                        profile_id: row.profile_id.clone(),
                        earlier: Earlier { tree, sums: p.sums },
                        model,
                        day,
                        row,
                        group,
                        sums,
                    });
                }
                None => self.kept.push(Kept {
                    model,
                    leaves: p.leaves,
                    day,
                    row,
                }),
            }
        }
        Ok(())
    }

    /// Completes the profiles of a window added in parts that its last part had no samples
    /// of; `profile` is their model.
    pub fn complete_window(&mut self, profile: &Profile) {
        for open in std::mem::take(&mut self.open) {
            let by_function = open.sums.by_function(profile, &open.earlier.tree);
            self.rollup.add(open.group, by_function);
            self.kept.push(Kept {
                model: open.model,
                leaves: open.earlier.tree.new_leaves,
                day: open.day,
                row: open.row,
            });
        }
    }

    /// Writes what is left: `profiles`, the `samples` files added to, `stacks`, `frames`,
    /// `function_rollup` and `counters` (the models' marks), in [`Table::ALL`] order, days
    /// ascending. `models` are the models of every input added, each with every stack and
    /// frame its samples reached and all its marks (in any order: they are told apart by
    /// address).
    pub fn finish(mut self, models: &[&Profile], sink: &mut dyn TableSink) -> Result<()> {
        // Windows added in parts are of one model, the upload's.
        if let Some(&model) = models.first() {
            self.complete_window(model);
        }
        let models: Vec<&Profile> = self
            .models
            .iter()
            .map(|&address| {
                let found = models
                    .iter()
                    .find(|m| std::ptr::from_ref(**m) as usize == address);
                *found.expect("the model of every input added is given")
            })
            .collect();
        let days: BTreeSet<i64> = self.kept.iter().map(|k| k.day).collect();
        let samples = std::mem::take(&mut self.samples);
        if !self.pipelined {
            self.store_profiles_and_samples(&days, samples, sink)?;
            for table in [Table::Stacks, Table::Frames] {
                tree_files(
                    self.source,
                    &self.kept,
                    table,
                    &days,
                    &models,
                    &mut |t, day, fill| self.file(t, day, sink, fill),
                )?;
            }
            return self.rollup_and_counters(&models, sink);
        }
        // The `stacks` and `frames` files are built and encoded on threads of their own while
        // the `profiles` and `samples` files are stored, then stored in turn: the same files in
        // the same order.
        let (source, kept, days, models) = (self.source, &self.kept, &days, &models);
        let encode = |table: Table| -> Result<Vec<EncodedFile>> {
            let mut files = Vec::new();
            tree_files(
                source,
                kept,
                table,
                days,
                models,
                &mut |table, day, fill| {
                    files.push(EncodedFile::of(source, table, day, fill)?);
                    Ok(())
                },
            )?;
            Ok(files)
        };
        let trees = std::thread::scope(|scope| -> Result<Vec<EncodedFile>> {
            let stacks = scope.spawn(|| encode(Table::Stacks));
            let frames = scope.spawn(|| encode(Table::Frames));
            let stored = self.store_profiles_and_samples(days, samples, sink);
            let join = |encoded: std::thread::ScopedJoinHandle<'_, Result<Vec<EncodedFile>>>| {
                encoded
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            };
            let (stacks, frames) = (join(stacks), join(frames));
            stored?;
            let mut files = stacks?;
            files.extend(frames?);
            Ok(files)
        })?;
        for file in trees {
            file.store(sink)?;
        }
        self.rollup_and_counters(models, sink)
    }

    /// Writes the `profiles` files on `days` and finishes the `samples` files.
    fn store_profiles_and_samples(
        &self,
        days: &BTreeSet<i64>,
        samples: BTreeMap<i64, OpenFile>,
        sink: &mut dyn TableSink,
    ) -> Result<()> {
        for &day in days {
            let mut rows: Vec<&ProfileRow> = self
                .kept
                .iter()
                .filter(|k| k.day == day)
                .map(|k| &k.row)
                .collect();
            rows.sort_by(|a, b| (a.start_us, &a.profile_id).cmp(&(b.start_us, &b.profile_id)));
            let batch = profiles_batch(self.source, &rows)?;
            self.file(Table::Profiles, day, sink, &mut |encoder, out| {
                encoder.write(&batch, out)
            })?;
        }
        for (_, open) in samples {
            let rows = open.encoder.finish(&mut SinkFile {
                sink,
                file: open.file,
            })?;
            sink.close(open.file, rows)?;
        }
        Ok(())
    }

    /// Writes `function_rollup` and `counters`, the last of the tables.
    fn rollup_and_counters(&self, models: &[&Profile], sink: &mut dyn TableSink) -> Result<()> {
        let source_id = self.source.source_id;
        let rollup = self.rollup.rows();
        let rollup_day = |r: &(RollupKey<'_>, RollupSums)| day_of_us(r.0.hour_us);
        for (day, range) in self.day_runs(&rollup, rollup_day) {
            let rows: Vec<_> = rollup[range].iter().map(|(k, s)| (k, s)).collect();
            let batch = rollup_batch(source_id, &rows)?;
            self.file(Table::FunctionRollup, day, sink, &mut |encoder, out| {
                encoder.write(&batch, out)
            })?;
        }
        self.write_counters(models, sink)
    }

    /// Writes the `counters` files of the marks of `models`, one per partition; none when
    /// they have no marks.
    fn write_counters(&self, models: &[&Profile], sink: &mut dyn TableSink) -> Result<()> {
        let source_id = self.source.source_id;
        let marks = counter_rows(models);
        for (day, range) in self.day_runs(&marks, |r| day_of_us(r.time_us)) {
            self.file(Table::Counters, day, sink, &mut |encoder, out| {
                for rows in marks[range.clone()].chunks(WRITE_BATCH_ROWS) {
                    encoder.write(&counters_batch(source_id, models, rows)?, out)?;
                }
                Ok(())
            })?;
        }
        Ok(())
    }

    /// The runs of `rows` (sorted by day) that share a partition, with the partition.
    fn day_runs<T>(&self, rows: &[T], day: impl Fn(&T) -> i64) -> Vec<(i64, Range<usize>)> {
        let mut runs: Vec<(i64, Range<usize>)> = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            let partition = self.partition(day(row));
            match runs.last_mut() {
                Some((last, range)) if *last == partition => range.end = i + 1,
                _ => runs.push((partition, i..i + 1)),
            }
        }
        runs
    }

    /// Writes one whole file of `table` on `day`: `fill` writes its rows into the encoder.
    fn file(
        &self,
        table: Table,
        day: i64,
        sink: &mut dyn TableSink,
        fill: &mut dyn FnMut(&mut Encoder, &mut dyn Write) -> Result<()>,
    ) -> Result<()> {
        let file = sink.open(table, &self.key(table, day))?;
        let mut encoder = Encoder::new(table)?;
        let mut out = SinkFile { sink, file };
        fill(&mut encoder, &mut out)?;
        let rows = encoder.finish(&mut out)?;
        sink.close(file, rows)
    }
}

/// What fills a table file: its encoder's batches, written to the file.
type Fill<'a> = dyn FnMut(&mut Encoder, &mut dyn Write) -> Result<()> + 'a;

/// The key of the file of `table` on `day` (a partition) of `source`'s upload.
fn file_key(source: &TableSource<'_>, table: Table, day: i64) -> String {
    let (version, name) = (TABLES_SCHEMA_VERSION, table.name());
    table_key(version, name, &dt(day), source.source_id)
}

/// Writes the files of `table` (`stacks` or `frames`) of the profiles kept, on `days`,
/// through `make` (the table, a day, and what fills its file).
fn tree_files(
    source: &TableSource<'_>,
    kept: &[Kept],
    table: Table,
    days: &BTreeSet<i64>,
    models: &[&Profile],
    make: &mut dyn FnMut(Table, i64, &mut Fill<'_>) -> Result<()>,
) -> Result<()> {
    let source_id = source.source_id;
    let (len, build) = tree_table(table);
    for &day in days {
        let mut of_day: Vec<&Kept> = kept.iter().filter(|k| k.day == day).collect();
        of_day.sort_by(|a, b| a.row.profile_id.cmp(&b.row.profile_id));
        let sources: Vec<_> = of_day
            .iter()
            .map(|k| {
                (
                    k.row.profile_id.as_str(),
                    models[k.model],
                    k.leaves.as_slice(),
                )
            })
            .collect();
        make(table, day, &mut |encoder, out| {
            tree_slices(&sources, len, &mut |segments| {
                encoder.write(&build(source_id, segments)?, out)
            })
        })?;
    }
    Ok(())
}
