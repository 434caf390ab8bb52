//! The tables' plan: every observation of every series, grouped into table profiles.
//!
//! A table profile is one series of one process: its timed samples in one window of the
//! profile's grid ([`super::grid`], at most [`WINDOW_NS`](super::grid::WINDOW_NS), so a profile's rows share a
//! day partition and a long recording does not become one huge profile), and its aggregated
//! samples, which have no time, all together. Nothing is filtered, expanded or re-weighted: Relay's rules belong to
//! Sample v2's plan, not here.

use std::collections::BTreeMap;

use crate::error::{ErrorKind, Result};
use crate::ids::derived_id;
use crate::model::{ProcessHandle, Profile, SeriesHandle, Timestamps};
use crate::plan::grid::{time_windows, Grid};
use crate::plan::rows::Rows;

/// One table profile to write.
#[derive(Clone, Debug)]
pub struct TableProfilePlan<'p> {
    /// The model.
    pub profile: &'p Profile,
    /// `profiles.profile_id`.
    pub profile_id: String,
    /// The process.
    pub process: ProcessHandle,
    /// The one series of its samples.
    pub series: SeriesHandle,
    /// Whether the samples are aggregated (no times) rather than timed.
    pub aggregated: bool,
    /// The window of the grid the timed samples are in; `None` for aggregated samples.
    pub window: Option<i64>,
    /// First sample time, or the profile's start for aggregated samples; ns since the epoch.
    pub start_ns: i64,
    /// Last sample time (`start_ns` for aggregated samples).
    pub end_ns: i64,
    /// The samples, by position in [`Profile::samples`]: timed ones by time (input order
    /// among equal times), aggregated ones in input order.
    pub samples: Rows,
}

/// Plans the tables of a profile. `identity` names the upload (its source id). Fails only
/// when times cannot be placed: a profile on its trace clock, or aggregated samples without
/// a start time.
pub fn plan_tables<'p>(profile: &'p Profile, identity: &str) -> Result<Vec<TableProfilePlan<'p>>> {
    plan_tables_on(profile, identity, Grid::of(profile))
}

/// [`plan_tables`] on a given grid: the profile may hold some windows of a longer recording,
/// whose grid starts before its first sample (`None`: no sample has a time).
pub fn plan_tables_on<'p>(
    profile: &'p Profile,
    identity: &str,
    grid: Option<Grid>,
) -> Result<Vec<TableProfilePlan<'p>>> {
    if let Timestamps::TraceClock(clock) = &profile.timestamps {
        return Err(ErrorKind::NoWallClock {
            clock: clock.clone(),
        }
        .into());
    }
    // (process, series) → timed samples and aggregated samples, in input order.
    let samples = profile.samples();
    let processes: Vec<ProcessHandle> = profile.threads().map(|(_, t)| t.process).collect();
    let mut keys: BTreeMap<(ProcessHandle, SeriesHandle), usize> = BTreeMap::new();
    let mut groups: Vec<(Rows, Rows)> = Vec::new();
    // Consecutive samples mostly share a group: look it up again only when the key changes.
    let mut last = None;
    for i in 0..samples.len() {
        let key = (processes[samples.thread(i).index()], samples.series(i));
        let group = match last {
            Some((k, g)) if k == key => g,
            _ => {
                let g = *keys.entry(key).or_insert_with(|| {
                    groups.push(Default::default());
                    groups.len() - 1
                });
                last = Some((key, g));
                g
            }
        };
        let row = u32::try_from(i).expect("samples are fewer than 2^32");
        match samples.time(i) {
            Some(_) => groups[group].0.push(row),
            None => groups[group].1.push(row),
        }
    }
    let mut groups: Vec<_> = groups.into_iter().map(Some).collect();
    let mut plans = Vec::new();
    for ((process, series), g) in keys {
        let (timed, aggregated) = groups[g].take().expect("each group is planned once");
        let pid = profile
            .process(process)
            .pid
            .map_or_else(|| "unknown".to_owned(), |p| p.to_string());
        let series_key = series.index().to_string();
        let id = |part: &str| derived_id(&["table-profile", identity, &pid, &series_key, part]);
        let time = |i: u32| samples.time(i as usize).unwrap_or(i64::MIN);
        // The model's samples are in time order once decoded, so a group's are too; a
        // profile built otherwise has its group sorted here.
        let windows = match grid {
            None => Vec::new(),
            Some(grid) if timed.iter().is_sorted_by_key(time) => {
                time_windows(timed.iter(), time, grid)
            }
            Some(grid) => {
                let mut sorted: Vec<u32> = timed.iter().collect();
                sorted.sort_by_key(|&i| time(i));
                time_windows(sorted.into_iter(), time, grid)
            }
        };
        drop(timed);
        for w in windows {
            plans.push(TableProfilePlan {
                profile,
                profile_id: id(&w.number.to_string()),
                process,
                series,
                aggregated: false,
                window: Some(w.number),
                start_ns: w.first_ns,
                end_ns: w.last_ns,
                samples: w.rows,
            });
        }
        if !aggregated.is_empty() {
            let start = profile.start_time.ok_or(ErrorKind::NoStartTime)?;
            plans.push(TableProfilePlan {
                profile,
                profile_id: id("aggregated"),
                process,
                series,
                aggregated: true,
                window: None,
                start_ns: start,
                end_ns: start,
                samples: aggregated,
            });
        }
    }
    Ok(plans)
}
