//! Decoding a `.cpuprofile` (DevTools `Profiler.Profile`): a node tree linked by `children`,
//! and the sampled node of each tick with the time since the previous one. The older layout
//! Chrome wrote before `nodes` (a `head` tree of nested `children`, `startTime`/`endTime` in
//! seconds, `timestamps` in µs) is read into the same document; one without ticks is an
//! aggregated profile of its nodes' `hitCount`s.

use rustc_hash::FxHashMap;
use serde::Deserialize;

use crate::error::{Error, Result};
use crate::formats::json_document;
use crate::limits::{exceeded, Limits};
use crate::model::{
    Frame, FrameKind, Profile, Sample, Series, SeriesHandle, SeriesKind, StackHandle, ThreadHandle,
    Timestamps,
};

const FORMAT: &str = "cpuprofile";

/// The document as V8 writes it, in µs; keys it has beyond these (`positionTicks`,
/// `deoptReason`) are not read. `hitCount` is read only when there are no ticks: V8 does not
/// keep it in step with `samples`.
#[derive(Deserialize)]
#[serde(try_from = "RawDocument")]
pub(crate) struct Document {
    pub nodes: Vec<Node>,
    pub start_time: i64,
    pub end_time: Option<i64>,
    pub samples: Vec<u64>,
    pub time_deltas: Vec<i64>,
    /// Gathered from a trace's events, which a trace window may have cut: a parent or a
    /// sampled node the events no longer hold is counted, not an error.
    pub partial: bool,
}

/// Either layout, as written.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawDocument {
    #[serde(default)]
    nodes: Option<Vec<Node>>,
    /// The older layout's root node, its descendants nested in it.
    #[serde(default)]
    head: Option<OldNode>,
    #[serde(default)]
    start_time: Option<f64>,
    #[serde(default)]
    end_time: Option<f64>,
    #[serde(default)]
    samples: Vec<u64>,
    #[serde(default)]
    time_deltas: Vec<i64>,
    /// The older layout's tick times, µs of V8's clock.
    #[serde(default)]
    timestamps: Vec<f64>,
}

/// A node of the older layout: the call frame's fields on the node itself, 1-based positions.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OldNode {
    #[serde(default)]
    id: Option<u64>,
    #[serde(default)]
    function_name: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    line_number: i64,
    #[serde(default)]
    column_number: i64,
    #[serde(default)]
    hit_count: u64,
    #[serde(default)]
    children: Vec<OldNode>,
}

/// A time in µs as an integer, when it is a finite one.
fn whole_micros(us: f64) -> Option<i64> {
    let us = us.round();
    (us.is_finite() && us.abs() < 9.2e15).then_some(us as i64)
}

impl TryFrom<RawDocument> for Document {
    type Error = String;

    fn try_from(raw: RawDocument) -> std::result::Result<Document, String> {
        let Some(head) = raw.head.filter(|_| raw.nodes.is_none()) else {
            let start = raw.start_time.ok_or("missing field `startTime`")?;
            return Ok(Document {
                nodes: raw
                    .nodes
                    .ok_or("missing field `nodes` (or the older `head`)")?,
                start_time: whole_micros(start).ok_or("startTime is out of range")?,
                end_time: raw.end_time.and_then(whole_micros),
                samples: raw.samples,
                time_deltas: raw.time_deltas,
                partial: false,
            });
        };
        // `startTime` and `endTime` are seconds where `timestamps` are µs (speedscope's
        // reading of Chrome's files); a writer that put µs in both is recognised by its first
        // tick lying nearer the µs reading.
        let start = raw.start_time.unwrap_or(0.0);
        let scale = match raw.timestamps.first() {
            Some(&first) if (first - start).abs() < (first - start * 1e6).abs() => 1.0,
            _ => 1e6,
        };
        let start_us = whole_micros(start * scale).ok_or("startTime is out of range")?;
        let mut time_deltas = Vec::with_capacity(raw.timestamps.len());
        let mut last = start_us;
        for (i, &t) in raw.timestamps.iter().enumerate() {
            let t = whole_micros(t).ok_or(format!("timestamps[{i}] is out of range"))?;
            time_deltas.push(t.saturating_sub(last));
            last = t;
        }
        Ok(Document {
            nodes: flatten(head),
            start_time: start_us,
            end_time: raw.end_time.and_then(|e| whole_micros(e * scale)),
            samples: raw.samples,
            time_deltas,
            partial: false,
        })
    }
}

/// The older layout's tree as nodes linked by `parent`, the root first, in depth-first order;
/// a node without an `id` gets one no other node has (ticks cannot name it).
fn flatten(head: OldNode) -> Vec<Node> {
    let mut nodes = Vec::new();
    // Iteration, not recursion: the depth is bounded by the JSON depth limit only.
    let mut pending = vec![(head, None)];
    while let Some((mut old, parent)) = pending.pop() {
        let id = old.id.unwrap_or(u64::MAX - nodes.len() as u64);
        let children = std::mem::take(&mut old.children);
        pending.extend(children.into_iter().rev().map(|c| (c, Some(id))));
        let zero_based = |n: i64| if n > 0 { n - 1 } else { -1 };
        nodes.push(Node {
            id,
            call_frame: CallFrame {
                function_name: old.function_name,
                url: old.url,
                line_number: zero_based(old.line_number),
                column_number: zero_based(old.column_number),
            },
            children: Vec::new(),
            parent,
            hit_count: old.hit_count,
        });
    }
    nodes
}

/// A node of the call tree, linked to the others by its `children` (a whole profile) or by
/// its `parent` (DevTools' `ProfileChunk`s, whose nodes arrive a few at a time).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Node {
    pub id: u64,
    pub call_frame: CallFrame,
    #[serde(default)]
    pub children: Vec<u64>,
    #[serde(default)]
    pub parent: Option<u64>,
    /// Ticks V8 counted for the node: read only from a document without ticks.
    #[serde(default)]
    pub hit_count: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CallFrame {
    #[serde(default)]
    function_name: String,
    #[serde(default)]
    url: String,
    /// 0-based; -1 when V8 has no position (synthetic nodes, native code).
    #[serde(default = "no_position")]
    line_number: i64,
    #[serde(default = "no_position")]
    column_number: i64,
}

fn no_position() -> i64 {
    -1
}

fn malformed(what: String) -> Error {
    json_document::malformed(FORMAT, what)
}

/// Decodes a whole `.cpuprofile` into a profile on the `v8` trace clock: its times are µs
/// of V8's monotonic clock, which has no known relation to the wall clock.
pub(crate) fn decode(json: &[u8], limits: &Limits) -> Result<Profile> {
    limits.check_json_depth(json)?;
    let doc: Document = json_document::parse(FORMAT, json)?;
    if doc.nodes.len() as u64 > limits.max_table_entries {
        return Err(exceeded("max_table_entries", limits.max_table_entries));
    }
    if doc.samples.len() as u64 > limits.max_samples {
        return Err(exceeded("max_samples", limits.max_samples));
    }
    let mut profile = Profile::new(FORMAT);
    profile.timestamps = Timestamps::TraceClock("v8".into());
    let process = profile.add_process(None);
    let thread = profile.add_thread(process, None);
    add_document(&mut profile, &doc, thread, limits.max_stack_depth)?;
    Ok(profile)
}

/// Adds a V8 profile's ticks on `thread`, their times in ns of V8's clock (its µs × 1000).
pub(crate) fn add_document(
    profile: &mut Profile,
    doc: &Document,
    thread: ThreadHandle,
    max_stack_depth: u64,
) -> Result<()> {
    let tree = Tree::new(&doc.nodes, doc.partial)?;
    let places = tree.places(&doc.nodes, profile, max_stack_depth)?;
    if doc.samples.is_empty() {
        add_hit_counts(profile, doc, &places, thread);
    } else {
        add_samples(profile, doc, &tree, &places, thread)?;
    }
    profile.sort_samples_by_time();
    Ok(())
}

/// The nodes by id, with each node's parent as `children` give it.
struct Tree {
    index: FxHashMap<u64, usize>,
    parent: Vec<Option<usize>>,
}

impl Tree {
    /// The tree of `nodes`; a `partial` document's parent it does not hold is no error.
    fn new(nodes: &[Node], partial: bool) -> Result<Tree> {
        let mut index = FxHashMap::default();
        for (i, node) in nodes.iter().enumerate() {
            if index.insert(node.id, i).is_some() {
                return Err(malformed(format!("nodes[{i}]: id {} is repeated", node.id)));
            }
        }
        let mut parent = vec![None; nodes.len()];
        for (i, node) in nodes.iter().enumerate() {
            if let Some(p) = node.parent {
                match index.get(&p) {
                    Some(&p) => parent[i] = Some(p),
                    // Left without a parent: counted as `v8_unknown_parent` when placed.
                    None if partial => {}
                    None => {
                        return Err(malformed(format!(
                            "nodes[{i}].parent names node {p}, which nodes does not hold"
                        )))
                    }
                }
            }
            for child in &node.children {
                let Some(&c) = index.get(child) else {
                    return Err(malformed(format!(
                        "nodes[{i}].children names node {child}, which nodes does not hold"
                    )));
                };
                if parent[c].replace(i).is_some_and(|p| p != i) {
                    return Err(malformed(format!("node {child} has two parents")));
                }
            }
        }
        Ok(Tree { index, parent })
    }

    /// Each node's stack: `Root` for the `(root)` node, which is no frame. A node no other
    /// lists among its children starts a stack of its own.
    fn places(&self, nodes: &[Node], profile: &mut Profile, max_depth: u64) -> Result<Vec<Place>> {
        let mut places = vec![Place::Unset; nodes.len()];
        if nodes
            .first()
            .is_some_and(|n| n.call_frame.function_name == "(root)")
        {
            places[0] = Place::Root;
        }
        for start in 0..nodes.len() {
            // Walks up to the nearest node with a place, then builds back down: iteration,
            // not recursion, since a tree may be thousands of nodes deep.
            let mut path = Vec::new();
            let mut at = Some(start);
            while let Some(i) = at.filter(|&i| places[i] == Place::Unset) {
                if path.len() > nodes.len() {
                    return Err(malformed(format!(
                        "node {} is its own ancestor",
                        nodes[i].id
                    )));
                }
                path.push(i);
                at = self.parent[i];
            }
            let mut place = at.map_or(Place::Root, |i| places[i]);
            for &i in path.iter().rev() {
                // The first node is the tree's root whatever its name; any other without a
                // parent has lost it.
                if self.parent[i].is_none() && i != 0 {
                    profile.count("v8_unknown_parent");
                }
                place = place.child(&nodes[i].call_frame, profile, max_depth);
                places[i] = place;
            }
        }
        Ok(places)
    }
}

/// Where a node's samples go in the stack table.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    /// Not reached yet.
    Unset,
    /// The `(root)` node, or above a root: no frames.
    Root,
    Stack(StackHandle),
    /// Deeper than `max_stack_depth`: its samples are kept without frames, as other decoders
    /// keep theirs, so that the totals still match V8's.
    TooDeep,
}

impl Place {
    fn child(self, call: &CallFrame, profile: &mut Profile, max_depth: u64) -> Place {
        let parent = match self {
            Place::Unset | Place::Root => None,
            Place::Stack(stack) => Some(stack),
            Place::TooDeep => return Place::TooDeep,
        };
        // Depth 0 is a root frame: a stack of n frames ends at depth n - 1.
        let depth = parent.map_or(0, |p| u64::from(profile.stack_depth(p)) + 1);
        if depth >= max_depth {
            return Place::TooDeep;
        }
        let frame = frame(call, profile);
        Place::Stack(profile.add_stack(parent, frame))
    }

    /// The sample's stack, counting one too deep to keep.
    fn stack(self, profile: &mut Profile) -> Option<StackHandle> {
        match self {
            Place::Stack(stack) => Some(stack),
            Place::TooDeep => {
                profile.count("v8_stack_too_deep");
                None
            }
            Place::Unset | Place::Root => None,
        }
    }
}

/// A node's frame. V8's synthetic nodes keep their names as function names; `(program)`
/// (time in V8 outside JavaScript) and `(garbage collector)` get the runtime's kinds.
fn frame(call: &CallFrame, profile: &mut Profile) -> crate::model::FrameHandle {
    let kind = match call.function_name.as_str() {
        "(program)" => FrameKind::Runtime,
        "(garbage collector)" => FrameKind::Gc,
        _ => FrameKind::JavaScript,
    };
    let mut frame = Frame::new(kind);
    let name = match call.function_name.as_str() {
        "" => "(anonymous)",
        name => name,
    };
    frame.function = Some(profile.intern(name));
    frame.file = (!call.url.is_empty()).then(|| profile.intern(&call.url));
    let one_based = |n: i64| u32::try_from(n).ok().and_then(|n| n.checked_add(1));
    frame.line = one_based(call.line_number);
    frame.column = one_based(call.column_number);
    profile.add_frame(frame)
}

/// The series samples go to: CPU time, but `(idle)` apart, since idle is not CPU time.
struct Targets {
    thread: ThreadHandle,
    cpu: SeriesHandle,
    idle: Option<SeriesHandle>,
}

impl Targets {
    fn new(profile: &mut Profile, thread: ThreadHandle, frequency_hz: Option<u64>) -> Targets {
        let cpu = add_series(profile, "cpu", SeriesKind::CpuTime, frequency_hz);
        Targets {
            thread,
            cpu,
            idle: None,
        }
    }

    fn idle(&mut self, profile: &mut Profile) -> SeriesHandle {
        *self
            .idle
            .get_or_insert_with(|| add_series(profile, "idle", SeriesKind::Other, None))
    }
}

fn add_series(
    profile: &mut Profile,
    name: &str,
    kind: SeriesKind,
    frequency_hz: Option<u64>,
) -> SeriesHandle {
    let series = Series {
        kind,
        name: profile.intern(name),
        unit: profile.intern("microseconds"),
        source: Some(profile.intern("v8")),
        frequency_hz,
        period: None,
        spans: false,
    };
    profile.add_series(series)
}

/// A document without ticks (the older layout's aggregated form): one aggregated sample per
/// node V8 counted ticks for, weighing its `hitCount`, in a `samples` series of counts
/// whose rate is the ticks over the profile's span, when it has one.
fn add_hit_counts(profile: &mut Profile, doc: &Document, places: &[Place], thread: ThreadHandle) {
    let ticks: u64 = doc.nodes.iter().map(|n| n.hit_count).sum();
    let span_us = doc.end_time.map(|end| end.saturating_sub(doc.start_time));
    let hz = span_us
        .filter(|&us| us > 0)
        .and_then(|us| u64::try_from(u128::from(ticks) * 1_000_000 / us as u128).ok())
        .filter(|&hz| hz > 0);
    let series = Series {
        kind: SeriesKind::CpuTime,
        name: profile.intern("samples"),
        unit: profile.intern("count"),
        source: Some(profile.intern("v8")),
        frequency_hz: hz,
        period: None,
        spans: false,
    };
    let cpu = profile.add_series(series);
    let mut idle = None;
    for (node, place) in doc.nodes.iter().zip(places) {
        if node.hit_count == 0 {
            continue;
        }
        // Idle is no CPU time, as for ticks.
        let series = match node.call_frame.function_name.as_str() {
            "(idle)" => *idle.get_or_insert_with(|| {
                let unit = profile.intern("count");
                let series = Series {
                    kind: SeriesKind::Other,
                    name: profile.intern("idle"),
                    unit,
                    source: Some(profile.intern("v8")),
                    frequency_hz: None,
                    period: None,
                    spans: false,
                };
                profile.add_series(series)
            }),
            _ => cpu,
        };
        let weight = i64::try_from(node.hit_count).unwrap_or(i64::MAX);
        let stack = place.stack(profile);
        profile.add_sample(Sample::new(thread, stack, weight, series));
    }
}

/// The sampling rate the median time between samples gives: V8 samples at a fixed interval
/// (`--cpu-prof-interval`, 1 ms by default) but the deltas jitter around it.
fn frequency_hz(deltas: &[i64]) -> Option<u64> {
    let mut positive: Vec<i64> = deltas.iter().copied().filter(|&d| d > 0).collect();
    if positive.is_empty() {
        return None;
    }
    let mid = positive.len() / 2;
    let median = *positive.select_nth_unstable(mid).1;
    u64::try_from(1_000_000 / median).ok().filter(|&hz| hz > 0)
}

/// The sample times, in µs: the first delta is from `startTime`, each next one from the
/// previous sample.
fn times(doc: &Document, n: usize, profile: &mut Profile) -> Result<Vec<i64>> {
    let mut t = doc.start_time;
    let mut times = Vec::with_capacity(n);
    for (i, &delta) in doc.time_deltas[..n].iter().enumerate() {
        if delta < 0 {
            profile.count("v8_negative_time_delta");
        }
        t = t
            .checked_add(delta)
            .filter(|t| t.checked_mul(1000).is_some())
            .ok_or_else(|| malformed(format!("timeDeltas[{i}] takes the time out of range")))?;
        times.push(t);
    }
    Ok(times)
}

/// One timed sample per tick, weighing the time until the next tick (the last one: until
/// `endTime`), as DevTools counts self time.
fn add_samples(
    profile: &mut Profile,
    doc: &Document,
    tree: &Tree,
    places: &[Place],
    thread: ThreadHandle,
) -> Result<()> {
    let n = doc.samples.len().min(doc.time_deltas.len());
    if doc.samples.len() != doc.time_deltas.len() {
        profile.count("v8_delta_mismatch");
    }
    let times = times(doc, n, profile)?;
    let mut targets = Targets::new(profile, thread, frequency_hz(&doc.time_deltas[..n]));
    for (i, (&id, &t)) in doc.samples.iter().zip(&times).enumerate() {
        let Some(&node) = tree.index.get(&id) else {
            if !doc.partial {
                return Err(malformed(format!(
                    "samples[{i}] names node {id}, which nodes does not hold"
                )));
            }
            // A trace cut before the node's chunk: the tick keeps its time and weight.
            profile.count("v8_unknown_node");
            let next = times.get(i + 1).copied().or(doc.end_time).unwrap_or(t);
            let weight = next.saturating_sub(t).max(0);
            let mut sample = Sample::new(targets.thread, None, weight, targets.cpu);
            sample.time = Some(t * 1000);
            profile.add_sample(sample);
            continue;
        };
        let next = times.get(i + 1).copied().or(doc.end_time).unwrap_or(t);
        let weight = next.saturating_sub(t).max(0);
        let series = match doc.nodes[node].call_frame.function_name.as_str() {
            "(idle)" => targets.idle(profile),
            _ => targets.cpu,
        };
        let stack = places[node].stack(profile);
        let mut sample = Sample::new(targets.thread, stack, weight, series);
        sample.time = Some(t * 1000);
        profile.add_sample(sample);
    }
    Ok(())
}
