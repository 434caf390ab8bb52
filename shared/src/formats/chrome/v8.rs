//! V8 CPU samples inside a trace: DevTools' `Profile` event and the `ProfileChunk`s that
//! follow it (nodes arriving a few at a time, each with its `parent`; `timeDeltas` beside
//! `cpuProfile`), and the one-shot `CpuProfile` event of older Chromes (a whole cpuprofile,
//! written as an instant). The fields are in `args.data`, or in `args` itself (Chrome 141's
//! DevTools export writes some events so). Their times are microseconds of the clock `ts`
//! uses, so samples and spans share one timeline. A trace window may cut a profile's
//! earlier chunks: what they held is counted, and the rest of the profile kept.

use rustc_hash::FxHashMap;
use serde::Deserialize;

use super::event::RawEvent;
use crate::formats::v8::{add_document, Document, Node};
use crate::model::{Profile, ThreadHandle};

/// A `Profile` or `ProfileChunk` event's `args`, or the `data` inside them.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Data {
    #[serde(default)]
    start_time: Option<f64>,
    #[serde(default)]
    end_time: Option<f64>,
    #[serde(default)]
    cpu_profile: Option<ChunkProfile>,
    #[serde(default)]
    time_deltas: Vec<i64>,
    #[serde(default)]
    data: Option<Box<Data>>,
}

impl Data {
    /// The fields wherever they were written: in `data`, else beside it.
    fn unwrapped(self) -> Data {
        match self.data {
            Some(data) => *data,
            None => self,
        }
    }

    fn is_empty(&self) -> bool {
        self.start_time.is_none()
            && self.end_time.is_none()
            && self.cpu_profile.is_none()
            && self.time_deltas.is_empty()
    }
}

/// µs as written (an integer, or a number with a fraction) as whole µs.
fn micros(us: f64) -> Option<i64> {
    let us = us.round();
    (us.is_finite() && us.abs() < 9.2e15).then_some(us as i64)
}

#[derive(Deserialize)]
struct ChunkProfile {
    #[serde(default)]
    nodes: Vec<Node>,
    #[serde(default)]
    samples: Vec<u64>,
}

/// A `CpuProfile` event's `args`, or the `data` inside them: a whole profile, its
/// `timeDeltas` inside it or beside it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CpuProfileData {
    #[serde(default)]
    cpu_profile: Option<Document>,
    #[serde(default)]
    time_deltas: Vec<i64>,
    #[serde(default)]
    data: Option<Box<CpuProfileData>>,
}

/// One V8 profile being gathered from its events.
struct Gathered {
    thread: ThreadHandle,
    doc: Document,
}

/// The V8 profiles of a trace, by `(pid, id)` of their `Profile` event, in the order they
/// began, and the one-shot `CpuProfile`s.
#[derive(Default)]
pub(super) struct V8Profiles {
    by_id: FxHashMap<(Option<i64>, String), usize>,
    profiles: Vec<Gathered>,
}

impl V8Profiles {
    /// Whether `e` is a `Profile`, `ProfileChunk` or `CpuProfile` event.
    pub(super) fn names(e: &RawEvent<'_>) -> bool {
        matches!(
            e.name.as_deref(),
            Some("Profile" | "ProfileChunk" | "CpuProfile")
        )
    }

    /// Takes in a `Profile`, `ProfileChunk` or `CpuProfile` event; `thread` is the event's
    /// (none past the thread limit).
    pub(super) fn event(
        &mut self,
        e: &RawEvent<'_>,
        pid: Option<i64>,
        thread: Option<ThreadHandle>,
        profile: &mut Profile,
    ) {
        let name = e.name.as_deref();
        let Some(args) = e.args else {
            profile.count("v8_events_without_args");
            return;
        };
        if name == Some("CpuProfile") {
            let data = serde_json::from_str::<CpuProfileData>(args.get()).map(|mut a| {
                match a.data.take() {
                    Some(data) => *data,
                    None => a,
                }
            });
            let Ok(CpuProfileData {
                cpu_profile: Some(mut doc),
                time_deltas,
                ..
            }) = data
            else {
                profile.count("v8_profiles_malformed");
                return;
            };
            if doc.time_deltas.is_empty() {
                doc.time_deltas = time_deltas;
            }
            doc.partial = true;
            match thread {
                Some(thread) => self.profiles.push(Gathered { thread, doc }),
                None => profile.count("v8_profiles_beyond_thread_limit"),
            }
            return;
        }
        let Ok(data) = serde_json::from_str::<Data>(args.get()).map(Data::unwrapped) else {
            profile.count("v8_profiles_malformed");
            return;
        };
        if data.is_empty() {
            // DevTools closes a profile with a chunk of empty `args`.
            profile.count("v8_chunks_empty");
            return;
        }
        let key = (pid, e.id.map(|id| id.get().to_owned()).unwrap_or_default());
        let at = match self.by_id.get(&key) {
            Some(&at) => at,
            None => {
                if name == Some("ProfileChunk") {
                    profile.count("v8_chunk_without_profile");
                }
                let Some(thread) = thread else {
                    profile.count("v8_profiles_beyond_thread_limit");
                    return;
                };
                self.profiles.push(Gathered {
                    thread,
                    doc: Document {
                        nodes: Vec::new(),
                        start_time: 0,
                        end_time: None,
                        samples: Vec::new(),
                        time_deltas: Vec::new(),
                        partial: true,
                    },
                });
                self.by_id.insert(key, self.profiles.len() - 1);
                self.profiles.len() - 1
            }
        };
        let doc = &mut self.profiles[at].doc;
        if name == Some("Profile") {
            // trace_processor's choice: the profile's own startTime, else the event's time.
            doc.start_time = data
                .start_time
                .and_then(micros)
                .or_else(|| {
                    e.ts.and_then(super::event::micros_to_ns)
                        .map(|ns| ns / 1000)
                })
                .unwrap_or(0);
        }
        if let Some(cpu) = data.cpu_profile {
            doc.nodes.extend(cpu.nodes);
            doc.samples.extend(cpu.samples);
        }
        doc.time_deltas.extend(data.time_deltas);
        doc.end_time = data.end_time.and_then(micros).or(doc.end_time);
    }

    /// Adds every profile's ticks; one that does not hold together (a tick or parent naming
    /// a node it lacks) is counted, and the rest of the trace converts.
    pub(super) fn finish(self, profile: &mut Profile, max_stack_depth: u64) {
        for g in self.profiles {
            if g.doc.samples.is_empty() {
                continue;
            }
            if add_document(profile, &g.doc, g.thread, max_stack_depth).is_err() {
                profile.count("v8_profiles_malformed");
            }
        }
    }
}
