//! Decoded OTLP requests into the model: processes from resource (or sample) attributes, one
//! series per `Profile`, one model sample per observation, frames from the dictionary.

use proflake_proto::otlp::profiles::{Profile as OtlpProfile, ProfilesData, Sample as OtlpSample};

use super::dict::{Attr, Ctx, Dict, PathFn, Scalar};
use super::frames::Frames;
use super::process::{ProcessInfo, ResourceProcesses};
use crate::error::Result;
use crate::formats::value_types::{classify, ValueType};
use crate::limits::{exceeded, Limits};
use crate::model::{
    time_unit_ns, Label, LabelValue, LinkHandle, Profile, Sample, Series, SeriesHandle, SeriesKind,
    StringHandle, ThreadHandle,
};

/// Sample attributes the model has fields for; every other one becomes a label.
const THREAD_ID: &str = "thread.id";
const THREAD_NAME: &str = "thread.name";
const CPU: &str = "cpu.logical_number";

/// Builds one model profile from one or more requests.
pub(super) struct Importer {
    profile: Profile,
    samples: u64,
    max_samples: u64,
    /// Deeper stacks are kept as samples without frames, and counted.
    max_stack_depth: u64,
    start: Option<u64>,
    end: Option<u64>,
}

impl Importer {
    /// An importer for `source_format`, within `limits`.
    pub(super) fn new(source_format: &str, limits: &Limits) -> Self {
        Importer {
            profile: Profile::new(source_format),
            samples: 0,
            max_samples: limits.max_samples,
            max_stack_depth: limits.max_stack_depth,
            start: None,
            end: None,
        }
    }

    /// Access to the profile under construction (stats, findings).
    pub(super) fn profile_mut(&mut self) -> &mut Profile {
        &mut self.profile
    }

    /// Imports one request.
    pub(super) fn request(&mut self, data: &ProfilesData, ctx: Ctx) -> Result<()> {
        let empty = Default::default();
        let tables = data.dictionary.as_ref().unwrap_or(&empty);
        let dict = Dict::new(tables, ctx);
        let mut req = Request {
            frames: Frames::new(&dict, self.max_stack_depth),
            dict: &dict,
            imp: self,
        };
        for (ri, rp) in data.resource_profiles.iter().enumerate() {
            let path = format!("resource_profiles[{ri}]");
            let attrs = match &rp.resource {
                Some(r) => {
                    dict.key_values(&r.attributes, &|| format!("{path}.resource.attributes"))?
                }
                None => Vec::new(),
            };
            let mut processes = ResourceProcesses::new(attrs);
            for (si, sp) in rp.scope_profiles.iter().enumerate() {
                req.scope(&mut processes, sp, &format!("{path}.scope_profiles[{si}]"))?;
            }
        }
        Ok(())
    }

    /// The finished profile, samples in time order.
    pub(super) fn finish(mut self) -> Profile {
        if let Some(start) = self.start {
            self.profile.start_time = i64::try_from(start).ok();
            let end = self.end.unwrap_or(start);
            self.profile.duration = i64::try_from(end.saturating_sub(start)).ok();
        }
        self.profile.sort_samples_by_time();
        self.profile
    }
}

/// One request's import: the dictionary and the caches of what was already added.
struct Request<'a, 'd> {
    imp: &'a mut Importer,
    dict: &'a Dict<'d>,
    frames: Frames,
}

/// What a sample's attributes say beyond labels.
struct SampleContext {
    thread: ThreadHandle,
    cpu: Option<u32>,
    labels: Option<crate::model::LabelSetHandle>,
}

impl Request<'_, '_> {
    fn p(&mut self) -> &mut Profile {
        &mut self.imp.profile
    }

    fn scope(
        &mut self,
        processes: &mut ResourceProcesses,
        sp: &proflake_proto::otlp::profiles::ScopeProfiles,
        path: &str,
    ) -> Result<()> {
        let dict = self.dict;
        let scope = sp.scope.as_ref();
        let scope_name = scope.map(|s| s.name.as_str()).filter(|n| !n.is_empty());
        if let Some(s) = scope {
            let attrs = dict.key_values(&s.attributes, &|| format!("{path}.scope.attributes"))?;
            let mut meta = vec![
                ("otlp.scope.name", s.name.clone()),
                ("otlp.scope.version", s.version.clone()),
            ];
            meta.retain(|(_, v)| !v.is_empty());
            for (k, v) in meta {
                self.p().attributes.entry(k.to_owned()).or_insert(v);
            }
            for (k, v) in attrs {
                self.p()
                    .attributes
                    .entry(k.to_owned())
                    .or_insert_with(|| v.into_string());
            }
        }
        let types = sp
            .profiles
            .iter()
            .enumerate()
            .map(|(i, prof)| {
                let at = format!("{path}.profiles[{i}]");
                Ok((
                    value_type(dict, prof.sample_type.as_ref(), &at, "sample_type")?,
                    value_type(dict, prof.period_type.as_ref(), &at, "period_type")?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let kinds = scope_kinds(&types);
        let source = scope_name.unwrap_or("otlp");
        for (i, prof) in sp.profiles.iter().enumerate() {
            let (sample_type, period_type) = types[i];
            let (kind, unit) = sample_type.unwrap_or(("", ""));
            let series = self.series(kinds[i], kind, unit, period_type, prof.period, source);
            self.profile_meta(prof, &format!("{path}.profiles[{i}]"))?;
            for (si, sample) in prof.samples.iter().enumerate() {
                let at = || format!("{path}.profiles[{i}].samples[{si}]");
                self.sample(processes, series, sample, &at)?;
            }
        }
        Ok(())
    }

    fn series(
        &mut self,
        kind: SeriesKind,
        name: &str,
        unit: &str,
        period_type: Option<TypeUnit>,
        period: i64,
        source: &str,
    ) -> SeriesHandle {
        let period = u64::try_from(period).ok().filter(|&p| p > 0);
        let (mut period_in_unit, mut frequency_hz) = (None, None);
        if let (Some(period), Some((_, period_unit))) = (period, period_type) {
            if period_unit == unit {
                period_in_unit = Some(period);
            } else if let Some(ns) = time_unit_ns(period_unit) {
                // A count sampled every `period` of time: say it as a rate.
                let period_ns = u128::from(period) * ns as u128;
                let hz = (1_000_000_000u128 + period_ns / 2) / period_ns;
                frequency_hz = u64::try_from(hz).ok().filter(|&h| h > 0);
            }
        }
        let series = Series {
            kind,
            name: self.p().intern(name),
            unit: self.p().intern(unit),
            source: Some(self.p().intern(source)),
            frequency_hz,
            period: period_in_unit,
            spans: false,
        };
        self.p().add_series(series)
    }

    /// Profile-wide facts: the collection window and the profile's own attributes.
    fn profile_meta(&mut self, prof: &OtlpProfile, path: &str) -> Result<()> {
        if prof.time_unix_nano != 0 {
            let end = prof.time_unix_nano.saturating_add(prof.duration_nano);
            let imp = &mut *self.imp;
            imp.start = Some(
                imp.start
                    .map_or(prof.time_unix_nano, |s| s.min(prof.time_unix_nano)),
            );
            imp.end = Some(imp.end.map_or(end, |e| e.max(end)));
        }
        let dict = self.dict;
        for (i, &index) in prof.attribute_indices.iter().enumerate() {
            let attr = dict.attribute(index, &|| format!("{path}.attribute_indices[{i}]"))?;
            let value = dict
                .scalar(attr.value, &|| {
                    format!("dictionary.attribute_table[{index}].value")
                })?
                .into_string();
            self.p()
                .attributes
                .entry(attr.key.to_owned())
                .or_insert(value);
        }
        let attrs = &mut self.imp.profile.attributes;
        if !prof.profile_id.is_empty() {
            attrs
                .entry("otlp.profile_id".into())
                .or_insert_with(|| hex::encode(&prof.profile_id));
        }
        if !prof.original_payload_format.is_empty() {
            attrs
                .entry("otlp.original_payload_format".into())
                .or_insert_with(|| prof.original_payload_format.clone());
        }
        Ok(())
    }

    fn sample(
        &mut self,
        processes: &mut ResourceProcesses,
        series: SeriesHandle,
        s: &OtlpSample,
        path: PathFn,
    ) -> Result<()> {
        let stack = self
            .frames
            .stack(self.dict, &mut self.imp.profile, s.stack_index, &|| {
                format!("{}.stack_index", path())
            })?;
        let ctx = self.sample_context(processes, &s.attribute_indices, path)?;
        let link = self.link(s.link_index, path)?;
        let (values, times) = (&s.values, &s.timestamps_unix_nano);
        let n = match (values.is_empty(), times.is_empty()) {
            (true, true) => {
                self.p().count("otlp samples without values or timestamps");
                return Ok(());
            }
            (false, false) if values.len() != times.len() => {
                self.p()
                    .count("otlp samples with values and timestamps of different lengths");
                values.len().min(times.len())
            }
            (false, _) => values.len(),
            (true, false) => times.len(),
        };
        self.imp.samples += n as u64;
        if self.imp.samples > self.imp.max_samples {
            return Err(exceeded("max_samples", self.imp.max_samples));
        }
        for i in 0..n {
            let time = match times.get(i) {
                Some(&t) => Some(i64::try_from(t).map_err(|_| {
                    self.dict.ctx.malformed(format!(
                        "{}.timestamps_unix_nano[{i}] {t} is beyond the year 2262",
                        path()
                    ))
                })?),
                None => None,
            };
            let weight = values.get(i).copied().unwrap_or(1);
            let mut sample = Sample::new(ctx.thread, stack, weight, series);
            sample.time = time;
            sample.cpu = ctx.cpu;
            sample.labels = ctx.labels;
            sample.link = link;
            self.p().add_sample(sample);
        }
        Ok(())
    }

    fn sample_context(
        &mut self,
        processes: &mut ResourceProcesses,
        indices: &[i32],
        path: PathFn,
    ) -> Result<SampleContext> {
        let dict = self.dict;
        let (mut tid, mut thread_name, mut cpu) = (None, None, None);
        let mut labels = Vec::new();
        let mut own = ProcessInfo::default();
        for (i, &index) in indices.iter().enumerate() {
            let Attr { key, value, unit } =
                dict.attribute(index, &|| format!("{}.attribute_indices[{i}]", path()))?;
            let value = dict.scalar(value, &|| {
                format!("dictionary.attribute_table[{index}].value")
            })?;
            match (key, value) {
                (THREAD_ID, Scalar::Int(t)) => tid = Some(t),
                (THREAD_ID, Scalar::Str(t)) if t.trim().parse::<i64>().is_ok() => {
                    tid = t.trim().parse().ok();
                }
                (THREAD_NAME, Scalar::Str(n)) => thread_name = Some(n),
                (CPU, Scalar::Int(c)) => cpu = u32::try_from(c).ok(),
                (CPU, Scalar::Str(c)) if c.trim().parse::<u32>().is_ok() => {
                    cpu = c.trim().parse().ok();
                }
                (_, Scalar::Empty) => {}
                (key, value) if own.take(key, &value) => {}
                (key, value) => {
                    let key = self.p().intern(key);
                    let value = self.label_value(value, unit);
                    labels.push(Label { key, value });
                }
            }
        }
        let process = processes.process(&mut self.imp.profile, &own);
        let thread = self.p().add_thread(process, tid);
        match (tid, thread_name) {
            (Some(_), Some(name)) => self.p().name_thread(thread, &name),
            // Without an id every sample of the process lands on one unknown thread; naming it
            // after the first sample's thread would mislabel the others, so keep the name
            // with each sample.
            (None, Some(name)) => {
                let key = self.p().intern(THREAD_NAME);
                let value = LabelValue::Str(self.p().intern(&name));
                labels.push(Label { key, value });
            }
            (_, None) => {}
        }
        let labels = self.p().add_label_set(&labels);
        Ok(SampleContext {
            thread,
            cpu,
            labels,
        })
    }

    fn label_value(&mut self, value: Scalar, unit: Option<&str>) -> LabelValue {
        match value {
            Scalar::Int(value) => LabelValue::Num {
                value,
                unit: unit.map(|u| self.p().intern(u)),
            },
            other => {
                let s: StringHandle = self.p().intern(&other.into_string());
                LabelValue::Str(s)
            }
        }
    }

    fn link(&mut self, index: i32, path: PathFn) -> Result<Option<LinkHandle>> {
        if index == 0 {
            return Ok(None);
        }
        let table = &self.dict.tables.link_table;
        let i = self.dict.index(index, table.len(), "link_table", &|| {
            format!("{}.link_index", path())
        })?;
        let link = &table[i];
        let ids = (
            <[u8; 16]>::try_from(link.trace_id.as_slice()),
            <[u8; 8]>::try_from(link.span_id.as_slice()),
        );
        match ids {
            (Ok(trace_id), Ok(span_id)) if trace_id != [0; 16] || span_id != [0; 8] => Ok(Some(
                self.p().add_link(crate::model::Link { trace_id, span_id }),
            )),
            (Ok(_), Ok(_)) => Ok(None),
            _ => {
                self.p()
                    .count("otlp links with malformed trace or span ids");
                Ok(None)
            }
        }
    }
}

/// A `ValueType` as its (type, unit) strings.
type TypeUnit<'d> = (&'d str, &'d str);

/// A `ValueType` as (type, unit) strings; `None` when absent.
fn value_type<'d>(
    dict: &'d Dict,
    vt: Option<&proflake_proto::otlp::profiles::ValueType>,
    path: &str,
    field: &str,
) -> Result<Option<TypeUnit<'d>>> {
    let Some(vt) = vt else { return Ok(None) };
    let kind = dict.string(vt.type_strindex, &|| {
        format!("{path}.{field}.type_strindex")
    })?;
    let unit = dict.string(vt.unit_strindex, &|| {
        format!("{path}.{field}.unit_strindex")
    })?;
    Ok(Some((kind, unit)))
}

/// The series kind of each profile of one scope, by the shared rule over all of the scope's
/// sample types. The rule takes one period type; OTLP gives one per profile, so the one of
/// the first sample-count profile is used (that is the case the rule needs it for: eBPF's
/// `samples/count` every `cpu/nanoseconds`), else the first one given.
fn scope_kinds(types: &[(Option<TypeUnit>, Option<TypeUnit>)]) -> Vec<SeriesKind> {
    let vts: Vec<ValueType> = types
        .iter()
        .map(|(t, _)| {
            let (kind, unit) = t.unwrap_or(("", ""));
            ValueType { kind, unit }
        })
        .collect();
    let period = types
        .iter()
        .find(|(t, p)| p.is_some() && t.is_some_and(|(k, _)| matches!(k, "samples" | "sample")))
        .or_else(|| types.iter().find(|(_, p)| p.is_some()))
        .and_then(|(_, p)| *p)
        .map(|(kind, unit)| ValueType { kind, unit });
    classify(&vts, period)
}
