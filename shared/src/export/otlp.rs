//! OTLP v1.10 (`ExportProfilesServiceRequest`), binary protobuf or OTLP/JSON, written with
//! the project's prost types; proflake's own OTLP decoder reads either back.
//!
//! - One dictionary for the whole request: every string, mapping, function, location, stack,
//!   link and attribute once, each table with its zero value at index 0.
//! - One `ResourceProfiles` per process (`service.name`, `service.version`,
//!   `deployment.environment.name`, `host.name`, `process.pid`, `process.executable.name`,
//!   then the profiles' own attributes), one `ScopeProfiles` (`proflake`), and one `Profile`
//!   per series with samples in that process: its sample type, and the period as the series
//!   gives it (`period_type` in the sample's own unit, else a sampling interval in
//!   nanoseconds from the frequency).
//! - Samples of one profile with the same stack, thread, labels and trace link are one OTLP
//!   sample. Timed rows give index-aligned `values` and `timestamps_unix_nano`, one entry
//!   per row; rows without a time (aggregated) are summed into a sample of one value.
//! - Sample attributes: `thread.id` (int), `thread.name`, and each label as a string. A label
//!   whose key the thread already sets is left out (attribute keys are unique per sample).
//! - Locations: mapping, address, a `profile.frame.type` attribute (the eBPF profiler's
//!   words), and lines when the frame has a function: its own first, then the functions it
//!   was inlined into, outward. A frame known only by its name gets a function of that name.
//! - Mappings: the image's address range, file offset, path and build ID
//!   (`process.executable.build_id.gnu`, hex).
//! - JSON: protobuf's JSON mapping as OTLP specifies it (lowerCamelCase, 64-bit integers as
//!   strings, `traceId`/`spanId` as hex, other bytes base64), written from the message.

use proflake_proto::otlp::opentelemetry::proto::collector::profiles::v1development::ExportProfilesServiceRequest;
use proflake_proto::otlp::opentelemetry::proto::common::v1::{
    any_value, AnyValue, InstrumentationScope, KeyValue,
};
use proflake_proto::otlp::opentelemetry::proto::profiles::v1development::{
    Function, KeyValueAndUnit, Line, Link, Location, Mapping, Profile, ProfilesDictionary,
    ResourceProfiles, Sample, ScopeProfiles, Stack, ValueType,
};
use proflake_proto::otlp::opentelemetry::proto::resource::v1::Resource;
use prost::Message;
use rustc_hash::FxHashMap;

use super::slice::{Frame, MappingKey, Process, Slice, NONE};
use super::strings::StringTable;
use crate::error::{ErrorKind, Result};

const THREAD_ID: &str = "thread.id";
const THREAD_NAME: &str = "thread.name";
const FRAME_TYPE: &str = "profile.frame.type";
const BUILD_ID_GNU: &str = "process.executable.build_id.gnu";

/// The slice as an OTLP request: binary protobuf, or OTLP/JSON when `json`.
pub(crate) fn write(slice: &Slice, json: bool) -> Result<Vec<u8>> {
    let request = build(slice)?;
    Ok(if json {
        json::request(&request)
    } else {
        request.encode_to_vec()
    })
}

fn too_many(table: &str) -> crate::error::Error {
    ErrorKind::Export {
        format: "otlp",
        what: format!("the {table} has more entries than OTLP's int32 indexes reach"),
    }
    .into()
}

/// The next index of a table of `len` entries.
fn next_index(len: usize, table: &str) -> Result<i32> {
    i32::try_from(len).map_err(|_| too_many(table))
}

/// An attribute value, by what identifies it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum AttrValue {
    Int(i64),
    /// A string, by its index in the string table.
    Str(i32),
}

/// What identifies a location: mapping, address, lines (function, line, column), attributes.
type LocationKey = (i32, u64, Vec<(i32, i64, i64)>, Vec<i32>);

/// The request's dictionary, under construction, with an index of each table.
struct Dictionary {
    tables: ProfilesDictionary,
    strings: StringTable,
    attributes: FxHashMap<(i32, AttrValue), i32>,
    functions: FxHashMap<(i32, i32, i32), i32>,
    mappings: FxHashMap<MappingKey, i32>,
    locations: FxHashMap<LocationKey, i32>,
    stacks: FxHashMap<Vec<i32>, i32>,
    /// The location of each slice frame, 0 until made.
    frame_location: Vec<i32>,
    /// The stack of each call-tree node, 0 until made.
    node_stack: Vec<i32>,
    /// The link of each slice link, `None` until made (0: the ids are not valid hex).
    link: Vec<Option<i32>>,
    /// The attribute indices of each thread and label set, once made.
    thread_attrs: Vec<Option<Vec<i32>>>,
    label_attrs: Vec<Option<Vec<(i32, i32)>>>,
    /// Interned keys.
    thread_id: i32,
    thread_name: i32,
    frame_type: i32,
    build_id: i32,
}

impl Dictionary {
    fn new(slice: &Slice) -> Result<Self> {
        let mut d = Dictionary {
            tables: ProfilesDictionary {
                mapping_table: vec![Mapping::default()],
                location_table: vec![Location::default()],
                function_table: vec![Function::default()],
                link_table: vec![Link::default()],
                string_table: Vec::new(),
                attribute_table: vec![KeyValueAndUnit::default()],
                stack_table: vec![Stack::default()],
            },
            strings: StringTable::new(),
            attributes: FxHashMap::default(),
            functions: FxHashMap::default(),
            mappings: FxHashMap::default(),
            locations: FxHashMap::default(),
            stacks: FxHashMap::default(),
            frame_location: vec![0; slice.frames.len()],
            node_stack: vec![0; slice.nodes.len()],
            link: vec![None; slice.links.len()],
            thread_attrs: vec![None; slice.threads.len()],
            label_attrs: vec![None; slice.label_sets.len()],
            thread_id: 0,
            thread_name: 0,
            frame_type: 0,
            build_id: 0,
        };
        d.thread_id = d.string(THREAD_ID)?;
        d.thread_name = d.string(THREAD_NAME)?;
        d.frame_type = d.string(FRAME_TYPE)?;
        d.build_id = d.string(BUILD_ID_GNU)?;
        Ok(d)
    }

    fn string(&mut self, text: &str) -> Result<i32> {
        next_index(self.strings.add(text), "string table")
    }

    fn opt_string(&mut self, text: Option<&str>) -> Result<i32> {
        text.map_or(Ok(0), |t| self.string(t))
    }

    fn attribute(&mut self, key: i32, value: AttrValue) -> Result<i32> {
        if let Some(&i) = self.attributes.get(&(key, value)) {
            return Ok(i);
        }
        let i = next_index(self.tables.attribute_table.len(), "attribute table")?;
        let any = match value {
            AttrValue::Int(n) => any_value::Value::IntValue(n),
            AttrValue::Str(s) => any_value::Value::StringValue(
                String::from_utf8_lossy(&self.strings.table[s as usize]).into_owned(),
            ),
        };
        self.tables.attribute_table.push(KeyValueAndUnit {
            key_strindex: key,
            value: Some(AnyValue { value: Some(any) }),
            unit_strindex: 0,
        });
        self.attributes.insert((key, value), i);
        Ok(i)
    }

    fn text_attribute(&mut self, key: i32, value: &str) -> Result<i32> {
        let value = self.string(value)?;
        self.attribute(key, AttrValue::Str(value))
    }

    fn function(
        &mut self,
        name: &str,
        system_name: Option<&str>,
        file: Option<&str>,
    ) -> Result<i32> {
        let key = (
            self.string(name)?,
            self.opt_string(system_name)?,
            self.opt_string(file)?,
        );
        if let Some(&i) = self.functions.get(&key) {
            return Ok(i);
        }
        let i = next_index(self.tables.function_table.len(), "function table")?;
        self.tables.function_table.push(Function {
            name_strindex: key.0,
            system_name_strindex: key.1,
            filename_strindex: key.2,
            start_line: 0,
        });
        self.functions.insert(key, i);
        Ok(i)
    }

    fn mapping(&mut self, f: &Frame) -> Result<i32> {
        let Some(key) = f.mapping_key() else {
            return Ok(0);
        };
        if let Some(&i) = self.mappings.get(&key) {
            return Ok(i);
        }
        let mut attribute_indices = Vec::new();
        if let Some(id) = f.build_id.as_deref().filter(|id| !id.is_empty()) {
            // The decoder reads the attribute as hex bytes. An ID that is not hex (a breakpad
            // module ID, already text) goes as the hex of its text, which it reads back as text.
            let hex_id = if id.len() % 2 == 0 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
                id.to_ascii_lowercase()
            } else {
                hex::encode(id)
            };
            let key = self.build_id;
            attribute_indices.push(self.text_attribute(key, &hex_id)?);
        }
        let i = next_index(self.tables.mapping_table.len(), "mapping table")?;
        let mapping = Mapping {
            memory_start: f.image_start.unwrap_or(0) as u64,
            memory_limit: f.image_end.unwrap_or(0) as u64,
            file_offset: f.image_file_offset.unwrap_or(0) as u64,
            filename_strindex: self.opt_string(f.image_path.as_deref())?,
            attribute_indices,
        };
        self.tables.mapping_table.push(mapping);
        self.mappings.insert(key, i);
        Ok(i)
    }

    /// The location of slice frame `index`.
    fn location(&mut self, slice: &Slice, index: u32) -> Result<i32> {
        let done = self.frame_location[index as usize];
        if done != 0 {
            return Ok(done);
        }
        let f = &slice.frames[index as usize];
        let mapping_index = self.mapping(f)?;
        let mut lines = Vec::new();
        if let Some(function) = &f.function {
            let fi = self.function(function, f.system_name.as_deref(), f.file.as_deref())?;
            lines.push((fi, line_number(f.line), line_number(f.column)));
            for call in &f.inlined_into {
                let Some(caller) = &call.function else {
                    continue;
                };
                let fi =
                    self.function(caller, call.system_name.as_deref(), call.file.as_deref())?;
                lines.push((fi, line_number(call.line), line_number(call.column)));
            }
        } else if f.address.is_none() && f.name != "<unknown>" {
            // A frame known only by its name keeps its name.
            let fi = self.function(&f.name, None, f.file.as_deref())?;
            lines.push((fi, line_number(f.line), 0));
        }
        let mut attribute_indices = Vec::new();
        if let Some(word) = frame_type(&f.kind) {
            let key = self.frame_type;
            attribute_indices.push(self.text_attribute(key, word)?);
        }
        let key = (
            mapping_index,
            f.address.unwrap_or(0) as u64,
            lines,
            attribute_indices,
        );
        let i = match self.locations.get(&key) {
            Some(&i) => i,
            None => {
                let i = next_index(self.tables.location_table.len(), "location table")?;
                self.tables.location_table.push(Location {
                    mapping_index: key.0,
                    address: key.1,
                    lines: key
                        .2
                        .iter()
                        .map(|&(function_index, line, column)| Line {
                            function_index,
                            line,
                            column,
                        })
                        .collect(),
                    attribute_indices: key.3.clone(),
                });
                self.locations.insert(key, i);
                i
            }
        };
        self.frame_location[index as usize] = i;
        Ok(i)
    }

    /// The stack of call-tree node `node` (0, the empty stack, for [`NONE`]).
    fn stack(&mut self, slice: &Slice, node: u32) -> Result<i32> {
        if node == NONE {
            return Ok(0);
        }
        let done = self.node_stack[node as usize];
        if done != 0 {
            return Ok(done);
        }
        // Leaf first, as OTLP lists a stack.
        let locations = slice
            .stack(node)
            .map(|f| self.location(slice, f))
            .collect::<Result<Vec<i32>>>()?;
        let i = match self.stacks.get(&locations) {
            Some(&i) => i,
            None => {
                let i = next_index(self.tables.stack_table.len(), "stack table")?;
                self.tables.stack_table.push(Stack {
                    location_indices: locations.clone(),
                });
                self.stacks.insert(locations, i);
                i
            }
        };
        self.node_stack[node as usize] = i;
        Ok(i)
    }

    /// The link of slice link `link`; 0 without one, or when its ids are not 16 and 8 bytes
    /// of hex.
    fn link(&mut self, slice: &Slice, link: u32) -> Result<i32> {
        if link == NONE {
            return Ok(0);
        }
        if let Some(done) = self.link[link as usize] {
            return Ok(done);
        }
        let (trace, span) = &slice.links[link as usize];
        let i = match (hex::decode(trace), hex::decode(span)) {
            (Ok(trace_id), Ok(span_id)) if trace_id.len() == 16 && span_id.len() == 8 => {
                let i = next_index(self.tables.link_table.len(), "link table")?;
                self.tables.link_table.push(Link { trace_id, span_id });
                i
            }
            _ => 0,
        };
        self.link[link as usize] = Some(i);
        Ok(i)
    }

    /// A sample's attributes: its thread's, then its labels (keys the thread set left out).
    fn sample_attributes(&mut self, slice: &Slice, thread: u32, labels: u32) -> Result<Vec<i32>> {
        let t = thread as usize;
        if self.thread_attrs[t].is_none() {
            let th = &slice.threads[t];
            let mut attrs = Vec::with_capacity(2);
            if let Some(tid) = th.tid {
                attrs.push(self.attribute(self.thread_id, AttrValue::Int(tid))?);
            }
            if let Some(name) = &th.name {
                attrs.push(self.text_attribute(self.thread_name, name)?);
            }
            self.thread_attrs[t] = Some(attrs);
        }
        let mut out = self.thread_attrs[t].clone().unwrap_or_default();
        if labels == NONE {
            return Ok(out);
        }
        let l = labels as usize;
        if self.label_attrs[l].is_none() {
            let set = &slice.label_sets[l];
            let mut attrs = Vec::with_capacity(set.len());
            for (key, value) in set {
                let key = self.string(key)?;
                attrs.push((key, self.text_attribute(key, value)?));
            }
            self.label_attrs[l] = Some(attrs);
        }
        let th = &slice.threads[t];
        let taken = |key: i32| {
            (key == self.thread_id && th.tid.is_some())
                || (key == self.thread_name && th.name.is_some())
        };
        if let Some(attrs) = &self.label_attrs[l] {
            out.extend(attrs.iter().filter(|(k, _)| !taken(*k)).map(|&(_, a)| a));
        }
        Ok(out)
    }
}

/// A line or column as OTLP keeps it: 1-based, 0 for unknown.
fn line_number(n: Option<i32>) -> i64 {
    n.map_or(0, i64::from).max(0)
}

/// The eBPF profiler's `profile.frame.type` word for a frame kind; `None` when unknown.
fn frame_type(kind: &str) -> Option<&str> {
    match kind {
        "" | "unknown" => None,
        "python" => Some("cpython"),
        "javascript" => Some("v8js"),
        other => Some(other),
    }
}

/// What becomes one OTLP sample within a profile: profile, node, thread, labels, link, and
/// whether the rows are timed.
type SampleKey = (u32, u32, u32, u32, u32, bool);

/// One OTLP profile under construction: a series' samples in one process.
struct ProfileBuild {
    series: u32,
    samples: Vec<Sample>,
    /// The first and last time its samples cover (ns), `i64::MAX`/`MIN` when none.
    first: i64,
    last: i64,
}

fn build(slice: &Slice) -> Result<ExportProfilesServiceRequest> {
    let mut d = Dictionary::new(slice)?;
    let n_series = slice.series.len();
    // The profile of each (process, series), NONE until a sample needs it.
    let mut profile_of = vec![NONE; slice.processes.len() * n_series];
    let mut profiles: Vec<ProfileBuild> = Vec::new();
    let mut index: FxHashMap<SampleKey, u32> = FxHashMap::default();
    let s = &slice.samples;
    for i in 0..s.len() {
        let (series, thread) = (s.series[i], s.thread[i]);
        let process = slice.threads[thread as usize].process as usize;
        let slot = &mut profile_of[process * n_series + series as usize];
        if *slot == NONE {
            *slot = profiles.len() as u32;
            profiles.push(ProfileBuild {
                series,
                samples: Vec::new(),
                first: i64::MAX,
                last: i64::MIN,
            });
        }
        let p = *slot;
        let time = s.time_ns[i];
        let key = (p, s.node[i], thread, s.labels[i], s.link[i], time.is_some());
        let profile = &mut profiles[p as usize];
        let at = match index.get(&key) {
            Some(&at) => at as usize,
            None => {
                let at = profile.samples.len();
                profile.samples.push(Sample {
                    stack_index: d.stack(slice, s.node[i])?,
                    attribute_indices: d.sample_attributes(slice, thread, s.labels[i])?,
                    link_index: d.link(slice, s.link[i])?,
                    values: Vec::new(),
                    timestamps_unix_nano: Vec::new(),
                });
                index.insert(key, at as u32);
                at
            }
        };
        let sample = &mut profile.samples[at];
        match time {
            Some(t) => {
                sample.values.push(s.value[i]);
                sample.timestamps_unix_nano.push(t.max(0) as u64);
                profile.first = profile.first.min(t);
                profile.last = profile.last.max(t);
            }
            None => {
                match sample.values.first_mut() {
                    Some(v) => *v = v.saturating_add(s.value[i]),
                    None => sample.values.push(s.value[i]),
                }
                // Aggregated rows cover the slice's time.
                profile.first = profile.first.min(slice.start_ns);
                profile.last = profile.last.max(slice.end_ns);
            }
        }
    }
    let mut taken: Vec<Option<ProfileBuild>> = profiles.into_iter().map(Some).collect();
    let mut resource_profiles = Vec::new();
    for (pi, process) in slice.processes.iter().enumerate() {
        let mut out = Vec::new();
        for series in 0..n_series {
            let p = profile_of[pi * n_series + series];
            if let Some(profile) = (p != NONE).then(|| taken[p as usize].take()).flatten() {
                out.push(otlp_profile(slice, &mut d, profile)?);
            }
        }
        if out.is_empty() {
            continue;
        }
        resource_profiles.push(ResourceProfiles {
            resource: Some(resource(process)),
            scope_profiles: vec![ScopeProfiles {
                scope: Some(InstrumentationScope {
                    name: "proflake".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    attributes: Vec::new(),
                    dropped_attributes_count: 0,
                }),
                profiles: out,
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        });
    }
    let mut dictionary = d.tables;
    dictionary.string_table = d.strings.table;
    Ok(ExportProfilesServiceRequest {
        resource_profiles,
        dictionary: Some(dictionary),
    })
}

fn otlp_profile(slice: &Slice, d: &mut Dictionary, p: ProfileBuild) -> Result<Profile> {
    let series = &slice.series[p.series as usize];
    let sample_type = Some(ValueType {
        type_strindex: d.string(&series.sample_type)?,
        unit_strindex: d.string(&series.unit)?,
    });
    let (period_type, period) = match (series.period, series.frequency_hz) {
        (Some(period), _) => (sample_type, period),
        (None, Some(hz)) if hz > 0 => {
            let word = if series.kind == "wall_time" {
                "wall"
            } else {
                "cpu"
            };
            let vt = ValueType {
                type_strindex: d.string(word)?,
                unit_strindex: d.string("nanoseconds")?,
            };
            (Some(vt), 1_000_000_000 / hz)
        }
        _ => (None, 0),
    };
    let (start, duration) = if p.first <= p.last {
        let start = p.first.max(0);
        // Half-open: the last sample lies before start + duration.
        (start, p.last.saturating_sub(start).saturating_add(1))
    } else {
        (0, 0)
    };
    Ok(Profile {
        sample_type,
        samples: p.samples,
        time_unix_nano: start as u64,
        duration_nano: duration.max(0) as u64,
        period_type,
        period,
        ..Default::default()
    })
}

/// A process's resource: who and where, then the profiles' own attributes.
fn resource(p: &Process) -> Resource {
    let text = |key: &str, value: &Option<String>| {
        value.as_ref().map(|v| KeyValue {
            key: key.into(),
            value: Some(AnyValue {
                value: Some(any_value::Value::StringValue(v.clone())),
            }),
            key_strindex: 0,
        })
    };
    let mut attributes: Vec<KeyValue> = [
        text("service.name", &p.service),
        text("service.version", &p.release),
        text("deployment.environment.name", &p.environment),
        text("host.name", &p.host),
        p.pid.map(|pid| KeyValue {
            key: "process.pid".into(),
            value: Some(AnyValue {
                value: Some(any_value::Value::IntValue(pid)),
            }),
            key_strindex: 0,
        }),
        text("process.executable.name", &p.name),
    ]
    .into_iter()
    .flatten()
    .collect();
    for (key, value) in &p.attributes {
        if !attributes.iter().any(|a| &a.key == key) {
            attributes.extend(text(key, &Some(value.clone())));
        }
    }
    Resource {
        attributes,
        dropped_attributes_count: 0,
        entity_refs: Vec::new(),
    }
}

/// OTLP/JSON: protobuf's JSON mapping with OTLP's rules, for the messages a request holds.
mod json {
    use std::io::Write as _;

    use base64::Engine as _;

    use super::*;
    use proflake_proto::otlp::opentelemetry::proto::common::v1::{ArrayValue, KeyValueList};
    use proflake_proto::otlp::opentelemetry::proto::resource::v1::EntityRef;

    /// The fields of one JSON object being written; defaults are left out, as proto3 JSON
    /// writers do.
    struct Obj<'o> {
        out: &'o mut Vec<u8>,
        first: bool,
    }

    fn object(out: &mut Vec<u8>, fields: impl FnOnce(&mut Obj)) {
        out.push(b'{');
        fields(&mut Obj { out, first: true });
        out.push(b'}');
    }

    fn text(out: &mut Vec<u8>, s: &str) {
        serde_json::to_writer(&mut *out, s).expect("writing to a Vec cannot fail");
    }

    fn number(out: &mut Vec<u8>, n: impl std::fmt::Display) {
        write!(out, "{n}").expect("writing to a Vec cannot fail");
    }

    fn quoted(out: &mut Vec<u8>, n: impl std::fmt::Display) {
        write!(out, "\"{n}\"").expect("writing to a Vec cannot fail");
    }

    fn array<T>(out: &mut Vec<u8>, items: &[T], mut each: impl FnMut(&mut Vec<u8>, &T)) {
        out.push(b'[');
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            each(out, item);
        }
        out.push(b']');
    }

    impl Obj<'_> {
        fn key(&mut self, name: &str) -> &mut Vec<u8> {
            if !self.first {
                self.out.push(b',');
            }
            self.first = false;
            self.out.push(b'"');
            self.out.extend_from_slice(name.as_bytes());
            self.out.extend_from_slice(b"\":");
            self.out
        }

        fn string(&mut self, name: &str, v: &str) {
            if !v.is_empty() {
                text(self.key(name), v);
            }
        }

        /// int32 and uint32: JSON numbers.
        fn int(&mut self, name: &str, v: impl Into<i64>) {
            let v = v.into();
            if v != 0 {
                number(self.key(name), v);
            }
        }

        /// int64, uint64 and fixed64: decimal strings.
        fn int64(&mut self, name: &str, v: impl Into<i128>) {
            let v = v.into();
            if v != 0 {
                quoted(self.key(name), v);
            }
        }

        fn ints(&mut self, name: &str, v: &[i32]) {
            if !v.is_empty() {
                array(self.key(name), v, |o, n| number(o, n));
            }
        }

        fn int64s<T: std::fmt::Display>(&mut self, name: &str, v: &[T]) {
            if !v.is_empty() {
                array(self.key(name), v, |o, n| quoted(o, n));
            }
        }

        fn base64(&mut self, name: &str, v: &[u8]) {
            if !v.is_empty() {
                let encoded = base64::engine::general_purpose::STANDARD.encode(v);
                text(self.key(name), &encoded);
            }
        }

        /// Trace, span and profile ids: lowercase hex, OTLP's deviation from proto3 JSON.
        fn hex(&mut self, name: &str, v: &[u8]) {
            if !v.is_empty() {
                let out = self.key(name);
                out.push(b'"');
                for b in v {
                    write!(out, "{b:02x}").expect("writing to a Vec cannot fail");
                }
                out.push(b'"');
            }
        }

        fn message<T>(&mut self, name: &str, v: Option<&T>, write: fn(&mut Vec<u8>, &T)) {
            if let Some(v) = v {
                write(self.key(name), v);
            }
        }

        fn messages<T>(&mut self, name: &str, v: &[T], write: fn(&mut Vec<u8>, &T)) {
            if !v.is_empty() {
                array(self.key(name), v, write);
            }
        }
    }

    /// The request as one OTLP/JSON document (`resourceProfiles` first, as sniffing finds it).
    pub(super) fn request(r: &ExportProfilesServiceRequest) -> Vec<u8> {
        let mut out = Vec::with_capacity(r.encoded_len() * 2);
        object(&mut out, |o| {
            o.messages("resourceProfiles", &r.resource_profiles, resource_profiles);
            o.message("dictionary", r.dictionary.as_ref(), dictionary);
        });
        out
    }

    fn resource_profiles(out: &mut Vec<u8>, r: &ResourceProfiles) {
        object(out, |o| {
            o.message("resource", r.resource.as_ref(), resource);
            o.messages("scopeProfiles", &r.scope_profiles, scope_profiles);
            o.string("schemaUrl", &r.schema_url);
        });
    }

    fn resource(out: &mut Vec<u8>, r: &Resource) {
        object(out, |o| {
            o.messages("attributes", &r.attributes, key_value);
            o.int("droppedAttributesCount", r.dropped_attributes_count);
            o.messages("entityRefs", &r.entity_refs, entity_ref);
        });
    }

    fn entity_ref(out: &mut Vec<u8>, e: &EntityRef) {
        object(out, |o| {
            o.string("schemaUrl", &e.schema_url);
            o.string("type", &e.r#type);
            o.messages("idKeys", &e.id_keys, |o, k| text(o, k));
            o.messages("descriptionKeys", &e.description_keys, |o, k| text(o, k));
        });
    }

    fn scope_profiles(out: &mut Vec<u8>, s: &ScopeProfiles) {
        object(out, |o| {
            o.message("scope", s.scope.as_ref(), scope);
            o.messages("profiles", &s.profiles, profile);
            o.string("schemaUrl", &s.schema_url);
        });
    }

    fn scope(out: &mut Vec<u8>, s: &InstrumentationScope) {
        object(out, |o| {
            o.string("name", &s.name);
            o.string("version", &s.version);
            o.messages("attributes", &s.attributes, key_value);
            o.int("droppedAttributesCount", s.dropped_attributes_count);
        });
    }

    fn key_value(out: &mut Vec<u8>, kv: &KeyValue) {
        object(out, |o| {
            o.string("key", &kv.key);
            o.message("value", kv.value.as_ref(), any);
            o.int("keyStrindex", kv.key_strindex);
        });
    }

    fn any(out: &mut Vec<u8>, v: &AnyValue) {
        use any_value::Value as V;
        // A oneof member is written whatever its value: it is set.
        object(out, |o| match &v.value {
            None => {}
            Some(V::StringValue(s)) => text(o.key("stringValue"), s),
            Some(V::BoolValue(b)) => number(o.key("boolValue"), b),
            Some(V::IntValue(n)) => quoted(o.key("intValue"), n),
            Some(V::DoubleValue(d)) => double(o.key("doubleValue"), *d),
            Some(V::ArrayValue(a)) => array_value(o.key("arrayValue"), a),
            Some(V::KvlistValue(l)) => kvlist(o.key("kvlistValue"), l),
            Some(V::BytesValue(b)) => {
                let encoded = base64::engine::general_purpose::STANDARD.encode(b);
                text(o.key("bytesValue"), &encoded);
            }
            Some(V::StringValueStrindex(i)) => number(o.key("stringValueStrindex"), i),
        });
    }

    fn double(out: &mut Vec<u8>, d: f64) {
        if d.is_nan() {
            text(out, "NaN");
        } else if d.is_infinite() {
            text(out, if d > 0.0 { "Infinity" } else { "-Infinity" });
        } else {
            serde_json::to_writer(&mut *out, &d).expect("writing to a Vec cannot fail");
        }
    }

    fn array_value(out: &mut Vec<u8>, a: &ArrayValue) {
        object(out, |o| o.messages("values", &a.values, any));
    }

    fn kvlist(out: &mut Vec<u8>, l: &KeyValueList) {
        object(out, |o| o.messages("values", &l.values, key_value));
    }

    fn profile(out: &mut Vec<u8>, p: &Profile) {
        object(out, |o| {
            o.message("sampleType", p.sample_type.as_ref(), value_type);
            o.messages("samples", &p.samples, sample);
            o.int64("timeUnixNano", p.time_unix_nano);
            o.int64("durationNano", p.duration_nano);
            o.message("periodType", p.period_type.as_ref(), value_type);
            o.int64("period", p.period);
            o.hex("profileId", &p.profile_id);
            o.int("droppedAttributesCount", p.dropped_attributes_count);
            o.string("originalPayloadFormat", &p.original_payload_format);
            o.base64("originalPayload", &p.original_payload);
            o.ints("attributeIndices", &p.attribute_indices);
        });
    }

    fn value_type(out: &mut Vec<u8>, v: &ValueType) {
        object(out, |o| {
            o.int("typeStrindex", v.type_strindex);
            o.int("unitStrindex", v.unit_strindex);
        });
    }

    fn sample(out: &mut Vec<u8>, s: &Sample) {
        object(out, |o| {
            o.int("stackIndex", s.stack_index);
            o.ints("attributeIndices", &s.attribute_indices);
            o.int("linkIndex", s.link_index);
            o.int64s("values", &s.values);
            o.int64s("timestampsUnixNano", &s.timestamps_unix_nano);
        });
    }

    fn dictionary(out: &mut Vec<u8>, d: &ProfilesDictionary) {
        object(out, |o| {
            o.messages("mappingTable", &d.mapping_table, mapping);
            o.messages("locationTable", &d.location_table, location);
            o.messages("functionTable", &d.function_table, function);
            o.messages("linkTable", &d.link_table, link);
            // `repeated string` upstream: JSON strings.
            o.messages("stringTable", &d.string_table, |o, s| {
                text(o, &String::from_utf8_lossy(s))
            });
            o.messages("attributeTable", &d.attribute_table, key_value_and_unit);
            o.messages("stackTable", &d.stack_table, stack);
        });
    }

    fn mapping(out: &mut Vec<u8>, m: &Mapping) {
        object(out, |o| {
            o.int64("memoryStart", m.memory_start);
            o.int64("memoryLimit", m.memory_limit);
            o.int64("fileOffset", m.file_offset);
            o.int("filenameStrindex", m.filename_strindex);
            o.ints("attributeIndices", &m.attribute_indices);
        });
    }

    fn location(out: &mut Vec<u8>, l: &Location) {
        object(out, |o| {
            o.int("mappingIndex", l.mapping_index);
            o.int64("address", l.address);
            o.messages("lines", &l.lines, line);
            o.ints("attributeIndices", &l.attribute_indices);
        });
    }

    fn line(out: &mut Vec<u8>, l: &Line) {
        object(out, |o| {
            o.int("functionIndex", l.function_index);
            o.int64("line", l.line);
            o.int64("column", l.column);
        });
    }

    fn function(out: &mut Vec<u8>, f: &Function) {
        object(out, |o| {
            o.int("nameStrindex", f.name_strindex);
            o.int("systemNameStrindex", f.system_name_strindex);
            o.int("filenameStrindex", f.filename_strindex);
            o.int64("startLine", f.start_line);
        });
    }

    fn link(out: &mut Vec<u8>, l: &Link) {
        object(out, |o| {
            o.hex("traceId", &l.trace_id);
            o.hex("spanId", &l.span_id);
        });
    }

    fn key_value_and_unit(out: &mut Vec<u8>, kv: &KeyValueAndUnit) {
        object(out, |o| {
            o.int("keyStrindex", kv.key_strindex);
            o.message("value", kv.value.as_ref(), any);
            o.int("unitStrindex", kv.unit_strindex);
        });
    }

    fn stack(out: &mut Vec<u8>, s: &Stack) {
        object(out, |o| o.ints("locationIndices", &s.location_indices));
    }
}
