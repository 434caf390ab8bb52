//! Rehydration: converting kept uploads again once debug files for their images exist. It
//! re-runs the whole conversion of the raw upload with the symbols stored now, so chunks,
//! tables, index and manifest stay consistent and equal a first conversion done today.
//!
//! Work is found through the build-ID index and bounded per call: a page stops after
//! `max_uploads` conversions (or `max_entries` index entries) and returns the key to continue
//! after, so a Lambda invocation fits its time limit on a bucket of any size.
//!
//! The scheduled sweep goes on, past the index, over the pending records of every upload key
//! (`converted/by-key/`): those a job of replaced content left and no settling job will see
//! again go with what their conversions left (see `supersede`).

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::outcome::Outcome;
use super::process::{process_upload, ProcessOptions};
use super::supersede::{is_pending_record, sweep_pending, Swept};
use crate::error::Result;
use crate::model::BuildId;
use crate::store::{build_id_index_prefix, by_key_prefix, ObjectStore, BUILD_ID_INDEX_PREFIX};
use crate::symbols::current_debug_meta;
use crate::writers::build_id_index::BuildIdIndexEntry;

/// How much one call may do.
#[derive(Clone, Debug)]
pub struct RehydrateOptions {
    /// Options of each conversion (`reconvert` is implied).
    pub process: ProcessOptions,
    /// Conversions per page.
    pub max_uploads: usize,
    /// Index entries (or keys under `converted/by-key/`) read per page.
    pub max_entries: usize,
    /// How old a pending record must be before the sweep acts on it: longer than any
    /// conversion runs, so the job that wrote it has ended.
    pub pending_grace: Duration,
}

impl Default for RehydrateOptions {
    fn default() -> Self {
        RehydrateOptions {
            process: ProcessOptions::default(),
            max_uploads: 50,
            max_entries: 5_000,
            // The Lambda's time limit is at most 15 minutes.
            pending_grace: Duration::from_secs(3_600),
        }
    }
}

/// Which index entries to look at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RehydrateScope<'a> {
    /// Uploads that reference one build ID (a debug file for it was stored), as a caller names
    /// it: matched in lowercase, and text that is no build ID matches nothing.
    BuildId(&'a str),
    /// Every indexed upload (the scheduled sweep).
    Sweep,
    /// These upload keys, converted again with the symbols stored now whatever they used
    /// before, in one page.
    Keys(&'a [String]),
}

/// What one page of rehydration did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RehydratePage {
    /// Index entries (or keys) looked at; pending records are counted apart.
    pub looked_at: u64,
    /// Uploads converted again.
    pub reconverted: u64,
    /// Entries whose upload already used the symbols in use.
    pub up_to_date: u64,
    /// Frames named by debug files in the conversions of this page.
    pub frames_symbolized: u64,
    /// Pending records of replaced content removed, with what their conversions left.
    pub pending_removed: u64,
    /// Pending records kept (recent, of the key's current content, or of a deleted upload).
    pub pending_kept: u64,
    /// Each conversion's outcome.
    pub outcomes: Vec<Outcome>,
    /// Where the next page starts (the last index key looked at), when there is more.
    pub next: Option<String>,
}

impl RehydratePage {
    fn record(&mut self, outcome: Outcome) {
        self.reconverted += 1;
        if let Outcome::Converted(c) = &outcome {
            self.frames_symbolized += c.frames_symbolized;
        }
        self.outcomes.push(outcome);
    }

    /// Adds a later page's counts (the page's `next` is the later one's).
    pub fn absorb(&mut self, page: RehydratePage) {
        self.looked_at += page.looked_at;
        self.reconverted += page.reconverted;
        self.up_to_date += page.up_to_date;
        self.frames_symbolized += page.frames_symbolized;
        self.pending_removed += page.pending_removed;
        self.pending_kept += page.pending_kept;
        self.outcomes.extend(page.outcomes);
        self.next = page.next;
    }
}

fn reconvert_options(options: &RehydrateOptions) -> ProcessOptions {
    ProcessOptions {
        reconvert: true,
        ..options.process.clone()
    }
}

/// Converts again every upload in `scope` whose images have symbols other than those its
/// conversion used, starting after index key `after` ([`RehydrateScope::Keys`]: the keys
/// given, in one page, whatever they used). Idempotent: a second run finds every
/// upload up to date and writes nothing.
pub fn rehydrate(
    uploads: &dyn ObjectStore,
    outputs: &dyn ObjectStore,
    scope: RehydrateScope<'_>,
    after: Option<&str>,
    options: &RehydrateOptions,
) -> Result<RehydratePage> {
    let by_key = by_key_prefix();
    let prefix = match scope {
        RehydrateScope::Keys(keys) => return rehydrate_keys(uploads, outputs, keys, options),
        RehydrateScope::BuildId(id) => match id.parse::<BuildId>() {
            Ok(id) => build_id_index_prefix(&id.to_ascii_lowercase()),
            // Text that is no build ID names no index entries.
            Err(_) => return Ok(RehydratePage::default()),
        },
        RehydrateScope::Sweep if after.is_some_and(|a| a.starts_with(&by_key)) => {
            let mut page = RehydratePage::default();
            sweep_pending_page(
                uploads,
                outputs,
                after,
                options.max_entries,
                options.pending_grace,
                &mut page,
            )?;
            return Ok(page);
        }
        RehydrateScope::Sweep => BUILD_ID_INDEX_PREFIX.to_owned(),
    };
    let keys = outputs.list_page(&prefix, after, options.max_entries.max(1))?;
    let full_page = keys.len() >= options.max_entries.max(1);
    let process = reconvert_options(options);
    let mut in_use: BTreeMap<BuildId, Option<String>> = BTreeMap::new();
    let mut page = RehydratePage::default();
    for (i, key) in keys.iter().enumerate() {
        if page.reconverted as usize >= options.max_uploads.max(1) {
            page.next = Some(keys[i - 1].clone());
            return Ok(page);
        }
        page.looked_at += 1;
        // Read now, not listed ahead: a conversion earlier in this page may have rewritten it.
        let Some(json) = outputs.get(key)? else {
            continue; // removed with its conversion meanwhile
        };
        let Ok(entry) = serde_json::from_slice::<BuildIdIndexEntry>(&json) else {
            tracing::warn!(key, "unreadable build-ID index entry; skipped");
            continue;
        };
        let current = match in_use.get(&entry.build_id) {
            Some(sha) => sha.clone(),
            None => {
                let sha =
                    current_debug_meta(outputs, &entry.build_id)?.map(|m| m.debug_file_sha256);
                in_use.insert(entry.build_id.clone(), sha.clone());
                sha
            }
        };
        if current.is_none() || current == entry.symbolized_with {
            page.up_to_date += 1;
            continue;
        }
        let outcome = process_upload(uploads, outputs, &entry.source_key, &process)?;
        page.record(outcome);
    }
    if full_page {
        page.next = keys.last().cloned();
    } else if scope == RehydrateScope::Sweep {
        // The index is done: the pending records follow, in what is left of this page.
        let left = options.max_entries.max(1) - keys.len();
        sweep_pending_page(
            uploads,
            outputs,
            None,
            left,
            options.pending_grace,
            &mut page,
        )?;
    }
    Ok(page)
}

/// Sweeps the pending records among the next `limit` keys under `converted/by-key/` after
/// `after` into `page`, and sets where the next page starts.
fn sweep_pending_page(
    uploads: &dyn ObjectStore,
    outputs: &dyn ObjectStore,
    after: Option<&str>,
    limit: usize,
    grace: Duration,
    page: &mut RehydratePage,
) -> Result<()> {
    let limit = limit.max(1);
    let keys = outputs.list_page(&by_key_prefix(), after, limit)?;
    let now_ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    let grace_ns = i64::try_from(grace.as_nanos()).unwrap_or(i64::MAX);
    for key in keys.iter().filter(|k| is_pending_record(k)) {
        match sweep_pending(uploads, outputs, key, now_ns, grace_ns)? {
            Swept::Removed => page.pending_removed += 1,
            Swept::Kept => page.pending_kept += 1,
        }
    }
    page.next = if keys.len() >= limit {
        keys.last().cloned()
    } else {
        None
    };
    Ok(())
}

impl RehydrateScope<'_> {
    /// The upload keys the build-ID index lists for `build_id`, sorted: the uploads to convert
    /// again ([`RehydrateScope::Keys`]) when a file for it arrives that does not take over as
    /// its symbols but can still change them (a runtime binary that unwinds
    /// `--call-graph dwarf` stacks, beside a debug file in use).
    pub fn indexed_uploads(outputs: &dyn ObjectStore, build_id: &BuildId) -> Result<Vec<String>> {
        indexed_uploads(outputs, build_id)
    }
}

fn indexed_uploads(outputs: &dyn ObjectStore, build_id: &BuildId) -> Result<Vec<String>> {
    let mut keys = Vec::new();
    for key in outputs.list(&build_id_index_prefix(&build_id.to_ascii_lowercase()))? {
        let Some(json) = outputs.get(&key)? else {
            continue;
        };
        match serde_json::from_slice::<BuildIdIndexEntry>(&json) {
            Ok(entry) => keys.push(entry.source_key),
            Err(_) => tracing::warn!(key, "unreadable build-ID index entry; skipped"),
        }
    }
    keys.sort();
    keys.dedup();
    Ok(keys)
}

/// Converts the uploads at `keys` again with the symbols stored now, whatever they used before.
fn rehydrate_keys(
    uploads: &dyn ObjectStore,
    outputs: &dyn ObjectStore,
    keys: &[String],
    options: &RehydrateOptions,
) -> Result<RehydratePage> {
    let process = reconvert_options(options);
    let mut page = RehydratePage::default();
    for key in keys {
        page.looked_at += 1;
        page.record(process_upload(uploads, outputs, key, &process)?);
    }
    Ok(page)
}
