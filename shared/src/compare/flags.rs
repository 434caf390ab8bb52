//! Which functions changed between two releases, from their uploads' rollups.
//!
//! Each upload gives, per function, its share of the upload's series: the function's self
//! value over the upload's whole self value (and its total value over the same, for the
//! inclusive view). A function absent from an upload has a share of 0 there. The two
//! releases' shares are compared with Welch's test, the p-values adjusted across functions
//! (Benjamini–Hochberg), and a function is flagged only when the change is significant, large
//! relative to its base share, large in percentage points, and both releases have enough
//! uploads and samples to say so.

use rustc_hash::FxHashMap;

use super::stats::{benjamini_hochberg, welch};

/// What decides a flag. The defaults are those of `docs/compare.md`.
#[derive(Clone, Debug)]
pub(crate) struct Thresholds {
    /// Fewest uploads of each release.
    pub min_uploads: usize,
    /// Fewest samples (self rows) of each release.
    pub min_samples: u64,
    /// Fewest samples of the function, the two releases together.
    pub min_function_samples: u64,
    /// Least change relative to the base share (0.10: 10%).
    pub min_relative: f64,
    /// Least change in share, as a fraction (0.005: half a percentage point).
    pub min_absolute: f64,
    /// Largest adjusted p-value (the false discovery rate).
    pub max_q: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            min_uploads: 20,
            min_samples: 10_000,
            min_function_samples: 50,
            min_relative: 0.10,
            min_absolute: 0.005,
            max_q: 0.01,
        }
    }
}

/// Which release an upload belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    Base,
    Head,
}

/// One rollup row of an upload: a function's sums in one series.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RollupRow<'a> {
    pub upload: &'a str,
    pub side: Side,
    pub function: &'a str,
    pub self_value: i64,
    pub total_value: i64,
    pub self_rows: i64,
}

/// Whether a share is the function's own (self) or with its callees (total).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Measure {
    Self_,
    Total,
}

/// What the comparison says of one function and measure.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FunctionChange {
    pub function: String,
    pub measure: Measure,
    /// Mean share over the base release's uploads, and the head's.
    pub base_share: f64,
    pub head_share: f64,
    /// Welch's two-sided p-value, and adjusted across every function tested.
    pub p: f64,
    pub q: f64,
    pub verdict: Verdict,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Regression,
    Improvement,
    Unchanged,
}

/// Both releases' uploads and samples, and the changes found.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Comparison {
    pub uploads: [usize; 2],
    pub samples: [u64; 2],
    /// Why nothing was flagged when a release has too little to compare.
    pub too_little: Option<String>,
    /// Every function tested, flagged ones first (largest change in share first).
    pub functions: Vec<FunctionChange>,
}

/// One upload's self-value total, and its functions' sums.
#[derive(Default)]
struct Upload<'a> {
    side: Option<Side>,
    whole: i128,
    rows: u64,
    functions: FxHashMap<&'a str, (i128, i128)>,
}

/// Compares the base release's uploads with the head's, from their rollup rows (one series).
/// `values_count_samples` when the series' values are sample counts (unit `count`): an
/// aggregated input's row then stands for as many samples as its value, where a timed input's
/// row is one sample.
pub(crate) fn compare<'a>(
    rows: impl IntoIterator<Item = RollupRow<'a>>,
    thresholds: &Thresholds,
    values_count_samples: bool,
) -> Comparison {
    let mut uploads: FxHashMap<&str, Upload> = FxHashMap::default();
    let mut function_rows: FxHashMap<&str, u64> = FxHashMap::default();
    for row in rows {
        let upload = uploads.entry(row.upload).or_default();
        upload.side = Some(row.side);
        upload.whole += i128::from(row.self_value);
        let samples = if values_count_samples {
            row.self_value.max(row.self_rows)
        } else {
            row.self_rows
        };
        let samples = samples.max(0) as u64;
        upload.rows += samples;
        let sums = upload.functions.entry(row.function).or_default();
        sums.0 += i128::from(row.self_value);
        sums.1 += i128::from(row.total_value);
        *function_rows.entry(row.function).or_default() += samples;
    }
    // Uploads in a fixed order, so the observations (and the floating-point sums) are too.
    let mut order: Vec<(&str, &Upload)> = uploads
        .iter()
        .filter(|(_, u)| u.whole > 0)
        .map(|(k, u)| (*k, u))
        .collect();
    order.sort_by_key(|(k, _)| *k);
    let side = |s: Side| order.iter().filter(move |(_, u)| u.side == Some(s));
    let uploads_of = |s: Side| side(s).count();
    let samples_of = |s: Side| side(s).map(|(_, u)| u.rows).sum::<u64>();
    let counts = [uploads_of(Side::Base), uploads_of(Side::Head)];
    let samples = [samples_of(Side::Base), samples_of(Side::Head)];
    let too_little = [Side::Base, Side::Head]
        .iter()
        .zip(counts.iter().zip(samples))
        .find_map(|(s, (&n, rows))| {
            let name = if *s == Side::Base { "base" } else { "head" };
            if n < thresholds.min_uploads {
                Some(format!(
                    "the {name} release has {n} uploads, fewer than {}",
                    thresholds.min_uploads
                ))
            } else if rows < thresholds.min_samples {
                Some(format!(
                    "the {name} release has {rows} samples, fewer than {}",
                    thresholds.min_samples
                ))
            } else {
                None
            }
        });
    let mut functions: Vec<&str> = function_rows
        .iter()
        .filter(|(_, &rows)| rows >= thresholds.min_function_samples)
        .map(|(f, _)| *f)
        .collect();
    functions.sort_unstable();
    let mut tested = Vec::new();
    for measure in [Measure::Self_, Measure::Total] {
        for &function in &functions {
            let shares = |s: Side| -> Vec<f64> {
                side(s)
                    .map(|(_, u)| {
                        let (own, total) = u.functions.get(function).copied().unwrap_or((0, 0));
                        let value = if measure == Measure::Self_ {
                            own
                        } else {
                            total
                        };
                        value as f64 / u.whole as f64
                    })
                    .collect()
            };
            let (base, head) = (shares(Side::Base), shares(Side::Head));
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
            let p = welch(&base, &head).map_or(1.0, |w| w.p);
            tested.push(FunctionChange {
                function: function.to_owned(),
                measure,
                base_share: mean(&base),
                head_share: mean(&head),
                p,
                q: 1.0,
                verdict: Verdict::Unchanged,
            });
        }
    }
    let q = benjamini_hochberg(&tested.iter().map(|c| c.p).collect::<Vec<_>>());
    for (change, q) in tested.iter_mut().zip(q) {
        change.q = q;
        let difference = change.head_share - change.base_share;
        let relative = if change.base_share > 0.0 {
            difference.abs() / change.base_share
        } else {
            f64::INFINITY
        };
        let flagged = too_little.is_none()
            && q <= thresholds.max_q
            && relative > thresholds.min_relative
            && difference.abs() > thresholds.min_absolute;
        change.verdict = match (flagged, difference > 0.0) {
            (false, _) => Verdict::Unchanged,
            (true, true) => Verdict::Regression,
            (true, false) => Verdict::Improvement,
        };
    }
    tested.sort_by(|a, b| {
        let flagged = |c: &FunctionChange| c.verdict == Verdict::Unchanged;
        let size = |c: &FunctionChange| -(c.head_share - c.base_share).abs();
        (flagged(a), size(a), &a.function, a.measure)
            .partial_cmp(&(flagged(b), size(b), &b.function, b.measure))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    Comparison {
        uploads: counts,
        samples,
        too_little,
        functions: tested,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(state: &mut u64) -> f64 {
        *state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (*state >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A normal deviate (Box–Muller).
    fn normal(state: &mut u64) -> f64 {
        let (u, v) = (lcg(state).max(1e-12), lcg(state));
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    /// A fleet of `uploads` uploads per release over `functions` functions, each upload's
    /// shares the release's shares with 8% noise per function, `samples` samples each; the
    /// head's shares are the base's times `planted` (by function index). Rows as owned
    /// strings, to borrow from.
    fn fleet(
        seed: u64,
        uploads: usize,
        functions: usize,
        samples: i64,
        planted: &[(usize, f64)],
    ) -> Vec<(String, Side, String, i64, i64)> {
        let mut state = seed;
        // Base shares: a few large functions and a long tail.
        let weights: Vec<f64> = (0..functions)
            .map(|i| 1.0 / (i as f64 + 2.0).powf(1.2))
            .collect();
        let mut rows = Vec::new();
        for (side, tag) in [(Side::Base, "a"), (Side::Head, "b")] {
            let mut w = weights.clone();
            if side == Side::Head {
                for &(i, factor) in planted {
                    w[i] *= factor;
                }
            }
            for u in 0..uploads {
                let noisy: Vec<f64> = w
                    .iter()
                    .map(|&x| x * (1.0 + 0.08 * normal(&mut state)).max(0.0))
                    .collect();
                let sum: f64 = noisy.iter().sum();
                for (i, x) in noisy.iter().enumerate() {
                    let value = (x / sum * samples as f64).round() as i64;
                    if value > 0 {
                        rows.push((
                            format!("{tag}{u:03}"),
                            side,
                            format!("f{i:03}"),
                            value,
                            value,
                        ));
                    }
                }
            }
        }
        rows
    }

    fn run(rows: &[(String, Side, String, i64, i64)], thresholds: &Thresholds) -> Comparison {
        compare(
            rows.iter()
                .map(|(upload, side, function, value, count)| RollupRow {
                    upload,
                    side: *side,
                    function,
                    self_value: *value,
                    total_value: *value,
                    self_rows: *count,
                }),
            thresholds,
            false,
        )
    }

    fn flagged(c: &Comparison, verdict: Verdict) -> Vec<(String, Measure)> {
        c.functions
            .iter()
            .filter(|f| f.verdict == verdict)
            .map(|f| (f.function.clone(), f.measure))
            .collect()
    }

    #[test]
    fn planted_changes_are_flagged_and_noise_is_not() {
        // f000 (the largest, about 16%) up by a fifth; f002 (about 7%) down by a fifth; f050
        // (about 0.3%) doubled, which is under half a percentage point.
        let planted = [(0, 1.2), (2, 0.8), (50, 2.0)];
        for seed in 1..=5 {
            let rows = fleet(seed, 25, 200, 20_000, &planted);
            let c = run(&rows, &Thresholds::default());
            assert_eq!(c.uploads, [25, 25]);
            assert!(c.too_little.is_none(), "{:?}", c.too_little);
            let regressions = flagged(&c, Verdict::Regression);
            let improvements = flagged(&c, Verdict::Improvement);
            assert!(
                regressions.contains(&("f000".into(), Measure::Self_)),
                "seed {seed}: {regressions:?}"
            );
            assert!(
                improvements.contains(&("f002".into(), Measure::Self_)),
                "seed {seed}: {improvements:?}"
            );
            // Renormalized, every other function's share moves a little the other way; only
            // the planted ones may be flagged.
            for (function, _) in regressions.iter().chain(&improvements) {
                assert!(
                    ["f000", "f002"].contains(&function.as_str()),
                    "seed {seed}: {function} flagged"
                );
            }
            // Flagged first, the largest change first.
            assert_eq!(c.functions[0].function, "f000");
        }
    }

    #[test]
    fn a_fleet_of_pure_noise_flags_nothing() {
        // With the size gates off, only the false discovery rate keeps noise out: under no
        // change at all, any flag comes with probability at most `max_q` per fleet.
        let only_fdr = Thresholds {
            min_relative: 0.0,
            min_absolute: 0.0,
            ..Thresholds::default()
        };
        let mut fleets_with_flags = 0;
        for seed in 10..30 {
            let rows = fleet(seed, 30, 300, 20_000, &[]);
            let c = run(&rows, &Thresholds::default());
            let flags = |c: &Comparison| {
                c.functions
                    .iter()
                    .filter(|f| f.verdict != Verdict::Unchanged)
                    .count()
            };
            assert_eq!(flags(&c), 0, "seed {seed}");
            // The p-values spread over (0, 1): p < 0.01 alone, uncorrected, would flag some
            // of the 600 tests of most fleets.
            let small = c.functions.iter().filter(|f| f.p < 0.05).count();
            assert!(
                small > 0 && small < c.functions.len() / 5,
                "seed {seed}: {small}"
            );
            fleets_with_flags += usize::from(flags(&run(&rows, &only_fdr)) > 0);
        }
        assert!(
            fleets_with_flags <= 1,
            "{fleets_with_flags} of 20 noise fleets flagged"
        );
    }

    #[test]
    fn too_few_uploads_or_samples_flag_nothing_and_say_why() {
        let rows = fleet(3, 10, 50, 20_000, &[(0, 1.5)]);
        let c = run(&rows, &Thresholds::default());
        assert_eq!(
            c.too_little.as_deref(),
            Some("the base release has 10 uploads, fewer than 20")
        );
        assert!(c.functions.iter().all(|f| f.verdict == Verdict::Unchanged));
        let rows = fleet(3, 25, 50, 300, &[(0, 1.5)]);
        let c = run(&rows, &Thresholds::default());
        assert!(
            c.too_little
                .as_deref()
                .unwrap()
                .contains("samples, fewer than 10000"),
            "{:?}",
            c.too_little
        );
    }
}
