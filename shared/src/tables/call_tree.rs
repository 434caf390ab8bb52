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

/// One `stacks` row (its id is its position), in 8 bytes: a table profile's tree is held
/// while its rows are written, and a span trace's has a node per distinct stack of spans. Its
/// depth is counted when written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct StackRow {
    /// The parent's id, or [`ROOT`].
    parent: u32,
    pub frame: u32,
}

/// `StackRow::parent` of a root: no id is this large, as ids count model stacks, whose
/// handles are `u32` from 1.
const ROOT: u32 = u32::MAX;

impl StackRow {
    pub fn parent(&self) -> Option<u32> {
        (self.parent != ROOT).then_some(self.parent)
    }
}

/// Which id each model stack a table profile's samples reach has: the numbering alone,
/// which is all the `samples` rows need.
#[derive(Debug, Default)]
pub(super) struct StackIds {
    /// By model stack index: the stack id + 1, or 0 where the samples do not reach. Dense (4
    /// bytes a model stack, pages never touched left unallocated) where a map cost 14 bytes a
    /// node reached, and a window of a span trace reaches most of its model's stacks.
    ids: Vec<u32>,
    /// Nodes numbered so far.
    len: u32,
}

impl StackIds {
    fn new(profile: &Profile) -> Self {
        StackIds {
            ids: vec![0; profile.stacks().len()],
            len: 0,
        }
    }

    /// The numbering the given leaves (the samples' stacks, in order) give.
    pub fn of<'l>(profile: &Profile, leaves: impl IntoIterator<Item = &'l StackHandle>) -> Self {
        let mut ids = StackIds::new(profile);
        let mut path = Vec::new();
        for &leaf in leaves {
            ids.number(profile, leaf, &mut path, |_, _, _| {});
        }
        ids
    }

    /// The id of a stack the samples reach.
    #[inline]
    pub fn get(&self, h: StackHandle) -> Option<u32> {
        let id = *self.ids.get(h.index())?;
        id.checked_sub(1)
    }

    /// Numbers `leaf` and those of its callers not numbered yet, root first; `numbered` sees
    /// each with its id and its parent's. `path` is scratch space.
    fn number(
        &mut self,
        profile: &Profile,
        leaf: StackHandle,
        path: &mut Vec<StackHandle>,
        mut numbered: impl FnMut(StackHandle, u32, Option<u32>),
    ) {
        let mut node = Some(leaf);
        while let Some(h) = node.filter(|&h| self.get(h).is_none()) {
            path.push(h);
            node = profile.stack(h).parent;
        }
        // `path` runs leaf to the first node already numbered (or the root).
        let mut parent = node.and_then(|p| self.get(p));
        while let Some(h) = path.pop() {
            let id = self.len;
            self.len += 1;
            self.ids[h.index()] = self.len;
            numbered(h, id, parent);
            parent = Some(id);
        }
    }
}

/// A table profile's call tree.
#[derive(Debug, Default)]
pub(super) struct CallTree {
    ids: StackIds,
    /// By stack id.
    pub stacks: Vec<StackRow>,
    /// The model frame of each frame id.
    pub frames: Vec<FrameHandle>,
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
            ids: StackIds::new(profile),
            ..CallTree::default()
        };
        tree.extend(profile, leaves);
        // Every upload's trees are held until its tables are written: give back what they
        // grew into.
        tree.stacks.shrink_to_fit();
        tree.frames.shrink_to_fit();
        tree.new_leaves.shrink_to_fit();
        tree
    }

    /// Adds the stacks of more samples, in order, numbering the nodes they reach first after
    /// those already numbered: a window added in parts gets the tree it would get whole.
    pub fn extend(&mut self, profile: &Profile, leaves: impl Iterator<Item = Option<StackHandle>>) {
        // The model only grows between parts: its later stacks get room.
        if self.ids.ids.len() < profile.stacks().len() {
            self.ids.ids.resize(profile.stacks().len(), 0);
        }
        let mut frame_ids: FxHashMap<FrameHandle, u32> = (self.frames.iter().enumerate())
            .map(|(i, &f)| (f, id(i)))
            .collect();
        let mut path = Vec::new();
        for leaf in leaves.flatten() {
            if self.ids.get(leaf).is_some() {
                continue;
            }
            self.new_leaves.push(leaf);
            let (stacks, frames) = (&mut self.stacks, &mut self.frames);
            self.ids.number(profile, leaf, &mut path, |h, _, parent| {
                let model_frame = profile.stack(h).frame;
                let frame = *frame_ids.entry(model_frame).or_insert_with(|| {
                    frames.push(model_frame);
                    id(frames.len() - 1)
                });
                stacks.push(StackRow {
                    parent: parent.unwrap_or(ROOT),
                    frame,
                });
            });
        }
    }

    /// The id of a stack the samples reach.
    pub fn stack_id(&self, h: StackHandle) -> Option<u32> {
        self.ids.get(h)
    }

    /// The stack ids from `leaf` up to its root.
    pub fn path(&self, leaf: u32) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors(Some(leaf), |&s| self.stacks[s as usize].parent())
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
                    .map(move |(i, s)| (profile_id, id(start + i), s, tree))
            })
    };
    batch(
        T,
        vec![
            strings(T, rows().map(|_| Some(source_id)))?,
            strings(T, rows().map(|(p, _, _, _)| Some(p)))?,
            int32s(rows().map(|(_, i, _, _)| Some(i))),
            int32s(rows().map(|(_, _, s, _)| s.parent())),
            int32s(rows().map(|(_, _, s, _)| Some(s.frame))),
            // Walked up: a few dozen steps a row, where holding depths cost 4 bytes a node.
            int32s(rows().map(|(_, i, _, tree)| Some(tree.path(i).count() as u32 - 1))),
        ],
    )
}
