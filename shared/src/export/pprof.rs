//! pprof (`perftools.profiles.Profile`, gzipped), written with the project's prost types.
//!
//! - One sample type per series, with its unit; the period type and period are the CPU
//!   series' (else the first series'), and it is the default sample type.
//! - A pprof sample is an aggregate: samples of the same stack, thread, labels and trace link
//!   become one pprof sample whose values hold each series' sum. Time is not kept.
//! - Mappings carry the image's path, address range, file offset and build ID; functions
//!   their name, system name and file; locations their address and lines, an inlined frame's
//!   callers as further lines of the same location (innermost first, as pprof orders them).
//! - Labels: the sample's own labels, `thread_id`/`thread_name`/`pid` (numbers as numbers),
//!   and `trace_id`/`span_id` as Pyroscope writes them; the pprof decoder reads each back.
//! - With PGO only CPU samples stay, as `samples/count` and `cpu/nanoseconds`, without
//!   labels: what Go's profile-guided optimisation reads.

use std::io::Write;

use flate2::write::GzEncoder;
use proflake_proto::pprof;
use prost::Message;
use rustc_hash::FxHashMap;

use super::slice::{Frame, MappingKey, Slice, NONE};
use super::strings::StringTable;
use crate::error::{Error, ErrorKind, Result};

/// The string table, indexed as pprof indexes it.
struct Strings(StringTable);

impl Strings {
    fn new() -> Self {
        Strings(StringTable::new())
    }

    fn add(&mut self, text: &str) -> i64 {
        self.0.add(text) as i64
    }

    fn opt(&mut self, text: Option<&str>) -> i64 {
        text.map_or(0, |t| self.add(t))
    }
}

/// A function's identity: name, system name, file.
type FunctionKey = (String, Option<String>, Option<String>);

struct Builder {
    strings: Strings,
    mappings: Vec<pprof::Mapping>,
    mapping_index: FxHashMap<MappingKey, u64>,
    functions: Vec<pprof::Function>,
    function_index: FxHashMap<FunctionKey, u64>,
}

impl Builder {
    fn mapping(&mut self, f: &Frame) -> u64 {
        let Some(key) = f.mapping_key() else {
            return 0;
        };
        if let Some(&id) = self.mapping_index.get(&key) {
            return id;
        }
        let id = self.mappings.len() as u64 + 1;
        let mapping = pprof::Mapping {
            id,
            memory_start: f.image_start.unwrap_or(0) as u64,
            memory_limit: f.image_end.unwrap_or(0) as u64,
            file_offset: f.image_file_offset.unwrap_or(0) as u64,
            filename: self.strings.opt(f.image_path.as_deref()),
            build_id: self.strings.opt(f.build_id.as_deref()),
            ..Default::default()
        };
        self.mappings.push(mapping);
        self.mapping_index.insert(key, id);
        id
    }

    fn function(&mut self, name: &str, system_name: Option<&str>, file: Option<&str>) -> u64 {
        let key = (
            name.to_owned(),
            system_name.map(str::to_owned),
            file.map(str::to_owned),
        );
        if let Some(&id) = self.function_index.get(&key) {
            return id;
        }
        let id = self.functions.len() as u64 + 1;
        let function = pprof::Function {
            id,
            name: self.strings.add(name),
            system_name: self.strings.opt(system_name.or(Some(name))),
            filename: self.strings.opt(file),
            start_line: 0,
        };
        self.functions.push(function);
        self.function_index.insert(key, id);
        id
    }

    /// The location of a frame: its address and mapping, and its lines when it has a function.
    fn location(&mut self, id: u64, f: &Frame) -> pprof::Location {
        let mapping_id = self.mapping(f);
        let mut lines = Vec::new();
        if let Some(function) = &f.function {
            let function_id = self.function(function, f.system_name.as_deref(), f.file.as_deref());
            lines.push(pprof::Line {
                function_id,
                line: f.line.unwrap_or(0).into(),
                column: f.column.unwrap_or(0).into(),
            });
            for call in &f.inlined_into {
                let Some(caller) = &call.function else {
                    continue;
                };
                let function_id =
                    self.function(caller, call.system_name.as_deref(), call.file.as_deref());
                lines.push(pprof::Line {
                    function_id,
                    line: call.line.unwrap_or(0).into(),
                    column: call.column.unwrap_or(0).into(),
                });
            }
        } else if f.address.is_none() && f.name != "<unknown>" {
            // A frame known only by its name (no function field, no address) keeps its name.
            let function_id = self.function(&f.name, None, f.file.as_deref());
            lines.push(pprof::Line {
                function_id,
                line: f.line.unwrap_or(0).into(),
                column: 0,
            });
        }
        if mapping_id != 0 {
            let m = &mut self.mappings[mapping_id as usize - 1];
            m.has_functions |= f.function.is_some();
            m.has_filenames |= f.file.is_some();
            m.has_line_numbers |= f.line.is_some();
            m.has_inline_frames |= !f.inlined_into.is_empty();
        }
        pprof::Location {
            id,
            mapping_id,
            address: f.address.unwrap_or(0) as u64,
            line: lines,
            is_folded: false,
        }
    }
}

/// What becomes one pprof sample: a stack, thread, label set and trace link.
type SampleKey = (u32, u32, u32, u32);

/// The slice as a gzipped pprof profile; `pgo` keeps only what Go's PGO reads.
///
/// The profile is encoded a field at a time into blocks that a second thread compresses as
/// they come, so encoding and compressing overlap. A message's encoding is its fields'
/// encodings one after another, and prost writes fields in tag order, so the sample types,
/// then each sample, then everything after them, give the bytes of the whole profile.
pub(crate) fn write(slice: &Slice, pgo: bool, comment: &str) -> Result<Vec<u8>> {
    std::thread::scope(|scope| {
        let (send, blocks) = std::sync::mpsc::sync_channel::<Vec<u8>>(4);
        let gzip = scope.spawn(move || {
            // Go's runtime/pprof compresses at the fastest level too: a profile is written
            // once and read a few times.
            let mut gz = GzEncoder::new(Vec::new(), flate2::Compression::fast());
            for block in blocks {
                gz.write_all(&block)?;
            }
            gz.finish()
        });
        let mut out = Blocks {
            block: Vec::with_capacity(Blocks::SIZE),
            send,
        };
        let built = if pgo {
            build_pgo(slice).map(|profile| out.whole(profile))
        } else {
            build(slice, comment, &mut out);
            Ok(())
        };
        out.finish();
        let gzipped = gzip
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        built?;
        gzipped.map_err(write_error)
    })
}

/// Encoded bytes, sent on to be compressed a block at a time.
struct Blocks {
    block: Vec<u8>,
    send: std::sync::mpsc::SyncSender<Vec<u8>>,
}

impl Blocks {
    const SIZE: usize = 256 * 1024;

    /// Appends `message`'s encoding.
    fn push(&mut self, message: &pprof::Profile) {
        // Encoding into a Vec cannot run out of room.
        let _ = message.encode(&mut self.block);
        if self.block.len() >= Self::SIZE {
            let full = std::mem::replace(&mut self.block, Vec::with_capacity(Self::SIZE));
            // A closed channel means the compressor failed; its error is the one reported.
            let _ = self.send.send(full);
        }
    }

    /// Appends a whole profile, its samples a block at a time.
    fn whole(&mut self, mut profile: pprof::Profile) {
        let samples = std::mem::take(&mut profile.sample);
        let mut one = pprof::Profile {
            sample_type: std::mem::take(&mut profile.sample_type),
            ..Default::default()
        };
        self.push(&one);
        one.sample_type.clear();
        for chunk in samples.chunks(1024) {
            one.sample.clear();
            one.sample.extend_from_slice(chunk);
            self.push(&one);
        }
        // Everything after the samples.
        self.push(&profile);
    }

    fn finish(self) {
        if !self.block.is_empty() {
            let _ = self.send.send(self.block);
        }
    }
}

fn write_error(e: std::io::Error) -> Error {
    Error::new(ErrorKind::Export {
        format: "pprof",
        what: e.to_string(),
    })
    .with_source(e)
}

fn new_builder() -> Builder {
    Builder {
        strings: Strings::new(),
        mappings: Vec::new(),
        mapping_index: FxHashMap::default(),
        functions: Vec::new(),
        function_index: FxHashMap::default(),
    }
}

/// The locations of every frame a kept sample reaches: location id = frame index + 1 for
/// those, so a stack needs no lookup.
fn locations(b: &mut Builder, slice: &Slice, used: &[bool]) -> Vec<pprof::Location> {
    slice
        .frames
        .iter()
        .enumerate()
        .filter(|(i, _)| used[*i])
        .map(|(i, f)| b.location(i as u64 + 1, f))
        .collect()
}

/// Writes the profile of `slice` to `out`, each sample as it is made.
fn build(slice: &Slice, comment: &str, out: &mut Blocks) {
    let mut b = new_builder();
    let sample_type: Vec<pprof::ValueType> = slice
        .series
        .iter()
        .map(|s| pprof::ValueType {
            r#type: b.strings.add(&s.sample_type),
            unit: b.strings.add(&s.unit),
        })
        .collect();
    out.push(&pprof::Profile {
        sample_type,
        ..Default::default()
    });
    let n_series = slice.series.len();
    let main = slice.main_series().unwrap_or(0);
    let s = &slice.samples;
    let mut index: FxHashMap<SampleKey, usize> = FxHashMap::default();
    let mut keys: Vec<SampleKey> = Vec::new();
    let mut values: Vec<i64> = Vec::new();
    for i in 0..s.len() {
        let key = (s.node[i], s.thread[i], s.labels[i], s.link[i]);
        let next = keys.len();
        let at = *index.entry(key).or_insert(next);
        if at == next {
            keys.push(key);
            values.resize(values.len() + n_series, 0);
        }
        let v = &mut values[at * n_series + s.series[i] as usize];
        *v = v.saturating_add(s.value[i]);
    }
    let mut used = vec![false; slice.frames.len()];
    let labels = LabelKeys::new(&mut b.strings);
    // Each thread's labels, made once.
    let thread_labels: Vec<Vec<pprof::Label>> = slice
        .threads
        .iter()
        .map(|t| {
            let mut label = Vec::new();
            if let Some(tid) = t.tid {
                label.push(labels.num(labels.thread_id, tid));
            }
            if let Some(name) = &t.name {
                label.push(labels.text(labels.thread_name, b.strings.add(name)));
            }
            if let Some(pid) = slice.processes[t.process as usize].pid {
                label.push(labels.num(labels.pid, pid));
            }
            label
        })
        .collect();
    // One sample, refilled for each: no allocation per sample.
    let mut one = pprof::Profile {
        sample: vec![pprof::Sample::default()],
        ..Default::default()
    };
    // By stack, so that the samples of one stack on several threads walk it once.
    let mut order: Vec<u32> = (0..keys.len() as u32).collect();
    order.sort_unstable_by_key(|&k| keys[k as usize]);
    let mut walked = None;
    for k in order {
        let k = k as usize;
        let (node, thread, label_set, link) = keys[k];
        let sample = &mut one.sample[0];
        if walked != Some(node) {
            walked = Some(node);
            sample.location_id.clear();
            sample.location_id.extend(slice.stack(node).map(|f| {
                used[f as usize] = true;
                u64::from(f) + 1
            }));
        }
        sample.value.clear();
        sample
            .value
            .extend_from_slice(&values[k * n_series..(k + 1) * n_series]);
        sample.label.clear();
        sample
            .label
            .extend_from_slice(&thread_labels[thread as usize]);
        if link != NONE {
            let (trace, span) = &slice.links[link as usize];
            sample
                .label
                .push(labels.text(labels.trace_id, b.strings.add(trace)));
            sample
                .label
                .push(labels.text(labels.span_id, b.strings.add(span)));
        }
        if label_set != NONE {
            for (key, value) in &slice.label_sets[label_set as usize] {
                let key = b.strings.add(key);
                sample.label.push(labels.text(key, b.strings.add(value)));
            }
        }
        out.push(&one);
    }
    let location = locations(&mut b, slice, &used);
    let period_series = &slice.series[main];
    let period_type = Some(pprof::ValueType {
        r#type: b.strings.add(&period_series.sample_type),
        unit: b.strings.add(&period_series.unit),
    });
    let period = period_series.period.unwrap_or(0);
    let comment = vec![b.strings.add(comment)];
    let mut rest = assemble(
        b,
        slice,
        Vec::new(),
        Vec::new(),
        location,
        (period_type, period),
    );
    rest.comment = comment;
    out.push(&rest);
}

/// The profile of what a builder holds: its tables, the samples and their locations, the
/// slice's time span and the period.
fn assemble(
    b: Builder,
    slice: &Slice,
    sample_type: Vec<pprof::ValueType>,
    samples: Vec<pprof::Sample>,
    location: Vec<pprof::Location>,
    (period_type, period): (Option<pprof::ValueType>, i64),
) -> pprof::Profile {
    pprof::Profile {
        sample_type,
        sample: samples,
        mapping: b.mappings,
        location,
        function: b.functions,
        string_table: b.strings.0.table,
        time_nanos: slice.start_ns,
        duration_nanos: slice.end_ns.saturating_sub(slice.start_ns),
        period_type,
        period,
        default_sample_type: 0,
        ..Default::default()
    }
}

/// Interned label keys.
struct LabelKeys {
    thread_id: i64,
    thread_name: i64,
    pid: i64,
    trace_id: i64,
    span_id: i64,
}

impl LabelKeys {
    fn new(strings: &mut Strings) -> Self {
        LabelKeys {
            thread_id: strings.add("thread_id"),
            thread_name: strings.add("thread_name"),
            pid: strings.add("pid"),
            trace_id: strings.add("trace_id"),
            span_id: strings.add("span_id"),
        }
    }

    fn num(&self, key: i64, num: i64) -> pprof::Label {
        pprof::Label {
            key,
            num,
            ..Default::default()
        }
    }

    fn text(&self, key: i64, str: i64) -> pprof::Label {
        pprof::Label {
            key,
            str,
            ..Default::default()
        }
    }
}

/// Go's PGO reads the `samples/count` or `cpu/nanoseconds` sample type, functions and lines.
/// CPU samples count once each (a counted series' value is its count), and their CPU time
/// is `weight_ns`.
fn build_pgo(slice: &Slice) -> Result<pprof::Profile> {
    let cpu: Vec<bool> = slice.series.iter().map(|s| s.is_cpu()).collect();
    if !cpu.contains(&true) {
        return Err(ErrorKind::NoSamples {
            why: format!(
                "a PGO profile needs CPU samples, and the selection holds only {}",
                slice
                    .series
                    .iter()
                    .map(|s| format!("{} ({})", s.sample_type, s.kind))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
        .into());
    }
    let mut b = new_builder();
    let sample_type = vec![
        pprof::ValueType {
            r#type: b.strings.add("samples"),
            unit: b.strings.add("count"),
        },
        pprof::ValueType {
            r#type: b.strings.add("cpu"),
            unit: b.strings.add("nanoseconds"),
        },
    ];
    let s = &slice.samples;
    let mut by_node: FxHashMap<u32, (i64, i64)> = FxHashMap::default();
    for i in 0..s.len() {
        let series = s.series[i] as usize;
        if !cpu[series] || s.node[i] == NONE {
            continue;
        }
        let count = match slice.series[series].unit.as_str() {
            "count" | "samples" => s.value[i],
            _ => i64::from(s.rows_of(i)),
        };
        let e = by_node.entry(s.node[i]).or_default();
        e.0 = e.0.saturating_add(count);
        e.1 = e.1.saturating_add(s.weight_ns[i].unwrap_or(0));
    }
    let mut nodes: Vec<(u32, (i64, i64))> = by_node.into_iter().collect();
    nodes.sort_unstable_by_key(|(n, _)| *n);
    let mut used = vec![false; slice.frames.len()];
    let samples = nodes
        .iter()
        .map(|&(node, (count, ns))| pprof::Sample {
            location_id: slice
                .stack(node)
                .map(|f| {
                    used[f as usize] = true;
                    u64::from(f) + 1
                })
                .collect(),
            value: vec![count, ns],
            label: Vec::new(),
        })
        .collect();
    let location = locations(&mut b, slice, &used);
    let period_series = slice.series.iter().find(|s| s.is_cpu());
    let period = period_series
        .and_then(|s| {
            s.frequency_hz
                .filter(|&hz| hz > 0)
                .map(|hz| 1_000_000_000 / hz)
        })
        .unwrap_or(0);
    let period_type = Some(pprof::ValueType {
        r#type: b.strings.add("cpu"),
        unit: b.strings.add("nanoseconds"),
    });
    Ok(assemble(
        b,
        slice,
        sample_type,
        samples,
        location,
        (period_type, period),
    ))
}
