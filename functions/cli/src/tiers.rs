//! Which tables a reading command (`export`, `compare`, `flamegraph`) reads from a bucket
//! directory or a bucket: its landing tables (`tables/v2/`, one file per upload) or its lake
//! (`lake/`, the same rows compacted by `publish`).

use std::path::Path;

use clap::ValueEnum;
use proflake::lake::{Lake, LakeSettings};
use proflake::store::LocalDirStore;
use proflake::{tables::Table, tables::TablesFrom};

use crate::location::Location;

/// The tier read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum Tier {
    /// The landing tables: every conversion as it stands, the source of truth.
    #[default]
    Landing,
    /// The lake's Delta tables.
    Lake,
}

/// Runs `read` on the tables at `location` in `tier`; `table` is the one the lake must have.
pub(crate) fn with_tables<T>(
    location: &Location,
    tier: Tier,
    table: Table,
    read: impl FnOnce(TablesFrom<'_>) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    match location {
        Location::Dir(dir) => with_local_tables(dir, tier, table, read),
        Location::S3(bucket) => crate::bucket::with_tables(bucket, tier, table, read),
    }
}

/// [`with_tables`] of a directory.
fn with_local_tables<T>(
    dir: &Path,
    tier: Tier,
    table: Table,
    read: impl FnOnce(TablesFrom<'_>) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let log = dir.join("lake").join(table.name()).join("_delta_log");
    let lake = match tier {
        Tier::Landing => false,
        Tier::Lake => {
            anyhow::ensure!(
                log.is_dir(),
                "{} has no lake (no {}): run `proflake publish --store {}` first, or read \
                 --tier landing",
                dir.display(),
                log.display(),
                dir.display()
            );
            true
        }
    };
    if lake {
        let runtime = crate::lake::runtime()?;
        let lake = Lake::local(dir, runtime.handle().clone(), LakeSettings::default())?;
        read(TablesFrom::Lake(&lake))
    } else {
        let store = LocalDirStore::new(dir);
        read(TablesFrom::Landing(&store))
    }
}
