//! From a sample's `stack_id` to its folded path `root;…;leaf`, through the `stacks` prefix
//! tree and `frames` names of its profile.

use rustc_hash::{FxHashMap, FxHashSet};

use super::columns::{self, opt_i32, required};
use proflake::export::ExportFormat;
use proflake::tables::TableBatches;
use proflake::Result;

/// One profile's call tree: node → (parent, frame), frame → display name.
#[derive(Default)]
struct Tree {
    nodes: FxHashMap<i32, (Option<i32>, i32)>,
    names: FxHashMap<i32, String>,
}

/// Resolves stacks to interned folded paths, each stack once.
pub(super) struct Paths<'a> {
    profile_ids: &'a [&'a str],
    trees: FxHashMap<usize, Tree>,
    memo: FxHashMap<(usize, i32), usize>,
    index: FxHashMap<String, usize>,
    /// The distinct paths, in order of first use.
    pub paths: Vec<String>,
}

impl<'a> Paths<'a> {
    /// Loads the trees of the `wanted` profiles (indices into `profile_ids`), leaving the
    /// others' rows unread.
    pub fn load(
        tables: &TableBatches,
        profile_ids: &'a [&'a str],
        index: &FxHashMap<&str, usize>,
        wanted: &FxHashSet<usize>,
    ) -> Result<Self> {
        let mut trees: FxHashMap<usize, Tree> =
            wanted.iter().map(|&p| (p, Tree::default())).collect();
        let s = &tables.stacks;
        let (ids, stack, parent, frame) = (
            columns::strings(s, "stacks", "profile_id")?,
            columns::i32s(s, "stacks", "stack_id")?,
            columns::i32s(s, "stacks", "parent_id")?,
            columns::i32s(s, "stacks", "frame_id")?,
        );
        for row in 0..s.num_rows() {
            let id = required(columns::opt_str(ids, row), "stacks", "profile_id", row)?;
            let Some(tree) = index.get(id).and_then(|p| trees.get_mut(p)) else {
                continue;
            };
            let node = required(opt_i32(stack, row), "stacks", "stack_id", row)?;
            let frame = required(opt_i32(frame, row), "stacks", "frame_id", row)?;
            tree.nodes.insert(node, (opt_i32(parent, row), frame));
        }
        let f = &tables.frames;
        let (ids, frame, name) = (
            columns::strings(f, "frames", "profile_id")?,
            columns::i32s(f, "frames", "frame_id")?,
            columns::strings(f, "frames", "name")?,
        );
        for row in 0..f.num_rows() {
            let id = required(columns::opt_str(ids, row), "frames", "profile_id", row)?;
            let Some(tree) = index.get(id).and_then(|p| trees.get_mut(p)) else {
                continue;
            };
            let frame = required(opt_i32(frame, row), "frames", "frame_id", row)?;
            let text = columns::opt_str(name, row).unwrap_or_default();
            tree.names
                .insert(frame, ExportFormat::flame_frame_name(text));
        }
        Ok(Paths {
            profile_ids,
            trees,
            memo: FxHashMap::default(),
            index: FxHashMap::default(),
            paths: Vec::new(),
        })
    }

    /// The index in [`Paths::paths`] of the path from the root to `leaf` in `profile`;
    /// [`ExportFormat::NO_STACK`] without a leaf.
    pub fn resolve(&mut self, profile: usize, leaf: Option<i32>) -> Result<usize> {
        let Some(leaf) = leaf else {
            return Ok(self.intern(ExportFormat::NO_STACK.to_owned()));
        };
        if let Some(&i) = self.memo.get(&(profile, leaf)) {
            return Ok(i);
        }
        let id = self.profile_ids[profile];
        let tree = self
            .trees
            .get(&profile)
            .ok_or_else(|| columns::error(format!("profile {id} was not loaded")))?;
        let mut names = Vec::new();
        let mut node = Some(leaf);
        while let Some(n) = node {
            // Each step climbs one level; more steps than nodes means a cycle.
            if names.len() > tree.nodes.len() {
                return Err(columns::error(format!(
                    "stacks of profile {id} loop through stack {leaf}"
                )));
            }
            let &(parent, frame) = tree.nodes.get(&n).ok_or_else(|| {
                columns::error(format!("stack {n} of profile {id} is not in stacks"))
            })?;
            let name = tree.names.get(&frame).ok_or_else(|| {
                columns::error(format!("frame {frame} of profile {id} is not in frames"))
            })?;
            names.push(name.as_str());
            node = parent;
        }
        names.reverse();
        let i = self.intern(names.join(";"));
        self.memo.insert((profile, leaf), i);
        Ok(i)
    }

    fn intern(&mut self, path: String) -> usize {
        if let Some(&i) = self.index.get(&path) {
            return i;
        }
        self.paths.push(path.clone());
        self.index.insert(path, self.paths.len() - 1);
        self.paths.len() - 1
    }
}
