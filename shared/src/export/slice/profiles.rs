//! Which profiles a slice takes: the `profiles` rows the selection matches, with the series
//! and process each belongs to.

use std::collections::BTreeSet;

use arrow_array::RecordBatch;
use rustc_hash::FxHashMap;

use super::{Process, Series, Slice};
use crate::error::{ErrorKind, Result};
use crate::export::columns::{self as col, get, malformed, required};
use crate::export::select::{listing, Selection};
/// The `profiles` row of each selected profile, by `profile_id`.
pub(super) struct Selected<'b> {
    pub by_id: FxHashMap<&'b str, SelectedProfile>,
    /// Each selected profile's id, by [`SelectedProfile::index`].
    pub ids: Vec<&'b str>,
    /// Each selected profile's series, by [`SelectedProfile::index`].
    pub series_of: Vec<u32>,
    /// The slice's series.
    pub series: usize,
    /// `samples` rows of the selected profiles (`profiles.samples`): room for every sample
    /// is made once, not by doubling a million-row column many times.
    pub rows: usize,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct SelectedProfile {
    pub series: u32,
    pub process: u32,
    /// `start_time`, ns: the time of aggregated samples.
    pub start_ns: i64,
    pub end_ns: i64,
    /// Index among the selected profiles, for the per-profile stack and frame maps.
    pub index: usize,
}

/// The profiles of `p` (a `profiles` batch) that `selection` takes; their series and
/// processes go into `slice`.
pub(super) fn select<'b>(
    p: &'b RecordBatch,
    selection: &Selection,
    slice: &mut Slice,
) -> Result<Selected<'b>> {
    const T: &str = "profiles";
    let (source, id, service, release, environment) = (
        col::text(p, T, "source_id")?,
        col::text(p, T, "profile_id")?,
        col::text(p, T, "service")?,
        col::text(p, T, "release")?,
        col::text(p, T, "environment")?,
    );
    let (host, pid, process_name) = (
        col::text(p, T, "host")?,
        col::int64(p, T, "pid")?,
        col::text(p, T, "process_name")?,
    );
    let (sample_type, unit, kind, period, frequency, timestamps) = (
        col::text(p, T, "sample_type")?,
        col::text(p, T, "sample_unit")?,
        col::text(p, T, "series_kind")?,
        col::int64(p, T, "period")?,
        col::int64(p, T, "frequency_hz")?,
        col::text(p, T, "timestamps")?,
    );
    let sample_rows = col::int64(p, T, "samples")?;
    let (start, end, attributes) = (
        col::micros(p, T, "start_time")?,
        col::micros(p, T, "end_time")?,
        col::MapRows::new(col::map(p, T, "attributes")?)?,
    );
    let matches = |column: &arrow_array::StringArray, want: &Option<String>, row| {
        want.as_deref().is_none_or(|w| get(column, row) == Some(w))
    };
    let mut selected = Selected {
        by_id: FxHashMap::default(),
        ids: Vec::new(),
        series_of: Vec::new(),
        series: 0,
        rows: 0,
    };
    let mut series_index: FxHashMap<(&str, &str), u32> = FxHashMap::default();
    let mut process_index: FxHashMap<Process, u32> = FxHashMap::default();
    let mut uploads = BTreeSet::new();
    // What the tables hold, for the message when nothing matches.
    let (mut services, mut releases, mut series_names) =
        (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    for row in 0..p.num_rows() {
        let sample_type_text = required(sample_type, T, "sample_type", row)?;
        services.extend(get(service, row).map(str::to_owned));
        releases.extend(get(release, row).map(str::to_owned));
        series_names.insert(sample_type_text.to_owned());
        let take = matches(source, &selection.source_id, row)
            && matches(service, &selection.service, row)
            && matches(release, &selection.release, row)
            && matches(environment, &selection.environment, row)
            && (selection.series.is_empty()
                || selection.series.iter().any(|s| s == sample_type_text))
            && selection
                .process
                .as_ref()
                .is_none_or(|want| want.matches(get(pid, row), get(process_name, row)));
        if !take {
            continue;
        }
        let start_ns = required(start, T, "start_time", row)?.saturating_mul(1000);
        let end_ns = required(end, T, "end_time", row)?.saturating_mul(1000);
        // A profile is kept when its span of time can reach the range; its samples are
        // checked one by one.
        if selection.to_ns.is_some_and(|t| start_ns > t)
            || selection.from_ns.is_some_and(|f| end_ns < f)
        {
            continue;
        }
        let unit_text = required(unit, T, "sample_unit", row)?;
        let timestamps_text = required(timestamps, T, "timestamps", row)?;
        let next = slice.series.len() as u32;
        let series = *series_index
            .entry((sample_type_text, unit_text))
            .or_insert(next);
        if series == next {
            slice.series.push(Series {
                sample_type: sample_type_text.to_owned(),
                unit: unit_text.to_owned(),
                kind: required(kind, T, "series_kind", row)?.to_owned(),
                period: get(period, row),
                frequency_hz: get(frequency, row),
                spans: timestamps_text == "spans",
                timed: timestamps_text != "aggregated",
                rows: 0,
            });
        } else {
            let s = &mut slice.series[series as usize];
            s.spans &= timestamps_text == "spans";
            s.timed &= timestamps_text != "aggregated";
        }
        let mut attrs: Vec<(String, String)> = attributes
            .entries(row)
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        attrs.sort();
        let process = Process {
            pid: get(pid, row),
            name: get(process_name, row).map(str::to_owned),
            service: get(service, row).map(str::to_owned),
            release: get(release, row).map(str::to_owned),
            environment: get(environment, row).map(str::to_owned),
            host: get(host, row).map(str::to_owned),
            attributes: attrs,
        };
        let next = slice.processes.len() as u32;
        let process = match process_index.get(&process) {
            Some(&i) => i,
            None => {
                process_index.insert(process.clone(), next);
                slice.processes.push(process);
                next
            }
        };
        let profile_id = required(id, T, "profile_id", row)?;
        let index = selected.by_id.len();
        if selected
            .by_id
            .insert(
                profile_id,
                SelectedProfile {
                    series,
                    process,
                    start_ns,
                    end_ns,
                    index,
                },
            )
            .is_some()
        {
            return Err(malformed(format!(
                "profile {profile_id} has more than one profiles row"
            )));
        }
        selected.ids.push(profile_id);
        selected.series_of.push(series);
        uploads.insert(required(source, T, "source_id", row)?);
        let rows = get(sample_rows, row).unwrap_or(0);
        selected.rows = selected
            .rows
            .saturating_add(usize::try_from(rows).unwrap_or(0));
    }
    if p.num_rows() == 0 {
        return Err(ErrorKind::NoSamples {
            why: format!(
                "the tables hold no profile in the days the selection ({}) can reach",
                selection.describe()
            ),
        }
        .into());
    }
    if selected.by_id.is_empty() {
        return Err(ErrorKind::NoSamples {
            why: format!(
                "no profile matches the selection ({}); the tables hold services {}, releases \
                 {} and series {}",
                selection.describe(),
                listing(services),
                listing(releases),
                listing(series_names)
            ),
        }
        .into());
    }
    slice.profiles = selected.by_id.len();
    selected.series = slice.series.len();
    slice.uploads = uploads.len();
    Ok(selected)
}

/// Each row's selected profile (`None`: not selected), through the keys of its
/// `profile_id`: every distinct id is looked up once.
pub(super) struct RowProfiles<'a> {
    keys: col::TextKeys<'a>,
    of_key: Vec<Option<SelectedProfile>>,
}

impl<'a> RowProfiles<'a> {
    pub fn new(batch: &'a RecordBatch, table: &str, selected: &Selected<'_>) -> Result<Self> {
        let keys = col::TextKeys::new(batch, table, "profile_id")?;
        let of_key = keys
            .texts
            .iter()
            .map(|id| selected.by_id.get(id).copied())
            .collect();
        Ok(RowProfiles { keys, of_key })
    }

    pub fn get(&self, table: &str, row: usize) -> Result<Option<SelectedProfile>> {
        match self.keys.keys[row] {
            col::NO_TEXT => Err(malformed(format!(
                "{table}.profile_id is null in row {row}"
            ))),
            key => Ok(self.of_key[key as usize]),
        }
    }
}
