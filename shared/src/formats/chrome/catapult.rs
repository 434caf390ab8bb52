//! catapult-era samples: a top-level `stackFrames` dictionary (`id → {name, category,
//! parent}`) and a `samples` array (`{ts, pid, tid, cpu, sf, weight}`), which DTrace converters
//! and Hermes write. Either may come first, so samples wait for the frames.

use std::borrow::Cow;

use rustc_hash::FxHashMap;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::event::{id, micros_to_ns};
use crate::model::{
    Frame, FrameKind, Profile, Sample, Series, SeriesHandle, SeriesKind, StackHandle, ThreadHandle,
};

#[derive(Deserialize)]
struct RawFrame<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    category: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    parent: Option<&'a RawValue>,
}

/// One entry of `samples`.
#[derive(Deserialize)]
pub(super) struct RawSample<'a> {
    #[serde(borrow, default)]
    pub ts: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub pid: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub tid: Option<&'a RawValue>,
    #[serde(borrow, default)]
    cpu: Option<&'a RawValue>,
    #[serde(borrow, default)]
    sf: Option<&'a RawValue>,
}

/// A frame id as written: a number or a string (`"12"` and `12` are one id).
fn key(raw: &RawValue) -> String {
    let text = raw.get();
    text.strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text)
        .to_owned()
}

struct Pending {
    time: i64,
    thread: ThreadHandle,
    cpu: Option<u32>,
    frame: Option<String>,
}

/// The stack frames and the samples waiting for them.
#[derive(Default)]
pub(super) struct Catapult {
    frames: FxHashMap<String, (Frame, Option<String>)>,
    samples: Vec<Pending>,
}

impl Catapult {
    /// Takes in the `stackFrames` dictionary.
    pub(super) fn stack_frames(
        &mut self,
        json: &[u8],
        profile: &mut Profile,
    ) -> serde_json::Result<()> {
        let frames: FxHashMap<Cow<'_, str>, RawFrame<'_>> = serde_json::from_slice(json)?;
        for (id, f) in frames {
            let kind = match f.category.as_deref() {
                Some("JavaScript") => FrameKind::JavaScript,
                Some(c) if !c.is_empty() => FrameKind::Other(profile.intern(c)),
                _ => FrameKind::Unknown,
            };
            let mut frame = Frame::new(kind);
            frame.function = f.name.as_deref().map(|n| profile.intern(n));
            self.frames
                .insert(id.into_owned(), (frame, f.parent.map(key)));
        }
        Ok(())
    }

    /// Takes in one sample, on `thread`; `false` when it has no time.
    pub(super) fn sample(&mut self, s: &RawSample<'_>, thread: ThreadHandle) -> bool {
        let Some(time) = s.ts.and_then(micros_to_ns) else {
            return false;
        };
        self.samples.push(Pending {
            time,
            thread,
            cpu: s.cpu.and_then(id).and_then(|c| u32::try_from(c).ok()),
            frame: s.sf.map(key),
        });
        true
    }

    /// Adds the samples, their stacks resolved through the frames' parents.
    pub(super) fn finish(self, profile: &mut Profile, max_depth: u64) {
        if self.samples.is_empty() {
            return;
        }
        let series = series(profile);
        let mut stacks: FxHashMap<String, Option<StackHandle>> = FxHashMap::default();
        for p in &self.samples {
            let stack = match &p.frame {
                Some(f) => self.stack(f, &mut stacks, profile, max_depth),
                None => None,
            };
            let mut sample = Sample::new(p.thread, stack, 1, series);
            sample.time = Some(p.time);
            sample.cpu = p.cpu;
            profile.add_sample(sample);
        }
    }

    /// The stack whose leaf is frame `leaf`: its chain of parents, root first. A parent that
    /// is missing ends the chain there (counted); a chain longer than `max_depth` (or a cycle)
    /// gives no stack.
    fn stack(
        &self,
        leaf: &str,
        memo: &mut FxHashMap<String, Option<StackHandle>>,
        profile: &mut Profile,
        max_depth: u64,
    ) -> Option<StackHandle> {
        if let Some(&s) = memo.get(leaf) {
            return s;
        }
        let mut chain = Vec::new();
        let mut at = Some(leaf);
        while let Some(id) = at {
            let Some((frame, parent)) = self.frames.get(id) else {
                profile.count("catapult_missing_stack_frames");
                break;
            };
            if chain.len() as u64 >= max_depth {
                profile.count("catapult_stack_too_deep");
                memo.insert(leaf.to_owned(), None);
                return None;
            }
            chain.push(frame.clone());
            at = parent.as_deref();
        }
        let mut stack = None;
        for frame in chain.into_iter().rev() {
            let f = profile.add_frame(frame);
            stack = Some(profile.add_stack(stack, f));
        }
        memo.insert(leaf.to_owned(), stack);
        stack
    }
}

fn series(profile: &mut Profile) -> SeriesHandle {
    let series = Series {
        kind: SeriesKind::CpuTime,
        name: profile.intern("samples"),
        unit: profile.intern("count"),
        source: Some(profile.intern("catapult")),
        frequency_hz: None,
        period: None,
        spans: false,
    };
    profile.add_series(series)
}
