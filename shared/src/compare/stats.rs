//! The statistics of comparing two releases: Welch's t-test on per-upload shares, and the
//! Benjamini–Hochberg adjustment across the functions compared.
//!
//! Each upload gives one observation per function (its share of the series), so uploads of
//! very different sizes weigh the same, and Welch's test does not assume the two releases'
//! spreads are equal. Testing thousands of functions at once, the adjusted p-values bound the
//! share of flagged functions that are noise (the false discovery rate), not the chance of any.

use statrs::function::beta::beta_reg;

/// The outcome of Welch's two-sample t-test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Welch {
    /// The head's mean minus the base's.
    pub difference: f64,
    /// The t statistic: positive when the head's mean is higher.
    pub t: f64,
    /// The Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// The two-sided p-value.
    pub p: f64,
}

/// Mean and sample variance, worked out on the values less the first: equal values give a
/// variance of exactly zero (their plain mean can miss them by a rounding, which would make a
/// spread of nothing look like evidence).
fn moments(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let shift = xs[0];
    let shifted_mean = xs.iter().map(|x| x - shift).sum::<f64>() / n;
    let variance = xs
        .iter()
        .map(|x| (x - shift - shifted_mean).powi(2))
        .sum::<f64>()
        / (n - 1.0);
    (shift + shifted_mean, variance)
}

/// Welch's test of `head` against `base`; `None` with fewer than two observations on a side
/// or no spread on either (every upload gave the same share: nothing to test).
pub(crate) fn welch(base: &[f64], head: &[f64]) -> Option<Welch> {
    if base.len() < 2 || head.len() < 2 {
        return None;
    }
    let (mean_a, var_a) = moments(base);
    let (mean_b, var_b) = moments(head);
    let (se_a, se_b) = (var_a / base.len() as f64, var_b / head.len() as f64);
    let se = se_a + se_b;
    // Also refuses a NaN, from a share that is not a number.
    if se.is_nan() || se <= 0.0 {
        return None;
    }
    let difference = mean_b - mean_a;
    let t = difference / se.sqrt();
    let df = se * se
        / (se_a * se_a / (base.len() as f64 - 1.0) + se_b * se_b / (head.len() as f64 - 1.0));
    // P(|T| > |t|) for Student's t with `df` degrees of freedom, through the regularized
    // incomplete beta function.
    let p = beta_reg(df / 2.0, 0.5, df / (df + t * t)).clamp(0.0, 1.0);
    Some(Welch {
        difference,
        t,
        df,
        p,
    })
}

/// The Benjamini–Hochberg adjusted p-values of `p`, in the same order: a function is flagged
/// at false discovery rate q when its adjusted value is at most q.
pub(crate) fn benjamini_hochberg(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut adjusted = vec![0.0; m];
    // From the largest p down, each adjusted value is the least of its own p·m/rank and the
    // adjusted value above it, so they keep the p-values' order.
    let mut least = 1.0f64;
    for (rank, &i) in order.iter().enumerate().rev() {
        let value = p[i] * m as f64 / (rank + 1) as f64;
        least = least.min(value);
        adjusted[i] = least;
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance * b.abs().max(1e-300)
    }

    #[test]
    fn welch_matches_an_independent_computation() {
        // Reference values from mpmath at 40 digits (`betainc`, regularized), computed from
        // the same definitions: Wikipedia's first Welch example, and per-upload shares.
        let cases: [(&[f64], &[f64], [f64; 3]); 2] = [
            (
                &[
                    27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0,
                    21.7, 21.4,
                ],
                &[
                    27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9,
                    20.5, 24.4,
                ],
                [2.4553563982860045, 24.988529290231414, 0.02137800146286706],
            ),
            (
                &[0.0123, 0.0131, 0.0119, 0.0142, 0.0127, 0.0125],
                &[
                    0.0150, 0.0139, 0.0161, 0.0147, 0.0158, 0.0144, 0.0152, 0.0149, 0.0166, 0.0141,
                ],
                [
                    5.339_532_021_184_878,
                    11.452674431857456,
                    0.00020707276050894439,
                ],
            ),
        ];
        for (base, head, [t, df, p]) in cases {
            let w = welch(base, head).unwrap();
            assert!(close(w.t, t, 1e-12), "{w:?}");
            assert!(close(w.df, df, 1e-12), "{w:?}");
            assert!(close(w.p, p, 1e-9), "{w:?}");
            // Swapped, the difference changes sign and p does not.
            let back = welch(head, base).unwrap();
            assert!(
                close(back.t, -t, 1e-12) && close(back.p, p, 1e-9),
                "{back:?}"
            );
        }
    }

    #[test]
    fn nothing_is_tested_without_spread_or_observations() {
        assert_eq!(welch(&[0.1], &[0.2, 0.3]), None);
        assert_eq!(welch(&[0.2, 0.2], &[0.2, 0.2, 0.2]), None);
        // One side without spread is still a test: here with 2 degrees of freedom, whose
        // two-sided p-value has the closed form 1 - |t| / sqrt(t² + 2).
        let w = welch(&[0.2, 0.2, 0.2], &[0.3, 0.31, 0.29]).unwrap();
        assert!(close(w.df, 2.0, 1e-12) && w.difference > 0.0, "{w:?}");
        assert!(
            close(w.p, 1.0 - w.t / (w.t * w.t + 2.0).sqrt(), 1e-9),
            "{w:?}"
        );
    }

    #[test]
    fn benjamini_hochberg_adjusts_as_defined() {
        // p·m/rank, made monotone from the top: ranks 1..5 of [0.01, 0.04, 0.03, 0.5, 0.02].
        let p = [0.01, 0.04, 0.03, 0.5, 0.02];
        let q = benjamini_hochberg(&p);
        let expected = [0.05, 0.05, 0.05, 0.5, 0.05];
        for (got, want) in q.iter().zip(expected) {
            assert!(close(*got, want, 1e-12), "{q:?}");
        }
        // Adjusted values keep the p-values' order and never fall below them.
        let p = [0.001, 0.2, 0.0004, 0.9, 0.03, 0.03];
        let q = benjamini_hochberg(&p);
        for i in 0..p.len() {
            assert!(q[i] >= p[i]);
            for j in 0..p.len() {
                if p[i] < p[j] {
                    assert!(q[i] <= q[j], "{q:?}");
                }
            }
        }
        assert!(benjamini_hochberg(&[]).is_empty());
    }
}
