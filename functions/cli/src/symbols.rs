//! `proflake symbols add|list` and `proflake rehydrate`: the symbol store and re-symbolization
//! on a bucket directory, as the rehydrate function does them in the cloud.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use proflake::store::{list_uploads, LocalDirStore};
use proflake::symbols::{
    add_debug_file, debug_file_build_id, list_debug_files, store_debug_file, DebugFileOutcome,
};
use proflake::{
    rehydrate, Outcome, ProcessOptions, RehydrateOptions, RehydratePage, RehydrateScope,
};

use super::output::Stdout;

#[derive(Subcommand)]
pub(crate) enum SymbolsCommand {
    /// Store debug files under debuginfo/<build-id>/, build their lookup caches, and convert
    /// again the uploads they name (unless --no-rehydrate).
    Add(AddArgs),
    /// List the build IDs with symbols and the debug file in use for each.
    List(ListArgs),
}

#[derive(Args)]
pub(crate) struct AddArgs {
    /// Debug files: ELF (with a symbol table and/or DWARF, separate .debug files), Breakpad
    /// .sym, Mach-O, PE/PDB.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Directory that mirrors the bucket.
    #[arg(long)]
    store: PathBuf,
    /// Only store the files; leave the uploads they name as they are.
    #[arg(long)]
    no_rehydrate: bool,
}

#[derive(Args)]
pub(crate) struct ListArgs {
    /// Directory that mirrors the bucket.
    #[arg(long)]
    store: PathBuf,
}

#[derive(Args)]
pub(crate) struct RehydrateArgs {
    /// Directory that mirrors the bucket.
    #[arg(long)]
    store: PathBuf,
    /// Convert again every upload, not only those whose images have new symbols.
    #[arg(long, conflicts_with = "keys")]
    all: bool,
    /// Upload keys to convert again (default: every upload whose images have symbols it did
    /// not use yet, found through the build-ID index).
    keys: Vec<String>,
}

pub(crate) fn symbols(command: SymbolsCommand) -> anyhow::Result<ExitCode> {
    match command {
        SymbolsCommand::Add(args) => add(args),
        SymbolsCommand::List(args) => list(args),
    }
}

fn add(args: AddArgs) -> anyhow::Result<ExitCode> {
    let max_debug_file_bytes = crate::limits()?.max_debug_file_bytes;
    let store = LocalDirStore::new(&args.store);
    let mut stdout = Stdout::default();
    let (mut refused, mut stored_ids) = (0usize, Vec::new());
    // Runtime binaries kept beside a better debug file: they unwind DWARF-mode recordings all
    // the same, so the uploads of their build IDs are converted again.
    let mut unwinding_ids = Vec::new();
    for file in &args.files {
        let bytes =
            std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
        let name = file
            .file_name()
            .and_then(|n| n.to_str())
            .with_context(|| format!("{} has no usable file name", file.display()))?;
        let build_id = match debug_file_build_id(&bytes) {
            Ok(id) => id,
            Err(e) => {
                refused += 1;
                eprintln!(
                    "error: {:#}",
                    anyhow::Error::new(e.for_input(&file.display().to_string()))
                );
                continue;
            }
        };
        let key = store_debug_file(&store, &build_id, name, &bytes)?;
        let line = match add_debug_file(&store, &key, max_debug_file_bytes)? {
            DebugFileOutcome::Stored { meta, replaced, .. } => {
                stored_ids.push(build_id.clone());
                let replaced = replaced
                    .map(|r| format!(", replaces {} ({:?})", r.debug_file_key, r.quality))
                    .unwrap_or_default();
                format!(
                    "{}: {} {} {}, {:?}, {} bytes -> lookup cache {} bytes{replaced}",
                    file.display(),
                    meta.file_format,
                    meta.object_kind,
                    build_id,
                    meta.quality,
                    meta.debug_file_bytes,
                    meta.symcache_bytes
                )
            }
            DebugFileOutcome::Kept {
                in_use,
                unwind_tables,
                ..
            } => {
                if in_use.debug_file_key != key && unwind_tables {
                    unwinding_ids.push(build_id.clone());
                }
                format!(
                    "{}: stored; {} ({:?}) stays in use for {build_id}",
                    file.display(),
                    in_use.debug_file_key,
                    in_use.quality
                )
            }
            DebugFileOutcome::Refused {
                message,
                report_key,
                ..
            } => {
                refused += 1;
                eprintln!("error: {message} (report at {report_key})");
                continue;
            }
            DebugFileOutcome::Skipped { why, .. } => format!("{}: skipped ({why})", file.display()),
        };
        stdout.line(&line)?;
    }
    if !args.no_rehydrate {
        let mut total = RehydratePage::default();
        for id in &stored_ids {
            total.absorb(pages(&store, RehydrateScope::BuildId(id.as_str()))?);
        }
        let mut keys = Vec::new();
        for id in unwinding_ids.iter().filter(|id| !stored_ids.contains(id)) {
            keys.extend(RehydrateScope::indexed_uploads(&store, id)?);
        }
        if !keys.is_empty() {
            keys.sort();
            keys.dedup();
            total.absorb(rehydrate(
                &store,
                &store,
                RehydrateScope::Keys(&keys),
                None,
                &rehydrate_options()?,
            )?);
        }
        print_summary(&mut stdout, &total)?;
        if failed(&total) > 0 {
            return Ok(ExitCode::from(1));
        }
    }
    Ok(if refused == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Every page of a rehydration, with a spinner counting what was done.
fn pages(store: &LocalDirStore, scope: RehydrateScope<'_>) -> anyhow::Result<RehydratePage> {
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {pos} reconverted {wide_msg}")
            .expect("static template"),
    );
    let options = rehydrate_options()?;
    let mut total = RehydratePage::default();
    let mut after: Option<String> = None;
    loop {
        let page = rehydrate(store, store, scope, after.as_deref(), &options)?;
        bar.inc(page.reconverted);
        after = page.next.clone();
        total.absorb(page);
        bar.set_message(format!("{} looked at", total.looked_at));
        if after.is_none() {
            break;
        }
    }
    bar.finish_and_clear();
    Ok(total)
}

fn failed(page: &RehydratePage) -> usize {
    page.outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Quarantined(_)))
        .count()
}

fn print_summary(stdout: &mut Stdout, page: &RehydratePage) -> anyhow::Result<()> {
    for outcome in &page.outcomes {
        if let Outcome::Quarantined(q) = outcome {
            eprintln!("error: {} (quarantined: {})", q.message, q.reason);
        }
    }
    stdout.line(&format!(
        "rehydrate: {} upload(s) looked at, {} reconverted, {} up to date, {} frame(s) symbolized",
        page.looked_at, page.reconverted, page.up_to_date, page.frames_symbolized
    ))?;
    if page.pending_removed + page.pending_kept > 0 {
        stdout.line(&format!(
            "rehydrate: {} pending record(s) of replaced content removed, {} kept",
            page.pending_removed, page.pending_kept
        ))?;
    }
    Ok(())
}

fn list(args: ListArgs) -> anyhow::Result<ExitCode> {
    let store = LocalDirStore::new(&args.store);
    let mut stdout = Stdout::default();
    for meta in list_debug_files(&store)? {
        stdout.line(&format!(
            "{}  {} {} {} {:?}  {} ({} bytes, cache {} bytes)",
            meta.build_id,
            meta.file_format,
            meta.object_kind,
            meta.arch,
            meta.quality,
            meta.debug_file_key,
            meta.debug_file_bytes,
            meta.symcache_bytes
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Reconversions within the limits `convert` uses.
fn rehydrate_options() -> anyhow::Result<RehydrateOptions> {
    Ok(RehydrateOptions {
        process: ProcessOptions {
            limits: crate::limits()?,
            ..ProcessOptions::default()
        },
        ..RehydrateOptions::default()
    })
}

pub(crate) fn rehydrate_command(args: RehydrateArgs) -> anyhow::Result<ExitCode> {
    let store = LocalDirStore::new(&args.store);
    let mut stdout = Stdout::default();
    let page = if args.all || !args.keys.is_empty() {
        let keys = if args.all {
            list_uploads(&store)?
        } else {
            args.keys
        };
        let bar = ProgressBar::new(keys.len() as u64);
        bar.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} {wide_msg}")
                .expect("static template"),
        );
        let mut total = RehydratePage::default();
        for key in &keys {
            bar.set_message(key.clone());
            let page = rehydrate(
                &store,
                &store,
                RehydrateScope::Keys(std::slice::from_ref(key)),
                None,
                &rehydrate_options()?,
            )?;
            total.absorb(page);
            bar.inc(1);
        }
        bar.finish_and_clear();
        total
    } else {
        pages(&store, RehydrateScope::Sweep)?
    };
    print_summary(&mut stdout, &page)?;
    Ok(if failed(&page) == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
