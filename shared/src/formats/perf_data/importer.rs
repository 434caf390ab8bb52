//! perf.data records into the model: a series per event attr, threads from COMM/FORK,
//! images from MMAP/MMAP2 with their build IDs, and one timed sample per SAMPLE record.

use linux_perf_data::linux_perf_event_reader::{
    AttrFlags, CommOrExecRecord, CpuMode, EventRecord, ForkOrExitRecord, Mmap2FileId, Mmap2Record,
    MmapRecord, PerfEventType, RawEventRecord, SampleFormat, SampleRecord, SamplingPolicy,
    SoftwareCounterType,
};
use linux_perf_data::{DsoInfo, DsoKey, Feature, PerfFile};
use rustc_hash::FxHashMap;

use super::address_space::AddressSpace;
use super::malformed;
use super::unwind::{Unwound, UserUnwinder, X86_64_BP, X86_64_IP, X86_64_SP};
use crate::error::Result;
use crate::formats::binaries::UnwindBinaries;
use crate::limits::{exceeded, Limits};
use crate::model::{
    ids_from_build_id, CpuMode as ModelCpuMode, Frame, FrameAddress, FrameHandle, FrameKind, Image,
    ImageHandle, Label, LabelSetHandle, LabelValue, Profile, Sample, Series, SeriesHandle,
    SeriesKind, StringHandle, ThreadHandle, Timestamps,
};

/// Callchain entries at or above this are context markers, not addresses.
const PERF_CONTEXT_MAX: u64 = -4095i64 as u64;
const PERF_CONTEXT_HV: u64 = -32i64 as u64;
const PERF_CONTEXT_KERNEL: u64 = -128i64 as u64;
const PERF_CONTEXT_USER: u64 = -512i64 as u64;
const PERF_CONTEXT_GUEST_KERNEL: u64 = -2176i64 as u64;
const PERF_CONTEXT_GUEST_USER: u64 = -2560i64 as u64;

/// `PROT_EXEC` in an MMAP2 record's protection.
const PROT_EXEC: u32 = 4;

/// What the samples of a `--call-graph dwarf` recording lack: the user stack was recorded as
/// bytes, and only its leaf (the sampled instruction) is kept.
const NOT_UNWOUND: &str = "user stack not unwound (perf --call-graph dwarf)";

/// What the samples of such a recording lack when their stack was unwound until a frame in a
/// binary that was not at hand, or until the copied stack bytes ran out.
const UNWOUND_IN_PART: &str = "user stack unwound only in part (perf --call-graph dwarf)";

/// An event attr's series, made when its first sample comes.
struct Event {
    name: String,
    periodic: bool,
    clock: bool,
    frequency_hz: Option<u64>,
    period: Option<u64>,
    /// The kernel leaves the user part out of the call chain (`exclude_callchain_user`, which
    /// `--call-graph dwarf` sets: the user stack is recorded as bytes instead).
    no_user_callchain: bool,
    series: Option<SeriesHandle>,
}

/// A thread as first seen, and the comm its later samples had last, when another.
struct ThreadEntry {
    handle: ThreadHandle,
    name: Option<Box<str>>,
    renamed: Option<(Box<str>, Option<LabelSetHandle>)>,
}

pub(super) struct Importer<'b> {
    profile: Profile,
    events: Vec<Event>,
    build_ids: std::collections::HashMap<DsoKey, DsoInfo>,
    /// The comm of each tid, as COMM and FORK records say.
    comms: FxHashMap<i32, Box<str>>,
    threads: FxHashMap<(i32, i32), ThreadEntry>,
    /// The user-space mappings of each process.
    maps: FxHashMap<i32, AddressSpace>,
    /// The kernel's and its modules' mappings, shared by every process.
    kernel_maps: AddressSpace,
    /// Mappings held over all processes, within `max_table_entries`: a fork copies its
    /// parent's, so few records could otherwise make many.
    mappings: u64,
    max_mappings: u64,
    frames: FxHashMap<(u64, Option<ImageHandle>, bool), FrameHandle>,
    /// Wall-clock ns minus perf-clock ns, from `CLOCK_DATA`.
    wall_offset: Option<i128>,
    /// [`NOT_UNWOUND`] and [`UNWOUND_IN_PART`], interned once.
    not_unwound: Option<StringHandle>,
    unwound_in_part: Option<StringHandle>,
    /// The user stacks of `--call-graph dwarf` samples, unwound (x86_64 recordings only).
    unwinder: Option<UserUnwinder<'b>>,
    /// The register holding the instruction pointer in the sampled user registers.
    ip_register: Option<u64>,
    stack: Vec<FrameHandle>,
    samples: u64,
    last_time: i64,
    in_order: bool,
    max_samples: u64,
    max_stack_depth: u64,
    max_stack_nodes: u64,
}

impl<'b> Importer<'b> {
    pub(super) fn new(
        perf_file: &PerfFile,
        limits: &Limits,
        binaries: &'b dyn UnwindBinaries,
    ) -> Result<Self> {
        let mut profile = Profile::new(super::FORMAT);
        let bad = |e: linux_perf_data::Error| malformed(0, format!("feature section: {e}"));
        let wall_offset = (perf_file.clock_data().map_err(bad)?)
            .map(|c| i128::from(c.wall_clock_ns) - i128::from(c.clockid_time_ns));
        profile.timestamps = match wall_offset {
            Some(_) => Timestamps::UnixEpoch,
            None => Timestamps::TraceClock("perf".into()),
        };
        let arch = perf_file.arch().ok().flatten().map(str::to_owned);
        let cmdline = (perf_file.feature_section_data(Feature::CMDLINE)).and_then(command_line);
        for (key, value) in [
            ("perf.version", perf_file.perf_version().ok().flatten()),
            ("perf.cmdline", cmdline.as_deref()),
            ("perf.arch", arch.as_deref()),
            ("perf.os_release", perf_file.os_release().ok().flatten()),
        ] {
            if let Some(value) = value.filter(|v| !v.is_empty()) {
                profile.attributes.insert(key.into(), value.into());
            }
        }
        let ip_register = match arch.as_deref() {
            Some("x86_64") => Some(8),
            Some("aarch64" | "arm64") => Some(32),
            Some("x86" | "i386" | "i686") => Some(8),
            _ => None,
        };
        let unwinder = (arch.as_deref() == Some("x86_64")).then(|| UserUnwinder::new(binaries));
        let events = perf_file
            .event_attributes()
            .iter()
            .map(|desc| {
                let attr = &desc.attr;
                let base = event_name(&attr.type_);
                let name = desc.name().map_or_else(|| base.to_owned(), str::to_owned);
                let short = name.split(':').next().unwrap_or(&name);
                let clock = matches!(short, "cpu-clock" | "task-clock");
                let (frequency_hz, period) = match attr.sampling_policy {
                    SamplingPolicy::Frequency(hz) => (Some(hz), None),
                    SamplingPolicy::Period(p) => (None, Some(p.get())),
                    SamplingPolicy::NoSampling => (None, None),
                };
                Event {
                    periodic: attr.sample_format.contains(SampleFormat::PERIOD),
                    clock,
                    frequency_hz,
                    period,
                    no_user_callchain: attr.flags.contains(AttrFlags::EXCLUDE_CALLCHAIN_USER),
                    name,
                    series: None,
                }
            })
            .collect();
        Ok(Importer {
            profile,
            events,
            build_ids: perf_file.build_ids().unwrap_or_default(),
            comms: FxHashMap::default(),
            threads: FxHashMap::default(),
            maps: FxHashMap::default(),
            kernel_maps: AddressSpace::default(),
            mappings: 0,
            max_mappings: limits.max_table_entries,
            frames: FxHashMap::default(),
            wall_offset,
            ip_register,
            not_unwound: None,
            unwound_in_part: None,
            unwinder,
            stack: Vec::new(),
            samples: 0,
            last_time: i64::MIN,
            in_order: true,
            max_samples: limits.max_samples,
            max_stack_depth: limits.max_stack_depth,
            max_stack_nodes: limits.max_stack_nodes,
        })
    }

    /// One kernel record (the `index`th record read, for errors).
    pub(super) fn record(
        &mut self,
        attr_index: usize,
        record: &RawEventRecord<'_>,
        index: u64,
    ) -> Result<()> {
        if !super::guard::callchain_fits(record) {
            return Err(malformed(
                0,
                format!("record {index} (SAMPLE): a call chain longer than its record"),
            ));
        }
        let parsed = match record.parse() {
            Ok(parsed) => parsed,
            Err(e) => {
                return Err(malformed(
                    0,
                    format!("record {index} ({:?}): {e}", record.record_type),
                ))
            }
        };
        match parsed {
            EventRecord::Sample(s) => self.sample(attr_index, &s, index)?,
            EventRecord::Comm(c) => self.comm(&c),
            EventRecord::Fork(f) => self.fork(&f)?,
            EventRecord::Exit(_) => {}
            EventRecord::Mmap(m) => self.mmap(&m)?,
            EventRecord::Mmap2(m) => self.mmap2(&m)?,
            EventRecord::Lost(_) => self.profile.count("perf_lost_records"),
            _ => {}
        }
        Ok(())
    }

    fn comm(&mut self, c: &CommOrExecRecord<'_>) {
        let name = String::from_utf8_lossy(&c.name.as_slice()).into_owned();
        if c.is_execve && c.pid == c.tid {
            // A new program in the process: its old mappings are gone.
            if let Some(old) = self.maps.remove(&c.pid) {
                self.mappings -= old.len() as u64;
            }
            self.forget_unwinder(c.pid);
        }
        self.comms.insert(c.tid, name.into());
    }

    fn fork(&mut self, f: &ForkOrExitRecord) -> Result<()> {
        if let Some(comm) = self.comms.get(&f.ptid).cloned() {
            self.comms.insert(f.tid, comm);
        }
        // A new process starts with a copy of its parent's address space.
        if f.pid != f.ppid && f.pid == f.tid {
            if let Some(parent) = self.maps.get(&f.ppid).cloned() {
                self.mappings += parent.len() as u64;
                if let Some(old) = self.maps.insert(f.pid, parent) {
                    self.mappings -= old.len() as u64;
                }
                self.forget_unwinder(f.pid);
                self.check_mappings()?;
            }
        }
        Ok(())
    }

    /// A process's mappings changed: its unwinder is made again at its next sample.
    fn forget_unwinder(&mut self, pid: i32) {
        if let Some(unwinder) = &mut self.unwinder {
            unwinder.forget(pid);
        }
    }

    fn check_mappings(&self) -> Result<()> {
        if self.mappings > self.max_mappings {
            return Err(exceeded("max_table_entries", self.max_mappings));
        }
        Ok(())
    }

    fn mmap(&mut self, m: &MmapRecord<'_>) -> Result<()> {
        if !m.is_executable {
            return Ok(());
        }
        let path = m.path.as_slice();
        self.map(
            m.pid,
            m.cpu_mode,
            m.address,
            m.length,
            m.page_offset,
            &path,
            None,
        )
    }

    fn mmap2(&mut self, m: &Mmap2Record<'_>) -> Result<()> {
        // perf synthesizes the kernel's mapping with no protection bits.
        let kernel = matches!(m.cpu_mode, CpuMode::Kernel | CpuMode::GuestKernel);
        if m.protection & PROT_EXEC == 0 && !kernel {
            return Ok(());
        }
        let build_id = match &m.file_id {
            Mmap2FileId::BuildId(id) => Some(id.clone()),
            Mmap2FileId::InodeAndVersion(_) => None,
        };
        let path = m.path.as_slice();
        self.map(
            m.pid,
            m.cpu_mode,
            m.address,
            m.length,
            m.page_offset,
            &path,
            build_id,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn map(
        &mut self,
        pid: i32,
        cpu_mode: CpuMode,
        start: u64,
        length: u64,
        page_offset: u64,
        path: &[u8],
        build_id: Option<Vec<u8>>,
    ) -> Result<()> {
        let key = DsoKey::detect(path, cpu_mode);
        let kernel = matches!(cpu_mode, CpuMode::Kernel | CpuMode::GuestKernel) || pid == -1;
        let shown = match &key {
            // `[kernel.kallsyms]_text`: perf names the kernel `[kernel.kallsyms]`.
            Some(DsoKey::Kernel) => "[kernel.kallsyms]".to_owned(),
            _ => String::from_utf8_lossy(path).into_owned(),
        };
        let build_id = build_id.or_else(|| {
            key.as_ref()
                .and_then(|k| self.build_ids.get(k))
                .map(|info| info.build_id.clone())
        });
        let end = start.saturating_add(length);
        let mut image = Image::new(Some(self.profile.intern(&shown)), start, end);
        image.file_offset = page_offset;
        if let Some(id) = build_id.filter(|id| id.iter().any(|&b| b != 0)) {
            (image.code_id, image.debug_id) = ids_from_build_id(&id);
        }
        let image = self.profile.add_image(image);
        if !kernel {
            self.forget_unwinder(pid);
        }
        let maps = if kernel {
            &mut self.kernel_maps
        } else {
            self.maps.entry(pid).or_default()
        };
        let before = maps.len() as u64;
        maps.insert(start, end, image);
        self.mappings = self.mappings - before + maps.len() as u64;
        self.check_mappings()
    }

    fn sample(&mut self, attr_index: usize, s: &SampleRecord<'_>, index: u64) -> Result<()> {
        if self.samples >= self.max_samples {
            return Err(exceeded("max_samples", self.max_samples));
        }
        let Some(raw_time) = s.timestamp else {
            return Err(malformed(
                0,
                format!("record {index}: a sample without a time (perf record without TIME)"),
            ));
        };
        let time = match self.wall_offset {
            Some(offset) => i64::try_from(i128::from(raw_time) + offset),
            None => i64::try_from(raw_time),
        }
        .map_err(|_| malformed(0, format!("record {index}: time {raw_time} out of range")))?;
        let series = self.series(attr_index);
        let Some(event) = self.events.get(attr_index) else {
            return Err(malformed(
                0,
                format!("record {index}: no event attr {attr_index}"),
            ));
        };
        let no_user_callchain = event.no_user_callchain;
        let weight = match (event.periodic, s.period) {
            (true, Some(p)) => i64::try_from(p).map_err(|_| {
                malformed(
                    0,
                    format!("record {index}: period {p} does not fit in 63 bits"),
                )
            })?,
            _ => 1,
        };
        let pid = s.pid.unwrap_or(-1);
        let tid = s.tid.unwrap_or(pid);
        let (thread, labels) = self.thread(pid, tid);

        // Leaf first, as perf gives them.
        let mut stack = std::mem::take(&mut self.stack);
        stack.clear();
        let mut too_deep = false;
        let mut kernel = matches!(s.cpu_mode, CpuMode::Kernel | CpuMode::GuestKernel);
        let mut push = |this: &mut Self, stack: &mut Vec<FrameHandle>, address: u64, kernel| {
            if stack.len() as u64 >= this.max_stack_depth {
                too_deep = true;
            } else {
                stack.push(this.frame(pid, address, kernel));
            }
        };
        match &s.callchain {
            Some(chain) => {
                for i in 0..chain.len() {
                    let Some(entry) = chain.get(i) else { break };
                    if entry >= PERF_CONTEXT_MAX {
                        match entry {
                            PERF_CONTEXT_KERNEL | PERF_CONTEXT_GUEST_KERNEL => kernel = true,
                            PERF_CONTEXT_USER | PERF_CONTEXT_GUEST_USER => kernel = false,
                            PERF_CONTEXT_HV => kernel = true,
                            _ => {}
                        }
                        continue;
                    }
                    push(self, &mut stack, entry, kernel);
                }
            }
            None => {
                if let Some(ip) = s.ip {
                    push(self, &mut stack, ip, kernel);
                }
            }
        }
        let mut unwind_error = None;
        let dwarf = no_user_callchain && s.callchain.is_some();
        let unwound = match dwarf.then(|| self.unwind_user(pid, s, stack.len())) {
            Some(Unwound::NoBinary) | None => None,
            // The unwound frames, leaf first, borrowed from the unwinder's buffer.
            Some(unwound) => {
                (self.unwinder.as_mut()).map(|u| (unwound, std::mem::take(&mut u.frames)))
            }
        };
        if let Some((unwound, frames)) = unwound {
            for &address in &frames {
                push(self, &mut stack, address, false);
            }
            if let Some(unwinder) = &mut self.unwinder {
                unwinder.frames = frames;
            }
            if unwound == Unwound::Whole {
                self.profile.count("perf_unwound_user_stacks");
            } else {
                self.profile.count("perf_truncated_user_stacks");
                let profile = &mut self.profile;
                unwind_error = Some(
                    *self
                        .unwound_in_part
                        .get_or_insert_with(|| profile.intern(UNWOUND_IN_PART)),
                );
            }
        } else if dwarf {
            // The user leaf: the sampled instruction when the sample hit user code, else
            // the user registers' instruction pointer.
            let user_ip = match s.cpu_mode {
                CpuMode::User | CpuMode::GuestUser => s.ip,
                _ => None,
            }
            .or_else(|| {
                let register = self.ip_register?;
                s.user_regs.as_ref()?.get(register)
            });
            if let Some(ip) = user_ip {
                push(self, &mut stack, ip, false);
            }
            self.profile.count("perf_truncated_user_stacks");
            let profile = &mut self.profile;
            unwind_error = Some(
                *self
                    .not_unwound
                    .get_or_insert_with(|| profile.intern(NOT_UNWOUND)),
            );
        }
        let mut sample = Sample::new(thread, None, weight, series);
        if too_deep {
            self.profile.count("perf_stack_too_deep");
        } else {
            sample.stack = stack.iter().rev().fold(None, |parent, &frame| {
                Some(self.profile.add_stack(parent, frame))
            });
            if self.profile.stacks().len() as u64 > self.max_stack_nodes {
                return Err(exceeded("max_stack_nodes", self.max_stack_nodes));
            }
        }
        self.stack = stack;
        sample.time = Some(time);
        sample.cpu = s.cpu;
        sample.labels = labels;
        sample.unwind_error = unwind_error;
        sample.cpu_mode = match s.cpu_mode {
            CpuMode::Kernel | CpuMode::GuestKernel => ModelCpuMode::Kernel,
            CpuMode::User | CpuMode::GuestUser => ModelCpuMode::User,
            CpuMode::Hypervisor => ModelCpuMode::Hypervisor,
            _ => ModelCpuMode::Unknown,
        };
        self.in_order &= time >= self.last_time;
        self.last_time = time;
        self.profile.add_sample(sample);
        self.samples += 1;
        Ok(())
    }

    /// Unwinds the user stack of sample `s` of `pid` into the unwinder's frames, which may add
    /// to the `depth` frames the sample has so far.
    fn unwind_user(&mut self, pid: i32, s: &SampleRecord<'_>, depth: usize) -> Unwound {
        let (Some(unwinder), Some(regs), Some((bytes, dyn_size))) =
            (&mut self.unwinder, &s.user_regs, &s.user_stack)
        else {
            return Unwound::NoBinary;
        };
        let (Some(ip), Some(sp), Some(bp)) = (
            regs.get(X86_64_IP),
            regs.get(X86_64_SP),
            regs.get(X86_64_BP),
        ) else {
            return Unwound::NoBinary;
        };
        // The copy is `dyn_size` valid bytes from the user stack pointer up (the rest of the
        // recorded size is padding).
        let bytes = bytes.as_slice();
        let valid = usize::try_from(*dyn_size).map_or(bytes.len(), |n| n.min(bytes.len()));
        let max_frames = usize::try_from(self.max_stack_depth)
            .unwrap_or(usize::MAX)
            .saturating_sub(depth)
            // One more than fits, so that a stack too deep is still told apart.
            .saturating_add(1);
        unwinder.unwind(
            pid,
            self.maps.get(&pid),
            &self.profile,
            framehop::x86_64::UnwindRegsX86_64::new(ip, sp, bp),
            &bytes[..valid],
            max_frames,
        )
    }

    /// The frame at `address`, in the mapping that holds it.
    fn frame(&mut self, pid: i32, address: u64, kernel: bool) -> FrameHandle {
        let maps = if kernel {
            Some(&self.kernel_maps)
        } else {
            self.maps.get(&pid)
        };
        let image = maps.and_then(|m| m.find(address));
        if let Some(&frame) = self.frames.get(&(address, image, kernel)) {
            return frame;
        }
        let mut frame = Frame::new(if kernel {
            FrameKind::Kernel
        } else {
            FrameKind::Native
        });
        frame.address = Some(FrameAddress::Absolute(address));
        frame.image = image;
        let handle = self.profile.add_frame(frame);
        self.frames.insert((address, image, kernel), handle);
        handle
    }

    /// The event's series, made on its first sample: CPU time in nanoseconds for `cpu-clock`
    /// and `task-clock` with a period (perf's software clocks count nanoseconds), otherwise
    /// counted.
    fn series(&mut self, attr_index: usize) -> SeriesHandle {
        let Some(event) = self.events.get_mut(attr_index) else {
            // Not reached: the crate hands out indexes of its attrs only. A series of its own
            // keeps such a sample apart.
            let name = self.profile.intern("samples");
            let unit = self.profile.intern("count");
            return self.profile.add_series(Series {
                kind: SeriesKind::Other,
                name,
                unit,
                source: None,
                frequency_hz: None,
                period: None,
                spans: false,
            });
        };
        if let Some(handle) = event.series {
            return handle;
        }
        let (kind, unit) = match (event.clock, event.periodic) {
            (true, true) => (SeriesKind::CpuTime, "nanoseconds"),
            (true, false) => (SeriesKind::CpuTime, "count"),
            _ => (SeriesKind::Other, "count"),
        };
        let series = Series {
            kind,
            name: self.profile.intern(&event.name),
            unit: self.profile.intern(unit),
            source: Some(self.profile.intern("perf record")),
            frequency_hz: event.frequency_hz,
            period: event.period,
            spans: false,
        };
        let handle = self.profile.add_series(series);
        event.series = Some(handle);
        handle
    }

    /// The sample's thread, and the `comm` label when its comm is no longer the thread's name.
    fn thread(&mut self, pid: i32, tid: i32) -> (ThreadHandle, Option<LabelSetHandle>) {
        // Borrowed, not cloned: this runs once per sample. Only a new thread or a changed
        // comm copies the name.
        let comm = self.comms.get(&tid).map(|c| &**c);
        let profile = &mut self.profile;
        let entry = self.threads.entry((pid, tid)).or_insert_with(|| {
            let process = profile.add_process(Some(i64::from(pid)));
            let handle = profile.add_thread(process, Some(i64::from(tid)));
            if let Some(comm) = comm {
                profile.name_thread(handle, comm);
                if pid == tid {
                    profile.name_process(process, Some(comm), None);
                }
            }
            ThreadEntry {
                handle,
                name: comm.map(Box::from),
                renamed: None,
            }
        });
        let Some(comm) = comm else {
            return (entry.handle, None);
        };
        if entry.name.is_none() {
            profile.name_thread(entry.handle, comm);
            entry.name = Some(comm.into());
            return (entry.handle, None);
        }
        if entry.name.as_deref() == Some(comm) {
            return (entry.handle, None);
        }
        match &entry.renamed {
            Some((name, labels)) if **name == *comm => (entry.handle, *labels),
            _ => {
                let label = Label {
                    key: profile.intern("comm"),
                    value: LabelValue::Str(profile.intern(comm)),
                };
                let labels = profile.add_label_set(&[label]);
                entry.renamed = Some((comm.into(), labels));
                (entry.handle, labels)
            }
        }
    }

    /// The profile, its samples in time order.
    pub(super) fn finish(mut self) -> Result<Profile> {
        if !self.in_order {
            self.profile.count("perf_samples_out_of_order");
            self.profile.sort_samples_by_time();
        }
        Ok(self.profile)
    }
}

/// The `CMDLINE` feature's words joined by blanks: a count, then each word as a length and
/// NUL-padded bytes (read here, not by the crate, which sizes a list by the count before
/// reading it).
fn command_line(mut data: &[u8]) -> Option<String> {
    fn word(data: &mut &[u8]) -> Option<u32> {
        let (head, rest) = data.split_first_chunk::<4>()?;
        *data = rest;
        Some(u32::from_le_bytes(*head))
    }
    let count = word(&mut data)?;
    let mut line = String::new();
    for _ in 0..count {
        let len = usize::try_from(word(&mut data)?).ok()?;
        let (bytes, rest) = data.split_at_checked(len)?;
        data = rest;
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&String::from_utf8_lossy(&bytes[..end]));
    }
    Some(line)
}

/// perf's name for an event with no `EVENT_DESC` entry.
fn event_name(kind: &PerfEventType) -> &'static str {
    match kind {
        PerfEventType::Software(SoftwareCounterType::CpuClock) => "cpu-clock",
        PerfEventType::Software(SoftwareCounterType::TaskClock) => "task-clock",
        PerfEventType::Hardware(..) => "hardware",
        PerfEventType::Tracepoint(_) => "tracepoint",
        _ => "samples",
    }
}
