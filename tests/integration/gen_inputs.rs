//! The benchmark input generators (`proflake-gen-inputs`): deterministic, and their output
//! decodes to exactly the samples asked for, so BENCHMARKS.md measures what it says it does.

use std::process::Command;

use proflake::{decode, Limits};

fn generate(args: &[&str]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("input");
    let status = Command::new(env!("CARGO_BIN_EXE_proflake-gen-inputs"))
        .arg(args[0])
        .arg(&out)
        .args(&args[1..])
        .status()
        .unwrap();
    assert!(status.success(), "{args:?}");
    std::fs::read(out).unwrap()
}

#[test]
fn perfetto_trace_has_one_sample_per_thread_and_millisecond() {
    let bytes = generate(&["perfetto", "2", "4"]);
    assert_eq!(bytes, generate(&["perfetto", "2", "4"]), "deterministic");
    let decoded = decode(&bytes, None, &Limits::default()).unwrap();
    assert_eq!(decoded.format.name(), "perfetto");
    let profile = &decoded.profile;
    assert_eq!(profile.samples().len(), 2 * 1000 * 4);
    assert_eq!(profile.threads().len(), 4);
    assert!(
        profile.stats.is_empty(),
        "nothing skipped: {:?}",
        profile.stats
    );
    // Interned on first use, so every sample resolves its stack.
    assert!(profile.samples().iter().all(|s| s.stack.is_some()));
    let java = profile
        .frames()
        .filter(|(_, f)| {
            profile
                .opt_str(f.module)
                .is_some_and(|m| m.starts_with("android.os."))
        })
        .count();
    assert!(java > 0, "Java frames mixed in");
}

#[test]
fn otlp_request_has_the_samples_asked_for() {
    let bytes = generate(&["otlp", "1000"]);
    assert_eq!(bytes, generate(&["otlp", "1000"]), "deterministic");
    let decoded = decode(&bytes, None, &Limits::default()).unwrap();
    assert_eq!(decoded.format.name(), "otlp");
    assert_eq!(decoded.profile.samples().len(), 1000);
    assert_eq!(decoded.profile.threads().len(), 16);
    assert!(
        decoded.profile.findings.is_empty(),
        "{:?}",
        decoded.profile.findings
    );
}

#[test]
fn pprof_profile_reaches_the_size_asked_for() {
    let bytes = generate(&["pprof", "1"]);
    assert_eq!(bytes, generate(&["pprof", "1"]), "deterministic");
    assert!(
        (1_000_000..1_001_000).contains(&bytes.len()),
        "{}",
        bytes.len()
    );
    let decoded = decode(&bytes, None, &Limits::default()).unwrap();
    assert_eq!(decoded.format.name(), "pprof");
    let series = decoded.profile.all_series().len();
    assert_eq!(series, 2, "samples/count and cpu/nanoseconds");
    assert_eq!(decoded.profile.samples().len() % series, 0);
}

#[test]
fn folded_stacks_decode_as_py_spy_lines_of_the_size_asked_for() {
    let bytes = generate(&["folded", "1"]);
    assert_eq!(bytes, generate(&["folded", "1"]), "deterministic");
    assert!(
        (1_000_000..1_010_000).contains(&bytes.len()),
        "{}",
        bytes.len()
    );
    let lines = bytes.iter().filter(|&&b| b == b'\n').count();
    let decoded = decode(&bytes, None, &Limits::default()).unwrap();
    assert_eq!(decoded.format.name(), "folded");
    let profile = &decoded.profile;
    assert_eq!(profile.attributes["folded.dialect"], "py-spy");
    // One sample per line, on one of 8 threads, with every frame parsed.
    assert_eq!(profile.samples().len(), lines);
    assert_eq!(profile.threads().len(), 8);
    assert!(profile.stats.is_empty(), "{:?}", profile.stats);
    assert!(profile
        .frames()
        .all(|(_, f)| f.file.is_some() && f.line.is_some()));
}
