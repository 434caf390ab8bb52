//! What the `profiles` row of a table profile says, and what the other tables need to know
//! about it (its call tree, series and day).

use std::collections::BTreeMap;

use arrow_array::RecordBatch;

use super::call_tree::{CallTree, StackIds};
use super::columns::{batch, int64s, string_maps, strings, timestamps};
use super::partition::day_of_us;
use super::schema::Table;
use super::series::Sampled;
use super::{TableProfileInput, TableSource};
use crate::error::Result;
use crate::model::{Process, Profile, StackHandle};
use crate::plan::{Runtimes, TableProfilePlan};

/// `ns` since the epoch to the tables' microseconds, rounding towards the past so times
/// before 1970 stay ordered.
pub(super) fn micros(ns: i64) -> i64 {
    ns.div_euclid(1000)
}

/// Everything the tables say about one table profile but its call tree, which is built again
/// for each table that needs it ([`TableProfile::tree`]) rather than held for every profile.
pub(super) struct TableProfile<'a> {
    pub input: &'a TableProfileInput<'a, 'a>,
    pub plan: &'a TableProfilePlan<'a>,
    pub profile: &'a Profile,
    pub process: &'a Process,
    pub sampled: Sampled<'a>,
    /// The samples' leaves that add nodes to its tree, in order: its tree is built again from
    /// these alone ([`CallTree::new_leaves`]).
    pub leaves: Vec<StackHandle>,
    pub platform: String,
    pub start_us: i64,
    pub end_us: i64,
    /// Days since the epoch of `start_us`: the `dt` of every row of this profile.
    pub day: i64,
    pub total_value: i64,
    pub total_weight_ns: Option<i64>,
    pub service: Option<&'a str>,
    pub host: Option<&'a str>,
    /// Profile attributes overridden by the process's, sorted by key.
    pub attributes: Vec<(&'a str, &'a str)>,
    /// Exact, over every part of its window added so far.
    pub sums: Sums,
}

/// A table profile's counts, exact, over the parts of its window added so far.
#[derive(Clone, Copy, Debug)]
pub(super) struct Sums {
    /// The first sample's time.
    pub start_ns: i64,
    pub samples: u64,
    pub total_value: i128,
    /// Zero when the series' unit is no time.
    pub total_weight_ns: i128,
}

/// What the earlier parts of a table profile's window added: its tree, with every leaf
/// that added nodes, and its sums.
#[derive(Debug)]
pub(super) struct Earlier {
    pub tree: CallTree,
    pub sums: Sums,
}

impl<'a> TableProfile<'a> {
    /// The profile, and its tree (which the caller may use before dropping it). `earlier` is
    /// what the earlier parts of its window added, when the window comes in parts: the profile
    /// then stands for all of them, its tree and its ids going on from theirs.
    pub fn new(
        source: &TableSource<'a>,
        input: &'a TableProfileInput<'a, 'a>,
        earlier: Option<Earlier>,
    ) -> (Self, CallTree) {
        let plan = input.plan;
        let profile = plan.profile;
        let sampled = Sampled::of(plan);
        let process = profile.process(plan.process);
        let process_attr = |key: &str| {
            process
                .attributes
                .iter()
                .find(|(k, _)| profile.str(*k) == key)
                .map(|(_, v)| profile.str(*v))
        };
        let profile_attr = |key: &str| profile.attributes.get(key).map(String::as_str);
        let service = source
            .service
            .or_else(|| process_attr("service.name"))
            .or_else(|| profile_attr("service.name"))
            .or_else(|| profile.opt_str(process.name));
        let host = process_attr("host.name").or_else(|| profile_attr("host.name"));
        let mut attributes: BTreeMap<&str, &str> = profile
            .attributes
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        for (k, v) in &process.attributes {
            attributes.insert(profile.str(*k), profile.str(*v));
        }
        for (k, v) in source.labels {
            attributes.insert(k, v);
        }
        let samples = profile.samples();
        let weights = || plan.samples.iter().map(|s| samples.weight(s as usize));
        let mut sums = Sums {
            start_ns: plan.start_ns,
            samples: plan.samples.len() as u64,
            total_value: weights().map(i128::from).sum(),
            total_weight_ns: weights()
                .map(|w| i128::from(sampled.weight_ns(w).unwrap_or(0)))
                .sum(),
        };
        let stacks = plan.samples.iter().map(|s| samples.stack(s as usize));
        let mut tree = match earlier {
            Some(Earlier { mut tree, sums: e }) => {
                tree.extend(profile, stacks);
                sums = Sums {
                    start_ns: e.start_ns,
                    samples: e.samples + sums.samples,
                    total_value: e.total_value + sums.total_value,
                    total_weight_ns: e.total_weight_ns + sums.total_weight_ns,
                };
                tree
            }
            None => CallTree::of_samples(profile, stacks),
        };
        let total_weight_ns = sampled.weight_ns(1).map(|_| clamp(sums.total_weight_ns));
        let leaves = std::mem::take(&mut tree.new_leaves);
        let mut runtimes = Runtimes::default();
        for &f in &tree.frames {
            runtimes.saw(profile.frame(f).kind);
        }
        let start_us = micros(sums.start_ns);
        let table_profile = TableProfile {
            input,
            plan,
            profile,
            process,
            sampled,
            leaves,
            platform: runtimes.platform(input.platform),
            start_us,
            end_us: micros(plan.end_ns),
            day: day_of_us(start_us),
            total_value: clamp(sums.total_value),
            total_weight_ns,
            sums,
            service,
            host,
            attributes: attributes.into_iter().collect(),
        };
        (table_profile, tree)
    }

    /// The ids its call tree gives its stacks, numbered again.
    pub fn stack_ids(&self) -> StackIds {
        StackIds::of(self.profile, &self.leaves)
    }

    pub fn profile_id(&self) -> &'a str {
        &self.plan.profile_id
    }
}

/// An exact sum back into the column type; only absurd weights saturate.
pub(super) fn clamp(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

/// One `profiles` row, owned: it outlives the window its profile was planned in.
#[derive(Clone, Debug)]
pub(super) struct ProfileRow {
    pub profile_id: String,
    pub platform: String,
    pub release: Option<String>,
    pub environment: Option<String>,
    pub service: Option<String>,
    pub host: Option<String>,
    pub pid: Option<i64>,
    pub process_name: Option<String>,
    pub sample_type: String,
    pub sample_unit: String,
    pub kind: &'static str,
    pub period: Option<i64>,
    pub frequency_hz: Option<i64>,
    pub aggregated: bool,
    /// Whether the rows are stretches of open spans (`timestamps` `spans`).
    pub spans: bool,
    pub start_us: i64,
    pub end_us: i64,
    pub samples: i64,
    pub total_value: i64,
    pub total_weight_ns: Option<i64>,
    pub attributes: Vec<(String, String)>,
}

impl TableProfile<'_> {
    /// Its `profiles` row.
    pub fn row(&self) -> ProfileRow {
        let owned = |v: Option<&str>| v.map(str::to_owned);
        ProfileRow {
            profile_id: self.profile_id().to_owned(),
            platform: self.platform.clone(),
            release: owned(self.input.release),
            environment: owned(self.input.environment),
            service: owned(self.service),
            host: owned(self.host),
            pid: self.process.pid,
            process_name: owned(self.profile.opt_str(self.process.name)),
            sample_type: self.sampled.sample_type.to_owned(),
            sample_unit: self.sampled.sample_unit.to_owned(),
            kind: self.sampled.kind,
            period: self.sampled.period,
            frequency_hz: self.sampled.frequency_hz,
            aggregated: self.plan.aggregated,
            spans: self.sampled.spans,
            start_us: self.start_us,
            end_us: self.end_us,
            samples: i64::try_from(self.sums.samples).unwrap_or(i64::MAX),
            total_value: self.total_value,
            total_weight_ns: self.total_weight_ns,
            attributes: self
                .attributes
                .iter()
                .map(|&(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
        }
    }
}

/// The `profiles` rows of `rows`, in the given order.
pub(super) fn profiles_batch(
    source: &TableSource<'_>,
    rows: &[&ProfileRow],
) -> Result<RecordBatch> {
    const T: Table = Table::Profiles;
    let same = |v: &str| strings(T, rows.iter().map(|_| Some(v)));
    let text = |f: fn(&ProfileRow) -> Option<&str>| strings(T, rows.iter().map(|r| f(r)));
    batch(
        T,
        vec![
            same(source.source_id)?,
            text(|r| Some(&r.profile_id))?,
            same(source.source_key)?,
            same(source.source_etag)?,
            same(source.source_format)?,
            same(source.converter)?,
            text(|r| Some(&r.platform))?,
            text(|r| r.release.as_deref())?,
            text(|r| r.environment.as_deref())?,
            text(|r| r.service.as_deref())?,
            text(|r| r.host.as_deref())?,
            int64s(rows.iter().map(|r| r.pid)),
            text(|r| r.process_name.as_deref())?,
            text(|r| Some(&r.sample_type))?,
            text(|r| Some(&r.sample_unit))?,
            text(|r| Some(r.kind))?,
            int64s(rows.iter().map(|r| r.period)),
            int64s(rows.iter().map(|r| r.frequency_hz)),
            text(|r| {
                Some(match (r.aggregated, r.spans) {
                    (true, _) => "aggregated",
                    (false, true) => "spans",
                    (false, false) => "recorded",
                })
            })?,
            timestamps(rows.iter().map(|r| r.start_us)),
            timestamps(rows.iter().map(|r| r.end_us)),
            int64s(rows.iter().map(|r| Some(r.samples))),
            int64s(rows.iter().map(|r| Some(r.total_value))),
            int64s(rows.iter().map(|r| r.total_weight_ns)),
            string_maps(
                T,
                &rows
                    .iter()
                    .map(|r| {
                        let entries = r.attributes.iter();
                        Some(entries.map(|(k, v)| (k.as_str(), v.as_str())).collect())
                    })
                    .collect::<Vec<Option<Vec<(&str, &str)>>>>(),
            )?,
            strings(
                T,
                rows.iter().map(|r| {
                    Some(match r.aggregated {
                        true => source.aggregated_clock,
                        false => source.timed_clock,
                    })
                }),
            )?,
        ],
    )
}
