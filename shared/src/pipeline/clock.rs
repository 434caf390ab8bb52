//! Putting an upload's samples on the wall clock: a trace clock is anchored at the metadata's
//! timestamp (else the input's start, else the upload's arrival), and aggregated samples (no
//! times) get a start from wherever one is known.

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

/// What placed samples on the wall clock: the manifest's `clock_source` and the `profiles`
/// table's column of that name, so a reader can tell a recorded time from a stand-in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ClockSource {
    /// The input itself: times on the wall clock, or a start time it records.
    Input,
    /// The upload metadata's `timestamp` (`--start-time`).
    Metadata,
    /// The upload's arrival (the object's last-modified time): nothing else said when.
    Arrival,
}

impl ClockSource {
    /// The stable name the outputs use.
    pub(crate) fn name(self) -> &'static str {
        match self {
            ClockSource::Input => "input",
            ClockSource::Metadata => "metadata",
            ClockSource::Arrival => "arrival",
        }
    }
}

/// How [`anchor`] put a profile on the wall clock.
#[derive(Debug)]
pub(crate) struct Anchored {
    pub anchor: Anchor,
    /// How the manifest says the times were obtained, in words.
    pub text: String,
    pub source: ClockSource,
}

/// Puts `profile` on the wall clock and says how, for the manifest. Times on a trace clock
/// start at the metadata's `start_seconds`, else at the start the input records, else at
/// `arrival_ns` (the upload's arrival; `None` when unknown or when the caller requires a
/// start time), else it fails. The samples it holds are moved now; the anchor moves those a
/// second pass hands over.
pub(crate) fn anchor(
    profile: &mut Profile,
    start_seconds: Option<f64>,
    arrival_ns: Option<i64>,
) -> Result<Anchored> {
    let Timestamps::TraceClock(clock) = profile.timestamps.clone() else {
        return Ok(Anchored {
            anchor: Anchor::Keep,
            text: "unix".into(),
            source: ClockSource::Input,
        });
    };
    // The metadata's timestamp wins over a start the input gives itself (DevTools'
    // approximate `startTime`).
    let (start_ns, text, source) = match (start_seconds, profile.start_time, arrival_ns) {
        (Some(start), _, _) => (
            seconds_to_ns(start),
            format!("{clock} clock, anchored at metadata timestamp {start}"),
            ClockSource::Metadata,
        ),
        (None, Some(ns), _) => (
            ns,
            format!("{clock} clock, anchored at the input's start time"),
            ClockSource::Input,
        ),
        (None, None, Some(ns)) => (
            ns,
            format!("{clock} clock, anchored at the upload's arrival time"),
            ClockSource::Arrival,
        ),
        (None, None, None) => return Err(ErrorKind::NoWallClock { clock }.into()),
    };
    profile.anchor_first_sample_at(start_ns);
    Ok(Anchored {
        anchor: Anchor::FirstAt(start_ns),
        text,
        source,
    })
}

/// Gives an aggregated profile (samples without times) a start time when the input recorded
/// none: the metadata timestamp, else the upload's arrival. Says where the start came from,
/// in words and as a [`ClockSource`] (`None`: from nowhere, and the tables will refuse it).
pub(crate) fn place_aggregated(
    profile: &mut Profile,
    metadata: &UploadMetadata,
    received_at_ns: Option<i64>,
) -> (&'static str, Option<ClockSource>) {
    if profile.start_time.is_some() {
        return ("the input's start time", Some(ClockSource::Input));
    }
    if let Some(start) = metadata.timestamp {
        profile.start_time = Some(seconds_to_ns(start));
        return ("the metadata timestamp", Some(ClockSource::Metadata));
    }
    if let Some(received) = received_at_ns {
        profile.start_time = Some(received);
        return ("the upload's arrival time", Some(ClockSource::Arrival));
    }
    ("nowhere", None)
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
