//! `proflake compare` on a generated fleet: 25 uploads of each release of one service, folded
//! stacks with per-upload noise, one function planted slower and one faster in the new release.
//! The expected flags are what was planted; the rest of the fleet is noise and must not be.

use std::fmt::Write as _;
use std::fs;

mod common;

use common::{proflake, text};

fn lcg(state: &mut u64) -> f64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (*state >> 11) as f64 / (1u64 << 53) as f64
}

/// Folded stacks of one upload: 40 leaf functions under `main;handle`, weights falling off
/// with rank, each with ±8% noise, scaled by `planted` (function index → factor), 20,000
/// samples in all.
fn upload(state: &mut u64, planted: &[(usize, f64)]) -> String {
    let mut weights: Vec<f64> = (0..40).map(|i| 1.0 / (i as f64 + 2.0).powf(1.2)).collect();
    for &(i, factor) in planted {
        weights[i] *= factor;
    }
    let noisy: Vec<f64> = weights
        .iter()
        .map(|w| w * (1.0 + 0.16 * (lcg(state) - 0.5)))
        .collect();
    let sum: f64 = noisy.iter().sum();
    let mut out = String::new();
    for (i, w) in noisy.iter().enumerate() {
        let count = (w / sum * 20_000.0).round() as u64;
        if count > 0 {
            writeln!(out, "main;handle;work_{i:02} {count}").unwrap();
        }
    }
    out
}

/// Converts a fleet of 25 uploads per release of service `shop` into `store`: release 1.0 as
/// drawn, release 1.1 with `planted` factors.
fn convert_fleet(
    dir: &std::path::Path,
    store: &std::path::Path,
    seed: u64,
    planted: &[(usize, f64)],
) {
    let mut state = seed;
    for (release, planted) in [("1.0", &[][..]), ("1.1", planted)] {
        let inputs = dir.join(release);
        fs::create_dir(&inputs).unwrap();
        let mut paths = Vec::new();
        for u in 0..25 {
            let path = inputs.join(format!("shop-{release}-{u:02}.folded"));
            fs::write(&path, upload(&mut state, planted)).unwrap();
            paths.push(path.to_str().unwrap().to_owned());
        }
        let mut args = vec!["convert"];
        args.extend(paths.iter().map(String::as_str));
        args.extend([
            "--store",
            store.to_str().unwrap(),
            "--service",
            "shop",
            "--release",
            release,
            "--start-time",
            "1764000000",
        ]);
        let out = proflake(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
}

fn compare_json(store: &std::path::Path) -> serde_json::Value {
    let out = proflake(&[
        "compare",
        "--store",
        store.to_str().unwrap(),
        "--service",
        "shop",
        "--base",
        "1.0",
        "--head",
        "1.1",
        "--json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn compare_flags_nothing_in_a_fleet_of_pure_noise() {
    for seed in [11, 12] {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("bucket");
        convert_fleet(dir.path(), &store, seed, &[]);
        let report = compare_json(&store);
        assert_eq!(
            report["regressions"].as_array().unwrap().len(),
            0,
            "{report:#}"
        );
        assert_eq!(
            report["improvements"].as_array().unwrap().len(),
            0,
            "{report:#}"
        );
        assert_eq!(report["series"][0]["uploads"]["head"], 25);
    }
}

#[test]
fn compare_flags_what_was_planted_in_a_generated_fleet() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("bucket");
    convert_fleet(dir.path(), &store, 7, &[(0, 1.25), (3, 0.7)]);
    let compare = |extra: &[&str]| {
        let mut args = vec!["compare", "--store", store.to_str().unwrap()];
        args.extend(["--service", "shop", "--base", "1.0", "--head", "1.1"]);
        args.extend(extra);
        let out = proflake(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        out.stdout
    };
    let report: serde_json::Value = serde_json::from_slice(&compare(&["--json"])).unwrap();
    // `convert` published the fleet into the lake, which holds the same rows as the landing
    // tables compare reads by default.
    assert!(store.join("lake/function_rollup/_delta_log").is_dir());
    let lake: serde_json::Value =
        serde_json::from_slice(&compare(&["--json", "--tier", "lake"])).unwrap();
    assert_eq!(report, lake);
    let names = |list: &str| -> Vec<String> {
        let mut names: Vec<String> = report[list]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["measure"] == "self")
            .map(|f| f["function"].as_str().unwrap().to_owned())
            .collect();
        names.sort();
        names
    };
    assert_eq!(names("regressions"), ["work_00"], "{report:#}");
    assert_eq!(names("improvements"), ["work_03"], "{report:#}");
    assert_eq!(report["series"][0]["uploads"]["base"], 25);
    assert_eq!(report["series"][0]["uploads"]["head"], 25);
    // The caller of every leaf holds the whole series in both releases: never flagged.
    let all: Vec<&str> = ["regressions", "improvements"]
        .iter()
        .flat_map(|l| report[l].as_array().unwrap())
        .map(|f| f["function"].as_str().unwrap())
        .collect();
    assert!(
        !all.contains(&"main") && !all.contains(&"handle"),
        "{all:?}"
    );

    // Markdown by default, naming the regression.
    let markdown = text(&compare(&[]));
    assert!(
        markdown.starts_with("# shop: release 1.1 against 1.0\n"),
        "{markdown}"
    );
    assert!(markdown.contains("| `work_00` | self |"), "{markdown}");

    // The release report the publish function writes: 1.1 against the release first seen
    // before it, once, and again only when the uploads change.
    let bucket = proflake::store::LocalDirStore::new(&store);
    let defaults = proflake::compare::CompareRequest::new("", "", "");
    let reports = proflake::compare::report_releases(&bucket, &defaults).unwrap();
    assert_eq!(reports.len(), 1, "{reports:?}");
    let r = &reports[0];
    assert_eq!(
        (r.base.as_str(), r.head.as_str(), r.written),
        ("1.0", "1.1", true)
    );
    assert_eq!(r.json_key, "reports/shop/1.1.json");
    assert!(r.regressions >= 1 && r.improvements >= 1, "{r:?}");
    assert!(r.max_share_increase > 0.5, "{r:?}");
    let written: serde_json::Value =
        serde_json::from_slice(&fs::read(store.join(&r.json_key)).unwrap()).unwrap();
    assert_eq!(written["regressions"][0]["function"], "work_00");
    assert!(fs::read_to_string(store.join(&r.markdown_key))
        .unwrap()
        .contains("work_00"));
    let again = proflake::compare::report_releases(&bucket, &defaults).unwrap();
    assert_eq!(
        (again[0].written, again[0].regressions),
        (false, r.regressions)
    );

    // The differential flame graph: the planted regression red, the improvement blue, the
    // noise in between.
    let svg_path = dir.path().join("diff.svg");
    compare(&["--svg", svg_path.to_str().unwrap()]);
    let svg = fs::read_to_string(&svg_path).unwrap();
    let fill = |function: &str| -> (u8, u8, u8) {
        let at = svg
            .find(&format!("<title>{function} "))
            .unwrap_or_else(|| panic!("{function} is not drawn"));
        let rest = &svg[at..];
        let rgb = &rest[rest.find("fill=\"rgb(").unwrap() + 10..];
        let parts: Vec<u8> = rgb[..rgb.find(')').unwrap()]
            .split(',')
            .map(|p| p.trim().parse().unwrap())
            .collect();
        (parts[0], parts[1], parts[2])
    };
    let (r, g, b) = fill("work_00");
    assert!(
        r == 255 && g < 230 && b < 230,
        "work_00 grew: red, not {r},{g},{b}"
    );
    let (r, g, b) = fill("work_03");
    assert!(
        b == 255 && r < 230 && g < 230,
        "work_03 shrank: blue, not {r},{g},{b}"
    );

    // Too few uploads: nothing flagged, and the report says why.
    let report: serde_json::Value =
        serde_json::from_slice(&compare(&["--min-uploads", "30", "--json"])).unwrap();
    assert_eq!(report["regressions"].as_array().unwrap().len(), 0);
    assert_eq!(
        report["series"][0]["too_little"],
        "the base release has 25 uploads, fewer than 30"
    );
}
