//! Runtime binaries by build ID, for decoders that unwind stacks themselves (perf.data's
//! `--call-graph dwarf` samples). The decoder only asks; whoever calls it (the pipeline, from
//! the symbol store) fetches, so `formats` stays free of any store.

use std::sync::Arc;

use crate::model::BuildId;

/// Where a decoder gets the bytes of the binary (ELF with `.eh_frame`) a build ID names.
pub(crate) trait UnwindBinaries {
    /// The binary filed under `build_id`, or `None` when none is known. Asked at most once per
    /// build ID and decode.
    fn binary(&self, build_id: &BuildId) -> Option<Arc<[u8]>>;
}

/// No binaries: stacks the input does not unwind itself stay as they are.
pub(crate) struct NoBinaries;

impl UnwindBinaries for NoBinaries {
    fn binary(&self, _: &BuildId) -> Option<Arc<[u8]>> {
        None
    }
}

/// Whether `bytes` are an ELF file whose `.eh_frame` has contents: a runtime binary, stripped
/// or not, and not a separate debug file (which keeps the section as `NOBITS`).
pub fn has_unwind_tables(bytes: &[u8]) -> bool {
    use goblin::elf::{section_header::SHT_NOBITS, Elf};
    let Ok(elf) = Elf::parse(bytes) else {
        return false;
    };
    elf.section_headers.iter().any(|header| {
        header.sh_type != SHT_NOBITS
            && header.sh_size > 0
            && elf.shdr_strtab.get_at(header.sh_name) == Some(".eh_frame")
    })
}
