//! Offline symbols in the trace: `module_symbols` packets (TracePacket field 61), which
//! `traceconv symbolize` / `trace_processor util symbolize` append to a trace.
//!
//! trace_processor matches a packet to mappings by exact (mapping name, raw build id) and to
//! frames by exact equality of `address` with the frame's `rel_pc`. The packets usually come
//! after the samples, so they are kept until every frame is known and applied at the end.

use debugid::CodeId;
use proflake_proto::perfetto::{Line, ModuleSymbols};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::error::Result;
use crate::formats::demangle::demangle;
use crate::limits::{exceeded, Limits};
use crate::model::{
    ids_from_build_id, Frame, FrameAddress, FrameHandle, ImageHandle, InlinedCall, Profile,
    StringHandle, SymbolStatus,
};

/// A mapping as trace_processor identifies it: its name ("" when it has none) and its build id
/// as the model keeps it (the code id is a one-to-one function of the raw bytes).
type MappingKey = (String, Option<CodeId>);

/// The `module_symbols` packets of a trace, in order.
pub(super) struct PendingSymbols {
    packets: Vec<ModuleSymbols>,
    lines: u64,
    max_lines: u64,
}

impl Default for PendingSymbols {
    fn default() -> Self {
        PendingSymbols::with_limit(Limits::default().max_module_symbol_lines)
    }
}

impl PendingSymbols {
    pub(super) fn with_limit(max_lines: u64) -> Self {
        PendingSymbols {
            packets: Vec::new(),
            lines: 0,
            max_lines,
        }
    }

    /// Keeps a packet for [`PendingSymbols::apply`]. Entries without lines say nothing and
    /// are dropped (trace_processor skips them too).
    pub(super) fn add(&mut self, mut packet: ModuleSymbols) -> Result<()> {
        packet.address_symbols.retain(|a| !a.lines.is_empty());
        let lines: usize = packet.address_symbols.iter().map(|a| a.lines.len()).sum();
        self.lines += lines as u64;
        if self.lines > self.max_lines {
            return Err(exceeded("max_module_symbol_lines", self.max_lines));
        }
        self.packets.push(packet);
        Ok(())
    }

    /// Names the profile's frames. A later entry for the same mapping and address replaces an
    /// earlier one, as in trace_processor.
    ///
    /// Stats: `module_symbols_packets` (packets matching a mapping),
    /// `stackprofile_invalid_mapping_id` (packets matching none, ignored),
    /// `stackprofile_invalid_frame_id` (entries naming no frame; trace_processor counts per
    /// matching mapping, this counts per entry) and `module_symbols_frames` (model frames
    /// named).
    pub(super) fn apply(self, profile: &mut Profile) {
        if self.packets.is_empty() {
            return;
        }
        let mut images: FxHashMap<MappingKey, Vec<ImageHandle>> = FxHashMap::default();
        for (h, image) in profile.images() {
            let name = profile.opt_str(image.path).unwrap_or("").to_owned();
            images
                .entry((name, image.code_id.clone()))
                .or_default()
                .push(h);
        }

        // Which entry names each (image, address); entries remember their keys so that
        // those naming no frame can be counted.
        let mut by_address: FxHashMap<(ImageHandle, u64), usize> = FxHashMap::default();
        let mut entries: Vec<(&[Line], &[ImageHandle], u64)> = Vec::new();
        for packet in &self.packets {
            let key = (
                packet.path.clone().unwrap_or_default(),
                ids_from_build_id(packet.build_id.as_deref().unwrap_or_default()).0,
            );
            let Some(handles) = images.get(&key) else {
                profile.count("stackprofile_invalid_mapping_id");
                continue;
            };
            profile.count("module_symbols_packets");
            for symbols in &packet.address_symbols {
                let address = symbols.address.unwrap_or(0);
                for &h in handles {
                    by_address.insert((h, address), entries.len());
                }
                entries.push((&symbols.lines, handles, address));
            }
        }

        let mut named: Vec<(FrameHandle, usize)> = Vec::new();
        let mut hit: FxHashSet<(ImageHandle, u64)> = FxHashSet::default();
        for (h, frame) in profile.frames() {
            let (Some(image), Some(address)) = (frame.image, rel_pc(frame)) else {
                continue;
            };
            if let Some(&entry) = by_address.get(&(image, address)) {
                named.push((h, entry));
                hit.insert((image, address));
            }
        }
        // An entry replaced by a later one for a frame that exists did name a frame.
        for (_, handles, address) in &entries {
            if !handles.iter().any(|&h| hit.contains(&(h, *address))) {
                profile.count("stackprofile_invalid_frame_id");
            }
        }

        let mut rewritten: FxHashMap<FrameHandle, Frame> =
            FxHashMap::with_capacity_and_hasher(named.len(), Default::default());
        for &(h, entry) in &named {
            let frame = symbolicated(profile, profile.frame(h).clone(), entries[entry].0);
            rewritten.insert(h, frame);
            profile.count("module_symbols_frames");
        }
        profile.rewrite_frames(|h, frame| {
            if let Some(new) = rewritten.remove(&h) {
                *frame = new;
            }
        });
    }
}

/// The frame's `rel_pc` as trace_processor stores it: an absent one is 0.
fn rel_pc(frame: &Frame) -> Option<u64> {
    match frame.address {
        Some(FrameAddress::ImageRelative(pc)) => Some(pc),
        None => Some(0),
        Some(FrameAddress::Absolute(_) | FrameAddress::BaseRelative(_)) => None,
    }
}

/// A demangled name and the raw one when demangling changed it; `None` for an empty name.
fn names(profile: &mut Profile, raw: Option<&str>) -> Option<(StringHandle, Option<StringHandle>)> {
    let raw = raw.filter(|n| !n.is_empty())?;
    let demangled = demangle(raw);
    let system = (demangled != raw).then(|| profile.intern(raw));
    Some((profile.intern(&demangled), system))
}

/// File and line of a symbol line; the line only counts with a file, as in trace_processor.
fn location(profile: &mut Profile, line: &Line) -> (Option<StringHandle>, Option<u32>) {
    match line.source_file_name.as_deref().filter(|f| !f.is_empty()) {
        Some(file) => (
            Some(profile.intern(file)),
            line.line_number.filter(|&l| l > 0),
        ),
        None => (None, None),
    }
}

/// `frame` named by `lines` (innermost inlinee first).
fn symbolicated(profile: &mut Profile, mut frame: Frame, lines: &[Line]) -> Frame {
    let Some((first, callers)) = lines.split_first() else {
        return frame;
    };
    // The name the trace recorded, whole: a JVM frame's class sits in `module`.
    let recorded = match (frame.module, frame.system_name.or(frame.function)) {
        (Some(module), Some(f)) => Some(format!("{}.{}", profile.str(module), profile.str(f))),
        (None, Some(f)) => Some(profile.str(f).to_owned()),
        (_, None) => None,
    };
    if let Some((function, system)) = names(profile, first.function_name.as_deref()) {
        frame.function = Some(function);
        frame.module = None;
        // The mangled symbol is what `system_name` is for; failing that, keep the name the
        // trace gave the frame when the symbol differs from it.
        frame.system_name = system.or_else(|| {
            recorded
                .filter(|r| r != profile.str(function))
                .map(|r| profile.intern(&r))
        });
    }
    (frame.file, frame.line) = location(profile, first);
    frame.column = None;
    frame.inlined_into = callers
        .iter()
        .map(|line| {
            let (function, system_name) = names(profile, line.function_name.as_deref())
                .map_or((None, None), |(f, s)| (Some(f), s));
            let (file, line) = location(profile, line);
            InlinedCall {
                function,
                system_name,
                file,
                line,
                column: None,
            }
        })
        .collect();
    frame.symbol_status = Some(SymbolStatus::Symbolicated);
    frame
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use crate::model::{FrameKind, Image};
    use proflake_proto::perfetto::AddressSymbols;

    const BUILD_ID: &[u8] = &[0xb0, 0x3e, 0x4a, 0x7f];

    fn line(function: &str, file: &str, line: u32) -> Line {
        Line {
            function_name: Some(function.into()),
            source_file_name: Some(file.into()),
            line_number: Some(line),
        }
    }

    fn packet(path: &str, build_id: &[u8], symbols: Vec<(u64, Vec<Line>)>) -> ModuleSymbols {
        ModuleSymbols {
            path: Some(path.into()),
            build_id: Some(build_id.to_vec()),
            address_symbols: symbols
                .into_iter()
                .map(|(address, lines)| AddressSymbols {
                    address: Some(address),
                    lines,
                })
                .collect(),
        }
    }

    /// A profile with `/lib/libx.so` (BUILD_ID) and one frame per (rel_pc, recorded name).
    fn profile(frames: &[(Option<u64>, Option<&str>)]) -> (Profile, Vec<FrameHandle>) {
        let mut p = Profile::new("perfetto");
        let mut image = Image::new(Some(p.intern("/lib/libx.so")), 0x1000, 0x9000);
        image.code_id = ids_from_build_id(BUILD_ID).0;
        let image = p.add_image(image);
        let handles = frames
            .iter()
            .map(|&(pc, name)| {
                let mut f = Frame::new(FrameKind::Native);
                f.image = Some(image);
                f.address = pc.map(FrameAddress::ImageRelative);
                f.function = name.map(|n| p.intern(n));
                p.add_frame(f)
            })
            .collect();
        (p, handles)
    }

    fn apply(p: &mut Profile, packets: Vec<ModuleSymbols>) {
        let mut pending = PendingSymbols::default();
        for packet in packets {
            pending.add(packet).unwrap();
        }
        pending.apply(p);
    }

    fn name(p: &Profile, s: Option<StringHandle>) -> Option<&str> {
        p.opt_str(s)
    }

    #[test]
    fn mangled_symbols_are_demangled_and_the_recorded_name_is_kept() {
        let (mut p, f) = profile(&[(Some(0x10), Some("old_name")), (Some(0x20), None)]);
        apply(
            &mut p,
            vec![packet(
                "/lib/libx.so",
                BUILD_ID,
                vec![
                    (0x10, vec![line("plain", "", 7)]),
                    (
                        0x20,
                        vec![
                            line("_Z5innerv", "a.cc", 3),
                            line("_ZN2ns5outerEi", "b.cc", 0),
                        ],
                    ),
                ],
            )],
        );
        let plain = p.frame(f[0]);
        assert_eq!(name(&p, plain.function), Some("plain"));
        assert_eq!(name(&p, plain.system_name), Some("old_name"));
        assert_eq!(
            (plain.file, plain.line),
            (None, None),
            "no line without a file"
        );
        assert_eq!(plain.symbol_status, Some(SymbolStatus::Symbolicated));

        let inlined = p.frame(f[1]);
        assert_eq!(name(&p, inlined.function), Some("inner()"));
        assert_eq!(name(&p, inlined.system_name), Some("_Z5innerv"));
        assert_eq!(name(&p, inlined.file), Some("a.cc"));
        assert_eq!(inlined.line, Some(3));
        let [outer] = &inlined.inlined_into[..] else {
            panic!("{:?}", inlined.inlined_into)
        };
        assert_eq!(name(&p, outer.function), Some("ns::outer(int)"));
        assert_eq!(name(&p, outer.system_name), Some("_ZN2ns5outerEi"));
        assert_eq!(name(&p, outer.file), Some("b.cc"));
        assert_eq!(outer.line, None, "line 0 is no line");
        assert_eq!(p.stats.get("module_symbols_frames"), Some(&2));
        assert_eq!(p.stats.get("module_symbols_packets"), Some(&1));
    }

    #[test]
    fn a_later_entry_replaces_an_earlier_one_and_is_not_counted_as_unmatched() {
        let (mut p, f) = profile(&[(None, None)]);
        // An absent rel_pc is address 0 to trace_processor.
        apply(
            &mut p,
            vec![
                packet(
                    "/lib/libx.so",
                    BUILD_ID,
                    vec![(0, vec![line("first", "", 0)])],
                ),
                packet(
                    "/lib/libx.so",
                    BUILD_ID,
                    vec![(0, vec![line("second", "", 0)])],
                ),
            ],
        );
        assert_eq!(name(&p, p.frame(f[0]).function), Some("second"));
        assert_eq!(p.stats.get("stackprofile_invalid_frame_id"), None);
        assert_eq!(p.stats.get("module_symbols_frames"), Some(&1));
    }

    #[test]
    fn mismatches_are_counted_and_change_nothing() {
        let (mut p, f) = profile(&[(Some(0x10), None)]);
        let before = p.frame(f[0]).clone();
        apply(
            &mut p,
            vec![
                packet(
                    "/lib/libx.so",
                    &[1, 2, 3],
                    vec![(0x10, vec![line("a", "", 0)])],
                ),
                packet(
                    "/lib/liby.so",
                    BUILD_ID,
                    vec![(0x10, vec![line("b", "", 0)])],
                ),
                packet(
                    "/lib/libx.so",
                    BUILD_ID,
                    vec![(0x11, vec![line("c", "", 0)]), (0x10, vec![])],
                ),
            ],
        );
        assert_eq!(p.frame(f[0]), &before);
        assert_eq!(p.stats.get("stackprofile_invalid_mapping_id"), Some(&2));
        assert_eq!(p.stats.get("stackprofile_invalid_frame_id"), Some(&1));
        assert_eq!(p.stats.get("module_symbols_frames"), None);
    }

    #[test]
    fn frames_made_equal_keep_their_handles() {
        // Two frames differing only in the recorded name get the same symbol: both handles
        // must still resolve to the symbolicated frame.
        let (mut p, f) = profile(&[(Some(0x10), Some("x")), (Some(0x10), None)]);
        apply(
            &mut p,
            vec![packet(
                "/lib/libx.so",
                BUILD_ID,
                vec![(0x10, vec![line("x", "", 0)])],
            )],
        );
        assert_eq!(p.frame(f[0]), p.frame(f[1]));
        assert_eq!(name(&p, p.frame(f[1]).function), Some("x"));
        assert_eq!(p.frame(f[1]).system_name, None, "the names agree");
    }

    #[test]
    fn kept_lines_are_limited() {
        let mut pending = PendingSymbols::with_limit(3);
        let lines = || vec![line("a", "", 0), line("b", "", 0)];
        pending
            .add(packet("/x", BUILD_ID, vec![(1, lines()), (2, vec![])]))
            .unwrap();
        let err = pending
            .add(packet("/x", BUILD_ID, vec![(3, lines())]))
            .unwrap_err();
        assert!(
            matches!(
                err.kind(),
                ErrorKind::LimitExceeded {
                    limit: "max_module_symbol_lines",
                    max: 3
                }
            ),
            "{err}"
        );
    }
}
