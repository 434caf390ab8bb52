//! Symbolization by build ID, sans-IO: the caller fetches what is asked for and hands over
//! bytes. A debug file is validated and turned into a compact lookup cache once
//! ([`ingest_debug_file`]); a conversion then names its native frames from the caches of the
//! images it references ([`symbolize`]).
//!
//! The address rule per source (documented in `docs/symbols.md`, "Address rules"):
//! - **image-relative** addresses (Perfetto `rel_pc`) are ELF virtual addresses, already moved
//!   into the call instruction for caller frames by the unwinder: the lookup address is
//!   `rel_pc − load address` (the first `PT_LOAD`'s `p_vaddr`).
//! - **absolute** addresses (pprof, OTLP, perf.data, Sentry `instruction_addr`) go through the
//!   mapping to a file offset (`address − memory_start + file_offset`), then through the debug
//!   file's `PT_LOAD` headers to a virtual address. Caller frames are return addresses: they are moved
//!   back into the call instruction first (x86 −1, arm64 −4), as symbolicator does.
//! - Breakpad files carry no program headers: their addresses are already relative to the
//!   image, so an absolute address is taken as its file offset and `rel_pc` is reduced by the
//!   mapping's load bias.

mod apply;
mod cache;
mod debug_file;
mod meta;
mod segments;

pub use apply::{symbolize, ImageSymbolization, SymbolizeReport};
pub use cache::{NoSymbols, SymbolSource, Symbols};
pub use debug_file::{debug_file_build_id, ingest_debug_file};
#[cfg(test)]
pub(crate) use meta::Quality;
pub use meta::{DebugFileKeys, DebugFileMeta};
