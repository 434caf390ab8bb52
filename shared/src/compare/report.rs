//! The comparison's report: Markdown for people, JSON for tools, both listing the flagged
//! functions first.

use std::fmt::Write as _;

use serde_json::{json, Value};

use super::flags::{Comparison, FunctionChange, Measure, Verdict};
use super::rollups::Selection;

/// The comparison's report, as Markdown and as JSON, and how many functions it flagged.
#[derive(Clone, Debug)]
pub struct CompareReport {
    /// For people: regressions, then improvements, per series.
    pub markdown: String,
    /// For tools: `regressions` and `improvements` name their functions.
    pub json: serde_json::Value,
    /// Functions flagged as slower (a larger share), over every series.
    pub regressions: usize,
    /// Functions flagged as faster.
    pub improvements: usize,
}

/// One series' comparison.
#[derive(Clone, Debug)]
pub(crate) struct SeriesComparison {
    pub sample_type: String,
    pub sample_unit: String,
    pub comparison: Comparison,
}

fn measure(m: Measure) -> &'static str {
    match m {
        Measure::Self_ => "self",
        Measure::Total => "total",
    }
}

fn percent(share: f64) -> String {
    format!("{:.2}%", share * 100.0)
}

/// The report as Markdown.
pub(crate) fn markdown(selection: &Selection<'_>, series: &[SeriesComparison]) -> String {
    let mut out = String::new();
    let environment = selection
        .environment
        .map_or_else(String::new, |e| format!(" ({e})"));
    let _ = writeln!(
        out,
        "# {}: release {} against {}{environment}\n",
        selection.service, selection.head, selection.base
    );
    if series.is_empty() {
        let _ = writeln!(out, "No rollup rows of either release.");
    }
    for s in series {
        let c = &s.comparison;
        let _ = writeln!(out, "## {} ({})\n", s.sample_type, s.sample_unit);
        let _ = writeln!(
            out,
            "Uploads: {} of {}, {} of {}. Samples: {} and {}.\n",
            c.uploads[0], selection.base, c.uploads[1], selection.head, c.samples[0], c.samples[1]
        );
        if let Some(why) = &c.too_little {
            let _ = writeln!(out, "Nothing is flagged: {why}.\n");
            continue;
        }
        for (title, verdict) in [
            ("Regressions", Verdict::Regression),
            ("Improvements", Verdict::Improvement),
        ] {
            let flagged: Vec<&FunctionChange> = c
                .functions
                .iter()
                .filter(|f| f.verdict == verdict)
                .collect();
            let _ = writeln!(out, "### {title}\n");
            if flagged.is_empty() {
                let _ = writeln!(out, "None.\n");
                continue;
            }
            let _ = writeln!(
                out,
                "| function | share | {} | {} | change | p | q |",
                selection.base, selection.head
            );
            let _ = writeln!(out, "|---|---|---|---|---|---|---|");
            for f in flagged {
                let change = f.head_share - f.base_share;
                let _ = writeln!(
                    out,
                    "| `{}` | {} | {} | {} | {:+.2} pp ({:+.0}%) | {:.2e} | {:.2e} |",
                    f.function.replace('|', "\\|").replace('`', "'"),
                    measure(f.measure),
                    percent(f.base_share),
                    percent(f.head_share),
                    change * 100.0,
                    if f.base_share > 0.0 {
                        change / f.base_share * 100.0
                    } else {
                        f64::INFINITY
                    },
                    f.p,
                    f.q
                );
            }
            let _ = writeln!(out);
        }
    }
    out
}

/// The report as JSON: every series in detail, and the flagged functions of all series in
/// `regressions` and `improvements`.
pub(crate) fn json(selection: &Selection<'_>, series: &[SeriesComparison]) -> Value {
    let entry = |s: &SeriesComparison, f: &FunctionChange| {
        json!({
            "function": f.function,
            "measure": measure(f.measure),
            "sample_type": s.sample_type,
            "sample_unit": s.sample_unit,
            "base_share": f.base_share,
            "head_share": f.head_share,
            "change": f.head_share - f.base_share,
            "p": f.p,
            "q": f.q,
        })
    };
    let flagged = |verdict: Verdict| -> Vec<Value> {
        series
            .iter()
            .flat_map(|s| {
                s.comparison
                    .functions
                    .iter()
                    .filter(move |f| f.verdict == verdict)
                    .map(move |f| entry(s, f))
            })
            .collect()
    };
    json!({
        "service": selection.service,
        "environment": selection.environment,
        "base": selection.base,
        "head": selection.head,
        "regressions": flagged(Verdict::Regression),
        "improvements": flagged(Verdict::Improvement),
        "series": series.iter().map(|s| json!({
            "sample_type": s.sample_type,
            "sample_unit": s.sample_unit,
            "uploads": {"base": s.comparison.uploads[0], "head": s.comparison.uploads[1]},
            "samples": {"base": s.comparison.samples[0], "head": s.comparison.samples[1]},
            "too_little": s.comparison.too_little,
            "functions_tested": s.comparison.functions.len(),
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(function: &str, base: f64, head: f64, verdict: Verdict) -> FunctionChange {
        FunctionChange {
            function: function.to_owned(),
            measure: Measure::Self_,
            base_share: base,
            head_share: head,
            p: 1e-6,
            q: 1e-4,
            verdict,
        }
    }

    fn example() -> (Selection<'static>, Vec<SeriesComparison>) {
        let selection = Selection {
            service: "shop",
            environment: Some("prod"),
            base: "1.0",
            head: "1.1",
        };
        let comparison = Comparison {
            uploads: [25, 30],
            samples: [500_000, 600_000],
            too_little: None,
            functions: vec![
                change("a|b", 0.10, 0.13, Verdict::Regression),
                change("c", 0.05, 0.04, Verdict::Improvement),
                change("d", 0.20, 0.20, Verdict::Unchanged),
            ],
        };
        let series = vec![SeriesComparison {
            sample_type: "cpu".into(),
            sample_unit: "nanoseconds".into(),
            comparison,
        }];
        (selection, series)
    }

    #[test]
    fn markdown_lists_regressions_then_improvements() {
        let (selection, series) = example();
        let text = markdown(&selection, &series);
        assert!(
            text.starts_with("# shop: release 1.1 against 1.0 (prod)\n"),
            "{text}"
        );
        let regression = text.find("| `a\\|b` | self | 10.00% | 13.00% | +3.00 pp (+30%) |");
        let improvement = text.find("| `c` | self | 5.00% | 4.00% | -1.00 pp (-20%) |");
        assert!(regression.is_some() && improvement.is_some(), "{text}");
        assert!(regression < improvement, "{text}");
        assert!(!text.contains("`d`"), "{text}");
    }

    #[test]
    fn json_names_the_flagged_functions() {
        let (selection, series) = example();
        let v = json(&selection, &series);
        assert_eq!(v["regressions"][0]["function"], "a|b");
        assert_eq!(v["improvements"][0]["function"], "c");
        assert_eq!(v["regressions"].as_array().unwrap().len(), 1);
        assert_eq!(v["series"][0]["uploads"]["head"], 30);
        assert_eq!(v["series"][0]["functions_tested"], 3);
    }
}
