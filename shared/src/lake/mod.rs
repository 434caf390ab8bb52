//! The lake tier: the six tables (the stack tables and `counters`) as Delta Lake tables under
//! `lake/<table>/`, partitioned by `dt`, filled from the landing tier (`tables/v2/`, one file
//! per upload) in batches and compacted to large files, so that a query's cost follows the
//! data and not the number of uploads. `docs/lake.md` is its contract and says why Delta.
//!
//! The landing tier stays the source of truth; the lake is derived from it and can be rebuilt
//! from it. Every change to a lake table is one Delta commit through delta-rs, adds and removes
//! together, so a reader sees each upload's rows once or not at all:
//!
//! - [`Lake::publish`] brings the lake in line with the landing tier for a set of upload keys
//!   (or all of them): an upload's rows are appended when it is new, replaced when its
//!   conversion changed (rehydrated, or new content under its key), removed when it is gone.
//! - [`Lake::compact`] bin-packs small files, writes a checkpoint, and vacuums files no
//!   version within the retention refers to.
//!
//! Deltalake is asynchronous; like the S3 store, the lake blocks on a runtime handle, so call
//! it from a thread outside the runtime.

mod compact;
mod copy;
mod delta;
mod evolve;
mod files;
mod landing;
mod ledger;
mod parallel;
mod publish;
mod read;
mod schema;
#[cfg(test)]
mod tests;

use std::path::Path;

use tokio::runtime::Handle;
use url::Url;

use crate::store::LAKE_PREFIX;
pub use compact::CompactReport;
pub use publish::{PublishReport, PublishScope};
#[cfg(test)]
pub(crate) use schema::PARTITION_COLUMN;

use crate::error::{ErrorKind, Result};

/// delta-rs's S3 options for an endpoint of its own (MinIO, moto; `None` for AWS): plain HTTP
/// allowed when the endpoint says `http://`, and path-style addressing, since such endpoints
/// cannot resolve `bucket.host` names. Region and credentials come from the standard AWS
/// environment.
pub(crate) fn s3_options(endpoint: Option<&str>) -> std::collections::HashMap<String, String> {
    let mut options = std::collections::HashMap::new();
    if let Some(endpoint) = endpoint.filter(|e| !e.is_empty()) {
        if endpoint.starts_with("http://") {
            options.insert("AWS_ALLOW_HTTP".to_owned(), "true".to_owned());
        }
        options.insert("AWS_ENDPOINT_URL".to_owned(), endpoint.to_owned());
        options.insert(
            "AWS_VIRTUAL_HOSTED_STYLE_REQUEST".to_owned(),
            "false".to_owned(),
        );
    }
    options
}

/// [`s3_options`] for the endpoint in `AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL`.
pub(crate) fn s3_options_from_env() -> std::collections::HashMap<String, String> {
    let endpoint = ["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|v| !v.is_empty()));
    s3_options(endpoint.as_deref())
}

/// Milliseconds since the Unix epoch, now.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Settings of the lake.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LakeSettings {
    /// The size data files are written and compacted to (128–512 MB is what engines read
    /// best; files are rolled once they pass it).
    pub target_file_bytes: u64,
    /// How long files that no version refers to any more are kept before vacuum deletes them,
    /// so queries that started on an older version finish.
    pub retention_hours: u64,
    /// Commit attempts before a batch gives up (each retry plans again on the new version).
    pub max_commit_attempts: u32,
}

/// Default [`LakeSettings::target_file_bytes`]: 256 MiB.
pub(crate) const DEFAULT_TARGET_FILE_BYTES: u64 = 256 << 20;
/// Default [`LakeSettings::retention_hours`]: 7 days.
pub(crate) const DEFAULT_RETENTION_HOURS: u64 = 7 * 24;

impl Default for LakeSettings {
    fn default() -> Self {
        LakeSettings {
            target_file_bytes: DEFAULT_TARGET_FILE_BYTES,
            retention_hours: DEFAULT_RETENTION_HOURS,
            max_commit_attempts: 8,
        }
    }
}

/// The lake of one store: where its tables are, and the runtime its I/O runs on.
#[derive(Clone, Debug)]
pub struct Lake {
    /// The lake's root (ends with `/`); table `t` is at `<root>t/`.
    root: Url,
    /// Options for delta-rs's object store (credentials, endpoint), empty for a directory.
    storage_options: std::collections::HashMap<String, String>,
    runtime: Handle,
    settings: LakeSettings,
}

impl Lake {
    /// Where the lake is in a store (`lake/`): its tables, and the records of what was
    /// published into them.
    pub const PREFIX: &'static str = LAKE_PREFIX;

    /// delta-rs's S3 options for an endpoint of its own (MinIO, moto; `None` for AWS): plain
    /// HTTP allowed when the endpoint says `http://`, and path-style addressing. Region and
    /// credentials come from the standard AWS environment.
    pub fn s3_options(endpoint: Option<&str>) -> std::collections::HashMap<String, String> {
        s3_options(endpoint)
    }

    /// [`Lake::s3_options`] for the endpoint in `AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL`.
    pub fn s3_options_from_env() -> std::collections::HashMap<String, String> {
        s3_options_from_env()
    }

    /// The lake of a directory that mirrors the bucket: `dir/lake/`.
    pub fn local(dir: &Path, runtime: Handle, settings: LakeSettings) -> Result<Self> {
        let lake_dir = dir.join(LAKE_PREFIX.trim_end_matches('/'));
        std::fs::create_dir_all(&lake_dir)
            .map_err(|e| crate::error::from_io(&lake_dir.display().to_string(), e))?;
        let absolute = lake_dir
            .canonicalize()
            .map_err(|e| crate::error::from_io(&lake_dir.display().to_string(), e))?;
        let root = Url::from_directory_path(&absolute).map_err(|()| {
            crate::Error::new(ErrorKind::Lake {
                table: absolute.display().to_string(),
                what: "not an absolute path".into(),
            })
        })?;
        Ok(Lake::at(root, Default::default(), runtime, settings))
    }

    /// The lake at `root` (a `file://` or, with the `lake-s3` feature, an `s3://` URL of a
    /// folder), reached with delta-rs's `storage_options` (endpoint, region, credentials; an
    /// empty map takes them from the environment).
    pub fn at(
        root: Url,
        storage_options: std::collections::HashMap<String, String>,
        runtime: Handle,
        settings: LakeSettings,
    ) -> Self {
        let mut root = root;
        if !root.path().ends_with('/') {
            root.set_path(&format!("{}/", root.path()));
        }
        Lake {
            root,
            storage_options,
            runtime,
            settings,
        }
    }

    /// The lake of the bucket `bucket` under `prefix` (the outputs' prefix):
    /// `s3://bucket/<prefix>lake/`, reached with delta-rs's `storage_options` (see
    /// [`Lake::s3_options_from_env`]).
    #[cfg(feature = "lake-s3")]
    pub fn s3(
        bucket: &str,
        prefix: &str,
        storage_options: std::collections::HashMap<String, String>,
        runtime: Handle,
        settings: LakeSettings,
    ) -> Result<Self> {
        let location = format!("s3://{bucket}/{prefix}{LAKE_PREFIX}");
        let root = Url::parse(&location).map_err(|e| {
            crate::Error::new(ErrorKind::Lake {
                table: location.clone(),
                what: e.to_string(),
            })
        })?;
        Ok(Lake::at(root, storage_options, runtime, settings))
    }

    /// The location of `table`'s Delta table.
    pub fn table_url(&self, table: crate::tables::Table) -> Url {
        self.root
            .join(&format!("{}/", table.name()))
            .expect("a table name is a valid URL path segment")
    }

    /// Store requests a batch makes at once: several to a bucket, one at a time to a
    /// directory (see `parallel.rs`).
    fn in_flight(&self) -> usize {
        if self.root.scheme() == "file" {
            1
        } else {
            parallel::IN_FLIGHT
        }
    }

    /// The lake's settings.
    pub fn settings(&self) -> &LakeSettings {
        &self.settings
    }
}
