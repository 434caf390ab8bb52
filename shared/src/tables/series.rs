//! The series one table profile holds, and how its values convert to nanoseconds
//! (`docs/tables.md`, "Values and units").

use crate::model::{time_unit_ns, Series, SeriesKind};
use crate::plan::TableProfilePlan;

/// The `profiles` columns that describe the series.
#[derive(Clone, Debug)]
pub(super) struct Sampled<'a> {
    pub sample_type: &'a str,
    pub sample_unit: &'a str,
    pub kind: &'static str,
    pub period: Option<i64>,
    pub frequency_hz: Option<i64>,
    /// Whether the rows are stretches of open spans rather than samples.
    pub spans: bool,
    /// Nanoseconds per unit of value, when the series measures time or counts samples of a
    /// CPU- or wall-time sampler with a known frequency.
    ns_per_unit: Option<i64>,
}

impl<'a> Sampled<'a> {
    pub fn of(plan: &TableProfilePlan<'a>) -> Self {
        let profile = plan.profile;
        let series: &Series = profile.series(plan.series);
        let sample_unit = profile.str(series.unit);
        let timed_kind = matches!(series.kind, SeriesKind::CpuTime | SeriesKind::WallTime);
        let ns_per_unit = time_unit_ns(sample_unit).or_else(|| {
            let hz = series
                .frequency_hz
                .filter(|&hz| hz > 0 && hz <= 1_000_000_000)?;
            timed_kind.then(|| 1_000_000_000 / hz as i64)
        });
        Sampled {
            sample_type: profile.str(series.name),
            sample_unit,
            kind: series.kind.name(),
            period: series.period.and_then(|v| i64::try_from(v).ok()),
            frequency_hz: series.frequency_hz.and_then(|v| i64::try_from(v).ok()),
            spans: series.spans,
            ns_per_unit,
        }
    }

    /// A value in nanoseconds, saturating (an i64 of nanoseconds is 292 years).
    pub fn weight_ns(&self, value: i64) -> Option<i64> {
        self.ns_per_unit.map(|f| value.saturating_mul(f))
    }
}
