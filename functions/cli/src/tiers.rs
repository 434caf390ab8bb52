//! Which tables a reading command (`export`, `compare`, `flamegraph`) reads from a bucket
//! directory: its landing tables (`tables/v2/`, one file per upload) or its lake (`lake/`,
//! the same rows compacted by `publish`).

use std::path::Path;

use clap::ValueEnum;
use proflake::lake::{Lake, LakeSettings};
use proflake::outputs::{Table, TablesFrom};
use proflake::LocalDirStore;

/// The tier read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum Tier {
    /// The lake when the directory has one (its table was published), else the landing tables.
    #[default]
    Auto,
    /// The landing tables.
    Landing,
    /// The lake's Delta tables.
    Lake,
}

/// Runs `read` on the tables of `dir` in `tier`; `table` is the one whose lake table decides
/// `auto`. Says on standard error which tier was read.
pub(crate) fn with_tables<T>(
    dir: &Path,
    tier: Tier,
    table: Table,
    read: impl FnOnce(TablesFrom<'_>) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let log = dir.join("lake").join(table.name()).join("_delta_log");
    let lake = match tier {
        Tier::Auto => log.is_dir(),
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
        eprintln!("reading the lake of {}", dir.display());
        read(TablesFrom::Lake(&lake))
    } else {
        let store = LocalDirStore::new(dir);
        read(TablesFrom::Landing(&store))
    }
}
