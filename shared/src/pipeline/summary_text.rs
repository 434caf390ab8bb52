//! The text form of a [`Summary`]: what `proflake inspect` prints below its input line.

use std::fmt::Write;

use super::summary::{ProfileSummary, Summary};
use crate::calendar::utc_millis as utc;

fn or_dash<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}

impl std::fmt::Display for Summary<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&render(self))
    }
}

/// Renders the summary for a terminal.
fn render(summary: &Summary<'_>) -> String {
    let (decoded, s) = (summary.decoded, &summary.profile);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "format      {} ({})",
        decoded.format.name(),
        decoded.container.name()
    );
    samples(&mut out, s);
    recorded(&mut out, s);
    processes_and_threads(&mut out, s);
    top_functions(&mut out, s);
    images(&mut out, s);
    if !s.findings.is_empty() {
        let _ = writeln!(out, "\nfindings ({})", s.findings.len());
        for f in &s.findings {
            let _ = writeln!(out, "  {f}");
        }
    }
    if !decoded.chunks.is_empty() {
        let _ = writeln!(
            out,
            "\n{} Sample v2 chunk(s) in the input, passed through unchanged",
            decoded.chunks.len()
        );
    }
    if !s.stats.is_empty() {
        let _ = writeln!(out, "\nskipped or unresolved");
        for (k, v) in &s.stats {
            let _ = writeln!(out, "  {k}: {v}");
        }
    }
    out
}

/// The clock, time range, sample counts and series.
fn samples(w: &mut String, s: &ProfileSummary) {
    let _ = writeln!(w, "timestamps  {}", s.timestamps);
    if let (Some(a), Some(b)) = (s.start_ns, s.end_ns) {
        let span = (b - a) as f64 / 1e9;
        let range = if s.timestamps == "unix" {
            format!("{} .. {}", utc(a), utc(b))
        } else {
            format!("{a} .. {b} ns")
        };
        let _ = writeln!(w, "time range  {range} ({span:.3} s)");
    }
    let _ = writeln!(
        w,
        "samples     {} ({} with a stack)",
        s.samples, s.samples_with_stack
    );
    for series in &s.series {
        let _ = writeln!(
            w,
            "  series    {} [{}, {}{}]: {} samples, total {} {}",
            series.name,
            series.kind,
            series.unit,
            series
                .source
                .as_deref()
                .map(|x| format!(", {x}"))
                .unwrap_or_default(),
            series.samples,
            series.total_weight,
            series.unit
        );
    }
    if s.instants + s.counter_values > 0 {
        let _ = writeln!(
            w,
            "marks       {} instants, {} values of {} counters (the counters table)",
            s.instants, s.counter_values, s.counters
        );
    }
    if s.aggregated_samples > 0 {
        let _ = writeln!(
            w,
            "  {} aggregated samples (no per-sample time; Sample v2 spreads them out)",
            s.aggregated_samples
        );
    }
}

/// When and how long the input says collection ran, and the profile's attributes.
fn recorded(w: &mut String, s: &ProfileSummary) {
    if let Some(start) = s.recorded_start_ns {
        let duration = s
            .recorded_duration_ns
            .map(|d| format!(", ran {:.3} s", d as f64 / 1e9))
            .unwrap_or_default();
        let _ = writeln!(w, "recorded    started {}{duration}", utc(start));
    }
    for (k, v) in &s.attributes {
        let _ = writeln!(w, "  {k} = {v}");
    }
}

fn processes_and_threads(w: &mut String, s: &ProfileSummary) {
    let _ = writeln!(w, "\nprocesses ({})", s.processes.len());
    for p in &s.processes {
        let _ = writeln!(
            w,
            "  pid {:>8}  {:>6} samples  {:>3} threads  {}",
            or_dash(p.pid),
            p.samples,
            p.threads,
            p.name.as_deref().unwrap_or("")
        );
    }
    let _ = writeln!(w, "\nthreads ({})", s.threads.len());
    for t in &s.threads {
        let _ = writeln!(
            w,
            "  tid {:>8}  pid {:>8}  {:>6} samples  {}",
            or_dash(t.tid),
            or_dash(t.pid),
            t.samples,
            t.name.as_deref().unwrap_or("")
        );
    }
}

fn top_functions(w: &mut String, s: &ProfileSummary) {
    let _ = writeln!(
        w,
        "\ntop functions (self / total, {})",
        s.top_functions_series.as_deref().unwrap_or("no series")
    );
    for f in &s.top_functions {
        let _ = writeln!(
            w,
            "  {:>6} {:>6}  {}",
            f.self_samples, f.total_samples, f.function
        );
    }
}

fn images(w: &mut String, s: &ProfileSummary) {
    let _ = writeln!(w, "\nimages ({})", s.images.len());
    for i in &s.images {
        let state = if i.frames == 0 {
            "no frames"
        } else if i.symbolized_frames == i.frames {
            "symbolized"
        } else if i.symbolized_frames == 0 {
            "unsymbolized"
        } else {
            "partly symbolized"
        };
        let _ = writeln!(
            w,
            "  {}  build id {}  {}/{} frames named ({state})",
            i.path.as_deref().unwrap_or("<no path>"),
            i.code_id.as_deref().unwrap_or("-"),
            i.symbolized_frames,
            i.frames
        );
    }
}

#[cfg(test)]
mod tests {
    use super::utc;

    #[test]
    fn formats_utc() {
        assert_eq!(utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(utc(1_700_000_001_010_000_000), "2023-11-14T22:13:21.010Z");
        assert_eq!(utc(951_782_400_000_000_000), "2000-02-29T00:00:00.000Z");
    }
}
