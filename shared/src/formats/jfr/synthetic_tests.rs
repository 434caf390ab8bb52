//! Recordings written here, field by field, for what the JDK's own recordings in the fixtures
//! do not show: integers not compressed, async-profiler's events and settings, `contextId`,
//! every string encoding, kernel and C++ frames, and broken chunks.

use super::*;
use crate::model::{FrameKind, LabelValue, SeriesKind};

/// A JFR varint: seven bits a byte for eight bytes, then a byte of eight.
fn varint(out: &mut Vec<u8>, mut v: u64) {
    for _ in 0..8 {
        if v < 0x80 {
            out.push(v as u8);
            return;
        }
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn varint_len(v: u64) -> usize {
    let mut out = Vec::new();
    varint(&mut out, v);
    out.len()
}

/// One event (or pool, or metadata): its size (which counts itself) and the body.
fn record(body: &[u8]) -> Vec<u8> {
    let n = (1..=9)
        .find(|&n| varint_len((body.len() + n) as u64) == n)
        .unwrap();
    let mut out = Vec::new();
    varint(&mut out, (body.len() + n) as u64);
    out.extend_from_slice(body);
    out
}

/// Writes values as a chunk with or without compressed integers holds them.
struct Values {
    compressed: bool,
    out: Vec<u8>,
}

impl Values {
    fn new(compressed: bool) -> Self {
        Values {
            compressed,
            out: Vec::new(),
        }
    }
    fn long(&mut self, v: i64) -> &mut Self {
        if self.compressed {
            varint(&mut self.out, v as u64);
        } else {
            self.out.extend_from_slice(&v.to_be_bytes());
        }
        self
    }
    fn int(&mut self, v: i32) -> &mut Self {
        if self.compressed {
            varint(&mut self.out, u64::from(v as u32));
        } else {
            self.out.extend_from_slice(&v.to_be_bytes());
        }
        self
    }
    fn boolean(&mut self, v: bool) -> &mut Self {
        self.out.push(u8::from(v));
        self
    }
    /// A constant pool key or an array length: always a varint.
    fn key(&mut self, v: u64) -> &mut Self {
        varint(&mut self.out, v);
        self
    }
    fn utf8(&mut self, s: &str) -> &mut Self {
        self.out.push(3);
        varint(&mut self.out, s.len() as u64);
        self.out.extend_from_slice(s.as_bytes());
        self
    }
    fn raw(&mut self, bytes: &[u8]) -> &mut Self {
        self.out.extend_from_slice(bytes);
        self
    }
}

// Class ids.
const LONG: u64 = 20;
const INT: u64 = 21;
const BOOLEAN: u64 = 22;
const STRING: u64 = 23;
const SYMBOL: u64 = 30;
const CLASS: u64 = 31;
const METHOD: u64 = 32;
const FRAME_TYPE: u64 = 33;
const STACK_FRAME: u64 = 34;
const STACK_TRACE: u64 = 35;
const THREAD: u64 = 36;
const ACTIVE_SETTING: u64 = 40;
const WALL: u64 = 41;
const MALLOC: u64 = 42;
const OTHER: u64 = 43;
const JVM: u64 = 44;

/// (id, name, fields (name, class, in a pool, array)).
type ClassDef = (u64, &'static str, Vec<(&'static str, u64, bool, bool)>);

fn classes() -> Vec<ClassDef> {
    vec![
        (LONG, "long", vec![]),
        (INT, "int", vec![]),
        (BOOLEAN, "boolean", vec![]),
        (STRING, "java.lang.String", vec![]),
        (
            SYMBOL,
            "jdk.types.Symbol",
            vec![("string", STRING, false, false)],
        ),
        (
            CLASS,
            "java.lang.Class",
            vec![("name", SYMBOL, true, false)],
        ),
        (
            METHOD,
            "jdk.types.Method",
            vec![("type", CLASS, true, false), ("name", SYMBOL, true, false)],
        ),
        (
            FRAME_TYPE,
            "jdk.types.FrameType",
            vec![("description", STRING, false, false)],
        ),
        (
            STACK_FRAME,
            "jdk.types.StackFrame",
            vec![
                ("method", METHOD, true, false),
                ("lineNumber", INT, false, false),
                ("type", FRAME_TYPE, true, false),
            ],
        ),
        (
            STACK_TRACE,
            "jdk.types.StackTrace",
            vec![
                ("truncated", BOOLEAN, false, false),
                ("frames", STACK_FRAME, false, true),
            ],
        ),
        (
            THREAD,
            "java.lang.Thread",
            vec![
                ("osName", STRING, false, false),
                ("osThreadId", LONG, false, false),
                ("javaName", STRING, false, false),
            ],
        ),
        (
            ACTIVE_SETTING,
            "jdk.ActiveSetting",
            vec![
                ("startTime", LONG, false, false),
                ("id", LONG, false, false),
                ("name", STRING, false, false),
                ("value", STRING, false, false),
            ],
        ),
        (
            WALL,
            "profiler.WallClockSample",
            vec![
                ("startTime", LONG, false, false),
                ("sampledThread", THREAD, true, false),
                ("stackTrace", STACK_TRACE, true, false),
                ("samples", INT, false, false),
                ("contextId", LONG, false, false),
            ],
        ),
        (
            MALLOC,
            "profiler.Malloc",
            vec![
                ("startTime", LONG, false, false),
                ("eventThread", THREAD, true, false),
                ("stackTrace", STACK_TRACE, true, false),
                ("size", LONG, false, false),
            ],
        ),
        (
            OTHER,
            "profiler.Unread",
            vec![("startTime", LONG, false, false)],
        ),
        (
            JVM,
            "jdk.JVMInformation",
            vec![
                ("startTime", LONG, false, false),
                ("pid", LONG, false, false),
            ],
        ),
    ]
}

/// The metadata event: its string table, then `root → metadata → class → field` and an
/// empty `region`.
fn metadata(classes: &[ClassDef]) -> Vec<u8> {
    let mut strings: Vec<String> = Vec::new();
    let mut index = |s: &str| -> u64 {
        match strings.iter().position(|x| x == s) {
            Some(i) => i as u64,
            None => {
                strings.push(s.to_owned());
                (strings.len() - 1) as u64
            }
        }
    };
    let mut tree = Vec::new();
    let element = |tree: &mut Vec<u8>,
                   index: &mut dyn FnMut(&str) -> u64,
                   name: &str,
                   attrs: &[(&str, String)],
                   children: usize| {
        varint(tree, index(name));
        varint(tree, attrs.len() as u64);
        for (k, v) in attrs {
            varint(tree, index(k));
            varint(tree, index(v));
        }
        varint(tree, children as u64);
    };
    element(&mut tree, &mut index, "root", &[], 2);
    element(&mut tree, &mut index, "metadata", &[], classes.len());
    for (id, name, fields) in classes {
        let attrs = [("id", id.to_string()), ("name", name.to_string())];
        element(&mut tree, &mut index, "class", &attrs, fields.len());
        for (field, class, pool, array) in fields {
            let mut attrs = vec![("name", field.to_string()), ("class", class.to_string())];
            if *pool {
                attrs.push(("constantPool", "true".into()));
            }
            if *array {
                attrs.push(("dimension", "1".into()));
            }
            element(&mut tree, &mut index, "field", &attrs, 0);
        }
    }
    element(&mut tree, &mut index, "region", &[], 0);
    let mut body = Vec::new();
    for v in [0, 0, 0, 1] {
        varint(&mut body, v); // type 0, start, duration, id
    }
    varint(&mut body, strings.len() as u64);
    for s in &strings {
        body.push(3);
        varint(&mut body, s.len() as u64);
        body.extend_from_slice(s.as_bytes());
    }
    body.extend_from_slice(&tree);
    record(&body)
}

/// The constant pool event: every pool the events refer to.
fn pools(compressed: bool) -> Vec<u8> {
    let mut v = Values::new(compressed);
    v.key(1).key(0).key(0).key(0).boolean(true); // type 1, start, duration, delta, flush
    v.key(8); // pools
    v.key(STRING).key(1).key(9).utf8("Interpreted");
    v.key(SYMBOL).key(3);
    v.key(1).utf8("com/example/App");
    v.key(2).utf8("main");
    v.key(3).utf8("write");
    v.key(CLASS).key(1).key(1).key(1);
    v.key(METHOD)
        .key(2)
        .key(1)
        .key(1)
        .key(2)
        .key(2)
        .key(1)
        .key(3);
    v.key(FRAME_TYPE).key(3);
    v.key(1).raw(&[2, 9]); // a reference into the string pool
    v.key(2).raw(&[5, 6]).raw(b"Kernel"); // Latin-1
    v.key(3).raw(&[4, 3, b'C', b'+', b'+']); // UTF-16 units
    v.key(STACK_TRACE).key(2);
    // Leaf first: `write` (kernel) called from `main`.
    v.key(1).boolean(true).key(2);
    v.key(2).int(12).key(2);
    v.key(1).int(-1).key(1);
    v.key(2).boolean(false).key(1);
    v.key(2).int(3).key(3);
    v.key(THREAD).key(1);
    v.key(5).utf8("os-5").long(105).raw(&[0]); // no Java name
    v.key(STACK_FRAME).key(0);
    record(&v.out)
}

const START_NANOS: i64 = 1_700_000_000_000_000_000;
const START_TICKS: i64 = 1_000;
/// Microsecond ticks.
const TICKS_PER_SECOND: i64 = 1_000_000;

fn events(compressed: bool) -> Vec<Vec<u8>> {
    let event = |ty: u64, fill: &dyn Fn(&mut Values)| {
        let mut v = Values::new(compressed);
        v.key(ty);
        fill(&mut v);
        record(&v.out)
    };
    vec![
        event(ACTIVE_SETTING, &|v| {
            v.long(START_TICKS)
                .long(WALL as i64)
                .utf8("wall")
                .utf8("50 ms");
        }),
        event(WALL, &|v| {
            v.long(START_TICKS + 2_000).key(5).key(1).int(3).long(7);
        }),
        event(WALL, &|v| {
            v.long(START_TICKS + 1_000).key(5).key(1).int(1).long(0);
        }),
        event(MALLOC, &|v| {
            v.long(START_TICKS + 500).key(5).key(2).long(4096);
        }),
        event(OTHER, &|v| {
            v.long(START_TICKS);
        }),
        // After the samples, as the JVM may write it.
        event(JVM, &|v| {
            v.long(START_TICKS + 3_000).long(4242);
        }),
    ]
}

/// A whole chunk: header, events, pools, metadata.
fn chunk(compressed: bool) -> Vec<u8> {
    let mut body = Vec::new();
    for e in events(compressed) {
        body.extend_from_slice(&e);
    }
    let pool_at = (HEADER_BYTES + body.len()) as u64;
    body.extend_from_slice(&pools(compressed));
    let metadata_at = (HEADER_BYTES + body.len()) as u64;
    body.extend_from_slice(&metadata(&classes()));
    let size = (HEADER_BYTES + body.len()) as u64;
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[0, 2, 0, 1]);
    for v in [
        size,
        pool_at,
        metadata_at,
        START_NANOS as u64,
        5_000_000,
        START_TICKS as u64,
        TICKS_PER_SECOND as u64,
    ] {
        out.extend_from_slice(&v.to_be_bytes());
    }
    out.extend_from_slice(&u32::from(compressed).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

fn read(bytes: &[u8]) -> Result<Profile> {
    decode(bytes, "plain", &Limits::default())
}

#[test]
fn async_profiler_events_read_the_same_with_integers_compressed_or_not() {
    for compressed in [true, false] {
        let p = read(&chunk(compressed)).unwrap();
        let samples: Vec<_> = p.samples().iter().collect();
        assert_eq!(samples.len(), 3, "compressed: {compressed}");
        // In time order: the malloc (500 ticks of 1 µs in), then the two wall samples.
        let at = |ticks: i64| START_NANOS + ticks * 1_000;
        let times: Vec<_> = samples.iter().map(|s| s.time.unwrap()).collect();
        assert_eq!(times, [at(500), at(1_000), at(2_000)]);
        let (malloc, wall_1, wall_3) = (samples[0], samples[1], samples[2]);
        assert_eq!(malloc.weight, 4096);
        let malloc_series = p.series(malloc.series);
        assert_eq!(
            (malloc_series.kind, p.str(malloc_series.unit)),
            (SeriesKind::Other, "bytes")
        );
        // `samples` times the `wall` interval.
        assert_eq!((wall_1.weight, wall_3.weight), (50_000_000, 150_000_000));
        let wall = p.series(wall_3.series);
        assert_eq!(wall.kind, SeriesKind::WallTime);
        assert_eq!(
            (p.str(wall.name), p.str(wall.unit), wall.period),
            ("profiler.WallClockSample", "nanoseconds", Some(50_000_000))
        );
        // contextId 7 is a label; 0 is none.
        assert_eq!(wall_1.labels, None);
        let labels = p.label_set(wall_3.labels.unwrap());
        assert_eq!(p.str(labels[0].key), "contextId");
        assert!(matches!(labels[0].value, LabelValue::Num { value: 7, .. }));
        // The thread: its OS name when it has no Java name.
        let thread = p.thread(wall_3.thread);
        assert_eq!(
            (thread.tid, p.opt_str(thread.name)),
            (Some(105), Some("os-5"))
        );
        // Root first: main (interpreted, no line), then write (kernel, line 12); truncated.
        let frames: Vec<_> = p
            .stack_frames(wall_3.stack.unwrap())
            .map(|f| {
                let f = p.frame(f);
                (
                    p.opt_str(f.module),
                    p.opt_str(f.function).unwrap(),
                    f.line,
                    f.kind,
                )
            })
            .collect();
        assert_eq!(
            frames,
            [
                (
                    Some("com.example.App"),
                    "write",
                    Some(12),
                    FrameKind::Kernel
                ),
                (Some("com.example.App"), "main", None, FrameKind::Jvm),
            ]
        );
        assert_eq!(p.opt_str(wall_3.unwind_error), Some("truncated"));
        let native = p.frame(p.stack_frames(malloc.stack.unwrap()).next().unwrap());
        assert_eq!((native.kind, native.line), (FrameKind::Native, Some(3)));
        assert_eq!(malloc.unwind_error, None);
        // The unread event and the JVM's information.
        assert_eq!(p.stats.get("jfr_skipped_events"), Some(&2));
        let pids: Vec<_> = p.processes().map(|(_, process)| process.pid).collect();
        assert_eq!(pids, [Some(4242)], "the JVM");
        assert_eq!(p.start_time, Some(START_NANOS));
        assert_eq!(p.duration, Some(5_000_000));
    }
}

fn malformed(bytes: &[u8]) -> String {
    match read(bytes) {
        Err(e) => match e.kind() {
            ErrorKind::Malformed {
                format: "jfr",
                what,
                ..
            } => what.clone(),
            other => panic!("{other:?}"),
        },
        Ok(_) => panic!("decoded"),
    }
}

#[test]
fn broken_chunks_are_malformed_with_what_is_wrong() {
    let good = chunk(true);
    let mut v1 = good.clone();
    v1[5] = 1;
    assert!(malformed(&v1).contains("version 1"), "{}", malformed(&v1));
    // The metadata offset pointing at the pool.
    let mut swapped = good.clone();
    let pool_at: [u8; 8] = good[16..24].try_into().unwrap();
    swapped[24..32].copy_from_slice(&pool_at);
    assert!(malformed(&swapped).contains("metadata offset"));
    // An event whose size runs past the chunk.
    let mut long = good.clone();
    long[HEADER_BYTES] = 0x7f;
    assert!(malformed(&long).contains("does not fit"));
    // A field of a class the metadata does not declare.
    let mut classes = classes();
    classes[4].2[0].1 = 99;
    let mut bad = good[..HEADER_BYTES].to_vec();
    let metadata_at = u64::from_be_bytes(good[24..32].try_into().unwrap()) as usize;
    bad.extend_from_slice(&good[HEADER_BYTES..metadata_at]);
    bad.extend_from_slice(&metadata(&classes));
    let size = bad.len() as u64;
    bad[8..16].copy_from_slice(&size.to_be_bytes());
    assert!(malformed(&bad).contains("undeclared class id 99"));
}

#[test]
fn context_labels_go_to_the_samples_of_their_context() {
    let mut p = read(&chunk(true)).unwrap();
    let contexts: ContextLabels = [(
        "7".to_owned(),
        [("span_name".to_owned(), "checkout".to_owned())].into(),
    )]
    .into();
    apply_context_labels(&mut p, &contexts);
    let labelled: Vec<Vec<(String, String)>> = p
        .samples()
        .iter()
        .filter_map(|s| s.labels)
        .map(|set| {
            p.label_set(set)
                .iter()
                .map(|l| {
                    let value = match l.value {
                        LabelValue::Str(s) => p.str(s).to_owned(),
                        LabelValue::Num { value, .. } => value.to_string(),
                    };
                    (p.str(l.key).to_owned(), value)
                })
                .collect()
        })
        .collect();
    let want = [
        ("contextId".to_owned(), "7".to_owned()),
        ("span_name".to_owned(), "checkout".to_owned()),
    ];
    assert_eq!(labelled, [want.to_vec()], "one sample has context 7");
}

/// The conversion applies the upload's `context_labels` (the receiver's sidecar field).
#[test]
fn a_conversion_applies_the_uploads_context_labels() {
    let mut options = crate::ConvertOptions::default();
    options.metadata.context_labels = [(
        "7".to_owned(),
        [("span_name".to_owned(), "checkout".to_owned())].into(),
    )]
    .into();
    let converted =
        crate::convert_upload("uploads/app.jfr", "etag", &chunk(true), &options).unwrap();
    let p = &converted.decoded.profile;
    let span_name = p.strings().position(|s| s == "span_name");
    let labelled = p
        .samples()
        .iter()
        .filter_map(|s| s.labels)
        .filter(|&set| {
            p.label_set(set)
                .iter()
                .any(|l| Some(l.key.index()) == span_name)
        })
        .count();
    assert_eq!(labelled, 1);
}

/// Three chunks, each started `apart_ns` after the one before.
pub(crate) fn chunks_apart(apart_ns: i64) -> Vec<u8> {
    let mut recording = Vec::new();
    for k in 0..3 {
        let mut c = chunk(true);
        // The header's start time, ns since the epoch, is at byte 32.
        let start = START_NANOS + k * apart_ns;
        c[32..40].copy_from_slice(&start.to_be_bytes());
        recording.extend_from_slice(&c);
    }
    recording
}

/// Classes nested in one another 30 deep (within the depth bound), two fields each, none
/// taking a byte: walking their values would take 2^30 steps, so values of such classes are
/// not walked.
#[test]
fn structs_of_nothing_nested_deep_cost_nothing() {
    let mut classes = classes();
    for level in 0..30u64 {
        let inner = 100 + level + 1;
        let fields = if level == 29 {
            vec![]
        } else {
            vec![("a", inner, false, false), ("b", inner, false, false)]
        };
        classes.push((100 + level, "nested", fields));
    }
    // The wall-clock samples hold the outermost inline, in no bytes, before their start time.
    let wall = classes.iter_mut().find(|c| c.0 == WALL).unwrap();
    wall.2.insert(0, ("nested", 100, false, false));
    let good = chunk(true);
    let metadata_at = u64::from_be_bytes(good[24..32].try_into().unwrap()) as usize;
    let mut bytes = good[..metadata_at].to_vec();
    bytes.extend_from_slice(&metadata(&classes));
    let size = bytes.len() as u64;
    bytes[8..16].copy_from_slice(&size.to_be_bytes());
    let p = read(&bytes).unwrap();
    assert_eq!(p.samples().len(), 3);
    let weights: Vec<_> = p.samples().iter().map(|s| s.weight).collect();
    assert_eq!(weights, [4096, 50_000_000, 150_000_000]);
}

/// Every byte of a small chunk changed, one at a time, to a few values: an error or a profile,
/// never a panic or a hang.
#[test]
fn every_byte_of_a_chunk_damaged_fails_cleanly() {
    for compressed in [true, false] {
        let good = chunk(compressed);
        for at in 0..good.len() {
            for value in [0x00, 0x01, 0x7f, 0x80, 0xff] {
                let mut damaged = good.clone();
                damaged[at] = value;
                let _ = read(&damaged);
            }
        }
    }
}
