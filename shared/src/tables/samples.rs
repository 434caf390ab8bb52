//! The `samples` rows: one per observation of the table plan.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::binary_heap::PeekMut;
use std::collections::BinaryHeap;

use arrow_array::RecordBatch;

use super::call_tree::StackIds;
use super::columns::{batch, int32s, int64s, opt_timestamps, string_maps, strings};
use super::profiles::{micros, TableProfile};
use super::schema::Table;
use crate::error::Result;
use crate::model::{CpuMode, LabelSetHandle, LabelValue, Profile};
use crate::plan::{RowsIter, TableProfilePlan};

/// One `samples` row: which profile, and the observation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct SampleRow {
    /// Index of the profile in the upload's list.
    pub profile: usize,
    /// `None` for an aggregated sample.
    pub time_us: Option<i64>,
    /// The observation's position in the model's [`Profile::samples`].
    pub index: usize,
    /// Its stack's id in its profile's call tree.
    pub stack_id: Option<u32>,
}

/// Every profile's samples in the table's order: by `timestamp` (aggregated ones first), then
/// `profile_id`, then profile, then plan order, as a stable sort of them all would give. Each
/// plan's samples are in time order already, so they are merged as they are read and no list
/// of every row is built; a plan that is not in time order is sorted first. `include` picks
/// the profiles (those of one day). A profile's stack ids are numbered when the merge reaches
/// its first sample and dropped after its last, so only the ids of profiles that overlap in
/// time are held at once.
pub(super) fn sample_rows<'s, 'a: 's>(
    profiles: &'s [TableProfile<'a>],
    include: impl Fn(&TableProfile<'a>) -> bool,
) -> SampleRows<'s> {
    // Each profile's place in `profile_id` order, so the merge compares integers, not ids.
    let mut by_id: Vec<usize> = (0..profiles.len()).collect();
    by_id.sort_by_key(|&i| profiles[i].profile_id());
    let mut rank = vec![0; profiles.len()];
    for (r, &i) in by_id.iter().enumerate() {
        rank[i] = r;
    }
    let mut lists = Vec::new();
    let mut heap = BinaryHeap::new();
    for (i, p) in profiles.iter().enumerate() {
        if !include(p) || p.plan.samples.is_empty() {
            continue;
        }
        let plan: &'s TableProfilePlan<'s> = p.plan;
        let time_us = |s: u32| plan.profile.samples().time(s as usize).map(micros);
        let mut samples = if plan.samples.iter().is_sorted_by_key(time_us) {
            InTimeOrder::Planned(plan.samples.iter())
        } else {
            let mut sorted: Vec<u32> = plan.samples.iter().collect();
            sorted.sort_by_key(|&s| time_us(s));
            InTimeOrder::Sorted(sorted.into_iter())
        };
        let Some(head) = samples.next() else { continue };
        heap.push(Reverse((time_us(head), rank[i], i, lists.len())));
        lists.push(List {
            profile: p,
            samples,
            head,
            ids: None,
        });
    }
    SampleRows { lists, heap }
}

/// One plan's samples in time order: as planned, or sorted.
enum InTimeOrder<'a> {
    Planned(RowsIter<'a>),
    Sorted(std::vec::IntoIter<u32>),
}

impl Iterator for InTimeOrder<'_> {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        match self {
            InTimeOrder::Planned(it) => it.next(),
            InTimeOrder::Sorted(it) => it.next(),
        }
    }
}

/// A list's next sample in the merge, in merge order: (time, rank of its profile id, profile,
/// list).
type Head = (Option<i64>, usize, usize, usize);

/// One profile's part of the merge.
struct List<'a> {
    profile: &'a TableProfile<'a>,
    /// The rest of its samples, in time order.
    samples: InTimeOrder<'a>,
    /// The next one.
    head: u32,
    /// Its call tree's stack ids, from its first sample read to its last.
    ids: Option<StackIds>,
}

/// The merge of [`sample_rows`].
pub(super) struct SampleRows<'a> {
    lists: Vec<List<'a>>,
    /// The next sample of each list not read to the end.
    heap: BinaryHeap<Reverse<Head>>,
}

impl Iterator for SampleRows<'_> {
    type Item = SampleRow;

    fn next(&mut self) -> Option<SampleRow> {
        // The head taken is replaced in place by its list's next sample: one sift down a row
        // instead of a pop and a push (heads are unique by list, so the order is the same).
        let mut head = self.heap.peek_mut()?;
        let Reverse((time_us, rank, profile, at)) = *head;
        let list = &mut self.lists[at];
        let index = list.head as usize;
        let model = list.profile.profile.samples();
        let ids = list.ids.get_or_insert_with(|| list.profile.stack_ids());
        let stack_id = model.stack(index).and_then(|s| ids.get(s));
        match list.samples.next() {
            Some(next) => {
                list.head = next;
                let next_us = model.time(next as usize).map(micros);
                *head = Reverse((next_us, rank, profile, at));
            }
            None => {
                list.ids = None;
                PeekMut::pop(head);
            }
        }
        Some(SampleRow {
            profile,
            time_us,
            index,
            stack_id,
        })
    }
}

/// A label set as map entries. Numbers read `"<value> <unit>"`. Keys repeat in pprof, but
/// DuckDB rejects a MAP with duplicate keys, so the first value of a key wins, as for process
/// attributes.
pub(super) fn label_entries(
    profile: &Profile,
    labels: Option<LabelSetHandle>,
) -> Option<Vec<(&str, Cow<'_, str>)>> {
    let set = profile.label_set(labels?);
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
    rows: &[SampleRow],
) -> Result<RecordBatch> {
    const T: Table = Table::Samples;
    let of = |r: &SampleRow| &profiles[r.profile];
    let samples = |r: &SampleRow| of(r).profile.samples();
    let links: Vec<_> = rows
        .iter()
        .map(|r| samples(r).link(r.index).map(|l| of(r).profile.link(l)))
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
        .map(|r| label_entries(of(r).profile, samples(r).labels(r.index)))
        .collect();
    let thread = |r: &SampleRow| of(r).profile.thread(samples(r).thread(r.index));
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
            int32s(rows.iter().map(|r| r.stack_id)),
            int64s(rows.iter().map(|r| Some(samples(r).weight(r.index)))),
            int64s(
                rows.iter()
                    .map(|r| of(r).sampled.weight_ns(samples(r).weight(r.index))),
            ),
            int32s(rows.iter().map(|r| samples(r).cpu(r.index))),
            strings(T, trace_ids.iter().map(Option::as_deref))?,
            strings(T, span_ids.iter().map(Option::as_deref))?,
            string_maps(T, &labels)?,
            strings(
                T,
                rows.iter().map(|r| match samples(r).cpu_mode(r.index) {
                    CpuMode::Unknown => None,
                    mode => Some(mode.name()),
                }),
            )?,
            strings(
                T,
                rows.iter()
                    .map(|r| of(r).profile.opt_str(samples(r).unwind_error(r.index))),
            )?,
            // 64 bits, as addresses are: a count past 2^63 reads as a negative BIGINT.
            int64s(
                rows.iter()
                    .map(|r| samples(r).counter(r.index).map(|c| c as i64)),
            ),
        ],
    )
}
