//! The selected profiles' frames and call trees, merged: frames equal in every column are
//! one frame, nodes with the same caller and frame one node.

use arrow_array::cast::AsArray;
use arrow_array::RecordBatch;
use rustc_hash::FxHashMap;

use super::profiles::{RowProfiles, Selected};
use super::{Frame, Inlined, Node, NONE};
use crate::error::Result;
use crate::export::columns::{self as col, get, malformed, required};
use crate::tables::Projection;

/// What a streamed slice reads of `stacks`, profile ids as dictionaries.
pub(crate) const STACK_PROJECTION: Projection<'static> = Projection {
    columns: &["profile_id", "stack_id", "parent_id", "frame_id", "depth"],
    dictionary: &["profile_id"],
    skip_null_columns: false,
};

/// What a streamed slice reads of `frames`, profile ids as dictionaries.
pub(crate) const FRAME_PROJECTION: Projection<'static> = Projection {
    columns: &FRAME_COLUMNS,
    dictionary: &["profile_id"],
    skip_null_columns: true,
};

/// The columns of `frames` a slice reads.
const FRAME_COLUMNS: [&str; 19] = [
    "profile_id",
    "frame_id",
    "name",
    "kind",
    "function",
    "system_name",
    "module",
    "file",
    "line",
    "column",
    "address",
    "address_space",
    "image_path",
    "build_id",
    "debug_id",
    "image_start",
    "image_end",
    "image_file_offset",
    "inlined_into",
];

/// The merged frames and call tree of the selected profiles.
pub(super) struct Merged {
    pub frames: Vec<Frame>,
    pub nodes: Vec<Node>,
    /// Per selected profile, each `stack_id`'s merged node ([`NONE`]: no such stack).
    pub node_maps: Vec<Vec<u32>>,
}

/// Merges the frames and call trees `stacks` and `frames` hold of the `selected` profiles.
pub(super) fn merge(
    stacks: &RecordBatch,
    frames: &RecordBatch,
    selected: &Selected<'_>,
) -> Result<Merged> {
    let mut merged = Merged {
        frames: Vec::new(),
        nodes: Vec::new(),
        node_maps: vec![Vec::new(); selected.by_id.len()],
    };
    let mut frame_maps = vec![Vec::new(); selected.by_id.len()];
    merge_frames(frames, selected, &mut merged.frames, &mut frame_maps)?;
    merge_stacks(stacks, selected, &frame_maps, &mut merged)?;
    Ok(merged)
}

fn opt_owned(column: &arrow_array::StringArray, row: usize) -> Option<String> {
    get(column, row).map(str::to_owned)
}

fn merge_frames(
    f: &RecordBatch,
    selected: &Selected<'_>,
    frames: &mut Vec<Frame>,
    frame_maps: &mut [Vec<u32>],
) -> Result<()> {
    const T: &str = "frames";
    let (profile, frame_id, name, kind, function, system_name, module, file) = (
        RowProfiles::new(f, T, selected)?,
        col::int32(f, T, "frame_id")?,
        col::text(f, T, "name")?,
        col::text(f, T, "kind")?,
        col::text(f, T, "function")?,
        col::text(f, T, "system_name")?,
        col::text(f, T, "module")?,
        col::text(f, T, "file")?,
    );
    let (line, column, address, address_space, image_path, build_id, debug_id) = (
        col::int32(f, T, "line")?,
        col::int32(f, T, "column")?,
        col::int64(f, T, "address")?,
        col::text(f, T, "address_space")?,
        col::text(f, T, "image_path")?,
        col::text(f, T, "build_id")?,
        col::text(f, T, "debug_id")?,
    );
    let (image_start, image_end, image_file_offset, inlined) = (
        col::int64(f, T, "image_start")?,
        col::int64(f, T, "image_end")?,
        col::int64(f, T, "image_file_offset")?,
        col::list(f, T, "inlined_into")?,
    );
    let inlined_fields = inlined
        .values()
        .as_struct_opt()
        .ok_or_else(|| malformed("frames.inlined_into is not a list of structs".into()))?;
    let field_text = |name: &str| {
        inlined_fields
            .column_by_name(name)
            .and_then(|c| c.as_string_opt::<i32>())
            .ok_or_else(|| malformed(format!("frames.inlined_into has no text field {name}")))
    };
    let field_int = |name: &str| {
        inlined_fields
            .column_by_name(name)
            .and_then(|c| c.as_primitive_opt::<arrow_array::types::Int32Type>())
            .ok_or_else(|| malformed(format!("frames.inlined_into has no Int32 field {name}")))
    };
    let (in_function, in_file, in_line, in_column) = (
        field_text("function")?,
        field_text("file")?,
        field_int("line")?,
        field_int("column")?,
    );
    // Added later within the schema version: older files have no such field.
    let in_system_name = field_text("system_name").ok();
    let mut index: FxHashMap<Frame, u32> = FxHashMap::default();
    for row in 0..f.num_rows() {
        let Some(p) = profile.get(T, row)? else {
            continue;
        };
        let id = required(frame_id, T, "frame_id", row)?;
        let Ok(id) = usize::try_from(id) else {
            return Err(malformed(format!(
                "frames.frame_id is negative in row {row}"
            )));
        };
        let offsets = inlined.value_offsets();
        let inlined_into = (offsets[row] as usize..offsets[row + 1] as usize)
            .map(|j| Inlined {
                function: opt_owned(in_function, j),
                file: opt_owned(in_file, j),
                line: get(in_line, j),
                column: get(in_column, j),
                system_name: in_system_name.and_then(|c| opt_owned(c, j)),
            })
            .collect();
        let frame = Frame {
            name: required(name, T, "name", row)?.to_owned(),
            kind: required(kind, T, "kind", row)?.to_owned(),
            function: opt_owned(function, row),
            system_name: opt_owned(system_name, row),
            module: opt_owned(module, row),
            file: opt_owned(file, row),
            line: get(line, row),
            column: get(column, row),
            address: get(address, row),
            address_space: opt_owned(address_space, row),
            image_path: opt_owned(image_path, row),
            build_id: opt_owned(build_id, row),
            debug_id: opt_owned(debug_id, row),
            image_start: get(image_start, row),
            image_end: get(image_end, row),
            image_file_offset: get(image_file_offset, row),
            inlined_into,
        };
        let next = frames.len() as u32;
        let merged = match index.get(&frame) {
            Some(&i) => i,
            None => {
                index.insert(frame.clone(), next);
                frames.push(frame);
                next
            }
        };
        let map = &mut frame_maps[p.index];
        if map.len() <= id {
            // Frame ids are dense within a profile; a gap is refused below when used.
            if id > f.num_rows() {
                return Err(malformed(format!(
                    "frames.frame_id {id} in row {row} is beyond the table's {} rows",
                    f.num_rows()
                )));
            }
            map.resize(id + 1, NONE);
        }
        map[id] = merged;
    }
    Ok(())
}

fn merge_stacks(
    s: &RecordBatch,
    selected: &Selected<'_>,
    frame_maps: &[Vec<u32>],
    merged: &mut Merged,
) -> Result<()> {
    const T: &str = "stacks";
    let (profile, stack_id, parent_id, frame_id, depth) = (
        RowProfiles::new(s, T, selected)?,
        col::int32(s, T, "stack_id")?,
        col::int32(s, T, "parent_id")?,
        col::int32(s, T, "frame_id")?,
        col::int32(s, T, "depth")?,
    );
    let bad = |row: usize, what: &str| malformed(format!("stacks row {row}: {what}"));
    // The selected rows by depth. A node's parent is shallower, so when a level is merged
    // every parent it names already is; and two nodes that merge (the same caller and
    // frame) are at the same depth, so each level is merged on its own, by sorting its
    // (caller, frame) keys: no table of every node, which a large tree makes slow.
    let mut rows: Vec<(u32, u32)> = Vec::with_capacity(s.num_rows());
    for row in 0..s.num_rows() {
        if profile.get(T, row)?.is_some() {
            let d = u32::try_from(required(depth, T, "depth", row)?)
                .map_err(|_| bad(row, "negative depth"))?;
            rows.push((d, row as u32));
        }
    }
    rows.sort_unstable();
    // A level's rows: (caller node << 32 | frame, profile index, stack id).
    let mut level: Vec<(u64, u32, u32)> = Vec::new();
    for same_depth in rows.chunk_by(|a, b| a.0 == b.0) {
        let depth = same_depth[0].0;
        level.clear();
        for &(_, row) in same_depth {
            let row = row as usize;
            let p = profile.get(T, row)?.expect("selected above");
            let id = u32::try_from(required(stack_id, T, "stack_id", row)?)
                .map_err(|_| bad(row, "negative stack_id"))?;
            if id as usize > s.num_rows() {
                return Err(bad(row, "stack_id beyond the table's rows"));
            }
            let frame = usize::try_from(required(frame_id, T, "frame_id", row)?)
                .ok()
                .and_then(|f| frame_maps[p.index].get(f).copied())
                .filter(|&f| f != NONE)
                .ok_or_else(|| bad(row, "its frame_id is not in frames"))?;
            let parent = match get(parent_id, row) {
                None => NONE,
                Some(parent) => usize::try_from(parent)
                    .ok()
                    .and_then(|p_id| merged.node_maps[p.index].get(p_id).copied())
                    .filter(|&n| n != NONE)
                    .ok_or_else(|| bad(row, "its parent_id is not a shallower node"))?,
            };
            level.push((
                (u64::from(parent) << 32) | u64::from(frame),
                p.index as u32,
                id,
            ));
        }
        level.sort_unstable_by_key(|&(key, ..)| key);
        let mut node = NONE;
        let mut last_key = None;
        for &(key, index, id) in &level {
            if last_key != Some(key) {
                last_key = Some(key);
                node = merged.nodes.len() as u32;
                merged.nodes.push(Node {
                    parent: (key >> 32) as u32,
                    frame: key as u32,
                    depth,
                });
            }
            let map = &mut merged.node_maps[index as usize];
            if map.len() <= id as usize {
                map.resize(id as usize + 1, NONE);
            }
            map[id as usize] = node;
        }
    }
    Ok(())
}
