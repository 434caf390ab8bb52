//! What each trace event does to the model: `M` names processes and threads, `B`/`E`/`X`
//! become spans on their thread's track (swept by `formats::spans` once all are read),
//! instants and counters become marks, and the other phases are counted.

use rustc_hash::FxHashMap;
use serde::Deserialize;
use std::borrow::Cow;

use super::args::Args;
use super::catapult::{Catapult, RawSample};
use super::event::{id, micros_to_ns, RawEvent};
use super::marks::Marks;
use super::v8::V8Profiles;
use super::FORMAT;
use crate::error::Result;
use crate::formats::spans::{merge_labels, SpanTrack, Target};
use crate::limits::{exceeded, Limits};
use crate::model::{
    Frame, FrameHandle, FrameKind, Label, LabelSetHandle, LabelValue, ProcessHandle, Profile,
    Series, SeriesHandle, SeriesKind, StringHandle, ThreadHandle,
};

/// What the stats call events that are counted and skipped, by phase.
fn skipped(ph: u8) -> &'static str {
    match ph {
        b'n' | b'S' | b'T' | b'F' | b'p' => "chrome_async_events",
        b's' | b't' | b'f' => "chrome_flow_events",
        b'P' => "chrome_sample_events",
        b'O' | b'N' | b'D' => "chrome_object_events",
        _ => "chrome_other_events",
    }
}

struct Track {
    thread: ThreadHandle,
    spans: SpanTrack,
}

/// An async span's process, category and id.
type AsyncKey = (Option<i64>, StringHandle, StringHandle);

/// The model being built from a document's events.
pub(super) struct Events<'l> {
    pub profile: Profile,
    limits: &'l Limits,
    args: Args,
    processes: FxHashMap<Option<i64>, ProcessHandle>,
    tracks: FxHashMap<(Option<i64>, Option<i64>), Track>,
    /// Async spans (`b`/`e`) by process, category and id: each id is a track of its own.
    async_tracks: FxHashMap<AsyncKey, (Track, LabelSetHandle)>,
    frames: FxHashMap<StringHandle, FrameHandle>,
    span_kind: FrameKind,
    /// The latest time of any event but `M`: spans never ended close there.
    last_ns: Option<i64>,
    events: u64,
    v8: V8Profiles,
    catapult: Catapult,
    marks: Marks,
}

/// The `args` of `M` events that name things.
#[derive(Deserialize)]
struct NameArgs<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    parent_agent_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    labels: Option<Cow<'a, str>>,
}

impl<'l> Events<'l> {
    pub(super) fn new(limits: &'l Limits) -> Self {
        let mut profile = Profile::new(FORMAT);
        let span_kind = FrameKind::Other(profile.intern("span"));
        Events {
            profile,
            limits,
            args: Args::new(limits.max_span_args, limits.max_string_bytes),
            processes: FxHashMap::default(),
            tracks: FxHashMap::default(),
            async_tracks: FxHashMap::default(),
            frames: FxHashMap::default(),
            span_kind,
            last_ns: None,
            events: 0,
            v8: V8Profiles::default(),
            catapult: Catapult::default(),
            marks: Marks::new(limits.max_samples),
        }
    }

    /// Takes in one event of the document, given whole.
    pub(super) fn event(&mut self, e: &RawEvent<'_>) -> Result<()> {
        self.events += 1;
        if self.events > self.limits.max_events {
            return Err(exceeded("max_events", self.limits.max_events));
        }
        let ph = e.ph.as_deref().and_then(|p| p.bytes().next()).unwrap_or(0);
        if ph == b'M' {
            return self.metadata(e);
        }
        if self.v8_event(e) {
            return Ok(());
        }
        let ts = e.ts.and_then(micros_to_ns);
        let dur = e.dur.and_then(micros_to_ns);
        if let Some(t) = ts {
            let end = t.saturating_add(dur.unwrap_or(0).max(0));
            self.last_ns = Some(self.last_ns.map_or(end, |l| l.max(end)));
        }
        match (ph, ts) {
            (b'B' | b'E' | b'X' | b'i' | b'I' | b'R' | b'C', None) => {
                self.profile.count("chrome_events_without_ts");
            }
            (b'B', Some(t)) => {
                let (name, frame, labels) = self.span(e);
                self.track(e)?.spans.begin(t, name, frame, labels);
            }
            (b'E', Some(t)) => {
                let name = e
                    .name
                    .as_deref()
                    .map(|n| self.profile.intern(n).index() as u32);
                let labels = self.labels(e);
                self.track(e)?.spans.end(t, name, labels);
            }
            (b'X', Some(t)) => match dur {
                Some(d) if d > 0 => {
                    let (name, frame, labels) = self.span(e);
                    self.track(e)?.spans.complete(t, d, name, frame, labels);
                }
                Some(_) => self.profile.count("spans_zero_length"),
                None => self.profile.count("spans_without_duration"),
            },
            (b'b', Some(t)) => {
                let (name, frame, labels) = self.span(e);
                let key = self.async_track(e)?;
                let (track, label) = self.async_tracks.get_mut(&key).expect("made above");
                let labels = merge_labels(labels, Some(*label), &mut self.profile);
                track.spans.begin(t, name, frame, labels);
            }
            (b'e', Some(t)) => {
                let name = e
                    .name
                    .as_deref()
                    .map(|n| self.profile.intern(n).index() as u32);
                let labels = self.labels(e);
                let key = self.async_track(e)?;
                let (track, _) = self.async_tracks.get_mut(&key).expect("made above");
                track.spans.end(t, name, labels);
            }
            (b'i' | b'I' | b'R', Some(t)) => {
                if e.name.as_deref() == Some("trace_truncated") {
                    self.truncated(e, t);
                }
                let labels = self.labels(e);
                let at = (t, self.track(e)?.thread);
                self.marks.instant(&mut self.profile, e, at, labels)?;
            }
            (b'C', Some(t)) => {
                let at = (t, self.track(e)?.thread);
                self.marks.counter(&mut self.profile, e, at)?;
            }
            _ => self.profile.count(skipped(ph)),
        }
        Ok(())
    }

    /// Takes in catapult's `stackFrames` dictionary.
    pub(super) fn stack_frames(&mut self, json: &[u8]) -> serde_json::Result<()> {
        self.catapult.stack_frames(json, &mut self.profile)
    }

    /// Takes in one entry of catapult's `samples`.
    pub(super) fn catapult_sample(&mut self, s: &RawSample<'_>) -> Result<()> {
        self.events += 1;
        if self.events > self.limits.max_events {
            return Err(exceeded("max_events", self.limits.max_events));
        }
        let thread = self.track_of(s.pid, s.tid)?.thread;
        if !self.catapult.sample(s, thread) {
            self.profile.count("catapult_samples_without_ts");
        }
        Ok(())
    }

    /// A V8 profile's event, gathered until the end; says whether it was one.
    fn v8_event(&mut self, e: &RawEvent<'_>) -> bool {
        if !V8Profiles::names(e) {
            return false;
        }
        let pid = e.pid.and_then(id);
        // Past the thread limit the profile is counted and left out, not the whole trace.
        let thread = self.track(e).ok().map(|t| t.thread);
        let mut v8 = std::mem::take(&mut self.v8);
        v8.event(e, pid, thread, &mut self.profile);
        self.v8 = v8;
        true
    }

    /// Claude Code's marker of events it dropped under its cap: said in the findings, with
    /// the number, so that a gap in the spans is not taken for idle time.
    fn truncated(&mut self, e: &RawEvent<'_>, ts_ns: i64) {
        #[derive(Deserialize)]
        struct Dropped {
            dropped_events: Option<u64>,
        }
        let dropped = e
            .args
            .and_then(|a| serde_json::from_str::<Dropped>(a.get()).ok())
            .and_then(|d| d.dropped_events);
        self.profile.count("chrome_truncation_markers");
        let n = dropped.unwrap_or(0);
        *self
            .profile
            .stats
            .entry("chrome_events_dropped_by_producer")
            .or_default() += n;
        let count = dropped.map_or_else(|| "an unknown number of".to_owned(), |n| n.to_string());
        self.profile.findings.push(format!(
            "the producer dropped {count} events before ts {} µs (trace_truncated)",
            ts_ns / 1000
        ));
    }

    /// The name key, frame and labels of a span's begin.
    fn span(
        &mut self,
        e: &RawEvent<'_>,
    ) -> (u32, FrameHandle, Option<crate::model::LabelSetHandle>) {
        let name = self.profile.intern(e.name.as_deref().unwrap_or(""));
        let frame = match self.frames.get(&name) {
            Some(&f) => f,
            None => {
                let mut frame = Frame::new(self.span_kind);
                frame.function = Some(name);
                let f = self.profile.add_frame(frame);
                self.frames.insert(name, f);
                f
            }
        };
        (name.index() as u32, frame, self.labels(e))
    }

    fn labels(&mut self, e: &RawEvent<'_>) -> Option<crate::model::LabelSetHandle> {
        let args = e.args?;
        if self.limits.max_span_args == 0 {
            return None;
        }
        self.args.labels(args, &mut self.profile)
    }

    fn process(&mut self, pid: Option<i64>) -> Result<ProcessHandle> {
        if let Some(&p) = self.processes.get(&pid) {
            return Ok(p);
        }
        if self.processes.len() as u64 >= self.limits.max_processes {
            return Err(exceeded("max_processes", self.limits.max_processes));
        }
        let p = self.profile.add_process(pid);
        self.processes.insert(pid, p);
        Ok(p)
    }

    fn track(&mut self, e: &RawEvent<'_>) -> Result<&mut Track> {
        self.track_of(e.pid, e.tid)
    }

    fn track_of(
        &mut self,
        pid: Option<&serde_json::value::RawValue>,
        tid: Option<&serde_json::value::RawValue>,
    ) -> Result<&mut Track> {
        let pid = pid.and_then(id);
        let tid = tid.and_then(id);
        if !self.tracks.contains_key(&(pid, tid)) {
            if self.tracks.len() as u64 >= self.limits.max_threads {
                return Err(exceeded("max_threads", self.limits.max_threads));
            }
            let process = self.process(pid)?;
            let thread = self.profile.add_thread(process, tid);
            let spans = SpanTrack::default();
            self.tracks.insert((pid, tid), Track { thread, spans });
        }
        Ok(self.tracks.get_mut(&(pid, tid)).expect("inserted above"))
    }

    /// The key of an async span's track, made on first use with the label naming it
    /// (`async_track`: `<cat>:<id>`). Its stretches are on the process's thread without a
    /// tid, named `async`.
    fn async_track(&mut self, e: &RawEvent<'_>) -> Result<AsyncKey> {
        let pid = e.pid.and_then(id);
        let cat = e.cat.as_deref().unwrap_or("");
        let id_text = e.id.map_or("", |i| i.get().trim_matches('"'));
        let key = (pid, self.profile.intern(cat), self.profile.intern(id_text));
        if self.async_tracks.contains_key(&key) {
            return Ok(key);
        }
        if (self.tracks.len() + self.async_tracks.len()) as u64 >= self.limits.max_threads {
            return Err(exceeded("max_threads", self.limits.max_threads));
        }
        let process = self.process(pid)?;
        let thread = self.profile.add_thread(process, None);
        self.profile.name_thread(thread, "async");
        let label = Label {
            key: self.profile.intern("async_track"),
            value: LabelValue::Str(self.profile.intern(&format!("{cat}:{id_text}"))),
        };
        let label = self.profile.add_label_set(&[label]).expect("one label");
        let spans = SpanTrack::default();
        self.async_tracks
            .insert(key, (Track { thread, spans }, label));
        Ok(key)
    }

    /// An `M` event: process and thread names, and the agent a process was started by.
    fn metadata(&mut self, e: &RawEvent<'_>) -> Result<()> {
        let args: Option<NameArgs<'_>> = e.args.and_then(|a| serde_json::from_str(a.get()).ok());
        let args = args.unwrap_or(NameArgs {
            name: None,
            parent_agent_id: None,
            labels: None,
        });
        let pid = e.pid.and_then(id);
        match e.name.as_deref() {
            Some("process_name") => {
                let process = self.process(pid)?;
                self.profile
                    .name_process(process, args.name.as_deref(), None);
            }
            Some("thread_name") => {
                let thread = self.track(e)?.thread;
                if let Some(name) = args.name.as_deref() {
                    self.profile.name_thread(thread, name);
                }
            }
            Some("parent_agent") => {
                let process = self.process(pid)?;
                if let Some(parent) = args.parent_agent_id.as_deref() {
                    self.profile
                        .set_process_attribute(process, "parent_agent", parent);
                }
            }
            Some("process_labels") => {
                let process = self.process(pid)?;
                if let Some(labels) = args.labels.as_deref() {
                    self.profile
                        .set_process_attribute(process, "process_labels", labels);
                }
            }
            _ => self.profile.count("chrome_metadata_events_skipped"),
        }
        Ok(())
    }

    /// Sweeps every track's spans into the span series; the profile is then complete.
    pub(super) fn finish(mut self) -> Profile {
        std::mem::take(&mut self.v8).finish(&mut self.profile, self.limits.max_stack_depth);
        std::mem::take(&mut self.catapult).finish(&mut self.profile, self.limits.max_stack_depth);
        self.marks.finish(&mut self.profile);
        let end = self.last_ns.unwrap_or(0);
        let mut tracks: Vec<Track> = self.tracks.into_values().collect();
        // Tracks in the order their threads were added: a deterministic output.
        tracks.sort_by_key(|t| t.thread.index());
        let mut async_tracks: Vec<(AsyncKey, (Track, LabelSetHandle))> =
            self.async_tracks.into_iter().collect();
        async_tracks.sort_by_key(|(k, _)| (k.0, k.1.index(), k.2.index()));
        let max_depth = self.limits.max_stack_depth;
        // Async spans overlap the threads' time, so as wall time they would count it twice: a
        // series of their own, of kind other.
        let async_tracks = async_tracks.into_iter().map(|(_, (track, _))| track);
        let series = [
            ("spans", SeriesKind::WallTime),
            ("async_spans", SeriesKind::Other),
        ];
        for ((name, kind), tracks) in series.into_iter().zip([tracks, async_tracks.collect()]) {
            if tracks.iter().all(|t| t.spans.is_empty()) {
                continue;
            }
            let series = spans_series(&mut self.profile, name, kind);
            for track in tracks {
                let target = Target {
                    thread: track.thread,
                    series,
                    timed: true,
                };
                track.spans.sweep(target, end, &mut self.profile, max_depth);
            }
        }
        self.profile.sort_samples_by_time();
        self.profile
    }
}

fn spans_series(profile: &mut Profile, name: &str, kind: SeriesKind) -> SeriesHandle {
    let series = Series {
        kind,
        name: profile.intern(name),
        unit: profile.intern("nanoseconds"),
        source: Some(profile.intern("chrome")),
        frequency_hz: None,
        period: None,
        spans: true,
    };
    profile.add_series(series)
}
