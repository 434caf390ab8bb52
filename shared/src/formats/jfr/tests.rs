//! The decoder against recordings made by the JDK (17 and 25) of
//! `tests/fixtures/jfr/src/Workload.java`, compared with what the JDK's own `jfr print --json`
//! says of the same files (reduced by `scripts/make_jfr_fixtures.sh`).

use std::collections::BTreeMap;
use std::io::Read;

use serde_json::Value as Json;

use super::*;
use crate::formats::{decode as decode_any, InputFormat};
use crate::model::{FrameKind, SeriesKind};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../tests/fixtures/jfr/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return bytes;
    }
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes.as_slice())
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// The events `jfr print --json` printed, reduced.
fn printed(name: &str) -> Vec<Json> {
    match serde_json::from_slice(&fixture(name)).unwrap() {
        Json::Array(events) => events,
        other => panic!("{other}"),
    }
}

fn decoded(bytes: &[u8]) -> Profile {
    let decoded = decode_any(bytes, None, &Limits::default()).unwrap();
    assert_eq!(decoded.format, InputFormat::Jfr);
    decoded.profile
}

/// `PT0.012422225S`, `PT1M2.5S`: an ISO-8601 duration as `jfr print` writes it, in ns.
fn iso_duration_ns(text: &str) -> i64 {
    let rest = text.strip_prefix("PT").unwrap_or_else(|| panic!("{text}"));
    let (minutes, rest) = match rest.split_once('M') {
        Some((m, rest)) => (m.parse::<i64>().unwrap(), rest),
        None => (0, rest),
    };
    let seconds = rest
        .strip_suffix('S')
        .unwrap_or(if rest.is_empty() { "0" } else { rest });
    let (whole, fraction) = seconds.split_once('.').unwrap_or((seconds, ""));
    let fraction = format!("{fraction:0<9}");
    minutes * 60_000_000_000
        + whole.parse::<i64>().unwrap() * 1_000_000_000
        + fraction.parse::<i64>().unwrap()
}

/// The JVM's class name as a Java programmer writes it, for comparing functions.
fn dotted(class: &str) -> String {
    if class.contains('.') {
        class.to_owned()
    } else {
        class.replace('/', ".")
    }
}

/// One event or sample, as both sides can say it.
#[derive(Debug, Default)]
struct Tally {
    /// Per event type.
    per_type: BTreeMap<String, u64>,
    /// Per (event type, thread name, OS thread id).
    per_thread: BTreeMap<(String, String, i64), u64>,
    /// Per (event type, stack root first as `Class.method:line:kind`).
    per_stack: BTreeMap<(String, Vec<String>), u64>,
    /// Summed weight per event type, in the decoder's units (ns, bytes); counted samples
    /// excluded.
    weights: BTreeMap<String, i64>,
    /// Per event type: its truncated stacks.
    truncated: BTreeMap<String, u64>,
    times: Vec<(String, i64)>,
}

fn from_json(events: &[Json]) -> Tally {
    let mut t = Tally::default();
    for e in events {
        let ty = e["type"].as_str().unwrap().to_owned();
        *t.per_type.entry(ty.clone()).or_default() += 1;
        let name = e["thread"]["javaName"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let tid = e["thread"]["osThreadId"].as_i64().unwrap_or(0);
        *t.per_thread.entry((ty.clone(), name, tid)).or_default() += 1;
        let mut stack: Vec<String> = e["frames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                let line = f[2].as_i64().unwrap();
                let line = if line > 0 {
                    line.to_string()
                } else {
                    "-".into()
                };
                let kind = match f[3].as_str().unwrap() {
                    "Native" | "C++" => "native",
                    "Kernel" => "kernel",
                    _ => "jvm",
                };
                format!(
                    "{}.{}:{line}:{kind}",
                    dotted(f[0].as_str().unwrap()),
                    f[1].as_str().unwrap()
                )
            })
            .collect();
        stack.reverse();
        *t.per_stack.entry((ty.clone(), stack)).or_default() += 1;
        if e["truncated"] == Json::Bool(true) {
            *t.truncated.entry(ty.clone()).or_default() += 1;
        }
        let weight = match ty.as_str() {
            "jdk.ObjectAllocationSample" => e["weight"].as_i64(),
            "jdk.ObjectAllocationOutsideTLAB" => e["allocationSize"].as_i64(),
            "jdk.JavaMonitorEnter" | "jdk.ThreadPark" => {
                e["duration"].as_str().map(iso_duration_ns)
            }
            "jdk.CPUTimeSample" => e["samplingPeriod"].as_str().map(iso_duration_ns),
            // The fixtures' settings: `period` 10 ms.
            "jdk.ExecutionSample" => Some(10_000_000),
            _ => None,
        };
        if let Some(w) = weight {
            *t.weights.entry(ty.clone()).or_default() += w;
        }
        let time = crate::calendar::parse_rfc3339(e["startTime"].as_str().unwrap()).unwrap();
        t.times.push((ty, time));
    }
    t.times.sort();
    t
}

fn from_profile(p: &Profile) -> Tally {
    let mut t = Tally::default();
    for s in p.samples().iter() {
        let series = p.series(s.series);
        let ty = p.str(series.name).to_owned();
        *t.per_type.entry(ty.clone()).or_default() += 1;
        let thread = p.thread(s.thread);
        let name = p.opt_str(thread.name).unwrap_or_default().to_owned();
        *t.per_thread
            .entry((ty.clone(), name, thread.tid.unwrap_or(0)))
            .or_default() += 1;
        let mut stack: Vec<String> = s
            .stack
            .map(|leaf| {
                p.stack_frames(leaf)
                    .map(|f| {
                        let f = p.frame(f);
                        let line = f.line.map_or("-".to_owned(), |l| l.to_string());
                        let class = p.opt_str(f.module).unwrap();
                        let method = p.opt_str(f.function).unwrap();
                        format!("{class}.{method}:{line}:{}", p.kind_name(f.kind))
                    })
                    .collect()
            })
            .unwrap_or_default();
        stack.reverse();
        *t.per_stack.entry((ty.clone(), stack)).or_default() += 1;
        if s.unwind_error.is_some() {
            *t.truncated.entry(ty.clone()).or_default() += 1;
        }
        if p.str(series.unit) != "count" {
            *t.weights.entry(ty.clone()).or_default() += s.weight;
        }
        t.times.push((ty, s.time.unwrap()));
    }
    t.times.sort();
    t
}

/// Both sides agree on every count; times agree within a microsecond (the JDK converts ticks
/// through a double).
fn assert_same(recording: &str, json: &str) -> Profile {
    let profile = decoded(&fixture(recording));
    let want = from_json(&printed(json));
    let got = from_profile(&profile);
    assert!(
        want.per_type.values().sum::<u64>() > 500,
        "{recording}: a real recording"
    );
    assert_eq!(got.per_type, want.per_type, "{recording}");
    assert_eq!(got.per_thread, want.per_thread, "{recording}");
    assert_eq!(got.truncated, want.truncated, "{recording}");
    assert_eq!(got.weights, want.weights, "{recording}");
    let stacks_differ: Vec<_> = want
        .per_stack
        .iter()
        .filter(|(k, v)| got.per_stack.get(*k) != Some(v))
        .take(3)
        .collect();
    if !stacks_differ.is_empty() {
        let near: Vec<_> = got
            .per_stack
            .iter()
            .filter(|((ty, s), _)| {
                *ty == stacks_differ[0].0 .0 && s.len() == stacks_differ[0].0 .1.len()
            })
            .collect();
        panic!("{recording}: {stacks_differ:#?} decoded: {near:#?}");
    }
    assert_eq!(got.per_stack.len(), want.per_stack.len(), "{recording}");
    assert_eq!(got.times.len(), want.times.len());
    for ((ty, a), (_, b)) in got.times.iter().zip(&want.times) {
        assert!(
            (a - b).abs() <= 1_000,
            "{recording}: {ty} at {a}, jfr says {b}"
        );
    }
    let samples: Vec<_> = profile.samples().iter().collect();
    assert!(
        samples.windows(2).all(|w| w[0].time <= w[1].time),
        "samples in time order"
    );
    let first = samples[0].time.unwrap();
    let start = profile.start_time.unwrap();
    assert!(
        start <= first && first - start < 10_000_000_000,
        "{start} {first}"
    );
    profile
}

#[test]
fn a_jdk17_recording_reads_as_jfr_prints_it() {
    let profile = assert_same("jdk17.jfr", "jdk17.json.gz");
    let kinds: BTreeMap<&str, SeriesKind> = profile
        .all_series()
        .map(|(_, s)| (profile.str(s.name), s.kind))
        .collect();
    assert_eq!(kinds["jdk.ExecutionSample"], SeriesKind::CpuTime);
    assert_eq!(kinds["jdk.ThreadPark"], SeriesKind::Other);
    let processes = profile.processes().len();
    assert_eq!(processes, 1, "the JVM");
}

#[test]
fn a_jdk25_recording_with_cpu_time_samples_reads_as_jfr_prints_it() {
    let profile = assert_same("jdk25.jfr", "jdk25.json.gz");
    let cpu_time = profile
        .all_series()
        .find(|(_, s)| profile.str(s.name) == "jdk.CPUTimeSample")
        .expect("CPU time samples");
    assert_eq!(profile.str(cpu_time.1.unit), "nanoseconds");
    let cpu: Vec<_> = profile
        .all_series()
        .filter(|(_, s)| s.kind == SeriesKind::CpuTime)
        .map(|(_, s)| profile.str(s.name))
        .collect();
    assert_eq!(
        cpu,
        ["jdk.CPUTimeSample"],
        "one CPU-time series for Sample v2"
    );
    let native = profile
        .frames()
        .filter(|(_, f)| f.kind == FrameKind::Native)
        .count();
    assert!(native > 0, "Unsafe.park is native");
}

#[test]
fn every_chunk_of_a_recording_is_read() {
    let bytes = fixture("jdk17-chunks.jfr.gz");
    // The chunk sizes, from the headers.
    let mut sizes = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let size = u64::from_be_bytes(bytes[at + 8..at + 16].try_into().unwrap()) as usize;
        sizes.push(size);
        at += size;
    }
    assert_eq!(sizes.len(), 3, "the workload rotates the chunk twice");
    let profile = assert_same("jdk17-chunks.jfr.gz", "jdk17-chunks.json.gz");
    assert_eq!(profile.attributes["jfr.chunks"], "3");
    // JDK 17 writes chunk format 2.1.
    assert_eq!(profile.attributes["jfr.version"], "2.1");
}

#[test]
fn a_last_chunk_cut_short_is_left_out() {
    // Recordings are chunks back to back: a whole one, then one cut in its middle.
    let whole = fixture("jdk17.jfr");
    let cut = fixture("jdk25.jfr");
    let mut bytes = whole.clone();
    bytes.extend_from_slice(&cut[..cut.len() / 2]);
    let profile = decoded(&bytes);
    assert_eq!(profile.stats.get("jfr_truncated_chunk"), Some(&1));
    let want = from_json(&printed("jdk17.json.gz"));
    assert_eq!(from_profile(&profile).per_type, want.per_type);
    // A chunk the JVM is still writing: its size is 0 until it is closed.
    let mut open = whole.clone();
    open.extend_from_slice(&cut[..HEADER_BYTES]);
    let at = whole.len() + 8;
    open[at..at + 8].fill(0);
    assert_eq!(decoded(&open).stats.get("jfr_truncated_chunk"), Some(&1));
    // Cut within the header of the next chunk.
    let mut bytes = whole.clone();
    bytes.extend_from_slice(&cut[..30]);
    assert_eq!(decoded(&bytes).stats.get("jfr_truncated_chunk"), Some(&1));
}

#[test]
fn a_recording_without_a_whole_chunk_is_refused() {
    let bytes = fixture("jdk17.jfr");
    for len in [10, 68, bytes.len() - 1] {
        let err = decode(&bytes[..len], "plain", &Limits::default()).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::Truncated { .. }),
            "{len}: {err}"
        );
    }
}

#[test]
fn events_spilled_to_a_file_decode_as_those_kept_in_memory() {
    let bytes = fixture("jdk17.jfr");
    let in_memory = decode(bytes.as_slice(), "plain", &Limits::default()).unwrap();
    super::spool::SPILL_IN_MEMORY_FOR_TEST.with(|limit| limit.set(0));
    let through_a_file = decode(bytes.as_slice(), "plain", &Limits::default());
    super::spool::SPILL_IN_MEMORY_FOR_TEST.with(|limit| limit.set(1 << 20));
    let through_a_file = through_a_file.unwrap();
    assert!(in_memory.samples().len() > 100);
    assert!(through_a_file.samples() == in_memory.samples());
    assert_eq!(through_a_file.stacks().len(), in_memory.stacks().len());
    assert_eq!(through_a_file.frames().len(), in_memory.frames().len());
    assert_eq!(through_a_file.stats, in_memory.stats);
}

#[test]
fn a_chunk_larger_than_the_limit_is_refused() {
    let bytes = fixture("jdk17.jfr");
    let limits = Limits {
        max_event_bytes: 100_000,
        ..Limits::default()
    };
    let err = decode(bytes.as_slice(), "plain", &limits).unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::LimitExceeded {
                limit: "max_event_bytes",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn a_header_claiming_more_than_the_limit_over_few_bytes_is_truncated_not_a_limit() {
    // What a client sends when its body only starts like JFR: the claimed size is past
    // every limit, but the bytes are not there, so the input is cut short, not too large.
    let mut bytes = fixture("jdk17.jfr")[..68].to_vec();
    bytes[8..16].copy_from_slice(&u64::MAX.to_be_bytes());
    bytes.extend_from_slice(&[0x5a; 200]);
    let err = decode(bytes.as_slice(), "plain", &Limits::default()).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Truncated { .. }), "{err}");
}

#[test]
fn limits_on_samples_and_stacks_hold() {
    let bytes = fixture("jdk17.jfr");
    let limits = Limits {
        max_samples: 10,
        ..Limits::default()
    };
    let err = decode(bytes.as_slice(), "plain", &limits).unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::LimitExceeded {
                limit: "max_samples",
                ..
            }
        ),
        "{err}"
    );
    let limits = Limits {
        max_stack_depth: 3,
        ..Limits::default()
    };
    let profile = decode(bytes.as_slice(), "plain", &limits).unwrap();
    assert!(profile.stats["jfr_stack_too_deep"] > 0);
    assert!(profile.max_stack_depth().unwrap() < 3);
}

/// Damage anywhere gives an error or a profile, never a panic or a hang.
#[test]
fn damaged_recordings_fail_cleanly() {
    let bytes = fixture("jdk17.jfr");
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..200 {
        let mut damaged = bytes.clone();
        for _ in 0..1 + next() % 4 {
            let at = (next() % damaged.len() as u64) as usize;
            damaged[at] = next() as u8;
        }
        let _ = decode(damaged.as_slice(), "plain", &Limits::default());
    }
}

#[test]
fn sniffs_the_chunk_magic_only() {
    assert!(test(&fixture("jdk17.jfr")));
    assert!(test(b"FLR\0\0\x02\0\x01"));
    assert!(!test(b"FLR\0\0\x01\0\x00"), "version 1 is another layout");
    assert!(!test(b"FLR"));
    assert!(!test(b"main;a 1\n"));
}

#[test]
fn periods_parse_in_every_unit() {
    use super::events::parse_period;
    assert_eq!(parse_period("10 ms"), Some(10_000_000));
    assert_eq!(parse_period("20ms"), Some(20_000_000));
    assert_eq!(parse_period("1 s"), Some(1_000_000_000));
    assert_eq!(parse_period("100 us"), Some(100_000));
    assert_eq!(parse_period("9900000"), Some(9_900_000));
    assert_eq!(parse_period("500/s"), None);
    assert_eq!(parse_period("off"), None);
    assert_eq!(parse_period("0 ms"), None);
}
