//! Mappings become images and locations become frames.
//!
//! A pprof location is one program counter. Its `line` list, when symbolized, is the inline
//! chain at that address: innermost function first, the function the code physically sits in
//! last. The model keeps that as one frame (the innermost function) whose `inlined_into` lists
//! the rest, so a location stays one frame and the address keeps its meaning. A location
//! without lines is an unsymbolized native frame: address and image only.

use proflake_proto::pprof;

use super::tables::Tables;
use crate::formats::demangle::demangle;
use crate::model::{
    ids_from_build_id, Frame, FrameAddress, FrameHandle, FrameKind, Image, ImageHandle,
    InlinedCall, Profile, StringHandle,
};

/// Stat: build ids that are not hex (Go's `actionID/contentID` form), which the model's code
/// id cannot hold; the image keeps its path and range only.
const BUILD_ID_NOT_HEX: &str = "pprof_build_id_not_hex";

/// Length of a breakpad module id in text form, which `ids_from_build_id` takes as text.
const BREAKPAD_MODULE_ID_LEN: usize = 33;

/// A function's names as the model holds them.
#[derive(Clone, Copy, Default)]
struct Names {
    function: Option<StringHandle>,
    system_name: Option<StringHandle>,
    file: Option<StringHandle>,
}

/// Images and frames built so far.
pub(super) struct Frames {
    /// One image per mapping, by position.
    images: Vec<(ImageHandle, bool)>,
    /// Each location's frame, by position, once a sample has referred to it.
    frames: Vec<Option<FrameHandle>>,
    functions: Vec<Option<Names>>,
}

impl Frames {
    /// Makes an image of every mapping, referred to or not: a mapping says what was loaded,
    /// which is worth keeping even when no sample landed in it.
    pub(super) fn new(profile: &mut Profile, tables: &Tables, p: &pprof::Profile) -> Frames {
        let images = p
            .mapping
            .iter()
            .map(|m| {
                let path = tables.str(m.filename);
                (image(profile, tables, m), is_kernel(path))
            })
            .collect();
        Frames {
            images,
            frames: vec![None; p.location.len()],
            functions: vec![None; p.function.len()],
        }
    }

    /// The frame of the location at position `index`.
    pub(super) fn frame(
        &mut self,
        profile: &mut Profile,
        tables: &Tables,
        p: &pprof::Profile,
        index: usize,
    ) -> Option<FrameHandle> {
        if let Some(Some(frame)) = self.frames.get(index) {
            return Some(*frame);
        }
        let location = p.location.get(index)?;
        let mapping = tables
            .mapping(location.mapping_id)
            .and_then(|i| self.images.get(i).copied());
        let lines: Vec<(Names, &pprof::Line)> = location
            .line
            .iter()
            .map(|line| (self.names(profile, tables, p, line.function_id), line))
            .collect();
        let file = lines.first().and_then(|(names, _)| names.file);
        let kind = match mapping {
            Some((_, true)) => FrameKind::Kernel,
            Some(_) => FrameKind::Native,
            None if location.address != 0 => FrameKind::Native,
            None => kind_from_file(file.map(|f| profile.str(f))),
        };
        let mut frame = Frame::new(kind);
        frame.image = mapping.map(|(image, _)| image);
        frame.address = (location.address != 0).then_some(FrameAddress::Absolute(location.address));
        if let Some((names, line)) = lines.first() {
            frame.function = names.function;
            frame.system_name = names.system_name;
            frame.file = names.file;
            frame.line = positive(line.line);
            frame.column = positive(line.column);
        }
        frame.inlined_into = lines
            .iter()
            .skip(1)
            .map(|(names, line)| InlinedCall {
                function: names.function,
                system_name: names.system_name,
                file: names.file,
                line: positive(line.line),
                column: positive(line.column),
            })
            .collect();
        let handle = profile.add_frame(frame);
        if let Some(slot) = self.frames.get_mut(index) {
            *slot = Some(handle);
        }
        Some(handle)
    }

    fn names(
        &mut self,
        profile: &mut Profile,
        tables: &Tables,
        p: &pprof::Profile,
        function_id: u64,
    ) -> Names {
        let Some(index) = tables.function(function_id) else {
            return Names::default();
        };
        if let Some(Some(names)) = self.functions.get(index) {
            return *names;
        }
        let Some(f) = p.function.get(index) else {
            return Names::default();
        };
        let name = tables.opt_str(f.name);
        let system_name = tables.opt_str(f.system_name);
        let mut names = Names {
            file: tables.opt_str(f.filename).map(|s| profile.intern(s)),
            ..Names::default()
        };
        // pprof's `name` is usually demangled already and `system_name` the linker symbol;
        // producers that fill only one, or put a mangled symbol in `name`, still get a
        // readable name and keep the raw one.
        if let Some(raw) = name.or(system_name) {
            let readable = demangle(raw);
            let recorded = system_name
                .filter(|s| *s != readable)
                .or((readable != raw).then_some(raw));
            names.function = Some(profile.intern(&readable));
            names.system_name = recorded.map(|s| profile.intern(s));
        }
        if let Some(slot) = self.functions.get_mut(index) {
            *slot = Some(names);
        }
        names
    }
}

fn positive(n: i64) -> Option<u32> {
    u32::try_from(n).ok().filter(|&n| n > 0)
}

fn image(profile: &mut Profile, tables: &Tables, m: &pprof::Mapping) -> ImageHandle {
    let path = tables.opt_str(m.filename).map(|s| profile.intern(s));
    let mut image = Image::new(path, m.memory_start, m.memory_limit);
    image.file_offset = m.file_offset;
    if let Some(build_id) = tables.opt_str(m.build_id) {
        match build_id_bytes(build_id) {
            Some(raw) => (image.code_id, image.debug_id) = ids_from_build_id(&raw),
            None => profile.count(BUILD_ID_NOT_HEX),
        }
    }
    profile.add_image(image)
}

/// The bytes `ids_from_build_id` takes for a pprof build id: the decoded bytes of a hex GNU
/// build id, or the text of a breakpad module id. `None` for anything else (Go build ids).
fn build_id_bytes(text: &str) -> Option<Vec<u8>> {
    if text.len() == BREAKPAD_MODULE_ID_LEN && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Some(text.as_bytes().to_vec());
    }
    hex::decode(text).ok()
}

/// Kernel images as perf and the eBPF profiler name them.
fn is_kernel(path: &str) -> bool {
    let base = path.rsplit('/').next().unwrap_or(path);
    path.starts_with("[kernel") || base == "vmlinux" || base.starts_with("vmlinux-")
}

/// The kind of a frame with no address or image, from its source file: interpreters'
/// profilers (py-spy, Node, JFR converters) write frames like that.
fn kind_from_file(file: Option<&str>) -> FrameKind {
    let ext = file.and_then(|f| f.rsplit_once('.')).map(|(_, ext)| ext);
    match ext {
        Some("py" | "pyx") => FrameKind::Python,
        Some("js" | "mjs" | "cjs" | "ts" | "mts" | "cts" | "jsx" | "tsx") => FrameKind::JavaScript,
        Some("java" | "kt" | "scala" | "groovy") => FrameKind::Jvm,
        Some("go" | "c" | "cc" | "cpp" | "cxx" | "h" | "hpp" | "rs" | "zig" | "swift") => {
            FrameKind::Native
        }
        _ => FrameKind::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_ids() {
        assert_eq!(
            build_id_bytes("b03e4a7f"),
            Some(vec![0xb0, 0x3e, 0x4a, 0x7f])
        );
        assert_eq!(build_id_bytes("abc/def"), None);
        assert_eq!(build_id_bytes("abc"), None);
        let breakpad = "7F4A3EB0885E8D4CA04B05FA32CC4CBD0";
        assert_eq!(build_id_bytes(breakpad), Some(breakpad.as_bytes().to_vec()));
    }

    #[test]
    fn kinds() {
        assert!(is_kernel("[kernel.kallsyms]_text"));
        assert!(is_kernel("/usr/lib/debug/boot/vmlinux-6.1.0"));
        assert!(!is_kernel("/usr/lib/libvmlinux.so"));
        assert_eq!(kind_from_file(Some("/app/main.py")), FrameKind::Python);
        assert_eq!(kind_from_file(Some("server.go")), FrameKind::Native);
        assert_eq!(kind_from_file(Some("Makefile")), FrameKind::Unknown);
        assert_eq!(kind_from_file(None), FrameKind::Unknown);
    }
}
