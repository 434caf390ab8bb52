//! The Firefox Profiler's processed profile format (JSON), written with
//! `fxprof-processed-profile` 0.8.1, as samply writes it: profiler.firefox.com and samply's
//! viewer open it, and the profiler's compare view takes two exports.
//!
//! - **Processes and threads:** one Firefox process per slice process (its name, else its
//!   service; its pid) and one Firefox thread per slice thread and series, so that series never
//!   mix in one call tree. With several series a thread is named `<thread> (<sample_type>)`. No
//!   thread is flagged as its process's main thread: the profiler would show the process name in
//!   place of the thread's.
//! - **Times:** the profile's reference time (`meta.startTime`) is the slice's start; a sample's
//!   time is its `time_ns` after that, and an aggregated sample (no time) sits at the start.
//! - **Weights:** every sample weighs its value. A `bytes` series is written with the weight type
//!   `bytes`; every other series with `samples`, whatever its unit: the crate's weights are `i32`,
//!   so `tracing-ms` would round each sample to whole milliseconds. A value beyond `i32` is split
//!   over several samples at the same time and stack (the sum stays exact).
//! - **CPU:** the samples of a CPU-time series in a time unit carry their value as the thread's
//!   CPU delta (µs), so that the activity graph draws CPU use. When no series does, the
//!   `threadCPUDelta` column (which the crate always writes) is left out, so that the graph
//!   draws the samples rather than zero CPU. (Mixed with a CPU series, the other threads keep
//!   zero CPU deltas.)
//! - **Frames:** a frame with an address and a library (path, build ID or debug ID) is an
//!   address frame relative to the library (the address as it is when it is image- or
//!   base-relative, less the image's start plus its file offset when absolute); the library
//!   carries the path, the debug ID (else the one the ELF build ID gives) and the build ID as
//!   its code ID. A named address frame keeps its name through the library's symbol table;
//!   `meta.symbolicated` is set when every address frame is named. Other frames are label frames
//!   named by the frame's name. A frame with inlined callers stays one frame, named by its own
//!   name (the profiler's inline frames are not written).
//! - **Categories:** one per frame kind, with a colour (`Kernel` as samply names it, which the
//!   profiler and proflake's decoder read as kernel code); `unknown` frames are in `Other`.
//!   JavaScript frames are flagged as JS.
//!
//! Not carried: labels, trace links, series units other than `bytes` (a thread's weights are
//! "samples"), the spans of a span series (its samples are written as samples), files, lines
//! and columns, a frame's inlined callers, process attributes (service, release, environment,
//! host), and wall-clock `weight_ns`.

use std::sync::Arc;

use fxprof_processed_profile::debugid::DebugId;
use fxprof_processed_profile::{
    CategoryColor, CategoryHandle, CpuDelta, Frame as FxFrame, FrameFlags, FrameInfo,
    LibraryHandle, LibraryInfo, Profile, ReferenceTimestamp, SamplingInterval, StackHandle, Symbol,
    SymbolTable, ThreadHandle, Timestamp, WeightType,
};
use rustc_hash::FxHashMap;

use super::slice::{Frame, Slice, NONE};
use crate::error::{Error, ErrorKind, Result};

/// A frame kind's category: its name in the profiler and its colour.
fn category_of(kind: &str) -> Option<(&'static str, CategoryColor)> {
    Some(match kind {
        "unknown" => return None,
        "native" => ("Native", CategoryColor::Blue),
        "kernel" => ("Kernel", CategoryColor::Orange),
        "jvm" => ("JVM", CategoryColor::Green),
        "interpreted" => ("Interpreted", CategoryColor::LightGreen),
        "jit" => ("JIT", CategoryColor::Purple),
        "gc" => ("GC", CategoryColor::Brown),
        "runtime" => ("Runtime", CategoryColor::DarkGray),
        "python" => ("Python", CategoryColor::LightBlue),
        "javascript" => ("JavaScript", CategoryColor::Yellow),
        _ => return Some(("", CategoryColor::Gray)),
    })
}

/// Colours for the kinds producers name themselves, in turn.
const OTHER_COLOURS: [CategoryColor; 4] = [
    CategoryColor::Magenta,
    CategoryColor::LightRed,
    CategoryColor::Red,
    CategoryColor::Gray,
];

/// Whether a unit is a time the CPU delta can be given in, and its ns.
fn ns_per_unit(unit: &str) -> Option<i64> {
    match unit {
        "nanoseconds" => Some(1),
        "microseconds" => Some(1_000),
        "milliseconds" => Some(1_000_000),
        "seconds" => Some(1_000_000_000),
        _ => None,
    }
}

/// The slice as a Firefox Profiler processed profile; `name` is the product name.
pub(crate) fn write(slice: &Slice, name: &str) -> Result<Vec<u8>> {
    let mut profile = Profile::new(
        name,
        ReferenceTimestamp::from_millis_since_unix_epoch(slice.start_ns as f64 / 1e6),
        interval(slice),
    );
    let frames = frame_infos(&mut profile, slice);
    let tracks = Tracks::new(&mut profile, slice);
    let s = &slice.samples;
    // Each track's samples together and in time order: one track's stacks are interned at a
    // time, and the crate writes samples in time order without sorting them.
    let mut order: Vec<u32> = (0..s.len() as u32).collect();
    order.sort_unstable_by_key(|&i| {
        let i = i as usize;
        (
            tracks.index(s.thread[i], s.series[i]),
            s.time_ns[i].unwrap_or(slice.start_ns),
        )
    });
    let mut stacks = StackMemo {
        stacks: vec![None; slice.nodes.len()],
        touched: Vec::new(),
        chain: Vec::new(),
    };
    let mut current = usize::MAX;
    for &i in &order {
        let i = i as usize;
        let track = tracks.index(s.thread[i], s.series[i]);
        if track != current {
            current = track;
            stacks.reset();
        }
        let (thread, cpu_ns) = tracks.tracks[track].expect("made for every sample's track");
        let stack = stacks.get(&mut profile, slice, &frames, thread, s.node[i]);
        let at = s.time_ns[i]
            .unwrap_or(slice.start_ns)
            .saturating_sub(slice.start_ns)
            .max(0);
        let time = Timestamp::from_nanos_since_reference(at as u64);
        let mut value = s.value[i];
        loop {
            let weight = value.clamp(i32::MIN.into(), i32::MAX.into());
            let cpu = match cpu_ns {
                Some(ns) if weight > 0 => CpuDelta::from_nanos(weight.saturating_mul(ns) as u64),
                _ => CpuDelta::ZERO,
            };
            profile.add_sample(thread, time, stack, cpu, weight as i32);
            value -= weight;
            if value == 0 {
                break;
            }
        }
    }
    let mut bytes = serde_json::to_vec(&profile).map_err(|e| {
        Error::new(ErrorKind::Export {
            format: "firefox",
            what: e.to_string(),
        })
        .with_source(e)
    })?;
    if !tracks.any_cpu {
        drop_cpu_deltas(&mut bytes);
    }
    Ok(bytes)
}

/// The declared sampling interval: the main series' frequency, else its period when that is a
/// time, else 1 ms.
fn interval(slice: &Slice) -> SamplingInterval {
    let series = slice
        .main_series()
        .and_then(|i| slice.series.get(i))
        .or(slice.series.first());
    let nanos = series.and_then(|s| {
        let from_hz = s
            .frequency_hz
            .filter(|&hz| hz > 0)
            .map(|hz| 1_000_000_000 / hz);
        let from_period = || {
            let period = s.period.filter(|&p| p > 0)?;
            period.checked_mul(ns_per_unit(&s.unit)?)
        };
        from_hz.or_else(from_period).filter(|&ns| ns > 0)
    });
    SamplingInterval::from_nanos(nanos.map_or(1_000_000, |ns| ns as u64))
}

/// The Firefox threads: one per slice thread and series that has samples.
struct Tracks {
    n_series: usize,
    /// By `thread * n_series + series`: the thread, and the ns per unit when its samples carry
    /// CPU deltas.
    tracks: Vec<Option<(ThreadHandle, Option<i64>)>>,
    any_cpu: bool,
}

impl Tracks {
    fn index(&self, thread: u32, series: u32) -> usize {
        thread as usize * self.n_series + series as usize
    }

    fn new(profile: &mut Profile, slice: &Slice) -> Tracks {
        let n_series = slice.series.len();
        let mut used = vec![false; slice.threads.len() * n_series];
        let s = &slice.samples;
        for i in 0..s.len() {
            used[s.thread[i] as usize * n_series + s.series[i] as usize] = true;
        }
        let start = Timestamp::from_nanos_since_reference(0);
        let mut processes = vec![None; slice.processes.len()];
        let mut tracks = vec![None; used.len()];
        let mut any_cpu = false;
        for (t, thread) in slice.threads.iter().enumerate() {
            for (k, series) in slice.series.iter().enumerate() {
                let index = t * n_series + k;
                if !used[index] {
                    continue;
                }
                let process = *processes[thread.process as usize].get_or_insert_with(|| {
                    let p = &slice.processes[thread.process as usize];
                    let name = match (&p.name, &p.service, p.pid) {
                        (Some(name), _, _) => name.clone(),
                        (None, Some(service), _) => service.clone(),
                        (None, None, Some(pid)) => format!("process {pid}"),
                        (None, None, None) => "process".to_owned(),
                    };
                    let pid = p.pid.and_then(|p| u32::try_from(p).ok()).unwrap_or(0);
                    profile.add_process(&name, pid, start)
                });
                let tid = thread.tid.and_then(|t| u32::try_from(t).ok()).unwrap_or(0);
                let handle = profile.add_thread(process, tid, start, false);
                let mut name = match (&thread.name, thread.tid) {
                    (Some(name), _) => name.clone(),
                    (None, Some(tid)) => format!("thread {tid}"),
                    (None, None) => "all threads".to_owned(),
                };
                if n_series > 1 {
                    name = format!("{name} ({})", series.sample_type);
                }
                profile.set_thread_name(handle, &name);
                if series.unit == "bytes" {
                    profile.set_thread_samples_weight_type(handle, WeightType::Bytes);
                }
                let cpu_ns = ns_per_unit(&series.unit).filter(|_| series.is_cpu());
                any_cpu |= cpu_ns.is_some();
                tracks[index] = Some((handle, cpu_ns));
            }
        }
        Tracks {
            n_series,
            tracks,
            any_cpu,
        }
    }
}

/// A library's identity among the frames.
type LibKey<'s> = (Option<&'s str>, Option<&'s str>, Option<&'s str>);

/// The Firefox frame of every slice frame (thread-independent: labels are profile strings,
/// libraries profile-wide).
fn frame_infos(profile: &mut Profile, slice: &Slice) -> Vec<FrameInfo> {
    let mut categories: FxHashMap<&str, CategoryHandle> = FxHashMap::default();
    let mut libs: FxHashMap<LibKey<'_>, LibraryHandle> = FxHashMap::default();
    let mut symbols: FxHashMap<LibraryHandle, Vec<Symbol>> = FxHashMap::default();
    let mut located: Vec<Option<(LibraryHandle, u32)>> = Vec::with_capacity(slice.frames.len());
    let mut all_named = true;
    for f in &slice.frames {
        let place = relative_address(f).and_then(|rva| {
            let key = (
                f.image_path.as_deref(),
                f.build_id.as_deref(),
                f.debug_id.as_deref(),
            );
            if key == (None, None, None) {
                return None;
            }
            let lib = *libs
                .entry(key)
                .or_insert_with(|| profile.add_lib(library(f)));
            Some((lib, rva))
        });
        if let Some((lib, rva)) = place {
            if f.function.is_some() {
                symbols.entry(lib).or_default().push(Symbol {
                    address: rva,
                    size: Some(1),
                    name: f.name.clone(),
                });
            } else {
                all_named = false;
            }
        }
        located.push(place);
    }
    // Symbol tables before any frame is interned: the crate names address frames from them.
    for (lib, symbols) in symbols {
        profile.set_lib_symbol_table(lib, Arc::new(SymbolTable::new(symbols)));
    }
    profile.set_symbolicated(all_named);
    let mut other_kinds = 0;
    slice
        .frames
        .iter()
        .zip(located)
        .map(|(f, place)| {
            let category = *categories
                .entry(f.kind.as_str())
                .or_insert_with(|| match category_of(&f.kind) {
                    None => CategoryHandle::OTHER,
                    Some(("", _)) => {
                        let colour = OTHER_COLOURS[other_kinds % OTHER_COLOURS.len()];
                        other_kinds += 1;
                        profile.add_category(&f.kind, colour)
                    }
                    Some((name, colour)) => profile.add_category(name, colour),
                });
            let frame = match place {
                Some((lib, rva)) => FxFrame::RelativeAddressFromInstructionPointer(lib, rva),
                None => FxFrame::Label(profile.intern_string(&f.name)),
            };
            let flags = if f.kind == "javascript" {
                FrameFlags::IS_JS
            } else {
                FrameFlags::empty()
            };
            FrameInfo {
                frame,
                category_pair: category.into(),
                flags,
            }
        })
        .collect()
}

/// A frame's address relative to its library, when it has one that fits.
fn relative_address(f: &Frame) -> Option<u32> {
    let address = f.address?;
    let relative = match f.address_space.as_deref() {
        Some("absolute") | None => {
            let start = f.image_start?;
            address
                .checked_sub(start)?
                .checked_add(f.image_file_offset.unwrap_or(0))?
        }
        Some(_) => address,
    };
    u32::try_from(relative).ok()
}

/// The library of a frame: its path, debug ID (else the ELF build ID's) and build ID.
fn library(f: &Frame) -> LibraryInfo {
    let path = f.image_path.clone().unwrap_or_default();
    let name = path
        .rsplit(['/', '\\'])
        .next()
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .or_else(|| f.build_id.clone())
        .unwrap_or_else(|| "unknown".to_owned());
    let debug_id = f
        .debug_id
        .as_deref()
        .and_then(|d| d.parse::<DebugId>().ok())
        .or_else(|| {
            let raw = hex::decode(f.build_id.as_deref()?).ok()?;
            crate::model::ids_from_build_id(&raw).1
        })
        .unwrap_or_default();
    LibraryInfo {
        debug_name: name.clone(),
        name,
        debug_path: path.clone(),
        path,
        debug_id,
        code_id: f.build_id.clone(),
        arch: None,
        symbol_table: None,
    }
}

/// One thread's stack of each slice node, interned once.
struct StackMemo {
    stacks: Vec<Option<StackHandle>>,
    touched: Vec<u32>,
    chain: Vec<u32>,
}

impl StackMemo {
    fn reset(&mut self) {
        for &n in &self.touched {
            self.stacks[n as usize] = None;
        }
        self.touched.clear();
    }

    fn get(
        &mut self,
        profile: &mut Profile,
        slice: &Slice,
        frames: &[FrameInfo],
        thread: ThreadHandle,
        node: u32,
    ) -> Option<StackHandle> {
        if node == NONE {
            return None;
        }
        // Up to the nearest node already interned, then down from there.
        self.chain.clear();
        let mut at = node;
        let mut parent = None;
        while at != NONE {
            if let Some(stack) = self.stacks[at as usize] {
                parent = Some(stack);
                break;
            }
            self.chain.push(at);
            at = slice.nodes[at as usize].parent;
        }
        for &n in self.chain.iter().rev() {
            let info = frames[slice.nodes[n as usize].frame as usize].clone();
            let frame = profile.intern_frame(thread, info);
            let stack = profile.intern_stack(thread, parent, frame);
            self.stacks[n as usize] = Some(stack);
            self.touched.push(n);
            parent = Some(stack);
        }
        parent
    }
}

/// Removes every thread's `"threadCPUDelta":[…]` column from the serialized profile. Only a
/// samples table has the key followed by `[` (meta's is a unit, and a quote within a string is
/// escaped), and the column holds numbers only.
fn drop_cpu_deltas(bytes: &mut Vec<u8>) {
    const KEY: &[u8] = b",\"threadCPUDelta\":[";
    let mut out = Vec::with_capacity(bytes.len());
    let mut rest = &bytes[..];
    while let Some(at) = memchr::memmem::find(rest, KEY) {
        out.extend_from_slice(&rest[..at]);
        let after = &rest[at + KEY.len()..];
        match memchr::memchr(b']', after) {
            Some(end) => rest = &after[end + 1..],
            None => {
                rest = &rest[at..];
                break;
            }
        }
    }
    out.extend_from_slice(rest);
    *bytes = out;
}
