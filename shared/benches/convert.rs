//! Conversion throughput: decode and decode + Sample v2 + Parquet tables, on every committed
//! sample (one per input format), the largest pprof and OTLP fixtures, and a large generated
//! traced_perf-style trace (plain, zlib `compressed_packets`, and gzip). For each input the
//! write path is also timed apart from decoding (a conversion on one thread less its decode),
//! with the bytes Sample v2 and the Parquet tables each write per sample.
//!
//! Run with `cargo bench -p proflake --bench convert` (or `scripts/bench.sh`). Figures are
//! medians of several runs, printed as MB/s of input and samples/s; compare them side by side
//! from one run, not across machines.

use std::hint::black_box;
use std::io::Write;
use std::time::{Duration, Instant};

use proflake::{convert_upload, decode, ConvertOptions, Limits, UploadMetadata};
use proflake_proto::perfetto::{
    clock_snapshot::Clock, perf_events::Timebase, trace_packet::Data,
    trace_packet::OptionalTrustedPacketSequenceId, Callstack, ClockSnapshot, Frame, InternedData,
    InternedString, Mapping, PerfSample, PerfSampleDefaults, Trace, TracePacket,
    TracePacketDefaults,
};
use prost::Message;

const SEQ: u32 = 1;

fn packet(data: Option<Data>) -> TracePacket {
    TracePacket {
        optional_trusted_packet_sequence_id: Some(
            OptionalTrustedPacketSequenceId::TrustedPacketSequenceId(SEQ),
        ),
        data,
        ..Default::default()
    }
}

fn s(iid: u64, text: &str) -> InternedString {
    InternedString {
        iid: Some(iid),
        r#str: Some(text.as_bytes().to_vec()),
    }
}

/// A trace of `samples` perf samples over 16 threads with 400 distinct callstacks of depth
/// 8..40 drawn from 2,000 frames in 20 libraries. `compress` batches packets into zlib
/// `compressed_packets` as traced does.
fn synthetic_trace(samples: u64, compress: bool) -> Vec<u8> {
    let mut rng = 0x9e3779b97f4a7c15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let boot0 = 10_000_000_000u64;
    let mut out = Vec::new();
    let mut emit = |out: &mut Vec<u8>, p: TracePacket| {
        Trace { packet: vec![p] }.encode(out).expect("vec grows");
    };
    let mut snap = packet(Some(Data::ClockSnapshot(ClockSnapshot {
        clocks: vec![
            Clock {
                clock_id: Some(6),
                timestamp: Some(boot0),
                ..Default::default()
            },
            Clock {
                clock_id: Some(1),
                timestamp: Some(1_700_000_000_000_000_000),
                ..Default::default()
            },
        ],
        primary_trace_clock: Some(6),
    })));
    snap.optional_trusted_packet_sequence_id = None;
    emit(&mut out, snap);
    let mut first = packet(None);
    first.sequence_flags = Some(1);
    first.trace_packet_defaults = Some(TracePacketDefaults {
        timestamp_clock_id: Some(6),
        perf_sample_defaults: Some(PerfSampleDefaults {
            timebase: Some(Timebase {
                frequency: Some(100),
                counter: Some(1),
                ..Default::default()
            }),
        }),
        ..Default::default()
    });
    let mut interned = InternedData::default();
    for lib in 0..20u64 {
        interned
            .mapping_paths
            .push(s(lib + 1, &format!("libbench{lib}.so")));
        interned.build_ids.push(InternedString {
            iid: Some(lib + 1),
            r#str: Some((0..20).map(|i| (lib * 31 + i) as u8).collect()),
        });
        interned.mappings.push(Mapping {
            iid: Some(lib + 1),
            build_id: Some(lib + 1),
            start: Some(0x7f00_0000_0000 + lib * 0x100_0000),
            end: Some(0x7f00_0000_0000 + lib * 0x100_0000 + 0x80_0000),
            path_string_ids: vec![lib + 1],
            ..Default::default()
        });
    }
    for f in 0..2000u64 {
        interned
            .function_names
            .push(s(f + 1, &format!("_ZN5bench6module{}8functionEv", f)));
        interned.frames.push(Frame {
            iid: Some(f + 1),
            function_name_id: Some(f + 1),
            mapping_id: Some(f % 20 + 1),
            rel_pc: Some(0x1000 + f * 0x40),
            ..Default::default()
        });
    }
    for c in 0..400u64 {
        let depth = 8 + next() % 33;
        interned.callstacks.push(Callstack {
            iid: Some(c + 1),
            frame_ids: (0..depth).map(|d| 1 + (c * 7 + d * 13) % 2000).collect(),
        });
    }
    first.interned_data = Some(interned);
    emit(&mut out, first);
    let mut batch = Vec::new();
    for i in 0..samples {
        let mut p = packet(Some(Data::PerfSample(PerfSample {
            cpu: Some((i % 8) as u32),
            pid: Some(1000 + (i % 16 / 8) as u32),
            tid: Some(2000 + (i % 16) as u32),
            cpu_mode: Some(2),
            callstack_iid: Some(1 + next() % 400),
            timebase_count: Some(i * 10_000_000),
            ..Default::default()
        })));
        p.sequence_flags = Some(2);
        p.timestamp = Some(boot0 + 1_000_000_000 + i * 625_000);
        if compress {
            emit(&mut batch, p);
            if batch.len() > 256 * 1024 {
                flush(&mut out, &mut batch, &mut emit);
            }
        } else {
            emit(&mut out, p);
        }
    }
    flush(&mut out, &mut batch, &mut emit);
    out
}

fn flush(out: &mut Vec<u8>, batch: &mut Vec<u8>, emit: &mut impl FnMut(&mut Vec<u8>, TracePacket)) {
    if batch.is_empty() {
        return;
    }
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(6));
    z.write_all(batch).expect("in memory");
    let mut p = packet(Some(Data::CompressedPackets(
        z.finish().expect("in memory"),
    )));
    p.optional_trusted_packet_sequence_id = None;
    emit(out, p);
    batch.clear();
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
    z.write_all(bytes).expect("in memory");
    z.finish().expect("in memory")
}

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

fn median_of(runs: usize, mut f: impl FnMut()) -> f64 {
    median(
        (0..runs)
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed()
            })
            .collect(),
    )
    .as_secs_f64()
}

/// Times the two writers on an already decoded profile: Sample v2 chunks, then the Parquet
/// tables from the same plans, with output bytes per written sample.
/// The write path of `bytes` converted with `options`: a conversion on one thread less its
/// decode, in samples per second, and the bytes Sample v2 and the tables write per sample.
fn writers(name: &str, bytes: &[u8], options: &ConvertOptions, runs: usize) {
    let options = ConvertOptions {
        threads: Some(1),
        ..options.clone()
    };
    let convert = || convert_upload("uploads/bench", "etag", bytes, &options);
    let Ok(converted) = convert() else {
        return;
    };
    let rows = converted.manifest.profile.samples as usize;
    if rows == 0 {
        return;
    }
    let json_bytes: usize = converted.sample_v2().iter().map(|(_, b)| b.len()).sum();
    let parquet_bytes: usize = converted
        .objects
        .iter()
        .filter(|(key, _)| key.ends_with(".parquet"))
        .map(|(_, b)| b.len())
        .sum();
    let t_decode = median_of(runs, || {
        black_box(decode(bytes, None, &Limits::default()).expect("bench input decodes"));
    });
    let t_convert = median_of(runs, || {
        black_box(convert().expect("bench input converts"));
    });
    let t_write = (t_convert - t_decode).max(f64::EPSILON);
    println!(
        "writers      {name:<59} {rows:>8} samples  write path {:>6.2} M/s  \
         sample v2 {:>6.1} B/sample  parquet {:>5.1} B/sample",
        rows as f64 / 1e6 / t_write,
        json_bytes as f64 / rows as f64,
        parquet_bytes as f64 / rows as f64,
    );
}

fn measure(name: &str, bytes: &[u8], runs: usize, f: impl Fn(&[u8]) -> usize) {
    let samples = f(bytes);
    let times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            black_box(f(black_box(bytes)));
            start.elapsed()
        })
        .collect();
    let t = median(times).as_secs_f64();
    println!(
        "{name:<72} {:>7.2} MB in {:>8.2} ms  {:>8.1} MB/s  {:>6.2} M samples/s",
        bytes.len() as f64 / 1e6,
        t * 1e3,
        bytes.len() as f64 / 1e6 / t,
        samples as f64 / 1e6 / t
    );
}

/// Sample inputs with their metadata: `samples/<format>/<name>.<ext>` beside a
/// `<name>.expected/` directory, plus the larger test fixtures named in `EXTRA_INPUTS`.
fn sample_inputs() -> Vec<(String, Vec<u8>, UploadMetadata)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(root.join("samples"))
        .expect("samples/ present")
        .map(|e| e.expect("readable").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .expect("readable")
            .map(|e| e.expect("readable").path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        for file in files {
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            let stem = name.split('.').next().unwrap_or_default().to_owned();
            if name.ends_with(".metadata.json") || !dir.join(format!("{stem}.expected")).is_dir() {
                continue;
            }
            let meta_path = dir.join(format!("{stem}.metadata.json"));
            let meta = std::fs::read(&meta_path)
                .ok()
                .map(|b| UploadMetadata::from_json(&b).expect("sample metadata parses"))
                .unwrap_or_default();
            let label = format!(
                "samples/{}/{name}",
                dir.file_name().unwrap().to_string_lossy()
            );
            out.push((label, std::fs::read(&file).expect("readable"), meta));
        }
    }
    for rel in EXTRA_INPUTS {
        if let Ok(bytes) = std::fs::read(root.join(rel)) {
            let meta = UploadMetadata {
                timestamp: Some(1_700_000_000.0),
                ..UploadMetadata::default()
            };
            out.push(((*rel).to_owned(), bytes, meta));
        }
    }
    out
}

/// Fixtures larger than the samples, measured when present.
const EXTRA_INPUTS: &[&str] = &[
    "tests/fixtures/pprof/google-pprof_proftest_large.cpu.pb.gz",
    "tests/fixtures/otlp/sig-profiling_k8s_1.v1_10.pb",
];

/// Many small uploads in one process, one thread: the committed samples (one per format,
/// each a few KB) converted round-robin for about two seconds, every output encoded.
fn tiny_uploads(inputs: &[(String, Vec<u8>, UploadMetadata)]) {
    let samples: Vec<_> = inputs
        .iter()
        .filter(|(label, _, _)| label.starts_with("samples/"))
        .map(|(_, bytes, metadata)| {
            let options = ConvertOptions {
                metadata: metadata.clone(),
                ..ConvertOptions::default()
            };
            (bytes, options)
        })
        .collect();
    let start = Instant::now();
    let mut uploads = 0u64;
    let mut bytes_in = 0usize;
    while start.elapsed() < Duration::from_secs(2) {
        for (bytes, options) in &samples {
            black_box(convert_upload("uploads/tiny", "etag", bytes, options).expect("converts"));
            uploads += 1;
            bytes_in += bytes.len();
        }
    }
    let t = start.elapsed().as_secs_f64();
    println!(
        "tiny uploads: {} samples round-robin, {uploads} uploads in {t:.2} s: {:.0} uploads/s on \
         one core ({:.0} KB average)",
        samples.len(),
        uploads as f64 / t,
        bytes_in as f64 / uploads as f64 / 1e3
    );
}

fn main() {
    let decode_only = |b: &[u8]| {
        decode(b, None, &Limits::default())
            .expect("bench input decodes")
            .profile
            .samples()
            .len()
    };
    let options = ConvertOptions::default();
    let full = |b: &[u8]| {
        let c = convert_upload("uploads/bench", "etag", b, &options).expect("bench input converts");
        c.manifest.profile.samples_written as usize
    };
    let inputs = sample_inputs();
    for (label, bytes, metadata) in &inputs {
        let options = ConvertOptions {
            metadata: metadata.clone(),
            ..ConvertOptions::default()
        };
        let full = |b: &[u8]| {
            let c = convert_upload("uploads/bench", "etag", b, &options).expect("sample converts");
            c.manifest.profile.samples as usize
        };
        measure(&format!("decode       {label}"), bytes, 15, decode_only);
        measure(&format!("decode+write {label}"), bytes, 15, full);
        writers(label, bytes, &options, 15);
    }

    tiny_uploads(&inputs);

    let n = std::env::var("PROFLAKE_BENCH_SAMPLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400_000);
    let plain = synthetic_trace(n, false);
    let packed = synthetic_trace(n, true);
    let gz = gzip(&plain);
    measure("decode       synthetic plain", &plain, 5, decode_only);
    measure(
        "decode       synthetic compressed_packets",
        &packed,
        5,
        decode_only,
    );
    measure("decode       synthetic gzip", &gz, 5, decode_only);
    measure("decode+write synthetic plain", &plain, 5, full);
    writers("synthetic plain", &plain, &options, 5);
}
