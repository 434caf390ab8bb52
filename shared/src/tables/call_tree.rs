//! The part of a profile's stack prefix tree one table profile reaches, renumbered densely: the
//! `stacks` rows and the frame ids they point at.
//!
//! Ids are handed out in the order the samples first reach a node, ancestors first,
//! so a parent always has a smaller id than its children and a reader can build the tree in
//! one pass.

use arrow_array::RecordBatch;
use rustc_hash::FxHashMap;

use super::columns::{batch, int32s, strings};
use super::schema::Table;
use super::Segment;
use crate::error::Result;
use crate::model::{FrameHandle, Profile, StackHandle};

/// One `stacks` row (its id is its position).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct StackRow {
    pub parent: Option<u32>,
    pub frame: u32,
    pub depth: u32,
}

/// A table profile's call tree.
#[derive(Debug, Default)]
pub(super) struct CallTree {
    /// By model stack index: the stack id + 1, or 0 where the samples do not reach. Dense (4
    /// bytes a model stack, pages never touched left unallocated) where a map cost 14 bytes a
    /// node reached, and a window of a span trace reaches most of its model's stacks.
    ids: Vec<u32>,
    /// By stack id.
    pub stacks: Vec<StackRow>,
    /// The model frame of each frame id.
    pub frames: Vec<FrameHandle>,
    frame_ids: FxHashMap<FrameHandle, u32>,
    /// The leaves that added nodes, in order: the same tree is built again from them alone,
    /// without reading every sample.
    pub new_leaves: Vec<StackHandle>,
}

/// Ids count rows of a model table whose handles are `u32`, so they always fit.
fn id(len: usize) -> u32 {
    u32::try_from(len).expect("fewer rows than model handles")
}

impl CallTree {
    /// The tree the given leaves (the samples' stacks, in order) reach.
    pub fn of<'l>(profile: &Profile, leaves: impl IntoIterator<Item = &'l StackHandle>) -> Self {
        Self::of_samples(profile, leaves.into_iter().copied().map(Some))
    }

    /// The tree the stacks of samples reach, in order (`None`: a sample without one).
    pub fn of_samples(
        profile: &Profile,
        leaves: impl Iterator<Item = Option<StackHandle>>,
    ) -> Self {
        let mut tree = CallTree {
            ids: vec![0; profile.stacks().len()],
            ..CallTree::default()
        };
        let mut path = Vec::new();
        for leaf in leaves {
            if let Some(h) = leaf.filter(|&h| tree.stack_id(h).is_none()) {
                tree.new_leaves.push(h);
            }
            let mut node = leaf;
            while let Some(h) = node.filter(|&h| tree.stack_id(h).is_none()) {
                path.push(h);
                node = profile.stack(h).parent;
            }
            // `path` runs leaf to the first node already numbered (or the root): number it
            // root first.
            while let Some(h) = path.pop() {
                let model = profile.stack(h);
                let parent = model.parent.and_then(|p| tree.stack_id(p));
                let frame = match tree.frame_ids.get(&model.frame) {
                    Some(&f) => f,
                    None => {
                        let f = id(tree.frames.len());
                        tree.frames.push(model.frame);
                        tree.frame_ids.insert(model.frame, f);
                        f
                    }
                };
                let depth = parent.map_or(0, |p| tree.stacks[p as usize].depth + 1);
                tree.ids[h.index()] = id(tree.stacks.len() + 1);
                tree.stacks.push(StackRow {
                    parent,
                    frame,
                    depth,
                });
            }
        }
        // Every upload's trees are held until its tables are written: give back what they
        // grew into, and the frame lookup only building needs.
        tree.frame_ids = FxHashMap::default();
        tree.stacks.shrink_to_fit();
        tree.frames.shrink_to_fit();
        tree.new_leaves.shrink_to_fit();
        tree
    }

    /// The id of a stack the samples reach.
    pub fn stack_id(&self, h: StackHandle) -> Option<u32> {
        let id = *self.ids.get(h.index())?;
        id.checked_sub(1)
    }

    /// The stack ids from `leaf` up to its root.
    pub fn path(&self, leaf: u32) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors(Some(leaf), |&s| self.stacks[s as usize].parent)
    }
}

/// The `stacks` rows of `segments`, each segment's in id order.
pub(super) fn stacks_batch(source_id: &str, segments: &[Segment<'_>]) -> Result<RecordBatch> {
    const T: Table = Table::Stacks;
    let rows = || {
        segments
            .iter()
            .flat_map(|&(profile_id, _, tree, ref range)| {
                let start = range.start;
                tree.stacks[range.clone()]
                    .iter()
                    .enumerate()
                    .map(move |(i, s)| (profile_id, id(start + i), s))
            })
    };
    batch(
        T,
        vec![
            strings(T, rows().map(|_| Some(source_id)))?,
            strings(T, rows().map(|(p, _, _)| Some(p)))?,
            int32s(rows().map(|(_, i, _)| Some(i))),
            int32s(rows().map(|(_, _, s)| s.parent)),
            int32s(rows().map(|(_, _, s)| Some(s.frame))),
            int32s(rows().map(|(_, _, s)| Some(s.depth))),
        ],
    )
}
