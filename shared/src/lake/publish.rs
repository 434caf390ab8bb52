//! Publishing: bringing the lake in line with the landing tier for a set of upload keys, in
//! one commit per table for the whole batch.
//!
//! For each key the landing tier's current conversion is compared with the key's record
//! (`ledger.rs`). Keys whose record already names that conversion are left alone, so a
//! repeated publish writes nothing. For the rest (the work), each table in turn:
//!
//! 1. finds the active files, in the partitions the work's conversions have or had rows in,
//!    that hold rows of any of them (bloom filter on `source_id`, then the column itself);
//! 2. writes those files again without those rows, and the landing rows of the conversions
//!    that are current;
//! 3. commits the new files and the removal of the old ones as one version, fenced against
//!    concurrent publishers; on a conflict it plans again on the new version.

use std::collections::{BTreeMap, BTreeSet};

use deltalake::kernel::{Add, Remove};
use deltalake::DeltaTable;
use rustc_hash::FxHashSet;
use serde::Serialize;

use super::copy::RowGroupCopier;
use super::delta::{info, publish_operation, Committed};
use super::files::landing_batches;
use super::landing::{self, Conversion, Landing, LandingFile};
use super::ledger::{self, BatchRecord, Held, Record};
use super::schema::{lake_error, with_partition};
use super::{now_ms, parallel, Lake};
use crate::error::{error_chain, Result};
use crate::store::{
    key_id, key_id_of_published, unpublishable_report_key, ObjectStore, PUBLISHED_PREFIX,
};
use crate::tables::Table;

/// Which upload keys to publish.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PublishScope {
    /// Every key with a conversion, and every key the lake holds rows of (the sweep).
    All,
    /// These upload keys.
    Keys(Vec<String>),
    /// The keys of the conversions whose manifests are at these keys (manifest events).
    Manifests(Vec<String>),
}

/// A conversion that could not be published.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Quarantined {
    /// The upload key.
    pub key: String,
    /// Why, in the error's words.
    pub error: String,
    /// Its stable name (`unpublishable`).
    pub reason: String,
}

/// What a publish did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PublishReport {
    /// Upload keys looked at.
    pub keys: u64,
    /// Keys whose lake rows were already those of their current conversion.
    pub up_to_date: u64,
    /// Conversions whose rows were added (new, or replacing an earlier conversion's).
    pub published: u64,
    /// Of those, conversions that replaced rows the lake held for their key.
    pub replaced: u64,
    /// Keys with no conversion any more whose rows were removed.
    pub removed: u64,
    /// Rows added from landing files.
    pub rows: u64,
    /// Data files added (new rows, and files written again without replaced rows).
    pub files_added: u64,
    /// Data files removed.
    pub files_removed: u64,
    /// Commits made (at most one per table).
    pub commits: u64,
    /// Commits planned again after another writer committed first.
    pub commit_retries: u64,
    /// Manifests whose conversion is still settling its key: publish them again later.
    pub settling: Vec<String>,
    /// Conversions that cannot be published (a report is under `lake/_quarantine/`).
    pub quarantined: Vec<Quarantined>,
    /// Longest time from a published manifest's write to its commit, in milliseconds.
    pub max_lag_ms: Option<i64>,
}

/// One attempt at a table's commit.
struct TableChange {
    adds: Vec<Add>,
    removes: Vec<Remove>,
    /// Source ids whose rows the removed files held.
    replaced: BTreeSet<String>,
    /// Landing rows added.
    rows: u64,
}

/// Records of batches that did not complete, by their keys.
type Unfinished = Vec<(String, BatchRecord)>;

/// One key to bring in line.
struct Work {
    key_id: String,
    /// The conversion to publish, or none to only remove.
    want: Option<Conversion>,
    /// The key's record before this batch.
    had: Record,
}

impl Work {
    /// Every conversion whose rows may be in the lake or must be: all are searched for.
    fn searched(&self) -> impl Iterator<Item = &Held> {
        self.had
            .possibly_held()
            .chain(self.want.iter().map(|c| &c.held))
    }
}

impl Lake {
    /// Brings the lake in line with the landing tier in `outputs` for `scope`'s keys
    /// (`uploads` is where the uploads are, for manifests whose key is still settling).
    pub fn publish(
        &self,
        uploads: &dyn ObjectStore,
        outputs: &dyn ObjectStore,
        scope: &PublishScope,
    ) -> Result<PublishReport> {
        let mut report = PublishReport::default();
        let (work, unfinished) = self.plan(uploads, outputs, scope, &mut report)?;
        if work.is_empty() {
            remove_batches(outputs, unfinished.iter().map(|(k, _)| k.as_str()))?;
            return Ok(report);
        }
        let batch = now_ms();
        let record = BatchRecord {
            keys: work
                .iter()
                .map(|w| (w.key_id.clone(), w.searched().cloned().collect()))
                .collect(),
        };
        let batch_key = ledger::write_batch(
            outputs,
            &format!("{batch}-{}", uuid::Uuid::new_v4()),
            &record,
        )?;
        for table in Table::ALL {
            self.publish_table(outputs, table, &work, batch, &mut report)?;
        }
        self.record_batch(outputs, &work, &mut report)?;
        let done = unfinished.iter().map(|(k, _)| k.as_str());
        remove_batches(outputs, done.chain([batch_key.as_str()]))?;
        Ok(report)
    }

    /// The work of a batch: every key of `scope` and of the batches that did not complete
    /// (returned with their records' keys) whose lake rows must change, with its landing files
    /// checked; conversions that cannot be published are quarantined.
    fn plan(
        &self,
        uploads: &dyn ObjectStore,
        outputs: &dyn ObjectStore,
        scope: &PublishScope,
        report: &mut PublishReport,
    ) -> Result<(Vec<Work>, Unfinished)> {
        let mut key_ids = self.key_ids(uploads, outputs, scope, report)?;
        // Batches that did not complete: every key they name is published again, and the
        // conversions they name are searched for.
        let unfinished = ledger::read_batches(outputs)?;
        let mut left: BTreeMap<&str, Vec<Held>> = BTreeMap::new();
        for (_, record) in &unfinished {
            for (key_id, held) in &record.keys {
                key_ids.insert(key_id.clone());
                left.entry(key_id).or_default().extend(held.iter().cloned());
            }
        }
        let key_ids: Vec<String> = key_ids.into_iter().collect();
        let mut work = Vec::new();
        let plans = parallel::map(self.in_flight(), &key_ids, |id| {
            let left = left.get(id.as_str()).map_or(&[][..], Vec::as_slice);
            plan_key(outputs, id, left)
        });
        for planned in plans {
            report.keys += 1;
            match planned? {
                Planned::Work(w) => work.push(*w),
                Planned::UpToDate => report.up_to_date += 1,
                Planned::Unpublishable(q) => report.quarantined.push(q),
            }
        }
        // Every landing file is checked before any table is touched, so a bad conversion is
        // quarantined rather than published into some tables and not others.
        let checks = parallel::map(self.in_flight(), &work, |w| check_files(outputs, w));
        let mut checked = Vec::with_capacity(work.len());
        for (w, check) in work.into_iter().zip(checks) {
            match check {
                Ok(()) => checked.push(w),
                Err(e) => quarantine(outputs, &w, &e, report),
            }
        }
        Ok((checked, unfinished))
    }

    /// After every table committed: counts what the batch did, and writes each key's record.
    fn record_batch(
        &self,
        outputs: &dyn ObjectStore,
        work: &[Work],
        report: &mut PublishReport,
    ) -> Result<()> {
        let now_ms = now_ms();
        for w in work {
            let Some(c) = &w.want else {
                report.removed += 1;
                continue;
            };
            report.published += 1;
            let differs = |h: &Held| {
                h.source_id != c.held.source_id || h.manifest_sha256 != c.held.manifest_sha256
            };
            if w.had.possibly_held().any(differs) {
                report.replaced += 1;
            }
            if let Some(written) = c.manifest_written_ms {
                let lag = now_ms.saturating_sub(written);
                report.max_lag_ms = Some(report.max_lag_ms.map_or(lag, |m| m.max(lag)));
            }
        }
        let recorded = parallel::map(self.in_flight(), work, |w| match &w.want {
            Some(c) => ledger::write(
                outputs,
                &w.key_id,
                &Record {
                    key: c.key.clone(),
                    published: Some(c.held.clone()),
                    pending: Vec::new(),
                },
            ),
            None => ledger::remove(outputs, &w.key_id),
        });
        recorded.into_iter().collect::<Result<Vec<()>>>()?;
        Ok(())
    }

    /// Drops the lake (tables and records) and publishes every conversion again.
    pub fn rebuild(
        &self,
        uploads: &dyn ObjectStore,
        outputs: &dyn ObjectStore,
    ) -> Result<PublishReport> {
        for table in Table::ALL {
            let url = self.table_url(table);
            if let Ok(path) = url.to_file_path() {
                match std::fs::remove_dir_all(&path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(crate::error::from_io(&path.display().to_string(), e)),
                }
            } else {
                return Err(lake_error(url.as_str(), "rebuild is only for a local lake"));
            }
        }
        for key in outputs.list(PUBLISHED_PREFIX)? {
            outputs.delete(&key)?;
        }
        self.publish(uploads, outputs, &PublishScope::All)
    }

    /// The key ids `scope` names, sorted and without repeats.
    fn key_ids(
        &self,
        uploads: &dyn ObjectStore,
        outputs: &dyn ObjectStore,
        scope: &PublishScope,
        report: &mut PublishReport,
    ) -> Result<BTreeSet<String>> {
        let mut ids = BTreeSet::new();
        match scope {
            PublishScope::All => {
                ids.extend(landing::key_ids(outputs)?);
                for record in outputs.list(PUBLISHED_PREFIX)? {
                    ids.extend(key_id_of_published(&record).map(str::to_owned));
                }
            }
            PublishScope::Keys(keys) => ids.extend(keys.iter().map(|k| key_id(k))),
            PublishScope::Manifests(manifests) => {
                for manifest_key in manifests {
                    match landing::key_of_manifest(uploads, outputs, manifest_key) {
                        Ok(Some((_, true))) => report.settling.push(manifest_key.clone()),
                        Ok(Some((id, false))) => {
                            ids.insert(id);
                        }
                        Ok(None) => {}
                        Err(e) if matches!(e.kind(), crate::ErrorKind::Unpublishable { .. }) => {
                            report.quarantined.push(Quarantined {
                                key: manifest_key.clone(),
                                error: error_chain(&e),
                                reason: e.kind().reason().into(),
                            });
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        Ok(ids)
    }

    /// Brings `table` in line for `work` in one commit.
    fn publish_table(
        &self,
        outputs: &dyn ObjectStore,
        table: Table,
        work: &[Work],
        batch: i64,
        report: &mut PublishReport,
    ) -> Result<()> {
        let ids: FxHashSet<&str> = work
            .iter()
            .flat_map(Work::searched)
            .map(|h| h.source_id.as_str())
            .collect();
        let dts: BTreeSet<String> = work
            .iter()
            .flat_map(Work::searched)
            .flat_map(|h| h.partitions.get(table.name()).into_iter().flatten())
            .cloned()
            .collect();
        let mut delta = self.open(table)?;
        for attempt in 0..self.settings.max_commit_attempts {
            if attempt > 0 {
                report.commit_retries += 1;
            }
            let fence = self.fence_of(&delta)?.map_or(batch, |f| batch.max(f + 1));
            let change = self.table_change(outputs, table, work, &delta, &ids, &dts)?;
            if change.adds.is_empty() && change.removes.is_empty() {
                return Ok(());
            }
            let (files_added, files_removed) =
                (change.adds.len() as u64, change.removes.len() as u64);
            let metadata = info(&[
                ("proflake.batch", batch.into()),
                ("proflake.uploads", (work.len() as u64).into()),
                ("proflake.rows_added", change.rows.into()),
            ]);
            let adds = change.adds.clone();
            let operation = publish_operation(&change.replaced);
            match self.commit(
                &mut delta,
                change.adds,
                change.removes,
                operation,
                Some(fence),
                metadata,
            )? {
                Committed::Version(version) => {
                    tracing::info!(
                        table = table.name(),
                        version,
                        uploads = work.len(),
                        rows = change.rows,
                        files_added,
                        files_removed,
                        "lake commit"
                    );
                    report.commits += 1;
                    report.rows += change.rows;
                    report.files_added += files_added;
                    report.files_removed += files_removed;
                    return Ok(());
                }
                Committed::Conflict => self.discard(&delta, &adds),
            }
        }
        Err(lake_error(
            self.table_url(table).as_str(),
            format!(
                "gave up after {} commits conflicting with other writers",
                self.settings.max_commit_attempts
            ),
        ))
    }

    /// One attempt at `table`'s commit, planned on `delta`'s version: the files holding rows
    /// of `ids` in the partitions `dts`, written again without them, and the work's landing
    /// rows added.
    fn table_change(
        &self,
        outputs: &dyn ObjectStore,
        table: Table,
        work: &[Work],
        delta: &DeltaTable,
        ids: &FxHashSet<&str>,
        dts: &BTreeSet<String>,
    ) -> Result<TableChange> {
        let mut writer = self.writer(table, delta)?;
        let mut removes = Vec::new();
        let mut replaced = BTreeSet::new();
        for file in self.active_files(delta, Some(dts))? {
            let data = self.lake_file(delta, &file)?;
            if !data.may_hold(ids)? {
                continue;
            }
            let held = data.ids_held(ids)?;
            if held.is_empty() {
                continue;
            }
            for batch in data.batches_without(table, &file.dt, ids)? {
                writer.write(self, batch?)?;
            }
            removes.push(file.remove.clone());
            replaced.extend(held);
        }
        let kept = writer.rows();
        // Landing files are copied a row group at a time; one of another writer's columns is
        // decoded and written.
        let mut copier = RowGroupCopier::new(self, table, delta.log_store().object_store(None));
        let files: Vec<(&Conversion, &LandingFile)> = work
            .iter()
            .filter_map(|w| w.want.as_ref())
            .flat_map(|c| {
                c.files
                    .iter()
                    .filter(|f| f.table == table)
                    .map(move |f| (c, f))
            })
            .collect();
        // Read several at a time, a bounded slice of the batch after another, in order.
        for slice in prefetch_slices(&files) {
            let read = parallel::map(self.in_flight(), slice, |(c, f)| {
                landing::read_file(outputs, c, f)
            });
            for ((_, file), bytes) in slice.iter().zip(read) {
                let bytes = bytes?;
                if copier.copy(&file.key, &file.dt, &bytes)? {
                    continue;
                }
                for rows in landing_batches(table, &file.key, bytes)? {
                    writer.write(self, with_partition(table, &rows, &file.dt)?)?;
                }
            }
        }
        let rows = writer.rows() - kept + copier.rows();
        let mut adds = writer.finish(self)?;
        adds.extend(copier.finish()?);
        Ok(TableChange {
            adds,
            removes,
            replaced,
            rows,
        })
    }
}

/// What one key needs.
enum Planned {
    /// Its lake rows must change.
    Work(Box<Work>),
    /// Its lake rows are its current conversion's.
    UpToDate,
    /// Its conversion's manifest cannot be read.
    Unpublishable(Quarantined),
}

/// Removes the records of batches whose keys are all up to date now.
fn remove_batches<'k>(
    outputs: &dyn ObjectStore,
    keys: impl Iterator<Item = &'k str>,
) -> Result<()> {
    for key in keys {
        outputs.delete(key)?;
    }
    Ok(())
}

/// What the key needs; `left` names conversions a batch that did not complete may have left.
fn plan_key(outputs: &dyn ObjectStore, key_id: &str, left: &[Held]) -> Result<Planned> {
    let mut had = ledger::read(outputs, key_id)?.unwrap_or_default();
    for held in left {
        if !had.pending.contains(held) {
            had.pending.push(held.clone());
        }
    }
    let want = match landing::current(outputs, key_id) {
        Ok(Landing::Current(c)) => Some(c),
        Ok(Landing::Gone) => None,
        Err(e) if matches!(e.kind(), crate::ErrorKind::Unpublishable { .. }) => {
            return Ok(Planned::Unpublishable(Quarantined {
                key: key_id.to_owned(),
                error: error_chain(&e),
                reason: e.kind().reason().into(),
            }));
        }
        Err(e) => return Err(e),
    };
    let up_to_date =
        had.pending.is_empty() && had.published.as_ref() == want.as_ref().map(|c| &c.held);
    if up_to_date {
        return Ok(Planned::UpToDate);
    }
    Ok(Planned::Work(Box::new(Work {
        key_id: key_id.to_owned(),
        want,
        had,
    })))
}

/// Landing files read ahead at most, and their bytes at most.
const PREFETCH_FILES: usize = 4 * parallel::IN_FLIGHT;
const PREFETCH_BYTES: u64 = 64 << 20;

/// `files` cut into consecutive slices of at most [`PREFETCH_FILES`] files and, unless one
/// file is larger, [`PREFETCH_BYTES`] bytes.
fn prefetch_slices<'a, 'c>(
    files: &'a [(&'c Conversion, &'c LandingFile)],
) -> Vec<&'a [(&'c Conversion, &'c LandingFile)]> {
    let mut slices = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, (_, file)) in files.iter().enumerate() {
        if i > start && (i - start >= PREFETCH_FILES || bytes + file.bytes > PREFETCH_BYTES) {
            slices.push(&files[start..i]);
            (start, bytes) = (i, 0);
        }
        bytes += file.bytes;
    }
    if start < files.len() {
        slices.push(&files[start..]);
    }
    slices
}

/// Checks every landing file of the work's conversion.
fn check_files(outputs: &dyn ObjectStore, w: &Work) -> Result<()> {
    if let Some(c) = &w.want {
        for file in &c.files {
            landing::read_file(outputs, c, file)?;
        }
    }
    Ok(())
}

/// Reports a conversion that cannot be published, beside the lake.
fn quarantine(
    outputs: &dyn ObjectStore,
    w: &Work,
    error: &crate::Error,
    report: &mut PublishReport,
) {
    let key = w.want.as_ref().map_or(w.had.key.clone(), |c| c.key.clone());
    let entry = Quarantined {
        key,
        error: error_chain(error),
        reason: error.kind().reason().into(),
    };
    tracing::warn!(
        key = entry.key,
        error = entry.error,
        "conversion not published"
    );
    let body: BTreeMap<&str, &str> = [
        ("key", entry.key.as_str()),
        ("reason", entry.reason.as_str()),
        ("error", entry.error.as_str()),
    ]
    .into();
    let json = serde_json::to_vec_pretty(&body).expect("a report serializes");
    if let Err(e) = outputs.put(&unpublishable_report_key(&w.key_id), &json) {
        tracing::warn!(error = %e, "quarantine report not written");
    }
    report.quarantined.push(entry);
}
