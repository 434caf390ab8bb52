//! The conformance rules of OTel's profcheck (open-telemetry/sig-profiling `profcheck`),
//! re-implemented as soft findings, with its known gaps fixed:
//!
//! - the time range is closed at the end, and a zero `duration_nano` means "no end given":
//!   eBPF profiler captures put the last timestamp exactly at `time + duration`, and that is
//!   no reason to distrust them (the strict half-open rule stays available as an option);
//! - `link_table[0]` may be `Link{}` or the all-zero ids v1.11 recommends;
//! - empty tables are findings, not a crash;
//! - checked in addition: sample identity uniqueness, a function naming something, original
//!   payload and its format set together, `profile_id` length and non-zero, non-empty stacks,
//!   location addresses inside their mapping, UTF-8 strings, and the string references of
//!   resource and scope attributes; the orphan check (off by default, as in profcheck) counts
//!   those references too.
//!
//! Not checked: UCUM validity of units (needs the UCUM grammar; producers write
//! `nanoseconds` and `count`, which are not UCUM, so it would only produce noise).

use proflake_proto::otlp::common::{any_value, AnyValue, KeyValue};
use proflake_proto::otlp::profiles::{
    Link, Location, Mapping, Profile, ProfilesData, ProfilesDictionary, Sample, ValueType,
};
use rustc_hash::{FxHashMap, FxHashSet};

/// Which rules run. The defaults are profcheck's CLI defaults with the lenient time range.
#[derive(Clone, Copy, Debug)]
pub(super) struct Options {
    /// profcheck `-check-dupes`: duplicate mappings and strings.
    pub dupes: bool,
    /// profcheck `-check-orphans`: unreferenced dictionary entries.
    pub orphans: bool,
    /// profcheck `-check-sample-shapes` (on by default there too).
    pub sample_shapes: bool,
    /// profcheck's half-open `[time, time + duration)` rule, without leniency.
    pub strict_time_range: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            dupes: false,
            orphans: false,
            sample_shapes: true,
            strict_time_range: false,
        }
    }
}

/// Findings, each prefixed with the path of the offending element. Only the first `max` are
/// kept as text; all are counted.
#[derive(Debug)]
pub(super) struct Findings {
    pub list: Vec<String>,
    pub total: usize,
    max: usize,
}

impl Findings {
    pub(super) fn new(max: usize) -> Self {
        Findings {
            list: Vec::new(),
            total: 0,
            max,
        }
    }

    fn add(&mut self, text: impl FnOnce() -> String) {
        self.total += 1;
        if self.list.len() < self.max {
            self.list.push(text());
        }
    }
}

fn out_of_range(index: impl std::fmt::Display, len: usize) -> String {
    format!("index {index} is out of range [0..{len})")
}

fn in_range(index: i32, len: usize) -> bool {
    usize::try_from(index).is_ok_and(|i| i < len)
}

/// Runs the rules over one request.
pub(super) fn check(data: &ProfilesData, opts: Options, out: &mut Findings) {
    let empty = ProfilesDictionary::default();
    let dict = data.dictionary.as_ref().unwrap_or(&empty);
    let c = Checker { dict, opts };
    if data.resource_profiles.is_empty() {
        out.add(|| "resource profiles are empty".into());
    }
    for (ri, rp) in data.resource_profiles.iter().enumerate() {
        let rpath = format!("resource_profiles[{ri}]");
        if let Some(r) = &rp.resource {
            c.key_values(
                &r.attributes,
                &format!("{rpath}: resource: attributes"),
                out,
            );
        }
        if rp.scope_profiles.is_empty() {
            out.add(|| format!("{rpath}: resource profiles has no scope profiles"));
        }
        for (si, sp) in rp.scope_profiles.iter().enumerate() {
            let spath = format!("{rpath}: scope_profiles[{si}]");
            if let Some(s) = &sp.scope {
                c.key_values(&s.attributes, &format!("{spath}: scope: attributes"), out);
            }
            if sp.profiles.is_empty() {
                out.add(|| format!("{spath}: scope profiles has no profiles"));
            }
            for (pi, p) in sp.profiles.iter().enumerate() {
                c.profile(p, &format!("{spath}: profile[{pi}]"), out);
            }
        }
    }
    c.dictionary(out);
    if opts.orphans {
        orphans(data, dict, out);
    }
}

struct Checker<'a> {
    dict: &'a ProfilesDictionary,
    opts: Options,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Shape {
    ValuesOnly,
    TimestampsOnly,
    Both,
    Invalid,
}

impl Shape {
    fn name(self) -> &'static str {
        match self {
            Shape::ValuesOnly => "values_only",
            Shape::TimestampsOnly => "timestamps_only",
            Shape::Both => "both_values_and_timestamps",
            Shape::Invalid => "unspecified",
        }
    }
}

impl Checker<'_> {
    fn strings(&self) -> usize {
        self.dict.string_table.len()
    }

    fn index(
        &self,
        index: i32,
        len: usize,
        path: impl FnOnce() -> String,
        out: &mut Findings,
    ) -> bool {
        let ok = in_range(index, len);
        if !ok {
            out.add(|| format!("{}: {}", path(), out_of_range(index, len)));
        }
        ok
    }

    /// Attribute index lists: in range, keys in range, keys unique by their text.
    fn attribute_indices(&self, indices: &[i32], path: &str, out: &mut Findings) {
        let table = &self.dict.attribute_table;
        let mut seen: FxHashMap<&[u8], usize> = FxHashMap::default();
        for (pos, &i) in indices.iter().enumerate() {
            if !self.index(i, table.len(), || format!("{path}[{pos}]"), out) {
                continue;
            }
            let key_index = table[i as usize].key_strindex;
            if !self.index(
                key_index,
                self.strings(),
                || format!("{path}[{pos}].key_strindex"),
                out,
            ) {
                continue;
            }
            let key = self.dict.string_table[key_index as usize].as_slice();
            if let Some(prev) = seen.insert(key, pos) {
                seen.insert(key, prev);
                out.add(|| {
                    format!(
                        "{path}[{pos}].key_strindex: duplicate key {:?}, previously seen at [{prev}].key_strindex",
                        String::from_utf8_lossy(key)
                    )
                });
            }
        }
    }

    fn value_type(&self, vt: Option<&ValueType>, path: &str, out: &mut Findings) {
        let vt = vt.cloned().unwrap_or_default();
        self.index(
            vt.unit_strindex,
            self.strings(),
            || format!("{path}: unit_strindex"),
            out,
        );
        self.index(
            vt.type_strindex,
            self.strings(),
            || format!("{path}: type_strindex"),
            out,
        );
    }

    /// Reference-based keys and string values of resource and scope attributes (v1.10).
    fn key_values(&self, list: &[KeyValue], path: &str, out: &mut Findings) {
        for (i, kv) in list.iter().enumerate() {
            if kv.key_strindex != 0 {
                self.index(
                    kv.key_strindex,
                    self.strings(),
                    || format!("{path}[{i}].key_strindex"),
                    out,
                );
                if !kv.key.is_empty() {
                    out.add(|| format!("{path}[{i}]: key and key_strindex are both set"));
                }
            }
            if let Some(v) = &kv.value {
                self.any_value(v, &format!("{path}[{i}].value"), out);
            }
        }
    }

    fn any_value(&self, v: &AnyValue, path: &str, out: &mut Findings) {
        match &v.value {
            Some(any_value::Value::StringValueStrindex(i)) => {
                self.index(
                    *i,
                    self.strings(),
                    || format!("{path}.string_value_strindex"),
                    out,
                );
            }
            Some(any_value::Value::ArrayValue(a)) => {
                for (i, v) in a.values.iter().enumerate() {
                    self.any_value(v, &format!("{path}.array_value[{i}]"), out);
                }
            }
            Some(any_value::Value::KvlistValue(l)) => {
                self.key_values(&l.values, &format!("{path}.kvlist_value"), out);
            }
            _ => {}
        }
    }

    fn profile(&self, p: &Profile, path: &str, out: &mut Findings) {
        self.attribute_indices(
            &p.attribute_indices,
            &format!("{path}: attribute_indices"),
            out,
        );
        self.value_type(p.sample_type.as_ref(), &format!("{path}: sample_type"), out);
        self.value_type(p.period_type.as_ref(), &format!("{path}: period_type"), out);
        if !p.profile_id.is_empty() {
            if p.profile_id.len() != 16 {
                out.add(|| {
                    format!(
                        "{path}: profile_id has {} bytes, want 16",
                        p.profile_id.len()
                    )
                });
            } else if p.profile_id.iter().all(|&b| b == 0) {
                out.add(|| format!("{path}: profile_id is all zero, which is invalid"));
            }
        }
        if p.original_payload.is_empty() != p.original_payload_format.is_empty() {
            out.add(|| {
                format!("{path}: original_payload and original_payload_format must be set together")
            });
        }
        let mut expected = None;
        let mut identities: FxHashMap<(i32, Vec<i32>, i32), usize> = FxHashMap::default();
        for (si, s) in p.samples.iter().enumerate() {
            let spath = format!("{path}: sample[{si}]");
            self.sample(p, s, &spath, &mut expected, out);
            let mut attrs = s.attribute_indices.clone();
            attrs.sort_unstable();
            attrs.dedup();
            let first = *identities
                .entry((s.stack_index, attrs, s.link_index))
                .or_insert(si);
            if first != si {
                out.add(|| {
                    format!(
                        "{spath}: same stack_index, attribute_indices and link_index as \
                         sample[{first}]; samples with one identity should be merged"
                    )
                });
            }
        }
    }

    fn sample(
        &self,
        p: &Profile,
        s: &Sample,
        path: &str,
        expected: &mut Option<Shape>,
        out: &mut Findings,
    ) {
        let d = self.dict;
        self.index(
            s.stack_index,
            d.stack_table.len(),
            || format!("{path}: stack_index"),
            out,
        );
        self.attribute_indices(
            &s.attribute_indices,
            &format!("{path}: attribute_indices"),
            out,
        );
        self.index(
            s.link_index,
            d.link_table.len(),
            || format!("{path}: link_index"),
            out,
        );
        let start = p.time_unix_nano;
        let end = start.saturating_add(p.duration_nano);
        for (i, &ts) in s.timestamps_unix_nano.iter().enumerate() {
            let outside = if self.opts.strict_time_range {
                ts < start || ts >= end
            } else {
                ts < start || (p.duration_nano != 0 && ts > end)
            };
            if outside {
                let close = if self.opts.strict_time_range {
                    ')'
                } else {
                    ']'
                };
                out.add(|| {
                    format!(
                        "{path}: timestamps_unix_nano[{i}]={ts} is outside profile time range [{start}, {end}{close}"
                    )
                });
            }
        }
        if !self.opts.sample_shapes {
            return;
        }
        let (nv, nt) = (s.values.len(), s.timestamps_unix_nano.len());
        let shape = match (nv > 0, nt > 0) {
            (true, true) => {
                if nv != nt {
                    out.add(|| format!("{path}: values (len={nv}) and timestamps_unix_nano (len={nt}) must contain the same number of elements"));
                }
                Shape::Both
            }
            (true, false) => {
                if nv != 1 {
                    out.add(|| format!("{path}: values (len={nv}) must contain a single element if timestamps_unix_nano is not set"));
                }
                Shape::ValuesOnly
            }
            (false, true) => Shape::TimestampsOnly,
            (false, false) => {
                out.add(|| format!("{path}: sample must have at least one values or timestamps_unix_nano entry"));
                Shape::Invalid
            }
        };
        match *expected {
            None => *expected = Some(shape),
            Some(e) if e != shape => out.add(|| {
                format!(
                    "{path}: sample shape {} does not match expected sample shape {}",
                    shape.name(),
                    e.name()
                )
            }),
            Some(_) => {}
        }
    }

    fn dictionary(&self, out: &mut Findings) {
        self.zero_entries(out);
        self.mappings(out);
        self.locations(out);
        self.functions(out);
        self.links(out);
        self.string_table(out);
        self.attributes(out);
        self.stacks(out);
    }

    /// Index 0 of every table is the zero value, and of the string table the empty string.
    fn zero_entries(&self, out: &mut Findings) {
        let d = self.dict;
        let p = "dictionary";
        zero_entry(
            &d.mapping_table,
            |m| *m == Mapping::default(),
            &format!("{p}: mapping_table"),
            out,
        );
        zero_entry(
            &d.location_table,
            |l| *l == Location::default(),
            &format!("{p}: location_table"),
            out,
        );
        zero_entry(
            &d.function_table,
            |f| *f == Default::default(),
            &format!("{p}: function_table"),
            out,
        );
        zero_entry(
            &d.link_table,
            |l| *l == Link::default() || (l.trace_id == [0; 16] && l.span_id == [0; 8]),
            &format!("{p}: link_table"),
            out,
        );
        zero_entry(
            &d.stack_table,
            |s| *s == Default::default(),
            &format!("{p}: stack_table"),
            out,
        );
        zero_entry(
            &d.attribute_table,
            |a| {
                a.key_strindex == 0
                    && a.unit_strindex == 0
                    && a.value.as_ref().is_none_or(|v| v.value.is_none())
            },
            &format!("{p}: attribute_table"),
            out,
        );
        match d.string_table.first() {
            None => out.add(|| {
                format!("{p}: string_table: empty string table, must have at least empty string")
            }),
            Some(s) if !s.is_empty() => out.add(|| {
                format!(
                    "{p}: string_table: must have empty string at index 0, got {:?}",
                    String::from_utf8_lossy(s)
                )
            }),
            Some(_) => {}
        }
    }

    fn functions(&self, out: &mut Findings) {
        let p = "dictionary";
        for (i, f) in self.dict.function_table.iter().enumerate() {
            let at = format!("{p}: function_table[{i}]");
            for (name, idx) in [
                ("name_strindex", f.name_strindex),
                ("system_name_strindex", f.system_name_strindex),
                ("filename_strindex", f.filename_strindex),
            ] {
                self.index(idx, self.strings(), || format!("{at}.{name}"), out);
            }
            if f.start_line < 0 {
                out.add(|| {
                    format!(
                        "{at}.start_line: {} < 0, must be non-negative",
                        f.start_line
                    )
                });
            }
            if i > 0
                && f.name_strindex == 0
                && f.system_name_strindex == 0
                && f.filename_strindex == 0
            {
                out.add(|| {
                    format!("{at}: must have at least one of name, system_name or filename")
                });
            }
        }
    }

    fn links(&self, out: &mut Findings) {
        let p = "dictionary";
        for (i, l) in self.dict.link_table.iter().enumerate().skip(1) {
            if l.trace_id.len() != 16 {
                out.add(|| {
                    format!(
                        "{p}: link_table: len([{i}].trace_id) == {}, want 16",
                        l.trace_id.len()
                    )
                });
            }
            if l.span_id.len() != 8 {
                out.add(|| {
                    format!(
                        "{p}: link_table: len([{i}].span_id) == {}, want 8",
                        l.span_id.len()
                    )
                });
            }
        }
    }

    /// Every string is UTF-8 and, when duplicates are checked, appears once.
    fn string_table(&self, out: &mut Findings) {
        let p = "dictionary";
        let mut seen: FxHashMap<&[u8], usize> = FxHashMap::default();
        for (i, s) in self.dict.string_table.iter().enumerate() {
            if std::str::from_utf8(s).is_err() {
                out.add(|| format!("{p}: string_table[{i}]: not valid UTF-8"));
            }
            if self.opts.dupes {
                if let Some(first) = seen.insert(s, i) {
                    seen.insert(s, first);
                    out.add(|| {
                        format!("{p}: string_table: duplicate string at index {i}, orig index {first}: {}", String::from_utf8_lossy(s))
                    });
                }
            }
        }
    }

    fn attributes(&self, out: &mut Findings) {
        let p = "dictionary";
        for (i, a) in self.dict.attribute_table.iter().enumerate() {
            self.index(
                a.key_strindex,
                self.strings(),
                || format!("{p}: attribute_table[{i}].key_strindex"),
                out,
            );
            self.index(
                a.unit_strindex,
                self.strings(),
                || format!("{p}: attribute_table[{i}].unit_strindex"),
                out,
            );
            if let Some(v) = &a.value {
                self.any_value(v, &format!("{p}: attribute_table[{i}].value"), out);
            }
        }
    }

    fn stacks(&self, out: &mut Findings) {
        let p = "dictionary";
        let d = self.dict;
        for (i, s) in d.stack_table.iter().enumerate() {
            if i > 0 && s.location_indices.is_empty() {
                out.add(|| format!("{p}: stack_table[{i}]: stack is empty"));
            }
            for (j, &l) in s.location_indices.iter().enumerate() {
                self.index(
                    l,
                    d.location_table.len(),
                    || format!("{p}: stack_table[{i}].location_indices[{j}]"),
                    out,
                );
            }
        }
    }

    fn mappings(&self, out: &mut Findings) {
        let p = "dictionary: mapping_table";
        let mut seen = FxHashSet::default();
        for (i, m) in self.dict.mapping_table.iter().enumerate().skip(1) {
            self.index(
                m.filename_strindex,
                self.strings(),
                || format!("{p}[{i}].filename_strindex"),
                out,
            );
            self.attribute_indices(
                &m.attribute_indices,
                &format!("{p}[{i}].attribute_indices"),
                out,
            );
            if !(m.memory_start == 0 && m.memory_limit == 0) && m.memory_start >= m.memory_limit {
                out.add(|| {
                    format!(
                        "{p}[{i}]: memory_start={:016x}, memory_limit={:016x}: must be both zero or start < limit",
                        m.memory_start, m.memory_limit
                    )
                });
            }
            if self.opts.dupes {
                let mut attrs = m.attribute_indices.clone();
                attrs.sort_unstable();
                if !seen.insert((
                    m.filename_strindex,
                    attrs,
                    m.memory_start,
                    m.memory_limit,
                    m.file_offset,
                )) {
                    out.add(|| format!("{p}: duplicate mapping at index {i}"));
                }
            }
        }
    }

    fn locations(&self, out: &mut Findings) {
        let d = self.dict;
        let p = "dictionary: location_table";
        for (i, loc) in d.location_table.iter().enumerate() {
            let mapped = self.index(
                loc.mapping_index,
                d.mapping_table.len(),
                || format!("{p}[{i}].mapping_index"),
                out,
            );
            self.attribute_indices(
                &loc.attribute_indices,
                &format!("{p}[{i}].attribute_indices"),
                out,
            );
            for (j, line) in loc.lines.iter().enumerate() {
                self.index(
                    line.function_index,
                    d.function_table.len(),
                    || format!("{p}[{i}].line[{j}].function_index"),
                    out,
                );
                if line.line < 0 {
                    out.add(|| {
                        format!(
                            "{p}[{i}].line[{j}].line: {} < 0, must be non-negative",
                            line.line
                        )
                    });
                }
                if line.column < 0 {
                    out.add(|| {
                        format!(
                            "{p}[{i}].line[{j}].column: {} < 0, must be non-negative",
                            line.column
                        )
                    });
                }
            }
            if mapped && loc.mapping_index != 0 && loc.address != 0 {
                let m = &d.mapping_table[loc.mapping_index as usize];
                let ranged = m.memory_start < m.memory_limit;
                if ranged && !(m.memory_start..m.memory_limit).contains(&loc.address) {
                    out.add(|| {
                        format!(
                            "{p}[{i}]: address {:#x} is outside mapping_table[{}] [{:#x}, {:#x})",
                            loc.address, loc.mapping_index, m.memory_start, m.memory_limit
                        )
                    });
                }
            }
        }
    }
}

/// A dictionary table must be non-empty and start with the zero value.
fn zero_entry<T: std::fmt::Debug>(
    table: &[T],
    is_zero: impl Fn(&T) -> bool,
    path: &str,
    out: &mut Findings,
) {
    match table.first() {
        None => out.add(|| format!("{path}: empty table, must have at least zero value entry")),
        Some(first) if !is_zero(first) => {
            out.add(|| format!("{path}: must have zero value at index 0, got {first:?}"))
        }
        Some(_) => {}
    }
}

/// profcheck `-check-orphans`, also counting the string references profcheck misses:
/// reference-based keys and values of resource and scope attributes, and
/// `string_value_strindex` inside attribute table values.
fn orphans(data: &ProfilesData, d: &ProfilesDictionary, out: &mut Findings) {
    let mut strings = FxHashSet::from_iter([0]);
    let mut attrs = FxHashSet::from_iter([0]);
    let mut mappings = FxHashSet::from_iter([0]);
    let mut functions = FxHashSet::from_iter([0]);
    let mut locations = FxHashSet::from_iter([0]);
    let mut stacks = FxHashSet::from_iter([0]);
    let mut links = FxHashSet::from_iter([0]);
    fn value_refs(v: &AnyValue, strings: &mut FxHashSet<i32>) {
        match &v.value {
            Some(any_value::Value::StringValueStrindex(i)) => {
                strings.insert(*i);
            }
            Some(any_value::Value::ArrayValue(a)) => {
                a.values.iter().for_each(|v| value_refs(v, strings))
            }
            Some(any_value::Value::KvlistValue(l)) => kv_refs(&l.values, strings),
            _ => {}
        }
    }
    fn kv_refs(list: &[KeyValue], strings: &mut FxHashSet<i32>) {
        for kv in list {
            strings.insert(kv.key_strindex);
            if let Some(v) = &kv.value {
                value_refs(v, strings);
            }
        }
    }
    for rp in &data.resource_profiles {
        if let Some(r) = &rp.resource {
            kv_refs(&r.attributes, &mut strings);
        }
        for sp in &rp.scope_profiles {
            if let Some(s) = &sp.scope {
                kv_refs(&s.attributes, &mut strings);
            }
            for p in &sp.profiles {
                for vt in [&p.sample_type, &p.period_type].into_iter().flatten() {
                    strings.extend([vt.type_strindex, vt.unit_strindex]);
                }
                attrs.extend(p.attribute_indices.iter().copied());
                for s in &p.samples {
                    stacks.insert(s.stack_index);
                    links.insert(s.link_index);
                    attrs.extend(s.attribute_indices.iter().copied());
                }
            }
        }
    }
    for s in &d.stack_table {
        locations.extend(s.location_indices.iter().copied());
    }
    for l in &d.location_table {
        mappings.insert(l.mapping_index);
        attrs.extend(l.attribute_indices.iter().copied());
        functions.extend(l.lines.iter().map(|l| l.function_index));
    }
    for m in &d.mapping_table {
        strings.insert(m.filename_strindex);
        attrs.extend(m.attribute_indices.iter().copied());
    }
    for f in &d.function_table {
        strings.extend([f.name_strindex, f.system_name_strindex, f.filename_strindex]);
    }
    for a in &d.attribute_table {
        strings.extend([a.key_strindex, a.unit_strindex]);
        if let Some(v) = &a.value {
            value_refs(v, &mut strings);
        }
    }
    let tables: [(&str, usize, &FxHashSet<i32>); 7] = [
        ("string_table", d.string_table.len(), &strings),
        ("attribute_table", d.attribute_table.len(), &attrs),
        ("mapping_table", d.mapping_table.len(), &mappings),
        ("function_table", d.function_table.len(), &functions),
        ("location_table", d.location_table.len(), &locations),
        ("stack_table", d.stack_table.len(), &stacks),
        ("link_table", d.link_table.len(), &links),
    ];
    for (name, len, refs) in tables {
        for i in 0..len {
            if !i32::try_from(i).is_ok_and(|i| refs.contains(&i)) {
                out.add(|| format!("dictionary: {name}: unreferenced entry at index {i}"));
            }
        }
    }
}
