//! Reading the lake's tables back, for the jobs that read tables (export, compare): each
//! table's active data files at its latest version, in the landing tables' columns.

use arrow_array::RecordBatch;
use deltalake::{DeltaTable, DeltaTableError};

use super::schema::lake_error;
use super::Lake;
use crate::error::{ErrorKind, Result};
use crate::tables::{collect_tables, parquet_batches, Table, TableBatches};

const NS_PER_DAY: i64 = 86_400_000_000_000;

impl Lake {
    /// Reads `tables` from the lake (every other table comes back empty), keeping only the
    /// `dt` partitions that can hold samples between `from_ns` and `to_ns` (as
    /// [`read_tables`](crate::tables::read_tables) does for the landing tier). Nothing is
    /// created: a lake without one of the stack tables is [`ErrorKind::NoTables`] (nothing was
    /// published into it), one without `function_rollup` or `counters` reads them empty.
    pub fn read_tables(
        &self,
        tables: &[Table],
        from_ns: Option<i64>,
        to_ns: Option<i64>,
    ) -> Result<TableBatches> {
        collect_tables(tables, &mut |table, f| {
            self.for_each_batch(table, from_ns, to_ns, None, f)
        })
    }

    /// Hands `f` every batch of `table`'s active files in the `dt` partitions `from_ns` and
    /// `to_ns` can reach, file by file: with `columns`, only those columns as stored, else
    /// every column in the landing tables' schema (see [`crate::tables::read_tables`]).
    pub(crate) fn for_each_batch(
        &self,
        table: Table,
        from_ns: Option<i64>,
        to_ns: Option<i64>,
        columns: Option<crate::tables::Projection<'_>>,
        f: &mut dyn FnMut(RecordBatch) -> Result<()>,
    ) -> Result<()> {
        // A profile that starts the day before `from` may reach into it (see read_tables).
        let day = |ns: i64, back: i64| {
            crate::calendar::utc_seconds((ns.div_euclid(NS_PER_DAY) - back) * 86_400)[..10]
                .to_owned()
        };
        let (first, last) = (from_ns.map(|f| day(f, 1)), to_ns.map(|t| day(t, 0)));
        let Some(delta) = self.open_existing(table)? else {
            if matches!(table, Table::FunctionRollup | Table::Counters) {
                return Ok(());
            }
            return Err(ErrorKind::NoTables {
                path: self.table_url(table).to_string(),
            }
            .into());
        };
        for file in self.active_files(&delta, None)? {
            let dt = file.dt.as_str();
            if first.as_deref().is_some_and(|f| dt < f) || last.as_deref().is_some_and(|l| dt > l) {
                continue;
            }
            let error = |e: String| lake_error(table.name(), format!("{}: {e}", file.path));
            parquet_batches(table, self.lake_file(&delta, &file)?, columns, &error, f)?;
        }
        Ok(())
    }

    /// `table`'s Delta table at its latest version; `None` when it was never created.
    fn open_existing(&self, table: Table) -> Result<Option<DeltaTable>> {
        let url = self.table_url(table);
        let err = |e: DeltaTableError| lake_error(url.as_str(), e.to_string());
        if let Ok(dir) = url.to_file_path() {
            if !dir.join("_delta_log").is_dir() {
                return Ok(None);
            }
        }
        self.runtime.block_on(async {
            let mut delta = DeltaTable::try_from_url_with_storage_options(
                url.clone(),
                self.storage_options.clone(),
            )
            .await
            .map_err(err)?;
            match delta.load().await {
                Ok(()) => Ok(Some(delta)),
                Err(DeltaTableError::NotATable(_)) => Ok(None),
                Err(e) => Err(err(e)),
            }
        })
    }
}
