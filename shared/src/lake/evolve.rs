//! Tables created before a column was added to the landing schema gain it when they are next
//! opened.
//!
//! Within a schema version the landing tables only gain columns, at the end and nullable
//! (`docs/tables.md`), but a Delta table keeps the columns it was created with. So opening a
//! table compares its Delta schema with [`lake_schema`](super::lake_schema) and adds what is
//! missing, nullable and by name, in one commit made by delta-rs's own `ADD COLUMN` operation.
//! An added column comes after `dt` in the Delta schema (a new table has `dt` last); nothing
//! depends on the order: delta-rs's writer and the readers (DuckDB, Athena) match columns by
//! name, and the data files never hold `dt`.
//!
//! Anything else that differs (a missing column that cannot be null, a column of another
//! type, a column this version does not know) is [`ErrorKind::LakeSchema`]: another schema
//! version wrote the table, and writing to it (compaction above all, which rewrites rows in
//! this version's columns) could lose data.

use deltalake::kernel::transaction::CommitProperties;
use deltalake::kernel::{StructField, StructType};
use deltalake::DeltaTable;

use super::delta::info;
use super::schema::{delta_columns, lake_error};
use crate::error::{Error, ErrorKind, Result};
use crate::tables::Table;

/// The columns of `table`'s current lake schema that `existing` (a Delta table's schema at
/// `url`) lacks: all nullable, or an error saying what makes the two incompatible.
pub(super) fn missing_columns(
    table: Table,
    url: &str,
    existing: &StructType,
) -> Result<Vec<StructField>> {
    let current = delta_columns(table)?;
    let mut missing = Vec::new();
    let mut incompatible = Vec::new();
    for column in &current {
        match existing.field(column.name()) {
            None if column.is_nullable() => missing.push(column.clone()),
            None => incompatible.push(format!("it lacks the required column {}", column.name())),
            Some(found) if found.data_type() != column.data_type() => incompatible.push(format!(
                "its column {} is {}, this version writes {}",
                column.name(),
                found.data_type(),
                column.data_type()
            )),
            Some(found) if !found.is_nullable() && column.is_nullable() => {
                incompatible.push(format!(
                    "its column {} cannot be null, this version writes nulls",
                    found.name()
                ))
            }
            Some(_) => {}
        }
    }
    for found in existing.fields() {
        if !current.iter().any(|c| c.name() == found.name()) {
            incompatible.push(format!(
                "it has the column {}, which this version does not know",
                found.name()
            ));
        }
    }
    if !incompatible.is_empty() {
        return Err(Error::new(ErrorKind::LakeSchema {
            table: url.to_owned(),
            what: incompatible.join("; "),
        }));
    }
    Ok(missing)
}

/// `delta` with every column of the current lake schema, added in one commit if it lacks
/// some. When another writer adds them first, this writer's commit conflicts with that one's
/// metadata change: it reloads the table and finds them there.
pub(super) async fn add_missing_columns(table: Table, delta: DeltaTable) -> Result<DeltaTable> {
    let url = delta.table_url().to_string();
    let schema = |d: &DeltaTable| {
        d.snapshot()
            .map(|s| s.schema())
            .map_err(|e| lake_error(&url, e.to_string()))
    };
    let missing = missing_columns(table, &url, schema(&delta)?.as_ref())?;
    if missing.is_empty() {
        return Ok(delta);
    }
    let names: Vec<&str> = missing.iter().map(|c| c.name().as_str()).collect();
    let names = names.join(", ");
    let properties = CommitProperties::default()
        .with_metadata(info(&[("proflake.added_columns", names.as_str().into())]));
    let added = delta
        .clone()
        .add_columns()
        .with_fields(missing)
        .with_commit_properties(properties)
        .await;
    match added {
        Ok(evolved) => {
            tracing::info!(table = table.name(), columns = names, "lake columns added");
            Ok(evolved)
        }
        Err(e) => {
            let mut reloaded = delta;
            reloaded
                .update_state()
                .await
                .map_err(|e| lake_error(&url, e.to_string()))?;
            if missing_columns(table, &url, schema(&reloaded)?.as_ref())?.is_empty() {
                return Ok(reloaded);
            }
            Err(lake_error(&url, format!("adding the columns {names}: {e}")))
        }
    }
}
