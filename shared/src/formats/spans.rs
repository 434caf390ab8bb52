//! Spans (begin/end pairs on one track) turned into a wall-time series: one rule for every
//! format that records spans rather than samples (speedscope's evented profiles, and trace
//! events' `B`/`E` and `X`).
//!
//! Time is swept from the first boundary to the last. Open spans are kept in the order they
//! began, and every instant with a span open is attributed once, to the stack of the spans open
//! then: the earliest begun at the root, the latest begun at the leaf. Each stretch with one
//! stack becomes one sample whose weight is its length in nanoseconds. So the weights of a track
//! add up to the time during which any of its spans was open, whatever the spans' overlap.
//!
//! An end closes the latest open span of its name; an end without a name, or with one no open
//! span has, closes the innermost span opened by a begin, as catapult's trace viewer does. A
//! span never ended stays open until the document's last timestamp.

use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;

use crate::model::{
    FrameHandle, LabelSetHandle, Profile, Sample, SeriesHandle, StackHandle, ThreadHandle,
};

/// What the sweep counts, as the profile's stats (and so the manifest) name it.
pub(crate) mod stat {
    /// Spans begun.
    pub const SPANS: &str = "spans";
    /// Ends that closed no span of their name (closed the innermost, or nothing).
    pub const UNMATCHED_END: &str = "spans_unmatched_end";
    /// Closes that left a later-begun span open: spans that overlap without nesting.
    pub const NOT_NESTED: &str = "spans_not_nested";
    /// Spans still open at the document's last timestamp.
    pub const UNTERMINATED: &str = "spans_unterminated";
    /// Stretches whose open spans were deeper than `max_stack_depth`: kept without frames.
    pub const TOO_DEEP: &str = "span_stack_too_deep";
}

/// Why boundaries at one instant are taken in a given order. The ends of complete (`X`)
/// spans come before both: a span ending at `t` and one beginning at `t` are siblings.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Class {
    /// Begins and ends written as separate events keep the order the producer wrote them in.
    Written,
    /// Complete spans begin after those, longest first, so that a child written before its
    /// parent with the same start still nests inside it.
    CompleteBegin,
}

/// What a boundary does. A span is known by the `seq` of its begin.
#[derive(Clone, Copy, Debug)]
enum Edge {
    Begin {
        name: u32,
        frame: FrameHandle,
        labels: Option<LabelSetHandle>,
    },
    End {
        name: Option<u32>,
        labels: Option<LabelSetHandle>,
    },
}

/// A begin or end as written; a complete span is one boundary, its end coming from its
/// length (`tie`), so a trace of complete spans costs one boundary a span. Every boundary of
/// a document is held until the document ends, so it is packed into 32 bytes: its class and
/// whether an end has a name sit in the top bits of its number.
#[derive(Clone, Copy, Debug)]
struct Boundary {
    time: i64,
    /// A complete span's negated length; 0 otherwise.
    tie: i64,
    /// The order written ([`SEQ`]), with [`COMPLETE`] and [`NAMED`].
    order: u32,
    /// A begin's name, or an end's when [`NAMED`] is set.
    name: NameKey,
    /// A begin's frame; `None` for an end.
    frame: Option<FrameHandle>,
    labels: Option<LabelSetHandle>,
}

// What a span costs until its document ends.
const _: () = assert!(std::mem::size_of::<Boundary>() == 32);

/// `Boundary::order`'s bit for a boundary that begins a complete span ([`Class::CompleteBegin`]).
const COMPLETE: u32 = 1 << 31;
/// `Boundary::order`'s bit for an end that names its span.
const NAMED: u32 = 1 << 30;
/// `Boundary::order`'s bits numbering boundaries in the order written. A track of more than
/// 2^30 boundaries (a document of hundreds of GB) would number them again from 0.
const SEQ: u32 = NAMED - 1;

impl Boundary {
    fn new(time: i64, class: Class, tie: i64, seq: u32, edge: Edge) -> Self {
        let class_bit = if class == Class::CompleteBegin {
            COMPLETE
        } else {
            0
        };
        let order = class_bit | (seq & SEQ);
        match edge {
            Edge::Begin {
                name,
                frame,
                labels,
            } => Boundary {
                time,
                tie,
                order,
                name,
                frame: Some(frame),
                labels,
            },
            Edge::End { name, labels } => Boundary {
                time,
                tie,
                order: order | if name.is_some() { NAMED } else { 0 },
                name: name.unwrap_or_default(),
                frame: None,
                labels,
            },
        }
    }

    fn class(&self) -> Class {
        if self.order & COMPLETE != 0 {
            Class::CompleteBegin
        } else {
            Class::Written
        }
    }

    /// The order written: the span a begin starts is known by it.
    fn seq(&self) -> u32 {
        self.order & SEQ
    }

    fn edge(&self) -> Edge {
        match self.frame {
            Some(frame) => Edge::Begin {
                name: self.name,
                frame,
                labels: self.labels,
            },
            None => Edge::End {
                name: (self.order & NAMED != 0).then_some(self.name),
                labels: self.labels,
            },
        }
    }

    /// Where a complete span ends.
    fn own_end(&self) -> Option<i64> {
        (self.class() == Class::CompleteBegin).then(|| self.time.saturating_sub(self.tie))
    }
}

/// A complete span waiting for its end, ordered as ends at one instant are taken: the
/// latest begun first, and of two begun together the later written (which began inside the
/// other).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct PendingEnd {
    end: i64,
    begun: std::cmp::Reverse<i64>,
    seq: std::cmp::Reverse<u32>,
}

/// The boundaries of one track's spans, in any order, to be swept once all are known.
#[derive(Default)]
pub(crate) struct SpanTrack {
    boundaries: Vec<Boundary>,
    written: u32,
}

/// A span's name, as the caller tells names apart (an interned string, a frame index).
pub(crate) type NameKey = u32;

impl SpanTrack {
    fn next_seq(&mut self) -> u32 {
        self.written = self.written.wrapping_add(1) & SEQ;
        self.written
    }

    /// Records a boundary, numbered in the order written.
    fn push(&mut self, time: i64, class: Class, tie: i64, edge: Edge) {
        let seq = self.next_seq();
        self.boundaries
            .push(Boundary::new(time, class, tie, seq, edge));
    }

    /// A span begun at `time` (ns) by a begin event; `frame` is what stacks show for it.
    pub(crate) fn begin(
        &mut self,
        time: i64,
        name: NameKey,
        frame: FrameHandle,
        labels: Option<LabelSetHandle>,
    ) {
        let edge = Edge::Begin {
            name,
            frame,
            labels,
        };
        self.push(time, Class::Written, 0, edge);
    }

    /// An end event at `time`, naming the span it ends or not; its `labels` complete and
    /// correct those the span began with.
    pub(crate) fn end(&mut self, time: i64, name: Option<NameKey>, labels: Option<LabelSetHandle>) {
        self.push(time, Class::Written, 0, Edge::End { name, labels });
    }

    /// A complete span: begun at `time`, lasting `duration` ns (more than 0).
    pub(crate) fn complete(
        &mut self,
        time: i64,
        duration: i64,
        name: NameKey,
        frame: FrameHandle,
        labels: Option<LabelSetHandle>,
    ) {
        let edge = Edge::Begin {
            name,
            frame,
            labels,
        };
        self.push(time, Class::CompleteBegin, duration.saturating_neg(), edge);
    }

    /// Whether no span began or ended on this track.
    pub(crate) fn is_empty(&self) -> bool {
        self.boundaries.is_empty()
    }

    /// The last time any boundary of this track has, if it has one.
    pub(crate) fn last_time(&self) -> Option<i64> {
        self.boundaries
            .iter()
            .map(|b| b.own_end().unwrap_or(b.time))
            .max()
    }

    /// Sweeps the track into samples of `series` on `thread`, each at its stretch's start and
    /// weighing its length; spans never ended close at `end_of_document`.
    pub(crate) fn sweep(
        mut self,
        into: Target,
        end_of_document: i64,
        profile: &mut Profile,
        max_stack_depth: u64,
    ) {
        self.boundaries
            .sort_unstable_by_key(|b| (b.time, b.class(), b.tie, b.seq()));
        let mut sweep = Sweep {
            into,
            open: Vec::new(),
            pending: None,
            max_depth: usize::try_from(max_stack_depth).unwrap_or(usize::MAX),
            relabel: Vec::new(),
            ended_with: FxHashMap::default(),
        };
        // Complete spans' ends, waiting in a heap: only the open ones are held.
        let mut ends: BinaryHeap<std::cmp::Reverse<PendingEnd>> = BinaryHeap::new();
        let next_end =
            |ends: &BinaryHeap<std::cmp::Reverse<PendingEnd>>| ends.peek().map(|e| e.0.end);
        let mut i = 0;
        loop {
            let next_begin = self.boundaries.get(i).map(|b| b.time);
            let Some(t) = next_begin.into_iter().chain(next_end(&ends)).min() else {
                break;
            };
            while let Some(end) = ends.peek().filter(|e| e.0.end == t) {
                let seq = end.0.seq.0;
                ends.pop();
                sweep.own_end(seq, profile);
            }
            while let Some(b) = self.boundaries.get(i).filter(|b| b.time == t) {
                if let Some(end) = b.own_end() {
                    ends.push(std::cmp::Reverse(PendingEnd {
                        end,
                        begun: std::cmp::Reverse(b.time),
                        seq: std::cmp::Reverse(b.seq()),
                    }));
                }
                sweep.apply(b, profile);
                i += 1;
            }
            let next_begin = self.boundaries.get(i).map(|b| b.time);
            let next = next_begin
                .into_iter()
                .chain(next_end(&ends))
                .min()
                .unwrap_or(end_of_document.max(t));
            sweep.attribute(t, next, profile);
        }
        for _ in 0..sweep.open.len() {
            profile.count(stat::UNTERMINATED);
        }
        sweep.flush(profile);
        sweep.relabel(profile);
    }
}

/// Where a track's samples go.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Target {
    pub thread: ThreadHandle,
    pub series: SeriesHandle,
    /// Whether the boundaries' values are times; if not, the stretches are kept without one
    /// (aggregated), weighing their length in the values' unit.
    pub timed: bool,
}

struct Open {
    span: u32,
    name: NameKey,
    frame: FrameHandle,
    labels: Option<LabelSetHandle>,
    complete: bool,
    /// The stack this span's stretches have: its frame on the stack of the spans before it.
    stack: Option<StackHandle>,
}

/// A stretch not yet written: consecutive stretches of one stack and leaf span are one sample.
struct Pending {
    time: i64,
    weight: i64,
    leaf: u32,
    /// Whether the leaf span is complete (`X`): no end event can change its labels.
    complete: bool,
    stack: Option<StackHandle>,
    labels: Option<LabelSetHandle>,
}

struct Sweep {
    into: Target,
    open: Vec<Open>,
    pending: Option<Pending>,
    max_depth: usize,
    /// The stretches (by position in the profile's samples) whose leaf span was begun by a
    /// begin event, with that span: its end, still to come, may correct their labels.
    /// Stretches are added to the profile as they are swept, so a trace of complete spans
    /// holds none of them here.
    relabel: Vec<(u32, u32)>,
    /// The labels of spans whose end had labels: the begin's with the end's over them.
    ended_with: FxHashMap<u32, Option<LabelSetHandle>>,
}

impl Sweep {
    fn apply(&mut self, b: &Boundary, profile: &mut Profile) {
        match b.edge() {
            Edge::Begin {
                name,
                frame,
                labels,
            } => {
                let (span, complete) = (b.seq(), b.class() == Class::CompleteBegin);
                profile.count(stat::SPANS);
                let parent = self.open.last().and_then(|o| o.stack);
                let stack = self.stack_on(parent, frame, self.open.len(), profile);
                self.open.push(Open {
                    span,
                    name,
                    frame,
                    labels,
                    complete,
                    stack,
                });
            }
            Edge::End { name, labels } => {
                let named =
                    name.and_then(|n| self.open.iter().rposition(|o| !o.complete && o.name == n));
                let at = match named {
                    Some(at) => Some(at),
                    None => {
                        profile.count(stat::UNMATCHED_END);
                        self.open.iter().rposition(|o| !o.complete)
                    }
                };
                if let Some(at) = at {
                    if labels.is_some() {
                        let merged = merge_labels(self.open[at].labels, labels, profile);
                        self.ended_with.insert(self.open[at].span, merged);
                    }
                    self.close(at, profile);
                }
            }
        }
    }

    /// The end of the complete span begun by boundary `span`.
    fn own_end(&mut self, span: u32, profile: &mut Profile) {
        if let Some(at) = self.open.iter().rposition(|o| o.span == span) {
            self.close(at, profile);
        }
    }

    /// The stack of a span at `depth` (0 for the outermost) on `parent`: none past the depth
    /// limit, where stretches are kept without frames.
    fn stack_on(
        &self,
        parent: Option<StackHandle>,
        frame: FrameHandle,
        depth: usize,
        profile: &mut Profile,
    ) -> Option<StackHandle> {
        if depth >= self.max_depth || (depth > 0 && parent.is_none()) {
            return None;
        }
        Some(profile.add_stack(parent, frame))
    }

    /// Closes the open span at `at`; the spans begun after it keep their order, their stacks
    /// now without it.
    fn close(&mut self, at: usize, profile: &mut Profile) {
        self.open.remove(at);
        if at == self.open.len() {
            return;
        }
        profile.count(stat::NOT_NESTED);
        for i in at..self.open.len() {
            let parent = i.checked_sub(1).and_then(|p| self.open[p].stack);
            self.open[i].stack = self.stack_on(parent, self.open[i].frame, i, profile);
        }
    }

    /// Attributes `[from, to)` to the spans open now.
    fn attribute(&mut self, from: i64, to: i64, profile: &mut Profile) {
        let Some(leaf) = self.open.last() else {
            return;
        };
        let weight = to.saturating_sub(from);
        if weight <= 0 {
            return;
        }
        let (span, stack, labels, complete) = (leaf.span, leaf.stack, leaf.labels, leaf.complete);
        if let Some(p) = &mut self.pending {
            if p.leaf == span && p.stack == stack && p.time.saturating_add(p.weight) == from {
                p.weight = p.weight.saturating_add(weight);
                return;
            }
        }
        self.flush(profile);
        self.pending = Some(Pending {
            time: from,
            weight,
            leaf: span,
            complete,
            stack,
            labels,
        });
    }

    fn flush(&mut self, profile: &mut Profile) {
        let Some(p) = self.pending.take() else {
            return;
        };
        if p.stack.is_none() {
            profile.count(stat::TOO_DEEP);
        }
        let mut sample = Sample::new(self.into.thread, p.stack, p.weight, self.into.series);
        sample.time = self.into.timed.then_some(p.time);
        sample.labels = p.labels;
        if !p.complete {
            // A profile's samples are numbered in `u32` (its handles are).
            let at = u32::try_from(profile.samples().len()).unwrap_or(u32::MAX);
            self.relabel.push((at, p.leaf));
        }
        profile.add_sample(sample);
    }

    /// Gives the stretches the labels their leaf span ended with.
    fn relabel(self, profile: &mut Profile) {
        for (at, leaf) in self.relabel {
            if let Some(&labels) = self.ended_with.get(&leaf) {
                profile.set_sample_labels(at as usize, labels);
            }
        }
    }
}

/// `base` with `over`'s labels put over it, key by key: an end's args complete and correct
/// its begin's (catapult merges them the same way).
pub(crate) fn merge_labels(
    base: Option<LabelSetHandle>,
    over: Option<LabelSetHandle>,
    profile: &mut Profile,
) -> Option<LabelSetHandle> {
    let (Some(base), Some(over)) = (base, over) else {
        return over.or(base);
    };
    let mut labels = profile.label_set(base).to_vec();
    for &label in profile.label_set(over) {
        match labels.iter_mut().find(|l| l.key == label.key) {
            Some(l) => *l = label,
            None => labels.push(label),
        }
    }
    profile.add_label_set(&labels)
}

#[cfg(test)]
#[path = "spans_tests.rs"]
mod tests;
