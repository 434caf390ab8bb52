//! Tests of the stack tables (schema version 2) against hand-built profiles and a real pprof
//! file. Expected values come from the model, computed here, not from the writer's helpers.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, TimestampMicrosecondType};
use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::{Compression, Encoding};
use parquet::file::metadata::{ParquetMetaData, SortingColumn};

use super::profiles::TableProfile;
use super::samples::{sample_rows, SampleRow};
use super::*;
use crate::metadata::UploadMetadata;
use crate::model::{
    ids_from_build_id, CpuMode, Frame, FrameAddress, FrameKind, Image, InlinedCall, Label,
    LabelSetHandle, LabelValue, Link, Mark, MarkKind, MarkScope, Profile, Sample, Series,
    SeriesHandle, SeriesKind, StackHandle, SymbolStatus, ThreadHandle, Timestamps,
};
use crate::plan::{left_out, plan_sample_v2, plan_tables, TableProfilePlan};
use crate::ErrorKind;

/// 2024-03-01T12:00:00Z in ns.
const NOON: i64 = 1_709_294_400_000_000_000;
const NOON_US: i64 = NOON / 1000;
const MS: i64 = 1_000_000;
const SEC: i64 = 1_000 * MS;
const HOUR_NS: i64 = 3_600 * SEC;
const HOUR_US: i64 = HOUR_NS / 1000;

const SOURCE: TableSource<'static> = TableSource {
    source_id: "0123456789abcdef0123456789abcdef",
    source_key: "uploads/toy.pb",
    source_etag: "etag",
    source_format: "test",
    converter: "proflake test",
    service: None,
    labels: &std::collections::BTreeMap::new(),
    timed_clock: "input",
    aggregated_clock: "arrival",
};

// ---- building inputs ---------------------------------------------------------------------

/// A CPU profile with one process per `(pid, first sample ns)`: six samples each on two
/// threads (the fifth without a stack), over stacks with recursion, inlining, unsymbolized and
/// unnamed frames. Sample `i` weighs `i + 1` ms and is taken at `start + i` ms.
fn toy_profile(processes: &[(i64, i64)]) -> Profile {
    let mut p = Profile::new("test");
    let attributes = "service.name=profile-service host.name=profile-host producer=toy";
    for (k, v) in attributes.split(' ').filter_map(|kv| kv.split_once('=')) {
        p.attributes.insert(k.into(), v.into());
    }
    let libc_path = p.intern("/usr/lib/x86_64-linux-gnu/libc.so.6");
    let mut libc = Image::new(Some(libc_path), 0x7f00_0000, 0x7f10_0000);
    (libc.code_id, libc.debug_id) = ids_from_build_id(&[0xb0, 0x3e, 0x4a, 0x7f]);
    libc.file_offset = 0x1000;
    let libc = p.add_image(libc);
    let exe_path = p.intern("C:\\bin\\toy.exe");
    let exe = p.add_image(Image::new(Some(exe_path), 0x40_0000, 0));
    let mut frame = |kind, function: Option<&str>, edit: &dyn Fn(&mut Profile, &mut Frame)| {
        let mut f = Frame::new(kind);
        f.function = function.map(|name| p.intern(name));
        edit(&mut p, &mut f);
        p.add_frame(f)
    };
    let main = frame(FrameKind::Native, Some("main"), &|p, f| {
        f.file = Some(p.intern("main.c"));
        f.line = Some(10);
        f.image = Some(exe);
        f.address = Some(FrameAddress::Absolute(0x40_1000));
    });
    let work = frame(FrameKind::Native, Some("work"), &|p, f| {
        f.system_name = Some(p.intern("_Z4workv"));
        let (outer, a_c) = (Some(p.intern("outer")), Some(p.intern("a.c")));
        let call = |function, file, line, column| InlinedCall {
            function,
            system_name: None,
            file,
            line,
            column,
        };
        let unnamed = call(None, None, None, None);
        f.inlined_into = Box::new([call(outer, a_c, Some(3), Some(4)), unnamed]);
    });
    let leaf = frame(FrameKind::Native, None, &|_, f| {
        f.image = Some(libc);
        f.address = Some(FrameAddress::Absolute(0x7f00_1234));
    });
    let jvm = frame(FrameKind::Jvm, Some("Foo.bar"), &|p, f| {
        f.module = Some(p.intern("com.example.Foo"));
    });
    let unknown = frame(FrameKind::Unknown, None, &|_, _| {});
    let kernel = frame(FrameKind::Kernel, None, &|_, f| {
        f.address = Some(FrameAddress::ImageRelative(0xbeef));
    });
    let win = frame(FrameKind::Native, None, &|_, f| {
        f.image = Some(exe);
        f.address = Some(FrameAddress::Absolute(0x10));
    });
    let mut wasm = Frame::new(FrameKind::Other(p.intern("wasm")));
    wasm.function = Some(p.intern("wasm_fn"));
    let wasm = p.add_frame(wasm);

    let stacks = [
        p.add_stack_from_root([main, work, leaf]),
        p.add_stack_from_root([main, work, work]),
        p.add_stack_from_root([main, jvm]),
        p.add_stack_from_root([main, work, leaf]),
        None,
        p.add_stack_from_root([main, unknown, kernel, wasm, win]),
    ];
    let (kind, ns) = (SeriesKind::CpuTime, "nanoseconds");
    let mut cpu = series_of(&mut p, kind, "cpu-clock", ns, None);
    cpu.period = Some(1_000_000);
    let cpu = p.add_series(cpu);
    let [route, checkout, other, alloc, bytes, n] =
        ["http.route", "/checkout", "/other", "alloc", "bytes", "n"].map(|s| p.intern(s));
    let num = |value, unit| LabelValue::Num { value, unit };
    let label = |key, value| Label { key, value };
    let labels = p.add_label_set(&[
        label(route, LabelValue::Str(checkout)),
        label(alloc, num(42, Some(bytes))),
        label(n, num(-7, None)),
        label(route, LabelValue::Str(other)),
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
            s.labels = labels.filter(|_| i == 0);
            s.link = Some(link).filter(|_| i == 1);
            s.cpu_mode = [CpuMode::Kernel, CpuMode::User, CpuMode::Unknown][i % 3];
            s.unwind_error = Some(p.intern("max_frames_exceeded")).filter(|_| i == 2);
            // Sample 5's count has the top bit set.
            s.counter = Some(if i == 5 {
                u64::MAX - 1
            } else {
                1_000 * i as u64
            });
            s.counter = s.counter.filter(|_| i != 4);
            p.add_sample(s);
        }
        toy_marks(&mut p, (a, b), start, labels);
    }
    p.sort_samples_by_time();
    p
}

/// Two counter values on `threads.1` a millisecond after `start`, added before an instant on
/// `threads.0` at `start` with `labels`.
fn toy_marks(
    p: &mut Profile,
    threads: (ThreadHandle, ThreadHandle),
    start: i64,
    labels: Option<LabelSetHandle>,
) {
    let name = p.intern("tokens");
    for (key, value) in [("input", 18_000.0), ("output", 450.5)] {
        let key = Some(p.intern(key));
        p.add_mark(Mark {
            time: start + MS,
            thread: threads.1,
            kind: MarkKind::Counter,
            name,
            category: None,
            key,
            value: Some(value),
            scope: None,
            labels: None,
        });
    }
    let (name, category) = (p.intern("phase"), Some(p.intern("toy")));
    p.add_mark(Mark {
        time: start,
        thread: threads.0,
        kind: MarkKind::Instant,
        name,
        category,
        key: None,
        value: None,
        scope: Some(MarkScope::Process),
        labels,
    });
}

fn series_of(p: &mut Profile, kind: SeriesKind, name: &str, unit: &str, hz: Option<u64>) -> Series {
    let (name, unit) = (p.intern(name), p.intern(unit));
    Series {
        kind,
        name,
        unit,
        source: None,
        frequency_hz: hz,
        period: None,
        spans: false,
    }
}

fn cpu_series(p: &mut Profile, unit: &str) -> SeriesHandle {
    let s = series_of(p, SeriesKind::CpuTime, "cpu", unit, None);
    p.add_series(s)
}

/// One named native frame per name, called in that order from the root.
fn stack(p: &mut Profile, names: &[&str]) -> Option<StackHandle> {
    let mut frame = |name: &str| {
        let mut f = Frame::new(FrameKind::Native);
        f.function = Some(p.intern(name));
        p.add_frame(f)
    };
    let frames: Vec<_> = names.iter().map(|&name| frame(name)).collect();
    p.add_stack_from_root(frames)
}

/// Adds a sample of `weight` in `series` on thread `tid` of process `pid`.
fn sample(
    p: &mut Profile,
    (pid, tid): (i64, i64),
    stack: Option<StackHandle>,
    (weight, series): (i64, SeriesHandle),
    time: Option<i64>,
) {
    let process = p.add_process(Some(pid));
    let thread = p.add_thread(process, Some(tid));
    let mut s = Sample::new(thread, stack, weight, series);
    s.time = time;
    p.add_sample(s);
}

fn inputs<'a, 'p>(plans: &'a [TableProfilePlan<'p>]) -> Vec<TableProfileInput<'a, 'p>> {
    let input = |plan| TableProfileInput {
        plan,
        platform: Some("native"),
        release: Some("toy@1.0"),
        environment: None,
    };
    plans.iter().map(input).collect()
}

fn plans_of(profile: &Profile) -> Vec<TableProfilePlan<'_>> {
    plan_tables(profile, SOURCE.source_id).expect("profile plans")
}

fn tables_of(profile: &Profile) -> TableBatches {
    build_tables(&SOURCE, &inputs(&plans_of(profile))).unwrap()
}

fn table(t: &TableBatches, table: Table) -> &RecordBatch {
    match table {
        Table::Profiles => &t.profiles,
        Table::Samples => &t.samples,
        Table::Stacks => &t.stacks,
        Table::Frames => &t.frames,
        Table::FunctionRollup => &t.function_rollup,
        Table::Counters => &t.counters,
    }
}

fn pprof_fixture() -> Profile {
    let path = "../samples/pprof/google-pprof_report_sample.cpu.pb.gz";
    let bytes = std::fs::read(path).expect("pprof sample");
    let decoded =
        crate::formats::decode(&bytes, None, &crate::Limits::default()).expect("pprof decodes");
    let profile = decoded.profile;
    assert!(profile.start_time.is_some(), "the file records its time");
    profile
}

/// `frames.name` by the contract, from the model: function, else `<image file>!0x<address>`,
/// else `<unknown>`.
fn expected_name(p: &Profile, frame: &Frame) -> String {
    if let Some(f) = p.opt_str(frame.function) {
        return f.to_owned();
    }
    let Some(FrameAddress::Absolute(a) | FrameAddress::ImageRelative(a)) = frame.address else {
        return "<unknown>".to_owned();
    };
    let image = frame.image.and_then(|i| p.opt_str(p.image(i).path));
    let file = image.map_or("?", |path| path.rsplit(['/', '\\']).next().unwrap());
    format!("{file}!0x{a:x}")
}

/// `(hour µs, service, sample_type, function)`.
type RollupKey = (i64, Option<String>, String, String);
/// → `[self_value, total_value, self_rows, total_rows]`.
type Rollup = BTreeMap<RollupKey, [i64; 4]>;

fn key(hour_us: i64, service: Option<&str>, sample_type: &str, function: &str) -> RollupKey {
    let (service, sample_type) = (service.map(str::to_owned), sample_type.to_owned());
    (hour_us, service, sample_type, function.to_owned())
}

/// The rollup by the contract's definition, straight from the model's samples; `service`
/// names the service of a pid.
fn expected_rollup(p: &Profile, service: impl Fn(Option<i64>) -> Option<String>) -> Rollup {
    let mut out = Rollup::new();
    for s in p.samples() {
        let Some(leaf) = s.stack else { continue };
        let hour = s.time.or(p.start_time).unwrap().div_euclid(HOUR_NS) * HOUR_US;
        let svc = service(p.process(p.thread(s.thread).process).pid);
        let sample_type = p.str(p.series(s.series).name);
        let key_of = |f: &str| key(hour, svc.as_deref(), sample_type, f);
        let mut on_stack = BTreeSet::new();
        for (depth, h) in p.stack_frames(leaf).enumerate() {
            let frame = p.frame(h);
            let name = expected_name(p, frame);
            if depth == 0 {
                let e = out.entry(key_of(&name)).or_default();
                (e[0], e[2]) = (e[0] + s.weight, e[2] + 1);
            }
            on_stack.insert(name);
            for call in frame.inlined_into.iter() {
                on_stack.insert(p.opt_str(call.function).unwrap_or("<unknown>").to_owned());
            }
        }
        for f in on_stack {
            let e = out.entry(key_of(&f)).or_default();
            (e[1], e[3]) = (e[1] + s.weight, e[3] + 1);
        }
    }
    out
}

/// The writer's rollup in the same shape; keys must be unique.
fn rollup_of(r: &RecordBatch) -> Rollup {
    let cols = ["self_value", "total_value", "self_rows", "total_rows"].map(|c| i64s(r, c));
    let (hours, services) = (times(r, "hour"), strs(r, "service"));
    let (types, functions) = (strs(r, "sample_type"), strs(r, "function"));
    let mut out = Rollup::new();
    for i in 0..r.num_rows() {
        let (t, f) = (types[i].clone().unwrap(), functions[i].clone().unwrap());
        let key = (hours[i].unwrap(), services[i].clone(), t, f);
        let sums = cols.each_ref().map(|c| c[i].unwrap());
        assert!(out.insert(key, sums).is_none(), "one row per key");
    }
    out
}

// ---- reading batches -----------------------------------------------------------------------

fn column<'b>(b: &'b RecordBatch, c: &str) -> &'b dyn Array {
    b.column_by_name(c).unwrap_or_else(|| panic!("no {c}"))
}

fn strs(b: &RecordBatch, c: &str) -> Vec<Option<String>> {
    let strings = column(b, c).as_string::<i32>();
    strings.iter().map(|v| v.map(str::to_owned)).collect()
}

fn i32s(b: &RecordBatch, c: &str) -> Vec<Option<i32>> {
    column(b, c).as_primitive::<Int32Type>().iter().collect()
}

fn i64s(b: &RecordBatch, c: &str) -> Vec<Option<i64>> {
    column(b, c).as_primitive::<Int64Type>().iter().collect()
}

fn times(b: &RecordBatch, c: &str) -> Vec<Option<i64>> {
    let times = column(b, c).as_primitive::<TimestampMicrosecondType>();
    times.iter().collect()
}

/// A map cell as `k=v; k=v`, in the map's order.
fn map_text(b: &RecordBatch, c: &str, row: usize) -> Option<String> {
    let map = column(b, c).as_map();
    if map.is_null(row) {
        return None;
    }
    let entries = map.value(row);
    let k = entries.column(0).as_string::<i32>();
    let v = entries.column(1).as_string::<i32>();
    let pairs: Vec<String> = (0..k.len())
        .map(|i| format!("{}={}", k.value(i), v.value(i)))
        .collect();
    Some(pairs.join("; "))
}

fn s(v: &str) -> Option<String> {
    Some(v.to_owned())
}

fn sum(values: &[Option<i64>]) -> i64 {
    values.iter().flatten().sum()
}

fn is_sorted<T: Ord>(v: &[T]) -> bool {
    v.windows(2).all(|w| w[0] <= w[1])
}

/// The one value every row of a text column holds.
fn only(b: &RecordBatch, c: &str) -> Option<String> {
    let values: BTreeSet<_> = strs(b, c).into_iter().collect();
    assert_eq!(values.len(), 1, "{c}: {values:?}");
    values.into_iter().next().unwrap()
}

/// The rows of `b` where `column` is `value`.
fn rows_where(b: &RecordBatch, column: &str, value: &str) -> Vec<usize> {
    let values = strs(b, column);
    let matches = |&i: &usize| values[i].as_deref() == Some(value);
    (0..b.num_rows()).filter(matches).collect()
}

/// `values` at `rows`.
fn at<T: Clone>(values: &[Option<T>], rows: &[usize]) -> Vec<Option<T>> {
    rows.iter().map(|&r| values[r].clone()).collect()
}

// ---- Parquet -------------------------------------------------------------------------------

fn reader(bytes: &[u8]) -> ParquetRecordBatchReaderBuilder<std::fs::File> {
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(bytes).unwrap();
    ParquetRecordBatchReaderBuilder::try_new(file).unwrap()
}

fn read_parquet(bytes: &[u8]) -> Vec<RecordBatch> {
    let batches = reader(bytes).build().unwrap();
    batches.collect::<std::result::Result<_, _>>().unwrap()
}

fn metadata_of(bytes: &[u8]) -> ParquetMetaData {
    reader(bytes).metadata().as_ref().clone()
}

/// The one batch of a file (all tests' files but one are below the row-group cap).
fn read_one(o: &TableObject) -> RecordBatch {
    let mut batches = read_parquet(&o.bytes);
    assert_eq!(batches.len(), 1, "{}", o.key);
    batches.pop().unwrap()
}

fn dt_of(o: &TableObject) -> &str {
    &o.key.split("dt=").nth(1).unwrap()[..10]
}

// ---- tables from the model ---------------------------------------------------------------

#[test]
fn every_observation_is_a_row() {
    let profile = toy_profile(&[(1, NOON), (2, NOON + 500 * MS)]);
    let plans = plans_of(&profile);
    assert_eq!(plans.len(), 2, "one series, one window, per process");
    let t = build_tables(&SOURCE, &inputs(&plans)).unwrap();
    let (p, values) = (&t.profiles, i64s(&t.samples, "value"));
    assert_eq!(p.num_rows(), 2);
    assert_eq!(values.len(), 12, "samples without a stack too");
    for (pid, plan) in [1, 2].into_iter().zip(&plans) {
        let row = rows_where(p, "profile_id", &plan.profile_id);
        let rows = rows_where(&t.samples, "profile_id", &plan.profile_id);
        let pid_of = |s: &Sample| profile.process(profile.thread(s.thread).process).pid;
        let model = profile.samples().iter().filter(|s| pid_of(s) == Some(pid));
        let model: Vec<Option<i64>> = model.map(|s| Some(s.weight)).collect();
        assert_eq!(at(&values, &rows), model, "pid {pid}: in order");
        let weight = Some(sum(&model));
        assert_eq!(at(&i64s(p, "samples"), &row), [Some(6)]);
        assert_eq!(at(&i64s(p, "total_value"), &row), [weight]);
        assert_eq!(at(&i64s(p, "total_weight_ns"), &row), [weight]);
    }
    assert_eq!(i64s(&t.samples, "weight_ns"), values, "nanoseconds");

    // Profile ids: 32 hex digits, distinct, derived from the upload.
    let ids: BTreeSet<String> = plans.iter().map(|p| p.profile_id.clone()).collect();
    assert_eq!(ids.len(), 2);
    let hex = |id: &String| id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit());
    assert!(ids.iter().all(hex), "{ids:?}");
    let again = plans_of(&profile).into_iter().map(|p| p.profile_id);
    assert_eq!(again.collect::<BTreeSet<_>>(), ids);
    let other = plan_tables(&profile, "another-upload").unwrap();
    assert!(other.iter().all(|p| !ids.contains(&p.profile_id)));

    for (c, v) in [
        ("source_id", SOURCE.source_id),
        ("source_key", "uploads/toy.pb"),
        ("source_etag", "etag"),
        ("source_format", "test"),
        ("converter", "proflake test"),
        ("process_name", "toy"),
        ("sample_type", "cpu-clock"),
        ("sample_unit", "nanoseconds"),
        ("series_kind", "cpu_time"),
        ("timestamps", "recorded"),
        ("platform", "native"),
        ("release", "toy@1.0"),
    ] {
        assert_eq!(only(p, c), s(v), "{c}");
    }
    assert_eq!(only(p, "environment"), None);
    let service = [s("checkout"), s("profile-service")];
    assert_eq!(strs(p, "service"), service, "process's, else the profile's");
    assert_eq!(strs(p, "host"), [s("box-1"), s("profile-host")]);
    assert_eq!(i64s(p, "pid"), [Some(1), Some(2)]);
    assert_eq!(i64s(p, "period"), [Some(1_000_000); 2]);
    assert_eq!(i64s(p, "frequency_hz"), [None; 2]);
    let start = [NOON_US, NOON_US + 500_000];
    assert_eq!(times(p, "start_time"), start.map(Some));
    assert_eq!(times(p, "end_time"), start.map(|t| Some(t + 5000)));
    // Process attributes override the profile's, sorted by key.
    let attributes = "host.name=box-1; producer=toy; service.name=checkout";
    assert_eq!(map_text(p, "attributes", 0), s(attributes));
    let attributes = "host.name=profile-host; producer=toy; service.name=profile-service";
    assert_eq!(map_text(p, "attributes", 1), s(attributes));
}

#[test]
fn upload_service_labels_and_platform_win() {
    let profile = toy_profile(&[(1, NOON)]);
    let plans = plans_of(&profile);
    // A label of the upload's joins the attributes, and one the profile also has wins.
    let labels = std::collections::BTreeMap::from([
        ("producer".to_string(), "pyroscope".to_string()),
        ("team".to_string(), "ingest".to_string()),
    ]);
    let source = TableSource {
        service: Some("from-metadata"),
        labels: &labels,
        ..SOURCE
    };
    let t = build_tables(&source, &inputs(&plans)).unwrap();
    assert_eq!(only(&t.profiles, "service"), s("from-metadata"));
    assert_eq!(only(&t.function_rollup, "service"), s("from-metadata"));
    assert_eq!(only(&t.profiles, "platform"), s("native"));
    let attributes = "host.name=box-1; producer=pyroscope; service.name=checkout; team=ingest";
    assert_eq!(map_text(&t.profiles, "attributes", 0), s(attributes));

    // Without a platform in the metadata, the frames decide: the toy has a JVM frame.
    let mut derived = inputs(&plans);
    derived.iter_mut().for_each(|i| i.platform = None);
    let t = build_tables(&SOURCE, &derived).unwrap();
    assert_eq!(only(&t.profiles, "platform"), s("android"));
    assert_eq!(only(&t.function_rollup, "platform"), s("android"));
}

#[test]
fn stacks_are_a_tree_with_parents_first() {
    let profile = toy_profile(&[(1, NOON), (2, NOON)]);
    let plans = plans_of(&profile);
    let t = build_tables(&SOURCE, &inputs(&plans)).unwrap();
    let (st, f) = (&t.stacks, &t.frames);
    assert_eq!(only(st, "source_id"), s(SOURCE.source_id));
    let (ids, stack_ids) = (strs(st, "profile_id"), i32s(st, "stack_id"));
    let (parent, frame) = (i32s(st, "parent_id"), i32s(st, "frame_id"));
    let depth = i32s(st, "depth");
    // (profile, stack) → (parent, frame, depth)
    let mut nodes: HashMap<(String, i32), (Option<i32>, i32, i32)> = HashMap::new();
    let mut last: Option<(String, i32)> = None;
    for i in 0..st.num_rows() {
        let key = (ids[i].clone().unwrap(), stack_ids[i].unwrap());
        match &last {
            Some(prev) if prev.0 == key.0 => assert_eq!(key.1, prev.1 + 1, "dense ids"),
            _ => assert_eq!(key.1, 0, "ids start at 0 in each profile"),
        }
        assert!(last.as_ref().is_none_or(|prev| *prev < key), "sorted");
        match parent[i] {
            None => assert_eq!(depth[i], Some(0)),
            Some(pid) => {
                assert!(pid < key.1, "parent before child");
                let (_, _, parent_depth) = nodes[&(key.0.clone(), pid)];
                assert_eq!(parent_depth + 1, depth[i].unwrap());
            }
        }
        let node = (parent[i], frame[i].unwrap(), depth[i].unwrap());
        nodes.insert(key.clone(), node);
        last = Some(key);
    }
    let (fp, fid, fname) = (strs(f, "profile_id"), i32s(f, "frame_id"), strs(f, "name"));
    let mut frame_names: HashMap<(String, i32), String> = HashMap::new();
    for i in 0..f.num_rows() {
        let name = fname[i].clone().unwrap();
        frame_names.insert((fp[i].clone().unwrap(), fid[i].unwrap()), name);
    }
    for ((profile_id, _), (_, frame_id, _)) in &nodes {
        assert!(frame_names.contains_key(&(profile_id.clone(), *frame_id)));
    }
    // Every row's stack exists in its profile and spells the model sample's stack.
    let mut by_time: HashMap<(String, i64), Sample> = HashMap::new();
    for p in &plans {
        for s in &p.samples {
            let s = profile.samples().get(s as usize);
            by_time.insert((p.profile_id.clone(), s.time.unwrap() / 1000), s);
        }
    }
    let (ids, stack_ids) = (strs(&t.samples, "profile_id"), i32s(&t.samples, "stack_id"));
    let ts = times(&t.samples, "timestamp");
    for row in 0..t.samples.num_rows() {
        let profile_id = ids[row].clone().unwrap();
        let mut node = stack_ids[row];
        let mut names = Vec::new();
        while let Some(n) = node {
            let (parent, frame, _) = nodes[&(profile_id.clone(), n)];
            names.push(frame_names[&(profile_id.clone(), frame)].clone());
            node = parent;
        }
        let model = by_time[&(profile_id, ts[row].unwrap())].stack;
        let name = |h| expected_name(&profile, profile.frame(h));
        let model: Option<Vec<String>> = model.map(|l| profile.stack_frames(l).map(name).collect());
        assert_eq!(names, model.unwrap_or_default(), "row {row}");
    }
}

#[test]
fn frame_columns() {
    let t = tables_of(&toy_profile(&[(1, NOON)]));
    let f = &t.frames;
    let names = strs(f, "name");
    let row = |name: &str| {
        let found = names.iter().position(|n| n.as_deref() == Some(name));
        found.unwrap_or_else(|| panic!("no frame {name} in {names:?}"))
    };
    let text = |c: &str, row: usize| strs(f, c)[row].clone();
    let int = |c: &str, row: usize| i64s(f, c)[row];
    assert_eq!(i32s(f, "frame_id"), (0..8).map(Some).collect::<Vec<_>>());
    let main = row("main");
    assert_eq!(main, 0, "numbered in the order first reached, root first");
    let leaf = row("libc.so.6!0x7f001234");
    assert_eq!(text("kind", leaf), s("native"));
    assert_eq!(text("function", leaf), None);
    assert_eq!(int("address", leaf), Some(0x7f00_1234));
    assert_eq!(text("address_space", leaf), s("absolute"));
    let libc = s("/usr/lib/x86_64-linux-gnu/libc.so.6");
    assert_eq!(text("image_path", leaf), libc);
    assert_eq!(text("build_id", leaf), s("b03e4a7f"));
    let debug_id = s("7f4a3eb0-0000-0000-0000-000000000000");
    assert_eq!(text("debug_id", leaf), debug_id);
    assert_eq!(int("image_start", leaf), Some(0x7f00_0000));
    assert_eq!(int("image_end", leaf), Some(0x7f10_0000));
    assert_eq!(int("image_file_offset", leaf), Some(0x1000));
    let symbolized = column(f, "symbolized").as_boolean();
    assert!(!symbolized.value(leaf));
    assert!(symbolized.value(main));

    assert_eq!(int("image_end", main), None, "unknown end");
    assert_eq!(int("image_start", main), Some(0x40_0000));
    assert_eq!(text("file", main), s("main.c"));
    let line_column = (i32s(f, "line")[main], i32s(f, "column")[main]);
    assert_eq!(line_column, (Some(10), None));
    assert_eq!(text("build_id", main), None);
    row("toy.exe!0x10"); // the base name of a Windows path
    let kernel = row("?!0xbeef");
    assert_eq!(text("kind", kernel), s("kernel"));
    assert_eq!(text("address_space", kernel), s("image_relative"));
    assert_eq!(text("image_path", kernel), None);
    assert_eq!(text("kind", row("<unknown>")), s("unknown"));
    assert_eq!(text("kind", row("wasm_fn")), s("wasm"));
    let jvm = row("Foo.bar");
    assert_eq!(text("kind", jvm), s("jvm"));
    assert_eq!(text("module", jvm), s("com.example.Foo"));

    let work = row("work");
    assert_eq!(text("system_name", work), s("_Z4workv"));
    let inlined = column(f, "inlined_into").as_list::<i32>();
    assert_eq!(inlined.null_count(), 0, "never null");
    assert_eq!(inlined.value(main).len(), 0, "empty for most frames");
    let calls = inlined.value(work);
    let calls = calls.as_struct();
    assert_eq!(calls.len(), 2);
    let function = calls.column(0).as_string::<i32>();
    assert_eq!((function.value(0), function.is_null(1)), ("outer", true));
    assert_eq!(calls.column(1).as_string::<i32>().value(0), "a.c");
    let (line, col) = (calls.column(2), calls.column(3));
    assert_eq!(line.as_primitive::<Int32Type>().value(0), 3);
    assert_eq!(col.as_primitive::<Int32Type>().value(0), 4);
    assert!(line.is_null(1) && col.is_null(1));
}

#[test]
fn high_addresses_keep_their_bits() {
    let mut p = Profile::new("test");
    let kallsyms = Some(p.intern("[kernel.kallsyms]"));
    let mut image = Image::new(kallsyms, 0xffff_ffff_8000_0000, 0xffff_ffff_c000_0000);
    image.file_offset = 1 << 63;
    let image = p.add_image(image);
    let mut kernel = Frame::new(FrameKind::Kernel);
    kernel.image = Some(image);
    kernel.address = Some(FrameAddress::Absolute(0xffff_ffff_8123_4567));
    let kernel = p.add_frame(kernel);
    let mut top = Frame::new(FrameKind::Unknown);
    top.address = Some(FrameAddress::Absolute(u64::MAX));
    let top = p.add_frame(top);
    let leaf = p.add_stack_from_root([kernel, top]);
    let cpu = cpu_series(&mut p, "ns");
    sample(&mut p, (4, 4), leaf, (1, cpu), Some(NOON));
    let plans = plans_of(&p);
    let objects = write_tables(&SOURCE, &inputs(&plans)).unwrap();
    let written = build_tables(&SOURCE, &inputs(&plans)).unwrap().frames;
    let read = read_one(objects.iter().find(|o| o.table == Table::Frames).unwrap());
    for f in [&written, &read] {
        let kernel = s("[kernel.kallsyms]!0xffffffff81234567");
        assert_eq!(strs(f, "name"), [kernel, s("?!0xffffffffffffffff")]);
        let bits = |c: &str| i64s(f, c)[0].map(|v| v as u64);
        assert_eq!(bits("address"), Some(0xffff_ffff_8123_4567));
        assert!(i64s(f, "address")[0].unwrap() < 0, "a negative BIGINT");
        assert_eq!(i64s(f, "address")[1], Some(-1), "u64::MAX");
        assert_eq!(bits("image_start"), Some(0xffff_ffff_8000_0000));
        assert_eq!(bits("image_end"), Some(0xffff_ffff_c000_0000));
        assert_eq!(bits("image_file_offset"), Some(1 << 63));
        assert_eq!(i64s(f, "image_file_offset")[0], Some(i64::MIN));
    }
}

/// A profile whose stack is symbolized (by build ID): the leaf with a three-level inline chain,
/// its function start image-relative, then a frame whose image has no debug file yet, then one
/// the input named (not attempted).
fn symbolized_profile() -> Profile {
    let mut p = Profile::new("test");
    let path = p.intern("/data/app/lib/arm64/libgame.so");
    let mut image = Image::new(Some(path), 0x7000_0000, 0x7010_0000);
    (image.code_id, image.debug_id) = ids_from_build_id(&[0xde, 0xad, 0xbe, 0xef]);
    let image = p.add_image(image);
    let mut leaf = Frame::new(FrameKind::Native);
    leaf.image = Some(image);
    leaf.address = Some(FrameAddress::ImageRelative(0x1234));
    leaf.function = Some(p.intern("vec_len"));
    leaf.system_name = Some(p.intern("_ZN3vec3lenEv"));
    leaf.file = Some(p.intern("/src/vec.h"));
    leaf.line = Some(7);
    let mut call = |function: &str, system_name: Option<&str>, file: &str, line| InlinedCall {
        function: Some(p.intern(function)),
        system_name: system_name.map(|s| p.intern(s)),
        file: Some(p.intern(file)),
        line: Some(line),
        column: None,
    };
    leaf.inlined_into = Box::new([
        call("update", Some("_Z6updatev"), "/src/game.cc", 40),
        call("tick", None, "/src/main.cc", 12),
    ]);
    leaf.function_start = Some(0x1200);
    leaf.symbol_status = Some(SymbolStatus::Symbolicated);
    let leaf = p.add_frame(leaf);
    let mut unknown = Frame::new(FrameKind::Native);
    unknown.image = Some(image);
    unknown.address = Some(FrameAddress::ImageRelative(0x5678));
    unknown.symbol_status = Some(SymbolStatus::UnknownImage);
    let unknown = p.add_frame(unknown);
    let mut named = Frame::new(FrameKind::Native);
    named.function = Some(p.intern("main"));
    let named = p.add_frame(named);
    let stack = p.add_stack_from_root([named, unknown, leaf]);
    let cpu = cpu_series(&mut p, "ns");
    sample(&mut p, (4, 4), stack, (5, cpu), Some(NOON));
    p
}

#[test]
fn symbolization_columns() {
    let p = symbolized_profile();
    let t = tables_of(&p);
    let f = &t.frames;
    assert_eq!(
        strs(f, "name"),
        [s("main"), s("libgame.so!0x5678"), s("vec_len")]
    );
    assert_eq!(
        strs(f, "symbol_status"),
        [None, s("unknown_image"), s("symbolicated")]
    );
    assert_eq!(
        i64s(f, "function_start"),
        [None, None, Some(0x1200)],
        "in the space of address"
    );
    assert_eq!(strs(f, "address_space")[2], s("image_relative"));
    assert_eq!(strs(f, "system_name")[2], s("_ZN3vec3lenEv"));
    let symbolized = column(f, "symbolized").as_boolean();
    let symbolized: Vec<bool> = (0..3).map(|i| symbolized.value(i)).collect();
    assert_eq!(
        symbolized,
        [true, false, true],
        "a function name, however got"
    );
    let inlined = column(f, "inlined_into").as_list::<i32>();
    let calls = inlined.value(2);
    let calls = calls.as_struct();
    let field = |name: &str| -> Vec<Option<String>> {
        let c = calls.column_by_name(name).unwrap().as_string::<i32>();
        (0..c.len())
            .map(|i| c.is_valid(i).then(|| c.value(i).to_owned()))
            .collect()
    };
    assert_eq!(field("function"), [s("update"), s("tick")]);
    assert_eq!(field("system_name"), [s("_Z6updatev"), None]);
    assert_eq!(field("file"), [s("/src/game.cc"), s("/src/main.cc")]);

    // The rollup counts the inlined callers by their demangled names.
    let rollup = rollup_of(&t.function_rollup);
    let names: BTreeSet<&str> = rollup.keys().map(|k| k.3.as_str()).collect();
    let expected = ["libgame.so!0x5678", "main", "tick", "update", "vec_len"];
    assert_eq!(names, expected.into_iter().collect());

    // A file of an older writer, without the new columns and struct field, reads as NULLs.
    let schema = f.schema();
    let keep: Vec<usize> = (0..schema.fields().len())
        .filter(|&i| {
            !["symbol_status", "function_start"].contains(&schema.field(i).name().as_str())
        })
        .collect();
    let mut old = f.project(&keep).unwrap();
    let at = old.schema().index_of("inlined_into").unwrap();
    let old_calls = calls_without_system_name(old.column(at));
    let mut columns = old.columns().to_vec();
    columns[at] = old_calls;
    let mut fields: Vec<_> = old.schema().fields().iter().cloned().collect();
    fields[at] = Arc::new(arrow_schema::Field::new(
        "inlined_into",
        columns[at].data_type().clone(),
        false,
    ));
    old = RecordBatch::try_new(Arc::new(arrow_schema::Schema::new(fields)), columns).unwrap();
    let conformed = read::conform(Table::Frames, &old).unwrap();
    assert_eq!(conformed.schema(), Table::Frames.schema());
    assert_eq!(strs(&conformed, "symbol_status"), [None, None, None]);
    assert_eq!(i64s(&conformed, "function_start"), [None, None, None]);
    let inlined = column(&conformed, "inlined_into").as_list::<i32>();
    let calls = inlined.value(2);
    let calls = calls.as_struct();
    assert_eq!(calls.column_by_name("system_name").unwrap().null_count(), 2);
    let functions = calls.column_by_name("function").unwrap().as_string::<i32>();
    assert_eq!(functions.value(1), "tick");
}

/// `frames.inlined_into` as written before its struct had `system_name`.
fn calls_without_system_name(list: &arrow_array::ArrayRef) -> arrow_array::ArrayRef {
    let list = list.as_list::<i32>();
    let calls = list.values().as_struct();
    let (fields, columns): (Vec<_>, Vec<_>) = calls
        .fields()
        .iter()
        .zip(calls.columns())
        .filter(|(f, _)| f.name() != "system_name")
        .map(|(f, c)| (f.clone(), c.clone()))
        .unzip();
    let calls = arrow_array::StructArray::try_new(fields.into(), columns, None).unwrap();
    let item = Arc::new(arrow_schema::Field::new(
        "element",
        calls.data_type().clone(),
        false,
    ));
    let list = arrow_array::ListArray::try_new(item, list.offsets().clone(), Arc::new(calls), None)
        .unwrap();
    Arc::new(list)
}

#[test]
fn sample_columns() {
    let t = tables_of(&toy_profile(&[(1, NOON)]));
    let sa = &t.samples;
    let ts: Vec<_> = (0..6).map(|i| Some(NOON_US + i * 1000)).collect();
    assert_eq!(times(sa, "timestamp"), ts);
    assert_eq!(only(sa, "source_id"), s(SOURCE.source_id));
    assert_eq!(only(sa, "sample_type"), s("cpu-clock"));
    assert_eq!(only(sa, "sample_unit"), s("nanoseconds"));
    assert_eq!(i64s(sa, "thread_id"), [10, 11, 10, 11, 10, 11].map(Some));
    assert_eq!(strs(sa, "thread_name")[..2], [s("worker"), None]);
    let values: Vec<Option<i64>> = (1..=6).map(|i| Some(i * MS)).collect();
    assert_eq!(i64s(sa, "value"), values);
    assert_eq!(i64s(sa, "weight_ns"), values);
    assert_eq!(i32s(sa, "cpu"), (0..6).map(Some).collect::<Vec<_>>());
    // Input order, numbers with units, the first value of a repeated key.
    let labels = "http.route=/checkout; alloc=42 bytes; n=-7";
    assert_eq!(map_text(sa, "labels", 0), s(labels));
    assert_eq!(map_text(sa, "labels", 1), None);
    assert_eq!(strs(sa, "trace_id")[..2], [None, Some("ab".repeat(16))]);
    assert_eq!(strs(sa, "span_id")[1], Some("0c".repeat(8)));
    let stack_ids = i32s(sa, "stack_id");
    assert_eq!(stack_ids[0], stack_ids[3], "samples 0 and 3 share a stack");
    assert_ne!(stack_ids[0], stack_ids[1]);
    assert_eq!(stack_ids[4], None, "the sample without a stack is a row");
    let modes = [s("kernel"), s("user"), None, s("kernel"), s("user"), None];
    assert_eq!(strs(sa, "cpu_mode"), modes);
    let unwind = strs(sa, "unwind_error");
    assert_eq!(
        unwind,
        [None, None, s("max_frames_exceeded"), None, None, None]
    );
    let counters = [
        Some(0),
        Some(1_000),
        Some(2_000),
        Some(3_000),
        None,
        Some(-2),
    ];
    assert_eq!(i64s(sa, "counter"), counters);
}

#[test]
fn samples_and_profiles_are_sorted() {
    // Two processes sampled at interleaved instants: rows sort by time, then profile_id.
    let t = tables_of(&toy_profile(&[(1, NOON + 3 * MS / 2), (2, NOON)]));
    let ts = times(&t.samples, "timestamp");
    let ids = strs(&t.samples, "profile_id");
    let keys: Vec<(Option<i64>, &Option<String>)> = ts.iter().copied().zip(&ids).collect();
    assert!(is_sorted(&keys), "{keys:?}");
    assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), 2);
    assert_eq!(ids[0], ids[1], "process 2's first two samples come first");
    assert_ne!(ids[1], ids[2]);
    let start = times(&t.profiles, "start_time");
    assert_eq!(start, [Some(NOON_US), Some(NOON_US + 1500)]);
    assert_eq!(i64s(&t.profiles, "pid"), [Some(2), Some(1)]);
}

#[test]
fn sample_rows_merge_as_a_stable_sort_of_every_row() {
    // Two processes, two series: four profiles, with instants repeated within and across
    // profiles.
    let mut p = Profile::new("test");
    let cpu = cpu_series(&mut p, "nanoseconds");
    let wall = series_of(&mut p, SeriesKind::WallTime, "wall", "nanoseconds", None);
    let wall = p.add_series(wall);
    let st = stack(&mut p, &["main", "work"]);
    let taken = [
        (1, 5),
        (1, 3),
        (2, 3),
        (1, 3),
        (2, 1),
        (1, 9),
        (2, 5),
        (2, 5),
        (1, 1),
        (1, 3),
    ];
    for (i, &(pid, ms)) in taken.iter().enumerate() {
        let series = if i % 3 == 0 { wall } else { cpu };
        let time = Some(NOON + ms * MS);
        sample(&mut p, (pid, pid * 10), st, (i as i64 + 1, series), time);
    }
    let mut plans = plans_of(&p);
    assert_eq!(plans.len(), 4);
    // Plans come in time order; one that does not is sorted before the merge.
    let longest = plans.iter_mut().max_by_key(|p| p.samples.len()).unwrap();
    let mut reversed: Vec<u32> = longest.samples.iter().collect();
    reversed.reverse();
    longest.samples = reversed.into_iter().collect();
    assert!(!longest
        .samples
        .iter()
        .is_sorted_by_key(|s| p.samples().time(s as usize)));
    let inputs = inputs(&plans);
    let (profiles, trees): (Vec<TableProfile>, Vec<_>) = inputs
        .iter()
        .map(|c| TableProfile::new(&SOURCE, c, None))
        .unzip();
    // The merge builds each profile's tree itself, and drops it after its last sample.
    let merged: Vec<SampleRow> = sample_rows(&profiles, |_| true).collect();
    let mut sorted: Vec<SampleRow> = profiles
        .iter()
        .zip(&trees)
        .enumerate()
        .flat_map(|(i, (profile, tree))| {
            let time_us = |s: u32| p.samples().time(s as usize).map(|t| t.div_euclid(1000));
            let stack_id = |s: u32| p.samples().stack(s as usize).and_then(|h| tree.stack_id(h));
            profile.plan.samples.iter().map(move |s| SampleRow {
                profile: i,
                time_us: time_us(s),
                index: s as usize,
                stack_id: stack_id(s),
            })
        })
        .collect();
    assert!(sorted.iter().any(|r| r.stack_id.is_some_and(|id| id > 0)));
    sorted.sort_by(|a, b| {
        let id = |r: &SampleRow| profiles[r.profile].profile_id();
        a.time_us.cmp(&b.time_us).then_with(|| id(a).cmp(id(b)))
    });
    assert_eq!(merged, sorted);
    assert_eq!(merged.len(), taken.len());
}

#[test]
fn rollup_adds_up() {
    let profile = toy_profile(&[(1, NOON), (2, NOON + HOUR_NS), (3, NOON + 10 * MS)]);
    let t = tables_of(&profile);
    let r = &t.function_rollup;
    let checkout = |pid: Option<i64>| pid == Some(1);
    let service = |pid| {
        s(if checkout(pid) {
            "checkout"
        } else {
            "profile-service"
        })
    };
    assert_eq!(rollup_of(r), expected_rollup(&profile, service));
    let (values, stack_ids) = (i64s(&t.samples, "value"), i32s(&t.samples, "stack_id"));
    let stacked: Vec<usize> = (0..values.len())
        .filter(|&i| stack_ids[i].is_some())
        .collect();
    assert_eq!(stacked.len(), 15, "five in each of three processes");
    assert_eq!(sum(&i64s(r, "self_value")), sum(&at(&values, &stacked)));
    assert_eq!(sum(&i64s(r, "self_rows")), 15);
    // Keys: (hour, service, function) sorted.
    let (hours, services, functions) = (times(r, "hour"), strs(r, "service"), strs(r, "function"));
    let keys: Vec<_> = (0..r.num_rows())
        .map(|i| (hours[i], &services[i], &functions[i]))
        .collect();
    assert!(is_sorted(&keys), "{keys:?}");
    let hours: BTreeSet<_> = hours.into_iter().flatten().collect();
    assert_eq!(hours, BTreeSet::from([NOON_US, NOON_US + HOUR_US]));
    // Processes 1 and 3 share noon but not a service.
    let rollup = rollup_of(r);
    let sums = |function: &str| rollup[&key(NOON_US, Some("checkout"), "cpu-clock", function)];
    // Every stacked sample has main at its root: total = all its value, self = none.
    assert_eq!(sums("main"), [0, 16 * MS, 0, 5]);
    // work → work counts once for the recursive sample.
    assert_eq!(sums("work"), [2 * MS, (1 + 2 + 4) * MS, 1, 3]);
    // work's code was inlined into `outer` and an unnamed function: both are on its stacks.
    assert_eq!(sums("outer"), [0, (1 + 2 + 4) * MS, 0, 3]);
    assert_eq!(sums("<unknown>")[3], 4, "once per sample");
    assert_eq!(sums("libc.so.6!0x7f001234"), [5 * MS, 5 * MS, 2, 2]);
    for (c, v) in [
        ("platform", "native"),
        ("release", "toy@1.0"),
        ("sample_type", "cpu-clock"),
        ("sample_unit", "nanoseconds"),
        ("source_id", SOURCE.source_id),
    ] {
        assert_eq!(only(r, c), s(v), "{c}");
    }
    assert_eq!(only(r, "environment"), None);
}

// ---- series ----------------------------------------------------------------------------

#[test]
fn series_are_separate_profiles() {
    let (cpu, wall, other) = (SeriesKind::CpuTime, SeriesKind::WallTime, SeriesKind::Other);
    // (sample_type, sample_unit, kind, frequency, series_kind, ns per unit of value)
    let cases = [
        ("cpu", "nanoseconds", cpu, None, "cpu_time", Some(1)),
        ("alloc_space", "bytes", other, None, "other", None),
        ("wall", "ms", wall, None, "wall_time", Some(MS)),
        ("ticks", "count", wall, Some(250), "wall_time", Some(4 * MS)),
        ("cpu_samples", "count", cpu, None, "cpu_time", None),
        ("alloc_objects", "count", other, Some(100), "other", None),
        ("", "", other, None, "other", None),
    ];
    let mut p = Profile::new("test");
    let mut handles = Vec::new();
    for &(name, unit, kind, hz, _, _) in &cases {
        let series = series_of(&mut p, kind, name, unit, hz);
        handles.push(p.add_series(series));
    }
    let compute = stack(&mut p, &["main", "compute"]);
    let stacks = [compute, stack(&mut p, &["main", "grow"])];
    for k in 0..21 {
        let (thread, weight) = ((5, 50 + k as i64 % 3), 4096 + k as i64);
        let (series, time) = (handles[k % 7], Some(NOON + k as i64 * MS));
        sample(&mut p, thread, stacks[k % 2], (weight, series), time);
    }
    let plans = plans_of(&p);
    assert_eq!(plans.len(), 7, "one profile per series");
    let t = build_tables(&SOURCE, &inputs(&plans)).unwrap();
    let (pr, sa) = (&t.profiles, &t.samples);
    assert_eq!(sa.num_rows(), 21);
    let ids = strs(pr, "profile_id");
    assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), 7);
    let values = i64s(sa, "value");
    // Series i starts at NOON + i ms: profiles come in series order.
    for (i, &(name, unit, _, frequency_hz, kind, ns)) in cases.iter().enumerate() {
        let of_series = p.samples().iter().filter(|s| s.series == handles[i]);
        let model: Vec<Option<i64>> = of_series.map(|s| Some(s.weight)).collect();
        let rows = rows_where(sa, "profile_id", ids[i].as_deref().unwrap());
        assert_eq!(at(&values, &rows), model, "{name}: exact, in order");
        assert_eq!(at(&strs(sa, "sample_type"), &rows), vec![s(name); 3]);
        assert_eq!(at(&strs(sa, "sample_unit"), &rows), vec![s(unit); 3]);
        let weight_ns: Vec<_> = model.iter().map(|v| ns.map(|f| v.unwrap() * f)).collect();
        assert_eq!(at(&i64s(sa, "weight_ns"), &rows), weight_ns, "{name}");
        assert_eq!(strs(pr, "sample_type")[i], s(name));
        assert_eq!(strs(pr, "sample_unit")[i], s(unit));
        assert_eq!(strs(pr, "series_kind")[i], s(kind), "{name}");
        let frequency_hz = frequency_hz.map(|f: u64| f as i64);
        assert_eq!(i64s(pr, "frequency_hz")[i], frequency_hz);
        assert_eq!(i64s(pr, "samples")[i], Some(3));
        assert_eq!(i64s(pr, "total_value")[i], Some(sum(&model)));
        let total_ns = ns.map(|_| sum(&weight_ns));
        assert_eq!(i64s(pr, "total_weight_ns")[i], total_ns, "{name}");
    }
    let rollup = rollup_of(&t.function_rollup);
    assert_eq!(rollup, expected_rollup(&p, |_| None));
    let main_alloc = rollup[&key(NOON_US, None, "alloc_space", "main")];
    assert_eq!(main_alloc, [0, 3 * 4096 + 1 + 8 + 15, 0, 3]);

    // Sample v2 carries only the CPU series; the tables keep them all.
    let v2 = plan_sample_v2(&p, &UploadMetadata::default(), SOURCE.source_id).unwrap();
    let left = &v2.series[handles[1].index()].left_out;
    assert_eq!(left.get(left_out::SERIES_NOT_CARRIED), Some(&3));
}

// ---- what Sample v2 leaves out -------------------------------------------------------------

#[test]
fn lone_thread_samples_keep_their_rows() {
    let mut p = Profile::new("test");
    let cpu = cpu_series(&mut p, "nanoseconds");
    let leaf = stack(&mut p, &["main", "run"]);
    for i in 0..3 {
        sample(&mut p, (9, 90), leaf, (MS, cpu), Some(NOON + i * 10 * MS));
    }
    sample(&mut p, (9, 91), leaf, (2 * MS, cpu), Some(NOON + 5 * MS));
    sample(&mut p, (8, 80), leaf, (3 * MS, cpu), Some(NOON + 7 * MS));

    let v2 = plan_sample_v2(&p, &UploadMetadata::default(), SOURCE.source_id).unwrap();
    let in_chunks = v2.chunks.iter().flat_map(|c| c.samples.iter(&p));
    let tids: Vec<_> = in_chunks
        .map(|s| p.thread(p.samples().thread(s.index)).tid)
        .collect();
    assert_eq!(tids, [Some(90); 3], "Relay drops lone threads");
    assert_eq!(v2.series[0].left_out.get(left_out::LONE_THREAD), Some(&2));

    let t = tables_of(&p);
    assert_eq!(t.samples.num_rows(), 5);
    assert_eq!(t.profiles.num_rows(), 2, "process 8's one sample too");
    let threads = i64s(&t.samples, "thread_id");
    let (stack_ids, values) = (i32s(&t.samples, "stack_id"), i64s(&t.samples, "value"));
    for (tid, value) in [(91, 2 * MS), (80, 3 * MS)] {
        let row = threads.iter().position(|&t| t == Some(tid)).unwrap();
        assert!(stack_ids[row].is_some(), "{tid}");
        assert_eq!(values[row], Some(value));
    }
    // Neither process names a service: their rows share keys and add up.
    let rollup = rollup_of(&t.function_rollup);
    assert_eq!(rollup, expected_rollup(&p, |_| None));
    let run = rollup[&key(NOON_US, None, "cpu", "run")];
    assert_eq!(run, [8 * MS, 8 * MS, 5, 5]);
}

#[test]
fn aggregated_samples_are_one_row_each() {
    let mut p = Profile::new("test");
    let start = NOON + 30 * 60 * SEC + 123 * MS; // 12:30:00.123
    p.start_time = Some(start);
    let cpu = cpu_series(&mut p, "nanoseconds");
    let hot = stack(&mut p, &["main", "hot"]);
    let cold = stack(&mut p, &["main", "cold"]);
    let big = 1_i64 << 40;
    for (leaf, weight) in [(hot, 5), (cold, big), (hot, 7), (None, 3)] {
        sample(&mut p, (6, 60), leaf, (weight, cpu), None);
    }
    // The same series also has timed samples, two hours later: a profile of their own.
    let later = NOON + 2 * HOUR_NS;
    sample(&mut p, (6, 60), hot, (11, cpu), Some(later + MS));
    sample(&mut p, (6, 60), cold, (13, cpu), Some(later + 2 * MS));

    let plans = plans_of(&p);
    assert_eq!(plans.len(), 2);
    let t = build_tables(&SOURCE, &inputs(&plans)).unwrap();
    let (pr, sa) = (&t.profiles, &t.samples);
    let (start_us, later_us) = (start / 1000, later / 1000);
    assert_eq!(strs(pr, "timestamps"), [s("aggregated"), s("recorded")]);
    // Each row names what placed it: the source says the aggregated samples' start came
    // from the arrival, the recorded times from the input.
    assert_eq!(strs(pr, "clock_source"), [s("arrival"), s("input")]);
    let starts = [Some(start_us), Some(later_us + 1000)];
    assert_eq!(times(pr, "start_time"), starts);
    assert_eq!(times(pr, "end_time")[0], Some(start_us));
    assert_eq!(i64s(pr, "samples"), [Some(4), Some(2)]);
    let totals = [Some(5 + big + 7 + 3), Some(24)];
    assert_eq!(i64s(pr, "total_value"), totals);
    assert_eq!(i64s(pr, "total_weight_ns"), totals);

    assert_eq!(sa.num_rows(), 6, "never expanded");
    let ts = times(sa, "timestamp");
    assert_eq!(ts[..4], [None; 4], "NULL for aggregated samples, first");
    assert_eq!(ts[4..], [Some(later_us + 1000), Some(later_us + 2000)]);
    let values = [5, big, 7, 3, 11, 13].map(Some);
    assert_eq!(i64s(sa, "value"), values, "exact, input order");
    assert_eq!(i64s(sa, "weight_ns"), values);
    assert_eq!(i32s(sa, "stack_id")[3], None);
    let ids = strs(sa, "profile_id");
    assert!(ids[..4].iter().all(|id| *id == strs(pr, "profile_id")[0]));

    // Aggregated samples roll up into the hour of the profile's start.
    let rollup = rollup_of(&t.function_rollup);
    assert_eq!(rollup, expected_rollup(&p, |_| None));
    let sums = |hour: i64, f: &str| rollup[&key(hour, None, "cpu", f)];
    assert_eq!(sums(NOON_US, "main"), [0, 5 + big + 7, 0, 3]);
    assert_eq!(sums(NOON_US, "hot"), [12, 12, 2, 2]);
    assert_eq!(sums(later_us, "main"), [0, 24, 0, 2]);
    let hours: BTreeSet<i64> = rollup.keys().map(|k| k.0).collect();
    assert_eq!(hours, BTreeSet::from([NOON_US, later_us]));
}

#[test]
fn plans_need_times_on_the_wall_clock() {
    let mut p = Profile::new("test");
    let cpu = cpu_series(&mut p, "nanoseconds");
    sample(&mut p, (1, 1), None, (1, cpu), None);
    let err = plan_tables(&p, SOURCE.source_id).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NoStartTime), "{err}");
    p.start_time = Some(NOON);
    assert_eq!(plans_of(&p).len(), 1);
    p.timestamps = Timestamps::TraceClock("boot".into());
    let err = plan_tables(&p, SOURCE.source_id).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NoWallClock { .. }), "{err}");

    // An empty profile has no table profiles, and no files.
    assert!(plans_of(&Profile::new("test")).is_empty());
    let t = build_tables(&SOURCE, &[]).unwrap();
    assert!(Table::ALL.iter().all(|&k| table(&t, k).num_rows() == 0));
    assert!(write_tables(&SOURCE, &[]).unwrap().is_empty());
}

#[test]
fn long_recordings_split_into_windows() {
    let midnight = NOON + 12 * HOUR_NS;
    let t0 = midnight - 70 * SEC;
    let mut offsets: Vec<i64> = (0..15).map(|k| k * 10).collect();
    // After a gap, windows stay aligned to the first sample: 305 s and 359 s share one, 361 s
    // starts the next.
    offsets.extend([305, 359, 361]);
    let mut p = Profile::new("test");
    let cpu = cpu_series(&mut p, "nanoseconds");
    let leaf = stack(&mut p, &["main", "tick"]);
    for &o in &offsets {
        sample(&mut p, (2, 2), leaf, (MS, cpu), Some(t0 + o * SEC));
    }
    let plans = plans_of(&p);
    let rel = |t: i64| (t - t0) / SEC;
    let starts: Vec<i64> = plans.iter().map(|p| rel(p.start_ns)).collect();
    let ends: Vec<i64> = plans.iter().map(|p| rel(p.end_ns)).collect();
    let counts: Vec<usize> = plans.iter().map(|p| p.samples.len()).collect();
    assert_eq!(starts, [0, 60, 120, 305, 361]);
    assert_eq!(ends, [50, 110, 140, 359, 361]);
    assert_eq!(counts, [6, 6, 3, 2, 1]);
    let ids: BTreeSet<&str> = plans.iter().map(|p| p.profile_id.as_str()).collect();
    assert_eq!(ids.len(), 5);

    let objects = write_tables(&SOURCE, &inputs(&plans)).unwrap();
    let files = |table: Table| -> Vec<(&str, RecordBatch)> {
        let of_table = objects.iter().filter(|o| o.table == table);
        of_table.map(|o| (dt_of(o), read_one(o))).collect()
    };
    let (samples, profiles) = (files(Table::Samples), files(Table::Profiles));
    let days: Vec<&str> = samples.iter().map(|(d, _)| *d).collect();
    assert_eq!(days, ["2024-03-01", "2024-03-02"]);
    // Each profile's rows share one dt, its start's, though the second window runs past
    // midnight.
    let mut seen = BTreeSet::new();
    for ((day, sa), (profile_day, pr)) in samples.iter().zip(&profiles) {
        assert_eq!(day, profile_day);
        let in_samples: BTreeSet<_> = strs(sa, "profile_id").into_iter().collect();
        let in_profiles: BTreeSet<_> = strs(pr, "profile_id").into_iter().collect();
        assert_eq!(in_samples, in_profiles, "{day}");
        assert!(in_samples.iter().all(|id| seen.insert(id.clone())), "{day}");
        assert_eq!(sum(&i64s(pr, "samples")), sa.num_rows() as i64);
    }
    let first_day = &samples[0].1;
    assert_eq!(first_day.num_rows(), 12);
    let ts = times(first_day, "timestamp");
    assert!(ts.iter().any(|t| t.unwrap() >= midnight / 1000));
    let starts = times(&profiles[0].1, "start_time");
    assert_eq!(starts, [Some(t0 / 1000), Some((t0 + 60 * SEC) / 1000)]);
}

#[test]
fn samples_without_stacks() {
    let mut p = Profile::new("test");
    let cpu = cpu_series(&mut p, "ns");
    let process = p.add_process(None);
    let thread = p.add_thread(process, None);
    for i in 0..3 {
        let mut s = Sample::new(thread, None, 5, cpu);
        s.time = Some(NOON + i);
        p.add_sample(s);
    }
    let plans = plans_of(&p);
    let inputs = inputs(&plans);
    let t = build_tables(&SOURCE, &inputs).unwrap();
    assert_eq!(i32s(&t.samples, "stack_id"), [None; 3]);
    assert_eq!(i64s(&t.samples, "value"), [Some(5); 3]);
    assert_eq!(t.stacks.num_rows(), 0);
    assert_eq!(t.frames.num_rows(), 0);
    assert_eq!(t.function_rollup.num_rows(), 0, "no stack, no rollup");
    let pr = &t.profiles;
    assert_eq!((only(pr, "service"), only(pr, "host")), (None, None));
    assert_eq!(i64s(pr, "pid"), [None]);
    assert_eq!(map_text(pr, "attributes", 0), s(""));
    let objects = write_tables(&SOURCE, &inputs).unwrap();
    let tables: Vec<Table> = objects.iter().map(|o| o.table).collect();
    // Empty stacks and frames are still written; there is no rollup file.
    assert_eq!(tables, Table::ALL[..4]);
    let stacks = read_parquet(&objects[2].bytes);
    assert_eq!(stacks.iter().map(RecordBatch::num_rows).sum::<usize>(), 0);
}

// ---- a real input --------------------------------------------------------------------------

#[test]
fn pprof_values_are_exact() {
    let profile = pprof_fixture();
    let t = tables_of(&profile);
    let (pr, sa) = (&t.profiles, &t.samples);
    assert_eq!(sa.num_rows(), profile.samples().len());
    assert_eq!(only(pr, "timestamps"), s("aggregated"));
    let start_us = profile.start_time.unwrap() / 1000;
    assert!(times(pr, "start_time").iter().all(|&t| t == Some(start_us)));
    assert!(times(sa, "timestamp").iter().all(Option::is_none));
    // Per (type, unit): (rows, sum of values), from the model and from the table.
    type Sums = BTreeMap<(String, String), (usize, i64)>;
    let add = |sums: &mut Sums, name: &str, unit: &str, value: i64| {
        let e = sums.entry((name.to_owned(), unit.to_owned())).or_default();
        *e = (e.0 + 1, e.1 + value);
    };
    let (mut model, mut table) = (Sums::new(), Sums::new());
    for s in profile.samples() {
        let series = profile.series(s.series);
        let (name, unit) = (profile.str(series.name), profile.str(series.unit));
        add(&mut model, name, unit, s.weight);
    }
    let (types, units) = (strs(sa, "sample_type"), strs(sa, "sample_unit"));
    let values = i64s(sa, "value");
    for r in 0..sa.num_rows() {
        let (name, unit) = (types[r].as_deref().unwrap(), units[r].as_deref().unwrap());
        add(&mut table, name, unit, values[r].unwrap());
    }
    assert_eq!(table, model);
    let cpu = table[&("cpu".to_owned(), "nanoseconds".to_owned())];
    let counted = table[&("samples".to_owned(), "count".to_owned())];
    assert_eq!(table.len(), 2);
    assert_eq!(cpu.1, 1_760_000_000);
    assert_eq!(counted.1, 176, "1.76 s of CPU at 100 Hz");
    assert_eq!(cpu.0, counted.0, "one row per pprof sample and series");
    assert_eq!(sum(&i64s(pr, "total_value")), 1_760_000_000 + 176);
    // The CPU series is the one in nanoseconds; the counts are another series, without time.
    let series = [("cpu", "cpu_time", Some(cpu.1)), ("samples", "other", None)];
    for (sample_type, kind, weight_ns) in series {
        let row = rows_where(pr, "sample_type", sample_type);
        assert_eq!(at(&strs(pr, "series_kind"), &row), [s(kind)]);
        assert_eq!(at(&i64s(pr, "total_weight_ns"), &row), [weight_ns]);
    }
    let rollup = rollup_of(&t.function_rollup);
    let service = only(pr, "service");
    assert_eq!(rollup, expected_rollup(&profile, |_| service.clone()));
    let hours: BTreeSet<i64> = rollup.keys().map(|k| k.0).collect();
    let hour = start_us.div_euclid(HOUR_US) * HOUR_US;
    assert_eq!(hours, BTreeSet::from([hour]));
    // Go's pprof frames are symbolized.
    assert!(column(&t.frames, "symbolized").as_boolean().true_count() > 0);
}

// ---- Parquet files -------------------------------------------------------------------------

#[test]
fn parquet_round_trip() {
    // The toy has timed samples; pprof's are aggregated (NULL timestamps).
    let toy = toy_profile(&[(1, NOON), (2, NOON + 2 * HOUR_NS)]);
    for profile in [toy, pprof_fixture()] {
        let t = tables_of(&profile);
        // pprof has no instants or counters.
        let has = |kind: &Table| *kind != Table::Counters || !profile.marks().is_empty();
        for kind in Table::ALL.into_iter().filter(has) {
            let (name, batch, schema) = (kind.name(), table(&t, kind), kind.schema());
            // Only signed types, and `source_id` first.
            assert_eq!(schema.field(0).name(), "source_id");
            let types = format!("{:?}", schema.fields());
            assert!(!types.contains("UInt"), "{name}: {types}");

            let bytes = super::parquet_file::encode(kind, batch).unwrap();
            let back = read_parquet(&bytes);
            assert_eq!(back.len(), 1, "{name}");
            assert!(batch.num_rows() > 0, "{name}");
            assert_eq!(back[0].columns(), batch.columns(), "{name}");
            assert_eq!(back[0].schema(), schema, "{name}");

            let meta = metadata_of(&bytes);
            let kv = meta.file_metadata().key_value_metadata().unwrap();
            let kv: BTreeMap<&str, Option<&str>> = kv
                .iter()
                .map(|kv| (kv.key.as_str(), kv.value.as_deref()))
                .collect();
            assert_eq!(kv["proflake.schema_version"], Some("2"));
            assert_eq!(kv["proflake.table"], Some(name));
            let group = meta.row_group(0);
            let sorting = group.sorting_columns().unwrap();
            let leaf =
                |s: &SortingColumn| group.column(s.column_idx as usize).column_path().string();
            let sorted_by: Vec<String> = sorting.iter().map(leaf).collect();
            assert_eq!(sorted_by, kind.sort_columns(), "{name}");
            assert!(sorting.iter().all(|s| !s.descending && s.nulls_first));
            for column in group.columns() {
                let col = column.column_path().string();
                let zstd = matches!(column.compression(), Compression::ZSTD(_));
                assert!(zstd, "{col}");
                // parquet-rs writes no column index for a nested leaf without a single value
                // (pprof has no inlined column numbers): there is no min/max to record.
                let stats = column.statistics();
                let no_values = stats.is_some_and(|s| s.min_bytes_opt().is_none());
                let indexed = column.column_index_offset().is_some();
                assert!(indexed || (col.contains('.') && no_values), "{col}");
                let encodings: Vec<Encoding> = column.encodings().collect();
                let delta = "stack_id parent_id frame_id timestamp start_time";
                let dictionary = column.dictionary_page_offset().is_some();
                if delta.split(' ').any(|d| d == col) {
                    assert!(encodings.contains(&Encoding::DELTA_BINARY_PACKED), "{col}");
                    assert!(!dictionary, "{col}");
                } else if col == "profile_id" || col == "source_id" {
                    assert!(dictionary, "{col}");
                }
            }
        }
    }
}

#[test]
fn row_groups_are_capped() {
    // One thread sampled every 250 µs for 50 s: 200,000 rows in one profile.
    let mut p = Profile::new("test");
    let cpu = cpu_series(&mut p, "ns");
    let leaf = stack(&mut p, &["spin"]);
    let process = p.add_process(Some(3));
    let thread = p.add_thread(process, Some(3));
    for i in 0..200_000 {
        let mut s = Sample::new(thread, leaf, 250_000, cpu);
        s.time = Some(NOON + i * 250_000);
        p.add_sample(s);
    }
    let plans = plans_of(&p);
    assert_eq!(plans.len(), 1);
    let objects = write_tables(&SOURCE, &inputs(&plans)).unwrap();
    let samples = objects.iter().find(|o| o.table == Table::Samples).unwrap();
    assert_eq!(samples.rows, 200_000);
    let meta = metadata_of(&samples.bytes);
    let groups: Vec<i64> = meta.row_groups().iter().map(|g| g.num_rows()).collect();
    assert_eq!(groups, [131_072, 200_000 - 131_072]);
    // Built a few thousand rows at a time, the file is the one a single batch of every row
    // gives.
    let whole = build_tables(&SOURCE, &inputs(&plans)).unwrap().samples;
    assert_eq!(
        samples.bytes,
        parquet_file::encode(Table::Samples, &whole).unwrap()
    );
    let back = read_parquet(&samples.bytes);
    let rows: usize = back.iter().map(RecordBatch::num_rows).sum();
    assert_eq!(rows, 200_000);
    let value: i64 = back.iter().map(|b| sum(&i64s(b, "value"))).sum();
    assert_eq!(value, 200_000 * 250_000);
}

#[test]
fn one_file_per_table_and_day() {
    // Process 1 starts two ms before midnight and runs past it; process 2 samples the next
    // noon.
    let midnight = NOON + 12 * HOUR_NS;
    let profile = toy_profile(&[(1, midnight - 2 * MS), (2, midnight + 12 * HOUR_NS)]);
    let plans = plans_of(&profile);
    assert_eq!(plans.len(), 2);
    let inputs = inputs(&plans);
    let objects = write_tables(&SOURCE, &inputs).unwrap();
    let listed: Vec<(Table, &str)> = objects.iter().map(|o| (o.table, dt_of(o))).collect();
    let days = ["2024-03-01", "2024-03-02"];
    let per_day = |&t: &Table| days.map(|d| (t, d));
    let expected: Vec<(Table, &str)> = Table::ALL.iter().flat_map(per_day).collect();
    assert_eq!(listed, expected, "Table::ALL order, days ascending");
    for o in &objects {
        let (table, dt) = (o.table.name(), dt_of(o));
        let key = format!("tables/v2/{table}/dt={dt}/{}.parquet", SOURCE.source_id);
        assert_eq!(o.key, key);
        let batch = read_one(o);
        assert_eq!(batch.num_rows() as u64, o.rows);
        assert_eq!(only(&batch, "source_id"), s(SOURCE.source_id));
    }

    // All of process 1's samples, those after midnight too, stay on its start day.
    assert_eq!(objects[2].table, Table::Samples);
    let first_day = read_one(&objects[2]);
    assert_eq!(only(&first_day, "profile_id"), s(&plans[0].profile_id));
    assert_eq!(first_day.num_rows(), 6);
    let ts = times(&first_day, "timestamp");
    assert!(ts.iter().any(|t| t.unwrap() >= midnight / 1000));
    // The rollup splits by hour instead: 23:00 on the first day, 00:00 and 12:00 on the second.
    let rollups = objects.iter().filter(|o| o.table == Table::FunctionRollup);
    let hours = |o: &TableObject| -> BTreeSet<i64> {
        times(&read_one(o), "hour").into_iter().flatten().collect()
    };
    let rollup_days: Vec<BTreeSet<i64>> = rollups.map(hours).collect();
    let m = midnight / 1000;
    let first = BTreeSet::from([m - HOUR_US]);
    let expected = [first, BTreeSet::from([m, m + 12 * HOUR_US])];
    assert_eq!(rollup_days, expected);
    // The days' files hold every row of the whole tables.
    let whole = build_tables(&SOURCE, &inputs).unwrap();
    for kind in Table::ALL {
        let of_table = objects.iter().filter(|o| o.table == kind);
        let rows: u64 = of_table.map(|o| o.rows).sum();
        let whole_rows = table(&whole, kind).num_rows() as u64;
        assert_eq!(rows, whole_rows, "{}", kind.name());
    }
}

#[test]
fn output_is_byte_deterministic() {
    let write = |profile: &Profile| write_tables(&SOURCE, &inputs(&plans_of(profile))).unwrap();
    let a = write(&toy_profile(&[(1, NOON), (2, NOON)]));
    let b = write(&toy_profile(&[(1, NOON), (2, NOON)]));
    assert_eq!(a.len(), b.len());
    for (a, b) in a.iter().zip(&b) {
        assert_eq!(a.key, b.key);
        assert_eq!(a.bytes, b.bytes, "{}", a.key);
    }
    let a = write(&pprof_fixture());
    let b = write(&pprof_fixture());
    assert_eq!(a.len(), 5);
    assert!(a.iter().zip(&b).all(|(a, b)| a.bytes == b.bytes));
}

#[test]
fn call_tree_tables_built_per_profile_are_the_files_one_batch_gives() {
    // 7 processes with 3,000 distinct stacks each: 21,007 rows in `stacks` and in `frames`,
    // more than one writer slice, with profile boundaries that fall inside slices.
    let mut p = Profile::new("test");
    let cpu = cpu_series(&mut p, "ns");
    for pid in 1..=7 {
        let process = p.add_process(Some(pid));
        let thread = p.add_thread(process, Some(pid));
        for i in 0..3_000 {
            let leaf = stack(&mut p, &["main", &format!("f{pid}_{i}")]);
            let mut s = Sample::new(thread, leaf, 1_000, cpu);
            s.time = Some(NOON + i * MS);
            p.add_sample(s);
        }
    }
    let plans = plans_of(&p);
    assert_eq!(plans.len(), 7);
    let objects = write_tables(&SOURCE, &inputs(&plans)).unwrap();
    let whole = build_tables(&SOURCE, &inputs(&plans)).unwrap();
    for (kind, batch) in [
        (Table::Stacks, &whole.stacks),
        (Table::Frames, &whole.frames),
    ] {
        let written = objects.iter().find(|o| o.table == kind).unwrap();
        assert_eq!(written.rows, 7 * 3_001, "{}", kind.name());
        assert_eq!(batch.num_rows(), 7 * 3_001, "{}", kind.name());
        let one_batch = parquet_file::encode(kind, batch).unwrap();
        // Compared whole but not printed: a mismatch would dump two files of bytes.
        assert!(
            written.bytes == one_batch,
            "{}: the bytes differ",
            kind.name()
        );
    }
}

#[test]
fn a_tree_built_again_from_its_new_leaves_is_the_tree_of_every_sample() {
    let profiles = [
        pprof_fixture(),
        toy_profile(&[(1, NOON), (2, NOON + 5 * MS)]),
    ];
    let mut fewer = false;
    for p in &profiles {
        let samples = p.samples();
        for plan in plans_of(p) {
            let every = || plan.samples.iter().map(|s| samples.stack(s as usize));
            let whole = CallTree::of_samples(p, every());
            assert!(whole.new_leaves.len() <= plan.samples.len());
            fewer |= whole.new_leaves.len() < plan.samples.len();
            let again = CallTree::of(p, &whole.new_leaves);
            assert_eq!(again.stacks, whole.stacks, "{}", plan.profile_id);
            assert_eq!(again.frames, whole.frames);
            assert!(!whole.stacks.is_empty());
            for leaf in every().flatten() {
                assert_eq!(again.stack_id(leaf), whole.stack_id(leaf));
                assert!(whole.stack_id(leaf).is_some());
            }
        }
    }
    assert!(fewer, "some sample repeats a stack");
}

// ---- counters ------------------------------------------------------------------------------

#[test]
fn counters_hold_every_mark_sorted_by_time_pid_and_thread() {
    // Both processes start at noon: their rows interleave by time, then pid, then thread.
    let profile = toy_profile(&[(2, NOON), (1, NOON)]);
    let objects = write_tables(&SOURCE, &inputs(&plans_of(&profile))).unwrap();
    let counters: Vec<&TableObject> = objects
        .iter()
        .filter(|o| o.table == Table::Counters)
        .collect();
    assert_eq!(counters.len(), 1);
    assert_eq!(
        objects.last().unwrap().table,
        Table::Counters,
        "written last"
    );
    let key = format!(
        "tables/v2/counters/dt=2024-03-01/{}.parquet",
        SOURCE.source_id
    );
    assert_eq!(counters[0].key, key);
    assert_eq!(counters[0].rows, 6);
    let t = read_one(counters[0]);
    assert_eq!(t.schema(), Table::Counters.schema());
    let at = |ms: i64| Some(NOON_US + ms * 1000);
    assert_eq!(
        times(&t, "timestamp"),
        [at(0), at(0), at(1), at(1), at(1), at(1)]
    );
    assert_eq!(
        i64s(&t, "pid"),
        [Some(1), Some(2), Some(1), Some(1), Some(2), Some(2)]
    );
    assert_eq!(
        i64s(&t, "thread_id"),
        [Some(10), Some(20), Some(11), Some(11), Some(21), Some(21)]
    );
    let kinds = strs(&t, "kind");
    assert_eq!(kinds[..3], [s("instant"), s("instant"), s("counter")]);
    assert_eq!(strs(&t, "name")[..3], [s("phase"), s("phase"), s("tokens")]);
    assert_eq!(strs(&t, "category")[..3], [s("toy"), s("toy"), None]);
    assert_eq!(strs(&t, "key")[..4], [None, None, s("input"), s("output")]);
    assert_eq!(strs(&t, "scope")[..3], [s("p"), s("p"), None]);
    assert_eq!(strs(&t, "process_name")[0], s("toy"));
    assert_eq!(
        strs(&t, "thread_name")[..3],
        [s("worker"), s("worker"), None]
    );
    let values = t
        .column_by_name("value")
        .unwrap()
        .as_primitive::<arrow_array::types::Float64Type>();
    let values: Vec<Option<f64>> = values.iter().collect();
    assert_eq!(values[..4], [None, None, Some(18_000.0), Some(450.5)]);
    // An instant's args as the samples table writes labels: the first value of a key wins.
    let labels = t.column_by_name("labels").unwrap().as_map();
    assert!(labels.is_valid(0) && !labels.is_valid(2));
    let entries = labels.value(0);
    let keys: Vec<&str> = entries
        .column(0)
        .as_string::<i32>()
        .iter()
        .flatten()
        .collect();
    let vals: Vec<&str> = entries
        .column(1)
        .as_string::<i32>()
        .iter()
        .flatten()
        .collect();
    assert_eq!(keys, ["http.route", "alloc", "n"]);
    assert_eq!(vals, ["/checkout", "42 bytes", "-7"]);
}

#[test]
fn counters_files_follow_the_days_of_their_marks() {
    let midnight = NOON + 12 * HOUR_NS;
    let profile = toy_profile(&[(1, midnight - 2 * MS), (2, midnight + 12 * HOUR_NS)]);
    let plans = plans_of(&profile);
    let inputs = inputs(&plans);
    let objects = write_tables(&SOURCE, &inputs).unwrap();
    let counters: Vec<(&str, u64)> = objects
        .iter()
        .filter(|o| o.table == Table::Counters)
        .map(|o| (dt_of(o), o.rows))
        .collect();
    // Process 1's counter values, a millisecond after its start, are still on its first day.
    assert_eq!(counters, [("2024-03-01", 3), ("2024-03-02", 3)]);
    let written: BTreeSet<String> = objects.iter().map(|o| o.key.clone()).collect();
    let pending: BTreeSet<String> = TableWriter::new(&SOURCE)
        .keys(&inputs)
        .into_iter()
        .collect();
    assert!(written.is_subset(&pending), "{written:?} {pending:?}");
    assert!(pending.iter().any(|k| k.starts_with("tables/v2/counters/")));
}

#[test]
fn no_counters_file_without_marks() {
    let profile = pprof_fixture();
    assert!(profile.marks().is_empty());
    let plans = plans_of(&profile);
    let objects = write_tables(&SOURCE, &inputs(&plans)).unwrap();
    assert!(!objects.is_empty());
    assert!(objects.iter().all(|o| o.table != Table::Counters));
    let keys = TableWriter::new(&SOURCE).keys(&inputs(&plans));
    assert!(keys.iter().all(|k| !k.contains("/counters/")), "{keys:?}");
    assert_eq!(tables_of(&profile).counters.num_rows(), 0);
}
