//! The writers: one family that turns an upload's samples into its outputs, the Sample v2
//! chunks ([`sample_v2`]), the stack tables ([`crate::tables`]), the build-ID index
//! ([`build_id_index`]) and the [`manifest`] that lists them, all through [`outputs`], which
//! hashes and lists each object on its way to the store.
//!
//! [`Writers`] takes the samples a [`Piece`] at a time, whatever the sample source: an upload
//! decoded whole hands its samples over in one piece; a long recording's second pass hands them
//! over a few windows at a time, the model (frames, stacks, threads) already complete. Either
//! way each piece is planned on the upload's grid and written window by window: the window's
//! Sample v2 chunks, then its rows into the open `samples` files. The other tables, the
//! build-ID index and the manifest's counts are gathered across pieces and written at the end,
//! so both ways give the same bytes.
//!
//! An input that already is Sample v2 gives its chunks instead: each is stored as received
//! (rewritten only where symbols named its frames) and tabulated from its own model, under
//! its own platform, release and environment.

pub(crate) mod build_id_index;
pub(crate) mod manifest;
pub(crate) mod outputs;
pub(crate) mod sample_v2;
mod series;
mod tables;

use crate::error::{ErrorKind, Result};
use crate::metadata::UploadMetadata;
use crate::model::{Profile, SampleTable};
use crate::plan::{carried_series, left_out, plan_sample_v2_on, plan_tables, plan_tables_on};
use crate::plan::{ChunkPlan, Grid, SampleV2Plan, SeriesCoverage, TableProfilePlan, Timing};
use crate::symbolize::SymbolizeReport;
use crate::tables::{TableProfileInput, TableSource, TableWriter};
use build_id_index::{BuildIdIndexEntry, Reached};
use manifest::{ManifestExpansion, ManifestSampleV2, ManifestSeries};
use outputs::{ChunkOutputs, Outputs};
use sample_v2::{prepare_planned_chunk, SampleV2Chunk};
use series::SeriesTally;

/// What a sample source hands the writers at a time.
pub(crate) enum Piece<'p> {
    /// The samples the upload's model holds now, on `grid` (`None` when none has a time): all
    /// of windows no later piece adds to.
    Windows(Option<Grid>),
    /// The samples the upload's model holds now, all of one window before some time: the
    /// rest of the window comes with the next pieces.
    PartOfWindow(Option<Grid>),
    /// The Sample v2 chunks an input held, each with its own model: stored as received.
    Given {
        models: &'p [Profile],
        chunks: &'p mut [SampleV2Chunk],
    },
}

/// The outputs of an upload's samples, written as its pieces come.
pub(crate) struct Writers<'s> {
    metadata: &'s UploadMetadata,
    source_id: &'s str,
    tables: TableWriter<'s>,
    reached: Reached,
    /// One per model, in the order of the models `finish` is given.
    series: Vec<SeriesTally>,
    /// Table profiles written.
    table_profiles: u64,
    /// What the manifest says of the chunks.
    sample_v2: ManifestSampleV2,
    /// How the chunks' times were obtained when they were laid out from aggregated weights.
    expansion: Option<ManifestExpansion>,
    /// The samples of the series Sample v2 carries from the parts of a window added so far:
    /// Relay's rules are a whole chunk's, so its chunks are planned once the window is.
    held: SampleTable,
    /// Whether a window's parts have been added and its end not yet.
    window_open: bool,
    /// Threads the writing may use: with two or more, a piece's tables are encoded on a
    /// thread of their own while its chunks are written.
    threads: usize,
}

impl<'s> Writers<'s> {
    /// Writers of the outputs of the upload `source`, with its `metadata`, on `threads`
    /// threads (1: all on the caller's).
    pub fn new(source: &'s TableSource<'s>, metadata: &'s UploadMetadata, threads: usize) -> Self {
        Writers {
            metadata,
            source_id: source.source_id,
            tables: TableWriter::new(source).pipelined(threads > 1),
            reached: Reached::default(),
            series: Vec::new(),
            table_profiles: 0,
            sample_v2: ManifestSampleV2::default(),
            expansion: None,
            held: SampleTable::default(),
            window_open: false,
            threads,
        }
    }

    /// The keys outside the conversion's folder it may write, to tell a store before the
    /// first is written: the table files of profiles on `days` (UTC days since the epoch), the
    /// `counters` files of `profile`'s marks and the build-ID index entries its frames could
    /// give.
    pub fn keys(&self, days: std::ops::RangeInclusive<i64>, profile: &Profile) -> Vec<String> {
        let days = days.collect();
        let marks = self.tables.mark_days(&[profile]);
        let mut keys = self.tables.keys_of(&days, &days, &marks);
        keys.extend(index_keys(profile, self.source_id));
        keys
    }

    /// Threads the writing may use.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Writes the outputs of one piece; `profile` is the upload's model. Pieces must come in
    /// time order, each one's windows after the last one's.
    pub fn add(
        &mut self,
        profile: &mut Profile,
        piece: Piece<'_>,
        out: &mut Outputs,
    ) -> Result<()> {
        match piece {
            Piece::Windows(grid) => self.add_windows(profile, grid, out),
            Piece::PartOfWindow(grid) => self.add_part(profile, grid, out),
            Piece::Given { models, chunks } => self.add_given(models, chunks, out),
        }
    }

    /// Writes the outputs of the samples `profile` holds now, on `grid`.
    fn add_windows(
        &mut self,
        profile: &mut Profile,
        grid: Option<Grid>,
        out: &mut Outputs,
    ) -> Result<()> {
        if self.window_open {
            return self.complete_window(profile, grid, out);
        }
        if self.threads > 1 {
            return self.add_windows_on_threads(profile, grid, out);
        }
        let table_plans = self.plan_tables(profile, grid)?;
        let plan = plan_sample_v2_on(profile, self.metadata, self.source_id, grid)?;
        let mut chunks = self.chunks_of(profile, plan);
        let mut inputs = table_inputs(self.metadata, &table_plans);
        // Window by window: a window's chunks, then its tables' rows. Aggregated samples
        // (no window) come first, as the `samples` table sorts rows without a time first.
        inputs.sort_by_key(|i| i.plan.window);
        chunks.sort_by_key(|c| c.window);
        let untimed = inputs.partition_point(|i| i.plan.window.is_none());
        let (aggregated, mut timed) = inputs.split_at(untimed);
        let (mut chunk_out, mut table_out) = out.split();
        self.tables.add(aggregated, &mut table_out)?;
        let mut chunks = chunks.iter().peekable();
        while chunks.peek().is_some() || !timed.is_empty() {
            let next_chunk = chunks.peek().map(|c| c.window);
            let next_table = timed.first().and_then(|i| i.plan.window);
            let Some(window) = next_chunk.into_iter().chain(next_table).min() else {
                break;
            };
            // Each chunk is streamed to the sink as it is serialized; no chunk's JSON is held.
            while let Some(chunk_plan) = chunks.next_if(|c| c.window == window) {
                write_chunk(
                    self.metadata,
                    self.source_id,
                    &mut self.sample_v2,
                    chunk_plan,
                    &mut chunk_out,
                )?;
            }
            let n = timed.partition_point(|i| i.plan.window == Some(window));
            self.tables.add(&timed[..n], &mut table_out)?;
            timed = &timed[n..];
        }
        Ok(())
    }

    /// [`add_windows`](Self::add_windows) on two threads: the tables' plans and rows on a
    /// thread of their own, the chunks' on this one, each in window order. The bytes are those
    /// of writing them in turn.
    fn add_windows_on_threads(
        &mut self,
        profile: &Profile,
        grid: Option<Grid>,
        out: &mut Outputs,
    ) -> Result<()> {
        let Writers {
            metadata,
            source_id,
            tables,
            reached,
            series,
            table_profiles,
            sample_v2,
            expansion,
            ..
        } = self;
        let (metadata, source_id) = (*metadata, *source_id);
        let tally = upload_tally(series);
        let (mut chunk_out, mut table_out) = out.split();
        let (tabled, written, coverage) = std::thread::scope(|scope| {
            let tabled = scope.spawn(|| -> Result<()> {
                let plans = plan_tables_counted(profile, source_id, grid, tally, reached)?;
                *table_profiles += plans.len() as u64;
                let mut inputs = table_inputs(metadata, &plans);
                // Aggregated samples (no window) first, as the `samples` table sorts rows
                // without a time first.
                inputs.sort_by_key(|i| i.plan.window);
                let mut rest = &inputs[..];
                while let Some(window) = rest.first().map(|i| i.plan.window) {
                    let n = rest.partition_point(|i| i.plan.window == window);
                    tables.add(&rest[..n], &mut table_out)?;
                    rest = &rest[n..];
                }
                Ok(())
            });
            let mut coverage = Vec::new();
            let written =
                plan_sample_v2_on(profile, metadata, source_id, grid).and_then(|mut plan| {
                    coverage = std::mem::take(&mut plan.series);
                    let mut chunks = take_chunks(plan, sample_v2, expansion);
                    chunks.sort_by_key(|c| c.window);
                    write_chunks(metadata, source_id, sample_v2, &chunks, &mut chunk_out, 2)
                });
            (join(tabled), written, coverage)
        });
        // The tables' plans come first when written in turn: so do their errors.
        tabled.and(written)?;
        self.tally().cover(profile, &coverage);
        Ok(())
    }

    /// Writes the table rows of the samples `profile` holds now, all of one window before
    /// some time, whose later samples come with the next pieces: a window too large to hold
    /// whole is written in parts. The samples of the series Sample v2 carries are held until
    /// the window is complete.
    fn add_part(&mut self, profile: &Profile, grid: Option<Grid>, out: &mut Outputs) -> Result<()> {
        let table_plans = self.plan_tables(profile, grid)?;
        let inputs = table_inputs(self.metadata, &table_plans);
        self.window_open = true;
        let (tables, held) = (&mut self.tables, &mut self.held);
        let mut table_out = out.tables();
        let not_carried = if self.threads > 1 {
            // The part's table rows on a thread of their own while its samples are held.
            let (tabled, not_carried) = std::thread::scope(|scope| {
                let tabled = scope.spawn(|| tables.add_part(&inputs, &mut table_out));
                let not_carried = hold_carried(profile, held);
                (join(tabled), not_carried)
            });
            tabled?;
            not_carried
        } else {
            let not_carried = hold_carried(profile, held);
            tables.add_part(&inputs, &mut table_out)?;
            not_carried
        };
        self.tally().cover(profile, &not_carried);
        Ok(())
    }

    /// [`add_windows`](Self::add_windows) after parts: the tables complete the window's profiles, then its
    /// chunks are planned from the samples held and the rest of the window (and those of any
    /// window after it in the piece).
    fn complete_window(
        &mut self,
        profile: &mut Profile,
        grid: Option<Grid>,
        out: &mut Outputs,
    ) -> Result<()> {
        // The held samples are all earlier than the piece's: together they are in time order.
        let mut window = std::mem::take(&mut self.held);
        {
            let table_plans = self.plan_tables(profile, grid)?;
            let inputs = table_inputs(self.metadata, &table_plans);
            let (tables, threads) = (&mut self.tables, self.threads);
            let profile: &Profile = profile;
            let mut table_out = out.tables();
            let mut tabulate = || -> Result<()> {
                tables.add(&inputs, &mut table_out)?;
                tables.complete_window(profile);
                Ok(())
            };
            if threads > 1 {
                // The window's last table rows on a thread of their own while its samples are
                // gathered for the chunks.
                std::thread::scope(|scope| {
                    let tabled = scope.spawn(tabulate);
                    window.extend_from(profile.samples());
                    join(tabled)
                })?;
            } else {
                tabulate()?;
                window.extend_from(profile.samples());
            }
        }
        self.window_open = false;
        drop(profile.replace_samples(window));
        let plan = plan_sample_v2_on(profile, self.metadata, self.source_id, grid)?;
        let mut chunks = self.chunks_of(profile, plan);
        chunks.sort_by_key(|c| c.window);
        let mut chunk_out = out.chunks();
        write_chunks(
            self.metadata,
            self.source_id,
            &mut self.sample_v2,
            &chunks,
            &mut chunk_out,
            self.threads,
        )
    }

    /// The table profiles of the samples `profile` holds now, counted in the tally, the
    /// build IDs they reach and the profiles written.
    fn plan_tables<'p>(
        &mut self,
        profile: &'p Profile,
        grid: Option<Grid>,
    ) -> Result<Vec<TableProfilePlan<'p>>> {
        let (tally, reached) = (upload_tally(&mut self.series), &mut self.reached);
        let table_plans = plan_tables_counted(profile, self.source_id, grid, tally, reached)?;
        self.table_profiles += table_plans.len() as u64;
        Ok(table_plans)
    }

    /// The tally of the upload's model.
    fn tally(&mut self) -> &mut SeriesTally {
        upload_tally(&mut self.series)
    }

    /// Counts what `plan` carries of `profile`'s samples and gives its chunks.
    fn chunks_of<'p>(&mut self, profile: &Profile, plan: SampleV2Plan<'p>) -> Vec<ChunkPlan<'p>> {
        self.tally().cover(profile, &plan.series);
        take_chunks(plan, &mut self.sample_v2, &mut self.expansion)
    }

    /// Writes the Sample v2 chunks an input held, each as received, and tabulates each from
    /// `models`, its own model, under its own platform, release and environment.
    fn add_given(
        &mut self,
        models: &[Profile],
        chunks: &mut [SampleV2Chunk],
        out: &mut Outputs,
    ) -> Result<()> {
        let mut table_plans = Vec::with_capacity(chunks.len());
        for (profile, chunk) in models.iter().zip(chunks.iter()) {
            let identity = format!("{}/{}", self.source_id, chunk.chunk_id);
            table_plans.push(plan_tables(profile, &identity)?);
        }
        for chunk in chunks.iter_mut() {
            self.sample_v2.chunks += 1;
            self.sample_v2.samples += chunk.samples as u64;
            out.chunks().chunk(self.source_id, chunk)?;
        }
        let mut inputs = Vec::new();
        for ((profile, plans), chunk) in models.iter().zip(&table_plans).zip(chunks.iter()) {
            let mut series = SeriesTally::new(false);
            series.add(profile, plans, &[]);
            self.series.push(series);
            for plan in plans {
                self.reached.reach(plan);
                inputs.push(TableProfileInput {
                    plan,
                    platform: Some(&chunk.platform),
                    release: chunk.release.as_deref(),
                    environment: chunk.environment.as_deref(),
                });
            }
        }
        self.table_profiles += inputs.len() as u64;
        self.tables.add(&inputs, &mut out.tables())
    }

    /// Writes the rest of the tables and the build-ID index; gives the manifest's series and
    /// what it says of the chunks. `models` are the models the pieces came from (one, but for
    /// chunks given whole), with their frames as the tables hold them.
    pub fn finish(
        mut self,
        models: &[&Profile],
        index: IndexOf<'_>,
        out: &mut Outputs,
    ) -> Result<(Vec<ManifestSeries>, ManifestSampleV2)> {
        if self.table_profiles == 0 {
            return Err(ErrorKind::NoSamples {
                why: "the input holds no observations".into(),
            }
            .into());
        }
        if self.sample_v2.chunks > 0 {
            self.sample_v2.why_none = None;
        }
        self.sample_v2.expansion = self.expansion.take();
        self.tables.finish(models, &mut out.tables())?;
        out.join_tables();
        let entries = self.reached.index(
            models,
            index.source_key,
            self.source_id,
            index.manifest_key,
            index.symbolization,
        );
        for (key, entry) in &entries {
            out.index_entry(key, entry)?;
        }
        let mut series = Vec::new();
        for (tally, profile) in self.series.iter().zip(models) {
            tally.merge_into(profile, &mut series);
        }
        Ok((series, self.sample_v2))
    }
}

/// The tally of the upload's model among `series`, made when first needed (chunks given
/// whole have one tally per chunk instead).
fn upload_tally(series: &mut Vec<SeriesTally>) -> &mut SeriesTally {
    if series.is_empty() {
        series.push(SeriesTally::new(true));
    }
    &mut series[0]
}

/// Holds the samples of `profile` of the series Sample v2 carries in `held`; gives what is left
/// out of the others (by series index).
fn hold_carried(profile: &Profile, held: &mut SampleTable) -> Vec<SeriesCoverage> {
    let carried = carried_series(profile);
    let mut not_carried = vec![SeriesCoverage::default(); carried.len()];
    let samples = profile.samples();
    if carried.iter().all(|&c| c) {
        held.extend_from(samples);
        return not_carried;
    }
    for i in 0..samples.len() {
        let sample = samples.get(i);
        let series = sample.series.index();
        if carried[series] {
            held.push(sample);
        } else {
            let left_out = &mut not_carried[series].left_out;
            *left_out.entry(left_out::SERIES_NOT_CARRIED).or_default() += 1;
        }
    }
    not_carried
}

/// What a scoped thread gave, or its panic again.
fn join<T>(thread: std::thread::ScopedJoinHandle<'_, T>) -> T {
    thread
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// The table profiles of the samples `profile` holds now, on `grid`, counted in `tally`, with
/// the build IDs they reach.
fn plan_tables_counted<'p>(
    profile: &'p Profile,
    source_id: &str,
    grid: Option<Grid>,
    tally: &mut SeriesTally,
    reached: &mut Reached,
) -> Result<Vec<TableProfilePlan<'p>>> {
    let table_plans = plan_tables_on(profile, source_id, grid)?;
    tally.observe(profile, &table_plans);
    for p in &table_plans {
        reached.reach(p);
    }
    Ok(table_plans)
}

/// The table inputs of `plans`, under the upload's platform, release and environment.
fn table_inputs<'p>(
    metadata: &'p UploadMetadata,
    plans: &'p [TableProfilePlan<'p>],
) -> Vec<TableProfileInput<'p, 'p>> {
    plans
        .iter()
        .map(|plan| TableProfileInput {
            plan,
            platform: metadata.platform.as_deref(),
            release: metadata.release.as_deref(),
            environment: metadata.environment.as_deref(),
        })
        .collect()
}

/// The chunks of `plan`, with what the manifest says of them noted in `sample_v2` and
/// `expansion`.
fn take_chunks<'p>(
    plan: SampleV2Plan<'p>,
    sample_v2: &mut ManifestSampleV2,
    expansion: &mut Option<ManifestExpansion>,
) -> Vec<ChunkPlan<'p>> {
    if sample_v2.why_none.is_none() {
        sample_v2.why_none = plan.why_none;
    }
    let chunks = plan.chunks;
    *expansion = match chunks.first().map(|c| c.timing) {
        Some(Timing::Expanded {
            interval_ns,
            scaled_from,
        }) => Some(ManifestExpansion {
            interval_ns,
            scaled_from,
            source: None,
        }),
        Some(Timing::Spans {
            interval_ns,
            scaled_from,
        }) => Some(ManifestExpansion {
            interval_ns,
            scaled_from,
            source: Some("spans".into()),
        }),
        _ => expansion.take(),
    };
    chunks
}

/// Serializes the planned chunks of the upload `source_id` into `out`, in order, counted in
/// `counts`: with two or more `threads`, the later half on a thread and lane of their own
/// while the first half is written (listed and stored in the same order).
fn write_chunks(
    metadata: &UploadMetadata,
    source_id: &str,
    counts: &mut ManifestSampleV2,
    chunks: &[ChunkPlan<'_>],
    out: &mut ChunkOutputs,
    threads: usize,
) -> Result<()> {
    if threads < 2 || chunks.len() < 2 {
        return chunks
            .iter()
            .try_for_each(|c| write_chunk(metadata, source_id, counts, c, out));
    }
    let (first, later) = chunks.split_at(chunks.len() / 2);
    let mut later_counts = ManifestSampleV2::default();
    out.beside(|out, lane| {
        std::thread::scope(|scope| {
            let later_counts = &mut later_counts;
            let beside = scope.spawn(move || {
                later
                    .iter()
                    .try_for_each(|c| write_chunk(metadata, source_id, later_counts, c, lane))
            });
            let written = first
                .iter()
                .try_for_each(|c| write_chunk(metadata, source_id, counts, c, out));
            written.and(join(beside))
        })
    })?;
    counts.chunks += later_counts.chunks;
    counts.samples += later_counts.samples;
    Ok(())
}

/// Serializes one planned chunk of the upload `source_id` into `out`, counted in `counts`.
fn write_chunk(
    metadata: &UploadMetadata,
    source_id: &str,
    counts: &mut ManifestSampleV2,
    chunk_plan: &ChunkPlan<'_>,
    out: &mut ChunkOutputs,
) -> Result<()> {
    let chunk = prepare_planned_chunk(metadata, chunk_plan)?;
    counts.chunks += 1;
    counts.samples += chunk.info().samples as u64;
    out.prepared_chunk(source_id, &chunk)
}

/// What the build-ID index entries name besides the frames.
pub(crate) struct IndexOf<'a> {
    pub source_key: &'a str,
    pub manifest_key: &'a str,
    pub symbolization: &'a SymbolizeReport,
}

/// The build-ID index keys `profile`'s frames could give: every image with frames left for
/// symbolization, whether or not a sample reaches them, to tell a store before they are
/// written.
fn index_keys(profile: &Profile, source_id: &str) -> Vec<String> {
    let mut reached = Reached::default();
    reached.reach_all(profile);
    let symbolization = SymbolizeReport::default();
    let entries: Vec<(String, BuildIdIndexEntry)> =
        reached.index(&[profile], "", source_id, "", &symbolization);
    entries.into_iter().map(|(key, _)| key).collect()
}
