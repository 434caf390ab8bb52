//! Maintenance: compaction (bin-packing a partition's small files into files of the target
//! size, streamed a row group at a time), a checkpoint of each table's log, and vacuum of the
//! files no version within the retention refers to.
//!
//! A compaction commit removes and adds files in one version with `dataChange = false`, so a
//! reader sees either the small files or the large one, never both, and an incremental reader
//! of the log knows no row changed.

use std::collections::BTreeMap;

use std::future::IntoFuture;

use deltalake::protocol::DeltaOperation;
use deltalake::DeltaTable;
use rustc_hash::FxHashSet;
use serde::Serialize;

use super::delta::{info, ActiveFile, Committed};
use super::schema::lake_error;
use super::Lake;
use crate::error::Result;
use crate::tables::Table;

/// Files under this share of the target size are compacted.
const SMALL_SHARE: f64 = 0.75;

/// What a compaction did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CompactReport {
    /// Partitions whose files were packed.
    pub partitions_compacted: u64,
    /// Files removed by packing.
    pub files_removed: u64,
    /// Files written by packing.
    pub files_added: u64,
    /// Rows rewritten.
    pub rows: u64,
    /// Commits that lost to another writer and were left for the next run.
    pub conflicts: u64,
    /// Files vacuum deleted.
    pub files_vacuumed: u64,
}

impl Lake {
    /// Compacts every table, checkpoints its log and vacuums it.
    pub fn compact(&self) -> Result<CompactReport> {
        let mut report = CompactReport::default();
        for table in Table::ALL {
            self.compact_table(table, &mut report)?;
        }
        Ok(report)
    }

    fn compact_table(&self, table: Table, report: &mut CompactReport) -> Result<()> {
        let mut delta = self.open(table)?;
        let small = (self.settings.target_file_bytes as f64 * SMALL_SHARE) as u64;
        let mut by_dt: BTreeMap<String, Vec<ActiveFile>> = BTreeMap::new();
        for file in self.active_files(&delta, None)? {
            if file.size < small || file.per_upload {
                by_dt.entry(file.dt.clone()).or_default().push(file);
            }
        }
        for (dt, files) in by_dt {
            let bins = self.bins(files);
            if !bins.is_empty() {
                self.pack(table, &mut delta, &dt, &bins, report)?;
            }
        }
        self.checkpoint_and_vacuum(table, delta, report)
    }

    /// A partition's small files in bins of at most the target size (first fit, in file
    /// order). A lone file is left as it is, unless its row groups are the landing files'.
    fn bins(&self, files: Vec<ActiveFile>) -> Vec<Vec<ActiveFile>> {
        let mut bins: Vec<Vec<ActiveFile>> = Vec::new();
        let mut bin_bytes = 0;
        for file in files {
            if bins.is_empty() || bin_bytes + file.size > self.settings.target_file_bytes {
                bins.push(Vec::new());
                bin_bytes = 0;
            }
            bin_bytes += file.size;
            bins.last_mut().expect("a bin was pushed").push(file);
        }
        bins.into_iter()
            .filter(|b| b.len() > 1 || b.iter().any(|f| f.per_upload))
            .collect()
    }

    /// Writes each bin of partition `dt` as new files and commits them with the removal of
    /// the bins' files, in one version.
    fn pack(
        &self,
        table: Table,
        delta: &mut DeltaTable,
        dt: &str,
        bins: &[Vec<ActiveFile>],
        report: &mut CompactReport,
    ) -> Result<()> {
        let none = FxHashSet::default();
        let mut adds = Vec::new();
        let mut removes = Vec::new();
        let mut rows = 0;
        for bin in bins {
            let mut writer = self.writer(table, delta)?;
            for file in bin {
                for batch in self
                    .lake_file(delta, file)?
                    .batches_without(table, dt, &none)?
                {
                    writer.write(self, batch?)?;
                }
                let mut remove = file.remove.clone();
                remove.data_change = false;
                removes.push(remove);
            }
            rows += writer.rows();
            adds.extend(writer.finish(self)?.into_iter().map(|mut add| {
                add.data_change = false;
                add
            }));
        }
        let (added, removed) = (adds.len() as u64, removes.len() as u64);
        let kept_adds = adds.clone();
        let operation = DeltaOperation::Optimize {
            predicate: Some(format!("dt = '{dt}'")),
            target_size: i64::try_from(self.settings.target_file_bytes).unwrap_or(i64::MAX),
        };
        let metadata = info(&[("proflake.compacted_rows", rows.into())]);
        match self.commit(delta, adds, removes, operation, None, metadata)? {
            Committed::Version(version) => {
                tracing::info!(
                    table = table.name(),
                    dt,
                    version,
                    removed,
                    added,
                    rows,
                    "lake compaction"
                );
                report.partitions_compacted += 1;
                report.files_added += added;
                report.files_removed += removed;
                report.rows += rows;
            }
            // A publisher rewrote some of these files meanwhile: the next run packs what is
            // there then.
            Committed::Conflict => {
                self.discard(delta, &kept_adds);
                report.conflicts += 1;
            }
        }
        Ok(())
    }

    /// A checkpoint of `table`'s log, then vacuum of what the retention no longer keeps.
    fn checkpoint_and_vacuum(
        &self,
        table: Table,
        delta: DeltaTable,
        report: &mut CompactReport,
    ) -> Result<()> {
        let url = self.table_url(table).to_string();
        self.runtime
            .block_on(deltalake::checkpoints::create_checkpoint(&delta, None))
            .map_err(|e| lake_error(&url, format!("checkpoint: {e}")))?;
        let retention = chrono::Duration::hours(
            i64::try_from(self.settings.retention_hours).unwrap_or(i64::MAX / 3_600_000),
        );
        let (_, metrics) = self
            .runtime
            .block_on(
                delta
                    .vacuum()
                    .with_retention_period(retention)
                    .with_enforce_retention_duration(false)
                    // Full: files no version ever referenced (a publish cut short between
                    // writing and committing) go too, not only those removed by a commit.
                    .with_mode(deltalake::operations::vacuum::VacuumMode::Full)
                    .into_future(),
            )
            .map_err(|e| lake_error(&url, format!("vacuum: {e}")))?;
        report.files_vacuumed += metrics.files_deleted.len() as u64;
        Ok(())
    }
}
