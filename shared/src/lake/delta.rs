//! One lake table through delta-rs: open (creating it the first time), its active files, data
//! files written by its `RecordBatchWriter`, and commits of adds and removes together.
//!
//! Every publish commit carries the transaction id [`PUBLISHER_APP_ID`]. delta-rs refuses a
//! commit when a commit it did not see carries the same id (a concurrent transaction), so two
//! publishers never both commit a plan made on the same version: the later one plans again on
//! the new version, finds the other's rows and replaces them.

use std::collections::BTreeSet;

use arrow_array::RecordBatch;
use deltalake::kernel::transaction::{CommitBuilder, CommitProperties, TransactionError};
use deltalake::kernel::{Action, Add, Remove, Transaction};
use deltalake::protocol::{DeltaOperation, SaveMode};
use deltalake::writer::{DeltaWriter, RecordBatchWriter};
use deltalake::{DeltaTable, DeltaTableError};
use futures::TryStreamExt;

use super::evolve::add_missing_columns;
use super::files::LakeFile;
use super::schema::{delta_columns, lake_error, writer_properties, PARTITION_COLUMN};
use super::{now_ms, Lake};
use crate::error::Result;
use crate::tables::Table;

/// The transaction id every publish commit carries (see the module's doc).
pub(super) const PUBLISHER_APP_ID: &str = "proflake-publish";

/// An active data file of a table.
#[derive(Clone, Debug)]
pub(super) struct ActiveFile {
    /// Path relative to the table's root, as the log has it.
    pub path: String,
    pub dt: String,
    pub size: u64,
    /// Its row groups are the landing files' (see `copy.rs`): compaction rewrites it.
    pub per_upload: bool,
    pub remove: Remove,
}

/// How a commit went.
pub(super) enum Committed {
    /// Committed as this version.
    Version(i64),
    /// Another writer committed something this plan conflicts with: plan again.
    Conflict,
}

impl Lake {
    /// `table`'s Delta table, created (empty, partitioned by `dt`) if there is none, with the
    /// columns added since it was created (see `evolve.rs`).
    pub(super) fn open(&self, table: Table) -> Result<DeltaTable> {
        let url = self.table_url(table);
        let err = |e: DeltaTableError| lake_error(url.as_str(), e.to_string());
        // A local table's directory must exist before delta-rs looks for a log in it.
        if let Ok(dir) = url.to_file_path() {
            std::fs::create_dir_all(&dir)
                .map_err(|e| crate::error::from_io(&dir.display().to_string(), e))?;
        }
        self.runtime.block_on(async {
            let delta = DeltaTable::try_from_url_with_storage_options(
                url.clone(),
                self.storage_options.clone(),
            )
            .await
            .map_err(err)?;
            if delta.version().is_some() {
                return add_missing_columns(table, delta).await;
            }
            let created = delta
                .create()
                .with_table_name(table.name())
                .with_columns(delta_columns(table)?)
                .with_partition_columns([PARTITION_COLUMN])
                .with_save_mode(SaveMode::Ignore)
                .await;
            match created {
                Ok(delta) => Ok(delta),
                // Another writer created it first.
                Err(_) => {
                    let mut delta = DeltaTable::try_from_url_with_storage_options(
                        url.clone(),
                        self.storage_options.clone(),
                    )
                    .await
                    .map_err(err)?;
                    delta.load().await.map_err(err)?;
                    add_missing_columns(table, delta).await
                }
            }
        })
    }

    /// The latest version of `delta`.
    pub(super) fn refresh(&self, delta: &mut DeltaTable) -> Result<()> {
        let url = delta.table_url().to_string();
        self.runtime
            .block_on(delta.update_state())
            .map_err(|e| lake_error(&url, e.to_string()))
    }

    /// The active files of `delta` in the partitions `dts` (every partition with `None`).
    pub(super) fn active_files(
        &self,
        delta: &DeltaTable,
        dts: Option<&BTreeSet<String>>,
    ) -> Result<Vec<ActiveFile>> {
        let url = delta.table_url().to_string();
        let err = |e: DeltaTableError| lake_error(&url, e.to_string());
        let snapshot = delta.snapshot().map_err(err)?;
        let log_store = delta.log_store();
        let views: Vec<_> = self
            .runtime
            .block_on(
                snapshot
                    .snapshot()
                    .file_views(log_store.as_ref(), None)
                    .try_collect(),
            )
            .map_err(err)?;
        let mut files = Vec::new();
        for view in views {
            #[allow(deprecated)] // the add action is what a remove is made from
            let add = view.add_action();
            let dt = add
                .partition_values
                .get(PARTITION_COLUMN)
                .cloned()
                .flatten()
                .unwrap_or_default();
            if dts.is_some_and(|dts| !dts.contains(&dt)) {
                continue;
            }
            files.push(ActiveFile {
                path: add.path.clone(),
                dt,
                size: u64::try_from(add.size).unwrap_or(0),
                per_upload: super::copy::is_per_upload(add.tags.as_ref()),
                remove: view.remove_action(true),
            });
        }
        files.sort_by(|a, b| (&a.dt, &a.path).cmp(&(&b.dt, &b.path)));
        Ok(files)
    }

    /// A data file of `delta`, for reading.
    pub(super) fn lake_file(&self, delta: &DeltaTable, file: &ActiveFile) -> Result<LakeFile> {
        let path = deltalake::Path::from_url_path(&file.path)
            .map_err(|e| lake_error(delta.table_url().as_str(), e.to_string()))?;
        Ok(LakeFile {
            store: delta.log_store().object_store(None),
            path,
            size: file.size,
            runtime: self.runtime.clone(),
            window: Default::default(),
        })
    }

    /// A writer of new data files for `table`.
    pub(super) fn writer(&self, table: Table, delta: &DeltaTable) -> Result<FileWriter> {
        let writer = RecordBatchWriter::for_table(delta)
            .map_err(|e| lake_error(table.name(), e.to_string()))?
            .with_writer_properties(writer_properties(table)?)
            .with_target_file_size(self.settings.target_file_bytes);
        Ok(FileWriter {
            table,
            writer,
            rows: 0,
        })
    }

    /// Commits `adds` and `removes` to `delta` in one version. `fence`, for publish commits,
    /// is the batch's transaction version (see the module's doc); `metadata` goes into the
    /// commit's info.
    pub(super) fn commit(
        &self,
        delta: &mut DeltaTable,
        adds: Vec<Add>,
        removes: Vec<Remove>,
        operation: DeltaOperation,
        fence: Option<i64>,
        metadata: Vec<(String, serde_json::Value)>,
    ) -> Result<Committed> {
        let url = delta.table_url().to_string();
        let err = |e: DeltaTableError| lake_error(&url, e.to_string());
        let mut properties = CommitProperties::default().with_metadata(metadata);
        if let Some(version) = fence {
            properties = properties.with_application_transaction(
                Transaction::new_with_last_update(PUBLISHER_APP_ID, version, Some(now_ms())),
            );
        }
        let actions: Vec<Action> = adds
            .into_iter()
            .map(Action::Add)
            .chain(removes.into_iter().map(Action::Remove))
            .collect();
        let outcome = self.runtime.block_on(async {
            let snapshot = delta.snapshot()?;
            CommitBuilder::from(properties)
                .with_actions(actions)
                .build(Some(snapshot), delta.log_store(), operation)
                .await
        });
        match outcome {
            Ok(done) => {
                let version = done.version();
                self.refresh(delta)?;
                Ok(Committed::Version(
                    i64::try_from(version).unwrap_or(i64::MAX),
                ))
            }
            Err(DeltaTableError::Transaction {
                source: TransactionError::CommitConflict(_) | TransactionError::MaxCommitAttempts(_),
            }) => {
                self.refresh(delta)?;
                Ok(Committed::Conflict)
            }
            Err(e) => Err(err(e)),
        }
    }

    /// The last publish batch `delta` committed.
    pub(super) fn fence_of(&self, delta: &DeltaTable) -> Result<Option<i64>> {
        let url = delta.table_url().to_string();
        let snapshot = delta
            .snapshot()
            .map_err(|e| lake_error(&url, e.to_string()))?;
        self.runtime
            .block_on(snapshot.transaction_version(delta.log_store().as_ref(), PUBLISHER_APP_ID))
            .map_err(|e| lake_error(&url, e.to_string()))
    }

    /// Deletes data files written for a commit that did not happen (vacuum would, later).
    pub(super) fn discard(&self, delta: &DeltaTable, adds: &[Add]) {
        let store = delta.log_store().object_store(None);
        for add in adds {
            if let Ok(path) = deltalake::Path::from_url_path(&add.path) {
                let _ = self
                    .runtime
                    .block_on(object_store::ObjectStoreExt::delete(store.as_ref(), &path));
            }
        }
    }
}

/// The operation a publish commit records: an append, or a replacement of the rows of some
/// uploads.
pub(super) fn publish_operation(replaced: &BTreeSet<String>) -> DeltaOperation {
    let partition_by = Some(vec![PARTITION_COLUMN.to_owned()]);
    if replaced.is_empty() {
        return DeltaOperation::Write {
            mode: SaveMode::Append,
            partition_by,
            predicate: None,
        };
    }
    let ids: Vec<String> = replaced.iter().map(|id| format!("'{id}'")).collect();
    DeltaOperation::Write {
        mode: SaveMode::Overwrite,
        partition_by,
        predicate: Some(format!("source_id IN ({})", ids.join(", "))),
    }
}

/// New data files of one table, rolled at the target size, one set per `dt`.
pub(super) struct FileWriter {
    table: Table,
    writer: RecordBatchWriter,
    rows: u64,
}

impl FileWriter {
    /// Writes `batch` (lake rows, `dt` included).
    pub fn write(&mut self, lake: &Lake, batch: RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        self.rows += batch.num_rows() as u64;
        lake.runtime
            .block_on(self.writer.write(batch))
            .map_err(|e| lake_error(self.table.name(), e.to_string()))
    }

    /// Rows written.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Closes the files: their add actions.
    pub fn finish(mut self, lake: &Lake) -> Result<Vec<Add>> {
        lake.runtime
            .block_on(self.writer.flush())
            .map_err(|e| lake_error(self.table.name(), e.to_string()))
    }
}

/// Metadata for a commit's info.
pub(super) fn info(pairs: &[(&str, serde_json::Value)]) -> Vec<(String, serde_json::Value)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}
