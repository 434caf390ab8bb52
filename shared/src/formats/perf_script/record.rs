//! The records of a `perf script` text into the model: one timed sample per record, in a
//! series per event, on a thread per pid/tid.

use rustc_hash::FxHashMap;

use super::frames::{self, Frames};
use super::header::Header;
use super::{malformed, At};
use crate::error::Result;
use crate::limits::{exceeded, Limits};
use crate::model::{
    FrameHandle, Label, LabelSetHandle, LabelValue, Profile, Sample, Series, SeriesHandle,
    SeriesKind, ThreadHandle, Timestamps,
};

/// The series name of records that print no event.
const NO_EVENT: &str = "samples";

/// A thread as first seen, and the comm its later records had last, when another.
struct ThreadEntry {
    handle: ThreadHandle,
    name: Box<str>,
    /// After an exec the comm changes: those records carry it as their `comm` label.
    renamed: Option<(Box<str>, Option<LabelSetHandle>)>,
}

/// An event's series, and whether its records print a period (perf prints it for all or
/// none).
#[derive(Clone, Copy)]
struct SeriesEntry {
    handle: SeriesHandle,
    periodic: bool,
}

/// The record being read: its header resolved, its frames so far (leaf first).
struct Open {
    sample: Sample,
    stack: Vec<FrameHandle>,
    too_deep: bool,
}

pub(super) struct Importer {
    profile: Profile,
    frames: Frames,
    threads: FxHashMap<(Option<i64>, Option<i64>), ThreadEntry>,
    series: FxHashMap<Box<str>, SeriesEntry>,
    open: Option<Open>,
    /// The stack buffer of the last record, kept to be reused.
    spare: Vec<FrameHandle>,
    samples: u64,
    last_time: i64,
    in_order: bool,
    max_samples: u64,
    max_stack_depth: u64,
    max_stack_nodes: u64,
}

impl Importer {
    pub(super) fn new(limits: &Limits) -> Self {
        let mut profile = Profile::new(super::FORMAT);
        profile.timestamps = Timestamps::TraceClock("perf".into());
        Importer {
            profile,
            frames: Frames::new(),
            threads: FxHashMap::default(),
            series: FxHashMap::default(),
            open: None,
            spare: Vec::new(),
            samples: 0,
            last_time: i64::MIN,
            in_order: true,
            max_samples: limits.max_samples,
            max_stack_depth: limits.max_stack_depth,
            max_stack_nodes: limits.max_stack_nodes,
        }
    }

    /// A `#` line: perf's `--header` block, whose version and command line are kept.
    pub(super) fn comment(&mut self, text: &str) {
        let Some((key, value)) = text.trim_start_matches('#').split_once(" : ") else {
            return;
        };
        let key = match key.trim() {
            "perf version" => "perf.version",
            "cmdline" => "perf.cmdline",
            _ => return,
        };
        let value = value.trim();
        if !value.is_empty() {
            self.profile
                .attributes
                .entry(key.into())
                .or_insert_with(|| value.into());
        }
    }

    /// A record's first line: the record before it ends.
    pub(super) fn header(&mut self, header: &Header<'_>, at: At) -> Result<()> {
        self.end_record()?;
        if self.samples >= self.max_samples {
            return Err(exceeded("max_samples", self.max_samples));
        }
        let series = self.series(header, at)?;
        let weight = match header.period {
            Some(period) => i64::try_from(period).map_err(|_| {
                malformed(
                    at,
                    format!("period {period} does not fit in a signed 64-bit integer"),
                )
            })?,
            None => 1,
        };
        let (thread, labels) = self.thread(header);
        let mut sample = Sample::new(thread, None, weight, series);
        sample.time = Some(header.time);
        sample.cpu = header.cpu;
        sample.labels = labels;
        self.open = Some(Open {
            sample,
            stack: std::mem::take(&mut self.spare),
            too_deep: false,
        });
        if header.rest.is_empty() {
            return Ok(());
        }
        // Without `-g` the sampled frame follows the event on the same line.
        match frames::parse(header.rest) {
            Some(line) => self.frame(header.rest, &line),
            None => self.profile.count("perf_tracepoint_details"),
        }
        Ok(())
    }

    /// A callchain line of the open record.
    pub(super) fn frame(&mut self, text: &str, line: &frames::FrameLine<'_>) {
        let Some(open) = self.open.as_mut() else {
            self.profile.count("perf_frame_line_outside_record");
            return;
        };
        let max = self.max_stack_depth;
        self.frames.line(&mut self.profile, text, line, |frame| {
            if open.stack.len() as u64 >= max {
                open.too_deep = true;
            } else {
                open.stack.push(frame);
            }
        });
    }

    /// Counts something skipped or repaired.
    pub(super) fn count(&mut self, stat: &'static str) {
        self.profile.count(stat);
    }

    /// Ends the open record, if any: its sample goes into the model.
    pub(super) fn end_record(&mut self) -> Result<()> {
        let Some(mut open) = self.open.take() else {
            return Ok(());
        };
        if let Some(frame) = self.frames.flush(&mut self.profile) {
            if open.stack.len() as u64 >= self.max_stack_depth {
                open.too_deep = true;
            } else {
                open.stack.push(frame);
            }
        }
        if open.too_deep {
            self.profile.count("perf_stack_too_deep");
        } else {
            // Leaf first in the text, root first in the stack table.
            open.sample.stack = (open.stack.iter().rev()).fold(None, |parent, &frame| {
                Some(self.profile.add_stack(parent, frame))
            });
            if self.profile.stacks().len() as u64 > self.max_stack_nodes {
                return Err(exceeded("max_stack_nodes", self.max_stack_nodes));
            }
        }
        let time = open.sample.time.unwrap_or_default();
        self.in_order &= time >= self.last_time;
        self.last_time = time;
        self.profile.add_sample(open.sample);
        self.samples += 1;
        open.stack.clear();
        self.spare = open.stack;
        Ok(())
    }

    /// The profile, its samples in time order.
    pub(super) fn finish(mut self) -> Result<Profile> {
        self.end_record()?;
        if !self.in_order {
            self.profile.sort_samples_by_time();
        }
        Ok(self.profile)
    }

    /// The series of the record's event: CPU time in nanoseconds for `cpu-clock` and
    /// `task-clock` with a period (perf's software clocks count nanoseconds), otherwise
    /// counted.
    fn series(&mut self, header: &Header<'_>, at: At) -> Result<SeriesHandle> {
        let name = header.event.unwrap_or(NO_EVENT);
        let periodic = header.period.is_some();
        if let Some(entry) = self.series.get(name) {
            if entry.periodic != periodic {
                let what = format!(
                    "event `{}` {} a period here and {} before",
                    clip(name),
                    if periodic { "has" } else { "has no" },
                    if periodic { "none" } else { "one" }
                );
                return Err(malformed(at, what));
            }
            return Ok(entry.handle);
        }
        // `cpu-clock:u`, `task-clock:ppp`: the modifiers do not change what is measured.
        let base = name.split(':').next().unwrap_or(name);
        let clock = matches!(base, "cpu-clock" | "task-clock");
        let kind = if clock {
            SeriesKind::CpuTime
        } else {
            SeriesKind::Other
        };
        let unit = if clock && periodic {
            "nanoseconds"
        } else {
            "count"
        };
        let series = Series {
            kind,
            name: self.profile.intern(name),
            unit: self.profile.intern(unit),
            source: Some(self.profile.intern("perf script")),
            frequency_hz: None,
            period: None,
            spans: false,
        };
        let handle = self.profile.add_series(series);
        self.series
            .insert(name.into(), SeriesEntry { handle, periodic });
        Ok(handle)
    }

    /// The record's thread, and the `comm` label when its comm is no longer the thread's name.
    fn thread(&mut self, header: &Header<'_>) -> (ThreadHandle, Option<LabelSetHandle>) {
        let profile = &mut self.profile;
        let entry = self
            .threads
            .entry((header.pid, header.tid))
            .or_insert_with(|| {
                let process = profile.add_process(header.pid);
                // A lone id is the thread's: its process is not known, so not named after it.
                if header.pid.is_some() {
                    profile.name_process(process, Some(header.comm), None);
                }
                let handle = profile.add_thread(process, header.tid);
                profile.name_thread(handle, header.comm);
                ThreadEntry {
                    handle,
                    name: header.comm.into(),
                    renamed: None,
                }
            });
        if *entry.name == *header.comm {
            return (entry.handle, None);
        }
        match &entry.renamed {
            Some((comm, labels)) if **comm == *header.comm => (entry.handle, *labels),
            _ => {
                let label = Label {
                    key: self.profile.intern("comm"),
                    value: LabelValue::Str(self.profile.intern(header.comm)),
                };
                let labels = self.profile.add_label_set(&[label]);
                entry.renamed = Some((header.comm.into(), labels));
                (entry.handle, labels)
            }
        }
    }
}

/// At most 40 characters of `s`, so error messages stay one line.
fn clip(s: &str) -> &str {
    s.char_indices().nth(40).map_or(s, |(i, _)| &s[..i])
}
