//! The `counters` rows: one per instant and per counter value (the models' marks), sorted by
//! `timestamp, pid, thread_id`.

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, RecordBatch};

use super::columns::{batch, int64s, string_maps, strings, timestamps};
use super::partition::day_of_us;
use super::profiles::micros;
use super::samples::label_entries;
use super::schema::Table;
use crate::error::Result;
use crate::model::{Mark, Process, Profile, Thread};

/// One `counters` row: which model, which of its marks, and what the rows are sorted by.
#[derive(Clone, Copy, Debug)]
pub(super) struct CounterRow {
    /// Index of the model in the list the rows were made from.
    model: usize,
    /// The mark's position in the model's [`Profile::marks`].
    mark: usize,
    pub time_us: i64,
    pid: Option<i64>,
    tid: Option<i64>,
}

/// Every mark of `models` as a row, in the table's order: by `timestamp`, `pid`, `thread_id`
/// (`None` first), then in the order the models and their marks come.
pub(super) fn counter_rows(models: &[&Profile]) -> Vec<CounterRow> {
    let total = models.iter().map(|m| m.marks().len()).sum();
    let mut rows = Vec::with_capacity(total);
    for (model, profile) in models.iter().enumerate() {
        for (mark, m) in profile.marks().iter().enumerate() {
            let thread = profile.thread(m.thread);
            rows.push(CounterRow {
                model,
                mark,
                time_us: micros(m.time),
                pid: profile.process(thread.process).pid,
                tid: thread.tid,
            });
        }
    }
    rows.sort_by_key(|r| (r.time_us, r.pid, r.tid));
    rows
}

/// The UTC days the marks of `models` fall on.
pub(super) fn mark_days(models: &[&Profile]) -> BTreeSet<i64> {
    models
        .iter()
        .flat_map(|m| m.marks())
        .map(|m| day_of_us(micros(m.time)))
        .collect()
}

/// What one row reads of its model.
struct Of<'a> {
    profile: &'a Profile,
    mark: &'a Mark,
    thread: Thread,
    process: &'a Process,
}

/// A text column of `rows`.
fn text<'a>(rows: &'a [Of<'a>], f: impl Fn(&'a Of<'a>) -> Option<&'a str>) -> Result<ArrayRef> {
    strings(Table::Counters, rows.iter().map(f))
}

/// The `counters` rows, in the given order.
pub(super) fn counters_batch(
    source_id: &str,
    models: &[&Profile],
    rows: &[CounterRow],
) -> Result<RecordBatch> {
    let of: Vec<Of<'_>> = rows
        .iter()
        .map(|r| {
            let profile = models[r.model];
            let mark = &profile.marks()[r.mark];
            let thread = profile.thread(mark.thread);
            let process = profile.process(thread.process);
            Of {
                profile,
                mark,
                thread,
                process,
            }
        })
        .collect();
    let labels: Vec<_> = of
        .iter()
        .map(|o| label_entries(o.profile, o.mark.labels))
        .collect();
    let values: Float64Array = of.iter().map(|o| o.mark.value).collect();
    batch(
        Table::Counters,
        vec![
            strings(Table::Counters, rows.iter().map(|_| Some(source_id)))?,
            timestamps(rows.iter().map(|r| r.time_us)),
            int64s(rows.iter().map(|r| r.pid)),
            text(&of, |o| o.profile.opt_str(o.process.name))?,
            int64s(rows.iter().map(|r| r.tid)),
            text(&of, |o| o.profile.opt_str(o.thread.name))?,
            text(&of, |o| Some(o.mark.kind.name()))?,
            text(&of, |o| Some(o.profile.str(o.mark.name)))?,
            text(&of, |o| o.profile.opt_str(o.mark.category))?,
            text(&of, |o| o.profile.opt_str(o.mark.key))?,
            Arc::new(values),
            text(&of, |o| o.mark.scope.map(|s| s.letter()))?,
            string_maps(Table::Counters, &labels)?,
        ],
    )
}
