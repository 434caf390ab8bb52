//! Turns folded lines into the model: one aggregated sample per line, weight = the count.

use rustc_hash::FxHashMap;

use super::dialect::Dialect;
use super::frame_syntax::{
    austin_frame, austin_process, austin_thread, generic_frame, pyspy_frame, pyspy_process,
    pyspy_thread, sampling_frame, sampling_thread, thread_id, FrameText,
};
use crate::error::Result;
use crate::limits::{exceeded, Limits};
use crate::model::{
    Frame, FrameAddress, FrameHandle, Image, Profile, Sample, Series, SeriesHandle, SeriesKind,
    StackHandle, ThreadHandle,
};

/// The root frames that name where a stack ran, as text (empty when absent).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
struct Context<'a> {
    process: &'a str,
    thread: &'a str,
}

/// The one series of a folded file.
pub(super) struct SeriesSpec {
    pub kind: SeriesKind,
    pub name: &'static str,
    pub unit: String,
    /// Sampling period, in `unit`.
    pub period: Option<u64>,
}

pub(super) struct Importer {
    profile: Profile,
    dialect: Dialect,
    series: SeriesHandle,
    /// Keys are owned: the text is read a block at a time.
    frames: FxHashMap<Box<str>, FrameHandle>,
    /// By process frame, then thread frame.
    threads: FxHashMap<Box<str>, FxHashMap<Box<str>, ThreadHandle>>,
    /// Deeper stacks are kept as samples without frames, and counted.
    max_stack_depth: u64,
    max_stack_nodes: u64,
}

impl Importer {
    pub(super) fn new(dialect: Dialect, series: SeriesSpec, limits: &Limits) -> Self {
        let mut profile = Profile::new("folded");
        profile
            .attributes
            .insert("folded.dialect".into(), dialect.name().into());
        let series = Series {
            kind: series.kind,
            name: profile.intern(series.name),
            unit: profile.intern(&series.unit),
            source: Some(profile.intern(dialect.source())),
            frequency_hz: None,
            period: series.period,
            spans: false,
        };
        let series = profile.add_series(series);
        Importer {
            profile,
            dialect,
            series,
            frames: FxHashMap::default(),
            threads: FxHashMap::default(),
            max_stack_depth: limits.max_stack_depth,
            max_stack_nodes: limits.max_stack_nodes,
        }
    }

    /// One line: its stack and its weight (the count in the series' unit).
    pub(super) fn line(&mut self, stack: &str, weight: i64) -> Result<()> {
        // A stack seen zero times says nothing about where time went.
        if weight == 0 {
            self.profile.count("folded_zero_count_line");
            return Ok(());
        }
        // py-spy's line for a thread with no Python frames is just ` COUNT`: no frames at all.
        let mut frames = stack.split(';').peekable();
        if stack.is_empty() {
            frames.next();
        }
        let mut context = Context::default();
        match self.dialect {
            Dialect::PySpy => {
                // Ancestors come first; the last process frame is the sampled process.
                while let Some(process) = frames.next_if(|f| pyspy_process(f).is_some()) {
                    context.process = process;
                }
                if let Some(thread) = frames.next_if(|f| pyspy_thread(f).is_some()) {
                    context.thread = thread;
                }
            }
            Dialect::PythonSampling => {
                if let Some(thread) = frames.next_if(|f| sampling_thread(f).is_some()) {
                    context.thread = thread;
                }
            }
            Dialect::Austin => {
                if let Some(process) = frames.next_if(|f| austin_process(f).is_some()) {
                    context.process = process;
                    if let Some(thread) = frames.next_if(|f| austin_thread(f).is_some()) {
                        context.thread = thread;
                    }
                }
            }
            Dialect::Generic => {}
        }
        let thread = self.thread(context);
        let separators = stack.bytes().filter(|&b| b == b';').count() as u64;
        let stack_handle = if separators >= self.max_stack_depth {
            // Keep the count, so totals still match the producer's.
            self.profile.count("folded_stack_too_deep");
            None
        } else {
            self.stack(frames)?
        };
        self.profile
            .add_sample(Sample::new(thread, stack_handle, weight, self.series));
        Ok(())
    }

    fn stack<'t>(&mut self, frames: impl Iterator<Item = &'t str>) -> Result<Option<StackHandle>> {
        let mut stack = None;
        for text in frames {
            if text.is_empty() {
                self.profile.count("folded_empty_frame");
                continue;
            }
            let frame = self.frame(text);
            stack = Some(self.profile.add_stack(stack, frame));
        }
        if self.profile.stacks().len() as u64 > self.max_stack_nodes {
            return Err(exceeded("max_stack_nodes", self.max_stack_nodes));
        }
        Ok(stack)
    }

    /// Multiplies every weight so far by `factor`: the file's counts turned out to have more
    /// decimals. The caller ([`super::stream::Scan`]) keeps the total, and knows none
    /// overflows.
    pub(super) fn rescale(&mut self, factor: i64) {
        self.profile.scale_sample_weights(factor);
    }

    /// The profile, its series' unit now `unit`.
    pub(super) fn finish(mut self, unit: &str) -> Profile {
        self.profile.set_series_unit(self.series, unit);
        self.profile
    }

    fn thread(&mut self, context: Context<'_>) -> ThreadHandle {
        if let Some(&thread) = self
            .threads
            .get(context.process)
            .and_then(|threads| threads.get(context.thread))
        {
            return thread;
        }
        let (pid, command_line) = match pyspy_process(context.process) {
            Some((pid, command_line)) => (pid.parse().ok(), Some(command_line)),
            None => (austin_process(context.process), None),
        };
        let (tid, name) = match self.dialect {
            Dialect::PySpy => pyspy_thread(context.thread)
                .map_or((None, None), |(id, name)| (thread_id(id), name)),
            Dialect::Austin => (austin_thread(context.thread).flatten(), None),
            _ => (sampling_thread(context.thread).and_then(thread_id), None),
        };
        let process = self.profile.add_process(pid);
        if let Some(command_line) = command_line {
            let program = command_line.split_whitespace().next().unwrap_or_default();
            let name = program.rsplit(['/', '\\']).next();
            self.profile.name_process(process, name, Some(command_line));
        }
        let thread = self.profile.add_thread(process, tid);
        if let Some(name) = name {
            self.profile.name_thread(thread, name);
        }
        self.threads
            .entry(context.process.into())
            .or_default()
            .insert(context.thread.into(), thread);
        thread
    }

    fn frame(&mut self, text: &str) -> FrameHandle {
        if let Some(&frame) = self.frames.get(text) {
            return frame;
        }
        let parsed: FrameText = match self.dialect {
            Dialect::PySpy => pyspy_frame(text),
            Dialect::PythonSampling => sampling_frame(text),
            Dialect::Austin => austin_frame(text),
            Dialect::Generic => generic_frame(text),
        };
        let mut frame = Frame::new(parsed.kind);
        frame.function = parsed.function.map(|s| self.profile.intern(s));
        frame.file = parsed.file.map(|s| self.profile.intern(s));
        frame.line = parsed.line;
        frame.address = parsed.address.map(FrameAddress::Absolute);
        if let Some(path) = parsed.image {
            let path = self.profile.intern(path);
            // Only the name is known: no mapped range.
            frame.image = Some(self.profile.add_image(Image::new(Some(path), 0, 0)));
        }
        let handle = self.profile.add_frame(frame);
        self.frames.insert(text.into(), handle);
        handle
    }
}
