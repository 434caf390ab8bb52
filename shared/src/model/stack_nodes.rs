//! The stack prefix tree's nodes, deduplicated as they are added.
//!
//! A span trace or a long recording has hundreds of thousands of nodes. An `IndexSet` keeps
//! each node with its hash and its position twice (24 bytes a node plus a table of 8-byte
//! positions); here a node is its 8 bytes and its depth, and the lookup table holds only
//! 4-byte positions, each node's hash being computed again from the node when the table
//! grows.

use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

use super::{FrameHandle, StackHandle};

/// A node's identity: the calling stack and its frame.
type Node = (Option<StackHandle>, FrameHandle);

#[derive(Debug, Default)]
pub(super) struct StackNodes {
    /// By handle index.
    nodes: Vec<Node>,
    /// Distance from the root, by handle index.
    depths: Vec<u32>,
    /// Positions in `nodes`, found by the node's hash.
    index: HashTable<u32>,
}

fn hash(node: &Node) -> u64 {
    FxBuildHasher.hash_one(node)
}

impl StackNodes {
    /// The node's handle, added if it is new.
    pub fn add(&mut self, parent: Option<StackHandle>, frame: FrameHandle) -> StackHandle {
        let node = (parent, frame);
        let node_hash = hash(&node);
        let nodes = &self.nodes;
        if let Some(&at) = self.index.find(node_hash, |&at| nodes[at as usize] == node) {
            return StackHandle::from_index(at as usize);
        }
        let handle = StackHandle::from_index(self.nodes.len());
        // `from_index` has checked that the position fits a `u32`.
        let at = handle.index() as u32;
        let depth = parent.map_or(0, |p| self.depths[p.index()] + 1);
        self.nodes.push(node);
        self.depths.push(depth);
        let nodes = &self.nodes;
        self.index
            .insert_unique(node_hash, at, |&at| hash(&nodes[at as usize]));
        handle
    }

    /// Node `h`: its parent, frame and depth.
    #[inline]
    pub fn get(&self, h: StackHandle) -> (Option<StackHandle>, FrameHandle, u32) {
        let (parent, frame) = self.nodes[h.index()];
        (parent, frame, self.depths[h.index()])
    }

    /// The parent of node `h`.
    #[inline]
    pub fn parent(&self, h: StackHandle) -> Option<StackHandle> {
        self.nodes[h.index()].0
    }

    /// The frame of node `h`.
    #[inline]
    pub fn frame(&self, h: StackHandle) -> FrameHandle {
        self.nodes[h.index()].1
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Gives back the capacity the lists grew into but do not use.
    pub fn shrink_to_fit(&mut self) {
        self.nodes.shrink_to_fit();
        self.depths.shrink_to_fit();
        let nodes = &self.nodes;
        self.index.shrink_to_fit(|&at| hash(&nodes[at as usize]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(i: usize) -> FrameHandle {
        FrameHandle::from_index(i)
    }

    #[test]
    fn equal_nodes_share_a_handle_across_growth() {
        let mut nodes = StackNodes::default();
        let mut handles = Vec::new();
        let mut parent = None;
        for i in 0..10_000 {
            let h = nodes.add(parent, frame(i % 7));
            handles.push((parent, i % 7, h));
            parent = if i % 3 == 0 { None } else { Some(h) };
        }
        let len = nodes.len();
        nodes.shrink_to_fit();
        for &(parent, f, h) in &handles {
            assert_eq!(nodes.add(parent, frame(f)), h, "found again, not added");
            assert_eq!(nodes.parent(h), parent);
            assert_eq!(nodes.frame(h), frame(f));
        }
        assert_eq!(nodes.len(), len);
        for &(_, _, h) in &handles {
            let above = std::iter::successors(nodes.parent(h), |&p| nodes.parent(p)).count();
            assert_eq!(nodes.get(h).2 as usize, above, "depth counts the callers");
        }
        assert!(handles.iter().any(|&(_, _, h)| nodes.get(h).2 > 1));
    }
}
