//! One table profile per Sample v2 chunk: what the `profiles` row says, and what the other
//! tables need to know about the chunk (its call tree, weight unit, day).

use std::collections::BTreeMap;

use arrow_array::RecordBatch;

use super::call_tree::CallTree;
use super::columns::{batch, int64s, string_maps, strings, timestamps};
use super::frames::frame_name;
use super::partition::day_of_us;
use super::schema::Table;
use super::series::Sampled;
use super::{TableChunk, TableSource};
use crate::error::{ErrorKind, Result};
use crate::model::{Process, Profile};
use crate::plan::Timing;

/// `ns` since the epoch to the tables' microseconds, rounding towards the past so times
/// before 1970 stay ordered.
pub(super) fn micros(ns: i64) -> i64 {
    ns.div_euclid(1000)
}

/// Everything the tables say about one chunk.
pub(super) struct TableProfile<'a> {
    pub chunk: &'a TableChunk<'a, 'a>,
    pub profile: &'a Profile,
    pub process: Option<&'a Process>,
    pub sampled: Sampled,
    pub tree: CallTree,
    /// `frames.name` by frame id.
    pub names: Vec<String>,
    pub start_us: i64,
    pub end_us: i64,
    /// Days since the epoch of `start_us`: the `dt` of every row of this profile.
    pub day: i64,
    pub total_weight: i64,
    pub service: Option<&'a str>,
    pub host: Option<&'a str>,
    /// Profile attributes overridden by the process's, sorted by key.
    pub attributes: Vec<(&'a str, &'a str)>,
}

impl<'a> TableProfile<'a> {
    pub fn new(source: &TableSource<'a>, chunk: &'a TableChunk<'a, 'a>) -> Result<Self> {
        let plan = chunk.plan;
        let profile = plan.profile;
        // plan_chunks never plans an empty chunk and Relay rejects one, so this only guards
        // against a caller's hand-made plan: without samples there is no time for the row.
        let no_samples = || ErrorKind::NoSamples {
            why: format!("chunk {} has no samples to tabulate", plan.chunk_id),
        };
        let sampled = Sampled::of(plan).ok_or_else(no_samples)?;
        let start_ns = plan.samples.iter().map(|p| p.time).min();
        let end_ns = plan.samples.iter().map(|p| p.time).max();
        let (Some(start_ns), Some(end_ns)) = (start_ns, end_ns) else {
            return Err(no_samples().into());
        };
        // A chunk covers one process; its first sample names it.
        let process = plan
            .samples
            .first()
            .map(|p| profile.process(profile.thread(p.sample.thread).process));
        let process_attr = |key: &str| {
            process.and_then(|p| {
                p.attributes
                    .iter()
                    .find(|(k, _)| profile.str(*k) == key)
                    .map(|(_, v)| profile.str(*v))
            })
        };
        let profile_attr = |key: &str| profile.attributes.get(key).map(String::as_str);
        let service = source
            .service
            .or_else(|| process_attr("service.name"))
            .or_else(|| profile_attr("service.name"))
            .or_else(|| process.and_then(|p| profile.opt_str(p.name)));
        let host = process_attr("host.name").or_else(|| profile_attr("host.name"));
        let mut attributes: BTreeMap<&str, &str> = profile
            .attributes
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        for (k, v) in process.map_or(&[][..], |p| &p.attributes) {
            attributes.insert(profile.str(*k), profile.str(*v));
        }
        let total_weight: i128 = plan
            .samples
            .iter()
            .map(|p| i128::from(sampled.weight(p)))
            .sum();
        let tree = CallTree::of(plan);
        let names = tree
            .frames
            .iter()
            .map(|&f| frame_name(profile, profile.frame(f)))
            .collect();
        let start_us = micros(start_ns);
        Ok(TableProfile {
            chunk,
            profile,
            process,
            sampled,
            tree,
            names,
            start_us,
            end_us: micros(end_ns),
            day: day_of_us(start_us),
            total_weight: clamp(total_weight),
            service,
            host,
            attributes: attributes.into_iter().collect(),
        })
    }

    pub fn profile_id(&self) -> &'a str {
        &self.chunk.plan.chunk_id
    }
}

/// An exact sum back into the column type; only absurd weights saturate.
pub(super) fn clamp(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

/// The `profiles` rows of `rows`, in the given order.
pub(super) fn profiles_batch(
    source: &TableSource<'_>,
    rows: &[&TableProfile<'_>],
) -> Result<RecordBatch> {
    const T: Table = Table::Profiles;
    let same = |v: &str| strings(T, rows.iter().map(|_| Some(v)));
    let timing = |r: &&TableProfile<'_>| r.chunk.plan.timing;
    batch(
        T,
        vec![
            strings(T, rows.iter().map(|r| Some(r.profile_id())))?,
            strings(T, rows.iter().map(|r| Some(&*r.chunk.plan.profiler_id)))?,
            same(source.source_id)?,
            same(source.source_key)?,
            same(source.source_etag)?,
            same(source.source_format)?,
            same(source.converter)?,
            strings(T, rows.iter().map(|r| Some(r.chunk.platform)))?,
            strings(T, rows.iter().map(|r| r.chunk.release))?,
            strings(T, rows.iter().map(|r| r.chunk.environment))?,
            strings(T, rows.iter().map(|r| r.service))?,
            strings(T, rows.iter().map(|r| r.host))?,
            int64s(
                rows.iter()
                    .map(|r| r.chunk.plan.pid.or(r.process.and_then(|p| p.pid))),
            ),
            strings(
                T,
                rows.iter()
                    .map(|r| r.process.and_then(|p| r.profile.opt_str(p.name))),
            )?,
            timestamps(rows.iter().map(|r| r.start_us)),
            timestamps(rows.iter().map(|r| r.end_us)),
            strings(T, rows.iter().map(|r| Some(&*r.sampled.sample_type)))?,
            strings(T, rows.iter().map(|r| Some(&*r.sampled.sample_unit)))?,
            int64s(rows.iter().map(|r| r.sampled.period)),
            int64s(rows.iter().map(|r| r.sampled.frequency_hz)),
            strings(
                T,
                rows.iter().map(|r| {
                    Some(match timing(r) {
                        Timing::Recorded => "recorded",
                        Timing::Expanded { .. } => "expanded",
                    })
                }),
            )?,
            int64s(rows.iter().map(|r| match timing(r) {
                Timing::Recorded => None,
                Timing::Expanded { interval_ns } => Some(interval_ns),
            })),
            int64s(
                rows.iter()
                    .map(|r| Some(i64::try_from(r.chunk.plan.samples.len()).unwrap_or(i64::MAX))),
            ),
            int64s(rows.iter().map(|r| Some(r.total_weight))),
            string_maps(
                T,
                &rows
                    .iter()
                    .map(|r| Some(r.attributes.clone()))
                    .collect::<Vec<_>>(),
            )?,
        ],
    )
}
