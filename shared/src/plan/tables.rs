//! The tables' plan: every observation of every series, grouped into table profiles.
//!
//! A table profile is one series of one process: its timed samples in windows of at most
//! [`TABLE_WINDOW_NS`] from the first one (so a profile's rows share a day partition and a
//! long recording does not become one huge profile), and its aggregated samples, which have no
//! time, all together. Nothing is filtered, expanded or re-weighted: Relay's rules belong to
//! Sample v2's plan, not here.

use std::collections::BTreeMap;

use crate::error::{ErrorKind, Result};
use crate::ids::derived_id;
use crate::model::{ProcessHandle, Profile, Sample, SeriesHandle, Timestamps};

/// Longest span of one table profile's timed samples: 60 s, as Sample v2 chunks.
pub const TABLE_WINDOW_NS: i64 = 60_000_000_000;

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
    /// First sample time, or the profile's start for aggregated samples; ns since the epoch.
    pub start_ns: i64,
    /// Last sample time (`start_ns` for aggregated samples).
    pub end_ns: i64,
    /// The samples: timed ones by time (input order among equal times), aggregated ones in
    /// input order.
    pub samples: Vec<&'p Sample>,
}

/// Plans the tables of a profile. `identity` names the upload (its source id). Fails only
/// when times cannot be placed: a profile on its trace clock, or aggregated samples without
/// a start time.
pub fn plan_tables<'p>(profile: &'p Profile, identity: &str) -> Result<Vec<TableProfilePlan<'p>>> {
    if let Timestamps::TraceClock(clock) = &profile.timestamps {
        return Err(ErrorKind::NoWallClock {
            clock: clock.clone(),
        }
        .into());
    }
    // (process, series) → timed samples and aggregated samples, in input order.
    type Split<'p> = (Vec<&'p Sample>, Vec<&'p Sample>);
    let mut groups: BTreeMap<(ProcessHandle, SeriesHandle), Split> = BTreeMap::new();
    for s in profile.samples() {
        let process = profile.thread(s.thread).process;
        let group = groups.entry((process, s.series)).or_default();
        match s.time {
            Some(_) => group.0.push(s),
            None => group.1.push(s),
        }
    }
    let mut plans = Vec::new();
    for ((process, series), (mut timed, aggregated)) in groups {
        let pid = profile
            .process(process)
            .pid
            .map_or_else(|| "unknown".to_owned(), |p| p.to_string());
        let series_key = series.index().to_string();
        let id = |part: &str| derived_id(&["table-profile", identity, &pid, &series_key, part]);
        timed.sort_by_key(|s| s.time);
        if let Some(t0) = timed.first().and_then(|s| s.time) {
            let mut rest = &timed[..];
            while let Some(first) = rest.first().and_then(|s| s.time) {
                let window = (first - t0) / TABLE_WINDOW_NS;
                let end = t0.saturating_add((window + 1).saturating_mul(TABLE_WINDOW_NS));
                let n = rest.partition_point(|s| s.time.is_some_and(|t| t < end));
                let (now, later) = rest.split_at(n);
                plans.push(TableProfilePlan {
                    profile,
                    profile_id: id(&window.to_string()),
                    process,
                    series,
                    aggregated: false,
                    start_ns: first,
                    end_ns: now.last().and_then(|s| s.time).unwrap_or(first),
                    samples: now.to_vec(),
                });
                rest = later;
            }
        }
        if !aggregated.is_empty() {
            let start = profile.start_time.ok_or(ErrorKind::NoStartTime)?;
            plans.push(TableProfilePlan {
                profile,
                profile_id: id("aggregated"),
                process,
                series,
                aggregated: true,
                start_ns: start,
                end_ns: start,
                samples: aggregated,
            });
        }
    }
    Ok(plans)
}
