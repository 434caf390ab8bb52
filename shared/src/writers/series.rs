//! The manifest's series: each model series with its observations, the table rows written
//! for it and what the chunks carry, counted over the pieces a model's samples come in (one
//! for an upload decoded whole, one per window of a streamed recording).

use super::manifest::ManifestSeries;
use crate::model::Profile;
use crate::plan::{SeriesCoverage, TableProfilePlan};

/// One model's series, counted piece by piece.
#[derive(Debug, Default)]
pub(crate) struct SeriesTally {
    /// By series index.
    observations: Vec<u64>,
    totals: Vec<i128>,
    rows: Vec<u64>,
    /// What the chunks carry; `None` for pass-through chunks, which carry every observation.
    coverage: Option<Vec<SeriesCoverage>>,
}

impl SeriesTally {
    /// A tally whose chunks carry what Sample v2's plans say (`planned`), or everything.
    pub fn new(planned: bool) -> Self {
        SeriesTally {
            coverage: planned.then(Vec::new),
            ..SeriesTally::default()
        }
    }

    /// Counts the samples `profile` holds now, their table plans and, for a planned tally,
    /// what the chunks carry of them (by series index).
    pub fn add(
        &mut self,
        profile: &Profile,
        plans: &[TableProfilePlan<'_>],
        coverage: &[SeriesCoverage],
    ) {
        self.observe(profile, plans);
        self.cover(profile, coverage);
    }

    /// Counts the samples `profile` holds now and their table plans.
    pub fn observe(&mut self, profile: &Profile, plans: &[TableProfilePlan<'_>]) {
        let n = profile.all_series().len();
        self.observations.resize(n, 0);
        self.totals.resize(n, 0);
        self.rows.resize(n, 0);
        let samples = profile.samples();
        for i in 0..samples.len() {
            let series = samples.series(i).index();
            self.observations[series] += 1;
            self.totals[series] += i128::from(samples.weight(i));
        }
        for plan in plans {
            self.rows[plan.series.index()] += plan.samples.len() as u64;
        }
    }

    /// For a planned tally, counts what the chunks carry of some samples of `profile`'s
    /// series (by series index).
    pub fn cover(&mut self, profile: &Profile, coverage: &[SeriesCoverage]) {
        let n = profile.all_series().len();
        if let Some(tally) = &mut self.coverage {
            tally.resize(n, SeriesCoverage::default());
            for (t, c) in tally.iter_mut().zip(coverage) {
                t.observations_in_chunks += c.observations_in_chunks;
                t.chunk_samples += c.chunk_samples;
                for (&reason, &count) in &c.left_out {
                    *t.left_out.entry(reason).or_default() += count;
                }
            }
        }
    }

    /// The manifest entries of `profile`'s series, merged into `out`: series of several
    /// models (pass-through chunks) that share name, unit and kind are one series.
    pub fn merge_into(&self, profile: &Profile, out: &mut Vec<ManifestSeries>) {
        for (h, series) in profile.all_series() {
            let i = h.index();
            let observations = self.observations.get(i).copied().unwrap_or(0);
            let (in_chunks, chunk_samples, left_out) = match &self.coverage {
                Some(c) => {
                    let c = c.get(i).cloned().unwrap_or_default();
                    let left_out = c.left_out.iter().map(|(k, v)| ((*k).to_owned(), *v));
                    (
                        c.observations_in_chunks,
                        c.chunk_samples,
                        left_out.collect(),
                    )
                }
                None => (observations, observations, Default::default()),
            };
            let entry = ManifestSeries {
                sample_type: profile.str(series.name).to_owned(),
                sample_unit: profile.str(series.unit).to_owned(),
                kind: series.kind.name().to_owned(),
                observations,
                total_value: self.totals.get(i).copied().unwrap_or(0),
                table_rows: self.rows.get(i).copied().unwrap_or(0),
                observations_in_chunks: in_chunks,
                chunk_samples,
                left_out,
            };
            match out.iter_mut().find(|e| {
                (&e.sample_type, &e.sample_unit, &e.kind)
                    == (&entry.sample_type, &entry.sample_unit, &entry.kind)
            }) {
                Some(e) => {
                    e.observations += entry.observations;
                    e.total_value += entry.total_value;
                    e.table_rows += entry.table_rows;
                    e.observations_in_chunks += entry.observations_in_chunks;
                    e.chunk_samples += entry.chunk_samples;
                    for (k, v) in entry.left_out {
                        *e.left_out.entry(k).or_default() += v;
                    }
                }
                None => out.push(entry),
            }
        }
    }
}
