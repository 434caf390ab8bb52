//! `--call-graph dwarf` user stacks unwound with framehop: the sampled registers and the copy
//! of the user stack that perf recorded, read with the DWARF CFI (`.eh_frame`) of the runtime
//! binaries a [`UnwindBinaries`] hands over by build ID. x86_64 only.
//!
//! Each binary is fetched and its sections found once per decode; each process gets an
//! unwinder at its first such sample (made again only after its mappings change), and one
//! rule cache serves them all. A stack is followed while its frames lie in mappings whose
//! binary is known: at the first frame in another, it stops there (that frame kept), as
//! framehop would otherwise guess on with frame pointers.

use std::ops::{Deref, Range};
use std::sync::Arc;

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, FrameAddress, Module, Unwinder};
use rustc_hash::FxHashMap;

use super::address_space::AddressSpace;
use crate::formats::binaries::UnwindBinaries;
use crate::model::{BuildId, Profile};

/// perf's x86_64 register numbers (`arch/x86/include/uapi/asm/perf_regs.h`).
pub(super) const X86_64_BP: u64 = 6;
pub(super) const X86_64_SP: u64 = 7;
pub(super) const X86_64_IP: u64 = 8;

/// How far a sample's user stack was unwound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Unwound {
    /// The sampled instruction lies in no mapping with a known binary: nothing unwound.
    NoBinary,
    /// Unwound until a frame in a mapping without a binary, or until the copied stack bytes
    /// (or the depth limit) ran out.
    Partly,
    /// Unwound to the stack's root.
    Whole,
}

/// A section of a binary: the shared file bytes and where in them it lies.
// Default: framehop's section list derives it.
#[derive(Clone, Default)]
struct Section {
    file: Arc<[u8]>,
    range: Range<usize>,
}

impl Deref for Section {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.file[self.range.clone()]
    }
}

/// What framehop needs of one ELF binary, found once.
struct ElfUnwind {
    sections: ExplicitModuleSectionInfo<Section>,
    /// `PT_LOAD` segments as (file offset, virtual address, size in the file).
    loads: Vec<(u64, u64, u64)>,
}

impl ElfUnwind {
    /// The binary's unwind sections, or `None` when it is no ELF goblin reads or carries no
    /// `.eh_frame` contents (a separate debug file keeps it as `NOBITS`).
    fn read(file: Arc<[u8]>) -> Option<ElfUnwind> {
        use goblin::elf::{program_header::PT_LOAD, section_header::SHT_NOBITS, Elf};
        let elf = Elf::parse(&file).ok()?;
        let mut sections = ExplicitModuleSectionInfo::<Section> {
            base_svma: 0,
            ..Default::default()
        };
        for header in &elf.section_headers {
            let Some(name) = elf.shdr_strtab.get_at(header.sh_name) else {
                continue;
            };
            let svma = header.sh_addr..header.sh_addr.saturating_add(header.sh_size);
            let data = || {
                if header.sh_type == SHT_NOBITS {
                    return None;
                }
                let start = usize::try_from(header.sh_offset).ok()?;
                let end = start.checked_add(usize::try_from(header.sh_size).ok()?)?;
                (end <= file.len()).then(|| Section {
                    file: file.clone(),
                    range: start..end,
                })
            };
            match name {
                ".text" => (sections.text_svma, sections.text) = (Some(svma), data()),
                ".got" => sections.got_svma = Some(svma),
                ".eh_frame" => (sections.eh_frame_svma, sections.eh_frame) = (Some(svma), data()),
                ".eh_frame_hdr" => {
                    (sections.eh_frame_hdr_svma, sections.eh_frame_hdr) = (Some(svma), data())
                }
                _ => {}
            }
        }
        sections.eh_frame.as_ref()?;
        let loads = (elf.program_headers.iter())
            .filter(|p| p.p_type == PT_LOAD)
            .map(|p| (p.p_offset, p.p_vaddr, p.p_filesz))
            .collect();
        Some(ElfUnwind { sections, loads })
    }

    /// The process address at which the binary's virtual address 0 lies, for a mapping of it
    /// that starts at `start` with the file at `file_offset`.
    fn base_avma(&self, start: u64, file_offset: u64) -> Option<u64> {
        let &(offset, vaddr, _) = (self.loads.iter()).find(|&&(offset, _, size)| {
            (offset..offset.saturating_add(size)).contains(&file_offset)
        })?;
        Some(start.wrapping_sub(vaddr.wrapping_add(file_offset - offset)))
    }
}

/// One process's unwinder and the address ranges it has binaries for, sorted.
struct Process {
    unwinder: UnwinderX86_64<Section>,
    known: Vec<Range<u64>>,
}

impl Process {
    fn knows(&self, address: u64) -> bool {
        let after = self.known.partition_point(|r| r.start <= address);
        after > 0 && address < self.known[after - 1].end
    }
}

pub(super) struct UserUnwinder<'b> {
    binaries: &'b dyn UnwindBinaries,
    elves: FxHashMap<BuildId, Option<Arc<ElfUnwind>>>,
    processes: FxHashMap<i32, Process>,
    cache: CacheX86_64,
    /// The last sample's frames, leaf first (reused, not allocated per sample).
    pub(super) frames: Vec<u64>,
}

impl<'b> UserUnwinder<'b> {
    pub(super) fn new(binaries: &'b dyn UnwindBinaries) -> Self {
        UserUnwinder {
            binaries,
            elves: FxHashMap::default(),
            processes: FxHashMap::default(),
            cache: CacheX86_64::new(),
            frames: Vec::new(),
        }
    }

    /// Forgets `pid`'s unwinder: its mappings changed.
    pub(super) fn forget(&mut self, pid: i32) {
        self.processes.remove(&pid);
    }

    /// Unwinds one sample of `pid` from its user registers and stack copy (which starts at
    /// `regs.sp()`) into [`Self::frames`], at most `max_frames` of them.
    pub(super) fn unwind(
        &mut self,
        pid: i32,
        maps: Option<&AddressSpace>,
        profile: &Profile,
        regs: UnwindRegsX86_64,
        stack: &[u8],
        max_frames: usize,
    ) -> Unwound {
        self.frames.clear();
        let process = match self.processes.entry(pid) {
            std::collections::hash_map::Entry::Occupied(p) => p.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => {
                let (binaries, elves) = (self.binaries, &mut self.elves);
                v.insert(process(maps, profile, binaries, elves))
            }
        };
        let ip = regs.ip();
        if !process.knows(ip) {
            return Unwound::NoBinary;
        }
        let sp = regs.sp();
        let mut read_stack = |address: u64| -> Result<u64, ()> {
            let at = usize::try_from(address.checked_sub(sp).ok_or(())?).map_err(|_| ())?;
            let word = stack.get(at..at.checked_add(8).ok_or(())?).ok_or(())?;
            Ok(u64::from_le_bytes(word.try_into().map_err(|_| ())?))
        };
        let mut frames = (process.unwinder).iter_frames(ip, regs, &mut self.cache, &mut read_stack);
        loop {
            if self.frames.len() >= max_frames {
                return Unwound::Partly;
            }
            match frames.next() {
                Ok(Some(frame)) => {
                    let address = match frame {
                        FrameAddress::InstructionPointer(a) => a,
                        FrameAddress::ReturnAddress(a) => a.get(),
                    };
                    self.frames.push(address);
                    // A caller in code without a binary: kept, but not unwound through.
                    if !process.knows(frame.address_for_lookup()) {
                        return Unwound::Partly;
                    }
                }
                Ok(None) => return Unwound::Whole,
                Err(_) => return Unwound::Partly,
            }
        }
    }
}

/// The unwinder of a process with `maps`: a module for each mapping whose binary is known.
fn process(
    maps: Option<&AddressSpace>,
    profile: &Profile,
    binaries: &dyn UnwindBinaries,
    elves: &mut FxHashMap<BuildId, Option<Arc<ElfUnwind>>>,
) -> Process {
    let mut unwinder = UnwinderX86_64::new();
    let mut known = Vec::new();
    for (start, end, handle) in maps.into_iter().flat_map(AddressSpace::iter) {
        let image = profile.image(handle);
        let Some(build_id) = image.code_id.as_ref().and_then(BuildId::from_code_id) else {
            continue;
        };
        let elf = elves
            .entry(build_id)
            .or_insert_with_key(|id| binaries.binary(id).and_then(ElfUnwind::read).map(Arc::new));
        let Some(elf) = elf else { continue };
        let Some(base_avma) = elf.base_avma(start, image.file_offset) else {
            continue;
        };
        let name = profile.opt_str(image.path).unwrap_or_default().to_owned();
        unwinder.add_module(Module::new(
            name,
            start..end,
            base_avma,
            elf.sections.clone(),
        ));
        known.push(start..end);
    }
    known.sort_by_key(|r| r.start);
    Process { unwinder, known }
}
