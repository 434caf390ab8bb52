//! Writing symbolized frames into a chunk that is stored as received (a pass-through chunk),
//! as Sentry rewrites a Sample v2 chunk once symbolicator answers (`profiles/task.py`,
//! `get_frame_index_map`):
//! - each frame the symbolizer changed becomes the frames the Sample v2 writer
//!   ([`write_chunk`]) writes for it: one per inline level, innermost first, all at the frame's
//!   `instruction_addr`, with `status`, the raw `symbol`, and `sym_addr` on the outermost;
//! - every stack is rebuilt by splicing, in place of each old frame index, that frame's new
//!   indices (callee to caller, as stacks are leaf first);
//! - every other key of the chunk, of the samples and of the rewritten frames is kept, and a
//!   frame the symbolizer left alone is kept whole: it serializes to the same bytes.

use std::mem;

use rustc_hash::FxHashMap;

use crate::error::{ErrorKind, Result};
use crate::formats::sentry::chunk::{frame_handles, import_frames, read_chunk, FORMAT};
use crate::model::{FrameHandle, Profile};
use crate::relay::canonical_frame;
use crate::relay::schema::{self, Chunk};
use crate::writers::sample_v2::{model_frame_rows, write_chunk, SampleV2Chunk};

fn mismatch(what: String) -> crate::error::Error {
    ErrorKind::Malformed {
        format: FORMAT,
        offset: 0,
        what,
    }
    .into()
}

/// Writes the symbolized model of `chunk` into it. `frames[i]` is the handle, in `profile`,
/// of the model frame read from `chunk.profile.frames[i]`: for a profile that holds the
/// chunk alone (as the pass-through builds it) that is
/// [`frame_handles`]`(chunk)`.
///
/// A frame is rewritten when its model frame would now be written otherwise than the frame
/// read from the chunk (a symbolizer set its function, file, line, inlined calls, function
/// start or status); it is replaced by the frames the writer writes for it, each keeping the
/// old frame's `instruction_addr`, `package`, `platform`, `in_app` and unknown keys, and the
/// old `module` on the innermost. Frames not rewritten stay as they were; frames of one
/// handle and new frames that come out equal are written once. Returns how many of the
/// chunk's frames were rewritten; with none, the chunk is left untouched.
///
/// Fails, changing nothing, when `frames` does not fit the chunk (a different count, a handle
/// `profile` does not have, or a model frame of another kind or address than the chunk frame)
/// or a stack points past the frames.
pub(crate) fn rewrite_frames(
    chunk: &mut Chunk,
    profile: &Profile,
    frames: &[FrameHandle],
) -> Result<usize> {
    let changed = changed_frames(chunk, profile, frames)?;
    let rewritten = changed.iter().filter(|&&c| c).count();
    if rewritten == 0 {
        return Ok(0);
    }
    let count = chunk.profile.frames.len();
    if let Some(i) = chunk
        .profile
        .stacks
        .iter()
        .position(|s| s.iter().any(|&f| f >= count))
    {
        // Relay rejects such a chunk, so it is never stored.
        return Err(mismatch(format!(
            "profile.stacks[{i}] points past the {count} frames"
        )));
    }
    let index_map = replace_frames(chunk, profile, frames, &changed, rewritten);
    for stack in &mut chunk.profile.stacks {
        *stack = stack
            .iter()
            .flat_map(|&i| index_map[i].iter().copied())
            .collect();
    }
    Ok(rewritten)
}

/// Per chunk frame, whether the writer would now write its model frame otherwise than the
/// frame read from the chunk; an error when `frames` does not fit the chunk.
fn changed_frames(chunk: &Chunk, profile: &Profile, frames: &[FrameHandle]) -> Result<Vec<bool>> {
    let count = chunk.profile.frames.len();
    if frames.len() != count {
        return Err(mismatch(format!(
            "{} frame handles for a chunk of {count} frames",
            frames.len()
        )));
    }
    let known = profile.frames().len();
    // The chunk as read, to tell what the symbolizer changed.
    let mut read = Profile::new(FORMAT);
    let read_frames = import_frames(&mut read, chunk);
    let mut changed = Vec::with_capacity(count);
    for (i, (&h, &r)) in frames.iter().zip(&read_frames).enumerate() {
        if h.index() >= known {
            return Err(mismatch(format!(
                "profile.frames[{i}]: the profile has no frame {}",
                h.index()
            )));
        }
        let (model, as_read) = (profile.frame(h), read.frame(r));
        if profile.kind_name(model.kind) != read.kind_name(as_read.kind)
            || model.address != as_read.address
        {
            return Err(mismatch(format!(
                "profile.frames[{i}]: model frame {} is not the frame read from the chunk",
                h.index()
            )));
        }
        changed.push(model_frame_rows(profile, h).0 != model_frame_rows(&read, r).0);
    }
    Ok(changed)
}

/// Replaces each changed frame of the chunk by the frames the writer writes for it, and
/// returns the new indices of every old frame.
fn replace_frames(
    chunk: &mut Chunk,
    profile: &Profile,
    frames: &[FrameHandle],
    changed: &[bool],
    rewritten: usize,
) -> Vec<Vec<usize>> {
    let old = mem::take(&mut chunk.profile.frames);
    let count = old.len();
    let mut out: Vec<schema::Frame> = Vec::with_capacity(count + rewritten);
    // New frames by identity, so equal ones are written once.
    let mut written: FxHashMap<String, usize> = FxHashMap::default();
    let mut index_map: Vec<Vec<usize>> = Vec::with_capacity(count);
    for (i, frame) in old.into_iter().enumerate() {
        if !changed[i] {
            index_map.push(vec![out.len()]);
            out.push(frame);
            continue;
        }
        let mut indices = Vec::new();
        let (rows, _) = model_frame_rows(profile, frames[i]);
        for (level, row) in rows.into_iter().enumerate() {
            let new = rewritten_frame(&frame, row.into_schema(), level);
            let index = *written.entry(canonical_frame(&new)).or_insert_with(|| {
                out.push(new);
                out.len() - 1
            });
            indices.push(index);
        }
        index_map.push(indices);
    }
    chunk.profile.frames = out;
    index_map
}

/// One inline level (`level` 0 the innermost) of a rewritten frame: what the writer writes
/// for it, with the old frame's address, package, platform, `in_app` and unknown keys, and
/// its `module` on the innermost.
fn rewritten_frame(frame: &schema::Frame, row: schema::Frame, level: usize) -> schema::Frame {
    schema::Frame {
        abs_path: row.abs_path,
        colno: row.colno,
        filename: row.filename,
        function: row.function,
        lineno: row.lineno,
        module: if level == 0 {
            frame.module.clone()
        } else {
            None
        },
        status: row.status,
        sym_addr: row.sym_addr,
        symbol: row.symbol,
        in_app: frame.in_app,
        instruction_addr: frame.instruction_addr.clone(),
        package: frame.package.clone(),
        platform: frame.platform.clone(),
        other: frame.other.clone(),
    }
}

/// Writes the symbolized model of a pass-through `chunk` into its JSON: `profile` is the
/// model [`pass_through`](super::pass_through) built with it, whose frames a symbolizer has
/// since rewritten in place (handles unchanged), and [`frame_handles`] maps the chunk's frames
/// to it. Rewrites the JSON through the typed schema ([`rewrite_frames`]) when any frame
/// changed and returns how many did; with none, the JSON is left as received.
pub(crate) fn rewrite_chunk(chunk: &mut SampleV2Chunk, profile: &Profile) -> Result<usize> {
    let mut read = read_chunk(&chunk.json)?;
    let handles = frame_handles(&read);
    let rewritten = rewrite_frames(&mut read, profile, &handles)?;
    if rewritten > 0 {
        chunk.json = write_chunk(&read);
    }
    Ok(rewritten)
}

#[cfg(test)]
#[path = "rewrite_tests.rs"]
mod tests;
