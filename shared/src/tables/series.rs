//! What one table profile sampled, and the unit its `samples.weight` is written in
//! (`docs/tables.md`, "Weight units").

use crate::model::{time_unit_ns, SeriesHandle};
use crate::plan::interval_ns;
use crate::plan::{ChunkPlan, PlannedSample};

/// The `profiles` columns that describe the sampled series, and the weight conversion.
#[derive(Clone, Debug)]
pub(super) struct Sampled {
    /// Distinct series names, first seen first, joined by `+`.
    pub sample_type: String,
    /// `nanoseconds`, or the count unit of a profile that measures no time.
    pub sample_unit: String,
    /// The one series' period, in its own unit.
    pub period: Option<i64>,
    /// The one series' frequency.
    pub frequency_hz: Option<i64>,
    /// Multiplier from each series' unit to `sample_unit`. A chunk has a handful of series,
    /// so a list beats a map.
    factors: Vec<(SeriesHandle, i64)>,
}

impl Sampled {
    /// `None` for a plan without samples: with no series there is no unit to name.
    pub fn of(plan: &ChunkPlan<'_>) -> Option<Self> {
        let profile = plan.profile;
        let mut firsts: Vec<&PlannedSample<'_>> = Vec::new();
        for p in &plan.samples {
            if !firsts.iter().any(|f| f.sample.series == p.sample.series) {
                firsts.push(p);
            }
        }
        let unit_of = |p: &PlannedSample<'_>| profile.str(profile.series(p.sample.series).unit);
        let timed = firsts
            .iter()
            .filter(|p| time_unit_ns(unit_of(p)).is_some())
            .count();
        let first = firsts.first()?;
        let sample_unit = if timed == 0 {
            unit_of(first).to_owned()
        } else {
            "nanoseconds".to_owned()
        };
        let factors = firsts
            .iter()
            .map(|p| {
                let factor = match (timed, time_unit_ns(unit_of(p))) {
                    (0, _) => 1,
                    (_, Some(unit_ns)) => unit_ns,
                    // Counted samples beside timed ones: each count stands for one interval.
                    (_, None) => interval_ns(profile, p.sample),
                };
                (p.sample.series, factor)
            })
            .collect();
        let mut names: Vec<&str> = Vec::new();
        for p in &firsts {
            let name = profile.str(profile.series(p.sample.series).name);
            if !names.contains(&name) {
                names.push(name);
            }
        }
        let only = (firsts.len() == 1).then(|| profile.series(first.sample.series));
        Some(Sampled {
            sample_type: names.join("+"),
            sample_unit,
            period: only
                .and_then(|s| s.period)
                .and_then(|v| i64::try_from(v).ok()),
            frequency_hz: only
                .and_then(|s| s.frequency_hz)
                .and_then(|v| i64::try_from(v).ok()),
            factors,
        })
    }

    /// A planned sample's weight in `sample_unit` (saturating: an i64 of nanoseconds is
    /// 292 years).
    pub fn weight(&self, p: &PlannedSample<'_>) -> i64 {
        let factor = self
            .factors
            .iter()
            .find(|(s, _)| *s == p.sample.series)
            .map_or(1, |&(_, f)| f);
        p.weight.saturating_mul(factor)
    }
}
