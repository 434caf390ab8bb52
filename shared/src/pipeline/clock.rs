//! Putting an upload's samples on the wall clock: a trace clock is anchored at the metadata's
//! timestamp, and aggregated samples (no times) get a start from wherever one is known.

use crate::error::{ErrorKind, Result};
use crate::metadata::UploadMetadata;
use crate::model::{seconds_to_ns, Profile, Timestamps};

/// How the decoder's times become the outputs'.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Anchor {
    /// As they are (on the wall clock already).
    Keep,
    /// Moved so that the earliest is at this time (a trace clock anchored by the metadata),
    /// as `Profile::anchor_first_sample_at` moves them.
    FirstAt(i64),
}

/// Puts `profile` on the wall clock and says how, for the manifest; fails when its times are
/// on a trace clock and neither the metadata nor the input says when the profile started. The samples it
/// holds are moved now; the anchor moves those a second reading hands over.
pub(crate) fn anchor(
    profile: &mut Profile,
    start_seconds: Option<f64>,
) -> Result<(Anchor, String)> {
    let Timestamps::TraceClock(clock) = profile.timestamps.clone() else {
        return Ok((Anchor::Keep, "unix".into()));
    };
    // The metadata's timestamp wins over a start the input gives itself (DevTools'
    // approximate `startTime`).
    let (start_ns, text) = match (start_seconds, profile.start_time) {
        (Some(start), _) => (
            seconds_to_ns(start),
            format!("{clock} clock, anchored at metadata timestamp {start}"),
        ),
        (None, Some(ns)) => (
            ns,
            format!("{clock} clock, anchored at the input's start time"),
        ),
        (None, None) => return Err(ErrorKind::NoWallClock { clock }.into()),
    };
    profile.anchor_first_sample_at(start_ns);
    Ok((Anchor::FirstAt(start_ns), text))
}

/// Gives an aggregated profile (samples without times) a start time when the input recorded
/// none: the metadata timestamp, else the upload's arrival. Says where the start came from.
pub(crate) fn place_aggregated(
    profile: &mut Profile,
    metadata: &UploadMetadata,
    received_at_ns: Option<i64>,
) -> &'static str {
    if profile.start_time.is_some() {
        return "the input's start time";
    }
    if let Some(start) = metadata.timestamp {
        profile.start_time = Some(seconds_to_ns(start));
        return "the metadata timestamp";
    }
    if let Some(received) = received_at_ns {
        profile.start_time = Some(received);
        return "the upload's arrival time";
    }
    "nowhere"
}

/// The UTC day (since the epoch) of `ns` since the epoch.
pub(crate) fn day_of(ns: i64) -> i64 {
    ns.div_euclid(1000).div_euclid(86_400_000_000)
}

/// The UTC days `profile`'s table profiles can start on: from its first sample to its last,
/// and its start for samples without a time.
pub(crate) fn days_of(profile: &Profile) -> Option<std::ops::RangeInclusive<i64>> {
    let samples = profile.samples();
    let mut range: Option<(i64, i64)> = None;
    for i in 0..samples.len() {
        let Some(t) = samples.time(i).or(profile.start_time) else {
            continue;
        };
        range = Some(range.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
    }
    range.map(|(a, b)| day_of(a)..=day_of(b))
}

/// The UTC days of samples between `bounds`' times, as the decoder gives them, once moved by
/// `anchor`.
pub(crate) fn days_between(bounds: (i64, i64), anchor: Anchor) -> std::ops::RangeInclusive<i64> {
    let (a, b) = bounds;
    let (a, b) = match anchor {
        Anchor::Keep => (a, b),
        Anchor::FirstAt(start) => (start, start.saturating_add(b.saturating_sub(a))),
    };
    day_of(a)..=day_of(b)
}
