//! Symbolization by build ID: a C library generated and built by gcc here (thousands of
//! functions, each with an inlined helper, `-O2 -g`), and a pprof profile of it with one
//! sample per distinct address. Measures, through the jobs as the functions run them on a
//! bucket directory:
//!
//! - adding the debug file (`add_debug_file`: read, validated, its lookup cache built and
//!   stored), and the cache's size against the file's;
//! - frames symbolized per second: what symbolization adds to a conversion (the rehydration
//!   with the symbols less the first conversion without), over the frames it named;
//! - the time to rehydrate the upload (convert again with the symbols) against the time of its
//!   first conversion (no symbols yet).
//!
//! Run with `cargo bench -p proflake --bench symbolize` (or `scripts/bench.sh`). Needs gcc
//! and readelf. PROFLAKE_BENCH_FUNCTIONS sets the library's size (default 4000 functions),
//! PROFLAKE_BENCH_ADDRESSES_PER_FUNCTION the addresses sampled in each (default 25).

use std::fmt::Write as _;
use std::process::Command;
use std::time::{Duration, Instant};

use proflake::store::{LocalDirStore, ObjectStore};
use proflake::symbols::{add_debug_file, debug_file_build_id, store_debug_file, DebugFileOutcome};
use proflake::{process_upload, Outcome, ProcessOptions};
use proflake_proto::pprof;
use prost::Message;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("the tool runs (gcc, readelf)");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The generated library: its bytes, build ID, and the (start, size) of each function.
fn library(dir: &std::path::Path, functions: usize) -> (Vec<u8>, String, Vec<(u64, u64)>) {
    let mut src = String::new();
    for i in 0..functions {
        let k = 2_654_435_761u64.wrapping_mul(i as u64 + 1) as u32 | 1;
        let _ = writeln!(
            src,
            "static inline __attribute__((always_inline)) unsigned h{i}(unsigned x) \
             {{ return (x * {k}u) ^ (x >> {}); }}\n\
             __attribute__((noinline)) unsigned f{i}(unsigned n) \
             {{ unsigned s = 0; for (unsigned j = 0; j < n; j++) s += h{i}(j + s); return s; }}",
            i % 13 + 1
        );
    }
    let c = dir.join("gen.c");
    std::fs::write(&c, src).unwrap();
    let so = dir.join("libgen.so");
    run(Command::new("gcc")
        .args(["-O2", "-g", "-fPIC", "-shared", "-Wl,--build-id=sha1", "-o"])
        .arg(&so)
        .arg(&c));
    let notes = run(Command::new("readelf").arg("-n").arg(&so));
    let build_id = notes
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: "))
        .expect("a build ID")
        .trim()
        .to_owned();
    let symbols = run(Command::new("readelf").arg("-sW").arg(&so));
    let mut funcs: Vec<(u64, u64)> = symbols
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 8 && f[3] == "FUNC" && f[7].starts_with('f') && f[6] != "UND").then(|| {
                (
                    u64::from_str_radix(f[1], 16).unwrap(),
                    f[2].parse::<u64>().unwrap(),
                )
            })
        })
        .collect();
    funcs.sort();
    funcs.dedup();
    (std::fs::read(&so).unwrap(), build_id, funcs)
}

/// A pprof profile with one leaf sample per address, mapped 1:1 at `BASE`.
fn pprof_profile(build_id: &str, addresses: &[u64]) -> Vec<u8> {
    const BASE: u64 = 0x7f00_0000_0000;
    let strings: Vec<Vec<u8>> = ["", "cpu", "nanoseconds", "/data/libgen.so", build_id]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
    let profile = pprof::Profile {
        sample_type: vec![pprof::ValueType { r#type: 1, unit: 2 }],
        mapping: vec![pprof::Mapping {
            id: 1,
            memory_start: BASE,
            memory_limit: BASE + (1 << 32),
            file_offset: 0,
            filename: 3,
            build_id: 4,
            ..Default::default()
        }],
        location: addresses
            .iter()
            .enumerate()
            .map(|(i, a)| pprof::Location {
                id: i as u64 + 1,
                mapping_id: 1,
                address: BASE + a,
                ..Default::default()
            })
            .collect(),
        sample: (0..addresses.len())
            .map(|i| pprof::Sample {
                location_id: vec![i as u64 + 1],
                value: vec![10_000_000],
                ..Default::default()
            })
            .collect(),
        string_table: strings,
        time_nanos: 1_793_491_200_000_000_000,
        duration_nanos: 60_000_000_000,
        period_type: Some(pprof::ValueType { r#type: 1, unit: 2 }),
        period: 10_000_000,
        ..Default::default()
    };
    profile.encode_to_vec()
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let functions = env("PROFLAKE_BENCH_FUNCTIONS", 4000);
    let per_function = env("PROFLAKE_BENCH_ADDRESSES_PER_FUNCTION", 25) as u64;
    let dir = tempfile::tempdir().unwrap();
    let (lib, build_id, funcs) = library(dir.path(), functions);
    let addresses: Vec<u64> = funcs
        .iter()
        .flat_map(|&(start, size)| {
            (0..per_function.min(size)).map(move |j| start + j * size / per_function.min(size))
        })
        .collect();

    let id = debug_file_build_id(&lib).unwrap();
    let mut builds = Vec::new();
    let mut meta = None;
    for run in 0..5 {
        // A bucket of its own each run, so every run builds the cache.
        let store = LocalDirStore::new(dir.path().join(format!("add-{run}")));
        let key = store_debug_file(&store, &id, "libgen.so", &lib).unwrap();
        let t = Instant::now();
        let outcome = add_debug_file(&store, &key, u64::MAX).unwrap();
        builds.push(t.elapsed());
        let DebugFileOutcome::Stored { meta: stored, .. } = outcome else {
            panic!("{outcome:?}");
        };
        meta = Some(stored);
    }
    let meta = meta.unwrap();
    println!(
        "lookup cache        {} functions: debug file {} bytes, SymCache {} bytes ({:.3} of the file), added in {:?}",
        funcs.len(),
        lib.len(),
        meta.symcache_bytes,
        meta.symcache_bytes as f64 / lib.len() as f64,
        median(builds)
    );

    let upload = pprof_profile(&build_id, &addresses);
    let store = LocalDirStore::new(dir.path().join("bucket"));
    store.put("uploads/gen.pprof", &upload).unwrap();
    let reconvert = ProcessOptions {
        reconvert: true,
        ..ProcessOptions::default()
    };
    let timed = |store: &LocalDirStore| {
        let t = Instant::now();
        let outcome = process_upload(store, store, "uploads/gen.pprof", &reconvert).unwrap();
        let Outcome::Converted(converted) = outcome else {
            panic!("{outcome:?}");
        };
        (t.elapsed(), converted.frames_symbolized)
    };
    let median_of = |store: &LocalDirStore| {
        let runs: Vec<_> = (0..5).map(|_| timed(store)).collect();
        let named = runs[0].1;
        (median(runs.into_iter().map(|(t, _)| t).collect()), named)
    };
    let (first, _) = median_of(&store);
    let key = store_debug_file(&store, &id, "libgen.so", &lib).unwrap();
    let stored = add_debug_file(&store, &key, u64::MAX).unwrap();
    assert!(
        matches!(stored, DebugFileOutcome::Stored { .. }),
        "{stored:?}"
    );
    let (again, named) = median_of(&store);
    assert_eq!(
        named as usize,
        addresses.len(),
        "every address is in a function"
    );
    let symbolizing = again.saturating_sub(first).max(Duration::from_nanos(1));
    println!(
        "symbolize           {named} distinct frames in {symbolizing:?} more than the conversion: {:.0} frames/s",
        named as f64 / symbolizing.as_secs_f64()
    );
    println!(
        "rehydrate           {} samples: convert {first:?}, rehydrate {again:?} ({:.2}x the conversion)",
        addresses.len(),
        again.as_secs_f64() / first.as_secs_f64()
    );
}
