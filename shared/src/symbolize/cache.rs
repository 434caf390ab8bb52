//! One image's symbols as handed to the symbolizer: the meta and the lookup cache bytes.

use symbolic_symcache::SymCache;

use super::meta::DebugFileMeta;
use crate::error::{ErrorKind, Result};
use crate::model::BuildId;

/// A lookup cache and what it was built from.
#[derive(Debug)]
pub struct Symbols {
    /// The debug file's meta.
    pub meta: DebugFileMeta,
    // SymCache reads its sections in place and needs them 8-byte aligned: the cache is kept
    // in a buffer with room to start at an aligned offset.
    buffer: Vec<u8>,
    start: usize,
    len: usize,
}

impl Symbols {
    /// Takes a meta and the cache it describes; refuses a cache `symbolic` cannot read.
    pub fn new(meta: DebugFileMeta, symcache: Vec<u8>) -> Result<Symbols> {
        let symbols = Symbols::aligned(meta, symcache);
        symbols.cache()?;
        Ok(symbols)
    }

    fn aligned(meta: DebugFileMeta, symcache: Vec<u8>) -> Symbols {
        let len = symcache.len();
        if symcache.as_ptr().align_offset(8) == 0 {
            return Symbols {
                meta,
                buffer: symcache,
                start: 0,
                len,
            };
        }
        let mut buffer: Vec<u8> = Vec::with_capacity(len + 8);
        let start = buffer.as_ptr().align_offset(8).min(8);
        buffer.resize(start, 0);
        buffer.extend_from_slice(&symcache);
        Symbols {
            meta,
            buffer,
            start,
            len,
        }
    }

    /// The parsed cache.
    pub(crate) fn cache(&self) -> Result<SymCache<'_>> {
        SymCache::parse(&self.buffer[self.start..self.start + self.len]).map_err(|e| {
            crate::Error::from(ErrorKind::DebugFile {
                what: format!(
                    "the lookup cache of build ID {} cannot be read",
                    self.meta.build_id
                ),
            })
            .with_source(e)
        })
    }
}

/// Where the symbolizer gets symbols: asked once per build ID, answers with the stored meta
/// and cache, or `None` when no debug file for it is known.
pub trait SymbolSource {
    /// The symbols of `build_id`.
    fn symbols(&self, build_id: &BuildId) -> Result<Option<Symbols>>;

    /// The runtime binary filed under `build_id` (an ELF whose `.eh_frame` has contents), for
    /// unwinding stacks recorded as bytes (perf `--call-graph dwarf`); `None` when none is
    /// known. `has_unwind_tables` tells such a file from a separate debug file.
    fn binary(
        &self,
        build_id: &BuildId,
        has_unwind_tables: &dyn Fn(&[u8]) -> bool,
    ) -> Result<Option<Vec<u8>>> {
        let _ = (build_id, has_unwind_tables);
        Ok(None)
    }
}

/// No symbols at all: conversion names only what the input names.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoSymbols;

impl SymbolSource for NoSymbols {
    fn symbols(&self, _: &BuildId) -> Result<Option<Symbols>> {
        Ok(None)
    }
}
