//! Naming a profile's native frames from the lookup caches of their images.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use symbolic_common::{InstructionInfo, Language};
use symbolic_demangle::{Demangle, DemangleOptions};
use symbolic_symcache::SymCache;

use super::cache::{SymbolSource, Symbols};
use super::meta::Quality;
use super::segments::{offset_to_vaddr, vaddr_to_offset};
use crate::error::Result;
use crate::model::{BuildId, Frame, FrameAddress, Image, InlinedCall, Profile, SymbolStatus};

/// What symbolization did for one image (one build ID) of a profile.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageSymbolization {
    /// The image's build ID (code id, else debug id).
    pub build_id: BuildId,
    /// Path of the image, as the profile names it.
    pub image_path: Option<String>,
    /// The debug file that named its frames; `None` when none is known (yet).
    pub debug_file_key: Option<String>,
    /// Hex SHA-256 of that debug file.
    pub debug_file_sha256: Option<String>,
    /// Its quality.
    pub quality: Option<Quality>,
    /// Frames of the image that needed a name.
    pub frames: u64,
    /// Frames named.
    pub symbolicated: u64,
    /// Frames whose address the debug file has no symbol for.
    pub missing_symbol: u64,
    /// Frames whose address falls outside the debug file.
    pub malformed: u64,
}

impl ImageSymbolization {
    /// An image none of whose frames were looked at yet.
    fn new(build_id: BuildId, image_path: Option<String>) -> Self {
        ImageSymbolization {
            build_id,
            image_path,
            debug_file_key: None,
            debug_file_sha256: None,
            quality: None,
            frames: 0,
            symbolicated: 0,
            missing_symbol: 0,
            malformed: 0,
        }
    }
}

/// What symbolization did for a profile, by build ID.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SymbolizeReport {
    /// One entry per image build ID with unnamed frames, in build-ID order.
    pub images: Vec<ImageSymbolization>,
}

impl SymbolizeReport {
    /// Frames named across all images.
    pub fn symbolicated(&self) -> u64 {
        self.images.iter().map(|i| i.symbolicated).sum()
    }

    /// Adds another profile's report (pass-through chunks: one profile each).
    pub fn merge(&mut self, other: SymbolizeReport) {
        for image in other.images {
            match self
                .images
                .iter_mut()
                .find(|i| i.build_id == image.build_id)
            {
                Some(i) => {
                    i.frames += image.frames;
                    i.symbolicated += image.symbolicated;
                    i.missing_symbol += image.missing_symbol;
                    i.malformed += image.malformed;
                }
                None => self.images.push(image),
            }
        }
        self.images.sort_by(|a, b| a.build_id.cmp(&b.build_id));
    }
}

/// Whether symbolization works on this frame: native code the input left unnamed.
fn wants_name(frame: &Frame) -> bool {
    frame.function.is_none() && frame.image.is_some() && frame.address.is_some()
}

/// The build IDs whose symbols would name frames of `profile`, sorted and distinct.
pub fn symbolizable_build_ids(profile: &Profile) -> Vec<BuildId> {
    let mut ids: Vec<BuildId> = profile
        .frames()
        .filter(|(_, f)| wants_name(f))
        .filter_map(|(_, f)| profile.image(f.image?).build_id())
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

/// One frame's outcome, strings still owned.
enum Resolved {
    Status(SymbolStatus),
    Named {
        levels: Vec<Level>,
        function_start: Option<u64>,
    },
}

struct Level {
    function: String,
    system_name: Option<String>,
    file: Option<String>,
    line: Option<u32>,
}

/// Names every unnamed native frame of `profile` whose image has symbols in `source`, and
/// records a status on every frame it looked at. Asks `source` once per build ID.
pub fn symbolize(profile: &mut Profile, source: &dyn SymbolSource) -> Result<SymbolizeReport> {
    let mut loaded: BTreeMap<BuildId, Option<Symbols>> = BTreeMap::new();
    for id in symbolizable_build_ids(profile) {
        let symbols = source.symbols(&id)?;
        loaded.insert(id, symbols);
    }
    if loaded.is_empty() {
        return Ok(SymbolizeReport::default());
    }
    let caches: BTreeMap<&BuildId, (&Symbols, SymCache<'_>)> = loaded
        .iter()
        .filter_map(|(id, s)| {
            let s = s.as_ref()?;
            Some((id, (s, s.cache().ok()?)))
        })
        .collect();
    // Frames that call another are return addresses (only matters for absolute addresses).
    let mut caller = vec![false; profile.frames().len()];
    for (_, node) in profile.stacks() {
        if let Some(parent) = node.parent {
            caller[profile.stack(parent).frame.index()] = true;
        }
    }
    let mut report: BTreeMap<BuildId, ImageSymbolization> = BTreeMap::new();
    let mut outcomes: Vec<(usize, Resolved)> = Vec::new();
    for (h, frame) in profile.frames() {
        if !wants_name(frame) {
            continue;
        }
        let (Some(image_h), Some(address)) = (frame.image, frame.address) else {
            continue;
        };
        let image = profile.image(image_h);
        let Some(id) = image.build_id() else {
            continue;
        };
        let entry = report.entry(id.clone()).or_insert_with(|| {
            ImageSymbolization::new(id.clone(), profile.opt_str(image.path).map(str::to_owned))
        });
        entry.frames += 1;
        let resolved = match caches.get(&id) {
            None => Resolved::Status(SymbolStatus::UnknownImage),
            Some((symbols, cache)) => {
                entry.debug_file_key = Some(symbols.meta.debug_file_key.clone());
                entry.debug_file_sha256 = Some(symbols.meta.debug_file_sha256.clone());
                entry.quality = Some(symbols.meta.quality);
                let resolved = resolve(symbols, cache, image, address, caller[h.index()]);
                match &resolved {
                    Resolved::Named { .. } => entry.symbolicated += 1,
                    Resolved::Status(SymbolStatus::Malformed) => entry.malformed += 1,
                    Resolved::Status(_) => entry.missing_symbol += 1,
                }
                resolved
            }
        };
        outcomes.push((h.index(), resolved));
    }
    apply(profile, outcomes);
    Ok(SymbolizeReport {
        images: report.into_values().collect(),
    })
}

/// Interns the outcomes' strings, then writes them into the frames.
fn apply(profile: &mut Profile, outcomes: Vec<(usize, Resolved)>) {
    struct Interned {
        status: SymbolStatus,
        levels: Vec<InlinedCall>,
        function_start: Option<u64>,
    }
    let mut by_frame: BTreeMap<usize, Interned> = BTreeMap::new();
    for (i, resolved) in outcomes {
        let interned = match resolved {
            Resolved::Status(status) => Interned {
                status,
                levels: Vec::new(),
                function_start: None,
            },
            Resolved::Named {
                levels,
                function_start,
            } => Interned {
                status: SymbolStatus::Symbolicated,
                levels: levels
                    .into_iter()
                    .map(|l| InlinedCall {
                        function: Some(profile.intern(&l.function)),
                        system_name: l.system_name.map(|s| profile.intern(&s)),
                        file: l.file.map(|f| profile.intern(&f)),
                        line: l.line,
                        column: None,
                    })
                    .collect(),
                function_start,
            },
        };
        by_frame.insert(i, interned);
    }
    profile.rewrite_frames(|h, frame| {
        let Some(done) = by_frame.remove(&h.index()) else {
            return;
        };
        frame.symbol_status = Some(done.status);
        let mut levels = done.levels.into_iter();
        if let Some(innermost) = levels.next() {
            frame.function = innermost.function;
            frame.system_name = innermost.system_name;
            frame.file = innermost.file;
            frame.line = innermost.line;
            frame.column = None;
            frame.inlined_into = levels.collect();
            frame.function_start = done.function_start;
        }
    });
}

/// Looks one frame up: the address rule of its space, then the cache.
fn resolve(
    symbols: &Symbols,
    cache: &SymCache<'_>,
    image: &Image,
    address: FrameAddress,
    is_caller: bool,
) -> Resolved {
    let meta = &symbols.meta;
    let segments = meta.segments.as_deref().unwrap_or_default();
    // Breakpad rebases its addresses on the image: the mapping's load bias stands in for the
    // load address it does not record.
    let base = if meta.file_format == "breakpad" {
        image.load_bias
    } else {
        meta.load_address
    };
    let relative = match address {
        FrameAddress::ImageRelative(rel_pc) => rel_pc.checked_sub(base),
        // Already relative to the image base the symbols are laid out from.
        FrameAddress::BaseRelative(relative) => Some(relative),
        FrameAddress::Absolute(abs) => {
            let abs = if is_caller {
                InstructionInfo::new(cache.arch(), abs).previous_address()
            } else {
                abs
            };
            // Without usable program headers (Breakpad, separate debug files) the file is
            // taken as laid out like its address space: offset = virtual address − load address.
            abs.checked_sub(image.start)
                .and_then(|o| o.checked_add(image.file_offset))
                .and_then(|offset| match offset_to_vaddr(segments, offset) {
                    Some(vaddr) => vaddr.checked_sub(meta.load_address),
                    None => Some(offset),
                })
        }
    };
    let Some(relative) = relative else {
        return Resolved::Status(SymbolStatus::Malformed);
    };
    if relative > u64::from(u32::MAX) {
        return Resolved::Status(SymbolStatus::Malformed);
    }
    let mut levels = Vec::new();
    let mut entry_pc = None;
    for location in cache.lookup(relative) {
        let function = location.function();
        entry_pc = Some(function.entry_pc());
        let raw = function.name();
        let name = function.name_for_demangling();
        let demangled = match name.language() {
            Language::C | Language::Unknown if !looks_mangled(raw) => raw.to_owned(),
            _ => name
                .demangle(DemangleOptions::complete().return_type(false))
                .unwrap_or_else(|| raw.to_owned()),
        };
        levels.push(Level {
            system_name: (demangled != raw).then(|| raw.to_owned()),
            function: demangled,
            file: location
                .file()
                .map(|f| f.full_path())
                .filter(|p| !p.is_empty()),
            line: Some(location.line()).filter(|&l| l != 0),
        });
    }
    if levels.is_empty() {
        return Resolved::Status(SymbolStatus::MissingSymbol);
    }
    // The outermost function's entry, back in the frame's own address space.
    let function_start = entry_pc
        .filter(|&e| e != u32::MAX)
        .map(u64::from)
        .and_then(|entry| match address {
            FrameAddress::ImageRelative(_) => entry.checked_add(base),
            FrameAddress::BaseRelative(_) => Some(entry),
            FrameAddress::Absolute(_) => {
                let offset = entry
                    .checked_add(meta.load_address)
                    .and_then(|vaddr| vaddr_to_offset(segments, vaddr))
                    .unwrap_or(entry);
                offset
                    .checked_sub(image.file_offset)
                    .and_then(|o| o.checked_add(image.start))
            }
        });
    Resolved::Named {
        levels,
        function_start,
    }
}

fn looks_mangled(name: &str) -> bool {
    name.starts_with("_Z") || name.starts_with("_R") || name.starts_with("__Z")
}
