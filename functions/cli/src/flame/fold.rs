//! Folding the stack tables into weighted folded stacks (`root;…;leaf weight`), the input of
//! every flame graph tool. A graph draws one series: values of different series (CPU time,
//! bytes allocated, events) do not add up.

use std::collections::BTreeSet;

use arrow_array::{
    Array, Int32Array, Int64Array, RecordBatch, StringArray, TimestampMicrosecondArray,
};
use rustc_hash::{FxHashMap, FxHashSet};

use super::columns::{self, opt_i32, opt_i64, opt_str, opt_time, required};
use super::paths::Paths;
use proflake::tables::TableBatches;
use proflake::{export::IdOrName, export::Selection};
use proflake::{ErrorKind, Result};

/// Which samples go into a flame graph, and how they are weighed.
#[derive(Clone, Debug, Default)]
pub struct FlameFilter {
    /// Which profiles and samples, as an export selects them. Its `series` is not used: a graph
    /// draws the one series `sample_type` chooses.
    pub selection: Selection,
    /// Only this series (`profiles.sample_type`). `None`: the CPU-time series of the selected
    /// profiles (`series_kind` `cpu_time`), else their wall-time series, else their first
    /// series by name and unit.
    pub sample_type: Option<String>,
    /// Count rows even when the profiles share a unit.
    pub count_samples: bool,
}

impl FlameFilter {
    /// What the filter selects, for messages and titles; empty when it selects everything.
    pub fn describe(&self) -> String {
        Selection {
            series: self.sample_type.iter().cloned().collect(),
            ..self.selection.clone()
        }
        .describe()
    }
}

/// Folded stacks: what a flame graph draws.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Folded {
    /// `root;…;leaf` and its summed weight, sorted by path.
    pub lines: Vec<(String, u64)>,
    /// What the weights count: the profiles' shared unit (`nanoseconds`, `bytes`; `samples`
    /// for a series counted in samples), `nanoseconds` of `weight_ns` when their units differ,
    /// or `samples` when rows are counted.
    pub unit: String,
    /// The series drawn (`sample_type` of the profiles folded), sorted.
    pub sample_types: Vec<String>,
    /// `samples` rows folded (an aggregated sample is one row).
    pub samples: u64,
    /// Profiles those rows come from.
    pub profiles: usize,
}

impl Folded {
    /// Sum of all weights.
    pub fn total(&self) -> u64 {
        self.lines.iter().map(|(_, w)| w).sum()
    }
}

/// The `profiles` rows a filter keeps.
struct Profiles<'a> {
    ids: Vec<&'a str>,
    index: FxHashMap<&'a str, usize>,
    sample_types: Vec<&'a str>,
    units: Vec<&'a str>,
    /// `start_time`, µs: the time of the profile's aggregated samples, which have none.
    starts: Vec<i64>,
    selected: Vec<bool>,
}

fn no_samples(why: String) -> proflake::Error {
    ErrorKind::NoSamples { why }.into()
}

/// Up to 20 distinct values, sorted, for a message naming what exists.
fn listing(values: BTreeSet<String>) -> String {
    if values.is_empty() {
        return "none".into();
    }
    let more = values.len().saturating_sub(20);
    let mut out = values.into_iter().take(20).collect::<Vec<_>>().join(", ");
    if more > 0 {
        out.push_str(&format!(" and {more} more"));
    }
    out
}

fn select_profiles<'a>(tables: &'a TableBatches, filter: &FlameFilter) -> Result<Profiles<'a>> {
    let p = &tables.profiles;
    let (id, service, pid, process) = (
        columns::strings(p, "profiles", "profile_id")?,
        columns::strings(p, "profiles", "service")?,
        columns::i64s(p, "profiles", "pid")?,
        columns::strings(p, "profiles", "process_name")?,
    );
    // Read only when the filter needs them.
    let column = |name: &str, wanted: &Option<String>| {
        wanted
            .as_ref()
            .map(|_| columns::strings(p, "profiles", name))
            .transpose()
    };
    let (source, release, environment) = (
        column("source_id", &filter.selection.source_id)?,
        column("release", &filter.selection.release)?,
        column("environment", &filter.selection.environment)?,
    );
    let (sample_type, unit, kind, start) = (
        columns::strings(p, "profiles", "sample_type")?,
        columns::strings(p, "profiles", "sample_unit")?,
        columns::strings(p, "profiles", "series_kind")?,
        columns::timestamps(p, "profiles", "start_time")?,
    );
    let n = p.num_rows();
    let mut out = Profiles {
        ids: Vec::with_capacity(n),
        index: FxHashMap::with_capacity_and_hasher(n, Default::default()),
        sample_types: Vec::with_capacity(n),
        units: Vec::with_capacity(n),
        starts: Vec::with_capacity(n),
        selected: Vec::with_capacity(n),
    };
    let mut kinds = Vec::with_capacity(n);
    for row in 0..n {
        let profile_id = required(opt_str(id, row), "profiles", "profile_id", row)?;
        out.index.insert(profile_id, row);
        out.ids.push(profile_id);
        let text = |a, name| required(opt_str(a, row), "profiles", name, row);
        out.sample_types.push(text(sample_type, "sample_type")?);
        out.units.push(text(unit, "sample_unit")?);
        kinds.push(text(kind, "series_kind")?);
        out.starts.push(required(
            opt_time(start, row),
            "profiles",
            "start_time",
            row,
        )?);
        let matches = |column: Option<&StringArray>, wanted: &Option<String>| match (
            column,
            wanted.as_deref(),
        ) {
            (Some(column), Some(w)) => opt_str(column, row) == Some(w),
            _ => true,
        };
        out.selected.push(
            matches(Some(service), &filter.selection.service)
                && matches(source, &filter.selection.source_id)
                && matches(release, &filter.selection.release)
                && matches(environment, &filter.selection.environment),
        );
    }
    if !out.selected.contains(&true) {
        if let Some(wanted) = &filter.selection.service {
            return Err(no_such_service(wanted, service));
        }
        if filter.selection.source_id.is_some()
            || filter.selection.release.is_some()
            || filter.selection.environment.is_some()
        {
            let releases = release.map_or_else(BTreeSet::new, |release| {
                (0..release.len())
                    .filter_map(|r| opt_str(release, r).map(str::to_owned))
                    .collect()
            });
            return Err(no_samples(format!(
                "no profile matches {}; releases in the tables: {}",
                filter.describe(),
                listing(releases)
            )));
        }
    }
    if let Some(wanted) = &filter.selection.process {
        select_process(&mut out.selected, wanted, pid, process)?;
    }
    choose_series(&mut out, &kinds, filter)?;
    Ok(out)
}

/// No profile is of the wanted service: the error names the services there are.
fn no_such_service(wanted: &str, service: &StringArray) -> proflake::Error {
    let services: BTreeSet<String> = (0..service.len())
        .filter_map(|r| opt_str(service, r).map(str::to_owned))
        .collect();
    let known = if services.is_empty() {
        "none (no profile names one)".to_owned()
    } else {
        listing(services)
    };
    no_samples(format!(
        "no profile of service {wanted:?}; services in the tables: {known}"
    ))
}

/// Narrows the selected profiles to those of the wanted process; none is an error naming the
/// processes of those selected before.
fn select_process(
    selected: &mut [bool],
    wanted: &IdOrName,
    pid: &Int64Array,
    process: &StringArray,
) -> Result<()> {
    let in_scope: Vec<usize> = (0..selected.len()).filter(|&r| selected[r]).collect();
    for &row in &in_scope {
        selected[row] = wanted.matches(opt_i64(pid, row), opt_str(process, row));
    }
    if selected.contains(&true) {
        return Ok(());
    }
    let processes = in_scope
        .iter()
        .map(|&r| match (opt_i64(pid, r), opt_str(process, r)) {
            (Some(pid), Some(name)) => format!("{pid} ({name})"),
            (Some(pid), None) => pid.to_string(),
            (None, Some(name)) => name.to_owned(),
            (None, None) => "(unnamed)".into(),
        });
    Err(no_samples(format!(
        "no profile of process {wanted}; processes: {}",
        listing(processes.collect())
    )))
}

/// Narrows the selected profiles to one series: the one the filter names, or the CPU-time
/// series, else the wall-time one, else the first by name and unit (see
/// [`FlameFilter::sample_type`]).
fn choose_series(out: &mut Profiles<'_>, kinds: &[&str], filter: &FlameFilter) -> Result<()> {
    let in_scope: Vec<usize> = (0..out.ids.len()).filter(|&r| out.selected[r]).collect();
    let series = |r: usize| (out.sample_types[r], out.units[r]);
    let has = |kind: &str| in_scope.iter().any(|&r| kinds[r] == kind);
    let keep: Vec<bool> = match &filter.sample_type {
        Some(wanted) => (0..out.ids.len())
            .map(|r| out.sample_types[r] == wanted.as_str())
            .collect(),
        None if has("cpu_time") => kinds.iter().map(|&k| k == "cpu_time").collect(),
        None if has("wall_time") => kinds.iter().map(|&k| k == "wall_time").collect(),
        None => {
            let first = in_scope.iter().map(|&r| series(r)).min();
            (0..out.ids.len())
                .map(|r| Some(series(r)) == first)
                .collect()
        }
    };
    let kept: Vec<bool> = (0..out.ids.len())
        .map(|r| out.selected[r] && keep[r])
        .collect();
    if let Some(wanted) = &filter.sample_type {
        if !kept.contains(&true) {
            let names = in_scope.iter().map(|&r| {
                let (name, unit) = series(r);
                format!("{name:?} ({unit})")
            });
            return Err(no_samples(format!(
                "no profile of series {wanted:?}; series: {}",
                listing(names.collect())
            )));
        }
    }
    out.selected = kept;
    Ok(())
}

/// How a row weighs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Weigh {
    Value,
    WeightNs,
    Count,
}

/// The `samples` columns a flame graph reads.
struct SampleColumns<'a> {
    profile_id: &'a StringArray,
    time: &'a TimestampMicrosecondArray,
    tid: &'a Int64Array,
    thread_name: &'a StringArray,
    stack: &'a Int32Array,
    value: &'a Int64Array,
    weight_ns: &'a Int64Array,
}

impl<'a> SampleColumns<'a> {
    fn of(s: &'a RecordBatch) -> Result<Self> {
        Ok(SampleColumns {
            profile_id: columns::strings(s, "samples", "profile_id")?,
            time: columns::timestamps(s, "samples", "timestamp")?,
            tid: columns::i64s(s, "samples", "thread_id")?,
            thread_name: columns::strings(s, "samples", "thread_name")?,
            stack: columns::i32s(s, "samples", "stack_id")?,
            value: columns::i64s(s, "samples", "value")?,
            weight_ns: columns::i64s(s, "samples", "weight_ns")?,
        })
    }
}

/// A `samples` row the filter keeps: its row, its profile's row, its `stack_id`.
type Matched = (usize, usize, Option<i32>);

/// Folds the samples the filter selects into weighted stacks.
///
/// One series is drawn (see [`FlameFilter::sample_type`]). Rows weigh their `value` when the
/// profiles they come from share one `sample_unit`; else their `weight_ns` when every row has
/// one (CPU time counted in samples beside CPU time in nanoseconds); else, or with
/// [`FlameFilter::count_samples`], each row counts 1. An aggregated row (no `timestamp`) is at
/// its profile's `start_time` for the time range. Rows without a stack (idle, or a producer
/// that recorded none) are one `<no stack>` frame: they are part of what was sampled, so the
/// graph's total is the series' total. Selecting nothing is an error that says what exists,
/// not an empty graph.
pub fn fold(tables: &TableBatches, filter: &FlameFilter) -> Result<Folded> {
    let profiles = select_profiles(tables, filter)?;
    let rows = SampleColumns::of(&tables.samples)?;
    let matched = matching_rows(&rows, tables.samples.num_rows(), &profiles, filter)?;
    let used: FxHashSet<usize> = matched.iter().map(|&(_, p, _)| p).collect();
    let (weigh, unit) = weighing(filter, &profiles, &used, &matched, rows.weight_ns);
    let mut paths = Paths::load(tables, &profiles.ids, &profiles.index, &used)?;
    let sums = sum_paths(&rows, &matched, weigh, &mut paths)?;
    let mut lines: Vec<(String, u64)> = paths.paths.into_iter().zip(sums).collect();
    lines.sort();
    let sample_types: BTreeSet<&str> = used.iter().map(|&p| profiles.sample_types[p]).collect();
    Ok(Folded {
        lines,
        unit: unit.to_owned(),
        sample_types: sample_types.into_iter().map(str::to_owned).collect(),
        samples: matched.len() as u64,
        profiles: used.len(),
    })
}

/// The rows of selected profiles in the time range and of the wanted thread; none is an
/// error naming the threads there are.
fn matching_rows(
    c: &SampleColumns<'_>,
    rows: usize,
    profiles: &Profiles<'_>,
    filter: &FlameFilter,
) -> Result<Vec<Matched>> {
    // Compare in i128 ns: µs × 1000 cannot overflow there.
    let from = filter.selection.from_ns.map_or(i128::MIN, i128::from);
    let to = filter.selection.to_ns.map_or(i128::MAX, i128::from);
    // The threads of rows that pass the other filters, to name them when none is the
    // wanted one; then the rows of the wanted thread.
    let mut threads: BTreeSet<(Option<i64>, Option<&str>)> = BTreeSet::new();
    let mut matched = Vec::new();
    for row in 0..rows {
        let id = required(opt_str(c.profile_id, row), "samples", "profile_id", row)?;
        let &p = profiles.index.get(id).ok_or_else(|| {
            columns::error(format!(
                "samples row {row} names profile {id}, not in profiles"
            ))
        })?;
        if !profiles.selected[p] {
            continue;
        }
        let us = opt_time(c.time, row).unwrap_or(profiles.starts[p]);
        let ns = i128::from(us) * 1000;
        if ns < from || ns > to {
            continue;
        }
        let thread = (opt_i64(c.tid, row), opt_str(c.thread_name, row));
        let thread_ok = match &filter.selection.thread {
            None => true,
            Some(wanted) => {
                threads.insert(thread);
                wanted.matches(thread.0, thread.1)
            }
        };
        if thread_ok {
            matched.push((row, p, opt_i32(c.stack, row)));
        }
    }
    if matched.is_empty() {
        return Err(nothing_matches(filter, &threads));
    }
    Ok(matched)
}

/// Why no sample matched, with the threads of the rows the other filters kept.
fn nothing_matches(
    filter: &FlameFilter,
    threads: &BTreeSet<(Option<i64>, Option<&str>)>,
) -> proflake::Error {
    let mut why = format!("no sample matches {}", filter.describe());
    if !threads.is_empty() {
        let names = threads.iter().map(|thread| match *thread {
            (Some(t), Some(n)) => format!("{t} ({n})"),
            (Some(t), None) => t.to_string(),
            (None, Some(n)) => n.to_owned(),
            (None, None) => "?".into(),
        });
        why.push_str(&format!("; threads: {}", listing(names.collect())));
    }
    no_samples(why)
}

/// How the matched rows weigh, and the unit of that weight.
fn weighing<'a>(
    filter: &FlameFilter,
    profiles: &Profiles<'a>,
    used: &FxHashSet<usize>,
    matched: &[Matched],
    weight_ns: &Int64Array,
) -> (Weigh, &'a str) {
    let units: BTreeSet<&str> = used.iter().map(|&p| profiles.units[p]).collect();
    let weigh = if filter.count_samples {
        Weigh::Count
    } else if units.len() == 1 {
        Weigh::Value
    } else if matched.iter().all(|&(row, _, _)| weight_ns.is_valid(row)) {
        Weigh::WeightNs
    } else {
        Weigh::Count
    };
    let unit = match (weigh, units.first()) {
        (Weigh::Value, Some(&u)) if u != "count" => u,
        (Weigh::WeightNs, _) => "nanoseconds",
        // The tables' `count` unit is counted samples.
        _ => "samples",
    };
    (weigh, unit)
}

/// The summed weight of each folded path, by the path's index in `paths`.
fn sum_paths(
    c: &SampleColumns<'_>,
    matched: &[Matched],
    weigh: Weigh,
    paths: &mut Paths<'_>,
) -> Result<Vec<u64>> {
    let mut sums: Vec<u64> = Vec::new();
    for &(row, p, leaf) in matched {
        let (column, name) = match weigh {
            Weigh::Count => (None, ""),
            Weigh::Value => (Some(c.value), "value"),
            Weigh::WeightNs => (Some(c.weight_ns), "weight_ns"),
        };
        let w = match column {
            None => 1,
            Some(column) => {
                let w = required(opt_i64(column, row), "samples", name, row)?;
                u64::try_from(w).map_err(|_| {
                    columns::error(format!("samples row {row} has negative {name} {w}"))
                })?
            }
        };
        let i = paths.resolve(p, leaf)?;
        if i == sums.len() {
            sums.push(0);
        }
        sums[i] = sums[i].checked_add(w).ok_or(ErrorKind::LimitExceeded {
            limit: "flame graph total weight",
            max: u64::MAX,
        })?;
    }
    Ok(sums)
}
