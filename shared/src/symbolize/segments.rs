//! The `PT_LOAD` program headers of an ELF file: what turns a file offset into the virtual
//! address the debug information is written in.

use goblin::container::{Container, Ctx};
use goblin::elf::program_header::{ProgramHeader, PT_LOAD};
use goblin::elf::Elf;
use serde::{Deserialize, Serialize};

/// One loadable segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segment {
    /// Where the segment starts in the file.
    pub file_offset: u64,
    /// The virtual address it is loaded at, before relocation.
    pub vaddr: u64,
    /// Bytes of the file it maps.
    pub file_size: u64,
}

/// The loadable segments of an ELF file, in header order; `None` when the bytes are not an
/// ELF file, its program headers cannot be read, or they are hollow: a separate debug file
/// (`objcopy --only-keep-debug`) keeps each `PT_LOAD`'s address but zeroes its file extent.
pub(crate) fn elf_load_segments(bytes: &[u8]) -> Option<Vec<Segment>> {
    let header = Elf::parse_header(bytes).ok()?;
    let container = if header.container().ok()?.is_big() {
        Container::Big
    } else {
        Container::Little
    };
    let ctx = Ctx::new(container, header.endianness().ok()?);
    let count = usize::from(header.e_phnum);
    // Each header is at least 32 bytes: a count the file cannot hold is corrupt, not a reason
    // to allocate.
    if count.saturating_mul(32) > bytes.len() {
        return None;
    }
    let headers =
        ProgramHeader::parse(bytes, usize::try_from(header.e_phoff).ok()?, count, ctx).ok()?;
    let loads = || headers.iter().filter(|h| h.p_type == PT_LOAD);
    if loads().any(|h| h.p_filesz == 0 && h.p_memsz > 0 && h.is_executable()) {
        return None;
    }
    Some(
        loads()
            .map(|h| Segment {
                file_offset: h.p_offset,
                vaddr: h.p_vaddr,
                file_size: h.p_filesz,
            })
            .collect(),
    )
}

/// The virtual address of a file offset, through the segment that maps it.
pub(crate) fn offset_to_vaddr(segments: &[Segment], offset: u64) -> Option<u64> {
    segments
        .iter()
        .find(|s| offset >= s.file_offset && offset - s.file_offset < s.file_size)
        .map(|s| offset - s.file_offset + s.vaddr)
}

/// The file offset of a virtual address, through the segment that maps it.
pub(crate) fn vaddr_to_offset(segments: &[Segment], vaddr: u64) -> Option<u64> {
    segments
        .iter()
        .find(|s| vaddr >= s.vaddr && vaddr - s.vaddr < s.file_size)
        .map(|s| vaddr - s.vaddr + s.file_offset)
}
