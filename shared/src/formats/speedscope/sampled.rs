//! Sampled profiles: stacks of frame indices with a weight each, and no times.

use super::document::ProfileDoc;
use super::{frame_at, malformed, unit_ns, Place, FORMAT};
use crate::error::Result;
use crate::limits::Limits;
use crate::model::{FrameHandle, Profile, Sample, Series, SeriesHandle, SeriesKind, StackHandle};

/// Adds one sampled profile's samples, aggregated (no times), on its thread.
pub(super) fn add(
    p: &ProfileDoc,
    at: Place,
    frames: &[FrameHandle],
    profile: &mut Profile,
    limits: &Limits,
) -> Result<()> {
    let i = at.index;
    if p.samples.len() != p.weights.len() {
        return Err(malformed(format!(
            "profiles[{i}] has {} samples but {} weights",
            p.samples.len(),
            p.weights.len()
        )));
    }
    let (series, scale) = series(p, profile);
    for (j, (stack, &weight)) in p.samples.iter().zip(&p.weights).enumerate() {
        let scaled = (weight * scale).round();
        if !scaled.is_finite() || scaled < 0.0 || scaled >= i64::MAX as f64 {
            return Err(malformed(format!(
                "profiles[{i}].weights[{j}] is {weight}, not a weight"
            )));
        }
        let stack = stack_of(stack, frames, profile, limits.max_stack_depth, || {
            format!("profiles[{i}].samples[{j}]")
        })?;
        profile.add_sample(Sample::new(at.thread, stack, scaled as i64, series));
    }
    Ok(())
}

/// The series of a sampled profile's weights and the factor that makes them integers: time
/// in ns, bytes as they are, and values of unit `none` as they are, scaled by the power of
/// ten that keeps fractional values exact (unit `none*1e-D`).
fn series(p: &ProfileDoc, profile: &mut Profile) -> (SeriesHandle, f64) {
    let (name, unit, kind, scale) = match (unit_ns(&p.unit), p.unit.as_str()) {
        (Some(ns), _) => ("time", "nanoseconds".to_owned(), SeriesKind::WallTime, ns),
        (None, "bytes") => ("bytes", "bytes".to_owned(), SeriesKind::Other, 1.0),
        (None, unit) => {
            let decimals = decimals(&p.weights);
            let unit = match decimals {
                0 => unit.to_owned(),
                d => format!("{unit}*1e-{d}"),
            };
            ("samples", unit, SeriesKind::Other, 10f64.powi(decimals))
        }
    };
    let series = Series {
        kind,
        name: profile.intern(name),
        unit: profile.intern(&unit),
        source: Some(profile.intern(FORMAT)),
        frequency_hz: None,
        period: None,
        spans: false,
    };
    (profile.add_series(series), scale)
}

/// The fewest decimal digits (at most 9) that hold every weight exactly.
fn decimals(weights: &[f64]) -> i32 {
    (0..=9)
        .find(|&d| {
            let scale = 10f64.powi(d);
            weights
                .iter()
                .all(|w| ((w * scale).round() - w * scale).abs() < 1e-6)
        })
        .unwrap_or(9)
}

/// The stack of frame indices `indices`, root first: `None` (counted) when deeper than the
/// limit.
pub(super) fn stack_of(
    indices: &[u64],
    frames: &[FrameHandle],
    profile: &mut Profile,
    max_depth: u64,
    at: impl Fn() -> String,
) -> Result<Option<StackHandle>> {
    if indices.len() as u64 > max_depth {
        profile.count("speedscope_stack_too_deep");
        return Ok(None);
    }
    let mut stack = None;
    for &index in indices {
        let frame = frame_at(frames, index, &at)?;
        stack = Some(profile.add_stack(stack, frame));
    }
    Ok(stack)
}
