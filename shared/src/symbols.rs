//! Debug files and the symbol store in the bucket: debug files under `debuginfo/<build-id>/`,
//! each build ID with the lookup cache of its best file and a meta naming it (written last).
//! The symbolizer itself (`symbolize`) is handed bytes and never sees the store; this module
//! is where the two meet.

use sha2::{Digest, Sha256};

use crate::error::{error_chain, Error, ErrorKind, Result};
use crate::formats::binaries::has_unwind_tables;
use crate::model::BuildId;
use crate::pipeline::write_error_report;
use crate::store::{
    debug_file_key, debug_info_key, debug_meta_key, error_report_key, is_debug_meta_key,
    symcache_key, DebugInfoKey, ObjectStore, DEBUGINFO_PREFIX,
};
pub use crate::symbolize::debug_file_build_id;
use crate::symbolize::{ingest_debug_file, DebugFileKeys, DebugFileMeta, SymbolSource, Symbols};

/// Symbols read from a store: the meta of a build ID, then the cache it names.
pub(crate) struct StoreSymbols<'s> {
    store: &'s dyn ObjectStore,
    /// Largest runtime binary read for unwinding.
    max_binary_bytes: u64,
}

impl<'s> StoreSymbols<'s> {
    /// Symbols from `store`'s `debuginfo/`.
    pub(crate) fn new(store: &'s dyn ObjectStore) -> Self {
        StoreSymbols {
            store,
            max_binary_bytes: crate::Limits::default().max_debug_file_bytes,
        }
    }

    /// Reads no runtime binary larger than `max_bytes`
    /// ([`Limits::max_debug_file_bytes`](crate::Limits::max_debug_file_bytes)).
    pub(crate) fn with_max_binary_bytes(mut self, max_bytes: u64) -> Self {
        self.max_binary_bytes = max_bytes;
        self
    }
}

impl SymbolSource for StoreSymbols<'_> {
    fn symbols(&self, build_id: &BuildId) -> Result<Option<Symbols>> {
        let Some(json) = self.store.get(&debug_meta_key(build_id))? else {
            return Ok(None);
        };
        let meta = match DebugFileMeta::from_json(&json) {
            Ok(meta) => meta,
            Err(e) => {
                tracing::warn!(%build_id, error = %e, "unreadable debug-file meta; ignored");
                return Ok(None);
            }
        };
        let Some(cache) = self.store.get(&meta.symcache_key)? else {
            tracing::warn!(
                %build_id,
                key = meta.symcache_key,
                "debug-file meta names no cache"
            );
            return Ok(None);
        };
        match Symbols::new(meta, cache) {
            Ok(symbols) => Ok(Some(symbols)),
            Err(e) => {
                tracing::warn!(%build_id, error = %error_chain(&e), "unreadable lookup cache; ignored");
                Ok(None)
            }
        }
    }

    /// The files uploaded under `debuginfo/<build-id>/`, the one in use first: a separate debug
    /// file may be in use for names while the stripped runtime binary beside it holds the
    /// unwind tables.
    fn binary(
        &self,
        build_id: &BuildId,
        has_unwind_tables: &dyn Fn(&[u8]) -> bool,
    ) -> Result<Option<Vec<u8>>> {
        let build_id = build_id.to_ascii_lowercase();
        let in_use = current_debug_meta(self.store, &build_id)?.map(|m| m.debug_file_key);
        let folder = format!("{DEBUGINFO_PREFIX}{build_id}/");
        let mut keys: Vec<String> = (self.store.list(&folder)?.into_iter())
            .filter(|key| {
                matches!(debug_info_key(key), DebugInfoKey::DebugFile { .. })
                    && in_use.as_ref() != Some(key)
            })
            .collect();
        keys.sort();
        for key in in_use.into_iter().chain(keys) {
            match self.store.get_object(&key, self.max_binary_bytes) {
                Ok(Some((bytes, _))) if has_unwind_tables(&bytes) => return Ok(Some(bytes)),
                Ok(_) => {}
                Err(e) if e.kind().is_transient() => return Err(e),
                Err(e) => {
                    tracing::warn!(key, error = %error_chain(&e), "unreadable binary; ignored");
                }
            }
        }
        Ok(None)
    }
}

/// The current meta of a build ID, if a usable one is stored.
pub(crate) fn current_debug_meta(
    store: &dyn ObjectStore,
    build_id: &BuildId,
) -> Result<Option<DebugFileMeta>> {
    Ok(store
        .get(&debug_meta_key(build_id))?
        .and_then(|json| DebugFileMeta::from_json(&json).ok()))
}

/// What adding one debug file did.
#[derive(Clone, Debug, PartialEq)]
pub enum DebugFileOutcome {
    /// The file is now the build ID's symbols; profiles that reference it need rehydration.
    Stored {
        /// Its key.
        key: String,
        /// What it is.
        meta: Box<DebugFileMeta>,
        /// The meta of the file it displaced.
        replaced: Option<Box<DebugFileMeta>>,
    },
    /// The file is valid but not better than the one in use (or is that one): nothing changed.
    Kept {
        /// Its key.
        key: String,
        /// The build ID.
        build_id: BuildId,
        /// The file in use.
        in_use: Box<DebugFileMeta>,
        /// Whether the file has unwind tables: a runtime binary kept beside a better debug
        /// file still unwinds `--call-graph dwarf` stacks, so the uploads of its build ID
        /// ([`RehydrateScope::indexed_uploads`](crate::RehydrateScope::indexed_uploads)) can
        /// change with it.
        unwind_tables: bool,
    },
    /// The file cannot be used; a report was written next to it and no profile changed.
    Refused {
        /// Its key.
        key: String,
        /// Where the report is.
        report_key: String,
        /// [`ErrorKind::reason`] of the failure.
        reason: &'static str,
        /// The error, readable.
        message: String,
    },
    /// Nothing to do for this key.
    Skipped {
        /// The key.
        key: String,
        /// Why: `derived` (a cache, meta or report), `missing`, `not_debuginfo`.
        why: &'static str,
    },
}

/// Stores the debug file `file_name` of `build_id` (see [`debug_file_build_id`]) where debug
/// files go, and returns its key, the key [`add_debug_file`] validates.
pub fn store_debug_file(
    store: &dyn ObjectStore,
    build_id: &BuildId,
    file_name: &str,
    bytes: &[u8],
) -> Result<String> {
    let key = debug_file_key(build_id, file_name);
    store.put(&key, bytes)?;
    Ok(key)
}

/// Validates the debug file at `key`, builds its cache and makes it the build ID's symbols
/// when it is better than the file in use. Only store failures are errors (transient);
/// everything about the file itself ends in [`DebugFileOutcome::Refused`]. Safe to repeat.
/// `max_bytes` is [`Limits::max_debug_file_bytes`](crate::Limits::max_debug_file_bytes): a
/// larger file is refused unread.
pub fn add_debug_file(
    store: &dyn ObjectStore,
    key: &str,
    max_bytes: u64,
) -> Result<DebugFileOutcome> {
    let skipped = |why| {
        Ok(DebugFileOutcome::Skipped {
            key: key.into(),
            why,
        })
    };
    let build_id = match debug_info_key(key) {
        DebugInfoKey::DebugFile { build_id } => build_id,
        DebugInfoKey::Derived => return skipped("derived"),
        DebugInfoKey::Other => return skipped("not_debuginfo"),
        DebugInfoKey::Invalid => {
            let error = ErrorKind::DebugFileKey { key: key.into() }.into();
            return refuse(store, key, "", 0, error);
        }
    };
    let (bytes, info) = match store.get_object(key, max_bytes) {
        Ok(Some(object)) => object,
        Ok(None) => return skipped("missing"),
        Err(e) if e.kind().is_transient() => return Err(e),
        Err(e) => return refuse(store, key, "", 0, e.name_limit("max_debug_file_bytes")),
    };
    let in_use = current_debug_meta(store, &build_id)?;
    let sha256 = hex::encode(Sha256::digest(&bytes));
    if let Some(in_use) = &in_use {
        // The file in use, delivered again: nothing to build.
        if in_use.debug_file_sha256 == sha256 {
            clear_report(store, key)?;
            return Ok(DebugFileOutcome::Kept {
                key: key.into(),
                build_id,
                in_use: Box::new(in_use.clone()),
                unwind_tables: has_unwind_tables(&bytes),
            });
        }
    }
    let keys = DebugFileKeys {
        debug_file: key.into(),
        symcache: symcache_key(&build_id, &sha256),
    };
    let ingested = match ingest_debug_file(&build_id, &bytes, keys) {
        Ok(ingested) => ingested,
        Err(e) => return refuse(store, key, &info.etag, info.size, e),
    };
    clear_report(store, key)?;
    if let Some(in_use) = in_use
        .as_ref()
        .filter(|m| m.quality >= ingested.meta.quality)
    {
        return Ok(DebugFileOutcome::Kept {
            key: key.into(),
            build_id,
            in_use: Box::new(in_use.clone()),
            unwind_tables: has_unwind_tables(&bytes),
        });
    }
    let previous = in_use;
    let mut meta = ingested.meta;
    // A separate debug file has hollow program headers; the binary it replaces had real ones.
    if meta.segments.is_none() {
        meta.segments = previous.as_ref().and_then(|p| p.segments.clone());
    }
    // The cache first, the meta that names it last: a reader never finds a meta without its
    // cache.
    store.put(&meta.symcache_key, &ingested.symcache)?;
    store.put(&debug_meta_key(&build_id), &meta.to_json())?;
    if let Some(old) = &previous {
        if old.symcache_key != meta.symcache_key {
            store.delete(&old.symcache_key)?;
        }
    }
    Ok(DebugFileOutcome::Stored {
        key: key.into(),
        meta: Box::new(meta),
        replaced: previous.map(Box::new),
    })
}

fn clear_report(store: &dyn ObjectStore, key: &str) -> Result<()> {
    let report = error_report_key(key);
    if store.exists(&report)? {
        store.delete(&report)?;
    }
    Ok(())
}

fn refuse(
    store: &dyn ObjectStore,
    key: &str,
    etag: &str,
    bytes: u64,
    error: Error,
) -> Result<DebugFileOutcome> {
    let (report_key, reason, message) = write_error_report(store, key, etag, bytes, error)?;
    Ok(DebugFileOutcome::Refused {
        key: key.into(),
        report_key,
        reason,
        message,
    })
}

/// Every build ID with symbols in the store, with its meta, in build-ID order.
pub fn list_debug_files(store: &dyn ObjectStore) -> Result<Vec<DebugFileMeta>> {
    let mut metas = Vec::new();
    for key in store.list(DEBUGINFO_PREFIX)? {
        if !is_debug_meta_key(&key) {
            continue;
        }
        if let Some(json) = store.get(&key)? {
            if let Ok(meta) = DebugFileMeta::from_json(&json) {
                metas.push(meta);
            }
        }
    }
    Ok(metas)
}
