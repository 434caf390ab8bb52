//! Both passes against one decode: the first pass's model is the decode's without its
//! samples, the second pass's samples are the decode's once ordered by time, and the summary
//! bounds them. On the repository's sample, the Perfetto fixtures and traces built here.

use std::path::{Path, PathBuf};

use proflake_proto::perfetto::{
    clock_snapshot::Clock,
    perf_events::Timebase,
    process_tree,
    stack_sample::{CallstackField, TaskContext, TaskContextField},
    trace_packet::{Data, OptionalTrustedPacketSequenceId},
    AddressSymbols, Callstack, ClockSnapshot, Frame, InlineCallstack, InternedData, InternedString,
    Line, Mapping, ModuleSymbols, PerfSample, PerfSampleDefaults, ProcessTree, StackSample,
    StreamingProfilePacket, ThreadDescriptor, Trace, TracePacket, TracePacketDefaults,
};
use prost::Message;

use super::*;
use crate::formats::perfetto::clocks::{BOOTTIME, MONOTONIC, REALTIME};
use crate::formats::perfetto::decode;

// ---- checks -------------------------------------------------------------------------------

/// Both passes over `bytes` against `decode`, or `None` when `decode` fails. Checks (a) the
/// model, (b) the samples and their dropped count, (c) the summary when there is one.
fn check(label: &str, bytes: &[u8]) -> Option<(Profile, FirstPass)> {
    let limits = Limits::default();
    let decoded = decode(bytes, "none", &limits).ok()?;
    let first = decode_without_samples(bytes, "none", &limits)
        .unwrap_or_else(|e| panic!("{label}: the first pass fails where decode does not: {e}"));
    assert_same_model(label, &first.profile, &decoded);

    let mut delivered: Vec<(u64, Sample)> = Vec::new();
    let dropped = second_pass(bytes, "none", &limits, &first, &mut |position, sample| {
        delivered.push((position, sample));
        Ok(())
    })
    .unwrap_or_else(|e| panic!("{label}: the second pass fails: {e}"));
    let failed = decoded.stats.get("clock_conversion_failed").copied();
    assert_eq!(dropped, failed.unwrap_or(0), "{label}: dropped samples");
    assert!(
        delivered.windows(2).all(|w| w[0].0 < w[1].0),
        "{label}: positions not in file order"
    );
    let mut sorted: Vec<Sample> = delivered.iter().map(|&(_, s)| s).collect();
    sorted.sort_by_key(|s| s.time);
    assert_eq!(sorted, decoded.samples().to_vec(), "{label}: samples");

    if let Some(times) = &first.times {
        check_times(label, times, &delivered, dropped, &decoded);
    }
    Some((decoded, first))
}

/// Everything but the samples, and the stat only placing them counts.
fn assert_same_model(label: &str, got: &Profile, want: &Profile) {
    assert_eq!(
        got.samples().len(),
        0,
        "{label}: the first pass keeps samples"
    );
    assert_eq!(got.source_format, want.source_format, "{label}");
    assert_eq!(got.timestamps, want.timestamps, "{label}: timestamps");
    assert_eq!(got.attributes, want.attributes, "{label}: attributes");
    let mut stats = want.stats.clone();
    stats.remove("clock_conversion_failed");
    assert_eq!(got.stats, stats, "{label}: stats");
    assert_eq!(
        (got.start_time, got.duration, &got.findings),
        (want.start_time, want.duration, &want.findings),
        "{label}"
    );
    assert!(got.strings().eq(want.strings()), "{label}: strings");
    fn all<T: PartialEq + std::fmt::Debug>(
        label: &str,
        what: &str,
        got: impl Iterator<Item = T>,
        want: impl Iterator<Item = T>,
    ) {
        assert_eq!(
            got.collect::<Vec<_>>(),
            want.collect::<Vec<_>>(),
            "{label}: {what}"
        );
    }
    all(label, "images", got.images(), want.images());
    all(label, "frames", got.frames(), want.frames());
    all(label, "stacks", got.stacks(), want.stacks());
    all(label, "processes", got.processes(), want.processes());
    all(label, "threads", got.threads(), want.threads());
    all(label, "series", got.all_series(), want.all_series());
    all(label, "label sets", got.label_sets(), want.label_sets());
    all(label, "links", got.links(), want.links());
}

/// The least time of the samples delivered at or after each position (of `samples`, and past
/// the last one).
fn least_from(delivered: &[(u64, Sample)], samples: u64) -> Vec<Option<i64>> {
    let n = usize::try_from(samples).unwrap();
    let mut least_from: Vec<Option<i64>> = vec![None; n + 1];
    for &(position, sample) in delivered {
        least_from[usize::try_from(position).unwrap()] = sample.time;
    }
    for p in (0..n).rev() {
        least_from[p] = match (least_from[p], least_from[p + 1]) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
    least_from
}

/// The summary against the delivered samples: the count; bounds that hold (first and last,
/// at every position a watermark no later sample is before, never falling as positions
/// grow); and when every conversion is monotone, bounds that are the times themselves.
fn check_times(
    label: &str,
    times: &SampleTimes,
    delivered: &[(u64, Sample)],
    dropped: u64,
    decoded: &Profile,
) {
    assert_eq!(
        times.samples(),
        delivered.len() as u64 + dropped,
        "{label}: samples"
    );
    let decoded_times = || decoded.samples().iter().filter_map(|s| s.time);
    let (min, max) = (decoded_times().min(), decoded_times().max());
    assert_eq!(
        times.first_ns().is_some(),
        min.is_some(),
        "{label}: first_ns"
    );
    assert_eq!(times.last_ns().is_some(), max.is_some(), "{label}: last_ns");
    if let (Some(first), Some(min)) = (times.first_ns(), min) {
        assert!(first <= min, "{label}: first_ns {first} after {min}");
    }
    if let (Some(last), Some(max)) = (times.last_ns(), max) {
        assert!(last >= max, "{label}: last_ns {last} before {max}");
    }
    if times.exact() {
        assert_eq!(times.first_ns(), min, "{label}: first_ns");
        assert_eq!(times.last_ns(), max, "{label}: last_ns");
    }

    let n = usize::try_from(times.samples()).unwrap();
    let least_from = least_from(delivered, times.samples());
    let mut previous: Option<i64> = None;
    for (p, &least) in least_from[..n].iter().enumerate() {
        let watermark = times.watermark(p as u64);
        if let Some(least) = least {
            let w = watermark.unwrap_or_else(|| panic!("{label}: no watermark at {p}"));
            assert!(w <= least, "{label}: watermark {w} at {p} after {least}");
        }
        assert!(watermark >= previous, "{label}: the watermark falls at {p}");
        previous = watermark;
        // As tight as blocks allow: the least time from the block's start on.
        let block_start = p - p % BLOCK as usize;
        if times.exact() {
            assert_eq!(watermark, least_from[block_start], "{label}: at {p}");
        } else {
            assert_eq!(
                watermark.is_some(),
                least_from[block_start].is_some(),
                "{label}: at {p}"
            );
        }
    }
    for past in [n as u64, n as u64 + 1, u64::MAX] {
        assert_eq!(times.watermark(past), None, "{label}: past the end");
    }
}

// ---- the repository's sample and the fixtures ----------------------------------------------

fn repo_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

#[test]
fn android_sample_agrees_with_decode() {
    let bytes = std::fs::read(repo_path("samples/perfetto/android_app.pftrace")).unwrap();
    let (decoded, first) = check("android_app", &bytes).expect("the sample decodes");
    assert!(
        decoded.samples().len() > 2_000,
        "{}",
        decoded.samples().len()
    );
    let times = first
        .times
        .as_ref()
        .expect("the sample's times are bounded");
    assert!(times.exact(), "the sample's clocks are monotone");
    assert!(times.samples() > BLOCK / 2);
}

fn traces_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        let name = path.to_string_lossy();
        if path.is_dir() {
            traces_under(&path, out);
        } else if [".pftrace", ".perfetto-trace", ".pb"]
            .iter()
            .any(|s| name.ends_with(s))
        {
            out.push(path);
        }
    }
}

#[test]
fn perfetto_fixtures_agree_with_decode() {
    let mut paths = Vec::new();
    traces_under(&repo_path("tests/fixtures/perfetto"), &mut paths);
    // The project's shared fixtures, beside the repository where there is such a folder.
    traces_under(&repo_path("../shared/fixtures/perfetto"), &mut paths);
    let mut with_samples = 0;
    for path in &paths {
        let label = path.display().to_string();
        let bytes = std::fs::read(path).unwrap();
        if let Some((decoded, _)) = check(&label, &bytes) {
            with_samples += usize::from(!decoded.samples().is_empty());
        }
    }
    assert!(
        with_samples >= 15,
        "{with_samples} of {} fixtures",
        paths.len()
    );
}

// ---- traces built here --------------------------------------------------------------------

const LIB: &str = "/system/lib64/libfoo.so";
const BUILD_ID: &[u8] = &[0xb0, 0x3e, 0xff, 0x7f, 0x5e, 0x88, 0x4c, 0x8d];
const ROOT_PC: u64 = 0x5678;
const MIDDLE_PC: u64 = 0x9abc;
const LEAF_PC: u64 = 0x1234;
/// The leaf after the first sequence clears its state: another frame of the same mapping.
const OTHER_LEAF_PC: u64 = 0x4321;
/// REALTIME - MONOTONIC at the first snapshot.
const WALL: u64 = 1_700_000_000_000_000_000;
/// BOOTTIME - MONOTONIC at the first snapshot.
const BOOT: u64 = 5_000_000;

fn string(iid: u64, s: &[u8]) -> InternedString {
    InternedString {
        iid: Some(iid),
        r#str: Some(s.to_vec()),
    }
}

fn on_sequence(seq: u32, mut p: TracePacket) -> TracePacket {
    p.optional_trusted_packet_sequence_id = Some(
        OptionalTrustedPacketSequenceId::TrustedPacketSequenceId(seq),
    );
    p
}

/// The readings of one snapshot: MONOTONIC at `mono`, BOOTTIME and REALTIME that far ahead.
fn snapshot(mono: u64, boot: u64, wall: u64) -> TracePacket {
    let clock = |id, ts| Clock {
        clock_id: Some(id),
        timestamp: Some(ts),
        ..Default::default()
    };
    TracePacket {
        data: Some(Data::ClockSnapshot(ClockSnapshot {
            clocks: vec![
                clock(BOOTTIME, mono + boot),
                clock(MONOTONIC, mono),
                clock(REALTIME, mono + wall),
            ],
            primary_trace_clock: None,
        })),
        ..Default::default()
    }
}

/// A traced_perf sequence's interned data: libfoo.so, root → middle → `leaf` (the middle one
/// named), callstacks 1 (all three) and 2 (root and leaf).
fn perf_interned(leaf: u64) -> InternedData {
    let frame = |iid, rel_pc, function_name_id| Frame {
        iid: Some(iid),
        mapping_id: Some(1),
        rel_pc: Some(rel_pc),
        function_name_id,
        ..Default::default()
    };
    InternedData {
        mapping_paths: vec![
            string(1, b"system"),
            string(2, b"lib64"),
            string(3, b"libfoo.so"),
        ],
        build_ids: vec![string(1, BUILD_ID)],
        function_names: vec![string(1, b"_ZN3foo6middleEv")],
        mappings: vec![Mapping {
            iid: Some(1),
            build_id: Some(1),
            start: Some(0x7000_0000),
            end: Some(0x7010_0000),
            path_string_ids: vec![1, 2, 3],
            ..Default::default()
        }],
        frames: vec![
            frame(1, ROOT_PC, None),
            frame(2, MIDDLE_PC, Some(1)),
            frame(3, leaf, None),
        ],
        callstacks: vec![
            Callstack {
                iid: Some(1),
                frame_ids: vec![1, 2, 3],
            },
            Callstack {
                iid: Some(2),
                frame_ids: vec![1, 3],
            },
        ],
        ..Default::default()
    }
}

/// The first packet of a traced_perf sequence, or the one after it lost state: state cleared,
/// interned data, defaults with the timebase and, if given, the sequence's clock.
fn perf_start(seq: u32, ts: u64, leaf: u64, clock: Option<u32>) -> TracePacket {
    on_sequence(
        seq,
        TracePacket {
            sequence_flags: Some(1),
            timestamp: Some(ts),
            interned_data: Some(perf_interned(leaf)),
            trace_packet_defaults: Some(TracePacketDefaults {
                timestamp_clock_id: clock,
                perf_sample_defaults: Some(PerfSampleDefaults {
                    timebase: Some(Timebase {
                        frequency: Some(100),
                        name: Some("cpu-clock".into()),
                        ..Default::default()
                    }),
                }),
                ..Default::default()
            }),
            ..Default::default()
        },
    )
}

fn perf_sample(seq: u32, ts: u64, clock: Option<u32>, pid: u32, i: u64) -> TracePacket {
    on_sequence(
        seq,
        TracePacket {
            sequence_flags: Some(2),
            timestamp: Some(ts),
            timestamp_clock_id: clock,
            data: Some(Data::PerfSample(PerfSample {
                cpu: Some((i % 4) as u32),
                pid: Some(pid),
                tid: Some(pid + 1 + (i % 2) as u32),
                cpu_mode: Some(if i.is_multiple_of(5) { 1 } else { 2 }),
                callstack_iid: Some(1 + i % 2),
                timebase_count: Some(i * 10_000),
                unwind_error: i.is_multiple_of(97).then_some(3),
                ..Default::default()
            })),
            ..Default::default()
        },
    )
}

fn chrome_start(seq: u32, reference_us: i64) -> Vec<TracePacket> {
    let frame = |iid| Frame {
        iid: Some(iid),
        function_name_id: Some(iid),
        ..Default::default()
    };
    vec![
        on_sequence(
            seq,
            TracePacket {
                sequence_flags: Some(1),
                interned_data: Some(InternedData {
                    function_names: vec![string(1, b"RunLoop"), string(2, b"Paint")],
                    frames: vec![frame(1), frame(2)],
                    callstacks: vec![
                        Callstack {
                            iid: Some(1),
                            frame_ids: vec![1],
                        },
                        Callstack {
                            iid: Some(2),
                            frame_ids: vec![1, 2],
                        },
                    ],
                    ..Default::default()
                }),
                ..Default::default()
            },
        ),
        on_sequence(
            seq,
            TracePacket {
                sequence_flags: Some(2),
                data: Some(Data::ThreadDescriptor(ThreadDescriptor {
                    pid: Some(40),
                    tid: Some(41),
                    thread_name: Some("CrRendererMain".into()),
                    reference_timestamp_us: Some(reference_us),
                })),
                ..Default::default()
            },
        ),
    ]
}

fn chrome_samples(seq: u32, deltas_us: Vec<i64>) -> TracePacket {
    on_sequence(
        seq,
        TracePacket {
            sequence_flags: Some(2),
            data: Some(Data::StreamingProfilePacket(StreamingProfilePacket {
                callstack_iid: (0..deltas_us.len() as u64).map(|i| 1 + i % 2).collect(),
                timestamp_delta_us: deltas_us,
                ..Default::default()
            })),
            ..Default::default()
        },
    )
}

/// A StackSample with its own stack, on the wall clock itself.
fn stack_sample(seq: u32, wall_ts: u64) -> TracePacket {
    on_sequence(
        seq,
        TracePacket {
            timestamp: Some(wall_ts),
            timestamp_clock_id: Some(REALTIME),
            data: Some(Data::StackSample(StackSample {
                task_context_field: Some(TaskContextField::TaskContext(TaskContext {
                    pid: Some(50),
                    tid: Some(51),
                    ..Default::default()
                })),
                callstack_field: Some(CallstackField::Callstack(InlineCallstack {
                    frames: vec![proflake_proto::perfetto::inline_callstack::Frame {
                        function_name: Some("tick".into()),
                        ..Default::default()
                    }],
                })),
                primary_weight: Some(3),
                ..Default::default()
            })),
            ..Default::default()
        },
    )
}

fn module_symbols() -> TracePacket {
    let line = |function: &str, file: &str, line: u32| Line {
        function_name: Some(function.into()),
        source_file_name: Some(file.into()),
        line_number: Some(line),
    };
    TracePacket {
        data: Some(Data::ModuleSymbols(ModuleSymbols {
            path: Some(LIB.into()),
            build_id: Some(BUILD_ID.to_vec()),
            address_symbols: vec![
                AddressSymbols {
                    address: Some(LEAF_PC),
                    lines: vec![
                        line("_ZN3foo5innerEv", "foo/inner.h", 10),
                        line("foo::leaf", "foo/leaf.cc", 20),
                    ],
                },
                AddressSymbols {
                    address: Some(ROOT_PC),
                    lines: vec![line("main", "main.cc", 5)],
                },
            ],
        })),
        ..Default::default()
    }
}

fn process_tree() -> TracePacket {
    let process = |pid: i32, cmdline: &str| process_tree::Process {
        pid: Some(pid),
        cmdline: vec![cmdline.into(), "--flag".into()],
        ..Default::default()
    };
    let thread = |tid, tgid, name: &str| process_tree::Thread {
        tid: Some(tid),
        tgid: Some(tgid),
        name: Some(name.into()),
    };
    TracePacket {
        data: Some(Data::ProcessTree(ProcessTree {
            processes: vec![process(10, "/system/bin/app_a"), process(20, "app_b")],
            threads: vec![thread(11, 10, "main"), thread(22, 20, "worker")],
            ..Default::default()
        })),
        ..Default::default()
    }
}

/// Samples of this many rounds of the interleaving below.
const ROUNDS: u64 = 4_000;

/// A trace whose samples interleave out of time order: sequence 1 (traced_perf on the
/// default clock, BOOTTIME) clears its state halfway with another leaf frame; sequence 2
/// (traced_perf on MONOTONIC by its defaults, every 50th sample on BOOTTIME by its packet,
/// 37 ms behind sequence 1) loses a packet and skips samples until it clears its state;
/// sequence 3 is on a clock no snapshot has (every sample dropped); sequence 4 is Chrome's
/// sampler on MONOTONIC; sequence 5 has StackSamples on REALTIME; sequence 6's samples
/// come after all others, and are earlier than most. Three snapshots (at the
/// start, halfway and at the end, after every sample) give REALTIME - MONOTONIC as `wall`
/// says, and module_symbols come last.
fn synthetic(wall: [u64; 3]) -> Vec<u8> {
    let mono = |i: u64| 1_000_000_000 + i * 100_000;
    let boot = [BOOT, BOOT + 1_000, BOOT + 3_000];
    let mut packets = vec![
        snapshot(mono(0), boot[0], wall[0]),
        process_tree(),
        perf_start(1, mono(0) + BOOT, LEAF_PC, None),
        perf_start(2, mono(0), LEAF_PC, Some(MONOTONIC)),
        perf_start(3, 10, LEAF_PC, Some(5)),
    ];
    // Chrome's clock starts 10 ms before the first snapshot: its first samples convert
    // through the first snapshot's readings.
    packets.extend(chrome_start(4, 990_000));
    for i in 0..ROUNDS {
        if i == ROUNDS / 2 {
            packets.push(snapshot(mono(i), boot[1], wall[1]));
            packets.push(perf_start(1, mono(i) + BOOT, OTHER_LEAF_PC, None));
        }
        packets.push(perf_sample(1, mono(i) + BOOT, None, 10, i));
        // Jitter, and 37 ms behind: each of its samples is some 370 rounds early.
        let behind = mono(i) + (i % 7) * 30_000 - 37_000_000;
        if i.is_multiple_of(50) {
            packets.push(perf_sample(2, behind + BOOT, Some(BOOTTIME), 20, i));
        } else {
            packets.push(perf_sample(2, behind, None, 20, i));
        }
        if i == ROUNDS * 3 / 4 {
            packets.push(on_sequence(
                2,
                TracePacket {
                    previous_packet_dropped: Some(1),
                    ..Default::default()
                },
            ));
        }
        if i == ROUNDS * 3 / 4 + 10 {
            packets.push(perf_start(2, behind, LEAF_PC, Some(MONOTONIC)));
        }
        if i.is_multiple_of(13) {
            packets.push(perf_sample(3, 1_000 + i, None, 30, i));
        }
        if i.is_multiple_of(4) {
            packets.push(chrome_samples(4, vec![150, 250, 0]));
        }
        if i.is_multiple_of(100) {
            packets.push(stack_sample(5, mono(i) + wall[0] + 20_000));
        }
    }
    // A producer whose buffer is written out last: its samples are as early as any.
    packets.push(perf_start(6, mono(0), LEAF_PC, Some(MONOTONIC)));
    for i in (0..ROUNDS).step_by(20) {
        packets.push(perf_sample(6, mono(i) - 30_000_000, None, 60, i));
    }
    packets.push(snapshot(mono(ROUNDS), boot[2], wall[2]));
    packets.push(module_symbols());
    Trace { packet: packets }.encode_to_vec()
}

/// The monotone trace: BOOTTIME gains on MONOTONIC (the device slept), REALTIME on both.
fn monotone_trace() -> Vec<u8> {
    synthetic([WALL, WALL + 2_000, WALL + 5_000])
}

#[test]
fn interleaved_sequences_on_two_clocks_agree_with_decode() {
    let bytes = monotone_trace();
    let (decoded, first) = check("synthetic", &bytes).expect("the trace decodes");
    let times = first.times.as_ref().expect("the times are bounded");
    assert!(times.exact(), "every conversion is monotone");

    // What the trace was built to exercise.
    let samples = decoded.samples();
    assert!(samples.len() as u64 > 2 * BLOCK, "{}", samples.len());
    assert_eq!(decoded.timestamps, crate::model::Timestamps::UnixEpoch);
    let dropped = decoded.stats["clock_conversion_failed"];
    assert_eq!(dropped, ROUNDS.div_ceil(13), "sequence 3's samples");
    assert!(decoded.stats["sequence_packet_loss"] > 0);
    assert!(decoded.stats["packet_skipped_seq_needs_incremental_state_invalid"] >= 9);
    assert!(decoded.stats["module_symbols_frames"] > 0);
    let names: Vec<&str> = decoded
        .threads()
        .filter_map(|(_, t)| t.name)
        .map(|n| decoded.str(n))
        .collect();
    assert!(
        names.contains(&"main") && names.contains(&"CrRendererMain"),
        "{names:?}"
    );
    let leaves: std::collections::BTreeSet<_> = samples
        .iter()
        .filter_map(|s| s.stack)
        .map(|s| decoded.stack(s).frame)
        .collect();
    assert!(
        leaves.len() >= 4,
        "both leaves of both sequences, Chrome's and the stack sample's"
    );

    // File order is not time order, within a block and across blocks.
    let limits = Limits::default();
    let mut in_file_order = Vec::new();
    second_pass(&bytes[..], "none", &limits, &first, &mut |_, s| {
        in_file_order.push(s.time.unwrap());
        Ok(())
    })
    .unwrap();
    assert!(!in_file_order.is_sorted());
    let block = BLOCK as usize;
    let least_of_block = |b: usize| {
        let block = &in_file_order[b * block..in_file_order.len().min((b + 1) * block)];
        *block.iter().min().unwrap()
    };
    assert!(least_of_block(0) < least_of_block(1));
    // The samples written last are earlier than the second block's: its watermark is theirs.
    let tail = in_file_order.len() - ROUNDS.div_ceil(20) as usize;
    let least_of_tail = *in_file_order[tail..].iter().min().unwrap();
    assert!(tail > 2 * block && least_of_tail < least_of_block(1));
    assert_eq!(times.watermark(BLOCK), Some(least_of_tail));
    assert_eq!(times.watermark(0), Some(least_of_block(0)));
    assert!(least_of_block(0) < least_of_tail);
}

#[test]
fn a_conversion_that_goes_back_in_time_gives_bounds() {
    // REALTIME - MONOTONIC shrinks by 3 ms at the middle snapshot, REALTIME - BOOTTIME by
    // 3 ms and the 1 µs BOOTTIME gains there: later raw times can convert to earlier wall
    // times. No offset drops anywhere else, so no bound is further off than that.
    const DROP: i64 = 3_001_000;
    let bytes = synthetic([WALL, WALL - 3_000_000, WALL + 1_000]);
    let (decoded, first) = check("shrinking offset", &bytes).expect("the trace decodes");
    let times = first
        .times
        .as_ref()
        .expect("bounds despite the shrinking offset");
    assert!(!times.exact());
    assert!(decoded.samples().len() as u64 > 2 * BLOCK);

    // check() saw the bounds hold; here, that they are no looser than the drop.
    let mut delivered = Vec::new();
    second_pass(
        &bytes[..],
        "none",
        &Limits::default(),
        &first,
        &mut |p, s| {
            delivered.push((p, s));
            Ok(())
        },
    )
    .unwrap();
    let all = || delivered.iter().map(|(_, s)| s.time.unwrap());
    let (min, max) = (all().min().unwrap(), all().max().unwrap());
    let (first_ns, last_ns) = (times.first_ns().unwrap(), times.last_ns().unwrap());
    assert!(
        (0..=DROP).contains(&(min - first_ns)),
        "{first_ns} vs {min}"
    );
    assert!((0..=DROP).contains(&(last_ns - max)), "{last_ns} vs {max}");
    let least_from = least_from(&delivered, times.samples());
    for block_start in (0..times.samples()).step_by(BLOCK as usize) {
        let least = least_from[block_start as usize].unwrap();
        let watermark = times.watermark(block_start).unwrap();
        assert!(
            (0..=DROP).contains(&(least - watermark)),
            "at {block_start}: {watermark} vs {least}"
        );
    }

    // Samples 1 ms apart around the drop, in one block: the earliest and the latest are
    // not the conversions of the least and greatest raw time, but of the first after the
    // drop and the last before it. The bounds are the wall times at the drop and 1 ns
    // before it, each 0.5 ms beyond the samples'.
    let drop_at = 1_010_000_000u64;
    let mut packets = vec![
        snapshot(drop_at - 10_000_000, BOOT, WALL),
        snapshot(drop_at, BOOT, WALL - 3_000_000),
        perf_start(1, drop_at, LEAF_PC, Some(MONOTONIC)),
    ];
    for (i, ts) in [-1_500_000i64, -500_000, 500_000, 1_500_000]
        .into_iter()
        .enumerate()
    {
        packets.push(perf_sample(
            1,
            drop_at.wrapping_add_signed(ts),
            None,
            10,
            i as u64,
        ));
    }
    let bytes = Trace { packet: packets }.encode_to_vec();
    let (decoded, first) = check("around the drop", &bytes).unwrap();
    let times = first.times.unwrap();
    let wall = (drop_at + WALL) as i64;
    let all: Vec<i64> = decoded.samples().iter().map(|s| s.time.unwrap()).collect();
    assert_eq!(
        all,
        [
            wall - 2_500_000,
            wall - 1_500_000,
            wall - 1_500_000,
            wall - 500_000
        ]
    );
    assert_eq!(times.first_ns(), Some(wall - 3_000_000));
    assert_eq!(times.last_ns(), Some(wall - 1));
    assert_eq!(times.watermark(3), Some(wall - 3_000_000));

    // Only the conversions samples use count: a snapshot whose REALTIME runs backwards
    // against a clock no sample is on leaves the bounds exact.
    let mut trace = Trace::decode(&monotone_trace()[..]).unwrap();
    for (mono, other) in [(500_000_000u64, 900u64), (600_000_000, 100)] {
        trace.packet.insert(
            0,
            TracePacket {
                data: Some(Data::ClockSnapshot(ClockSnapshot {
                    clocks: [(REALTIME, mono + WALL), (7, other)]
                        .map(|(id, ts)| Clock {
                            clock_id: Some(id),
                            timestamp: Some(ts),
                            ..Default::default()
                        })
                        .to_vec(),
                    primary_trace_clock: None,
                })),
                ..Default::default()
            },
        );
    }
    let (_, first) = check("unused clock", &trace.encode_to_vec()).unwrap();
    assert!(first.times.unwrap().exact());
}

#[test]
fn a_bound_that_does_not_convert_gives_no_summary() {
    // A MONOTONIC time so late that adding the wall clock's offset overflows: decode drops
    // that sample, and the summary cannot bound the block it is in.
    let mut trace = Trace::decode(&monotone_trace()[..]).unwrap();
    let at = trace.packet.len() / 2;
    trace
        .packet
        .insert(at, perf_sample(2, i64::MAX as u64 - 10, None, 20, 1));
    let (decoded, first) = check("overflow", &trace.encode_to_vec()).unwrap();
    assert!(first.times.is_none());
    assert_eq!(
        decoded.stats["clock_conversion_failed"],
        ROUNDS.div_ceil(13) + 1
    );
}

#[test]
fn a_trace_without_samples_has_no_times() {
    let bytes = Trace {
        packet: vec![
            snapshot(1_000, BOOT, WALL),
            process_tree(),
            module_symbols(),
        ],
    }
    .encode_to_vec();
    let (_, first) = check("no samples", &bytes).unwrap();
    let times = first.times.unwrap();
    assert_eq!(times.samples(), 0);
    assert_eq!((times.first_ns(), times.last_ns()), (None, None));
    assert_eq!(times.watermark(0), None);
}

#[test]
fn the_summary_grows_by_block_not_by_sample() {
    let mut summary = Summary::default();
    let mut profile = Profile::new("perfetto");
    let process = profile.add_process(None);
    let thread = profile.add_thread(process, None);
    let sample = Sample::new(thread, None, 1, crate::model::SeriesHandle::from_index(0));
    let clocks = [None, Some(ClockKey::new(MONOTONIC, 0))];
    let samples = 20 * BLOCK + 1;
    for position in 0..samples {
        let time = RawTime {
            // Both clocks in every block, and each clock's times going back and forth.
            clock: clocks[position.is_multiple_of(3) as usize],
            ts: (position as i64 % 1000) * 7,
        };
        summary.push(&mut profile, position, sample, time).unwrap();
    }
    // The last block holds one sample, on one clock.
    assert_eq!(summary.spans.len() as u64, 2 * (samples / BLOCK) + 1);
    assert_eq!(profile.samples().len(), 0);
}
