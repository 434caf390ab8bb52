//! The selected samples, taken from `samples` batches one after another.

use std::hash::BuildHasher;

use arrow_array::RecordBatch;
use hashbrown::HashTable;
use rustc_hash::{FxBuildHasher, FxHashMap};

use super::profiles::{RowProfiles, Selected};
use super::{Detail, Samples, Thread, NONE};
use crate::error::Result;
use crate::export::columns::{self as col, get, malformed, required};
use crate::export::select::Selection;
use crate::tables::Projection;

/// What a slice takes of `samples`, kept apart from the call trees until both are done.
pub(super) struct Taken {
    /// Each sample's `stack_id` in `node` ([`NONE`]: no stack), until the slice turns it
    /// into a node of the merged tree.
    pub samples: Samples,
    /// Each sample's profile, by its index among the selected.
    pub profile: Vec<u32>,
    pub threads: Vec<Thread>,
    pub label_sets: Vec<Vec<(String, String)>>,
    pub links: Vec<(String, String)>,
    /// The selected rows of each series.
    pub rows: Vec<u64>,
    /// The first and last selected sample's time (a profile's start and end for samples
    /// without one), ns.
    pub first: i64,
    pub last: i64,
}

/// Takes the selected samples of `samples` batches one after another, interning threads,
/// label sets and trace links across batches by content (a batch's text is gone when the
/// next arrives, so the tables are keyed by index and compared with the taken copies).
pub(super) struct SampleTaker<'a> {
    selected: &'a Selected<'a>,
    selection: &'a Selection,
    detail: Detail,
    taken: Taken,
    threads: HashTable<u32>,
    label_sets: HashTable<u32>,
    links: HashTable<u32>,
    /// With [`Detail::Summed`], the sample of each (profile, stack id, thread, label set,
    /// link).
    sums: FxHashMap<SumKey, Sum>,
}

/// What [`Detail::Summed`] sums rows by: profile index, stack id, thread, label set, link.
type SumKey = (u32, u32, u32, u32, u32);

/// The rows of one [`SumKey`], summed.
#[derive(Clone, Copy, Default)]
struct Sum {
    /// When the key was first seen: sums come out in that order.
    order: u32,
    rows: u32,
    value: i64,
    weight_ns: Option<i64>,
}

/// What a streamed slice reads of `samples`: [`SAMPLE_COLUMNS`], profile ids and thread names
/// as dictionaries.
pub(crate) const SAMPLE_PROJECTION: Projection<'static> = Projection {
    columns: &SAMPLE_COLUMNS,
    dictionary: &["profile_id", "thread_name"],
    skip_null_columns: true,
};

/// The columns of `samples` a slice reads.
pub(crate) const SAMPLE_COLUMNS: [&str; 10] = [
    "profile_id",
    "timestamp",
    "thread_id",
    "thread_name",
    "stack_id",
    "value",
    "weight_ns",
    "trace_id",
    "span_id",
    "labels",
];

impl<'a> SampleTaker<'a> {
    pub fn new(selected: &'a Selected<'a>, selection: &'a Selection, detail: Detail) -> Self {
        let mut samples = Samples::default();
        let mut profile = Vec::new();
        if detail == Detail::EveryRow {
            // At most what the profiles rows say (a bad count only costs memory within the
            // limits the rows themselves are bounded by).
            let rows = selected.rows.min(1 << 26);
            samples.reserve(rows);
            profile.reserve(rows);
        }
        SampleTaker {
            selected,
            selection,
            detail,
            taken: Taken {
                samples,
                profile,
                threads: Vec::new(),
                label_sets: Vec::new(),
                links: Vec::new(),
                rows: vec![0; selected.series],
                first: i64::MAX,
                last: i64::MIN,
            },
            threads: HashTable::new(),
            label_sets: HashTable::new(),
            links: HashTable::new(),
            sums: FxHashMap::default(),
        }
    }

    /// What was taken.
    pub fn finish(mut self) -> Taken {
        let mut sums: Vec<(SumKey, Sum)> = self.sums.into_iter().collect();
        sums.sort_unstable_by_key(|(_, sum)| sum.order);
        let out = &mut self.taken.samples;
        out.reserve(sums.len());
        for ((profile, stack, thread, labels, link), sum) in sums {
            out.series.push(self.selected.series_of[profile as usize]);
            out.node.push(stack);
            // A sum has no time.
            out.time_ns.push(None);
            out.thread.push(thread);
            out.value.push(sum.value);
            out.weight_ns.push(sum.weight_ns);
            out.labels.push(labels);
            out.link.push(link);
            out.rows.push(sum.rows);
            self.taken.profile.push(profile);
        }
        self.taken
    }

    /// The slice's thread of this process, id and name, added when new.
    fn thread(&mut self, process: u32, tid: Option<i64>, name: Option<&str>) -> u32 {
        let hasher = FxBuildHasher;
        let hash = hasher.hash_one((process, tid, name));
        let threads = &mut self.taken.threads;
        if let Some(&i) = self.threads.find(hash, |&i| {
            let t = &threads[i as usize];
            (t.process, t.tid, t.name.as_deref()) == (process, tid, name)
        }) {
            return i;
        }
        let i = threads.len() as u32;
        threads.push(Thread {
            process,
            tid,
            name: name.map(str::to_owned),
        });
        self.threads.insert_unique(hash, i, |&i| {
            let t = &threads[i as usize];
            hasher.hash_one((t.process, t.tid, t.name.as_deref()))
        });
        i
    }

    /// Takes the selected rows of one `samples` batch.
    pub fn take(&mut self, s: &RecordBatch) -> Result<()> {
        const T: &str = "samples";
        let (profile, timestamp, thread_id, thread_name, stack_id) = (
            RowProfiles::new(s, T, self.selected)?,
            col::micros(s, T, "timestamp")?,
            col::int64(s, T, "thread_id")?,
            col::TextKeys::new(s, T, "thread_name")?,
            col::int32(s, T, "stack_id")?,
        );
        // Each profile id and thread once per batch, not once per row.
        let mut thread_of: FxHashMap<(u32, Option<i64>, u32), u32> = FxHashMap::default();
        let (value, weight_ns, trace_id, span_id) = (
            col::int64(s, T, "value")?,
            col::int64(s, T, "weight_ns")?,
            col::text(s, T, "trace_id")?,
            col::text(s, T, "span_id")?,
        );
        let labels = col::MapRows::new(col::map(s, T, "labels")?)?;
        let hasher = FxBuildHasher;
        let mut scratch: Vec<(&str, &str)> = Vec::new();
        for row in 0..s.num_rows() {
            let Some(p) = profile.get(T, row)? else {
                continue;
            };
            let time_ns = get(timestamp, row).map(|us| us.saturating_mul(1000));
            if !self.selection.in_time(time_ns.unwrap_or(p.start_ns)) {
                continue;
            }
            let (tid, tname) = (get(thread_id, row), thread_name.get(row));
            if self
                .selection
                .thread
                .as_ref()
                .is_some_and(|want| !want.matches(tid, tname))
            {
                continue;
            }
            let stack = match get(stack_id, row) {
                None => NONE,
                Some(id) => u32::try_from(id).map_err(|_| {
                    malformed(format!("samples row {row}: stack_id {id} is negative"))
                })?,
            };
            let thread = match thread_of.get(&(p.process, tid, thread_name.keys[row])) {
                Some(&i) => i,
                None => {
                    let i = self.thread(p.process, tid, tname);
                    thread_of.insert((p.process, tid, thread_name.keys[row]), i);
                    i
                }
            };
            scratch.clear();
            scratch.extend(labels.entries(row));
            let label_set = if scratch.is_empty() {
                NONE
            } else {
                let hash = hasher.hash_one(scratch.as_slice());
                let sets = &mut self.taken.label_sets;
                let same = |set: &Vec<(String, String)>| {
                    set.len() == scratch.len()
                        && set
                            .iter()
                            .zip(&scratch)
                            .all(|((k, v), (sk, sv))| k == sk && v == sv)
                };
                match self.label_sets.find(hash, |&i| same(&sets[i as usize])) {
                    Some(&i) => i,
                    None => {
                        let i = sets.len() as u32;
                        sets.push(
                            scratch
                                .iter()
                                .map(|&(k, v)| (k.to_owned(), v.to_owned()))
                                .collect(),
                        );
                        self.label_sets.insert_unique(hash, i, |&i| {
                            hasher.hash_one(sets[i as usize].as_slice())
                        });
                        i
                    }
                }
            };
            let link = match (get(trace_id, row), get(span_id, row)) {
                (Some(t), Some(sp)) => self.link(t, sp),
                _ => NONE,
            };
            let taken = &mut self.taken;
            taken.first = taken.first.min(time_ns.unwrap_or(p.start_ns));
            taken.last = taken.last.max(time_ns.unwrap_or(p.end_ns));
            taken.rows[p.series as usize] += 1;
            let value = required(value, T, "value", row)?;
            let out = &mut taken.samples;
            if self.detail == Detail::Summed {
                // The sum is kept beside its key, so a row touches one place in memory.
                let key = (p.index as u32, stack, thread, label_set, link);
                let order = self.sums.len() as u32;
                let sum = self.sums.entry(key).or_insert(Sum {
                    order,
                    ..Sum::default()
                });
                sum.value = sum.value.saturating_add(value);
                if let Some(w) = get(weight_ns, row) {
                    sum.weight_ns = Some(sum.weight_ns.unwrap_or(0).saturating_add(w));
                }
                sum.rows = sum.rows.saturating_add(1);
                continue;
            }
            out.time_ns.push(time_ns);
            out.series.push(p.series);
            out.node.push(stack);
            out.thread.push(thread);
            out.value.push(value);
            out.weight_ns.push(get(weight_ns, row));
            out.labels.push(label_set);
            out.link.push(link);
            taken.profile.push(p.index as u32);
        }
        Ok(())
    }

    /// The taken trace link (trace id, span id), added when new.
    fn link(&mut self, trace: &str, span: &str) -> u32 {
        let hasher = FxBuildHasher;
        let hash = hasher.hash_one((trace, span));
        let links = &mut self.taken.links;
        if let Some(&i) = self.links.find(hash, |&i| {
            let (lt, ls) = &links[i as usize];
            (lt.as_str(), ls.as_str()) == (trace, span)
        }) {
            return i;
        }
        let i = links.len() as u32;
        links.push((trace.to_owned(), span.to_owned()));
        self.links.insert_unique(hash, i, |&i| {
            let (lt, ls) = &links[i as usize];
            hasher.hash_one((lt.as_str(), ls.as_str()))
        });
        i
    }
}
