//! The profile: the one mutable entry point to the model.

use std::collections::BTreeMap;

use indexmap::IndexSet;
use rustc_hash::{FxBuildHasher, FxHashMap};

use super::stack_nodes::StackNodes;
use super::{
    Frame, FrameHandle, FrameKind, Image, ImageHandle, Label, LabelSetHandle, Link, LinkHandle,
    Mark, Process, ProcessHandle, Sample, SampleTable, Series, SeriesHandle, StackHandle,
    StringHandle, Thread, ThreadHandle,
};

/// What sample times are measured against.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Timestamps {
    /// Nanoseconds since the Unix epoch.
    #[default]
    UnixEpoch,
    /// Nanoseconds on the named trace clock, whose relation to wall-clock time the input did
    /// not record (a Perfetto trace without a REALTIME clock snapshot). Writers that need
    /// wall-clock time must be given an anchor.
    TraceClock(String),
}

/// One row of the stack prefix tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StackNode {
    /// The calling stack, `None` at the root.
    pub parent: Option<StackHandle>,
    /// This node's frame (the callee).
    pub frame: FrameHandle,
}

/// A decoded profile: metadata, processes and threads, images, frames, a stack prefix tree and
/// samples. Every decoder builds one through the `add_*` methods, which deduplicate and hand out
/// handles; every writer reads one. Building cannot fail.
#[derive(Debug, Default)]
pub struct Profile {
    /// Short name of the input format (`perfetto`, ...).
    pub source_format: String,
    /// What sample times are measured against.
    pub timestamps: Timestamps,
    /// Free-form attributes of the whole profile (service, host, producer settings).
    pub attributes: BTreeMap<String, String>,
    /// Counters of things the decoder skipped or could not resolve, by reason.
    pub stats: BTreeMap<&'static str, u64>,
    /// When collection started, ns since the Unix epoch, as the input says (pprof
    /// `time_nanos`, OTLP `time_unix_nano`). Aggregated samples (without times) are laid out
    /// from here.
    pub start_time: Option<i64>,
    /// How long collection ran, in ns, as the input says.
    pub duration: Option<i64>,
    /// Findings of the input's own conformance rules (OTLP profcheck) that did not stop
    /// decoding, each with the path of the offending element.
    pub findings: Vec<String>,
    strings: IndexSet<Box<str>, FxBuildHasher>,
    images: IndexSet<Image, FxBuildHasher>,
    /// By handle. Kept apart from the dedup map so frames can be rewritten in place (by
    /// symbolization) without moving any handle, even when two become equal.
    frames: Vec<Frame>,
    frame_ids: FxHashMap<Frame, FrameHandle>,
    stacks: StackNodes,
    process_ids: IndexSet<Option<i64>, FxBuildHasher>,
    processes: Vec<Process>,
    threads: IndexSet<(ProcessHandle, Option<i64>), FxBuildHasher>,
    thread_names: Vec<Option<StringHandle>>,
    series: Vec<Series>,
    samples: SampleTable,
    label_sets: IndexSet<Box<[Label]>, FxBuildHasher>,
    links: IndexSet<Link, FxBuildHasher>,
    marks: Vec<Mark>,
}

impl Profile {
    /// An empty profile of the given input format.
    pub fn new(source_format: &str) -> Self {
        Profile {
            source_format: source_format.to_owned(),
            ..Profile::default()
        }
    }

    // ---- building ----------------------------------------------------------------------

    /// Interns a string.
    pub fn intern(&mut self, s: &str) -> StringHandle {
        if let Some(i) = self.strings.get_index_of(s) {
            return StringHandle::from_index(i);
        }
        let (i, _) = self.strings.insert_full(s.into());
        StringHandle::from_index(i)
    }

    /// Adds (or finds) an image.
    pub fn add_image(&mut self, image: Image) -> ImageHandle {
        ImageHandle::from_index(self.images.insert_full(image).0)
    }

    /// Adds (or finds) a frame.
    pub fn add_frame(&mut self, frame: Frame) -> FrameHandle {
        if let Some(&h) = self.frame_ids.get(&frame) {
            return h;
        }
        let h = FrameHandle::from_index(self.frames.len());
        self.frames.push(frame.clone());
        self.frame_ids.insert(frame, h);
        h
    }

    /// Adds (or finds) the stack `frame` called from `parent`.
    pub fn add_stack(&mut self, parent: Option<StackHandle>, frame: FrameHandle) -> StackHandle {
        self.stacks.add(parent, frame)
    }

    /// Adds the stack made of `frames`, root first; `None` for an empty list.
    pub fn add_stack_from_root(
        &mut self,
        frames: impl IntoIterator<Item = FrameHandle>,
    ) -> Option<StackHandle> {
        frames
            .into_iter()
            .fold(None, |parent, frame| Some(self.add_stack(parent, frame)))
    }

    /// Adds (or finds) the process with this pid.
    pub fn add_process(&mut self, pid: Option<i64>) -> ProcessHandle {
        let (i, inserted) = self.process_ids.insert_full(pid);
        if inserted {
            self.processes.push(Process {
                pid,
                name: None,
                command_line: None,
                attributes: Vec::new(),
            });
        }
        ProcessHandle::from_index(i)
    }

    /// Names a process unless it already has a name (the first name seen wins).
    pub fn name_process(
        &mut self,
        process: ProcessHandle,
        name: Option<&str>,
        command_line: Option<&str>,
    ) {
        let name = name.filter(|n| !n.is_empty()).map(|n| self.intern(n));
        let command_line = command_line
            .filter(|c| !c.is_empty())
            .map(|c| self.intern(c));
        let p = &mut self.processes[process.index()];
        p.name = p.name.or(name);
        p.command_line = p.command_line.or(command_line);
    }

    /// Records an attribute of a process (`service.name`, `host.name`) unless the process
    /// already has one under that key.
    pub fn set_process_attribute(&mut self, process: ProcessHandle, key: &str, value: &str) {
        let key = self.intern(key);
        let value = self.intern(value);
        let attrs = &mut self.processes[process.index()].attributes;
        if !attrs.iter().any(|(k, _)| *k == key) {
            attrs.push((key, value));
        }
    }

    /// Adds (or finds) a set of labels; `None` for an empty set. Labels are kept in the given
    /// order, so the same labels in another order are another set.
    pub fn add_label_set(&mut self, labels: &[Label]) -> Option<LabelSetHandle> {
        if labels.is_empty() {
            return None;
        }
        // Looked up first: samples mostly repeat a few sets, so only a new one is copied.
        let i = match self.label_sets.get_index_of(labels) {
            Some(i) => i,
            None => self.label_sets.insert_full(labels.into()).0,
        };
        Some(LabelSetHandle::from_index(i))
    }

    /// Adds (or finds) a trace link.
    pub fn add_link(&mut self, link: Link) -> LinkHandle {
        LinkHandle::from_index(self.links.insert_full(link).0)
    }

    /// Adds (or finds) the thread `tid` of `process`.
    pub fn add_thread(&mut self, process: ProcessHandle, tid: Option<i64>) -> ThreadHandle {
        let (i, inserted) = self.threads.insert_full((process, tid));
        if inserted {
            self.thread_names.push(None);
        }
        ThreadHandle::from_index(i)
    }

    /// Names a thread unless it already has a name (the first name seen wins).
    pub fn name_thread(&mut self, thread: ThreadHandle, name: &str) {
        if name.is_empty() || self.thread_names[thread.index()].is_some() {
            return;
        }
        let name = self.intern(name);
        self.thread_names[thread.index()] = Some(name);
    }

    /// Adds (or finds) a sample series.
    pub fn add_series(&mut self, series: Series) -> SeriesHandle {
        if let Some(i) = self.series.iter().position(|s| *s == series) {
            return SeriesHandle::from_index(i);
        }
        self.series.push(series);
        SeriesHandle::from_index(self.series.len() - 1)
    }

    /// Gives a series another unit.
    /// Gives `hz` as the sampling frequency of every series of counted samples (unit `count`)
    /// that states neither a period nor a frequency: what an upload's metadata says of a
    /// profile that does not (Pyroscope's `sampleRate` for folded stacks).
    pub(crate) fn set_unstated_sampling_rate(&mut self, hz: u64) {
        let count = self.strings.get_index_of("count");
        for series in &mut self.series {
            let counts = count.is_some_and(|c| series.unit.index() == c);
            if counts && series.period.is_none() && series.frequency_hz.is_none() {
                series.frequency_hz = Some(hz);
            }
        }
    }

    /// Gives a series another kind.
    pub(crate) fn set_series_kind(&mut self, series: SeriesHandle, kind: super::SeriesKind) {
        self.series[series.index()].kind = kind;
    }

    pub(crate) fn set_series_unit(&mut self, series: SeriesHandle, unit: &str) {
        let unit = self.intern(unit);
        self.series[series.index()].unit = unit;
    }

    /// Multiplies every sample's weight by `factor`; the caller knows none overflows.
    pub(crate) fn scale_sample_weights(&mut self, factor: i64) {
        self.samples.scale_weights(factor);
    }

    /// Adds a sample.
    pub fn add_sample(&mut self, sample: Sample) {
        self.samples.push(sample);
    }

    /// Replaces the labels of sample `i` (its position in [`Profile::samples`]).
    pub(crate) fn set_sample_labels(&mut self, i: usize, labels: Option<LabelSetHandle>) {
        self.samples.set_labels(i, labels);
    }

    /// Adds an instant or a counter value.
    pub fn add_mark(&mut self, mark: Mark) {
        self.marks.push(mark);
    }

    /// Moves every sample's time; a sample `f` gives no time goes. `f` is called once per
    /// sample, in order. Marks are not moved: `f` may count samples, so it means nothing for
    /// a mark, and a decoder that reads marks on another clock places them itself.
    pub fn retain_sample_times(&mut self, f: impl FnMut(Option<i64>) -> Option<i64>) {
        self.samples.retain_times(f);
    }

    /// Counts one occurrence of something skipped or unresolved.
    pub fn count(&mut self, stat: &'static str) {
        *self.stats.entry(stat).or_default() += 1;
    }

    /// Gives back the capacity the model's largest lists grew into but do not use: a decoded
    /// model is held until its outputs are written.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.stacks.shrink_to_fit();
        self.samples.shrink_to_fit();
    }

    /// Gives back the memory that only adding stacks needs, until a stack is next added.
    pub(crate) fn release_stack_lookups(&mut self) {
        self.stacks.release_lookups();
    }

    /// Orders samples by time (stable: samples with equal or no time keep input order).
    pub fn sort_samples_by_time(&mut self) {
        // The sort is a decoder's last step, and its memory peak: the stack lookup is given
        // back first (a stack added later builds it again), and the samples shrunk, since
        // the sort holds a second copy of one column at a time.
        self.stacks.release_lookups();
        self.samples.shrink_to_fit();
        self.samples.sort_by_time();
    }

    /// Puts times that are offsets from a known wall-clock instant on the wall clock: moves
    /// every sample by `origin_ns` (ns since the Unix epoch) and declares the times Unix-epoch
    /// based.
    pub fn offset_from(&mut self, origin_ns: i64) {
        self.move_times(origin_ns);
    }

    /// Puts trace-clock times on the wall clock: moves every sample and mark so that the first
    /// sample (the first mark, when there is no timed sample) is at `start_ns` (ns since the
    /// Unix epoch) and declares the times Unix-epoch based.
    pub fn anchor_first_sample_at(&mut self, start_ns: i64) {
        let first = self
            .samples
            .iter()
            .filter_map(|s| s.time)
            .min()
            .or_else(|| self.marks.iter().map(|m| m.time).min())
            .unwrap_or(0);
        self.move_times(start_ns.saturating_sub(first));
    }

    /// Moves every sample and mark by `offset` ns and declares the times Unix-epoch based.
    fn move_times(&mut self, offset: i64) {
        self.samples
            .map_times(|t| t.map(|t| t.saturating_add(offset)));
        for mark in &mut self.marks {
            mark.time = mark.time.saturating_add(offset);
        }
        self.timestamps = Timestamps::UnixEpoch;
    }

    // ---- reading -----------------------------------------------------------------------

    /// The text of an interned string.
    pub fn str(&self, s: StringHandle) -> &str {
        &self.strings[s.index()]
    }

    /// Every interned string, in handle order.
    pub fn strings(&self) -> impl ExactSizeIterator<Item = &str> {
        self.strings.iter().map(|s| &**s)
    }

    /// The text of an optional interned string.
    pub fn opt_str(&self, s: Option<StringHandle>) -> Option<&str> {
        s.map(|s| self.str(s))
    }

    /// The name of a frame kind, `Other` kinds in the producer's own word.
    pub fn kind_name(&self, kind: FrameKind) -> &str {
        match kind {
            FrameKind::Other(word) => self.str(word),
            known => known.name().unwrap_or("unknown"),
        }
    }

    /// An image.
    pub fn image(&self, h: ImageHandle) -> &Image {
        &self.images[h.index()]
    }

    /// All images with their handles.
    pub fn images(&self) -> impl ExactSizeIterator<Item = (ImageHandle, &Image)> {
        self.images
            .iter()
            .enumerate()
            .map(|(i, m)| (ImageHandle::from_index(i), m))
    }

    /// What to show for a frame, the one naming rule of every output (tables, `inspect`,
    /// flame graphs): its function, else `<image file name>!0x<address>` (`?` for the image
    /// when there is none), else `<unknown>`.
    pub fn frame_name(&self, frame: &Frame) -> String {
        if let Some(function) = self.opt_str(frame.function) {
            return function.to_owned();
        }
        let Some(address) = frame.address.map(|a| match a {
            super::FrameAddress::Absolute(a)
            | super::FrameAddress::ImageRelative(a)
            | super::FrameAddress::BaseRelative(a) => a,
        }) else {
            return "<unknown>".to_owned();
        };
        let image = frame
            .image
            .and_then(|i| self.opt_str(self.image(i).path))
            // Windows images arrive with backslashes.
            .and_then(|path| path.rsplit(['/', '\\']).next())
            .filter(|name| !name.is_empty())
            .unwrap_or("?");
        format!("{image}!{address:#x}")
    }

    /// A frame.
    pub fn frame(&self, h: FrameHandle) -> &Frame {
        &self.frames[h.index()]
    }

    /// Rewrites frames in place: `rewrite` sees every frame with its handle and may change it.
    /// Every handle (in stacks, samples and elsewhere) stays valid and keeps pointing at its
    /// frame; frames that become equal stay apart, and later [`Profile::add_frame`] calls find
    /// the first of them.
    pub fn rewrite_frames(&mut self, mut rewrite: impl FnMut(FrameHandle, &mut Frame)) {
        for (i, frame) in self.frames.iter_mut().enumerate() {
            rewrite(FrameHandle::from_index(i), frame);
        }
        self.frame_ids.clear();
        for (i, frame) in self.frames.iter().enumerate() {
            self.frame_ids
                .entry(frame.clone())
                .or_insert(FrameHandle::from_index(i));
        }
    }

    /// All frames with their handles.
    pub fn frames(&self) -> impl ExactSizeIterator<Item = (FrameHandle, &Frame)> {
        self.frames
            .iter()
            .enumerate()
            .map(|(i, f)| (FrameHandle::from_index(i), f))
    }

    /// A node of the stack prefix tree.
    pub fn stack(&self, h: StackHandle) -> StackNode {
        let (parent, frame) = self.stacks.get(h);
        StackNode { parent, frame }
    }

    /// The largest [`stack_depth`](Profile::stack_depth) of any stack node.
    pub fn max_stack_depth(&self) -> Option<u32> {
        self.stacks.max_depth()
    }

    /// A stack node's distance from the root (0 = root frame).
    pub fn stack_depth(&self, h: StackHandle) -> u32 {
        self.stacks.depth(h)
    }

    /// All stack nodes, parents before children.
    pub fn stacks(&self) -> impl ExactSizeIterator<Item = (StackHandle, StackNode)> + '_ {
        (0..self.stacks.len()).map(|i| {
            let h = StackHandle::from_index(i);
            (h, self.stack(h))
        })
    }

    /// The frames of a stack, leaf first.
    pub fn stack_frames(&self, leaf: StackHandle) -> impl Iterator<Item = FrameHandle> + '_ {
        std::iter::successors(Some(leaf), |&s| self.stacks.parent(s)).map(|s| self.stacks.frame(s))
    }

    /// A process.
    pub fn process(&self, h: ProcessHandle) -> &Process {
        &self.processes[h.index()]
    }

    /// All processes with their handles.
    pub fn processes(&self) -> impl ExactSizeIterator<Item = (ProcessHandle, &Process)> {
        self.processes
            .iter()
            .enumerate()
            .map(|(i, p)| (ProcessHandle::from_index(i), p))
    }

    /// A thread.
    pub fn thread(&self, h: ThreadHandle) -> Thread {
        let (process, tid) = self.threads[h.index()];
        Thread {
            process,
            tid,
            name: self.thread_names[h.index()],
        }
    }

    /// All threads with their handles.
    pub fn threads(&self) -> impl ExactSizeIterator<Item = (ThreadHandle, Thread)> + '_ {
        (0..self.threads.len()).map(|i| {
            let h = ThreadHandle::from_index(i);
            (h, self.thread(h))
        })
    }

    /// A sample series.
    pub fn series(&self, h: SeriesHandle) -> &Series {
        &self.series[h.index()]
    }

    /// All sample series with their handles.
    pub fn all_series(&self) -> impl ExactSizeIterator<Item = (SeriesHandle, &Series)> {
        self.series
            .iter()
            .enumerate()
            .map(|(i, s)| (SeriesHandle::from_index(i), s))
    }

    /// The labels of a set.
    pub fn label_set(&self, h: LabelSetHandle) -> &[Label] {
        &self.label_sets[h.index()]
    }

    /// All label sets with their handles.
    pub fn label_sets(&self) -> impl ExactSizeIterator<Item = (LabelSetHandle, &[Label])> {
        self.label_sets
            .iter()
            .enumerate()
            .map(|(i, l)| (LabelSetHandle::from_index(i), &**l))
    }

    /// A trace link.
    pub fn link(&self, h: LinkHandle) -> &Link {
        &self.links[h.index()]
    }

    /// All trace links with their handles.
    pub fn links(&self) -> impl ExactSizeIterator<Item = (LinkHandle, &Link)> {
        self.links
            .iter()
            .enumerate()
            .map(|(i, l)| (LinkHandle::from_index(i), l))
    }

    /// All samples, in time order once the decoder has finished.
    pub fn samples(&self) -> &SampleTable {
        &self.samples
    }

    /// Every instant and counter value, in the order they were added.
    pub fn marks(&self) -> &[Mark] {
        &self.marks
    }

    /// Puts `samples` in place of the profile's samples, which it gives back: a long
    /// recording's model holds one piece of its samples at a time.
    pub(crate) fn replace_samples(&mut self, samples: SampleTable) -> SampleTable {
        std::mem::replace(&mut self.samples, samples)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FrameKind;

    #[test]
    fn stacks_form_a_deduplicated_prefix_tree() {
        let mut p = Profile::new("test");
        let names: Vec<_> = ["main", "a", "b"].iter().map(|n| p.intern(n)).collect();
        let frames: Vec<_> = names
            .iter()
            .map(|&n| {
                let mut f = Frame::new(FrameKind::Native);
                f.function = Some(n);
                p.add_frame(f)
            })
            .collect();
        let ab = p.add_stack_from_root([frames[0], frames[1]]).unwrap();
        let ac = p.add_stack_from_root([frames[0], frames[2]]).unwrap();
        let ab2 = p.add_stack_from_root([frames[0], frames[1]]).unwrap();
        assert_eq!(ab, ab2);
        assert_ne!(ab, ac);
        assert_eq!(p.stacks().len(), 3, "root shared by both stacks");
        assert_eq!(p.stack_depth(ab), 1);
        let leaf_first: Vec<_> = p.stack_frames(ac).collect();
        assert_eq!(leaf_first, vec![frames[2], frames[0]]);
        assert_eq!(p.add_stack_from_root([]), None);
    }

    #[test]
    fn rewriting_frames_keeps_every_handle() {
        let mut p = Profile::new("test");
        let addressed = |p: &mut Profile, a: u64| {
            let mut f = Frame::new(FrameKind::Native);
            f.address = Some(crate::model::FrameAddress::ImageRelative(a));
            p.add_frame(f)
        };
        let (x, y) = (addressed(&mut p, 0x10), addressed(&mut p, 0x20));
        let stack = p.add_stack_from_root([x, y]).unwrap();
        let name = p.intern("inlined_helper");
        // Both addresses resolve to the same function; strip the address to make them equal.
        p.rewrite_frames(|_, f| {
            f.function = Some(name);
            f.address = None;
        });
        assert_eq!(p.frames().len(), 2, "equal frames stay apart");
        assert_eq!(p.frame(x).function, Some(name));
        assert_eq!(p.frame(y).function, Some(name));
        assert_eq!(p.stack_frames(stack).collect::<Vec<_>>(), vec![y, x]);
        let mut same = Frame::new(FrameKind::Native);
        same.function = Some(name);
        assert_eq!(p.add_frame(same), x, "the first equal frame is found");
    }

    fn mark_at(p: &mut Profile, time: i64) -> Mark {
        let process = p.add_process(Some(1));
        Mark {
            time,
            thread: p.add_thread(process, Some(1)),
            kind: crate::model::MarkKind::Instant,
            name: p.intern("tick"),
            category: None,
            key: None,
            value: None,
            scope: None,
            labels: None,
        }
    }

    #[test]
    fn putting_a_profile_on_the_wall_clock_moves_its_marks() {
        let mut p = Profile::new("test");
        let process = p.add_process(Some(1));
        let thread = p.add_thread(process, Some(1));
        let series = Series {
            kind: crate::model::SeriesKind::WallTime,
            name: p.intern("wall"),
            unit: p.intern("nanoseconds"),
            source: None,
            frequency_hz: None,
            period: None,
            spans: false,
        };
        let series = p.add_series(series);
        for time in [500, 300] {
            p.add_sample(Sample {
                time: Some(time),
                ..Sample::new(thread, None, 1, series)
            });
        }
        let (early, late) = (mark_at(&mut p, 100), mark_at(&mut p, 900));
        p.add_mark(late);
        p.add_mark(early);
        p.anchor_first_sample_at(10_000);
        let times: Vec<i64> = p.marks().iter().map(|m| m.time).collect();
        assert_eq!(
            times,
            [10_600, 9_800],
            "moved as the first sample, 300, moved"
        );
        p.offset_from(5);
        assert_eq!(p.marks()[1].time, 9_805);
        assert_eq!(p.timestamps, Timestamps::UnixEpoch);
    }

    #[test]
    fn marks_alone_anchor_at_the_first_mark() {
        let mut p = Profile::new("test");
        p.timestamps = Timestamps::TraceClock("chrome".into());
        let (a, b) = (mark_at(&mut p, 700), mark_at(&mut p, 200));
        p.add_mark(a);
        p.add_mark(b);
        p.anchor_first_sample_at(1_000);
        let times: Vec<i64> = p.marks().iter().map(|m| m.time).collect();
        assert_eq!(times, [1_500, 1_000]);
    }

    #[test]
    fn first_name_wins() {
        let mut p = Profile::new("test");
        let proc_ = p.add_process(Some(1));
        let t = p.add_thread(proc_, Some(2));
        p.name_thread(t, "first");
        p.name_thread(t, "second");
        assert_eq!(p.opt_str(p.thread(t).name), Some("first"));
        assert_eq!(p.add_thread(proc_, Some(2)), t);
    }
}
