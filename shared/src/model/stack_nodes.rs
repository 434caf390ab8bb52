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
    /// Distance from the root, by handle index; empty once released (and counted again when
    /// a node is next added).
    depths: Vec<u32>,
    /// Positions in `nodes`, found by the node's hash; empty once released (and built again
    /// when a node is next added).
    index: HashTable<u32>,
}

fn hash(node: &Node) -> u64 {
    FxBuildHasher.hash_one(node)
}

impl StackNodes {
    /// The node's handle, added if it is new.
    pub fn add(&mut self, parent: Option<StackHandle>, frame: FrameHandle) -> StackHandle {
        if self.index.len() != self.nodes.len() {
            self.build_index();
        }
        if self.depths.len() != self.nodes.len() {
            self.depths = (0..self.nodes.len())
                .map(|at| self.walked_depth(at))
                .collect();
        }
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

    /// Node `h`: its parent and frame.
    #[inline]
    pub fn get(&self, h: StackHandle) -> (Option<StackHandle>, FrameHandle) {
        self.nodes[h.index()]
    }

    /// The distance of node `h` from the root: counted, while the lookups are released.
    #[inline]
    pub fn depth(&self, h: StackHandle) -> u32 {
        match self.depths.get(h.index()) {
            Some(&depth) => depth,
            None => self.walked_depth(h.index()),
        }
    }

    /// The largest depth of any node.
    pub fn max_depth(&self) -> Option<u32> {
        if self.depths.len() == self.nodes.len() {
            return self.depths.iter().copied().max();
        }
        // Counted in one pass: a node's parent was added, so is listed, before it.
        let mut depths: Vec<u32> = Vec::with_capacity(self.nodes.len());
        for &(parent, _) in &self.nodes {
            depths.push(parent.map_or(0, |p| depths[p.index()] + 1));
        }
        depths.into_iter().max()
    }

    fn walked_depth(&self, at: usize) -> u32 {
        let above = std::iter::successors(self.nodes[at].0, |&p| self.parent(p)).count();
        // A node's callers are nodes, whose handles are `u32`.
        above as u32
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

    /// Gives back the lookups only adding nodes needs (the table, and the depths decoders
    /// check limits with): a model whose stacks are all added is read, not added to, while
    /// its outputs are written.
    pub fn release_lookups(&mut self) {
        self.index = HashTable::new();
        self.depths = Vec::new();
    }

    fn build_index(&mut self) {
        let nodes = &self.nodes;
        let mut index = HashTable::with_capacity(nodes.len());
        for (at, node) in nodes.iter().enumerate() {
            // Positions fit a `u32`: handles are made from them.
            index.insert_unique(hash(node), at as u32, |&at| hash(&nodes[at as usize]));
        }
        self.index = index;
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
        let depths = |nodes: &StackNodes| -> Vec<u32> {
            handles.iter().map(|&(_, _, h)| nodes.depth(h)).collect()
        };
        let kept = depths(&nodes);
        for (&(_, _, h), &depth) in handles.iter().zip(&kept) {
            let above = std::iter::successors(nodes.parent(h), |&p| nodes.parent(p)).count();
            assert_eq!(depth as usize, above, "depth counts the callers");
        }
        assert!(kept.iter().any(|&d| d > 1));
        nodes.release_lookups();
        assert_eq!(depths(&nodes), kept, "counted while released");
        assert_eq!(nodes.max_depth(), kept.iter().copied().max());
        for &(parent, f, h) in &handles {
            assert_eq!(nodes.add(parent, frame(f)), h, "found again once rebuilt");
        }
        assert_eq!(nodes.len(), len);
        assert_eq!(depths(&nodes), kept, "kept again once rebuilt");
    }
}
