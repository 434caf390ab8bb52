//! The synthetic traces of `fixtures/perfetto/synthetic` against their `*.expected.json`.
//!
//! The expected files hold what trace_processor's `perf_sample` / `cpu_profile_stack_sample`
//! and `stack_profile_*` tables would contain for each trace (derived by construction from
//! trace_processor's import code, see `fixtures/perfetto/SOURCES.md`). None of these traces
//! has a REALTIME clock, so the decoder keeps trace time (BOOTTIME, the default clock) and the
//! expected `ts` compare directly.
//!
//! Every trace is decoded in every container variant available: the file as is, its `.gz`
//! sibling where present, the same bytes re-compressed by the test with zstd, and for
//! `perf_basic` also the packets moved into `compressed_packets` (zlib fixture, gzip-headered
//! zlib and `zstd_compressed_packets` built here). All variants must decode to the same samples.
//!
//! Not compared: `process_priority` (Chrome sampler; the model has no field for it) and the
//! timebase `unit` (trace_processor's unit of the timebase *counter*, "ns" for cpu-clock; the
//! model's series unit is the unit of the sample *weight*, one sample for perf). The timebase
//! unit "ns" is checked as the series kind `CpuTime` instead.

use crate::{formats::Container, model::SeriesKind, model::Timestamps, Decoded};
use proflake_proto::perfetto::{trace_packet::Data, TracePacket};
use prost::Message;
use serde::Deserialize;

use super::util::{
    decode_ok, fixture, fixture_path, fixture_text, gzip, is_time_profiling_sample, record,
    record_spans, samples, stat, zstd_compress, SampleView,
};

/// Every `*.expected.json` in `fixtures/perfetto/synthetic`; each has a test below.
const COVERED: &[&str] = &[
    "multi_sequence",
    "perf_basic",
    "perf_basic_compressed",
    "perf_incremental",
    "streaming_chrome",
];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expected {
    notes: Vec<String>,
    samples: Vec<ExpectedSample>,
    source: String,
    table: String,
    timebase: Option<ExpectedTimebase>,
    #[serde(default)]
    dropped_packets: Vec<DroppedPacket>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectedTimebase {
    frequency: u64,
    name: String,
    unit: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DroppedPacket {
    ts: i64,
    why: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectedSample {
    ts: i64,
    pid: i64,
    tid: i64,
    cpu: Option<u32>,
    cpu_mode: Option<String>,
    unwind_error: Option<String>,
    timebase_count: Option<u64>,
    /// `null`: trace_processor's NULL callsite, the model's `stack: None`.
    stack: Option<Vec<ExpectedFrame>>,
    /// Chrome sampler only; not in the model.
    #[allow(dead_code)]
    process_priority: Option<i32>,
    #[allow(dead_code)]
    note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectedFrame {
    function: String,
    mapping: String,
    rel_pc: u64,
    build_id: String,
}

fn expected(name: &str) -> Expected {
    let rel = format!("perfetto/synthetic/{name}.expected.json");
    serde_json::from_str(&fixture_text(&rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// One way of packaging a trace.
struct Variant {
    label: String,
    bytes: Vec<u8>,
    container: Container,
}

/// The trace with every packet after the first moved into one compressed packet whose payload
/// is `compress(records)`.
fn repack(plain: &[u8], data: impl Fn(Vec<u8>) -> Data) -> Vec<u8> {
    let first_end = record_spans(plain)[0].2;
    let packet = TracePacket {
        data: Some(data(plain[first_end..].to_vec())),
        ..Default::default()
    };
    let mut out = plain[..first_end].to_vec();
    out.extend(record(&packet.encode_to_vec()));
    out
}

/// The file, its `.gz` sibling if there is one, and a zstd re-compression.
fn variants(name: &str) -> Vec<Variant> {
    let rel = format!("perfetto/synthetic/{name}.pftrace");
    let plain = fixture(&rel);
    let mut out = vec![Variant {
        label: rel.clone(),
        bytes: plain.clone(),
        container: Container::Plain,
    }];
    let gz = format!("{rel}.gz");
    if fixture_path(&gz).is_file() {
        out.push(Variant {
            label: gz.clone(),
            bytes: fixture(&gz),
            container: Container::Gzip,
        });
    }
    out.push(Variant {
        label: format!("{rel} re-compressed with zstd"),
        bytes: zstd_compress(&plain),
        container: Container::Zstd,
    });
    out
}

fn check_frames(at: &str, ours: &SampleView, want: &Option<Vec<ExpectedFrame>>) {
    let Some(want) = want else {
        assert_eq!(ours.stack, None, "{at}: expected no stack (NULL callsite)");
        return;
    };
    let frames = ours.frames();
    assert_eq!(
        frames.len(),
        want.len(),
        "{at}: stack depth; ours root->leaf: {:?}",
        frames.iter().map(|f| f.tp_name()).collect::<Vec<_>>()
    );
    for (depth, (f, w)) in frames.iter().zip(want).enumerate() {
        let at = format!("{at} depth {depth}");
        let none_if_empty = |s: &str| (!s.is_empty()).then(|| s.to_owned());
        assert_eq!(f.tp_name(), none_if_empty(&w.function), "{at}: function");
        assert_eq!(
            f.image_path,
            none_if_empty(&w.mapping),
            "{at}: mapping name"
        );
        assert_eq!(f.code_id, none_if_empty(&w.build_id), "{at}: build id");
        assert!(f.has_image, "{at}: every expected frame has a mapping");
        assert_eq!(f.rel_pc(), Some(w.rel_pc), "{at}: rel_pc ({:?})", f.address);
    }
}

/// Compares a decoded trace with its expected file, sample by sample.
fn check_expected(name: &str, decoded: &Decoded, exp: &Expected) {
    let profile = &decoded.profile;
    assert_eq!(
        profile.timestamps,
        Timestamps::TraceClock("BOOTTIME".into()),
        "{name}: no REALTIME clock, so times stay on the trace clock (BOOTTIME)"
    );
    let ours = samples(profile);
    assert_eq!(
        ours.len(),
        exp.samples.len(),
        "{name}: sample count; ours at {:?}",
        ours.iter().map(|s| s.time).collect::<Vec<_>>()
    );
    for (i, (s, w)) in ours.iter().zip(&exp.samples).enumerate() {
        let at = format!("{name} sample {i} (ts {})", w.ts);
        assert_eq!(s.time, Some(w.ts), "{at}: ts");
        assert_eq!(s.pid, Some(w.pid), "{at}: pid");
        assert_eq!(s.tid, Some(w.tid), "{at}: tid");
        assert_eq!(s.cpu, w.cpu, "{at}: cpu");
        assert_eq!(
            s.cpu_mode,
            w.cpu_mode.as_deref().unwrap_or("unknown"),
            "{at}: cpu_mode"
        );
        assert_eq!(s.unwind_error, w.unwind_error, "{at}: unwind_error");
        assert_eq!(s.counter, w.timebase_count, "{at}: timebase_count");
        assert_eq!(s.weight, 1, "{at}: one sample each");
        assert_eq!(
            s.series.source.as_deref(),
            Some(exp.source.as_str()),
            "{at}: source"
        );
        check_frames(&at, s, &w.stack);

        match exp.table.as_str() {
            "perf_sample" => {
                // trace_processor names the session after the timebase, cpu-clock without
                // perf_sample_defaults; a time-based timebase ("ns") is a CPU-time series.
                let tb_name = exp.timebase.as_ref().map_or("cpu-clock", |t| &t.name);
                assert_eq!(s.series.name, tb_name, "{at}: timebase name");
                assert_eq!(s.series.kind, SeriesKind::CpuTime, "{at}: series kind");
                if let Some(tb) = &exp.timebase {
                    assert_eq!(tb.unit, "ns", "{at}: only time timebases here");
                    assert_eq!(s.series.frequency_hz, Some(tb.frequency), "{at}: frequency");
                }
            }
            "cpu_profile_stack_sample" => {
                assert!(
                    is_time_profiling_sample(s) || s.stack.is_none(),
                    "{at}: Chrome samples are time samples: {:?}",
                    s.series
                );
            }
            other => panic!("{name}: unknown table {other}"),
        }
    }
    for d in &exp.dropped_packets {
        assert!(
            ours.iter().all(|s| s.time != Some(d.ts)),
            "{name}: the packet at {} must be dropped ({})",
            d.ts,
            d.why
        );
    }
}

/// Decodes every variant, checks the first against the expected file and all others against
/// the first.
fn check(name: &str, extra: Vec<Variant>) -> Decoded {
    let exp = expected(name);
    assert!(!exp.notes.is_empty(), "{name}: expected file has notes");
    let mut all = variants(name);
    all.extend(extra);
    let reference = decode_ok(&all[0].bytes, &all[0].label);
    check_expected(name, &reference, &exp);
    let want = samples(&reference.profile);
    for v in &all {
        let d = decode_ok(&v.bytes, &v.label);
        assert_eq!(d.container, v.container, "{}: container", v.label);
        assert_eq!(
            samples(&d.profile),
            want,
            "{}: samples differ from the plain file",
            v.label
        );
        assert_eq!(
            d.profile.stats, reference.profile.stats,
            "{}: stats",
            v.label
        );
        assert_eq!(
            d.profile.timestamps, reference.profile.timestamps,
            "{}",
            v.label
        );
    }
    reference
}

#[test]
fn every_expected_file_has_a_test() {
    let dir = fixture_path("perfetto/synthetic");
    let mut found: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".expected.json").map(str::to_owned)
        })
        .collect();
    found.sort();
    assert_eq!(found, COVERED);
    for name in COVERED {
        assert!(fixture_path(&format!("perfetto/synthetic/{name}.pftrace")).is_file());
    }
}

#[test]
fn perf_basic() {
    let plain = fixture("perfetto/synthetic/perf_basic.pftrace");
    let extra = vec![
        Variant {
            label: "perf_basic_compressed.pftrace (zlib compressed_packets)".into(),
            bytes: fixture("perfetto/synthetic/perf_basic_compressed.pftrace"),
            container: Container::Plain,
        },
        Variant {
            label: "perf_basic with a gzip stream in compressed_packets".into(),
            bytes: repack(&plain, |records| Data::CompressedPackets(gzip(&records))),
            container: Container::Plain,
        },
        Variant {
            label: "perf_basic with zstd_compressed_packets".into(),
            bytes: repack(&plain, |records| {
                Data::ZstdCompressedPackets(zstd_compress(&records))
            }),
            container: Container::Plain,
        },
    ];
    let d = check("perf_basic", extra);
    let p = &d.profile;
    // Notes: "the kernel_records_lost packet is not a sample (stat perf_cpu_lost_records)".
    // It is the packet after the third sample (MONOTONIC 9_520_001 = BOOTTIME 10_520_001).
    assert_eq!(stat(p, "perf_cpu_lost_records"), 1, "stats: {:?}", p.stats);
    assert!(samples(p).iter().all(|s| s.time != Some(10_520_001)));
    // Notes: "the skipped sample has no callstack; trace_processor still adds a perf_sample
    // row with callsite_id NULL" (PROFILER_SKIP_UNWIND_STAGE counts perf_samples_skipped).
    assert_eq!(stat(p, "perf_samples_skipped"), 1, "stats: {:?}", p.stats);
    // Notes: mapping "/kernel" is the kernel mapping.
    let kernel = samples(p)[3].leaf().cloned().expect("kernel frame");
    assert_eq!(kernel.image_path.as_deref(), Some("/kernel"));
    assert_eq!(kernel.kind, "kernel");
    assert!(samples(p)[0].frames().iter().all(|f| f.kind == "native"));
}

#[test]
fn perf_basic_compressed() {
    let d = check("perf_basic_compressed", Vec::new());
    assert_eq!(stat(&d.profile, "perf_cpu_lost_records"), 1);
    assert_eq!(stat(&d.profile, "perf_samples_skipped"), 1);
}

#[test]
fn perf_incremental() {
    let d = check("perf_incremental", Vec::new());
    let p = &d.profile;
    let exp = expected("perf_incremental");
    // The three dropped packets all carry SEQ_NEEDS_INCREMENTAL_STATE on an invalid sequence.
    assert_eq!(exp.dropped_packets.len(), 3);
    assert_eq!(
        stat(p, "packet_skipped_seq_needs_incremental_state_invalid"),
        3,
        "stats: {:?}",
        p.stats
    );
    // previous_packet_dropped invalidated the sequence once.
    assert_eq!(stat(p, "sequence_packet_loss"), 1, "stats: {:?}", p.stats);
    // callstack_iid 99 is unknown: stat stackprofile_invalid_callstack_id.
    assert_eq!(
        stat(p, "stackprofile_invalid_callstack_id"),
        1,
        "stats: {:?}",
        p.stats
    );
}

#[test]
fn streaming_chrome() {
    let d = check("streaming_chrome", Vec::new());
    assert!(d.profile.stats.is_empty(), "stats: {:?}", d.profile.stats);
}

#[test]
fn multi_sequence() {
    let d = check("multi_sequence", Vec::new());
    // The two sequences intern iid 1 with different meanings; both resolve separately.
    let names: Vec<_> = samples(&d.profile)
        .iter()
        .map(|s| s.leaf().and_then(|f| f.function.clone()).unwrap())
        .collect();
    assert_eq!(names, ["alpha", "beta", "alpha", "beta"]);
    assert!(d.profile.stats.is_empty(), "stats: {:?}", d.profile.stats);
}
