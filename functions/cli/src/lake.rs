//! `proflake publish` and `proflake compact`: the lake tier of a bucket directory, and the
//! publish that `convert` and `process` run at their end.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use proflake::store::LocalDirStore;
use proflake::{lake::Lake, lake::LakeSettings, lake::PublishReport, lake::PublishScope};

use crate::output::Stdout;

#[derive(Args)]
pub(crate) struct PublishArgs {
    /// Directory that mirrors the bucket.
    #[arg(long, visible_alias = "out")]
    store: PathBuf,
    /// Upload keys to publish (default: every upload key, and every key the lake holds).
    keys: Vec<String>,
    /// Drop the lake and publish every conversion again from the landing tables.
    #[arg(long, conflicts_with = "keys")]
    rebuild: bool,
    #[command(flatten)]
    settings: SettingsArgs,
}

#[derive(Args)]
pub(crate) struct CompactArgs {
    /// Directory that mirrors the bucket.
    #[arg(long, visible_alias = "out")]
    store: PathBuf,
    #[command(flatten)]
    settings: SettingsArgs,
}

#[derive(Args, Clone, Default)]
pub(crate) struct SettingsArgs {
    /// Size data files are written and compacted to, in bytes (default:
    /// PROFLAKE_LAKE_TARGET_FILE_BYTES, else 256 MiB).
    #[arg(long)]
    target_file_bytes: Option<u64>,
    /// Hours unreferenced files are kept before vacuum deletes them (default:
    /// PROFLAKE_LAKE_RETENTION_HOURS, else 168).
    #[arg(long)]
    retention_hours: Option<u64>,
}

impl SettingsArgs {
    fn resolve(&self) -> anyhow::Result<LakeSettings> {
        let env = |name: &str| -> anyhow::Result<Option<u64>> {
            std::env::var(name)
                .ok()
                .map(|v| {
                    v.parse()
                        .with_context(|| format!("{name}={v:?} is not a number"))
                })
                .transpose()
        };
        let mut settings = LakeSettings::default();
        if let Some(v) = self
            .target_file_bytes
            .or(env("PROFLAKE_LAKE_TARGET_FILE_BYTES")?)
        {
            anyhow::ensure!(v > 0, "the target file size must be more than 0 bytes");
            settings.target_file_bytes = v;
        }
        if let Some(v) = self
            .retention_hours
            .or(env("PROFLAKE_LAKE_RETENTION_HOURS")?)
        {
            settings.retention_hours = v;
        }
        Ok(settings)
    }
}

/// The runtime delta-rs's I/O runs on; the lake blocks on it from this thread.
pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

pub(crate) fn publish(args: PublishArgs) -> anyhow::Result<ExitCode> {
    let scope = if args.keys.is_empty() {
        PublishScope::All
    } else {
        PublishScope::Keys(args.keys.clone())
    };
    let report = publish_store(&args.store, &scope, &args.settings, args.rebuild)?;
    Stdout::default().line(&serde_json::to_string(&report)?)?;
    Ok(exit_code(&report))
}

/// Publishes `scope` of the bucket directory `dir` into its lake.
pub(crate) fn publish_store(
    dir: &Path,
    scope: &PublishScope,
    settings: &SettingsArgs,
    rebuild: bool,
) -> anyhow::Result<PublishReport> {
    let runtime = runtime()?;
    let lake = Lake::local(dir, runtime.handle().clone(), settings.resolve()?)?;
    let store = LocalDirStore::new(dir);
    Ok(if rebuild {
        lake.rebuild(&store, &store)?
    } else {
        lake.publish(&store, &store, scope)?
    })
}

/// The line `convert` and `process` print (to stderr) for their publish.
pub(crate) fn summary(report: &PublishReport) -> String {
    format!(
        "lake: {} upload(s) published ({} replaced), {} removed, {} up to date, {} rows, {} quarantined",
        report.published,
        report.replaced,
        report.removed,
        report.up_to_date,
        report.rows,
        report.quarantined.len()
    )
}

/// One error line per conversion the publish could not publish.
pub(crate) fn report_quarantined(report: &PublishReport) {
    for q in &report.quarantined {
        eprintln!("error: {}: not published: {}", q.key, q.error);
    }
}

pub(crate) fn exit_code(report: &PublishReport) -> ExitCode {
    report_quarantined(report);
    if report.quarantined.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

pub(crate) fn compact(args: CompactArgs) -> anyhow::Result<ExitCode> {
    let runtime = runtime()?;
    let lake = Lake::local(
        &args.store,
        runtime.handle().clone(),
        args.settings.resolve()?,
    )?;
    let report = lake.compact()?;
    Stdout::default().line(&serde_json::to_string(&report)?)?;
    Ok(ExitCode::SUCCESS)
}
