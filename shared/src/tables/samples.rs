//! The `samples` rows: one per observation of the table plan.

use std::borrow::Cow;

use arrow_array::RecordBatch;

use super::columns::{batch, int32s, int64s, opt_timestamps, string_maps, strings};
use super::profiles::{micros, TableProfile};
use super::schema::Table;
use crate::error::Result;
use crate::model::{LabelValue, Profile, Sample};

/// One `samples` row: which profile, and the observation.
#[derive(Clone, Copy)]
pub(super) struct SampleRow<'a> {
    /// Index of the profile in the upload's list.
    pub profile: usize,
    /// `None` for an aggregated sample.
    pub time_us: Option<i64>,
    pub sample: &'a Sample,
}

/// Every profile's samples, sorted by (`timestamp` with aggregated ones first, `profile_id`);
/// the sort is stable, so samples of one profile at the same microsecond keep plan order.
pub(super) fn sample_rows<'a>(profiles: &[TableProfile<'a>]) -> Vec<SampleRow<'a>> {
    let mut rows: Vec<SampleRow<'a>> = profiles
        .iter()
        .enumerate()
        .flat_map(|(i, p)| {
            p.plan.samples.iter().map(move |&sample| SampleRow {
                profile: i,
                time_us: sample.time.map(micros),
                sample,
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
    sample: &Sample,
) -> Option<Vec<(&'p str, Cow<'p, str>)>> {
    let set = profile.label_set(sample.labels?);
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
    source_id: &str,
    profiles: &[TableProfile<'_>],
    rows: &[&SampleRow<'_>],
) -> Result<RecordBatch> {
    const T: Table = Table::Samples;
    let of = |r: &SampleRow<'_>| &profiles[r.profile];
    let links: Vec<_> = rows
        .iter()
        .map(|r| r.sample.link.map(|l| of(r).profile.link(l)))
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
        .map(|r| label_entries(of(r).profile, r.sample))
        .collect();
    let thread = |r: &SampleRow<'_>| of(r).profile.thread(r.sample.thread);
    batch(
        T,
        vec![
            strings(T, rows.iter().map(|_| Some(source_id)))?,
            strings(T, rows.iter().map(|r| Some(of(r).profile_id())))?,
            strings(T, rows.iter().map(|r| Some(of(r).sampled.sample_type)))?,
            strings(T, rows.iter().map(|r| Some(of(r).sampled.sample_unit)))?,
            opt_timestamps(rows.iter().map(|r| r.time_us)),
            int64s(rows.iter().map(|r| thread(r).tid)),
            strings(
                T,
                rows.iter().map(|r| of(r).profile.opt_str(thread(r).name)),
            )?,
            int32s(
                rows.iter()
                    .map(|r| r.sample.stack.and_then(|s| of(r).tree.stack_id(s))),
            ),
            int64s(rows.iter().map(|r| Some(r.sample.weight))),
            int64s(
                rows.iter()
                    .map(|r| of(r).sampled.weight_ns(r.sample.weight)),
            ),
            int32s(rows.iter().map(|r| r.sample.cpu)),
            strings(T, trace_ids.iter().map(Option::as_deref))?,
            strings(T, span_ids.iter().map(Option::as_deref))?,
            string_maps(T, &labels)?,
        ],
    )
}
