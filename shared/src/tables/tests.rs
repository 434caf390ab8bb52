//! Tests of the stack tables against hand-built profiles and a real pprof file.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, TimestampMicrosecondType, UInt32Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::{Compression, Encoding};

use super::*;
use crate::metadata::UploadMetadata;
use crate::model::{
    ids_from_build_id, time_unit_ns, Frame, FrameAddress, FrameKind, Image, InlinedCall, Label,
    LabelValue, Link, Profile, Sample, Series, SeriesKind,
};
use crate::plan::{plan_chunks, PlannedSample};

/// 2024-03-01T12:00:00Z in ns.
const NOON: i64 = 1_709_294_400_000_000_000;
const MS: i64 = 1_000_000;
const HOUR_NS: i64 = 3_600_000_000_000;

const SOURCE: TableSource<'static> = TableSource {
    source_id: "0123456789abcdef0123456789abcdef",
    source_key: "uploads/toy.pb",
    source_etag: "etag",
    source_format: "test",
    converter: "proflake test",
    service: None,
};

// ---- building inputs ---------------------------------------------------------------------

/// A CPU profile with one process per `(pid, first sample ns)`: six samples each on two
/// threads, over stacks with recursion, inlining, unsymbolized and unnamed frames.
fn toy_profile(processes: &[(i64, i64)]) -> Profile {
    let mut p = Profile::new("test");
    p.attributes
        .insert("service.name".into(), "profile-service".into());
    p.attributes
        .insert("host.name".into(), "profile-host".into());
    p.attributes.insert("producer".into(), "toy".into());
    let (code_id, debug_id) = ids_from_build_id(&[0xb0, 0x3e, 0x4a, 0x7f]);
    let libc_path = p.intern("/usr/lib/x86_64-linux-gnu/libc.so.6");
    let libc = p.add_image(Image {
        path: Some(libc_path),
        code_id,
        debug_id,
        start: 0x7f00_0000,
        end: 0x7f10_0000,
        file_offset: 0x1000,
        load_bias: 0,
    });
    let exe_path = p.intern("C:\\bin\\toy.exe");
    let exe = p.add_image(Image::new(Some(exe_path), 0x40_0000, 0));
    let named = |p: &mut Profile, kind, function: &str| {
        let mut f = Frame::new(kind);
        f.function = Some(p.intern(function));
        f
    };
    let mut main = named(&mut p, FrameKind::Native, "main");
    main.file = Some(p.intern("main.c"));
    main.line = Some(10);
    main.image = Some(exe);
    main.address = Some(FrameAddress::Absolute(0x40_1000));
    let main = p.add_frame(main);
    let mut work = named(&mut p, FrameKind::Native, "work");
    work.system_name = Some(p.intern("_Z4workv"));
    work.inlined_into = vec![
        InlinedCall {
            function: Some(p.intern("outer")),
            file: Some(p.intern("a.c")),
            line: Some(3),
            column: Some(4),
        },
        InlinedCall {
            function: None,
            file: None,
            line: None,
            column: None,
        },
    ]
    .into_boxed_slice();
    let work = p.add_frame(work);
    let mut leaf = Frame::new(FrameKind::Native);
    leaf.image = Some(libc);
    leaf.address = Some(FrameAddress::Absolute(0x7f00_1234));
    let leaf = p.add_frame(leaf);
    let mut jvm = named(&mut p, FrameKind::Jvm, "Foo.bar");
    jvm.module = Some(p.intern("com.example.Foo"));
    let jvm = p.add_frame(jvm);
    let unknown = p.add_frame(Frame::new(FrameKind::Unknown));
    let mut kernel = Frame::new(FrameKind::Kernel);
    kernel.address = Some(FrameAddress::ImageRelative(0xbeef));
    let kernel = p.add_frame(kernel);
    let wasm_kind = FrameKind::Other(p.intern("wasm"));
    let wasm = named(&mut p, wasm_kind, "wasm_fn");
    let wasm = p.add_frame(wasm);
    let mut win = Frame::new(FrameKind::Native);
    win.image = Some(exe);
    win.address = Some(FrameAddress::Absolute(0x10));
    let win = p.add_frame(win);

    let stacks = [
        p.add_stack_from_root([main, work, leaf]),
        p.add_stack_from_root([main, work, work]),
        p.add_stack_from_root([main, jvm]),
        p.add_stack_from_root([main, work, leaf]),
        None,
        p.add_stack_from_root([main, unknown, kernel, wasm, win]),
    ];
    let cpu = Series {
        kind: SeriesKind::CpuTime,
        name: p.intern("cpu-clock"),
        unit: p.intern("nanoseconds"),
        source: None,
        frequency_hz: None,
        period: Some(1_000_000),
    };
    let cpu = p.add_series(cpu);
    let route = p.intern("http.route");
    let route_value = p.intern("/checkout");
    let other_route = p.intern("/other");
    let alloc = p.intern("alloc");
    let bytes = p.intern("bytes");
    let n = p.intern("n");
    let labels = p.add_label_set(vec![
        Label {
            key: route,
            value: LabelValue::Str(route_value),
        },
        Label {
            key: alloc,
            value: LabelValue::Num {
                value: 42,
                unit: Some(bytes),
            },
        },
        Label {
            key: n,
            value: LabelValue::Num {
                value: -7,
                unit: None,
            },
        },
        Label {
            key: route,
            value: LabelValue::Str(other_route),
        },
    ]);
    let link = p.add_link(Link {
        trace_id: [0xab; 16],
        span_id: [0x0c; 8],
    });
    for &(pid, start) in processes {
        let process = p.add_process(Some(pid));
        p.name_process(process, Some("toy"), None);
        if pid == 1 {
            p.set_process_attribute(process, "service.name", "checkout");
            p.set_process_attribute(process, "host.name", "box-1");
        }
        let a = p.add_thread(process, Some(pid * 10));
        p.name_thread(a, "worker");
        let b = p.add_thread(process, Some(pid * 10 + 1));
        for (i, &stack) in stacks.iter().enumerate() {
            let thread = if i % 2 == 0 { a } else { b };
            let mut s = Sample::new(thread, stack, (i as i64 + 1) * MS, cpu);
            s.time = Some(start + i as i64 * MS);
            s.cpu = Some(i as u32);
            if i == 0 {
                s.labels = labels;
            }
            if i == 1 {
                s.link = Some(link);
            }
            p.add_sample(s);
        }
    }
    p.sort_samples_by_time();
    p
}

/// A CPU-time series in ns.
fn cpu_series(p: &mut Profile, frequency_hz: Option<u64>) -> crate::model::SeriesHandle {
    let series = Series {
        kind: SeriesKind::CpuTime,
        name: p.intern("cpu"),
        unit: p.intern("ns"),
        source: None,
        frequency_hz,
        period: None,
    };
    p.add_series(series)
}

fn table_chunks<'a, 'p>(plans: &'a [ChunkPlan<'p>]) -> Vec<TableChunk<'a, 'p>> {
    plans
        .iter()
        .map(|plan| TableChunk {
            plan,
            platform: "native",
            release: Some("toy@1.0"),
            environment: None,
        })
        .collect()
}

fn plans_of<'p>(profile: &'p Profile) -> Vec<ChunkPlan<'p>> {
    plan_chunks(profile, &UploadMetadata::default(), "toy").expect("toy profile plans")
}

fn pprof_fixture() -> Profile {
    let bytes = std::fs::read("../samples/pprof/google-pprof_report_sample.cpu.pb.gz")
        .expect("pprof sample");
    let decoded = crate::formats::decode(&bytes, None).expect("pprof decodes");
    assert!(
        decoded.profile.start_time.is_some(),
        "the file records its time"
    );
    decoded.profile
}

// ---- reading batches -----------------------------------------------------------------------

fn strs(b: &RecordBatch, c: &str) -> Vec<Option<String>> {
    b.column_by_name(c)
        .unwrap()
        .as_string::<i32>()
        .iter()
        .map(|v| v.map(str::to_owned))
        .collect()
}

fn u32s(b: &RecordBatch, c: &str) -> Vec<Option<u32>> {
    b.column_by_name(c)
        .unwrap()
        .as_primitive::<UInt32Type>()
        .iter()
        .collect()
}

fn u64s(b: &RecordBatch, c: &str) -> Vec<Option<u64>> {
    b.column_by_name(c)
        .unwrap()
        .as_primitive::<UInt64Type>()
        .iter()
        .collect()
}

fn i64s(b: &RecordBatch, c: &str) -> Vec<Option<i64>> {
    b.column_by_name(c)
        .unwrap()
        .as_primitive::<Int64Type>()
        .iter()
        .collect()
}

fn times(b: &RecordBatch, c: &str) -> Vec<i64> {
    b.column_by_name(c)
        .unwrap()
        .as_primitive::<TimestampMicrosecondType>()
        .values()
        .to_vec()
}

fn map_at(b: &RecordBatch, c: &str, row: usize) -> Option<Vec<(String, String)>> {
    let map = b.column_by_name(c).unwrap().as_map();
    if map.is_null(row) {
        return None;
    }
    let entries = map.value(row);
    let keys = entries.column(0).as_string::<i32>();
    let values = entries.column(1).as_string::<i32>();
    Some(
        (0..entries.len())
            .map(|i| (keys.value(i).to_owned(), values.value(i).to_owned()))
            .collect(),
    )
}

fn sum(values: &[Option<i64>]) -> i64 {
    values.iter().flatten().sum()
}

/// The rows of `b` where `column` is `value`.
fn rows_where(b: &RecordBatch, column: &str, value: &str) -> Vec<usize> {
    strs(b, column)
        .iter()
        .enumerate()
        .filter(|(_, v)| v.as_deref() == Some(value))
        .map(|(i, _)| i)
        .collect()
}

// ---- tables from the model ---------------------------------------------------------------

#[test]
fn rows_follow_the_plans() {
    let profile = toy_profile(&[(1, NOON), (2, NOON + 500 * MS)]);
    let plans = plans_of(&profile);
    assert_eq!(plans.len(), 2);
    let t = build_tables(&SOURCE, &table_chunks(&plans)).unwrap();
    assert_eq!(t.profiles.num_rows(), plans.len());
    let planned: usize = plans.iter().map(|p| p.samples.len()).sum();
    assert_eq!(t.samples.num_rows(), planned);
    // Recorded samples without a stack are not planned.
    assert_eq!(planned, 10);
    for plan in &plans {
        let row = rows_where(&t.profiles, "profile_id", &plan.chunk_id)[0];
        let n = rows_where(&t.samples, "profile_id", &plan.chunk_id).len();
        assert_eq!(i64s(&t.profiles, "samples")[row], Some(n as i64));
        assert_eq!(n, plan.samples.len());
        let weights: i64 = plan.samples.iter().map(|p| p.sample.weight).sum();
        assert_eq!(i64s(&t.profiles, "total_weight")[row], Some(weights));
    }
    let model_weight: i64 = profile
        .samples()
        .iter()
        .filter(|s| s.stack.is_some())
        .map(|s| s.weight)
        .sum();
    assert_eq!(sum(&i64s(&t.samples, "weight")), model_weight);

    let p = &t.profiles;
    assert_eq!(
        strs(p, "service"),
        vec![Some("checkout".into()), Some("profile-service".into())],
        "process service.name, else the profile's"
    );
    assert_eq!(
        strs(p, "host"),
        vec![Some("box-1".into()), Some("profile-host".into())]
    );
    assert_eq!(i64s(p, "pid"), vec![Some(1), Some(2)]);
    assert_eq!(strs(p, "process_name")[0].as_deref(), Some("toy"));
    assert_eq!(strs(p, "sample_type")[0].as_deref(), Some("cpu-clock"));
    assert_eq!(strs(p, "sample_unit")[0].as_deref(), Some("nanoseconds"));
    assert_eq!(i64s(p, "period")[0], Some(1_000_000));
    assert_eq!(i64s(p, "frequency_hz")[0], None);
    assert_eq!(strs(p, "timestamps")[0].as_deref(), Some("recorded"));
    assert_eq!(i64s(p, "interval_ns")[0], None);
    assert_eq!(strs(p, "release")[0].as_deref(), Some("toy@1.0"));
    assert_eq!(strs(p, "environment")[0], None);
    assert_eq!(strs(p, "source_id")[1].as_deref(), Some(SOURCE.source_id));
    assert_eq!(times(p, "start_time")[0], NOON / 1000);
    assert_eq!(times(p, "end_time")[0], (NOON + 5 * MS) / 1000);
    assert_eq!(
        map_at(p, "attributes", 0).unwrap(),
        vec![
            ("host.name".to_owned(), "box-1".to_owned()),
            ("producer".to_owned(), "toy".to_owned()),
            ("service.name".to_owned(), "checkout".to_owned()),
        ],
        "process attributes override the profile's, sorted by key"
    );
    assert_eq!(
        map_at(p, "attributes", 1).unwrap(),
        vec![
            ("host.name".to_owned(), "profile-host".to_owned()),
            ("producer".to_owned(), "toy".to_owned()),
            ("service.name".to_owned(), "profile-service".to_owned()),
        ]
    );
}

#[test]
fn upload_service_wins() {
    let profile = toy_profile(&[(1, NOON)]);
    let plans = plans_of(&profile);
    let source = TableSource {
        service: Some("from-metadata"),
        ..SOURCE
    };
    let t = build_tables(&source, &table_chunks(&plans)).unwrap();
    assert_eq!(
        strs(&t.profiles, "service"),
        vec![Some("from-metadata".into())]
    );
    let rollup_services: BTreeSet<_> = strs(&t.function_rollup, "service").into_iter().collect();
    assert_eq!(
        rollup_services,
        BTreeSet::from([Some("from-metadata".into())])
    );
}

#[test]
fn stacks_are_a_tree_with_parents_first() {
    let profile = toy_profile(&[(1, NOON), (2, NOON)]);
    let plans = plans_of(&profile);
    let t = build_tables(&SOURCE, &table_chunks(&plans)).unwrap();
    let (s, f) = (&t.stacks, &t.frames);
    let (sp, sid, parent, frame, depth) = (
        strs(s, "profile_id"),
        u32s(s, "stack_id"),
        u32s(s, "parent_id"),
        u32s(s, "frame_id"),
        u32s(s, "depth"),
    );
    // (profile, stack) → (parent, frame, depth)
    let mut nodes: HashMap<(String, u32), (Option<u32>, u32, u32)> = HashMap::new();
    let mut last: Option<(String, u32)> = None;
    for i in 0..s.num_rows() {
        let key = (sp[i].clone().unwrap(), sid[i].unwrap());
        if let Some(prev) = &last {
            assert!(*prev < key, "sorted by profile_id, stack_id");
        }
        if last.as_ref().is_none_or(|(p, _)| *p != key.0) {
            assert_eq!(key.1, 0, "ids start at 0 in each profile");
        } else {
            assert_eq!(key.1, last.as_ref().unwrap().1 + 1, "dense ids");
        }
        match parent[i] {
            None => assert_eq!(depth[i], Some(0)),
            Some(pid) => {
                assert!(pid < key.1, "parent before child");
                let (_, _, parent_depth) = nodes[&(key.0.clone(), pid)];
                assert_eq!(parent_depth + 1, depth[i].unwrap());
            }
        }
        nodes.insert(
            key.clone(),
            (parent[i], frame[i].unwrap(), depth[i].unwrap()),
        );
        last = Some(key);
    }
    let frame_names: HashMap<(String, u32), String> = (0..f.num_rows())
        .map(|i| {
            (
                (
                    strs(f, "profile_id")[i].clone().unwrap(),
                    u32s(f, "frame_id")[i].unwrap(),
                ),
                strs(f, "name")[i].clone().unwrap(),
            )
        })
        .collect();
    for ((profile_id, _), (_, frame_id, _)) in &nodes {
        assert!(frame_names.contains_key(&(profile_id.clone(), *frame_id)));
    }
    // Every sample's stack exists in its profile and spells the model's stack.
    let by_time: HashMap<(String, i64), usize> = plans
        .iter()
        .flat_map(|p| {
            p.samples
                .iter()
                .enumerate()
                .map(|(i, s)| ((p.chunk_id.clone(), s.time / 1000), i))
        })
        .collect();
    let (samples_profile, stack_ids, ts) = (
        strs(&t.samples, "profile_id"),
        u32s(&t.samples, "stack_id"),
        times(&t.samples, "timestamp"),
    );
    for row in 0..t.samples.num_rows() {
        let profile_id = samples_profile[row].clone().unwrap();
        let mut node = stack_ids[row];
        let mut names = Vec::new();
        while let Some(n) = node {
            let (parent, frame, _) = nodes[&(profile_id.clone(), n)];
            names.push(frame_names[&(profile_id.clone(), frame)].clone());
            node = parent;
        }
        let plan = plans.iter().find(|p| p.chunk_id == profile_id).unwrap();
        let planned = &plan.samples[by_time[&(profile_id.clone(), ts[row])]];
        let model: Vec<String> = profile
            .stack_frames(planned.sample.stack.unwrap())
            .map(|h| super::frames::frame_name(&profile, profile.frame(h)))
            .collect();
        assert_eq!(names, model, "row {row}");
    }
}

#[test]
fn frame_columns() {
    let profile = toy_profile(&[(1, NOON)]);
    let plans = plans_of(&profile);
    let t = build_tables(&SOURCE, &table_chunks(&plans)).unwrap();
    let f = &t.frames;
    let names = strs(f, "name");
    let row = |name: &str| {
        names
            .iter()
            .position(|n| n.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("no frame {name} in {names:?}"))
    };
    let frame_ids = u32s(f, "frame_id");
    assert_eq!(
        frame_ids,
        (0..f.num_rows() as u32).map(Some).collect::<Vec<_>>()
    );
    assert_eq!(
        row("main"),
        0,
        "numbered in the order first reached, root first"
    );
    let leaf = row("libc.so.6!0x7f001234");
    assert_eq!(strs(f, "kind")[leaf].as_deref(), Some("native"));
    assert_eq!(strs(f, "function")[leaf], None);
    assert_eq!(u64s(f, "address")[leaf], Some(0x7f00_1234));
    assert_eq!(strs(f, "address_space")[leaf].as_deref(), Some("absolute"));
    assert_eq!(
        strs(f, "image_path")[leaf].as_deref(),
        Some("/usr/lib/x86_64-linux-gnu/libc.so.6")
    );
    assert_eq!(strs(f, "build_id")[leaf].as_deref(), Some("b03e4a7f"));
    assert_eq!(
        strs(f, "debug_id")[leaf].as_deref(),
        Some("7f4a3eb0-0000-0000-0000-000000000000")
    );
    assert_eq!(u64s(f, "image_start")[leaf], Some(0x7f00_0000));
    assert_eq!(u64s(f, "image_end")[leaf], Some(0x7f10_0000));
    assert_eq!(u64s(f, "image_file_offset")[leaf], Some(0x1000));
    let symbolized = f.column_by_name("symbolized").unwrap().as_boolean();
    assert!(!symbolized.value(leaf));
    assert!(symbolized.value(row("main")));

    let main = row("main");
    assert_eq!(u64s(f, "image_end")[main], None, "unknown end");
    assert_eq!(strs(f, "file")[main].as_deref(), Some("main.c"));
    assert_eq!(u32s(f, "line")[main], Some(10));
    row("toy.exe!0x10"); // the base name of a Windows path
    let kernel = row("?!0xbeef");
    assert_eq!(strs(f, "kind")[kernel].as_deref(), Some("kernel"));
    assert_eq!(
        strs(f, "address_space")[kernel].as_deref(),
        Some("image_relative")
    );
    assert_eq!(strs(f, "image_path")[kernel], None);
    assert_eq!(
        strs(f, "kind")[row("<unknown>")].as_deref(),
        Some("unknown")
    );
    assert_eq!(strs(f, "kind")[row("wasm_fn")].as_deref(), Some("wasm"));
    let jvm = row("Foo.bar");
    assert_eq!(strs(f, "kind")[jvm].as_deref(), Some("jvm"));
    assert_eq!(strs(f, "module")[jvm].as_deref(), Some("com.example.Foo"));

    let work = row("work");
    assert_eq!(strs(f, "system_name")[work].as_deref(), Some("_Z4workv"));
    let inlined = f.column_by_name("inlined_into").unwrap().as_list::<i32>();
    assert_eq!(inlined.null_count(), 0, "never null");
    assert_eq!(inlined.value(main).len(), 0, "empty for most frames");
    let calls = inlined.value(work);
    let calls = calls.as_struct();
    assert_eq!(calls.len(), 2);
    let function = calls.column(0).as_string::<i32>();
    assert_eq!(function.value(0), "outer");
    assert!(function.is_null(1));
    assert_eq!(calls.column(1).as_string::<i32>().value(0), "a.c");
    assert_eq!(calls.column(2).as_primitive::<UInt32Type>().value(0), 3);
    assert_eq!(calls.column(3).as_primitive::<UInt32Type>().value(0), 4);
}

#[test]
fn sample_columns() {
    let profile = toy_profile(&[(1, NOON)]);
    let plans = plans_of(&profile);
    let t = build_tables(&SOURCE, &table_chunks(&plans)).unwrap();
    let s = &t.samples;
    let ts = times(s, "timestamp");
    assert_eq!(ts[0], NOON / 1000);
    assert!(ts.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(
        i64s(s, "thread_id"),
        vec![Some(10), Some(11), Some(10), Some(11), Some(11)]
    );
    assert_eq!(strs(s, "thread_name")[0].as_deref(), Some("worker"));
    assert_eq!(strs(s, "thread_name")[1], None);
    assert_eq!(
        i64s(s, "weight"),
        vec![
            Some(MS),
            Some(2 * MS),
            Some(3 * MS),
            Some(4 * MS),
            Some(6 * MS)
        ]
    );
    assert_eq!(u32s(s, "cpu")[4], Some(5));
    assert_eq!(
        map_at(s, "labels", 0).unwrap(),
        vec![
            ("http.route".to_owned(), "/checkout".to_owned()),
            ("alloc".to_owned(), "42 bytes".to_owned()),
            ("n".to_owned(), "-7".to_owned()),
        ],
        "input order, numbers with units, first value of a repeated key"
    );
    assert_eq!(map_at(s, "labels", 1), None);
    assert_eq!(strs(s, "trace_id")[1].as_deref(), Some(&*"ab".repeat(16)));
    assert_eq!(strs(s, "span_id")[1].as_deref(), Some(&*"0c".repeat(8)));
    assert_eq!(strs(s, "trace_id")[0], None);
    // Samples 0 and 3 share a stack.
    let stack_ids = u32s(s, "stack_id");
    assert_eq!(stack_ids[0], stack_ids[3]);
    assert_ne!(stack_ids[0], stack_ids[1]);
}

#[test]
fn samples_and_profiles_are_sorted() {
    // Two processes sampled at the same instants: rows interleave by time, then profile_id.
    let profile = toy_profile(&[(1, NOON + 3 * MS / 2), (2, NOON)]);
    let plans = plans_of(&profile);
    let t = build_tables(&SOURCE, &table_chunks(&plans)).unwrap();
    let keys: Vec<(i64, String)> = times(&t.samples, "timestamp")
        .into_iter()
        .zip(strs(&t.samples, "profile_id"))
        .map(|(t, p)| (t, p.unwrap()))
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    let profiles: BTreeSet<&String> = keys.iter().map(|(_, p)| p).collect();
    assert_eq!(profiles.len(), 2);
    let start = times(&t.profiles, "start_time");
    assert_eq!(start, vec![NOON / 1000, (NOON + 3 * MS / 2) / 1000]);
    assert_eq!(i64s(&t.profiles, "pid"), vec![Some(2), Some(1)]);
}

#[test]
fn rollup_adds_up() {
    let profile = toy_profile(&[(1, NOON), (2, NOON + HOUR_NS)]);
    let plans = plans_of(&profile);
    let t = build_tables(&SOURCE, &table_chunks(&plans)).unwrap();
    let r = &t.function_rollup;
    let stacked: i64 = i64s(&t.samples, "weight")
        .iter()
        .zip(u32s(&t.samples, "stack_id"))
        .filter(|(_, s)| s.is_some())
        .map(|(w, _)| w.unwrap())
        .sum();
    assert_eq!(sum(&i64s(r, "self_weight")), stacked);
    assert_eq!(sum(&i64s(r, "self_samples")), t.samples.num_rows() as i64);
    // Keys: (hour, service, function) sorted.
    let keys: Vec<(i64, Option<String>, String)> = times(r, "hour")
        .into_iter()
        .zip(strs(r, "service"))
        .zip(strs(r, "function"))
        .map(|((h, s), f)| (h, s, f.unwrap()))
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    let hours: BTreeSet<i64> = keys.iter().map(|k| k.0).collect();
    assert_eq!(
        hours,
        BTreeSet::from([NOON / 1000, (NOON + HOUR_NS) / 1000]),
        "each process in its own hour"
    );
    let at = |hour: i64, function: &str| {
        keys.iter()
            .position(|k| k.0 == hour && k.2 == function)
            .unwrap_or_else(|| panic!("no {function} at {hour}"))
    };
    let noon = NOON / 1000;
    // Every sample has main at its root: total = all weight of the hour, self = none.
    let main = at(noon, "main");
    assert_eq!(i64s(r, "total_weight")[main], Some(16 * MS));
    assert_eq!(i64s(r, "total_samples")[main], Some(5));
    assert_eq!(i64s(r, "self_samples")[main], Some(0));
    // work → work counts once for the recursive sample.
    let work = at(noon, "work");
    assert_eq!(i64s(r, "total_samples")[work], Some(3));
    assert_eq!(i64s(r, "total_weight")[work], Some((1 + 2 + 4) * MS));
    assert_eq!(i64s(r, "self_weight")[work], Some(2 * MS));
    // work's code was inlined into `outer` and an unnamed function: both are on its stacks.
    let outer = at(noon, "outer");
    assert_eq!(i64s(r, "total_samples")[outer], Some(3));
    assert_eq!(i64s(r, "self_samples")[outer], Some(0));
    let unknown = at(noon, "<unknown>");
    assert_eq!(
        i64s(r, "total_samples")[unknown],
        Some(4),
        "once per sample"
    );
    let leaf = at(noon, "libc.so.6!0x7f001234");
    assert_eq!(i64s(r, "self_weight")[leaf], Some((1 + 4) * MS));
    assert_eq!(i64s(r, "self_samples")[leaf], Some(2));
    assert!(strs(r, "platform")
        .iter()
        .all(|p| p.as_deref() == Some("native")));
    assert!(strs(r, "release")
        .iter()
        .all(|p| p.as_deref() == Some("toy@1.0")));
    assert!(strs(r, "sample_unit")
        .iter()
        .all(|p| p.as_deref() == Some("nanoseconds")));
}

// ---- weight units ------------------------------------------------------------------------

/// A profile of one thread whose samples alternate over the given `(name, unit, kind,
/// frequency)` series, each with weight 3, as one `ChunkPlan::whole` chunk.
fn series_profile(series: &[(&str, &str, SeriesKind, Option<u64>)]) -> Profile {
    let mut p = Profile::new("test");
    let process = p.add_process(Some(7));
    let thread = p.add_thread(process, Some(7));
    let mut f = Frame::new(FrameKind::Native);
    f.function = Some(p.intern("f"));
    let f = p.add_frame(f);
    let stack = p.add_stack_from_root([f]);
    let handles: Vec<_> = series
        .iter()
        .map(|&(name, unit, kind, frequency_hz)| {
            let s = Series {
                kind,
                name: p.intern(name),
                unit: p.intern(unit),
                source: None,
                frequency_hz,
                period: None,
            };
            p.add_series(s)
        })
        .collect();
    for i in 0..4 {
        let mut s = Sample::new(thread, stack, 3, handles[i % handles.len()]);
        s.time = Some(NOON + i as i64 * MS);
        p.add_sample(s);
    }
    p
}

fn whole_tables(profile: &Profile) -> TableBatches {
    let plan = ChunkPlan::whole(profile, "c0ffee", "profiler");
    build_tables(&SOURCE, &table_chunks(std::slice::from_ref(&plan))).unwrap()
}

#[test]
fn weight_units() {
    let ms = series_profile(&[("cpu", "ms", SeriesKind::CpuTime, None)]);
    let t = whole_tables(&ms);
    assert_eq!(
        strs(&t.profiles, "sample_unit")[0].as_deref(),
        Some("nanoseconds")
    );
    assert_eq!(i64s(&t.samples, "weight"), vec![Some(3 * MS); 4]);

    let counted = series_profile(&[("samples", "count", SeriesKind::WallTime, Some(100))]);
    let t = whole_tables(&counted);
    assert_eq!(
        strs(&t.profiles, "sample_unit")[0].as_deref(),
        Some("count")
    );
    assert_eq!(
        strs(&t.profiles, "sample_type")[0].as_deref(),
        Some("samples")
    );
    assert_eq!(i64s(&t.profiles, "frequency_hz")[0], Some(100));
    assert_eq!(i64s(&t.profiles, "total_weight")[0], Some(12));

    // Counts beside time: each count becomes its interval (1 / 250 Hz = 4 ms).
    let mixed = series_profile(&[
        ("cpu", "nanoseconds", SeriesKind::CpuTime, None),
        ("samples", "count", SeriesKind::CpuTime, Some(250)),
    ]);
    let t = whole_tables(&mixed);
    assert_eq!(
        strs(&t.profiles, "sample_unit")[0].as_deref(),
        Some("nanoseconds")
    );
    assert_eq!(
        strs(&t.profiles, "sample_type")[0].as_deref(),
        Some("cpu+samples")
    );
    assert_eq!(i64s(&t.profiles, "frequency_hz")[0], None, "two series");
    assert_eq!(
        i64s(&t.samples, "weight"),
        vec![Some(3), Some(12 * MS), Some(3), Some(12 * MS)]
    );
    assert_eq!(
        sum(&i64s(&t.function_rollup, "self_weight")),
        2 * 3 + 2 * 12 * MS
    );

    // Same name twice (two units): named once.
    let renamed = series_profile(&[
        ("cpu", "nanoseconds", SeriesKind::CpuTime, None),
        ("cpu", "us", SeriesKind::CpuTime, None),
    ]);
    let t = whole_tables(&renamed);
    assert_eq!(strs(&t.profiles, "sample_type")[0].as_deref(), Some("cpu"));
    assert_eq!(i64s(&t.profiles, "total_weight")[0], Some(2 * 3 + 2 * 3000));
}

#[test]
fn samples_without_stacks() {
    let mut p = Profile::new("test");
    let process = p.add_process(None);
    let thread = p.add_thread(process, None);
    let series = cpu_series(&mut p, None);
    for i in 0..3 {
        let mut s = Sample::new(thread, None, 5, series);
        s.time = Some(NOON + i);
        p.add_sample(s);
    }
    let plan = ChunkPlan::whole(&p, "idle", "profiler");
    let chunks = table_chunks(std::slice::from_ref(&plan));
    let t = build_tables(&SOURCE, &chunks).unwrap();
    assert_eq!(t.samples.num_rows(), 3);
    assert_eq!(u32s(&t.samples, "stack_id"), vec![None; 3]);
    assert_eq!(t.stacks.num_rows(), 0);
    assert_eq!(t.frames.num_rows(), 0);
    assert_eq!(t.function_rollup.num_rows(), 0, "no stack, no rollup");
    assert_eq!(strs(&t.profiles, "service"), vec![None]);
    assert_eq!(strs(&t.profiles, "host"), vec![None]);
    assert_eq!(map_at(&t.profiles, "attributes", 0), Some(vec![]));
    let objects = write_tables(&SOURCE, &chunks).unwrap();
    let tables: Vec<Table> = objects.iter().map(|o| o.table).collect();
    assert_eq!(
        tables,
        vec![
            Table::Profiles,
            Table::Samples,
            Table::Stacks,
            Table::Frames
        ],
        "empty stacks and frames still written; no rollup file"
    );
    let stacks = read_parquet(&objects[2].bytes);
    assert_eq!(stacks.iter().map(RecordBatch::num_rows).sum::<usize>(), 0);
}

#[test]
fn a_plan_without_samples_is_an_error() {
    let p = Profile::new("test");
    let plan = ChunkPlan::whole(&p, "empty", "profiler");
    let err = build_tables(&SOURCE, &table_chunks(std::slice::from_ref(&plan))).unwrap_err();
    assert!(
        matches!(err.kind(), crate::ErrorKind::NoSamples { .. }),
        "{err}"
    );
}

// ---- a real input --------------------------------------------------------------------------

#[test]
fn expanded_pprof_weights_are_exact() {
    let profile = pprof_fixture();
    let plans = plans_of(&profile);
    let t = build_tables(&SOURCE, &table_chunks(&plans)).unwrap();
    let planned: usize = plans.iter().map(|p| p.samples.len()).sum();
    assert_eq!(t.samples.num_rows(), planned);
    assert_eq!(planned, 176, "1.76 s of CPU at 100 Hz");
    assert!(strs(&t.profiles, "timestamps")
        .iter()
        .all(|s| s.as_deref() == Some("expanded")));
    assert!(i64s(&t.profiles, "interval_ns")
        .iter()
        .all(|s| *s == Some(10 * MS)));
    // Each model sample's weight is split over its rows without loss.
    let mut model: BTreeMap<*const Sample, i64> = BTreeMap::new();
    for p in plans.iter().flat_map(|p| &p.samples) {
        let series = profile.series(p.sample.series);
        let unit_ns = time_unit_ns(profile.str(series.unit)).unwrap();
        model.insert(p.sample, p.sample.weight * unit_ns);
    }
    let weights = i64s(&t.samples, "weight");
    assert_eq!(sum(&weights), model.values().sum::<i64>());
    assert_eq!(sum(&weights), 1_760_000_000);
    assert_eq!(sum(&i64s(&t.profiles, "total_weight")), 1_760_000_000);
    assert_eq!(sum(&i64s(&t.function_rollup, "self_weight")), 1_760_000_000);
    let per_plan: Vec<PlannedSample> = plans.iter().flat_map(|p| p.samples.clone()).collect();
    assert_eq!(
        per_plan.iter().map(|p| p.weight).sum::<i64>(),
        1_760_000_000
    );
    // Go's pprof frames are symbolized.
    let symbolized = t.frames.column_by_name("symbolized").unwrap().as_boolean();
    assert!(symbolized.true_count() > 0);
}

// ---- Parquet files -------------------------------------------------------------------------

fn read_parquet(bytes: &[u8]) -> Vec<RecordBatch> {
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(bytes).unwrap();
    ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap()
        .collect::<std::result::Result<_, _>>()
        .unwrap()
}

fn metadata_of(bytes: &[u8]) -> parquet::file::metadata::ParquetMetaData {
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(bytes).unwrap();
    ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .metadata()
        .as_ref()
        .clone()
}

#[test]
fn parquet_round_trip() {
    let profile = toy_profile(&[(1, NOON), (2, NOON + 2 * HOUR_NS)]);
    let plans = plans_of(&profile);
    let t = build_tables(&SOURCE, &table_chunks(&plans)).unwrap();
    let tables = [
        (Table::Profiles, &t.profiles),
        (Table::Samples, &t.samples),
        (Table::Stacks, &t.stacks),
        (Table::Frames, &t.frames),
        (Table::FunctionRollup, &t.function_rollup),
    ];
    for (table, batch) in tables {
        let bytes = super::parquet_file::encode(table, batch).unwrap();
        let back = read_parquet(&bytes);
        assert_eq!(back.len(), 1, "{}", table.name());
        assert_eq!(back[0].columns(), batch.columns(), "{}", table.name());
        for (read, written) in back[0]
            .schema()
            .fields()
            .iter()
            .zip(table.schema().fields())
        {
            assert_eq!(read.data_type(), written.data_type(), "{}", table.name());
            assert_eq!(read.name(), written.name());
        }

        let meta = metadata_of(&bytes);
        let kv: BTreeMap<&str, Option<&str>> = meta
            .file_metadata()
            .key_value_metadata()
            .unwrap()
            .iter()
            .map(|kv| (kv.key.as_str(), kv.value.as_deref()))
            .collect();
        assert_eq!(kv["proflake.schema_version"], Some("1"));
        assert_eq!(kv["proflake.table"], Some(table.name()));
        let group = meta.row_group(0);
        let sorting = group.sorting_columns().unwrap();
        let leaf_names: Vec<String> = sorting
            .iter()
            .map(|s| group.column(s.column_idx as usize).column_path().string())
            .collect();
        assert_eq!(leaf_names, table.sort_columns(), "{}", table.name());
        assert!(sorting.iter().all(|s| !s.descending && s.nulls_first));
        for column in group.columns() {
            let name = column.column_path().string();
            assert!(
                matches!(column.compression(), Compression::ZSTD(_)),
                "{name}"
            );
            assert!(column.column_index_offset().is_some(), "page index {name}");
            let encodings: Vec<Encoding> = column.encodings().collect();
            if [
                "stack_id",
                "parent_id",
                "frame_id",
                "timestamp",
                "start_time",
            ]
            .contains(&&*name)
            {
                assert!(encodings.contains(&Encoding::DELTA_BINARY_PACKED), "{name}");
                assert!(column.dictionary_page_offset().is_none(), "{name}");
            } else if name == "profile_id" {
                assert!(column.dictionary_page_offset().is_some(), "{name}");
            }
        }
    }
}

#[test]
fn row_groups_are_capped() {
    // One thread sampled every 250 µs for 50 s: 200,000 rows in one chunk.
    let mut p = Profile::new("test");
    let process = p.add_process(Some(3));
    let thread = p.add_thread(process, Some(3));
    let mut f = Frame::new(FrameKind::Native);
    f.function = Some(p.intern("spin"));
    let f = p.add_frame(f);
    let stack = p.add_stack_from_root([f]);
    let series = cpu_series(&mut p, Some(4000));
    for i in 0..200_000 {
        let mut s = Sample::new(thread, stack, 250_000, series);
        s.time = Some(NOON + i * 250_000);
        p.add_sample(s);
    }
    let plans = plans_of(&p);
    assert_eq!(plans.len(), 1);
    let objects = write_tables(&SOURCE, &table_chunks(&plans)).unwrap();
    let samples = objects.iter().find(|o| o.table == Table::Samples).unwrap();
    assert_eq!(samples.rows, 200_000);
    let meta = metadata_of(&samples.bytes);
    let groups: Vec<i64> = meta.row_groups().iter().map(|g| g.num_rows()).collect();
    assert_eq!(groups, vec![131_072, 200_000 - 131_072]);
    let back = read_parquet(&samples.bytes);
    assert_eq!(
        back.iter().map(RecordBatch::num_rows).sum::<usize>(),
        200_000
    );
}

#[test]
fn one_file_per_table_and_day() {
    // Process 1 starts two ms before midnight and runs past it; process 2 samples the next
    // noon.
    let midnight = NOON + 12 * HOUR_NS;
    let profile = toy_profile(&[(1, midnight - 2 * MS), (2, midnight + 12 * HOUR_NS)]);
    let plans = plans_of(&profile);
    assert_eq!(plans.len(), 2);
    let chunks = table_chunks(&plans);
    let objects = write_tables(&SOURCE, &chunks).unwrap();
    let listed: Vec<(Table, String)> = objects
        .iter()
        .map(|o| {
            let dt = o.key.split("dt=").nth(1).unwrap()[..10].to_owned();
            (o.table, dt)
        })
        .collect();
    let days = ["2024-03-01", "2024-03-02"];
    let expected: Vec<(Table, String)> = Table::ALL
        .iter()
        .flat_map(|&t| days.iter().map(move |d| (t, (*d).to_owned())))
        .collect();
    assert_eq!(listed, expected, "Table::ALL order, days ascending");
    assert_eq!(
        objects[0].key,
        format!(
            "tables/v1/profiles/dt=2024-03-01/{}.parquet",
            SOURCE.source_id
        )
    );

    // All of process 1's samples, those after midnight too, stay on its start day.
    let whole = build_tables(&SOURCE, &chunks).unwrap();
    let first_day = read_parquet(&objects[2].bytes);
    let first_day = &first_day[0];
    assert_eq!(objects[2].table, Table::Samples);
    let ids: BTreeSet<_> = strs(first_day, "profile_id").into_iter().collect();
    assert_eq!(ids, BTreeSet::from([Some(plans[0].chunk_id.clone())]));
    assert_eq!(first_day.num_rows(), plans[0].samples.len());
    assert!(times(first_day, "timestamp")
        .iter()
        .any(|&t| t >= midnight / 1000));
    // The rollup splits by hour instead: 23:00 on the first day, 00:00 and 12:00 on the second.
    let rollup_days: Vec<Vec<i64>> = objects
        .iter()
        .filter(|o| o.table == Table::FunctionRollup)
        .map(|o| {
            let hours: BTreeSet<i64> = read_parquet(&o.bytes)
                .iter()
                .flat_map(|b| times(b, "hour"))
                .collect();
            hours.into_iter().collect()
        })
        .collect();
    let hour_us = HOUR_NS / 1000;
    assert_eq!(
        rollup_days,
        vec![
            vec![midnight / 1000 - hour_us],
            vec![midnight / 1000, midnight / 1000 + 12 * hour_us]
        ]
    );
    // The days' files hold every row of the whole tables.
    for table in Table::ALL {
        let whole_rows = match table {
            Table::Profiles => whole.profiles.num_rows(),
            Table::Samples => whole.samples.num_rows(),
            Table::Stacks => whole.stacks.num_rows(),
            Table::Frames => whole.frames.num_rows(),
            Table::FunctionRollup => whole.function_rollup.num_rows(),
        };
        let rows: u64 = objects
            .iter()
            .filter(|o| o.table == table)
            .map(|o| o.rows)
            .sum();
        assert_eq!(rows, whole_rows as u64, "{}", table.name());
    }
}

#[test]
fn output_is_byte_deterministic() {
    let write = |profile: &Profile| {
        let plans = plans_of(profile);
        write_tables(&SOURCE, &table_chunks(&plans)).unwrap()
    };
    let a = write(&toy_profile(&[(1, NOON), (2, NOON)]));
    let b = write(&toy_profile(&[(1, NOON), (2, NOON)]));
    assert_eq!(a.len(), b.len());
    for (a, b) in a.iter().zip(&b) {
        assert_eq!(a.key, b.key);
        assert_eq!(a.bytes, b.bytes, "{}", a.key);
    }
    let a = write(&pprof_fixture());
    let b = write(&pprof_fixture());
    assert!(a.iter().zip(&b).all(|(a, b)| a.bytes == b.bytes));
}
