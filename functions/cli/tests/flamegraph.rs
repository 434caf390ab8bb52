//! `proflake flamegraph`, run as a user runs it, on the py-spy, Android and pprof samples:
//! expectations come from the folded file itself and from `inspect`, so they hold whatever the
//! samples hold.

use std::fs;
use std::path::Path;

mod common;

use common::{proflake, repo, text};

const FOLDED: &str = "samples/folded/pyspy.folded";
const METADATA: &str = "samples/folded/pyspy.metadata.json";
/// The metadata's `timestamp`: the start of the folded profile, whose samples have no time.
const START: i64 = 1_763_800_000;
const ANDROID: &str = "samples/perfetto/android_app.pftrace";
const ANDROID_METADATA: &str = "samples/perfetto/android_app.metadata.json";
/// pprof with two series: `samples` (count) and `cpu` (nanoseconds).
const PPROF: &str = "samples/pprof/google-pprof_report_sample.cpu.pb.gz";

/// `(stack, count)` of every line of the folded sample.
fn folded_lines() -> Vec<(String, u64)> {
    fs::read_to_string(repo(FOLDED))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (stack, count) = l.rsplit_once(' ').unwrap();
            (stack.to_owned(), count.parse().unwrap())
        })
        .collect()
}

fn total_where(keep: impl Fn(&str) -> bool) -> u64 {
    folded_lines()
        .iter()
        .filter(|(s, _)| keep(s))
        .map(|(_, c)| c)
        .sum()
}

/// The graph's total and unit, from inferno's root frame `all (N <unit>, 100%)`.
fn svg_total_in(svg: &str) -> (u64, String) {
    let start = svg.find("all (").expect("a root frame") + "all (".len();
    let rest = &svg[start..];
    let end = rest.find(", 100%)").expect("a total");
    let (count, unit) = rest[..end].split_once(' ').expect("a count and a unit");
    (count.replace(',', "").parse().unwrap(), unit.to_owned())
}

/// The graph's total in samples.
fn svg_total(svg: &str) -> u64 {
    let (total, unit) = svg_total_in(svg);
    assert_eq!(unit, "samples");
    total
}

/// `(name, unit) -> total_weight` of an input's series, as `inspect` decodes them.
fn inspect_series(input: &str) -> Vec<(String, String, u64)> {
    let run = proflake(&["inspect", repo(input).to_str().unwrap(), "--json"]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let json: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    json["summary"]["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_owned(),
                s["unit"].as_str().unwrap().to_owned(),
                s["total_weight"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Runs `flamegraph` and returns the SVG text, asserting success.
fn flamegraph(input: &Path, out: &Path, extra: &[&str]) -> String {
    let mut args = vec![
        "flamegraph",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let run = proflake(&args);
    assert!(run.status.success(), "{args:?}: {}", text(&run.stderr));
    fs::read_to_string(out).unwrap()
}

/// A sample converted into a bucket directory, as `convert --out` writes it.
fn bucket_of(input: &str, metadata: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let input = repo(input);
    let mut args = vec![
        "convert",
        input.to_str().unwrap(),
        "--out",
        dir.path().to_str().unwrap(),
    ];
    let metadata = metadata.map(repo);
    if let Some(m) = &metadata {
        args.extend(["--metadata", m.to_str().unwrap()]);
    }
    let run = proflake(&args);
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert!(
        dir.path().join("tables/v2/samples").is_dir(),
        "convert wrote no tables"
    );
    dir
}

/// The py-spy sample converted.
fn bucket() -> tempfile::TempDir {
    bucket_of(FOLDED, Some(METADATA))
}

#[test]
fn file_and_converted_bucket_draw_the_same_graph() {
    let dir = tempfile::tempdir().unwrap();
    let bucket = bucket();
    let meta = repo(METADATA);
    let direct = flamegraph(
        &repo(FOLDED),
        &dir.path().join("direct.svg"),
        &["--metadata", meta.to_str().unwrap(), "--title", "py-spy"],
    );
    let via_bucket = flamegraph(
        bucket.path(),
        &dir.path().join("bucket.svg"),
        &["--title", "py-spy"],
    );
    let everything = total_where(|_| true);
    for svg in [&direct, &via_bucket] {
        assert!(svg.contains("<svg"), "{svg}");
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("py-spy"));
        // Every sample is drawn, those the producer recorded without a frame included.
        assert_eq!(svg_total(svg), everything);
        for function in ["crunch_numbers", "primes_below", "sieve_worker"] {
            assert!(
                folded_lines().iter().any(|(s, _)| s.contains(function)),
                "{function} is not in the sample"
            );
            assert!(svg.contains(&format!("<title>{function} (")), "{function}");
        }
    }
    // Same tables, same code, hashed colours: the same bytes.
    assert!(direct == via_bucket, "the two graphs differ");
}

#[test]
fn thread_filter_narrows_the_total() {
    let dir = tempfile::tempdir().unwrap();
    let bucket = bucket();
    let sieve = total_where(|s| s.starts_with("thread (18687)"));
    assert!(sieve > 0 && sieve < total_where(|_| true));
    let by_id = flamegraph(
        bucket.path(),
        &dir.path().join("a.svg"),
        &["--thread", "18687"],
    );
    assert_eq!(svg_total(&by_id), sieve);
    assert!(by_id.contains("primes_below"));
    assert!(
        !by_id.contains("crunch_numbers"),
        "the main thread's frames must be filtered out"
    );
    let by_name = flamegraph(
        bucket.path(),
        &dir.path().join("b.svg"),
        &["--thread", "sieve"],
    );
    assert_eq!(svg_total(&by_name), sieve);
}

#[test]
fn time_range_narrows_the_total_in_either_notation() {
    // The Android trace's samples have their own times, from 2025-11-22T08:26:41Z on.
    let dir = tempfile::tempdir().unwrap();
    let bucket = bucket_of(ANDROID, Some(ANDROID_METADATA));
    let everything = svg_total(&flamegraph(bucket.path(), &dir.path().join("all.svg"), &[]));
    let range = |name: &str, from: &str, to: &str| {
        let svg = flamegraph(
            bucket.path(),
            &dir.path().join(name),
            &["--from", from, "--to", to, "--samples"],
        );
        svg_total(&svg)
    };
    let rfc = range("a.svg", "2025-11-22T08:26:41Z", "2025-11-22T08:26:51Z");
    let unix = range("b.svg", "1763800001", "1763800011");
    assert!(rfc > 0 && rfc < everything, "{rfc} of {everything}");
    assert_eq!(unix, rfc);
    // Both ends are inclusive: two ranges meeting without overlap add up.
    let first = range("c.svg", "1763800001", "1763800006");
    let second = range("d.svg", "1763800006.000000001", "1763800011");
    assert!(first > 0 && second > 0);
    assert_eq!(first + second, rfc);
}

#[test]
fn aggregated_samples_are_at_their_profiles_start() {
    // Folded lines have no time: the graph places them at the profile's start.
    let dir = tempfile::tempdir().unwrap();
    let bucket = bucket();
    let at_start = flamegraph(
        bucket.path(),
        &dir.path().join("a.svg"),
        &["--from", &START.to_string(), "--to", &START.to_string()],
    );
    assert_eq!(svg_total(&at_start), total_where(|_| true));
    let late = proflake(&[
        "flamegraph",
        bucket.path().to_str().unwrap(),
        "-o",
        dir.path().join("c.svg").to_str().unwrap(),
        "--from",
        &(START + 1).to_string(),
    ]);
    assert!(!late.status.success());
    assert!(text(&late.stderr).contains("no sample matches from 2025-11-22T08:26:41Z"));
}

#[test]
fn one_series_is_drawn_and_can_be_chosen() {
    let dir = tempfile::tempdir().unwrap();
    let series = inspect_series(PPROF);
    let total_of = |name: &str| {
        let (_, unit, total) = series.iter().find(|(n, ..)| n == name).unwrap().clone();
        (total, unit)
    };
    let (cpu_ns, unit) = total_of("cpu");
    assert_eq!(unit, "nanoseconds");
    let (samples, _) = total_of("samples");
    assert!(samples > 0 && cpu_ns > samples);
    // From the file, as from its bucket: the CPU series by default, in its own unit.
    let bucket = bucket_of(PPROF, None);
    for input in [repo(PPROF), bucket.path().to_owned()] {
        let default = flamegraph(&input, &dir.path().join("cpu.svg"), &[]);
        assert_eq!(svg_total_in(&default), (cpu_ns, "nanoseconds".into()));
        let counted = flamegraph(
            &input,
            &dir.path().join("samples.svg"),
            &["--sample-type", "samples"],
        );
        assert_eq!(svg_total(&counted), samples);
    }
    let run = proflake(&[
        "flamegraph",
        bucket.path().to_str().unwrap(),
        "-o",
        dir.path().join("x.svg").to_str().unwrap(),
        "--sample-type",
        "heap",
    ]);
    assert_ne!(run.status.code(), Some(0));
    let stderr = text(&run.stderr);
    assert!(
        stderr.contains(
            "no profile of series \"heap\"; series: \"cpu\" (nanoseconds), \"samples\" (count)"
        ),
        "{stderr}"
    );
}

#[test]
fn unknown_service_fails_and_names_the_request() {
    let dir = tempfile::tempdir().unwrap();
    let bucket = bucket();
    let out = dir.path().join("x.svg");
    let run = proflake(&[
        "flamegraph",
        bucket.path().to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--service",
        "checkout-api",
    ]);
    assert_ne!(run.status.code(), Some(0));
    let stderr = text(&run.stderr);
    assert!(
        stderr.contains("no profile of service \"checkout-api\""),
        "{stderr}"
    );
    assert!(!out.exists(), "no SVG for a failed selection");
}

#[test]
fn a_directory_without_tables_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let run = proflake(&[
        "flamegraph",
        dir.path().to_str().unwrap(),
        "-o",
        dir.path().join("x.svg").to_str().unwrap(),
    ]);
    assert_ne!(run.status.code(), Some(0));
    let stderr = text(&run.stderr);
    assert!(stderr.contains("no stack tables at"), "{stderr}");
    assert!(stderr.contains("tables/v2/"), "{stderr}");
}

#[test]
fn a_time_that_is_not_one_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let run = proflake(&[
        "flamegraph",
        repo(FOLDED).to_str().unwrap(),
        "-o",
        dir.path().join("x.svg").to_str().unwrap(),
        "--to",
        "yesterday",
    ]);
    assert_ne!(run.status.code(), Some(0));
    assert!(text(&run.stderr).contains("RFC 3339"));
}
