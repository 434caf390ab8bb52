//! Folding and drawing hand-built tables: only the columns a flame graph reads, so every
//! expected weight below can be checked by eye.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{
    ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray, TimestampMicrosecondArray,
};

use super::*;
use proflake::export::{ExportFormat, Selection};
use proflake::ErrorKind;
use proflake::{tables::Table, tables::TableBatches};

fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    RecordBatch::try_from_iter(columns).unwrap()
}

fn strs(v: &[Option<&str>]) -> ArrayRef {
    Arc::new(StringArray::from(v.to_vec()))
}

fn i32s(v: &[Option<i32>]) -> ArrayRef {
    Arc::new(Int32Array::from(v.to_vec()))
}

fn i64s(v: &[Option<i64>]) -> ArrayRef {
    Arc::new(Int64Array::from(v.to_vec()))
}

fn times(v: &[Option<i64>]) -> ArrayRef {
    Arc::new(TimestampMicrosecondArray::from(v.to_vec()).with_timezone("UTC"))
}

/// One sample: time (µs; `None` for an aggregated one), thread id and name, the index of its
/// path in the profile's `paths` (`None`: no stack), value, weight_ns.
type Row = (
    Option<i64>,
    i64,
    &'static str,
    Option<usize>,
    i64,
    Option<i64>,
);

/// One profile. Its paths (root first) must list a path's parent before it: a path's index
/// is its stack id, and frames are numbered by first appearance.
struct P {
    id: &'static str,
    service: &'static str,
    pid: i64,
    process: &'static str,
    series: (&'static str, &'static str, &'static str),
    start_us: i64,
    paths: &'static [&'static [&'static str]],
    rows: &'static [Row],
}

/// Profile `a` (service `api`, process 10 `api-server`, `cpu` in nanoseconds):
///   frames 0 main, 1 work, 2 `parse; v2`, 3 idle
///   stacks 0 main, 1 main;work, 2 main;work;parse, 3 main;idle
///   samples (µs, tid, stack, value): (1000, 1, 2, 10) (2000, 1, 2, 5) (3000, 2, 1, 7)
///            (4000, 2, none, 3) (5000, 2, 3, 2)
/// Profile `b` (service `batch`, process 20 `cruncher`, `cpu-clock` counted, 10 ns a
/// sample), its ids overlapping `a`'s: stacks 0 main, 1 main;crunch
///   samples: (6000, 7, 1, 1) (7000, 7, 1, 1) (8000, 7, 0, 1)
/// Profile `c` (service `api`, process 10, `alloc_space` in bytes, aggregated from 1000 µs):
///   samples: (-, 1, main;alloc, 4096) (-, 1, main, 1024)
/// Profile `d` (service `web`, process 30, `wall` in nanoseconds): (9000, 9, main;wait, 50)
/// Profile `e` (service `mem`, process 40, `alloc_space` counted, aggregated from 2000 µs):
///   (-, 5, main;grow, 3)
const PROFILES: &[P] = &[
    P {
        id: "a",
        service: "api",
        pid: 10,
        process: "api-server",
        series: ("cpu", "nanoseconds", "cpu_time"),
        start_us: 1000,
        paths: &[
            &["main"],
            &["main", "work"],
            &["main", "work", "parse; v2"],
            &["main", "idle"],
        ],
        rows: &[
            (Some(1000), 1, "main", Some(2), 10, Some(10)),
            (Some(2000), 1, "main", Some(2), 5, Some(5)),
            (Some(3000), 2, "worker", Some(1), 7, Some(7)),
            (Some(4000), 2, "worker", None, 3, Some(3)),
            (Some(5000), 2, "worker", Some(3), 2, Some(2)),
        ],
    },
    P {
        id: "b",
        service: "batch",
        pid: 20,
        process: "cruncher",
        series: ("cpu-clock", "count", "cpu_time"),
        start_us: 6000,
        paths: &[&["main"], &["main", "crunch"]],
        rows: &[
            (Some(6000), 7, "main", Some(1), 1, Some(10)),
            (Some(7000), 7, "main", Some(1), 1, Some(10)),
            (Some(8000), 7, "main", Some(0), 1, Some(10)),
        ],
    },
    P {
        id: "c",
        service: "api",
        pid: 10,
        process: "api-server",
        series: ("alloc_space", "bytes", "other"),
        start_us: 1000,
        paths: &[&["main"], &["main", "alloc"]],
        rows: &[
            (None, 1, "main", Some(1), 4096, None),
            (None, 1, "main", Some(0), 1024, None),
        ],
    },
    P {
        id: "d",
        service: "web",
        pid: 30,
        process: "web-server",
        series: ("wall", "nanoseconds", "wall_time"),
        start_us: 9000,
        paths: &[&["main"], &["main", "wait"]],
        rows: &[(Some(9000), 9, "loop", Some(1), 50, Some(50))],
    },
    P {
        id: "e",
        service: "mem",
        pid: 40,
        process: "hog",
        series: ("alloc_space", "count", "other"),
        start_us: 2000,
        paths: &[&["main"], &["main", "grow"]],
        rows: &[(None, 5, "main", Some(1), 3, None)],
    },
];

fn tables() -> TableBatches {
    let some = |v: &'static str| Some(v);
    let profiles = batch(vec![
        (
            "profile_id",
            strs(&PROFILES.iter().map(|p| some(p.id)).collect::<Vec<_>>()),
        ),
        (
            "service",
            strs(&PROFILES.iter().map(|p| some(p.service)).collect::<Vec<_>>()),
        ),
        (
            "pid",
            i64s(&PROFILES.iter().map(|p| Some(p.pid)).collect::<Vec<_>>()),
        ),
        (
            "process_name",
            strs(&PROFILES.iter().map(|p| some(p.process)).collect::<Vec<_>>()),
        ),
        (
            "sample_type",
            strs(
                &PROFILES
                    .iter()
                    .map(|p| some(p.series.0))
                    .collect::<Vec<_>>(),
            ),
        ),
        (
            "sample_unit",
            strs(
                &PROFILES
                    .iter()
                    .map(|p| some(p.series.1))
                    .collect::<Vec<_>>(),
            ),
        ),
        (
            "series_kind",
            strs(
                &PROFILES
                    .iter()
                    .map(|p| some(p.series.2))
                    .collect::<Vec<_>>(),
            ),
        ),
        (
            "start_time",
            times(
                &PROFILES
                    .iter()
                    .map(|p| Some(p.start_us))
                    .collect::<Vec<_>>(),
            ),
        ),
    ]);
    let (mut s_pid, mut s_time, mut s_tid, mut s_name, mut s_stack, mut s_value, mut s_ns) =
        (vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
    let (mut st_pid, mut st_id, mut st_parent, mut st_frame) = (vec![], vec![], vec![], vec![]);
    let (mut f_pid, mut f_id, mut f_name) = (vec![], vec![], vec![]);
    for p in PROFILES {
        let mut frames: HashMap<&str, i32> = HashMap::new();
        for (stack, path) in p.paths.iter().enumerate() {
            let leaf = path[path.len() - 1];
            let next = frames.len() as i32;
            let frame = *frames.entry(leaf).or_insert_with(|| {
                f_pid.push(Some(p.id));
                f_id.push(Some(next));
                f_name.push(Some(leaf));
                next
            });
            let parent = p.paths.iter().position(|q| *q == &path[..path.len() - 1]);
            st_pid.push(Some(p.id));
            st_id.push(Some(stack as i32));
            st_parent.push(parent.map(|i| i as i32));
            st_frame.push(Some(frame));
        }
        for &(time, tid, name, stack, value, ns) in p.rows {
            s_pid.push(Some(p.id));
            s_time.push(time);
            s_tid.push(Some(tid));
            s_name.push(Some(name));
            s_stack.push(stack.map(|i| i as i32));
            s_value.push(Some(value));
            s_ns.push(ns);
        }
    }
    TableBatches {
        profiles,
        samples: batch(vec![
            ("profile_id", strs(&s_pid)),
            ("timestamp", times(&s_time)),
            ("thread_id", i64s(&s_tid)),
            ("thread_name", strs(&s_name)),
            ("stack_id", i32s(&s_stack)),
            ("value", i64s(&s_value)),
            ("weight_ns", i64s(&s_ns)),
        ]),
        stacks: batch(vec![
            ("profile_id", strs(&st_pid)),
            ("stack_id", i32s(&st_id)),
            ("parent_id", i32s(&st_parent)),
            ("frame_id", i32s(&st_frame)),
        ]),
        frames: batch(vec![
            ("profile_id", strs(&f_pid)),
            ("frame_id", i32s(&f_id)),
            ("name", strs(&f_name)),
        ]),
        function_rollup: RecordBatch::new_empty(Table::FunctionRollup.schema()),
        counters: RecordBatch::new_empty(Table::Counters.schema()),
    }
}

fn lines(folded: &Folded) -> Vec<(&str, u64)> {
    folded.lines.iter().map(|(p, w)| (p.as_str(), *w)).collect()
}

fn service(name: &str) -> FlameFilter {
    FlameFilter {
        selection: Selection {
            service: Some(name.into()),
            ..Selection::default()
        },
        ..FlameFilter::default()
    }
}

fn series(name: &str) -> FlameFilter {
    FlameFilter {
        sample_type: Some(name.into()),
        ..FlameFilter::default()
    }
}

#[test]
fn one_unit_sums_values_per_path() {
    // `api` has a CPU and an allocation series: the CPU one is drawn.
    let f = fold(&tables(), &service("api")).unwrap();
    // The sample without a stack is drawn on its own; `;` inside a name is not a frame
    // boundary.
    assert_eq!(
        lines(&f),
        [
            ("<no stack>", 3),
            ("main;idle", 2),
            ("main;work", 7),
            ("main;work;parse, v2", 15)
        ]
    );
    assert_eq!(f.unit, "nanoseconds");
    assert_eq!(f.sample_types, ["cpu"]);
    assert_eq!((f.samples, f.profiles, f.total()), (5, 1, 27));
}

#[test]
fn counted_values_read_as_samples() {
    let f = fold(&tables(), &service("batch")).unwrap();
    assert_eq!(lines(&f), [("main", 1), ("main;crunch", 2)]);
    assert_eq!(f.unit, "samples");
}

#[test]
fn cpu_series_of_different_units_weigh_their_nanoseconds() {
    // By default every CPU-time series: `cpu` in ns and `cpu-clock` counted, whose values do
    // not add up; their weight_ns do. The wall and allocation series are left out.
    let f = fold(&tables(), &FlameFilter::default()).unwrap();
    assert_eq!(f.unit, "nanoseconds");
    assert_eq!(f.sample_types, ["cpu", "cpu-clock"]);
    // Each profile's ids resolve through its own stacks and frames.
    assert_eq!(
        lines(&f),
        [
            ("<no stack>", 3),
            ("main", 10),
            ("main;crunch", 20),
            ("main;idle", 2),
            ("main;work", 7),
            ("main;work;parse, v2", 15),
        ]
    );
    assert_eq!((f.samples, f.profiles), (8, 2));
}

#[test]
fn a_named_series_is_drawn_in_its_unit() {
    let filter = FlameFilter {
        sample_type: Some("alloc_space".into()),
        ..service("api")
    };
    let f = fold(&tables(), &filter).unwrap();
    assert_eq!(lines(&f), [("main", 1024), ("main;alloc", 4096)]);
    assert_eq!(f.unit, "bytes");
    assert_eq!((f.samples, f.profiles), (2, 1));
}

#[test]
fn without_cpu_time_wall_time_then_the_first_series() {
    let f = fold(&tables(), &service("web")).unwrap();
    assert_eq!(lines(&f), [("main;wait", 50)]);
    assert_eq!(f.sample_types, ["wall"]);
    // Neither CPU nor wall time: the first series by name and unit.
    let f = fold(&tables(), &service("mem")).unwrap();
    assert_eq!(lines(&f), [("main;grow", 3)]);
    assert_eq!(
        (f.unit.as_str(), f.sample_types.as_slice()),
        ("samples", ["alloc_space".to_owned()].as_slice())
    );
}

#[test]
fn units_without_nanoseconds_fall_back_to_counting_rows() {
    // `alloc_space` in bytes (api) and counted (mem): neither adds to the other.
    let f = fold(&tables(), &series("alloc_space")).unwrap();
    assert_eq!(f.unit, "samples");
    assert_eq!(
        lines(&f),
        [("main", 1), ("main;alloc", 1), ("main;grow", 1)]
    );
    assert_eq!(f.profiles, 2);
}

#[test]
fn an_unknown_series_names_the_series_there_are() {
    let err = fold(&tables(), &series("heap")).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NoSamples { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains(
            "no profile of series \"heap\"; series: \"alloc_space\" (bytes), \
             \"alloc_space\" (count), \"cpu\" (nanoseconds), \"cpu-clock\" (count), \
             \"wall\" (nanoseconds)"
        ),
        "{text}"
    );
}

#[test]
fn counting_can_be_forced() {
    let filter = FlameFilter {
        count_samples: true,
        ..service("api")
    };
    let f = fold(&tables(), &filter).unwrap();
    assert_eq!(f.unit, "samples");
    assert_eq!(f.total(), 5);
    assert_eq!(f.lines[3], ("main;work;parse, v2".into(), 2));
}

#[test]
fn thread_filter_by_id_or_name() {
    let by_id = FlameFilter {
        selection: Selection {
            thread: Some(IdOrName::parse("2")),
            ..service("api").selection
        },
        ..service("api")
    };
    let f = fold(&tables(), &by_id).unwrap();
    assert_eq!(
        lines(&f),
        [("<no stack>", 3), ("main;idle", 2), ("main;work", 7)]
    );

    // `main` names threads of both CPU profiles, whose units differ.
    let by_name = FlameFilter {
        selection: Selection {
            thread: Some(IdOrName::parse("main")),
            ..Selection::default()
        },
        ..FlameFilter::default()
    };
    let f = fold(&tables(), &by_name).unwrap();
    assert_eq!(
        lines(&f),
        [
            ("main", 10),
            ("main;crunch", 20),
            ("main;work;parse, v2", 15)
        ]
    );
    assert_eq!(f.profiles, 2);
}

#[test]
fn time_range_is_inclusive() {
    let filter = FlameFilter {
        selection: Selection {
            from_ns: Some(2_000_000),
            to_ns: Some(3_000_000),
            ..Selection::default()
        },
        ..FlameFilter::default()
    };
    let f = fold(&tables(), &filter).unwrap();
    assert_eq!(lines(&f), [("main;work", 7), ("main;work;parse, v2", 5)]);
    assert_eq!(f.unit, "nanoseconds");
}

#[test]
fn aggregated_samples_are_at_their_profiles_start() {
    // `c`'s samples have no time; its profile starts at 1000 µs.
    let at = |from_ns, to_ns| FlameFilter {
        selection: Selection {
            from_ns: Some(from_ns),
            to_ns: Some(to_ns),
            ..service("api").selection
        },
        sample_type: Some("alloc_space".into()),
        ..service("api")
    };
    let f = fold(&tables(), &at(1_000_000, 1_000_000)).unwrap();
    assert_eq!(f.total(), 5120);
    let err = fold(&tables(), &at(1_000_001, 9_000_000)).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NoSamples { .. }), "{err}");
}

#[test]
fn process_filter_by_pid_or_name() {
    let by_pid = FlameFilter {
        selection: Selection {
            process: Some(IdOrName::Id(20)),
            ..Selection::default()
        },
        ..FlameFilter::default()
    };
    assert_eq!(fold(&tables(), &by_pid).unwrap().total(), 3);
    let by_name = FlameFilter {
        selection: Selection {
            process: Some(IdOrName::Name("api-server".into())),
            ..Selection::default()
        },
        ..FlameFilter::default()
    };
    assert_eq!(fold(&tables(), &by_name).unwrap().total(), 27);
}

#[test]
fn unknown_service_names_the_services_there_are() {
    let err = fold(&tables(), &service("shop")).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NoSamples { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("\"shop\""), "{text}");
    assert!(
        text.contains("services in the tables: api, batch, mem, web"),
        "{text}"
    );
}

#[test]
fn a_filter_selecting_nothing_says_which_threads_exist() {
    let filter = FlameFilter {
        selection: Selection {
            thread: Some(IdOrName::parse("99")),
            ..service("api").selection
        },
        ..service("api")
    };
    let err = fold(&tables(), &filter).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("thread 99"), "{text}");
    // The threads of the series drawn: `c`'s thread 1 is `a`'s too, and named the same.
    assert!(text.contains("threads: 1 (main), 2 (worker)"), "{text}");

    let late = FlameFilter {
        selection: Selection {
            from_ns: Some(8_000_001),
            ..Selection::default()
        },
        ..FlameFilter::default()
    };
    let err = fold(&tables(), &late).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NoSamples { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("from 1970-01-01T00:00:00.008000001Z"),
        "{err}"
    );
}

#[test]
fn broken_tables_are_errors_not_panics() {
    // A stack whose frame is missing: `a`'s frames are its first four rows.
    let mut t = tables();
    t.frames = t.frames.slice(0, 3);
    let err = fold(&t, &service("api")).unwrap_err();
    assert!(
        err.to_string()
            .contains("frame 3 of profile a is not in frames"),
        "{err}"
    );

    // A parent loop: stack 0's parent is 2, which descends from 0.
    let mut t = tables();
    t.stacks = batch(vec![
        ("profile_id", strs(&[Some("a"); 4])),
        ("stack_id", i32s(&[Some(0), Some(1), Some(2), Some(3)])),
        ("parent_id", i32s(&[Some(2), Some(0), Some(1), Some(0)])),
        ("frame_id", i32s(&[Some(0), Some(1), Some(2), Some(3)])),
    ]);
    let err = fold(&t, &service("api")).unwrap_err();
    assert!(err.to_string().contains("loop"), "{err}");

    // A column of the wrong type: version 1's 64-bit or unsigned ids are not version 2's.
    let mut t = tables();
    t.stacks = batch(vec![
        ("profile_id", strs(&[Some("a")])),
        ("stack_id", i64s(&[Some(0)])),
        ("parent_id", i32s(&[None])),
        ("frame_id", i32s(&[Some(0)])),
    ]);
    let err = fold(&t, &service("api")).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Malformed { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("stacks.stack_id is Int64, expected Int32"),
        "{err}"
    );

    // A negative value cannot be drawn.
    let mut t = tables();
    let mut columns = t.samples.columns().to_vec();
    let mut values: Vec<Option<i64>> = (0..t.samples.num_rows())
        .map(|i| {
            Some(
                t.samples
                    .column(5)
                    .as_any()
                    .downcast_ref::<Int64Array>()
                    .unwrap()
                    .value(i),
            )
        })
        .collect();
    values[0] = Some(-1);
    columns[5] = i64s(&values);
    t.samples = RecordBatch::try_new(t.samples.schema(), columns).unwrap();
    let err = fold(&t, &service("api")).unwrap_err();
    assert!(err.to_string().contains("negative value -1"), "{err}");
}

fn svg_text(folded: &Folded, title: &str) -> String {
    String::from_utf8(render_svg(folded, title).unwrap()).unwrap()
}

#[test]
fn renders_a_deterministic_svg() {
    let f = fold(&tables(), &service("api")).unwrap();
    let svg = svg_text(&f, "api flames");
    assert!(svg.contains("<svg"), "{svg}");
    assert!(svg.contains("api flames"));
    assert!(svg.contains("all (27 nanoseconds, 100%)"), "{svg}");
    assert!(svg.contains("parse, v2 (15 nanoseconds, 55.56%)"), "{svg}");
    assert!(
        svg.contains("&lt;no stack&gt; (3 nanoseconds, 11.11%)"),
        "{svg}"
    );
    // Colours come from names, so the bytes never change.
    assert_eq!(svg, svg_text(&f, "api flames"));
}

#[test]
fn awkward_names_survive_rendering() {
    // Names that would end a line's frames early or read as a second count column.
    let f = Folded {
        lines: vec![
            (
                format!("main;{}", ExportFormat::flame_frame_name("retry 3")),
                4,
            ),
            (
                format!(
                    "main;{}",
                    ExportFormat::flame_frame_name("Vec<[u8; 8]>::push")
                ),
                6,
            ),
        ],
        unit: "samples".into(),
        sample_types: vec!["cpu".into()],
        samples: 10,
        profiles: 1,
    };
    let svg = svg_text(&f, "t");
    assert!(svg.contains("all (10 samples, 100%)"), "{svg}");
    assert!(svg.contains("retry\u{a0}3 (4 samples, 40.00%)"), "{svg}");
    assert!(
        svg.contains("Vec&lt;[u8, 8]&gt;::push (6 samples, 60.00%)"),
        "{svg}"
    );
}

#[test]
fn nothing_to_draw_is_an_error() {
    let f = Folded {
        lines: vec![("main".into(), 0)],
        unit: "samples".into(),
        sample_types: vec!["cpu".into()],
        samples: 1,
        profiles: 1,
    };
    let err = render_svg(&f, "t").unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NoSamples { .. }), "{err}");
}
