//! A slice of the tables, merged: the selected samples of every selected profile, over one
//! table of frames, one call tree, one list of threads and one list of series, whatever
//! upload or profile they came from. Every export writes from a slice.
//!
//! Frames are merged when every field the tables hold of them is equal, call-tree nodes when
//! their frame and caller are; so the same code seen in two uploads is one frame of the
//! export. Samples are kept one per row, columnar, with their time, thread, labels and
//! trace link as small indexes: the writers aggregate as their format does.

use std::collections::BTreeSet;

use arrow_array::cast::AsArray;
use arrow_array::RecordBatch;
use hashbrown::HashTable;
use rustc_hash::{FxBuildHasher, FxHashMap};
use std::hash::BuildHasher;

use super::columns::{self as col, get, malformed, required};
use super::select::{listing, Selection};
use crate::error::{ErrorKind, Result};
use crate::tables::{Projection, TableBatches};

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

/// The samples, one per selected `samples` row, column by column.
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
}

impl Samples {
    pub fn len(&self) -> usize {
        self.value.len()
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

/// The `profiles` row of each selected profile, by `profile_id`.
struct Selected<'b> {
    by_id: FxHashMap<&'b str, SelectedProfile>,
    /// `samples` rows of the selected profiles (`profiles.samples`): room for every sample
    /// is made once, not by doubling a million-row column many times.
    rows: usize,
}

#[derive(Clone, Copy, Debug)]
struct SelectedProfile {
    series: u32,
    process: u32,
    /// `start_time`, ns: the time of aggregated samples.
    start_ns: i64,
    end_ns: i64,
    /// Index among the selected profiles, for the per-profile stack and frame maps.
    index: usize,
}

/// Selects and merges the samples of `tables` that `selection` takes.
///
/// No selected sample is [`ErrorKind::NoSamples`], with what the tables do hold (services,
/// releases, series) so the caller can correct the selection.
pub(crate) fn build(tables: &TableBatches, selection: &Selection) -> Result<Slice> {
    build_streamed(tables, selection, &mut |take| take(tables.samples.clone()))
}

/// A source of `samples` batches: hands each to its argument.
pub(crate) type SampleBatches<'f> =
    dyn FnMut(&mut dyn FnMut(RecordBatch) -> Result<()>) -> Result<()> + 'f;

/// [`build`] from `tables`' profiles, stacks and frames and the `samples` batches `samples`
/// hands out (at least the [`SAMPLE_COLUMNS`]), one at a time: a slice of a large table
/// never needs the table whole.
pub(crate) fn build_streamed(
    tables: &TableBatches,
    selection: &Selection,
    samples: &mut SampleBatches<'_>,
) -> Result<Slice> {
    let mut slice = Slice::default();
    let selected = select_profiles(tables, selection, &mut slice)?;
    let mut frame_maps = vec![Vec::new(); selected.by_id.len()];
    merge_frames(tables, &selected, &mut slice, &mut frame_maps)?;
    let mut node_maps = vec![Vec::new(); selected.by_id.len()];
    merge_stacks(tables, &selected, &frame_maps, &mut slice, &mut node_maps)?;
    // At most what the profiles rows say (a bad count only costs memory within the limits
    // the rows themselves are bounded by).
    slice.samples.reserve(selected.rows.min(1 << 26));
    let mut taker = SampleTaker::new();
    samples(&mut |batch| taker.take(&batch, selection, &selected, &node_maps, &mut slice))?;
    if taker.first <= taker.last {
        slice.start_ns = taker.first;
        slice.end_ns = taker.last;
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

fn select_profiles<'b>(
    tables: &'b TableBatches,
    selection: &Selection,
    slice: &mut Slice,
) -> Result<Selected<'b>> {
    const T: &str = "profiles";
    let p = &tables.profiles;
    let (source, id, service, release, environment) = (
        col::text(p, T, "source_id")?,
        col::text(p, T, "profile_id")?,
        col::text(p, T, "service")?,
        col::text(p, T, "release")?,
        col::text(p, T, "environment")?,
    );
    let (host, pid, process_name) = (
        col::text(p, T, "host")?,
        col::int64(p, T, "pid")?,
        col::text(p, T, "process_name")?,
    );
    let (sample_type, unit, kind, period, frequency, timestamps) = (
        col::text(p, T, "sample_type")?,
        col::text(p, T, "sample_unit")?,
        col::text(p, T, "series_kind")?,
        col::int64(p, T, "period")?,
        col::int64(p, T, "frequency_hz")?,
        col::text(p, T, "timestamps")?,
    );
    let sample_rows = col::int64(p, T, "samples")?;
    let (start, end, attributes) = (
        col::micros(p, T, "start_time")?,
        col::micros(p, T, "end_time")?,
        col::MapRows::new(col::map(p, T, "attributes")?)?,
    );
    let matches = |column: &arrow_array::StringArray, want: &Option<String>, row| {
        want.as_deref().is_none_or(|w| get(column, row) == Some(w))
    };
    let mut selected = Selected {
        by_id: FxHashMap::default(),
        rows: 0,
    };
    let mut series_index: FxHashMap<(&str, &str), u32> = FxHashMap::default();
    let mut process_index: FxHashMap<Process, u32> = FxHashMap::default();
    let mut uploads = BTreeSet::new();
    // What the tables hold, for the message when nothing matches.
    let (mut services, mut releases, mut series_names) =
        (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    for row in 0..p.num_rows() {
        let sample_type_text = required(sample_type, T, "sample_type", row)?;
        services.extend(get(service, row).map(str::to_owned));
        releases.extend(get(release, row).map(str::to_owned));
        series_names.insert(sample_type_text.to_owned());
        let take = matches(source, &selection.source_id, row)
            && matches(service, &selection.service, row)
            && matches(release, &selection.release, row)
            && matches(environment, &selection.environment, row)
            && (selection.series.is_empty()
                || selection.series.iter().any(|s| s == sample_type_text))
            && selection
                .process
                .as_ref()
                .is_none_or(|want| want.matches(get(pid, row), get(process_name, row)));
        if !take {
            continue;
        }
        let start_ns = required(start, T, "start_time", row)?.saturating_mul(1000);
        let end_ns = required(end, T, "end_time", row)?.saturating_mul(1000);
        // A profile is kept when its span of time can reach the range; its samples are
        // checked one by one.
        if selection.to_ns.is_some_and(|t| start_ns > t)
            || selection.from_ns.is_some_and(|f| end_ns < f)
        {
            continue;
        }
        let unit_text = required(unit, T, "sample_unit", row)?;
        let timestamps_text = required(timestamps, T, "timestamps", row)?;
        let next = slice.series.len() as u32;
        let series = *series_index
            .entry((sample_type_text, unit_text))
            .or_insert(next);
        if series == next {
            slice.series.push(Series {
                sample_type: sample_type_text.to_owned(),
                unit: unit_text.to_owned(),
                kind: required(kind, T, "series_kind", row)?.to_owned(),
                period: get(period, row),
                frequency_hz: get(frequency, row),
                spans: timestamps_text == "spans",
                timed: timestamps_text != "aggregated",
            });
        } else {
            let s = &mut slice.series[series as usize];
            s.spans &= timestamps_text == "spans";
            s.timed &= timestamps_text != "aggregated";
        }
        let mut attrs: Vec<(String, String)> = attributes
            .entries(row)
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        attrs.sort();
        let process = Process {
            pid: get(pid, row),
            name: get(process_name, row).map(str::to_owned),
            service: get(service, row).map(str::to_owned),
            release: get(release, row).map(str::to_owned),
            environment: get(environment, row).map(str::to_owned),
            host: get(host, row).map(str::to_owned),
            attributes: attrs,
        };
        let next = slice.processes.len() as u32;
        let process = match process_index.get(&process) {
            Some(&i) => i,
            None => {
                process_index.insert(process.clone(), next);
                slice.processes.push(process);
                next
            }
        };
        let profile_id = required(id, T, "profile_id", row)?;
        let index = selected.by_id.len();
        if selected
            .by_id
            .insert(
                profile_id,
                SelectedProfile {
                    series,
                    process,
                    start_ns,
                    end_ns,
                    index,
                },
            )
            .is_some()
        {
            return Err(malformed(format!(
                "profile {profile_id} has more than one profiles row"
            )));
        }
        uploads.insert(required(source, T, "source_id", row)?);
        let rows = get(sample_rows, row).unwrap_or(0);
        selected.rows = selected
            .rows
            .saturating_add(usize::try_from(rows).unwrap_or(0));
    }
    if p.num_rows() == 0 {
        return Err(ErrorKind::NoSamples {
            why: format!(
                "the tables hold no profile in the days the selection ({}) can reach",
                selection.describe()
            ),
        }
        .into());
    }
    if selected.by_id.is_empty() {
        return Err(ErrorKind::NoSamples {
            why: format!(
                "no profile matches the selection ({}); the tables hold services {}, releases \
                 {} and series {}",
                selection.describe(),
                listing(services),
                listing(releases),
                listing(series_names)
            ),
        }
        .into());
    }
    slice.profiles = selected.by_id.len();
    slice.uploads = uploads.len();
    Ok(selected)
}

/// Each row's selected profile (`None`: not selected), through the keys of its
/// `profile_id`: every distinct id is looked up once.
struct RowProfiles<'a> {
    keys: col::TextKeys<'a>,
    of_key: Vec<Option<SelectedProfile>>,
}

impl<'a> RowProfiles<'a> {
    fn new(batch: &'a RecordBatch, table: &str, selected: &Selected<'_>) -> Result<Self> {
        let keys = col::TextKeys::new(batch, table, "profile_id")?;
        let of_key = keys
            .texts
            .iter()
            .map(|id| selected.by_id.get(id).copied())
            .collect();
        Ok(RowProfiles { keys, of_key })
    }

    fn get(&self, table: &str, row: usize) -> Result<Option<SelectedProfile>> {
        match self.keys.keys[row] {
            col::NO_TEXT => Err(malformed(format!(
                "{table}.profile_id is null in row {row}"
            ))),
            key => Ok(self.of_key[key as usize]),
        }
    }
}

fn opt_owned(column: &arrow_array::StringArray, row: usize) -> Option<String> {
    get(column, row).map(str::to_owned)
}

fn merge_frames(
    tables: &TableBatches,
    selected: &Selected<'_>,
    slice: &mut Slice,
    frame_maps: &mut [Vec<u32>],
) -> Result<()> {
    const T: &str = "frames";
    let f = &tables.frames;
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
        let next = slice.frames.len() as u32;
        let merged = match index.get(&frame) {
            Some(&i) => i,
            None => {
                index.insert(frame.clone(), next);
                slice.frames.push(frame);
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
    tables: &TableBatches,
    selected: &Selected<'_>,
    frame_maps: &[Vec<u32>],
    slice: &mut Slice,
    node_maps: &mut [Vec<u32>],
) -> Result<()> {
    const T: &str = "stacks";
    let s = &tables.stacks;
    let (profile, stack_id, parent_id, frame_id, depth) = (
        RowProfiles::new(s, T, selected)?,
        col::int32(s, T, "stack_id")?,
        col::int32(s, T, "parent_id")?,
        col::int32(s, T, "frame_id")?,
        col::int32(s, T, "depth")?,
    );
    let mut rows: Vec<(u32, usize)> = Vec::with_capacity(s.num_rows());
    for row in 0..s.num_rows() {
        if profile.get(T, row)?.is_some() {
            let d = required(depth, T, "depth", row)?;
            rows.push((u32::try_from(d).unwrap_or(u32::MAX), row));
        }
    }
    let mut index: FxHashMap<(u32, u32), u32> = FxHashMap::default();
    index.reserve(rows.len());
    let bad = |row: usize, what: &str| malformed(format!("stacks row {row}: {what}"));
    // Merges one row; `Ok(false)` when its parent is not merged yet.
    let mut merge = |depth: u32, row: usize, slice: &mut Slice| -> Result<bool> {
        let p = profile.get(T, row)?.expect("selected above");
        let id = usize::try_from(required(stack_id, T, "stack_id", row)?)
            .map_err(|_| bad(row, "negative stack_id"))?;
        let frame = usize::try_from(required(frame_id, T, "frame_id", row)?)
            .ok()
            .and_then(|f| frame_maps[p.index].get(f).copied())
            .filter(|&f| f != NONE)
            .ok_or_else(|| bad(row, "its frame_id is not in frames"))?;
        let parent = match get(parent_id, row) {
            None => NONE,
            Some(parent) => match usize::try_from(parent)
                .ok()
                .and_then(|p_id| node_maps[p.index].get(p_id).copied())
                .filter(|&n| n != NONE)
            {
                Some(node) => node,
                None => return Ok(false),
            },
        };
        let next = slice.nodes.len() as u32;
        let node = *index.entry((parent, frame)).or_insert(next);
        if node == next {
            slice.nodes.push(Node {
                parent,
                frame,
                depth,
            });
        }
        let map = &mut node_maps[p.index];
        if map.len() <= id {
            if id > s.num_rows() {
                return Err(bad(row, "stack_id beyond the table's rows"));
            }
            map.resize(id + 1, NONE);
        }
        map[id] = node;
        Ok(true)
    };
    // Writers store parents before children, so the stored order usually serves; when it
    // does not, the rows go again parents first (by depth): merging is idempotent.
    let mut in_order = true;
    for &(depth, row) in &rows {
        if !merge(depth, row, slice)? {
            in_order = false;
            break;
        }
    }
    if !in_order {
        rows.sort_unstable();
        for (depth, row) in rows {
            if !merge(depth, row, slice)? {
                return Err(bad(row, "its parent_id is not a shallower node"));
            }
        }
    }
    Ok(())
}

/// Takes the selected samples of `samples` batches one after another, interning threads,
/// label sets and trace links across batches by content (a batch's text is gone when the
/// next arrives, so the tables are keyed by index and compared with the slice's own copies).
struct SampleTaker {
    threads: HashTable<u32>,
    label_sets: HashTable<u32>,
    links: HashTable<u32>,
    first: i64,
    last: i64,
}

/// What a streamed slice reads of `stacks`, profile ids as dictionaries.
pub(crate) const STACK_PROJECTION: Projection<'static> = Projection {
    columns: &["profile_id", "stack_id", "parent_id", "frame_id", "depth"],
    dictionary: &["profile_id"],
};

/// What a streamed slice reads of `frames`, profile ids as dictionaries.
pub(crate) const FRAME_PROJECTION: Projection<'static> = Projection {
    columns: &FRAME_COLUMNS,
    dictionary: &["profile_id"],
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

/// What a streamed slice reads of `samples`: [`SAMPLE_COLUMNS`], profile ids and thread names
/// as dictionaries.
pub(crate) const SAMPLE_PROJECTION: Projection<'static> = Projection {
    columns: &SAMPLE_COLUMNS,
    dictionary: &["profile_id", "thread_name"],
};

/// The columns of `samples` a slice reads.
pub(crate) const SAMPLE_COLUMNS: [&str; 10] = [
    "profile_id",
    "timestamp",
    "thread_id",
    "thread_name",
    "stack_id",
    "value",
    "weight_ns",
    "trace_id",
    "span_id",
    "labels",
];

impl SampleTaker {
    fn new() -> Self {
        SampleTaker {
            threads: HashTable::new(),
            label_sets: HashTable::new(),
            links: HashTable::new(),
            first: i64::MAX,
            last: i64::MIN,
        }
    }

    /// The slice's thread of this process, id and name, added when new.
    fn thread(
        &mut self,
        slice: &mut Slice,
        process: u32,
        tid: Option<i64>,
        name: Option<&str>,
    ) -> u32 {
        let hasher = FxBuildHasher;
        let hash = hasher.hash_one((process, tid, name));
        let threads = &mut slice.threads;
        if let Some(&i) = self.threads.find(hash, |&i| {
            let t = &threads[i as usize];
            (t.process, t.tid, t.name.as_deref()) == (process, tid, name)
        }) {
            return i;
        }
        let i = threads.len() as u32;
        threads.push(Thread {
            process,
            tid,
            name: name.map(str::to_owned),
        });
        self.threads.insert_unique(hash, i, |&i| {
            let t = &threads[i as usize];
            hasher.hash_one((t.process, t.tid, t.name.as_deref()))
        });
        i
    }

    fn take(
        &mut self,
        s: &RecordBatch,
        selection: &Selection,
        selected: &Selected<'_>,
        node_maps: &[Vec<u32>],
        slice: &mut Slice,
    ) -> Result<()> {
        const T: &str = "samples";
        let (profile, timestamp, thread_id, thread_name, stack_id) = (
            RowProfiles::new(s, T, selected)?,
            col::micros(s, T, "timestamp")?,
            col::int64(s, T, "thread_id")?,
            col::TextKeys::new(s, T, "thread_name")?,
            col::int32(s, T, "stack_id")?,
        );
        // Each profile id and thread once per batch, not once per row.
        let mut thread_of: FxHashMap<(u32, Option<i64>, u32), u32> = FxHashMap::default();
        let (value, weight_ns, trace_id, span_id) = (
            col::int64(s, T, "value")?,
            col::int64(s, T, "weight_ns")?,
            col::text(s, T, "trace_id")?,
            col::text(s, T, "span_id")?,
        );
        let labels = col::MapRows::new(col::map(s, T, "labels")?)?;
        let hasher = FxBuildHasher;
        let mut scratch: Vec<(&str, &str)> = Vec::new();
        for row in 0..s.num_rows() {
            let Some(p) = profile.get(T, row)? else {
                continue;
            };
            let time_ns = get(timestamp, row).map(|us| us.saturating_mul(1000));
            if !selection.in_time(time_ns.unwrap_or(p.start_ns)) {
                continue;
            }
            let (tid, tname) = (get(thread_id, row), thread_name.get(row));
            if selection
                .thread
                .as_ref()
                .is_some_and(|want| !want.matches(tid, tname))
            {
                continue;
            }
            let node = match get(stack_id, row) {
                None => NONE,
                Some(id) => usize::try_from(id)
                    .ok()
                    .and_then(|id| node_maps[p.index].get(id).copied())
                    .filter(|&n| n != NONE)
                    .ok_or_else(|| {
                        malformed(format!("samples row {row}: stack_id {id} is not in stacks"))
                    })?,
            };
            let thread = match thread_of.get(&(p.process, tid, thread_name.keys[row])) {
                Some(&i) => i,
                None => {
                    let i = self.thread(slice, p.process, tid, tname);
                    thread_of.insert((p.process, tid, thread_name.keys[row]), i);
                    i
                }
            };
            scratch.clear();
            scratch.extend(labels.entries(row));
            let label_set = if scratch.is_empty() {
                NONE
            } else {
                let hash = hasher.hash_one(scratch.as_slice());
                let sets = &mut slice.label_sets;
                let same = |set: &Vec<(String, String)>| {
                    set.len() == scratch.len()
                        && set
                            .iter()
                            .zip(&scratch)
                            .all(|((k, v), (sk, sv))| k == sk && v == sv)
                };
                match self.label_sets.find(hash, |&i| same(&sets[i as usize])) {
                    Some(&i) => i,
                    None => {
                        let i = sets.len() as u32;
                        sets.push(
                            scratch
                                .iter()
                                .map(|&(k, v)| (k.to_owned(), v.to_owned()))
                                .collect(),
                        );
                        self.label_sets.insert_unique(hash, i, |&i| {
                            hasher.hash_one(sets[i as usize].as_slice())
                        });
                        i
                    }
                }
            };
            let link = match (get(trace_id, row), get(span_id, row)) {
                (Some(t), Some(sp)) => {
                    let hash = hasher.hash_one((t, sp));
                    let links = &mut slice.links;
                    match self.links.find(hash, |&i| {
                        let (lt, ls) = &links[i as usize];
                        (lt.as_str(), ls.as_str()) == (t, sp)
                    }) {
                        Some(&i) => i,
                        None => {
                            let i = links.len() as u32;
                            links.push((t.to_owned(), sp.to_owned()));
                            self.links.insert_unique(hash, i, |&i| {
                                let (lt, ls) = &links[i as usize];
                                hasher.hash_one((lt.as_str(), ls.as_str()))
                            });
                            i
                        }
                    }
                }
                _ => NONE,
            };
            self.first = self.first.min(time_ns.unwrap_or(p.start_ns));
            self.last = self.last.max(time_ns.unwrap_or(p.end_ns));
            let out = &mut slice.samples;
            out.series.push(p.series);
            out.node.push(node);
            out.time_ns.push(time_ns);
            out.thread.push(thread);
            out.value.push(required(value, T, "value", row)?);
            out.weight_ns.push(get(weight_ns, row));
            out.labels.push(label_set);
            out.link.push(link);
        }
        Ok(())
    }
}
