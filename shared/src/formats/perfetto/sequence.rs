//! Per-sequence incremental state: the interned data of the current generation, the packet
//! defaults, and the thread a Chrome-style sequence writes for.

use proflake_proto::perfetto::{
    stack_sample, Frame as PfFrame, InternedData, InternedString, Mapping, TracePacketDefaults,
};
use rustc_hash::FxHashMap;

use crate::model::{FrameHandle, StackHandle};

/// Interned data of one generation. Each `InternedData` field is its own iid namespace, and
/// the first definition of an iid wins.
#[derive(Default)]
pub(super) struct Generation {
    pub(super) function_names: FxHashMap<u64, Vec<u8>>,
    pub(super) build_ids: FxHashMap<u64, Vec<u8>>,
    pub(super) mapping_paths: FxHashMap<u64, Vec<u8>>,
    pub(super) source_paths: FxHashMap<u64, Vec<u8>>,
    pub(super) mappings: FxHashMap<u64, Mapping>,
    pub(super) frames: FxHashMap<u64, PfFrame>,
    pub(super) callstacks: FxHashMap<u64, Vec<u64>>,
    pub(super) task_contexts: FxHashMap<u64, stack_sample::TaskContext>,
    pub(super) execution_contexts: FxHashMap<u64, stack_sample::ExecutionContext>,
    pub(super) counter_descriptors: FxHashMap<u64, stack_sample::CounterDescriptor>,
    /// Resolved frames of this generation (`None`: the frame failed to resolve).
    pub(super) frame_cache: FxHashMap<u64, Option<FrameHandle>>,
    /// Resolved callstacks of this generation.
    pub(super) stack_cache: FxHashMap<u64, Option<StackHandle>>,
}

fn intern_strings(table: &mut FxHashMap<u64, Vec<u8>>, entries: Vec<InternedString>) -> u64 {
    let mut added = 0;
    for e in entries {
        if let Some(iid) = e.iid {
            table.entry(iid).or_insert_with(|| {
                added += 1;
                e.r#str.unwrap_or_default()
            });
        }
    }
    added
}

fn intern<T>(
    table: &mut FxHashMap<u64, T>,
    entries: Vec<T>,
    iid: impl Fn(&T) -> Option<u64>,
) -> u64 {
    let mut added = 0;
    for e in entries {
        if let Some(id) = iid(&e) {
            table.entry(id).or_insert_with(|| {
                added += 1;
                e
            });
        }
    }
    added
}

impl Generation {
    /// Merges a packet's interned data; returns how many entries were new.
    pub(super) fn merge(&mut self, data: InternedData) -> u64 {
        let mut added = 0;
        added += intern_strings(&mut self.function_names, data.function_names);
        added += intern_strings(&mut self.build_ids, data.build_ids);
        added += intern_strings(&mut self.mapping_paths, data.mapping_paths);
        added += intern_strings(&mut self.source_paths, data.source_paths);
        added += intern(&mut self.mappings, data.mappings, |m| m.iid);
        added += intern(&mut self.frames, data.frames, |f| f.iid);
        for c in data.callstacks {
            if let Some(iid) = c.iid {
                self.callstacks.entry(iid).or_insert_with(|| {
                    added += 1;
                    c.frame_ids
                });
            }
        }
        added += intern(
            &mut self.task_contexts,
            data.stack_sample_task_contexts,
            |c| c.iid,
        );
        added += intern(
            &mut self.execution_contexts,
            data.stack_sample_execution_contexts,
            |c| c.iid,
        );
        added += intern(
            &mut self.counter_descriptors,
            data.stack_sample_counter_descriptors,
            |c| c.iid,
        );
        added
    }

    /// Number of interned entries held.
    pub(super) fn len(&self) -> u64 {
        (self.function_names.len()
            + self.build_ids.len()
            + self.mapping_paths.len()
            + self.source_paths.len()
            + self.mappings.len()
            + self.frames.len()
            + self.callstacks.len()
            + self.task_contexts.len()
            + self.execution_contexts.len()
            + self.counter_descriptors.len()) as u64
    }
}

/// State of one `trusted_packet_sequence_id`.
#[derive(Default)]
pub(super) struct Sequence {
    /// False until the first packet that clears incremental state, and again after reported
    /// packet loss: the "assume we missed packets" rule.
    pub(super) valid: bool,
    pub(super) generation: Generation,
    pub(super) defaults: Option<TracePacketDefaults>,
    /// The (pid, tid) a thread descriptor bound this sequence to.
    pub(super) thread: Option<(Option<i32>, Option<i32>)>,
    /// Running time for delta-encoded timestamps (ns, MONOTONIC), from the thread descriptor.
    pub(super) running_time_ns: Option<i64>,
}

impl Sequence {
    /// Starts a new generation: interned data and defaults are dropped, the thread binding and
    /// running time survive.
    pub(super) fn clear(&mut self) {
        self.generation = Generation::default();
        self.defaults = None;
        self.valid = true;
    }
}
