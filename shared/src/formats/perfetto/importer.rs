//! Turns trace packets into the model, with trace_processor's import semantics.

use proflake_proto::perfetto::{
    stack_sample::{
        CallstackField, ExecutionContextField, PrimaryDescriptorField, TaskContextField,
    },
    trace_packet::{Data, OptionalTrustedPacketSequenceId},
    Frame as PfFrame, InlineCallstack, InternedData, Mapping, PerfSample, ProcessTree, StackSample,
    StreamingProfilePacket, ThreadDescriptor, TracePacket, TracePacketDefaults,
};
use rustc_hash::FxHashMap;

use super::clocks::{clock_name, ClockKey, ClockTracker, Place, Placer, MONOTONIC};
use super::module_symbols::PendingSymbols;
use super::packets::Packet;
use super::perf_packet::PerfSamplePacket;
use super::sequence::{Generation, Sequence};
use super::vocab;
use crate::error::Result;
use crate::formats::demangle::demangle;
use crate::limits::{exceeded, Limits};
use crate::model::{
    ids_from_build_id, Frame, FrameAddress, FrameHandle, FrameKind, Image, Profile, Sample, Series,
    SeriesHandle, SeriesKind, StackHandle, ThreadHandle, Timestamps,
};

const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
const SEQ_NEEDS_INCREMENTAL_STATE: u32 = 2;

/// Most path components joined into one mapping name; the rest are left off. Not a limit of
/// its own: the joined name is held to `max_string_bytes`.
const MAX_PATH_COMPONENTS: usize = 256;

/// What a packet says about its sequence's incremental state.
#[derive(Default)]
struct SequenceState {
    flags: u32,
    incremental_state_cleared: bool,
    previous_packet_dropped: bool,
    defaults: Option<TracePacketDefaults>,
    interned_data: Option<InternedData>,
}

/// A timestamp as the packet carried it: on `clock`, or on the trace's default clock.
#[derive(Clone, Copy)]
pub(super) struct RawTime {
    pub(super) clock: Option<ClockKey>,
    pub(super) ts: i64,
}

/// Where the importer's samples go. The importer makes the same entities, in the same order,
/// whatever the destination, so that a first and a second pass over one trace agree on every
/// handle.
pub(super) trait Samples {
    /// Takes the sample at `position` among all the trace's samples (in file order), whose
    /// time is still `time` as read.
    fn push(
        &mut self,
        profile: &mut Profile,
        position: u64,
        sample: Sample,
        time: RawTime,
    ) -> Result<()>;
}

/// The samples of one decode: into the profile with their raw times, converted in place at
/// the end, since the snapshots needed may come after them.
#[derive(Default)]
pub(super) struct Store {
    /// The clock each run of samples is on, by index of the run's first sample. A trace
    /// rarely changes clocks, so this costs a few entries rather than one per sample.
    clock_runs: Vec<(usize, Option<ClockKey>)>,
}

impl Samples for Store {
    fn push(
        &mut self,
        profile: &mut Profile,
        _position: u64,
        mut sample: Sample,
        time: RawTime,
    ) -> Result<()> {
        let index = profile.samples().len();
        if self.clock_runs.last().is_none_or(|&(_, c)| c != time.clock) {
            self.clock_runs.push((index, time.clock));
        }
        sample.time = Some(time.ts);
        profile.add_sample(sample);
        Ok(())
    }
}

impl Store {
    /// Converts every sample time, drops the samples that cannot be placed and orders the
    /// rest by time.
    fn place(self, profile: &mut Profile, clocks: &ClockTracker) {
        let mut placer = Placer::new(clocks);
        let runs = self.clock_runs;
        // Without samples there are no runs, and nothing to place.
        let mut current = runs
            .first()
            .map_or(Place::Drop, |&(_, clock)| placer.place(clock));
        let starts: Vec<(usize, Place)> = runs
            .iter()
            .skip(1)
            .map(|&(start, clock)| (start, placer.place(clock)))
            .collect();
        let mut next_run = starts.iter().peekable();
        let mut failed = 0u64;
        let mut index = 0;
        profile.retain_sample_times(|time| {
            while let Some(&(_, p)) = next_run.next_if(|&&(start, _)| start <= index) {
                current = p;
            }
            index += 1;
            let time = placer.time(current, time.unwrap_or_default());
            failed += u64::from(time.is_none());
            time
        });
        if failed > 0 {
            *profile.stats.entry("clock_conversion_failed").or_default() += failed;
        }
        profile.sort_samples_by_time();
    }
}

/// An importer's state once every packet is read.
pub(super) struct Parts<S> {
    pub(super) profile: Profile,
    /// Every snapshot of the trace.
    pub(super) clocks: ClockTracker,
    pub(super) samples: S,
    /// How many samples went to `samples`.
    pub(super) pushed: u64,
}

/// Process and thread names gathered from descriptors, applied once all packets are read
/// (they may come before or after the samples).
#[derive(Default)]
struct Names {
    processes: FxHashMap<i64, (Option<String>, Option<String>)>,
    threads: FxHashMap<i64, (Option<i64>, String)>,
}

impl Names {
    fn process(&mut self, pid: Option<i32>, name: Option<&str>, cmdline: &[String]) {
        let Some(pid) = pid else { return };
        let entry = self.processes.entry(i64::from(pid)).or_default();
        let name = name
            .filter(|n| !n.is_empty())
            .map(str::to_owned)
            .or_else(|| cmdline.first().cloned());
        entry.0 = entry.0.take().or(name);
        if entry.1.is_none() && !cmdline.is_empty() {
            entry.1 = Some(cmdline.join(" "));
        }
    }

    fn thread(&mut self, tid: Option<i32>, pid: Option<i32>, name: Option<&str>) {
        let (Some(tid), Some(name)) = (tid, name.filter(|n| !n.is_empty())) else {
            return;
        };
        self.threads
            .entry(i64::from(tid))
            .or_insert_with(|| (pid.map(i64::from), name.to_owned()));
    }
}

pub(super) struct Importer<S = Store> {
    profile: Profile,
    sequences: FxHashMap<u32, Sequence>,
    clocks: ClockTracker,
    samples: S,
    /// How many samples went to `samples`: the next one's position.
    pushed: u64,
    last_time: Option<RawTime>,
    interned_entries: u64,
    names: Names,
    perf_series: FxHashMap<u32, SeriesHandle>,
    /// `module_symbols` packets, applied once every frame is known.
    symbols: PendingSymbols,
    limits: Limits,
}

impl Importer {
    pub(super) fn new(limits: &Limits) -> Self {
        Importer::with_samples(limits, Store::default())
    }

    /// Converts every sample time and hands over the finished profile.
    pub(super) fn finish(self) -> Profile {
        let Parts {
            mut profile,
            clocks,
            samples,
            ..
        } = self.finish_parts();
        samples.place(&mut profile, &clocks);
        profile
    }
}

impl<S: Samples> Importer<S> {
    pub(super) fn with_samples(limits: &Limits, samples: S) -> Self {
        Importer {
            profile: Profile::new("perfetto"),
            sequences: FxHashMap::default(),
            clocks: ClockTracker::default(),
            samples,
            pushed: 0,
            last_time: None,
            interned_entries: 0,
            names: Names::default(),
            perf_series: FxHashMap::default(),
            symbols: PendingSymbols::with_limit(limits.max_module_symbol_lines),
            limits: limits.clone(),
        }
    }

    /// Processes one packet. Order inside a packet follows trace_processor: state reset,
    /// defaults, interned data, timestamp, payload.
    pub(super) fn packet(&mut self, packet: Packet<'_>) -> Result<()> {
        match packet {
            Packet::PerfSample(p) => self.perf_sample_packet(p),
            Packet::Full(p) => self.full_packet(p),
        }
    }

    /// The common packet of a traced_perf trace: no interned data, no defaults.
    fn perf_sample_packet(&mut self, p: &PerfSamplePacket) -> Result<()> {
        let seq_id = p.trusted_packet_sequence_id.unwrap_or(0);
        let flags = p.sequence_flags.unwrap_or(0);
        let state = SequenceState {
            flags,
            ..SequenceState::default()
        };
        if !self.sequence_state(seq_id, state)? {
            return Ok(());
        }
        let time = self.packet_time(seq_id, p.timestamp, p.timestamp_clock_id);
        self.perf_sample(seq_id, &p.sample, time)
    }

    fn full_packet(&mut self, packet: &mut TracePacket) -> Result<()> {
        // Offline symbols belong to no sequence (traceconv writes them without one).
        if let Some(Data::ModuleSymbols(symbols)) =
            packet.data.take_if(|d| matches!(d, Data::ModuleSymbols(_)))
        {
            return self.symbols.add(symbols);
        }
        let seq_id = match packet.optional_trusted_packet_sequence_id {
            Some(OptionalTrustedPacketSequenceId::TrustedPacketSequenceId(id)) => id,
            None => 0,
        };
        match &packet.data {
            Some(Data::ClockSnapshot(snapshot)) => {
                let max = self.limits.max_clock_snapshots;
                if self.clocks.snapshot_count() as u64 >= max {
                    return Err(exceeded("max_clock_snapshots", max));
                }
                self.clocks.add_snapshot(snapshot, seq_id);
                return Ok(());
            }
            Some(Data::ProcessTree(tree)) => {
                self.process_tree(tree);
                return Ok(());
            }
            _ => {}
        }
        let state = SequenceState {
            flags: packet.sequence_flags.unwrap_or(0),
            incremental_state_cleared: packet.incremental_state_cleared == Some(true),
            previous_packet_dropped: packet.previous_packet_dropped.unwrap_or(0) != 0,
            defaults: packet.trace_packet_defaults.take(),
            interned_data: packet.interned_data.take(),
        };
        if !self.sequence_state(seq_id, state)? {
            return Ok(());
        }
        let time = self.packet_time(seq_id, packet.timestamp, packet.timestamp_clock_id);
        match packet.data.take() {
            Some(Data::PerfSample(sample)) => self.perf_sample(seq_id, &sample, time)?,
            Some(Data::StreamingProfilePacket(p)) => self.streaming_profile(seq_id, p)?,
            Some(Data::StackSample(sample)) => self.stack_sample(seq_id, sample, time)?,
            Some(Data::ThreadDescriptor(td)) => self.thread_descriptor(seq_id, &td),
            Some(Data::TrackDescriptor(track)) => {
                if let Some(p) = &track.process {
                    self.names
                        .process(p.pid, p.process_name.as_deref(), &p.cmdline);
                }
                if let Some(td) = &track.thread {
                    self.thread_descriptor(seq_id, td);
                }
            }
            Some(Data::ProcessDescriptor(p)) => {
                self.names
                    .process(p.pid, p.process_name.as_deref(), &p.cmdline);
            }
            _ => {}
        }
        Ok(())
    }

    /// Applies a packet's incremental-state flags, defaults and interned data to its
    /// sequence. `false` when the packet needs state the sequence has lost, and is skipped.
    fn sequence_state(&mut self, seq_id: u32, state: SequenceState) -> Result<bool> {
        let max = self.limits.max_sequences;
        if !self.sequences.contains_key(&seq_id) && self.sequences.len() as u64 >= max {
            return Err(exceeded("max_sequences", max));
        }
        let seq = self.sequences.entry(seq_id).or_default();
        if state.flags & SEQ_INCREMENTAL_STATE_CLEARED != 0 || state.incremental_state_cleared {
            self.interned_entries -= seq.generation.len();
            seq.clear();
            self.perf_series.remove(&seq_id);
        } else if state.previous_packet_dropped {
            seq.valid = false;
            self.profile.count("sequence_packet_loss");
        }
        if let Some(defaults) = state.defaults {
            seq.defaults = Some(defaults);
            self.perf_series.remove(&seq_id);
        }
        if let Some(data) = state.interned_data {
            if seq.valid {
                self.interned_entries += seq.generation.merge(data);
                let max = self.limits.max_interned_entries;
                if self.interned_entries > max {
                    return Err(exceeded("max_interned_entries", max));
                }
            } else {
                self.profile
                    .count("interned_data_skipped_incremental_state_invalid");
            }
        }
        if state.flags & SEQ_NEEDS_INCREMENTAL_STATE != 0 && !seq.valid {
            self.profile
                .count("packet_skipped_seq_needs_incremental_state_invalid");
            return Ok(false);
        }
        Ok(true)
    }

    /// A packet's time: its own timestamp on its own or the sequence's default clock, else
    /// the last packet's.
    fn packet_time(
        &mut self,
        seq_id: u32,
        timestamp: Option<u64>,
        clock_id: Option<u32>,
    ) -> Option<RawTime> {
        let time = timestamp.map(|ts| {
            let defaults = self
                .sequences
                .get(&seq_id)
                .and_then(|s| s.defaults.as_ref());
            let clock = clock_id
                .or_else(|| defaults.and_then(|d| d.timestamp_clock_id))
                .map(|c| ClockKey::new(c, seq_id));
            RawTime {
                clock,
                ts: i64::try_from(ts).unwrap_or(i64::MAX),
            }
        });
        if time.is_some() {
            self.last_time = time;
        }
        time.or(self.last_time)
    }

    /// Binds a sequence to the thread it writes for; the descriptor's reference time seeds the
    /// sequence's running clock for delta-encoded timestamps.
    fn thread_descriptor(&mut self, seq_id: u32, td: &ThreadDescriptor) {
        self.names.thread(td.tid, td.pid, td.thread_name.as_deref());
        let seq = self.sequences.entry(seq_id).or_default();
        if seq.valid {
            seq.thread = Some((td.pid, td.tid));
            if let Some(us) = td.reference_timestamp_us {
                seq.running_time_ns = us.checked_mul(1000);
            }
        }
    }

    fn process_tree(&mut self, tree: &ProcessTree) {
        for p in &tree.processes {
            self.names.process(p.pid, None, &p.cmdline);
        }
        for t in &tree.threads {
            self.names.thread(t.tid, t.tgid, t.name.as_deref());
        }
    }

    fn push(&mut self, sample: Sample, time: RawTime) -> Result<()> {
        let position = self.pushed;
        if position >= self.limits.max_samples {
            return Err(exceeded("max_samples", self.limits.max_samples));
        }
        self.pushed += 1;
        self.samples.push(&mut self.profile, position, sample, time)
    }

    fn thread(&mut self, pid: Option<i64>, tid: Option<i64>) -> ThreadHandle {
        let process = self.profile.add_process(pid);
        self.profile.add_thread(process, tid)
    }

    /// Resolves a callstack iid in the sequence's current generation, counting why it failed.
    fn callstack(&mut self, seq_id: u32, iid: u64) -> Option<StackHandle> {
        let seq = self.sequences.get_mut(&seq_id)?;
        if !seq.valid {
            self.profile.count("stackprofile_invalid_callstack_id");
            return None;
        }
        let max_depth = self.limits.max_stack_depth;
        match resolve_callstack(&mut self.profile, &mut seq.generation, iid, max_depth) {
            Ok(stack) => stack,
            Err(stat) => {
                self.profile.count(stat);
                None
            }
        }
    }

    fn perf_sample(&mut self, seq_id: u32, ps: &PerfSample, time: Option<RawTime>) -> Result<()> {
        if ps.kernel_records_lost.unwrap_or(0) > 0 {
            self.profile.count("perf_cpu_lost_records");
            return Ok(());
        }
        if ps.producer_event.is_some() {
            self.profile.count("perf_guardrail_stop");
            return Ok(());
        }
        if let Some(reason) = ps.sample_skipped_reason {
            self.profile.count(vocab::skip_reason_stat(reason));
        }
        let Some(time) = time else {
            self.profile.count("sample_without_timestamp");
            return Ok(());
        };
        let series = self.perf_series(seq_id);
        let stack = ps.callstack_iid.and_then(|iid| self.callstack(seq_id, iid));
        let thread = self.thread(ps.pid.map(i64::from), ps.tid.map(i64::from));
        let unwind_error = ps
            .unwind_error
            .map(|code| self.profile.intern(vocab::unwind_error(code)));
        let sample = Sample {
            time: None,
            thread,
            stack,
            weight: 1,
            series,
            cpu: ps.cpu,
            cpu_mode: vocab::perf_cpu_mode(ps.cpu_mode),
            unwind_error,
            counter: ps.timebase_count,
            labels: None,
            link: None,
        };
        self.push(sample, time)
    }

    /// The perf session of a sequence, named after its timebase.
    fn perf_series(&mut self, seq_id: u32) -> SeriesHandle {
        if let Some(&s) = self.perf_series.get(&seq_id) {
            return s;
        }
        let timebase = self
            .sequences
            .get(&seq_id)
            .and_then(|s| s.defaults.as_ref())
            .and_then(|d| d.perf_sample_defaults.as_ref())
            .and_then(|d| d.timebase.as_ref());
        let (name, kind) = vocab::perf_timebase(timebase);
        let frequency_hz = timebase.and_then(|t| t.frequency);
        let period = timebase.and_then(|t| t.period);
        let series = Series {
            kind,
            name: self.profile.intern(&name),
            unit: self.profile.intern("count"),
            source: Some(self.profile.intern("linux.perf")),
            frequency_hz,
            period,
            spans: false,
        };
        let handle = self.profile.add_series(series);
        self.perf_series.insert(seq_id, handle);
        handle
    }

    /// Chrome's in-process sampler: delta-encoded µs timestamps on the sequence's running
    /// MONOTONIC clock, thread from the sequence's thread descriptor.
    fn streaming_profile(&mut self, seq_id: u32, packet: StreamingProfilePacket) -> Result<()> {
        let (pid, tid, start) = match self.sequences.get(&seq_id) {
            Some(Sequence {
                thread: Some((pid, tid)),
                running_time_ns: Some(t),
                ..
            }) => (*pid, *tid, *t),
            _ => {
                self.profile
                    .count("streaming_profile_without_thread_descriptor");
                return Ok(());
            }
        };
        if start < 0 {
            // An earlier delta took the sequence clock below zero (see below).
            return self.invalid_streaming_time(seq_id, start);
        }
        let series = self.profile.intern("chrome-sampler");
        let series = Series {
            kind: SeriesKind::WallTime,
            name: series,
            unit: self.profile.intern("count"),
            source: Some(self.profile.intern("chrome")),
            frequency_hz: None,
            period: None,
            spans: false,
        };
        let series = self.profile.add_series(series);
        let thread = self.thread(pid.map(i64::from), tid.map(i64::from));
        let mut now = start;
        let deltas = &packet.timestamp_delta_us;
        for (i, &iid) in packet.callstack_iid.iter().enumerate() {
            let Some(&delta) = deltas.get(i) else {
                self.profile.count("stackprofile_parser_error");
                break;
            };
            now = advance(now, delta);
            if now < 0 {
                return self.invalid_streaming_time(seq_id, now);
            }
            let stack = self.callstack(seq_id, iid);
            let sample = Sample::new(thread, stack, 1, series);
            let clock = Some(ClockKey::new(MONOTONIC, seq_id));
            self.push(sample, RawTime { clock, ts: now })?;
        }
        for &delta in deltas.iter().skip(packet.callstack_iid.len()) {
            now = advance(now, delta);
            if now < 0 {
                return self.invalid_streaming_time(seq_id, now);
            }
        }
        if let Some(seq) = self.sequences.get_mut(&seq_id) {
            seq.running_time_ns = Some(now);
        }
        Ok(())
    }

    /// A delta took the sequence's running clock below zero. As in trace_processor, the clock
    /// keeps that value, so every later packet of the sequence is rejected too (each counted)
    /// until a thread descriptor sets a new reference time.
    fn invalid_streaming_time(&mut self, seq_id: u32, now: i64) -> Result<()> {
        self.profile.count("streaming_profile_invalid_timestamp");
        if let Some(seq) = self.sequences.get_mut(&seq_id) {
            seq.running_time_ns = Some(now);
        }
        Ok(())
    }

    /// The transport-neutral StackSample (Perfetto v58+).
    fn stack_sample(&mut self, seq_id: u32, ss: StackSample, time: Option<RawTime>) -> Result<()> {
        let Some(time) = time else {
            self.profile.count("sample_without_timestamp");
            return Ok(());
        };
        let Some(seq) = self.sequences.get(&seq_id) else {
            return Ok(());
        };
        let generation = &seq.generation;
        let task = match ss.task_context_field {
            Some(TaskContextField::TaskContext(t)) => Some(t),
            Some(TaskContextField::TaskContextIid(iid)) => {
                generation.task_contexts.get(&iid).cloned()
            }
            None => None,
        };
        let execution = match ss.execution_context_field {
            Some(ExecutionContextField::ExecutionContext(e)) => Some(e),
            Some(ExecutionContextField::ExecutionContextIid(iid)) => {
                generation.execution_contexts.get(&iid).cloned()
            }
            None => None,
        };
        let sample_defaults = seq
            .defaults
            .as_ref()
            .and_then(|d| d.stack_sample_defaults.as_ref());
        let descriptor = match ss.primary_descriptor_field {
            Some(PrimaryDescriptorField::PrimaryDescriptor(d)) => Some(d),
            Some(PrimaryDescriptorField::PrimaryDescriptorIid(iid)) => {
                generation.counter_descriptors.get(&iid).cloned()
            }
            None => sample_defaults.and_then(|d| d.primary_descriptor.clone()),
        };
        let source = sample_defaults.and_then(|d| d.source.clone());
        let (name, unit, kind) = vocab::stack_sample_series(descriptor.as_ref(), source.as_deref());
        let series = Series {
            kind,
            name: self.profile.intern(&name),
            unit: self.profile.intern(&unit),
            source: source.as_deref().map(|s| self.profile.intern(s)),
            frequency_hz: None,
            period: None,
            spans: false,
        };
        let series = self.profile.add_series(series);
        let stack = match ss.callstack_field {
            Some(CallstackField::Callstack(inline)) => self.inline_callstack(&inline),
            Some(CallstackField::CallstackIid(iid)) => self.callstack(seq_id, iid),
            None => None,
        };
        let thread = self.thread(
            task.as_ref().and_then(|t| t.pid).map(i64::from),
            task.as_ref().and_then(|t| t.tid).map(i64::from),
        );
        let sample = Sample {
            time: None,
            thread,
            stack,
            weight: ss
                .primary_weight
                .map_or(1, |w| i64::try_from(w).unwrap_or(i64::MAX)),
            series,
            cpu: execution
                .as_ref()
                .and_then(|e| e.cpu)
                .and_then(|c| u32::try_from(c).ok()),
            cpu_mode: vocab::stack_sample_cpu_mode(execution.as_ref().and_then(|e| e.mode)),
            unwind_error: None,
            counter: None,
            labels: None,
            link: None,
        };
        self.push(sample, time)
    }

    fn inline_callstack(&mut self, callstack: &InlineCallstack) -> Option<StackHandle> {
        if callstack.frames.len() as u64 > self.limits.max_stack_depth {
            self.profile.count("callstack_too_deep");
            return None;
        }
        let frames: Vec<FrameHandle> = callstack
            .frames
            .iter()
            .map(|f| {
                let mut frame = Frame::new(FrameKind::Unknown);
                frame.function = f
                    .function_name
                    .as_deref()
                    .filter(|n| !n.is_empty())
                    .map(|n| self.profile.intern(n));
                frame.file = f
                    .source_file
                    .as_deref()
                    .filter(|n| !n.is_empty())
                    .map(|n| self.profile.intern(n));
                frame.line = f.line_number.filter(|&l| l > 0);
                self.profile.add_frame(frame)
            })
            .collect();
        if frames.is_empty() {
            self.profile.count("stackprofile_empty_callstack");
        }
        self.profile.add_stack_from_root(frames)
    }

    /// Sets what only the whole trace tells: the clock times are given on, the offline
    /// symbols and the names. The samples' times are for the destination to place.
    pub(super) fn finish_parts(mut self) -> Parts<S> {
        let default_clock = self.clocks.default_clock();
        self.profile.timestamps = match (self.clocks.wall_clock(), default_clock) {
            (Some(_), _) => Timestamps::UnixEpoch,
            (None, Some(default)) => Timestamps::TraceClock(clock_name(default)),
            (None, None) => Timestamps::TraceClock("trace".into()),
        };
        if let Some(wall) = self.clocks.wall_clock() {
            self.profile
                .attributes
                .insert("perfetto.wall_clock".into(), clock_name(wall));
        }
        if let Some(default) = default_clock {
            self.profile
                .attributes
                .insert("perfetto.trace_clock".into(), clock_name(default));
        }
        // traceconv appends the symbols after the samples: only now is every frame known.
        std::mem::take(&mut self.symbols).apply(&mut self.profile);
        self.apply_names();
        self.into_parts()
    }

    /// The state as the packets left it, for a pass that wants only its samples.
    pub(super) fn into_parts(self) -> Parts<S> {
        Parts {
            profile: self.profile,
            clocks: self.clocks,
            samples: self.samples,
            pushed: self.pushed,
        }
    }

    fn apply_names(&mut self) {
        let processes: Vec<_> = self
            .profile
            .processes()
            .filter_map(|(h, p)| p.pid.map(|pid| (h, pid)))
            .collect();
        for (h, pid) in processes {
            if let Some((name, cmdline)) = self.names.processes.get(&pid) {
                self.profile
                    .name_process(h, name.as_deref(), cmdline.as_deref());
            }
        }
        let threads: Vec<_> = self
            .profile
            .threads()
            .filter_map(|(h, t)| {
                t.tid
                    .map(|tid| (h, tid, self.profile.process(t.process).pid))
            })
            .collect();
        for (h, tid, pid) in threads {
            if let Some((tgid, name)) = self.names.threads.get(&tid) {
                if tgid.is_none() || pid.is_none() || *tgid == pid {
                    self.profile.name_thread(h, name);
                }
            }
        }
    }
}

/// The running clock after a µs delta. The delta saturates as trace_processor's does; an
/// addition that overflows gives an invalid (negative) clock, as trace_processor's wrapping
/// addition does in practice.
fn advance(now: i64, delta_us: i64) -> i64 {
    now.checked_add(delta_us.saturating_mul(1000))
        .unwrap_or(i64::MIN)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Resolves a callstack (root first in the trace) into the stack tree; `Ok(None)` for an
/// empty callstack, `Err(stat)` when any part is missing.
fn resolve_callstack(
    profile: &mut Profile,
    generation: &mut Generation,
    iid: u64,
    max_depth: u64,
) -> Result<Option<StackHandle>, &'static str> {
    if let Some(&cached) = generation.stack_cache.get(&iid) {
        return Ok(cached);
    }
    let frame_ids = generation
        .callstacks
        .get(&iid)
        .ok_or("stackprofile_invalid_callstack_id")?
        .clone();
    if frame_ids.is_empty() {
        return Err("stackprofile_empty_callstack");
    }
    if frame_ids.len() as u64 > max_depth {
        return Err("callstack_too_deep");
    }
    let mut frames = Vec::with_capacity(frame_ids.len());
    for fid in frame_ids {
        frames.push(resolve_frame(profile, generation, fid)?);
    }
    let stack = profile.add_stack_from_root(frames);
    generation.stack_cache.insert(iid, stack);
    Ok(stack)
}

fn lookup_string(
    table: &FxHashMap<u64, Vec<u8>>,
    iid: Option<u64>,
) -> Result<Option<String>, &'static str> {
    match iid {
        None => Ok(None),
        Some(0) => Ok(table.get(&0).map(|s| text(s))),
        Some(id) => table
            .get(&id)
            .map(|s| Some(text(s)))
            .ok_or("stackprofile_invalid_string_id"),
    }
}

fn resolve_frame(
    profile: &mut Profile,
    generation: &mut Generation,
    iid: u64,
) -> Result<FrameHandle, &'static str> {
    if let Some(&Some(handle)) = generation.frame_cache.get(&iid) {
        return Ok(handle);
    }
    let pf: PfFrame = generation
        .frames
        .get(&iid)
        .ok_or("stackprofile_invalid_frame_id")?
        .clone();
    let name =
        lookup_string(&generation.function_names, pf.function_name_id)?.filter(|n| !n.is_empty());
    let mapping = match pf.mapping_id {
        None | Some(0) => None,
        Some(id) => Some(
            generation
                .mappings
                .get(&id)
                .ok_or("stackprofile_invalid_mapping_id")?
                .clone(),
        ),
    };
    let (image, path) = match &mapping {
        Some(m) => {
            let (image, path) = resolve_mapping(profile, generation, m)?;
            (Some(image), path)
        }
        None => (None, String::new()),
    };

    use proflake_proto::perfetto::frame::KindField;
    let explicit = match &pf.kind_field {
        Some(KindField::Kind(k)) => vocab::frame_kind(*k),
        Some(KindField::KindStr(s)) if !s.is_empty() => Some(FrameKind::Other(profile.intern(s))),
        _ => None,
    };
    let java = vocab::is_java_mapping(&path);
    let kind = match explicit {
        Some(FrameKind::Interpreted | FrameKind::Jit) | None if java => FrameKind::Jvm,
        Some(kind) => kind,
        None if vocab::is_kernel_mapping(&path) => FrameKind::Kernel,
        None if mapping.is_some() => FrameKind::Native,
        None => FrameKind::Unknown,
    };

    let mut frame = Frame::new(kind);
    if let Some(name) = name {
        if kind == FrameKind::Jvm {
            // ART names managed frames `package.Class.method`.
            match name.rsplit_once('.') {
                Some((class, method)) if !class.is_empty() && !method.is_empty() => {
                    frame.module = Some(profile.intern(class));
                    frame.function = Some(profile.intern(method));
                }
                _ => frame.function = Some(profile.intern(&name)),
            }
        } else {
            let demangled = demangle(&name);
            frame.function = Some(profile.intern(&demangled));
            if demangled != name {
                frame.system_name = Some(profile.intern(&name));
            }
        }
    }
    if let Ok(Some(file)) = lookup_string(&generation.source_paths, pf.source_path_iid) {
        if !file.is_empty() {
            frame.file = Some(profile.intern(&file));
        }
    }
    frame.line = pf.line_number.filter(|&l| l > 0);
    frame.image = image;
    frame.address = pf.rel_pc.map(|pc| match image {
        Some(_) => FrameAddress::ImageRelative(pc),
        None => FrameAddress::Absolute(pc),
    });
    let handle = profile.add_frame(frame);
    generation.frame_cache.insert(iid, Some(handle));
    Ok(handle)
}

/// Builds the image of a mapping. The name joins the interned path components with "/" and a
/// leading "/" (a leading "//" collapses), as trace_processor names mappings.
fn resolve_mapping(
    profile: &mut Profile,
    generation: &Generation,
    m: &Mapping,
) -> Result<(crate::model::ImageHandle, String), &'static str> {
    let mut path = String::new();
    for id in m.path_string_ids.iter().take(MAX_PATH_COMPONENTS) {
        let Some(component) = generation.mapping_paths.get(id) else {
            break;
        };
        path.push('/');
        path.push_str(&String::from_utf8_lossy(component));
    }
    if path.starts_with("//") {
        path.remove(0);
    }
    let build_id = match m.build_id {
        None | Some(0) => Vec::new(),
        Some(id) => generation
            .build_ids
            .get(&id)
            .ok_or("stackprofile_invalid_string_id")?
            .clone(),
    };
    let (code_id, debug_id) = ids_from_build_id(&build_id);
    let image = Image {
        path: (!path.is_empty()).then(|| profile.intern(&path)),
        code_id,
        debug_id,
        start: m.start.unwrap_or(0),
        end: m.end.unwrap_or(0),
        file_offset: m.exact_offset.or(m.start_offset).unwrap_or(0),
        load_bias: m.load_bias.unwrap_or(0),
    };
    Ok((profile.add_image(image), path))
}
