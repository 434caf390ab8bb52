//! The gecko layout, as Firefox writes it: per thread `{schema, data}` tables and a
//! `stringTable`, frames named by a location string, libraries with their mapped ranges, and
//! each sub-process a gecko profile of its own in `processes`.

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::cells::{Cell, Table};
use super::meta::{Clock, Id, Images, Lib, Meta, Targets, ThreadId, WeightType};
use super::processed::is_hex_address;
use super::threads::{add_samples, places, SampleColumns};
use super::{bounded, malformed, parse, within};
use crate::error::Result;
use crate::limits::Limits;
use crate::model::{Frame, FrameAddress, FrameHandle, FrameKind, Profile};

#[derive(Deserialize)]
struct Document<'a> {
    meta: Meta,
    #[serde(default)]
    libs: Vec<Lib>,
    #[serde(default)]
    threads: Vec<Thread>,
    #[serde(default, borrow)]
    processes: Vec<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Thread {
    name: Option<String>,
    process_name: Option<String>,
    process_type: Option<String>,
    pid: Option<Id>,
    tid: Option<Id>,
    #[serde(default)]
    samples: Table,
    #[serde(default)]
    stack_table: Table,
    #[serde(default)]
    frame_table: Table,
    #[serde(default)]
    string_table: Vec<String>,
    markers: Option<Markers>,
}

/// Markers are not samples: only counted.
#[derive(Deserialize)]
struct Markers {
    #[serde(default)]
    data: Vec<IgnoredAny>,
}

/// Decodes a gecko profile and, depth first, the sub-process profiles it holds.
pub(super) fn decode(json: &str, profile: &mut Profile, limits: &Limits) -> Result<()> {
    let doc: Document<'_> = parse(json)?;
    bounded("libs", doc.libs.len(), limits)?;
    let clock = doc.meta.clock(profile)?;
    doc.meta.describe(profile);
    let mut libs = Libs::new(&doc.libs);
    for (i, thread) in doc.threads.iter().enumerate() {
        read_thread(profile, &doc.meta, &mut libs, thread, limits, clock)
            .map_err(|e| within(e, format_args!("threads[{i}]")))?;
    }
    for (i, process) in doc.processes.iter().enumerate() {
        decode(process.get(), profile, limits)
            .map_err(|e| within(e, format_args!("processes[{i}]")))?;
    }
    Ok(())
}

fn read_thread(
    profile: &mut Profile,
    meta: &Meta,
    libs: &mut Libs<'_>,
    t: &Thread,
    limits: &Limits,
    clock: Clock,
) -> Result<()> {
    if t.samples.data.is_empty() {
        profile.count("firefox_thread_without_samples");
        return Ok(());
    }
    bounded("stringTable", t.string_table.len(), limits)?;
    bounded("frameTable", t.frame_table.data.len(), limits)?;
    bounded("stackTable", t.stack_table.data.len(), limits)?;
    if t.samples.data.len() as u64 > limits.max_samples {
        return Err(crate::limits::exceeded("max_samples", limits.max_samples));
    }
    if let Some(markers) = &t.markers {
        *profile.stats.entry("firefox_markers_skipped").or_default() += markers.data.len() as u64;
    }
    let frames = (0..t.frame_table.data.len())
        .map(|row| {
            frame(profile, meta, libs, t, row)
                .map_err(|e| within(e, format_args!("frameTable row {row}")))
        })
        .collect::<Result<Vec<_>>>()?;
    let (prefix, frame) = stack_columns(&t.stack_table)?;
    let places = places(&prefix, &frame, &frames, profile, limits.max_stack_depth)?;
    let columns = sample_columns(&t.samples)?;
    let targets = Targets::new(
        profile,
        meta,
        WeightType::Samples,
        columns.cpu_delta.is_some(),
    );
    let id = ThreadId {
        pid: t.pid.as_ref(),
        tid: t.tid.as_ref(),
        name: t.name.as_deref(),
        process_name: t.process_name.as_deref(),
        process_type: t.process_type.as_deref(),
    };
    let thread = id.add(profile);
    add_samples(profile, thread, &columns, &places, targets, clock)
}

fn stack_columns(table: &Table) -> Result<(Vec<Option<u64>>, Vec<u64>)> {
    let (prefix, frame) = (table.column("prefix"), table.column("frame"));
    let mut prefixes = Vec::with_capacity(table.data.len());
    let mut frames = Vec::with_capacity(table.data.len());
    for (i, row) in table.data.iter().enumerate() {
        prefixes.push(prefix.of(row).index());
        frames.push(
            frame
                .of(row)
                .index()
                .ok_or_else(|| malformed(format!("stackTable row {i} has no frame")))?,
        );
    }
    Ok((prefixes, frames))
}

fn sample_columns(table: &Table) -> Result<SampleColumns<'static>> {
    let (stack, time) = (table.column("stack"), table.column("time"));
    let (weight, cpu) = (table.column("weight"), table.column("threadCPUDelta"));
    let optional = |column: super::cells::Column| {
        column.exists().then(|| {
            table
                .data
                .iter()
                .map(|row| column.of(row).number())
                .collect()
        })
    };
    let times = table
        .data
        .iter()
        .enumerate()
        .map(|(i, row)| {
            time.of(row)
                .number()
                .ok_or_else(|| malformed(format!("samples row {i} has no time")))
        })
        .collect::<Result<_>>()?;
    Ok(SampleColumns {
        stack: table.data.iter().map(|row| stack.of(row).index()).collect(),
        time_ms: times,
        weight: optional(weight),
        cpu_delta: optional(cpu),
    })
}

/// A frameTable row's frame, from its location string: `0x…` is a native address in one of
/// `libs`, `name (url:line:column)` is JavaScript, anything else a label Firefox pushed.
fn frame(
    profile: &mut Profile,
    meta: &Meta,
    libs: &mut Libs<'_>,
    t: &Thread,
    row: usize,
) -> Result<FrameHandle> {
    let table = &t.frame_table;
    let cells = &table.data[row];
    let index = table.column("location").of(cells).index();
    let location = index
        .and_then(|i| t.string_table.get(usize::try_from(i).ok()?))
        .ok_or_else(|| malformed("its location is not in the stringTable".into()))?;
    let kernel = meta.is_kernel(table.column("category").of(cells).index());
    let line = line_of(table.column("line").of(cells));
    let column = line_of(table.column("column").of(cells));
    let mut frame = if let Some(address) = hex_address(location) {
        let mut frame = Frame::new(FrameKind::Native);
        frame.address = Some(FrameAddress::Absolute(address));
        frame.image = libs.containing(address, profile);
        if frame.image.is_none() {
            profile.count("firefox_address_outside_libs");
        }
        frame
    } else if let Some(js) = JsLocation::parse(location) {
        let mut frame = Frame::new(FrameKind::JavaScript);
        frame.function = Some(profile.intern(if js.name.is_empty() {
            "(anonymous)"
        } else {
            js.name
        }));
        frame.file = Some(profile.intern(js.url));
        frame.line = line.or(js.line);
        frame.column = column.or(js.column);
        frame
    } else {
        let mut frame = Frame::new(FrameKind::Other(profile.intern("label")));
        frame.function = Some(profile.intern(location));
        frame.line = line;
        frame
    };
    if kernel {
        frame.kind = FrameKind::Kernel;
    }
    Ok(profile.add_frame(frame))
}

fn line_of(cell: &Cell) -> Option<u32> {
    cell.index()
        .and_then(|n| u32::try_from(n).ok())
        .filter(|&n| n > 0)
}

fn hex_address(location: &str) -> Option<u64> {
    is_hex_address(location)
        .then(|| u64::from_str_radix(&location[2..], 16).ok())
        .flatten()
}

/// A JavaScript frame's location, `name (url:line)` or `name (url:line:column)`.
#[derive(Debug, PartialEq)]
struct JsLocation<'a> {
    name: &'a str,
    url: &'a str,
    line: Option<u32>,
    column: Option<u32>,
}

impl<'a> JsLocation<'a> {
    fn parse(location: &'a str) -> Option<Self> {
        let inner = location.strip_suffix(')')?;
        let open = inner.rfind(" (")?;
        let (name, place) = (&inner[..open], &inner[open + 2..]);
        let (rest, last) = place.rsplit_once(':')?;
        let last: u32 = last.parse().ok()?;
        let (url, line, column) = match rest.rsplit_once(':') {
            Some((url, line)) if !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit()) => {
                (url, line.parse().ok(), Some(last))
            }
            _ => (rest, Some(last), None),
        };
        Some(JsLocation {
            name,
            url,
            line: line.filter(|&n| n > 0),
            column: column.filter(|&n| n > 0),
        })
    }
}

/// The libraries of one process by where they are mapped, for native addresses.
struct Libs<'a> {
    images: Images<'a>,
    /// Indexes into `libs`, by start address.
    by_start: Vec<usize>,
}

impl<'a> Libs<'a> {
    fn new(libs: &'a [Lib]) -> Self {
        let mut by_start: Vec<usize> = (0..libs.len()).collect();
        by_start.sort_by_key(|&i| libs[i].start);
        Libs {
            images: Images::new(libs),
            by_start,
        }
    }

    fn containing(
        &mut self,
        address: u64,
        profile: &mut Profile,
    ) -> Option<crate::model::ImageHandle> {
        let libs = self.images.libs();
        let after = self.by_start.partition_point(|&i| libs[i].start <= address);
        let index = *self.by_start.get(after.checked_sub(1)?)?;
        (address < libs[index].end)
            .then(|| self.images.get(index, profile))
            .flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::JsLocation;

    #[test]
    fn reads_javascript_locations() {
        let js = JsLocation::parse("o (file:///a/b.js:1:87)").unwrap();
        assert_eq!(
            (js.name, js.url, js.line, js.column),
            ("o", "file:///a/b.js", Some(1), Some(87))
        );
        let js = JsLocation::parse("emit (resource://x.js -> resource://y.js:150)").unwrap();
        assert_eq!(
            (js.url, js.line, js.column),
            ("resource://x.js -> resource://y.js", Some(150), None)
        );
        assert_eq!(JsLocation::parse("js::RunScript"), None);
        assert_eq!(JsLocation::parse("Paint (layout)"), None);
    }
}
