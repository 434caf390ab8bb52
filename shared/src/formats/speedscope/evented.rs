//! Evented profiles: frames opened (`O`) and closed (`C`) at given values, swept into a span
//! series by the rule every span format shares (`formats::spans`).

use super::document::{EventKind, ProfileDoc};
use super::{frame_at, malformed, unit_ns, Place, FORMAT};
use crate::error::Result;
use crate::formats::spans::{SpanTrack, Target};
use crate::limits::Limits;
use crate::model::{FrameHandle, Profile, Series, SeriesHandle, SeriesKind};

/// Adds one evented profile's spans on its thread; says whether they have times (a time
/// unit), which put the whole profile on speedscope's trace clock.
///
/// With a time unit the spans are a wall-time series in ns, each stretch at its start. With
/// `none` or `bytes` the values are no times: the stretches are kept aggregated, weighing
/// their length in that unit.
pub(super) fn add(
    p: &ProfileDoc,
    at: Place,
    frames: &[FrameHandle],
    profile: &mut Profile,
    limits: &Limits,
) -> Result<bool> {
    let i = at.index;
    let ns = unit_ns(&p.unit);
    let scale = ns.unwrap_or(1.0);
    let value = |v: f64, what: &dyn Fn() -> String| -> Result<i64> {
        let scaled = (v * scale).round();
        if scaled.is_finite() && scaled.abs() < 9.2e18 {
            Ok(scaled as i64)
        } else {
            Err(malformed(format!("{} is {v}, out of range", what())))
        }
    };
    let mut track = SpanTrack::default();
    for (j, e) in p.events.iter().enumerate() {
        let where_ = || format!("profiles[{i}].events[{j}]");
        let time = value(e.at, &|| format!("{}.at", where_()))?;
        let frame = frame_at(frames, e.frame, where_)?;
        // Frames are told apart by their index, as speedscope matches them.
        let name = u32::try_from(e.frame).unwrap_or(u32::MAX);
        match e.kind {
            EventKind::O => track.begin(time, name, frame, None),
            EventKind::C => track.end(time, Some(name), None),
        }
    }
    let end = match p.end_value {
        Some(v) => Some(value(v, &|| format!("profiles[{i}].endValue"))?),
        None => None,
    };
    let last = track.last_time();
    let end = end.max(last).unwrap_or(0);
    let target = Target {
        thread: at.thread,
        series: series(&p.unit, ns.is_some(), profile),
        timed: ns.is_some(),
    };
    track.sweep(target, end, profile, limits.max_stack_depth);
    Ok(ns.is_some())
}

fn series(unit: &str, timed: bool, profile: &mut Profile) -> SeriesHandle {
    let (unit, kind) = match timed {
        true => ("nanoseconds", SeriesKind::WallTime),
        false => (unit, SeriesKind::Other),
    };
    let series = Series {
        kind,
        name: profile.intern("spans"),
        unit: profile.intern(unit),
        source: Some(profile.intern(FORMAT)),
        frequency_hz: None,
        period: None,
        spans: timed,
    };
    profile.add_series(series)
}
