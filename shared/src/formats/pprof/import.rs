//! A decoded pprof `Profile` into the model: header, one series per sample type, samples.

use proflake_proto::pprof;
use prost::Message;
use rustc_hash::FxHashMap;

use super::frames::Frames;
use super::offsets::Offsets;
use super::tables::Tables;
use super::{labels, malformed, FORMAT};
use crate::error::Result;
use crate::formats::value_types::{self, ValueType};
use crate::limits::{exceeded, Limits};
use crate::model::{time_unit_ns, Profile, Sample, Series, SeriesHandle, StackHandle};

/// Stat: sample values of 0, which stand for nothing and are not kept.
const ZERO_VALUE: &str = "pprof_zero_value";
/// Stat: samples whose stack exceeds `max_stack_depth`, kept without a stack.
const STACK_TOO_DEEP: &str = "pprof_stack_too_deep";

/// Imports `p`, a profile decoded without its samples, and the samples of `bytes`, the
/// whole profile, decoded one at a time into one reused message.
pub(super) fn import(
    mut p: pprof::Profile,
    bytes: &[u8],
    offsets: &Offsets,
    limits: &Limits,
) -> Result<Profile> {
    let tables = Tables::new(&mut p, offsets)?;
    let mut profile = Profile::new(FORMAT);
    for &stat in &tables.stats {
        profile.count(stat);
    }
    header(&mut profile, &tables, &p);
    let series = series(&mut profile, &tables, &p);
    let mut frames = Frames::new(&mut profile, &tables, &p);
    let mut leaf_first = Vec::new();
    let mut stacks: FxHashMap<Box<[u64]>, (Option<StackHandle>, bool)> = FxHashMap::default();
    let mut kept = 0u64;
    let mut s = pprof::Sample::default();
    let mut label_scratch = Vec::new();
    for (i, body) in offsets.sample_bodies().iter().enumerate() {
        s.clear();
        s.merge(&bytes[body.clone()]).map_err(|e| {
            malformed(
                offsets.sample(i),
                format!("sample[{i}] does not decode: {e}"),
            )
            .with_source(e)
        })?;
        tables.check_sample(&s, i, offsets.sample(i))?;
        if s.value.len() != series.len() {
            return Err(malformed(
                offsets.sample(i),
                format!(
                    "sample[{i}] has {} values for {} sample types",
                    s.value.len(),
                    series.len()
                ),
            ));
        }
        // Samples repeat stacks (with other labels or values): each distinct location list is
        // resolved once. The flag says the stack was too deep to keep.
        let stack = match stacks.get(s.location_id.as_slice()) {
            Some(&(stack, too_deep)) => {
                if too_deep {
                    profile.count(STACK_TOO_DEEP);
                }
                stack
            }
            None => {
                leaf_first.clear();
                for &id in &s.location_id {
                    let frame = tables
                        .location(id)
                        .and_then(|index| frames.frame(&mut profile, &tables, &p, index));
                    let Some(frame) = frame else {
                        return Err(malformed(
                            offsets.sample(i),
                            format!("sample[{i}].location_id {id} not in location table"),
                        ));
                    };
                    leaf_first.push(frame);
                }
                let too_deep = leaf_first.len() as u64 > limits.max_stack_depth;
                let stack = if too_deep {
                    profile.count(STACK_TOO_DEEP);
                    None
                } else {
                    profile.add_stack_from_root(leaf_first.iter().rev().copied())
                };
                stacks.insert(s.location_id.as_slice().into(), (stack, too_deep));
                stack
            }
        };
        let tagged = labels::tag(&mut profile, &tables, &s.label, &mut label_scratch);
        for (&value, &series) in s.value.iter().zip(&series) {
            if value == 0 {
                profile.count(ZERO_VALUE);
                continue;
            }
            kept += 1;
            if kept > limits.max_samples {
                return Err(exceeded("max_samples", limits.max_samples));
            }
            let mut sample = Sample::new(tagged.thread, stack, value, series);
            sample.labels = tagged.labels;
            sample.link = tagged.link;
            profile.add_sample(sample);
        }
    }
    Ok(profile)
}

/// Collection time and the settings that have no model field of their own.
fn header(profile: &mut Profile, tables: &Tables, p: &pprof::Profile) {
    profile.start_time = (p.time_nanos > 0).then_some(p.time_nanos);
    profile.duration = (p.duration_nanos > 0).then_some(p.duration_nanos);
    let mut set = |key: String, value: &str| {
        if !value.is_empty() {
            profile.attributes.insert(key, value.to_owned());
        }
    };
    set("pprof.drop_frames".into(), tables.str(p.drop_frames));
    set("pprof.keep_frames".into(), tables.str(p.keep_frames));
    set("pprof.doc_url".into(), tables.str(p.doc_url));
    set(
        "pprof.default_sample_type".into(),
        tables.str(p.default_sample_type),
    );
    for (i, &c) in p.comment.iter().enumerate() {
        set(format!("pprof.comment.{i}"), tables.str(c));
    }
    if let Some(t) = &p.period_type {
        let (kind, unit) = (tables.str(t.r#type), tables.str(t.unit));
        if !kind.is_empty() || !unit.is_empty() {
            set("pprof.period_type".into(), &format!("{kind}/{unit}"));
        }
    }
    if p.period != 0 {
        set("pprof.period".into(), &p.period.to_string());
    }
}

/// One series per sample type, in order; which one is CPU or wall time follows the rule
/// shared with OTLP ([`value_types::classify`]).
fn series(profile: &mut Profile, tables: &Tables, p: &pprof::Profile) -> Vec<SeriesHandle> {
    let types: Vec<ValueType> = p
        .sample_type
        .iter()
        .map(|t| ValueType {
            kind: tables.str(t.r#type),
            unit: tables.str(t.unit),
        })
        .collect();
    let period_type = p
        .period_type
        .as_ref()
        .map(|t| ValueType {
            kind: tables.str(t.r#type),
            unit: tables.str(t.unit),
        })
        .filter(|t| !t.kind.is_empty() || !t.unit.is_empty());
    let kinds = value_types::classify(&types, period_type);
    let source = profile.intern(FORMAT);
    types
        .iter()
        .zip(kinds)
        .map(|(t, kind)| {
            let (period, frequency_hz) = sampling(t.unit, period_type, p.period);
            let series = Series {
                kind,
                name: profile.intern(t.kind),
                unit: profile.intern(t.unit),
                source: Some(source),
                frequency_hz,
                period,
                spans: false,
            };
            profile.add_series(series)
        })
        .collect()
}

/// The series' sampling period (when `period` is in the series' own unit) or frequency (when
/// the series counts samples taken every `period` of time): `(period, frequency_hz)`.
fn sampling(unit: &str, period_type: Option<ValueType>, period: i64) -> (Option<u64>, Option<u64>) {
    let (Some(pt), Ok(period)) = (period_type, u64::try_from(period)) else {
        return (None, None);
    };
    if period == 0 {
        return (None, None);
    }
    if !unit.is_empty() && pt.unit == unit {
        return (Some(period), None);
    }
    let counts = matches!(unit, "" | "count" | "samples");
    let period_ns = time_unit_ns(pt.unit).and_then(|ns| period.checked_mul(ns.unsigned_abs()));
    match period_ns {
        Some(ns) if counts => {
            let hz = (1e9 / ns as f64).round() as u64;
            (None, (hz > 0).then_some(hz))
        }
        _ => (None, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vt<'a>(kind: &'a str, unit: &'a str) -> Option<ValueType<'a>> {
        Some(ValueType { kind, unit })
    }

    #[test]
    fn period_or_frequency() {
        let cpu = vt("cpu", "nanoseconds");
        assert_eq!(
            sampling("nanoseconds", cpu, 10_000_000),
            (Some(10_000_000), None)
        );
        assert_eq!(sampling("count", cpu, 10_000_000), (None, Some(100)));
        assert_eq!(
            sampling("count", vt("cpu", "milliseconds"), 10),
            (None, Some(100))
        );
        assert_eq!(
            sampling("bytes", vt("space", "bytes"), 524_288),
            (Some(524_288), None)
        );
        assert_eq!(
            sampling("count", vt("space", "bytes"), 524_288),
            (None, None)
        );
        assert_eq!(sampling("count", cpu, 0), (None, None));
        assert_eq!(sampling("count", None, 10), (None, None));
        // Longer than a second: below 1 Hz, no frequency.
        assert_eq!(sampling("count", cpu, 3_000_000_000), (None, None));
    }
}
