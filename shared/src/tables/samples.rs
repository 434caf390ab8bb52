//! The `samples` rows: one per planned sample, so a profile's row count is its Sample v2
//! chunk's sample count.

use std::borrow::Cow;

use arrow_array::RecordBatch;

use super::columns::{batch, int64s, string_maps, strings, timestamps, uint32s};
use super::profiles::{micros, TableProfile};
use super::schema::Table;
use crate::error::Result;
use crate::model::{LabelValue, Profile};
use crate::plan::PlannedSample;

/// One `samples` row: which profile, and the planned sample.
#[derive(Clone, Copy)]
pub(super) struct SampleRow<'a> {
    /// Index of the profile in the upload's list.
    pub profile: usize,
    pub time_us: i64,
    pub planned: &'a PlannedSample<'a>,
}

/// Every profile's samples, sorted by (`timestamp`, `profile_id`); the sort is stable, so
/// samples of one profile at the same microsecond keep plan order.
pub(super) fn sample_rows<'a>(profiles: &[TableProfile<'a>]) -> Vec<SampleRow<'a>> {
    let mut rows: Vec<SampleRow<'a>> = profiles
        .iter()
        .enumerate()
        .flat_map(|(i, p)| {
            p.chunk.plan.samples.iter().map(move |planned| SampleRow {
                profile: i,
                time_us: micros(planned.time),
                planned,
            })
        })
        .collect();
    rows.sort_by(|a, b| {
        a.time_us.cmp(&b.time_us).then_with(|| {
            profiles[a.profile]
                .profile_id()
                .cmp(profiles[b.profile].profile_id())
        })
    });
    rows
}

/// A label set as map entries. Numbers read `"<value> <unit>"`. Keys repeat in pprof, but
/// DuckDB rejects a MAP with duplicate keys, so the first value of a key wins, as for process
/// attributes.
fn label_entries<'p>(
    profile: &'p Profile,
    row: &PlannedSample<'_>,
) -> Option<Vec<(&'p str, Cow<'p, str>)>> {
    let set = profile.label_set(row.sample.labels?);
    let mut entries: Vec<(&str, Cow<str>)> = Vec::with_capacity(set.len());
    for label in set {
        let key = profile.str(label.key);
        if entries.iter().any(|(k, _)| *k == key) {
            continue;
        }
        let value = match label.value {
            LabelValue::Str(s) => Cow::Borrowed(profile.str(s)),
            LabelValue::Num { value, unit: None } => Cow::Owned(value.to_string()),
            LabelValue::Num {
                value,
                unit: Some(unit),
            } => Cow::Owned(format!("{value} {}", profile.str(unit))),
        };
        entries.push((key, value));
    }
    Some(entries)
}

/// The `samples` rows, in the given order.
pub(super) fn samples_batch(
    profiles: &[TableProfile<'_>],
    rows: &[&SampleRow<'_>],
) -> Result<RecordBatch> {
    const T: Table = Table::Samples;
    let of = |r: &SampleRow<'_>| &profiles[r.profile];
    let links: Vec<_> = rows
        .iter()
        .map(|r| r.planned.sample.link.map(|l| of(r).profile.link(l)))
        .collect();
    let trace_ids: Vec<Option<String>> = links
        .iter()
        .map(|l| l.map(|l| hex::encode(l.trace_id)))
        .collect();
    let span_ids: Vec<Option<String>> = links
        .iter()
        .map(|l| l.map(|l| hex::encode(l.span_id)))
        .collect();
    let labels: Vec<_> = rows
        .iter()
        .map(|r| label_entries(of(r).profile, r.planned))
        .collect();
    let thread = |r: &SampleRow<'_>| of(r).profile.thread(r.planned.sample.thread);
    batch(
        T,
        vec![
            strings(T, rows.iter().map(|r| Some(of(r).profile_id())))?,
            timestamps(rows.iter().map(|r| r.time_us)),
            int64s(rows.iter().map(|r| thread(r).tid)),
            strings(
                T,
                rows.iter().map(|r| of(r).profile.opt_str(thread(r).name)),
            )?,
            uint32s(
                rows.iter()
                    .map(|r| r.planned.sample.stack.and_then(|s| of(r).tree.stack_id(s))),
            ),
            int64s(rows.iter().map(|r| Some(of(r).sampled.weight(r.planned)))),
            uint32s(rows.iter().map(|r| r.planned.sample.cpu)),
            strings(T, trace_ids.iter().map(Option::as_deref))?,
            strings(T, span_ids.iter().map(Option::as_deref))?,
            string_maps(T, &labels)?,
        ],
    )
}
