//! The small JSON stored beside each debug file (`debuginfo/<build-id>/meta.json`): what the
//! file is, what it can name, and which file the lookup cache was built from.

use serde::{Deserialize, Serialize};

use super::segments::Segment;
use crate::model::BuildId;

/// Version of the meta layout.
pub const DEBUG_META_VERSION: u32 = 1;

/// What a debug file can tell, worst first. A file replaces the one in use only when its
/// quality is higher, so a stripped binary never displaces DWARF and DWARF uploaded after a
/// symbol table takes over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Quality {
    /// A symbol table only: function names, no files or lines.
    Symbols,
    /// Line information: files and lines, but no inlined calls.
    Lines,
    /// Line information with inlined calls.
    Inlines,
}

/// What is known of one stored debug file and its lookup cache.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DebugFileMeta {
    /// Layout version ([`DEBUG_META_VERSION`]).
    pub meta_version: u32,
    /// The build ID the file is stored under (lowercase).
    pub build_id: BuildId,
    /// Where the debug file itself is.
    pub debug_file_key: String,
    /// Its size.
    pub debug_file_bytes: u64,
    /// Hex SHA-256 of its bytes: which file symbolized a conversion.
    pub debug_file_sha256: String,
    /// `elf`, `breakpad`, `macho`, `pe`.
    pub file_format: String,
    /// `executable`, `library`, `debug` (a separate debug file), ...
    pub object_kind: String,
    /// CPU architecture, as `symbolic` names it (`x86_64`, `arm64`, ...).
    pub arch: String,
    /// Code id: the GNU build ID for ELF, lowercase hex.
    pub code_id: Option<String>,
    /// Debug id, as symbol servers index it.
    pub debug_id: String,
    /// Whether it has a symbol table.
    pub has_symbols: bool,
    /// Whether it has line information (DWARF, Breakpad `FUNC`/line records, PDB).
    pub has_debug_info: bool,
    /// Whether the line information records inlined calls.
    pub has_inline_info: bool,
    /// Overall quality, the ranking between files of one build ID.
    pub quality: Quality,
    /// The address the file's addresses are relative to in the lookup cache (the first
    /// `PT_LOAD`'s `p_vaddr` for ELF; 0 for Breakpad).
    pub load_address: u64,
    /// ELF loadable segments, for turning file offsets into virtual addresses; `None` for
    /// formats without program headers (Breakpad).
    pub segments: Option<Vec<Segment>>,
    /// Where the lookup cache is.
    pub symcache_key: String,
    /// Format version of the lookup cache (`symbolic` SymCache).
    pub symcache_version: u32,
    /// Size of the lookup cache.
    pub symcache_bytes: u64,
}

/// Where a debug file and the lookup cache built from it are kept. The store names them; the
/// meta records them, and a symbolization report names the file that named an image's frames
/// by its key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DebugFileKeys {
    /// The debug file's key.
    pub debug_file: String,
    /// Its lookup cache's key.
    pub symcache: String,
}

impl DebugFileMeta {
    /// Reads a stored meta.
    pub fn from_json(bytes: &[u8]) -> serde_json::Result<Self> {
        serde_json::from_slice(bytes)
    }

    /// The stored form.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).expect("debug-file meta serializes")
    }
}
