//! `proflake flamegraph`, run as a user runs it, on the py-spy sample: expectations come from
//! the folded file itself, so they hold whatever the sample holds.

use std::fs;
use std::path::Path;

mod common;

use common::{proflake, repo, text};

const FOLDED: &str = "samples/folded/pyspy.folded";
const METADATA: &str = "samples/folded/pyspy.metadata.json";
/// The metadata's `timestamp`: where the aggregated samples are laid out from.
const START: i64 = 1_763_800_000;

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

/// The graph's total, from inferno's root frame `all (N samples, 100%)`.
fn svg_total(svg: &str) -> u64 {
    let start = svg.find("all (").expect("a root frame") + "all (".len();
    let rest = &svg[start..];
    let end = rest.find(" samples, 100%)").expect("a total in samples");
    rest[..end].replace(',', "").parse().unwrap()
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

/// The sample converted into a bucket directory, as `convert --out` writes it.
fn bucket() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let run = proflake(&[
        "convert",
        repo(FOLDED).to_str().unwrap(),
        "--metadata",
        repo(METADATA).to_str().unwrap(),
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert!(
        dir.path().join("tables/v1/samples").is_dir(),
        "convert wrote no tables"
    );
    dir
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
    let dir = tempfile::tempdir().unwrap();
    let bucket = bucket();
    let everything = total_where(|_| true);
    // The first half second of the laid-out samples: 2025-11-22T08:26:40Z is START.
    let rfc = flamegraph(
        bucket.path(),
        &dir.path().join("a.svg"),
        &[
            "--from",
            "2025-11-22T08:26:40Z",
            "--to",
            "2025-11-22T08:26:40.5Z",
        ],
    );
    let unix = flamegraph(
        bucket.path(),
        &dir.path().join("b.svg"),
        &["--from", &START.to_string(), "--to", &format!("{START}.5")],
    );
    let part = svg_total(&rfc);
    assert!(part > 0 && part < everything, "{part} of {everything}");
    assert_eq!(svg_total(&unix), part);

    let late = proflake(&[
        "flamegraph",
        bucket.path().to_str().unwrap(),
        "-o",
        dir.path().join("c.svg").to_str().unwrap(),
        "--from",
        &(START + 3600).to_string(),
    ]);
    assert!(!late.status.success());
    assert!(text(&late.stderr).contains("no sample matches from 2025-11-22T09:26:40Z"));
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
    assert!(stderr.contains("tables/v1"), "{stderr}");
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
