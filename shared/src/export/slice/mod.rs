//! A slice of the tables, merged: the selected samples of every selected profile, over one
//! table of frames, one call tree, one list of threads and one list of series, whatever
//! upload or profile they came from. Every export writes from a slice.
//!
//! Frames are merged when every field the tables hold of them is equal, call-tree nodes when
//! their frame and caller are; so the same code seen in two uploads is one frame of the
//! export. Samples are kept one per row, columnar, with their time, thread, labels and
//! trace link as small indexes, or, for a format that keeps no time, already summed
//! ([`Detail`]): the writers aggregate further as their format does.
//!
//! - `profiles.rs` selects the profiles, `tree.rs` merges their frames and call trees,
//!   `take.rs` takes their samples. Taking needs only the selected profiles, so a streamed
//!   slice takes samples on a thread of its own while the call trees are merged.

mod profiles;
mod take;
mod tree;

use arrow_array::RecordBatch;

use self::profiles::Selected;
use self::take::{SampleTaker, Taken};
use super::columns::malformed;
use super::select::Selection;
use crate::error::{ErrorKind, Result};
use crate::tables::TableBatches;

pub(crate) use self::take::SAMPLE_PROJECTION;
pub(crate) use self::tree::{FRAME_PROJECTION, STACK_PROJECTION};

/// No node, thread, label set or link.
pub(crate) const NONE: u32 = u32::MAX;

/// One series of the slice: a sample type and its unit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Series {
    pub sample_type: String,
    pub unit: String,
    /// `cpu_time`, `wall_time` or `other`.
    pub kind: String,
    /// The first profile's sampling period, in `unit`.
    pub period: Option<i64>,
    pub frequency_hz: Option<i64>,
    /// Whether every profile of the series is a run of open spans (`timestamps = 'spans'`).
    pub spans: bool,
    /// Whether every profile of the series has per-sample times.
    pub timed: bool,
    /// The selected `samples` rows of the series (with [`Detail::Summed`], more than the
    /// slice's samples of it).
    pub rows: u64,
}

impl Series {
    pub fn is_cpu(&self) -> bool {
        self.kind == "cpu_time"
    }
}

/// A function a frame's code was inlined into.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Inlined {
    pub function: Option<String>,
    pub file: Option<String>,
    pub line: Option<i32>,
    pub column: Option<i32>,
    pub system_name: Option<String>,
}

/// A frame, with every field the `frames` table holds of it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Frame {
    pub name: String,
    pub kind: String,
    pub function: Option<String>,
    pub system_name: Option<String>,
    pub module: Option<String>,
    pub file: Option<String>,
    pub line: Option<i32>,
    pub column: Option<i32>,
    pub address: Option<i64>,
    pub address_space: Option<String>,
    pub image_path: Option<String>,
    pub build_id: Option<String>,
    pub debug_id: Option<String>,
    pub image_start: Option<i64>,
    pub image_end: Option<i64>,
    pub image_file_offset: Option<i64>,
    pub inlined_into: Vec<Inlined>,
}

/// What identifies a frame's image mapping: path, build ID, start, end, file offset.
pub(crate) type MappingKey = (
    Option<String>,
    Option<String>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
);

impl Frame {
    /// The frame's image mapping, `None` when the tables say nothing of one.
    pub fn mapping_key(&self) -> Option<MappingKey> {
        if self.image_path.is_none() && self.build_id.is_none() && self.image_start.is_none() {
            return None;
        }
        Some((
            self.image_path.clone(),
            self.build_id.clone(),
            self.image_start,
            self.image_end,
            self.image_file_offset,
        ))
    }
}

/// A node of the merged call tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Node {
    /// The calling node, [`NONE`] at a root.
    pub parent: u32,
    pub frame: u32,
    pub depth: u32,
}

/// A process, as its profiles describe it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Process {
    pub pid: Option<i64>,
    pub name: Option<String>,
    pub service: Option<String>,
    pub release: Option<String>,
    pub environment: Option<String>,
    pub host: Option<String>,
    /// `profiles.attributes`, sorted by key.
    pub attributes: Vec<(String, String)>,
}

/// A thread of a process.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Thread {
    pub process: u32,
    pub tid: Option<i64>,
    pub name: Option<String>,
}

/// How much of each sample a slice keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Detail {
    /// One sample per selected `samples` row, with its time: what a timeline needs.
    EveryRow,
    /// The rows of one profile, stack, thread, label set and link summed into one sample
    /// without time, as they are read: what an aggregate format (pprof, folded) needs, in a
    /// fraction of the memory.
    Summed,
}

/// The samples, one per selected `samples` row (or per sum of rows, [`Detail::Summed`]),
/// column by column.
#[derive(Clone, Debug, Default)]
pub(crate) struct Samples {
    pub series: Vec<u32>,
    /// The leaf node, [`NONE`] for a sample without a stack.
    pub node: Vec<u32>,
    /// ns since the Unix epoch; `None` for aggregated samples.
    pub time_ns: Vec<Option<i64>>,
    pub thread: Vec<u32>,
    pub value: Vec<i64>,
    pub weight_ns: Vec<Option<i64>>,
    /// An index into [`Slice::label_sets`], [`NONE`] without labels.
    pub labels: Vec<u32>,
    /// An index into [`Slice::links`], [`NONE`] without a trace link.
    pub link: Vec<u32>,
    /// With [`Detail::Summed`], the rows each sample sums (empty otherwise: one each).
    pub rows: Vec<u32>,
}

impl Samples {
    pub fn len(&self) -> usize {
        self.value.len()
    }

    /// The `samples` rows sample `i` sums.
    pub fn rows_of(&self, i: usize) -> u32 {
        self.rows.get(i).copied().unwrap_or(1)
    }

    fn reserve(&mut self, rows: usize) {
        self.series.reserve(rows);
        self.node.reserve(rows);
        self.time_ns.reserve(rows);
        self.thread.reserve(rows);
        self.value.reserve(rows);
        self.weight_ns.reserve(rows);
        self.labels.reserve(rows);
        self.link.reserve(rows);
    }
}

/// A selected, merged slice of the tables.
#[derive(Clone, Debug, Default)]
pub(crate) struct Slice {
    pub series: Vec<Series>,
    pub frames: Vec<Frame>,
    pub nodes: Vec<Node>,
    pub processes: Vec<Process>,
    pub threads: Vec<Thread>,
    pub label_sets: Vec<Vec<(String, String)>>,
    /// (trace id, span id), hex.
    pub links: Vec<(String, String)>,
    pub samples: Samples,
    /// Profiles and uploads the samples come from.
    pub profiles: usize,
    pub uploads: usize,
    /// The first and last sample's time, else the profiles' start and end (ns).
    pub start_ns: i64,
    pub end_ns: i64,
}

impl Slice {
    /// The frames of a node's stack, leaf first.
    pub fn stack(&self, node: u32) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors((node != NONE).then_some(node), |&n| {
            let parent = self.nodes[n as usize].parent;
            (parent != NONE).then_some(parent)
        })
        .map(|n| self.nodes[n as usize].frame)
    }

    /// The series a format that draws one takes: the only one, else the one CPU-time series,
    /// else the one wall-time series; `None` when that does not decide.
    pub fn main_series(&self) -> Option<usize> {
        if self.series.len() == 1 {
            return Some(0);
        }
        for kind in ["cpu_time", "wall_time"] {
            let mut of_kind = self
                .series
                .iter()
                .enumerate()
                .filter(|(_, s)| s.kind == kind);
            // Two CPU-time series (a Go profile's and a perf recording's) are a choice to
            // make, not a reason to fall back to wall time.
            match (of_kind.next(), of_kind.next()) {
                (Some((i, _)), None) => return Some(i),
                (Some(_), Some(_)) => return None,
                (None, _) => {}
            }
        }
        None
    }
}

#[cfg(test)]
impl Slice {
    /// The frame names of a node's stack, root first.
    pub fn path(&self, node: u32) -> Vec<String> {
        let mut path: Vec<String> = self
            .stack(node)
            .map(|f| self.frames[f as usize].name.clone())
            .collect();
        path.reverse();
        path
    }
}

/// Selects and merges the samples of `tables` that `selection` takes.
///
/// No selected sample is [`ErrorKind::NoSamples`], with what the tables do hold (services,
/// releases, series) so the caller can correct the selection.
pub(crate) fn build(tables: &TableBatches, selection: &Selection, detail: Detail) -> Result<Slice> {
    let mut slice = Slice::default();
    let selected = profiles::select(&tables.profiles, selection, &mut slice)?;
    let mut taker = SampleTaker::new(&selected, selection, detail);
    taker.take(&tables.samples)?;
    let tree = tree::merge(&tables.stacks, &tables.frames, &selected)?;
    assemble(slice, &selected, tree, taker.finish(), selection)
}

/// A source of `samples` batches: hands each to its argument.
pub(crate) type SampleBatches<'f> =
    dyn FnMut(&mut dyn FnMut(RecordBatch) -> Result<()>) -> Result<()> + Send + 'f;

/// [`build`] from `profiles`, the `stacks` and `frames` that `read_tree` reads, and the
/// `samples` batches `samples` hands out (at least the columns of [`SAMPLE_PROJECTION`]), one
/// at a time: a slice of a large table never needs the table whole. The samples are taken
/// on a thread of their own while this one reads and merges the call trees.
pub(crate) fn build_streamed(
    profiles: &RecordBatch,
    selection: &Selection,
    detail: Detail,
    read_tree: &mut dyn FnMut() -> Result<(RecordBatch, RecordBatch)>,
    samples: &mut SampleBatches<'_>,
) -> Result<Slice> {
    let mut slice = Slice::default();
    let selected = profiles::select(profiles, selection, &mut slice)?;
    let (tree, taken) = std::thread::scope(|scope| {
        let taker = scope.spawn(|| {
            let mut taker = SampleTaker::new(&selected, selection, detail);
            samples(&mut |batch| taker.take(&batch))?;
            Ok::<_, crate::Error>(taker.finish())
        });
        let tree =
            read_tree().and_then(|(stacks, frames)| tree::merge(&stacks, &frames, &selected));
        let taken = taker
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (tree, taken)
    });
    // The tree's error first: a sample's stack is checked against it.
    let tree = tree?;
    assemble(slice, &selected, tree, taken?, selection)
}

/// The slice of `selected`'s merged `tree` and `taken` samples, each sample's stack id
/// turned into its node of the merged tree.
fn assemble(
    mut slice: Slice,
    selected: &Selected<'_>,
    tree: tree::Merged,
    mut taken: Taken,
    selection: &Selection,
) -> Result<Slice> {
    let node_maps = &tree.node_maps;
    for (node, &profile) in taken.samples.node.iter_mut().zip(&taken.profile) {
        if *node == NONE {
            continue;
        }
        let stack_id = *node;
        *node = node_maps[profile as usize]
            .get(stack_id as usize)
            .copied()
            .filter(|&n| n != NONE)
            .ok_or_else(|| {
                malformed(format!(
                    "samples of profile {} name stack_id {stack_id}, which is not in stacks",
                    selected.ids[profile as usize]
                ))
            })?;
    }
    for (series, rows) in slice.series.iter_mut().zip(&taken.rows) {
        series.rows = *rows;
    }
    slice.frames = tree.frames;
    slice.nodes = tree.nodes;
    slice.threads = taken.threads;
    slice.label_sets = taken.label_sets;
    slice.links = taken.links;
    slice.samples = taken.samples;
    if taken.first <= taken.last {
        slice.start_ns = taken.first;
        slice.end_ns = taken.last;
    }
    if slice.samples.len() == 0 {
        return Err(ErrorKind::NoSamples {
            why: format!(
                "the selection ({}) holds no sample in its time range and thread",
                selection.describe()
            ),
        }
        .into());
    }
    Ok(slice)
}
