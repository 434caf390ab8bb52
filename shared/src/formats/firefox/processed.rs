//! The processed layout (profiler.firefox.com, samply): column tables per thread, `libs` and
//! (since version 56) the strings shared by the whole profile.

use std::borrow::Cow;

use serde::Deserialize;

use super::meta::{Id, Images, Lib, Meta, Targets, ThreadId, WeightType};
use super::threads::{add_samples, places, SampleColumns};
use super::{bounded, malformed, parse, within};
use crate::error::Result;
use crate::limits::Limits;
use crate::model::{Frame, FrameAddress, FrameHandle, FrameKind, Profile, StringHandle};

#[derive(Deserialize)]
struct Document {
    meta: Meta,
    #[serde(default)]
    libs: Vec<Lib>,
    #[serde(default)]
    threads: Vec<Thread>,
    shared: Option<Shared>,
}

/// What threads share since version 56 (strings) and 58 (sources).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Shared {
    #[serde(default)]
    string_array: Vec<String>,
    sources: Option<Sources>,
}

#[derive(Deserialize)]
struct Sources {
    #[serde(default)]
    filename: Vec<Option<u64>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Thread {
    name: Option<String>,
    process_name: Option<String>,
    process_type: Option<String>,
    pid: Option<Id>,
    tid: Option<Id>,
    samples: Samples,
    stack_table: StackTable,
    frame_table: FrameTable,
    func_table: FuncTable,
    resource_table: ResourceTable,
    /// The thread's strings before version 56; `stringTable` in some writers.
    #[serde(alias = "stringTable")]
    string_array: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Samples {
    #[serde(default)]
    stack: Vec<Option<u64>>,
    time: Option<Vec<f64>>,
    /// Since version 50, instead of `time`: ms since the previous sample.
    time_deltas: Option<Vec<f64>>,
    weight: Option<Vec<Option<f64>>>,
    weight_type: Option<String>,
    #[serde(rename = "threadCPUDelta")]
    thread_cpu_delta: Option<Vec<Option<f64>>>,
}

#[derive(Deserialize)]
struct StackTable {
    prefix: Vec<Option<u64>>,
    frame: Vec<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FrameTable {
    /// Relative to the function's library; -1 (or null) for none.
    #[serde(default)]
    address: Vec<Option<i64>>,
    #[serde(default)]
    category: Vec<Option<u64>>,
    func: Vec<u64>,
    #[serde(default)]
    line: Vec<Option<u32>>,
    #[serde(default)]
    column: Vec<Option<u32>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FuncTable {
    name: Vec<u64>,
    #[serde(rename = "isJS", default)]
    is_js: Vec<bool>,
    #[serde(default)]
    resource: Vec<Option<i64>>,
    /// Until version 57: a string index.
    #[serde(default)]
    file_name: Vec<Option<u64>>,
    /// Since version 58: an index into `shared.sources`.
    #[serde(default)]
    source: Vec<Option<u64>>,
    #[serde(default)]
    line_number: Vec<Option<u32>>,
    #[serde(default)]
    column_number: Vec<Option<u32>>,
}

#[derive(Deserialize)]
struct ResourceTable {
    #[serde(default)]
    lib: Vec<Option<u64>>,
}

/// Decodes a processed profile into `profile`.
pub(super) fn decode(json: &str, profile: &mut Profile, limits: &Limits) -> Result<()> {
    let doc: Document = parse(json)?;
    bounded("libs", doc.libs.len(), limits)?;
    let shared = doc.shared.as_ref();
    let shared_strings = shared.map(|s| s.string_array.as_slice());
    bounded(
        "shared.stringArray",
        shared_strings.map_or(0, <[_]>::len),
        limits,
    )?;
    let sources = shared
        .and_then(|s| s.sources.as_ref())
        .map(|s| s.filename.as_slice());
    let clock = doc.meta.clock(profile)?;
    doc.meta.describe(profile);
    let mut images = Images::new(&doc.libs);
    for (i, thread) in doc.threads.iter().enumerate() {
        let strings = match (&thread.string_array, shared_strings) {
            (Some(own), _) => own.as_slice(),
            (None, Some(shared)) => shared,
            (None, None) => &[],
        };
        let mut reader = ThreadReader {
            profile,
            meta: &doc.meta,
            strings: Strings::new(strings, limits)?,
            sources: sources.unwrap_or_default(),
            images: &mut images,
        };
        reader
            .thread(thread, limits, clock)
            .map_err(|e| within(e, format_args!("threads[{i}]")))?;
    }
    Ok(())
}

/// One thread's strings, each interned once when first used.
struct Strings<'s> {
    text: &'s [String],
    interned: Vec<Option<StringHandle>>,
}

impl<'s> Strings<'s> {
    fn new(text: &'s [String], limits: &Limits) -> Result<Self> {
        bounded("stringArray", text.len(), limits)?;
        Ok(Strings {
            text,
            interned: vec![None; text.len()],
        })
    }

    fn get(&mut self, index: u64, profile: &mut Profile) -> Result<StringHandle> {
        let i = usize::try_from(index).unwrap_or(usize::MAX);
        let text = self
            .text
            .get(i)
            .ok_or_else(|| malformed(format!("string {index} is not in the string array")))?;
        Ok(*self.interned[i].get_or_insert_with(|| profile.intern(text)))
    }

    fn text(&self, index: u64) -> Option<&'s str> {
        self.text
            .get(usize::try_from(index).ok()?)
            .map(String::as_str)
    }
}

struct ThreadReader<'r, 's> {
    profile: &'r mut Profile,
    meta: &'r Meta,
    strings: Strings<'s>,
    sources: &'r [Option<u64>],
    images: &'r mut Images<'s>,
}

impl ThreadReader<'_, '_> {
    fn thread(&mut self, t: &Thread, limits: &Limits, clock: super::meta::Clock) -> Result<()> {
        if t.samples.stack.is_empty() {
            // A thread that was never sampled (samply's `perf-exec` before the exec) would
            // only name the process before the thread that ran in it.
            self.profile.count("firefox_thread_without_samples");
            return Ok(());
        }
        let frames = self.frames(t, limits)?;
        bounded("stackTable", t.stack_table.frame.len(), limits)?;
        let places = places(
            &t.stack_table.prefix,
            &t.stack_table.frame,
            &frames,
            self.profile,
            limits.max_stack_depth,
        )?;
        let samples = &t.samples;
        if samples.stack.len() as u64 > limits.max_samples {
            return Err(crate::limits::exceeded("max_samples", limits.max_samples));
        }
        let columns = SampleColumns {
            stack: Cow::Borrowed(&samples.stack),
            time_ms: sample_times(samples)?,
            weight: samples.weight.as_deref().map(Cow::Borrowed),
            cpu_delta: samples.thread_cpu_delta.as_deref().map(Cow::Borrowed),
        };
        let weight_type = WeightType::parse(samples.weight_type.as_deref())?;
        let targets = Targets::new(
            self.profile,
            self.meta,
            weight_type,
            columns.cpu_delta.is_some(),
        );
        let id = ThreadId {
            pid: t.pid.as_ref(),
            tid: t.tid.as_ref(),
            name: t.name.as_deref(),
            process_name: t.process_name.as_deref(),
            process_type: t.process_type.as_deref(),
        };
        let thread = id.add(self.profile);
        add_samples(self.profile, thread, &columns, &places, targets, clock)
    }

    /// The model frame of every frameTable row.
    fn frames(&mut self, t: &Thread, limits: &Limits) -> Result<Vec<FrameHandle>> {
        let n = t.frame_table.func.len();
        bounded("frameTable", n, limits)?;
        bounded("funcTable", t.func_table.name.len(), limits)?;
        (0..n)
            .map(|row| {
                self.frame(t, row)
                    .map_err(|e| within(e, format_args!("frameTable row {row}")))
            })
            .collect()
    }

    fn frame(&mut self, t: &Thread, row: usize) -> Result<FrameHandle> {
        let (ft, funcs) = (&t.frame_table, &t.func_table);
        let func = usize::try_from(ft.func[row]).unwrap_or(usize::MAX);
        let name = *funcs
            .name
            .get(func)
            .ok_or_else(|| malformed(format!("function {func} is not in the funcTable")))?;
        let is_js = funcs.is_js.get(func).copied().unwrap_or(false);
        let lib = cell(&funcs.resource, func)
            .and_then(|r| usize::try_from(r).ok())
            .and_then(|r| cell(&t.resource_table.lib, r))
            .and_then(|l| usize::try_from(l).ok());
        let kernel = self.meta.is_kernel(cell(&ft.category, row));
        let mut frame = Frame::new(match (kernel, is_js, lib) {
            (true, _, _) => FrameKind::Kernel,
            (false, true, _) => FrameKind::JavaScript,
            (false, false, Some(_)) => FrameKind::Native,
            (false, false, None) => FrameKind::Other(self.profile.intern("label")),
        });
        let address = cell(&ft.address, row).and_then(|a| u64::try_from(a).ok());
        if let (Some(lib), Some(address)) = (lib, address) {
            frame.image = self.images.get(lib, self.profile);
            if frame.image.is_none() {
                return Err(malformed(format!("library {lib} is not in libs")));
            }
            frame.address = Some(FrameAddress::BaseRelative(address));
        }
        // An unsymbolicated profile names a native function by its address: that is no name,
        // so that symbolization can give it one.
        let unnamed =
            frame.address.is_some() && self.strings.text(name).is_some_and(is_hex_address);
        if !unnamed {
            frame.function = Some(self.strings.get(name, self.profile)?);
        }
        if is_js {
            frame.file = self.file(funcs, func)?;
        }
        frame.line = cell(&ft.line, row).or_else(|| cell(&funcs.line_number, func));
        frame.column = cell(&ft.column, row).or_else(|| cell(&funcs.column_number, func));
        Ok(self.profile.add_frame(frame))
    }

    /// A JavaScript function's file: `fileName` until version 57, `source` since 58.
    fn file(&mut self, funcs: &FuncTable, func: usize) -> Result<Option<StringHandle>> {
        let index = cell(&funcs.file_name, func).or_else(|| {
            cell(&funcs.source, func).and_then(|s| cell(self.sources, usize::try_from(s).ok()?))
        });
        index.map(|i| self.strings.get(i, self.profile)).transpose()
    }
}

/// A column's value at `row`: `None` when the column is shorter or the cell is null.
fn cell<T: Copy>(column: &[Option<T>], row: usize) -> Option<T> {
    column.get(row).copied().flatten()
}

/// Whether a function name is only an address (`0x1a2b`), as unsymbolicated profiles have.
pub(super) fn is_hex_address(name: &str) -> bool {
    name.strip_prefix("0x")
        .is_some_and(|hex| !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The sample times in ms: `time`, or the running sum of `timeDeltas`.
fn sample_times(samples: &Samples) -> Result<Cow<'_, [f64]>> {
    match (&samples.time, &samples.time_deltas) {
        (Some(time), _) => Ok(Cow::Borrowed(time)),
        (None, Some(deltas)) => Ok(deltas
            .iter()
            .scan(0.0, |t, d| {
                *t += d;
                Some(*t)
            })
            .collect()),
        (None, None) => Err(malformed("samples has neither time nor timeDeltas".into())),
    }
}
