//! Symbolization by build ID: a C library generated and built by gcc here (thousands of
//! functions, each with an inlined helper, `-O2 -g`), and a pprof profile of it with one
//! sample per distinct address. Measures:
//!
//! - building the lookup cache from the debug file, and the cache's size against the file's;
//! - frames symbolized per second (the symbolization stage alone, on the decoded model);
//! - the time to rehydrate the upload (convert again with the symbols, in a bucket
//!   directory) against the time of its first conversion (no symbols yet).
//!
//! Run with `cargo bench -p proflake --bench symbolize` (or `scripts/bench.sh`). Needs gcc
//! and readelf. PROFLAKE_BENCH_FUNCTIONS sets the library's size (default 4000 functions),
//! PROFLAKE_BENCH_ADDRESSES_PER_FUNCTION the addresses sampled in each (default 25).

use std::fmt::Write as _;
use std::process::Command;
use std::time::{Duration, Instant};

use proflake::{
    decode, process_upload, symbols::BuildId, LocalDirStore, ObjectStore, Outcome, ProcessOptions,
};
use proflake::{symbols::add_debug_file, symbols::DebugFileOutcome};
use proflake::{
    symbols::ingest_debug_file, symbols::symbolize, symbols::DebugFileKeys, symbols::DebugFileMeta,
    symbols::SymbolSource, symbols::Symbols,
};
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

struct Memory {
    meta: DebugFileMeta,
    cache: Vec<u8>,
}

impl SymbolSource for Memory {
    fn symbols(&self, build_id: &BuildId) -> proflake::Result<Option<Symbols>> {
        (*build_id == self.meta.build_id)
            .then(|| Symbols::new(self.meta.clone(), self.cache.clone()))
            .transpose()
    }
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

    let mut builds = Vec::new();
    let mut ingested = None;
    for _ in 0..5 {
        let t = Instant::now();
        let keys = DebugFileKeys {
            debug_file: "debuginfo/x/libgen.so".into(),
            symcache: "debuginfo/x/libgen.symcache".into(),
        };
        let id: BuildId = build_id.parse().unwrap();
        ingested = Some(ingest_debug_file(&id, &lib, keys).unwrap());
        builds.push(t.elapsed());
    }
    let ingested = ingested.unwrap();
    println!(
        "lookup cache        {} functions: debug file {} bytes, SymCache {} bytes ({:.3} of the file), built in {:?}",
        funcs.len(),
        lib.len(),
        ingested.symcache.len(),
        ingested.symcache.len() as f64 / lib.len() as f64,
        median(builds)
    );

    let upload = pprof_profile(&build_id, &addresses);
    let source = Memory {
        meta: ingested.meta.clone(),
        cache: ingested.symcache.clone(),
    };
    let mut times = Vec::new();
    let mut named = 0;
    for _ in 0..5 {
        let mut profile = decode(&upload, None).unwrap().profile;
        let t = Instant::now();
        let report = symbolize(&mut profile, &source).unwrap();
        times.push(t.elapsed());
        named = report.symbolicated();
    }
    let t = median(times);
    assert_eq!(
        named as usize,
        addresses.len(),
        "every address is in a function"
    );
    println!(
        "symbolize           {named} distinct frames in {t:?}: {:.0} frames/s",
        named as f64 / t.as_secs_f64()
    );

    let store = LocalDirStore::new(dir.path().join("bucket"));
    store.put("uploads/gen.pprof", &upload).unwrap();
    let reconvert = ProcessOptions {
        reconvert: true,
        ..ProcessOptions::default()
    };
    let timed = |store: &LocalDirStore| {
        let t = Instant::now();
        let outcome = process_upload(store, store, "uploads/gen.pprof", &reconvert).unwrap();
        assert!(matches!(outcome, Outcome::Converted(_)), "{outcome:?}");
        t.elapsed()
    };
    let first = median((0..5).map(|_| timed(&store)).collect());
    let key = format!("debuginfo/{build_id}/libgen.so");
    store.put(&key, &lib).unwrap();
    let stored = add_debug_file(&store, &key, u64::MAX).unwrap();
    assert!(
        matches!(stored, DebugFileOutcome::Stored { .. }),
        "{stored:?}"
    );
    let again = median((0..5).map(|_| timed(&store)).collect());
    println!(
        "rehydrate           {} samples: convert {first:?}, rehydrate {again:?} ({:.2}x the conversion)",
        addresses.len(),
        again.as_secs_f64() / first.as_secs_f64()
    );
}
