//! Folding and drawing hand-built tables: only the columns a flame graph reads, so every
//! expected weight below can be checked by eye.

use std::sync::Arc;

use arrow_array::{
    ArrayRef, Int64Array, RecordBatch, StringArray, TimestampMicrosecondArray, UInt32Array,
};

use super::*;
use crate::error::ErrorKind;
use crate::tables::{Table, TableBatches};

fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    RecordBatch::try_from_iter(columns).unwrap()
}

fn strs(v: &[Option<&str>]) -> ArrayRef {
    Arc::new(StringArray::from(v.to_vec()))
}

fn u32s(v: &[Option<u32>]) -> ArrayRef {
    Arc::new(UInt32Array::from(v.to_vec()))
}

fn i64s(v: &[Option<i64>]) -> ArrayRef {
    Arc::new(Int64Array::from(v.to_vec()))
}

/// Profile `a` (service `api`, process 10 `api-server`, nanoseconds):
///   frames 0 main, 1 work, 2 `parse; v2`, 3 idle
///   stacks 0 main, 1 main;work, 2 main;work;parse, 3 main;idle
///   samples (µs, tid, stack, weight): (1000, 1, 2, 10) (2000, 1, 2, 5) (3000, 2, 1, 7)
///            (4000, 2, none, 3) (5000, 2, 3, 2)
/// Profile `b` (service `batch`, process 20 `cruncher`, count), its ids overlapping `a`'s:
///   frames 0 main, 1 crunch; stacks 0 main, 1 main;crunch
///   samples: (6000, 7, 1, 1) (7000, 7, 1, 1) (8000, 7, 0, 1)
fn tables() -> TableBatches {
    let profiles = batch(vec![
        ("profile_id", strs(&[Some("a"), Some("b")])),
        ("service", strs(&[Some("api"), Some("batch")])),
        ("pid", i64s(&[Some(10), Some(20)])),
        (
            "process_name",
            strs(&[Some("api-server"), Some("cruncher")]),
        ),
        ("sample_unit", strs(&[Some("nanoseconds"), Some("count")])),
    ]);
    let a = Some("a");
    let b = Some("b");
    let samples = batch(vec![
        ("profile_id", strs(&[a, a, a, a, a, b, b, b])),
        (
            "timestamp",
            Arc::new(
                TimestampMicrosecondArray::from(vec![
                    1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000,
                ])
                .with_timezone("UTC"),
            ),
        ),
        (
            "thread_id",
            i64s(&[
                Some(1),
                Some(1),
                Some(2),
                Some(2),
                Some(2),
                Some(7),
                Some(7),
                Some(7),
            ]),
        ),
        (
            "thread_name",
            strs(&[
                Some("main"),
                Some("main"),
                Some("worker"),
                Some("worker"),
                Some("worker"),
                Some("main"),
                Some("main"),
                Some("main"),
            ]),
        ),
        (
            "stack_id",
            u32s(&[
                Some(2),
                Some(2),
                Some(1),
                None,
                Some(3),
                Some(1),
                Some(1),
                Some(0),
            ]),
        ),
        (
            "weight",
            i64s(&[
                Some(10),
                Some(5),
                Some(7),
                Some(3),
                Some(2),
                Some(1),
                Some(1),
                Some(1),
            ]),
        ),
    ]);
    let stacks = batch(vec![
        ("profile_id", strs(&[a, a, a, a, b, b])),
        (
            "stack_id",
            u32s(&[Some(0), Some(1), Some(2), Some(3), Some(0), Some(1)]),
        ),
        (
            "parent_id",
            u32s(&[None, Some(0), Some(1), Some(0), None, Some(0)]),
        ),
        (
            "frame_id",
            u32s(&[Some(0), Some(1), Some(2), Some(3), Some(0), Some(1)]),
        ),
    ]);
    let frames = batch(vec![
        ("profile_id", strs(&[a, a, a, a, b, b])),
        (
            "frame_id",
            u32s(&[Some(0), Some(1), Some(2), Some(3), Some(0), Some(1)]),
        ),
        (
            "name",
            strs(&[
                Some("main"),
                Some("work"),
                Some("parse; v2"),
                Some("idle"),
                Some("main"),
                Some("crunch"),
            ]),
        ),
    ]);
    TableBatches {
        profiles,
        samples,
        stacks,
        frames,
        function_rollup: RecordBatch::new_empty(Table::FunctionRollup.schema()),
    }
}

fn lines(folded: &Folded) -> Vec<(&str, u64)> {
    folded.lines.iter().map(|(p, w)| (p.as_str(), *w)).collect()
}

fn service(name: &str) -> FlameFilter {
    FlameFilter {
        service: Some(name.into()),
        ..FlameFilter::default()
    }
}

#[test]
fn one_unit_sums_weights_per_path() {
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
    assert_eq!((f.samples, f.profiles, f.total()), (5, 1, 27));
}

#[test]
fn counted_weights_read_as_samples() {
    let f = fold(&tables(), &service("batch")).unwrap();
    assert_eq!(lines(&f), [("main", 1), ("main;crunch", 2)]);
    assert_eq!(f.unit, "samples");
}

#[test]
fn mixed_units_fall_back_to_counting_samples() {
    let f = fold(&tables(), &FlameFilter::default()).unwrap();
    assert_eq!(f.unit, "samples");
    // Each profile's ids resolve through its own stacks and frames.
    assert_eq!(
        lines(&f),
        [
            ("<no stack>", 1),
            ("main", 1),
            ("main;crunch", 2),
            ("main;idle", 1),
            ("main;work", 1),
            ("main;work;parse, v2", 2),
        ]
    );
    assert_eq!((f.samples, f.profiles), (8, 2));
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
        thread: Some(IdOrName::parse("2")),
        ..service("api")
    };
    let f = fold(&tables(), &by_id).unwrap();
    assert_eq!(
        lines(&f),
        [("<no stack>", 3), ("main;idle", 2), ("main;work", 7)]
    );

    // `main` names threads of both profiles, whose units differ.
    let by_name = FlameFilter {
        thread: Some(IdOrName::parse("main")),
        ..FlameFilter::default()
    };
    let f = fold(&tables(), &by_name).unwrap();
    assert_eq!(
        lines(&f),
        [("main", 1), ("main;crunch", 2), ("main;work;parse, v2", 2)]
    );
    assert_eq!(f.profiles, 2);
}

#[test]
fn time_range_is_inclusive() {
    let filter = FlameFilter {
        from_ns: Some(2_000_000),
        to_ns: Some(3_000_000),
        ..FlameFilter::default()
    };
    let f = fold(&tables(), &filter).unwrap();
    assert_eq!(lines(&f), [("main;work", 7), ("main;work;parse, v2", 5)]);
    assert_eq!(f.unit, "nanoseconds");
}

#[test]
fn process_filter_by_pid_or_name() {
    let by_pid = FlameFilter {
        process: Some(IdOrName::Id(20)),
        ..FlameFilter::default()
    };
    assert_eq!(fold(&tables(), &by_pid).unwrap().total(), 3);
    let by_name = FlameFilter {
        process: Some(IdOrName::Name("api-server".into())),
        ..FlameFilter::default()
    };
    assert_eq!(fold(&tables(), &by_name).unwrap().total(), 27);
}

#[test]
fn unknown_service_names_the_services_there_are() {
    let err = fold(&tables(), &service("web")).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NoSamples { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("\"web\""), "{text}");
    assert!(
        text.contains("services in the tables: api, batch"),
        "{text}"
    );
}

#[test]
fn a_filter_selecting_nothing_says_which_threads_exist() {
    let filter = FlameFilter {
        thread: Some(IdOrName::parse("99")),
        ..service("api")
    };
    let err = fold(&tables(), &filter).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("thread 99"), "{text}");
    assert!(text.contains("threads: 1 (main), 2 (worker)"), "{text}");

    let late = FlameFilter {
        from_ns: Some(9_000_000),
        ..FlameFilter::default()
    };
    let err = fold(&tables(), &late).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NoSamples { .. }), "{err}");
    assert!(
        err.to_string().contains("from 1970-01-01T00:00:00.009Z"),
        "{err}"
    );
}

#[test]
fn broken_tables_are_errors_not_panics() {
    // A stack whose frame is missing.
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
        ("stack_id", u32s(&[Some(0), Some(1), Some(2), Some(3)])),
        ("parent_id", u32s(&[Some(2), Some(0), Some(1), Some(0)])),
        ("frame_id", u32s(&[Some(0), Some(1), Some(2), Some(3)])),
    ]);
    let err = fold(&t, &service("api")).unwrap_err();
    assert!(err.to_string().contains("loop"), "{err}");

    // A column of the wrong type.
    let mut t = tables();
    t.stacks = batch(vec![
        ("profile_id", strs(&[Some("a")])),
        ("stack_id", i64s(&[Some(0)])),
        ("parent_id", u32s(&[None])),
        ("frame_id", u32s(&[Some(0)])),
    ]);
    let err = fold(&t, &service("api")).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Malformed { .. }), "{err}");
    assert!(
        err.to_string().contains("stacks.stack_id is Int64"),
        "{err}"
    );

    // A negative weight cannot be drawn.
    let mut t = tables();
    let mut columns = t.samples.columns().to_vec();
    columns[5] = i64s(&[
        Some(-1),
        Some(5),
        Some(7),
        Some(3),
        Some(2),
        Some(1),
        Some(1),
        Some(1),
    ]);
    t.samples = RecordBatch::try_new(t.samples.schema(), columns).unwrap();
    let err = fold(&t, &service("api")).unwrap_err();
    assert!(err.to_string().contains("negative weight -1"), "{err}");
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
            (format!("main;{}", flame_frame_name("retry 3")), 4),
            (
                format!("main;{}", flame_frame_name("Vec<[u8; 8]>::push")),
                6,
            ),
        ],
        unit: "samples".into(),
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
        samples: 1,
        profiles: 1,
    };
    let err = render_svg(&f, "t").unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NoSamples { .. }), "{err}");
}
