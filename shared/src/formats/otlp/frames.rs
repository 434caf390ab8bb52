//! Stacks, locations and mappings of the dictionary as model stacks, frames and images, each
//! resolved once per request.

use proflake_proto::otlp::profiles::{Location, Mapping};

use super::dict::{Dict, PathFn, Scalar};
use crate::error::Result;
use crate::model::{
    ids_from_build_id, Frame, FrameAddress, FrameHandle, FrameKind, Image, ImageHandle,
    InlinedCall, Profile, StackHandle,
};

/// Location attribute naming the kind of code (eBPF profiler: native, kernel, jvm, go, ...).
const FRAME_TYPE: &str = "profile.frame.type";
/// Mapping attribute holding the GNU build id as hex.
const BUILD_ID_GNU: &str = "process.executable.build_id.gnu";

/// Stat: samples whose stack has more than `max_stack_depth` locations, kept without a stack.
const STACK_TOO_DEEP: &str = "otlp_stack_too_deep";

/// Per-request caches, by dictionary index.
pub(super) struct Frames {
    stacks: Vec<Option<Option<StackHandle>>>,
    locations: Vec<Option<FrameHandle>>,
    images: Vec<Option<ImageHandle>>,
    max_depth: u64,
}

impl Frames {
    pub(super) fn new(dict: &Dict, max_depth: u64) -> Self {
        let t = dict.tables;
        Frames {
            stacks: vec![None; t.stack_table.len()],
            locations: vec![None; t.location_table.len()],
            images: vec![None; t.mapping_table.len()],
            max_depth,
        }
    }

    /// The model stack of `stack_table[index]`; `None` for an empty stack, and for one deeper
    /// than the limit (counted).
    pub(super) fn stack(
        &mut self,
        dict: &Dict,
        profile: &mut Profile,
        index: i32,
        path: PathFn,
    ) -> Result<Option<StackHandle>> {
        let table = &dict.tables.stack_table;
        let si = dict.index(index, table.len(), "stack_table", path)?;
        let locations = &table[si].location_indices;
        // Counted per sample, as the other decoders count theirs, so before the cache.
        if locations.len() as u64 > self.max_depth {
            profile.count(STACK_TOO_DEEP);
            return Ok(None);
        }
        if let Some(done) = self.stacks[si] {
            return Ok(done);
        }
        let mut frames = Vec::with_capacity(locations.len());
        for (k, &li) in locations.iter().enumerate() {
            frames.push(self.location(dict, profile, li, &|| {
                format!("dictionary.stack_table[{si}].location_indices[{k}]")
            })?);
        }
        // OTLP lists the leaf first; the model builds from the root.
        let stack = profile.add_stack_from_root(frames.into_iter().rev());
        self.stacks[si] = Some(stack);
        Ok(stack)
    }

    fn location(
        &mut self,
        dict: &Dict,
        profile: &mut Profile,
        index: i32,
        path: PathFn,
    ) -> Result<FrameHandle> {
        let table = &dict.tables.location_table;
        let li = dict.index(index, table.len(), "location_table", path)?;
        if let Some(done) = self.locations[li] {
            return Ok(done);
        }
        let frame = self.frame(dict, profile, li, &table[li])?;
        let handle = profile.add_frame(frame);
        self.locations[li] = Some(handle);
        Ok(handle)
    }

    fn frame(
        &mut self,
        dict: &Dict,
        profile: &mut Profile,
        li: usize,
        loc: &Location,
    ) -> Result<Frame> {
        let at = || format!("dictionary.location_table[{li}]");
        let mut frame_type = None;
        for (i, &index) in loc.attribute_indices.iter().enumerate() {
            let attr = dict.attribute(index, &|| format!("{}.attribute_indices[{i}]", at()))?;
            if attr.key == FRAME_TYPE {
                let v = dict.scalar(attr.value, &|| {
                    format!("dictionary.attribute_table[{index}].value")
                })?;
                frame_type = Some(v.into_string());
            }
        }
        let mut frame = Frame::new(frame_kind(profile, frame_type.as_deref()));
        if loc.mapping_index != 0 {
            frame.image = Some(self.image(dict, profile, loc.mapping_index, &|| {
                format!("{}.mapping_index", at())
            })?);
        }
        let mut calls = Vec::with_capacity(loc.lines.len());
        for (k, line) in loc.lines.iter().enumerate() {
            let fpath = || format!("{}.lines[{k}].function_index", at());
            let functions = &dict.tables.function_table;
            let fi = dict.index(
                line.function_index,
                functions.len(),
                "function_table",
                &fpath,
            )?;
            let f = &functions[fi];
            let fat = || format!("dictionary.function_table[{fi}]");
            let name = dict.opt_string(f.name_strindex, &|| format!("{}.name_strindex", fat()))?;
            let system = dict.opt_string(f.system_name_strindex, &|| {
                format!("{}.system_name_strindex", fat())
            })?;
            let file = dict.opt_string(f.filename_strindex, &|| {
                format!("{}.filename_strindex", fat())
            })?;
            calls.push((
                name.or(system).map(|n| profile.intern(n)),
                system
                    .filter(|s| name.is_some_and(|n| n != *s))
                    .map(|s| profile.intern(s)),
                file.map(|f| profile.intern(f)),
                one_based(line.line),
                one_based(line.column),
            ));
        }
        let mut calls = calls.into_iter();
        // lines[0] is the innermost function; the rest are its callers, outward.
        if let Some((function, system_name, file, line, column)) = calls.next() {
            frame.function = function;
            frame.system_name = system_name;
            frame.file = file;
            frame.line = line;
            frame.column = column;
        }
        frame.inlined_into = calls
            .map(|(function, system_name, file, line, column)| InlinedCall {
                function,
                system_name,
                file,
                line,
                column,
            })
            .collect();
        if loc.address != 0 && (loc.lines.is_empty() || is_machine_code(frame_type.as_deref())) {
            frame.address = Some(FrameAddress::Absolute(loc.address));
        }
        Ok(frame)
    }

    fn image(
        &mut self,
        dict: &Dict,
        profile: &mut Profile,
        index: i32,
        path: PathFn,
    ) -> Result<ImageHandle> {
        let table = &dict.tables.mapping_table;
        let mi = dict.index(index, table.len(), "mapping_table", path)?;
        if let Some(done) = self.images[mi] {
            return Ok(done);
        }
        let image = image(dict, profile, mi, &table[mi])?;
        let handle = profile.add_image(image);
        self.images[mi] = Some(handle);
        Ok(handle)
    }
}

fn image(dict: &Dict, profile: &mut Profile, mi: usize, m: &Mapping) -> Result<Image> {
    let at = || format!("dictionary.mapping_table[{mi}]");
    let path = dict.opt_string(m.filename_strindex, &|| {
        format!("{}.filename_strindex", at())
    })?;
    let mut image = Image::new(
        path.map(|p| profile.intern(p)),
        m.memory_start,
        m.memory_limit,
    );
    image.file_offset = m.file_offset;
    for (i, &index) in m.attribute_indices.iter().enumerate() {
        let attr = dict.attribute(index, &|| format!("{}.attribute_indices[{i}]", at()))?;
        if attr.key != BUILD_ID_GNU {
            continue;
        }
        let raw = match dict.scalar(attr.value, &|| {
            format!("dictionary.attribute_table[{index}].value")
        })? {
            Scalar::Str(hex_id) => hex::decode(hex_id.trim()).ok(),
            // Bytes values arrive as hex text as well.
            Scalar::Text(hex_id) => hex::decode(hex_id).ok(),
            _ => None,
        };
        match raw {
            Some(raw) => (image.code_id, image.debug_id) = ids_from_build_id(&raw),
            None => profile.count("otlp build ids that are not hex"),
        }
    }
    Ok(image)
}

/// The model kind for the eBPF profiler's `profile.frame.type` words.
fn frame_kind(profile: &mut Profile, frame_type: Option<&str>) -> FrameKind {
    match frame_type {
        None | Some("") => FrameKind::Unknown,
        Some("native") => FrameKind::Native,
        Some("kernel") => FrameKind::Kernel,
        Some("jvm") => FrameKind::Jvm,
        Some("cpython") => FrameKind::Python,
        Some("v8js") => FrameKind::JavaScript,
        Some(other) => FrameKind::Other(profile.intern(other)),
    }
}

/// Whether a symbolized location's address is an instruction address. Interpreter frames
/// (jvm, cpython, v8js, php, ...) carry a bytecode offset or line there, which a symbolizer
/// must not take for code.
fn is_machine_code(frame_type: Option<&str>) -> bool {
    matches!(frame_type, None | Some("" | "native" | "kernel" | "go"))
}

/// A 1-based line or column; 0 (unset), negative or oversized values are unknown.
fn one_based(v: i64) -> Option<u32> {
    u32::try_from(v).ok().filter(|&v| v > 0)
}
