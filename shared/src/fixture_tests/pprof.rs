//! pprof inputs: the google/pprof fixtures decode into the model with every sample type as a
//! series and totals equal to the raw profile's; synthetic profiles cover labels, inlining,
//! names, build ids and every kind of bad reference.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::decode;
use crate::{
    formats::sniff, formats::Container, model::FrameAddress, model::FrameKind, model::LabelValue,
    model::Profile, model::SeriesKind, ErrorKind, InputFormat,
};
use proflake_proto::pprof;
use prost::Message;

use super::util::{
    decode_ok, files_under, fixture, fixture_path, plain, read_varint, samples, stat,
};

const REPORT_SAMPLE: &str = "pprof/google-pprof_report_sample.cpu.pb.gz";
const CPPBENCH: &str = "pprof/google-pprof_cppbench.cpu_no_samples_type.pb.gz";
const NOMAPPINGS: &str = "pprof/google-pprof_go.nomappings.crash.pb.gz";
const LARGE: &str = "pprof/google-pprof_proftest_large.cpu.pb.gz";
const ALL: [&str; 4] = [REPORT_SAMPLE, CPPBENCH, NOMAPPINGS, LARGE];

// ---- helpers ----------------------------------------------------------------------------

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    assert!(bytes.starts_with(&[0x1f, 0x8b]), "fixture is gzip");
    plain(bytes.to_vec(), "fixture")
}

/// The fixture as prost reads it, for computing expected figures independently of the
/// decoder.
fn raw(rel: &str) -> pprof::Profile {
    pprof::Profile::decode(gunzip(&fixture(rel)).as_slice()).expect("fixture decodes with prost")
}

fn raw_str(p: &pprof::Profile, i: i64) -> String {
    String::from_utf8_lossy(&p.string_table[i as usize]).into_owned()
}

/// `type/unit` of each sample type, in order.
fn raw_types(p: &pprof::Profile) -> Vec<String> {
    p.sample_type
        .iter()
        .map(|t| format!("{}/{}", raw_str(p, t.r#type), raw_str(p, t.unit)))
        .collect()
}

/// Sum of each sample type's values over all samples, keyed by `type/unit`.
fn raw_sums(p: &pprof::Profile) -> BTreeMap<String, i64> {
    let mut sums: BTreeMap<String, i64> = raw_types(p).into_iter().map(|t| (t, 0)).collect();
    for s in &p.sample {
        for (t, v) in raw_types(p).iter().zip(&s.value) {
            *sums.get_mut(t).unwrap() += v;
        }
    }
    sums
}

/// Sum of model sample weights per series, keyed by `name/unit`.
fn model_sums(profile: &Profile) -> BTreeMap<String, i64> {
    let mut sums: BTreeMap<String, i64> = profile
        .all_series()
        .map(|(_, s)| (series_key(profile, s), 0))
        .collect();
    for s in profile.samples() {
        *sums
            .get_mut(&series_key(profile, profile.series(s.series)))
            .unwrap() += s.weight;
    }
    sums
}

fn series_key(profile: &Profile, s: &crate::model::Series) -> String {
    format!("{}/{}", profile.str(s.name), profile.str(s.unit))
}

/// Series as `(name/unit, kind, period, frequency_hz)`, in order.
fn series_summary(profile: &Profile) -> Vec<(String, SeriesKind, Option<u64>, Option<u64>)> {
    profile
        .all_series()
        .map(|(_, s)| (series_key(profile, s), s.kind, s.period, s.frequency_hz))
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn non_zero_values(p: &pprof::Profile) -> usize {
    p.sample
        .iter()
        .map(|s| s.value.iter().filter(|&&v| v != 0).count())
        .sum()
}

/// Checks what every fixture must satisfy: format, totals per series, one model sample per
/// non-zero value, no sample times, and stacks as deep as the location lists with the leaf
/// being the first location.
fn check_fixture(rel: &str) -> (pprof::Profile, Profile) {
    let raw = raw(rel);
    let decoded = decode_ok(&fixture(rel), rel);
    assert_eq!(decoded.format, InputFormat::Pprof, "{rel}");
    assert_eq!(decoded.container, Container::Gzip, "{rel}");
    let profile = decoded.profile;
    assert_eq!(profile.source_format, "pprof");
    assert_eq!(
        model_sums(&profile),
        raw_sums(&raw),
        "{rel}: totals per series"
    );
    assert_eq!(profile.samples().len(), non_zero_values(&raw), "{rel}");
    assert!(profile.samples().iter().all(|s| s.time.is_none()), "{rel}");
    let locations: HashMap<u64, &pprof::Location> =
        raw.location.iter().map(|l| (l.id, l)).collect();
    let functions: HashMap<u64, &pprof::Function> =
        raw.function.iter().map(|f| (f.id, f)).collect();
    let views = samples(&profile);
    let mut at = 0;
    for s in &raw.sample {
        for _ in s.value.iter().filter(|&&v| v != 0) {
            let view = &views[at];
            at += 1;
            assert_eq!(
                view.frames().len(),
                s.location_id.len(),
                "{rel}: stack depth"
            );
            let leaf = locations[&s.location_id[0]];
            let leaf_view = view.leaf().unwrap();
            if leaf.address != 0 {
                assert_eq!(
                    leaf_view.address,
                    Some(FrameAddress::Absolute(leaf.address))
                );
            }
            if let Some(line) = leaf.line.first() {
                let name = raw_str(&raw, functions[&line.function_id].name);
                assert_eq!(leaf_view.function, Some(name), "{rel}");
            }
        }
    }
    (raw, profile)
}

// ---- the fixtures -----------------------------------------------------------------------

#[test]
fn report_sample_cpu() {
    let (raw, profile) = check_fixture(REPORT_SAMPLE);
    assert_eq!(raw.sample.len(), 76);
    assert_eq!(raw.period, 10_000_000);
    assert_eq!(profile.samples().len(), 152);
    assert_eq!(
        model_sums(&profile),
        BTreeMap::from([
            ("samples/count".to_owned(), 176),
            ("cpu/nanoseconds".to_owned(), 1_760_000_000),
        ])
    );
    assert_eq!(
        series_summary(&profile),
        [
            ("samples/count".into(), SeriesKind::Other, None, Some(100)),
            (
                "cpu/nanoseconds".into(),
                SeriesKind::CpuTime,
                Some(10_000_000),
                None
            ),
        ]
    );
    assert!(profile
        .all_series()
        .all(|(_, s)| profile.opt_str(s.source) == Some("pprof")));
    assert_eq!(profile.start_time, Some(raw.time_nanos));
    assert_eq!(profile.duration, Some(raw.duration_nanos));
    assert!(raw.time_nanos > 0 && raw.duration_nanos > 0);
    assert_eq!(profile.images().len(), 3);
    assert_eq!(
        profile
            .attributes
            .get("pprof.period_type")
            .map(String::as_str),
        Some("cpu/nanoseconds")
    );
    // No labels: one process and one thread, both unknown.
    assert_eq!(profile.processes().len(), 1);
    assert_eq!(profile.threads().len(), 1);
    assert_eq!(profile.processes().next().unwrap().1.pid, None);
    // Go frames are native code with names, files and lines.
    let main = profile
        .frames()
        .find(|(_, f)| profile.opt_str(f.function) == Some("main.main"))
        .expect("main.main frame");
    assert_eq!(main.1.kind, FrameKind::Native);
    assert!(main.1.file.is_some() && main.1.line.is_some());
}

#[test]
fn cppbench_is_unsymbolized() {
    let (raw, profile) = check_fixture(CPPBENCH);
    assert_eq!(raw.sample.len(), 52);
    assert_eq!(raw.function.len(), 0);
    assert_eq!(raw.mapping.len(), 12);
    assert_eq!(
        series_summary(&profile),
        [(
            "cpu/nanoseconds".into(),
            SeriesKind::CpuTime,
            Some(10_000_000),
            None
        )]
    );
    assert_eq!(
        model_sums(&profile),
        BTreeMap::from([("cpu/nanoseconds".to_owned(), 7_120_000_000)])
    );
    assert_eq!(profile.images().len(), 12);
    assert!(profile.frames().len() > 0);
    for (_, f) in profile.frames() {
        assert_eq!(f.function, None);
        assert!(matches!(f.address, Some(FrameAddress::Absolute(a)) if a != 0));
        assert!(f.image.is_some(), "every cppbench location has a mapping");
        assert_eq!(f.kind, FrameKind::Native);
    }
    assert_eq!(profile.start_time, None);
    assert_eq!(profile.duration, None);
}

#[test]
fn go_heap_without_mappings() {
    let (raw, profile) = check_fixture(NOMAPPINGS);
    assert_eq!(raw.sample.len(), 2);
    assert_eq!(raw.mapping.len(), 0);
    assert_eq!(
        series_summary(&profile),
        [
            ("alloc_objects/count".into(), SeriesKind::Other, None, None),
            (
                "alloc_space/bytes".into(),
                SeriesKind::Other,
                Some(524_288),
                None
            ),
            ("inuse_objects/count".into(), SeriesKind::Other, None, None),
            (
                "inuse_space/bytes".into(),
                SeriesKind::Other,
                Some(524_288),
                None
            ),
        ]
    );
    assert_eq!(
        model_sums(&profile),
        BTreeMap::from([
            ("alloc_objects/count".to_owned(), 2),
            ("alloc_space/bytes".to_owned(), 1_765_955),
            ("inuse_objects/count".to_owned(), 2),
            ("inuse_space/bytes".to_owned(), 1_765_955),
        ])
    );
    assert_eq!(profile.samples().len(), 8);
    assert_eq!(profile.images().len(), 0);
    assert!(profile.frames().all(|(_, f)| f.image.is_none()));
}

#[test]
fn large_cpu_totals() {
    let (raw, profile) = check_fixture(LARGE);
    assert_eq!(raw.sample.len(), 20_430);
    assert_eq!(raw_types(&raw), ["samples/count", "cpu/nanoseconds"]);
    let sums = model_sums(&profile);
    assert_eq!(sums["samples/count"], 24_029);
    assert_eq!(sums["cpu/nanoseconds"], 240_290_000_000);
    assert_eq!(profile.samples().len(), 40_860);
    let cpu: Vec<_> = profile
        .all_series()
        .filter(|(_, s)| s.kind == SeriesKind::CpuTime)
        .map(|(_, s)| series_key(&profile, s))
        .collect();
    assert_eq!(cpu, ["cpu/nanoseconds"]);
}

#[test]
fn plain_and_gzip_give_the_same_model() {
    for rel in ALL {
        let gz = fixture(rel);
        let plain = gunzip(&gz);
        let a = decode_ok(&gz, rel);
        let b = decode_ok(&plain, rel);
        assert_eq!(a.container, Container::Gzip);
        assert_eq!(b.container, Container::Plain, "{rel}");
        assert_eq!(b.format, InputFormat::Pprof, "{rel}");
        // Table by table: the same input must intern everything in the same order.
        let (a, b) = (&a.profile, &b.profile);
        assert_eq!(a.samples(), b.samples(), "{rel}");
        assert!(a.stacks().eq(b.stacks()), "{rel}");
        assert!(a.frames().eq(b.frames()), "{rel}");
        assert!(a.images().eq(b.images()), "{rel}");
        assert!(a.all_series().eq(b.all_series()), "{rel}");
        assert!(a.threads().eq(b.threads()), "{rel}");
        assert!(a.label_sets().eq(b.label_sets()), "{rel}");
        assert_eq!(series_summary(a), series_summary(b));
        assert_eq!(a.attributes, b.attributes);
        assert_eq!(a.stats, b.stats);
        assert_eq!(a.duration, b.duration);
        assert_eq!(a.start_time, b.start_time);
    }
}

#[test]
fn mappings_become_images() {
    // None of the google/pprof fixtures records a build id (the synthetic profile below
    // covers them); mappings equal in everything but id and flags become one image.
    for rel in ALL {
        let raw = raw(rel);
        let profile = decode_ok(&fixture(rel), rel).profile;
        let expected: BTreeSet<_> = raw
            .mapping
            .iter()
            .map(|m| {
                let path = raw_str(&raw, m.filename);
                (path, m.memory_start, m.memory_limit, m.file_offset, None)
            })
            .collect();
        let got: BTreeSet<_> = profile
            .images()
            .map(|(_, i)| {
                let path = profile.opt_str(i.path).unwrap_or_default().to_owned();
                let code_id = i.code_id.as_ref().map(|c| c.as_str().to_owned());
                (path, i.start, i.end, i.file_offset, code_id)
            })
            .collect();
        assert_eq!(got, expected, "{rel}");
        assert_eq!(profile.images().len(), expected.len(), "{rel}");
    }
}

// ---- sniffing ---------------------------------------------------------------------------

#[test]
fn fixtures_sniff_as_pprof() {
    for rel in ALL {
        let plain = gunzip(&fixture(rel));
        let prefix = &plain[..plain.len().min(4096)];
        assert_eq!(sniff(prefix), Some(InputFormat::Pprof), "{rel}");
    }
}

#[test]
fn otlp_and_perfetto_do_not_sniff_as_pprof() {
    let mut files = Vec::new();
    files_under(&fixture_path("pprof/not_pprof"), ".prefix", &mut files);
    assert_eq!(files.len(), 7, "OTLP prefixes");
    files_under(&fixture_path("perfetto"), ".pftrace", &mut files);
    assert!(files.len() > 7 + 10, "Perfetto traces found");
    for path in files {
        let bytes = std::fs::read(&path).unwrap();
        let prefix = &bytes[..bytes.len().min(4096)];
        assert_ne!(
            sniff(prefix),
            Some(InputFormat::Pprof),
            "{}",
            path.display()
        );
    }
}

#[test]
fn unnamed_first_sample_type_is_pprof_not_perfetto() {
    // A writer that leaves the sample type's type and unit at 0 encodes it as an empty
    // message, so the file starts `0a 00` like an empty Perfetto packet.
    let mut b = Builder::new();
    b.p.sample_type = vec![pprof::ValueType::default()];
    b.function(1, "main", "main", "main.rb");
    b.p.location.push(pprof::Location {
        id: 1,
        line: vec![line(1, 3, 0)],
        ..Default::default()
    });
    b.p.sample.push(pprof::Sample {
        location_id: vec![1],
        value: vec![7],
        label: Vec::new(),
    });
    let bytes = b.encode();
    assert_eq!(
        bytes[..3],
        [0x0a, 0x00, 0x12],
        "empty sample_type, then a sample"
    );
    assert_eq!(sniff(&bytes), Some(InputFormat::Pprof));
    let decoded = decode_ok(&bytes, "unnamed sample type");
    assert_eq!(decoded.format, InputFormat::Pprof);
    let samples = samples(&decoded.profile);
    assert_eq!(samples.len(), 1);
    assert_eq!(samples[0].weight, 7);
    assert_eq!(samples[0].frames()[0].function.as_deref(), Some("main"));
}

// ---- synthetic profiles -----------------------------------------------------------------

/// Builds profiles with a string table managed for the test.
#[derive(Default)]
struct Builder {
    p: pprof::Profile,
}

impl Builder {
    fn new() -> Self {
        let mut b = Builder::default();
        b.p.string_table.push(Vec::new());
        b
    }

    fn s(&mut self, text: &str) -> i64 {
        self.bytes(text.as_bytes())
    }

    fn bytes(&mut self, raw: &[u8]) -> i64 {
        if let Some(i) = self.p.string_table.iter().position(|s| s == raw) {
            return i as i64;
        }
        self.p.string_table.push(raw.to_vec());
        self.p.string_table.len() as i64 - 1
    }

    fn vt(&mut self, kind: &str, unit: &str) -> pprof::ValueType {
        pprof::ValueType {
            r#type: self.s(kind),
            unit: self.s(unit),
        }
    }

    fn str_label(&mut self, key: &str, value: &str) -> pprof::Label {
        pprof::Label {
            key: self.s(key),
            str: self.s(value),
            ..Default::default()
        }
    }

    fn num_label(&mut self, key: &str, num: i64, unit: &str) -> pprof::Label {
        pprof::Label {
            key: self.s(key),
            num,
            num_unit: self.s(unit),
            ..Default::default()
        }
    }

    fn function(&mut self, id: u64, name: &str, system_name: &str, file: &str) {
        let f = pprof::Function {
            id,
            name: self.s(name),
            system_name: self.s(system_name),
            filename: self.s(file),
            start_line: 0,
        };
        self.p.function.push(f);
    }

    fn mapping(&mut self, id: u64, file: &str, build_id: &str, start: u64, limit: u64) {
        let m = pprof::Mapping {
            id,
            memory_start: start,
            memory_limit: limit,
            file_offset: 0x1000,
            filename: self.s(file),
            build_id: self.s(build_id),
            ..Default::default()
        };
        self.p.mapping.push(m);
    }

    fn encode(&self) -> Vec<u8> {
        self.p.encode_to_vec()
    }
}

fn line(function_id: u64, line: i64, column: i64) -> pprof::Line {
    pprof::Line {
        function_id,
        line,
        column,
    }
}

/// A Go-like wall-and-CPU profile with inlining, labels, a kernel frame, build ids of both
/// kinds and every header field.
fn synthetic() -> Builder {
    let mut b = Builder::new();
    b.p.sample_type = vec![b.vt("samples", "count"), b.vt("wall", "nanoseconds")];
    b.p.period_type = Some(b.vt("wall", "nanoseconds"));
    b.p.period = 1_000_000;
    b.p.time_nanos = 1_700_000_000_000_000_000;
    b.p.duration_nanos = 2_000_000_000;
    b.p.drop_frames = b.s("runtime\\..*");
    b.p.keep_frames = b.s("main\\..*");
    b.p.comment = vec![b.s("first comment"), b.s("second comment")];
    b.p.doc_url = b.s("https://example.com/doc");
    b.p.default_sample_type = b.s("wall");
    b.mapping(
        1,
        "/usr/bin/app",
        "B03E4A7F5E884C8DA04B05FA32CC4CBD69FAFF51",
        0x400000,
        0x500000,
    );
    b.mapping(2, "[kernel.kallsyms]", "", 0xffff0000, 0xffffffff);
    b.mapping(3, "/usr/lib/libgo.so", "abc_DEF-1/xyz", 0x7f0000, 0x7f8000);
    b.function(1, "main.main", "main.main", "/src/main.go");
    b.function(2, "main.inlined", "main.inlined", "/src/util.go");
    b.function(3, "", "_ZN3foo3barEv", "/src/foo.cc");
    b.function(4, "do_syscall_64", "", "");
    // Location 10: main.inlined inlined into main.main.
    b.p.location.push(pprof::Location {
        id: 10,
        mapping_id: 1,
        address: 0x401234,
        line: vec![line(2, 7, 3), line(1, 42, 0)],
        is_folded: false,
    });
    b.p.location.push(pprof::Location {
        id: 11,
        mapping_id: 1,
        address: 0x402000,
        line: vec![line(3, 5, 0)],
        is_folded: false,
    });
    b.p.location.push(pprof::Location {
        id: 12,
        mapping_id: 2,
        address: 0xffff1234,
        line: vec![line(4, 0, 0)],
        is_folded: false,
    });
    // Unsymbolized.
    b.p.location.push(pprof::Location {
        id: 13,
        mapping_id: 3,
        address: 0x7f0042,
        line: vec![],
        is_folded: false,
    });
    let labels = vec![
        b.num_label("thread_id", 77, ""),
        b.str_label("thread_name", "worker-1"),
        b.str_label("pid", "4242"),
        b.num_label("bytes_read", 512, "bytes"),
        b.str_label("trace_id", "4bf92f3577b34da6a3ce929d0e0e4736"),
        b.str_label("span_id", "00f067aa0ba902b7"),
    ];
    // Leaf first: kernel <- foo::bar <- (inlined <- main).
    b.p.sample.push(pprof::Sample {
        location_id: vec![12, 11, 10],
        value: vec![3, 3_000_000],
        label: labels,
    });
    b.p.sample.push(pprof::Sample {
        location_id: vec![13, 10],
        value: vec![0, 5_000_000],
        label: vec![],
    });
    b
}

#[test]
fn synthetic_profile_maps_every_field() {
    let bytes = synthetic().encode();
    assert_eq!(sniff(&bytes), Some(InputFormat::Pprof));
    let profile = decode_ok(&bytes, "synthetic").profile;

    assert_eq!(
        series_summary(&profile),
        [
            ("samples/count".into(), SeriesKind::Other, None, Some(1000)),
            (
                "wall/nanoseconds".into(),
                SeriesKind::WallTime,
                Some(1_000_000),
                None
            ),
        ]
    );
    // The zero value of the second sample is not a sample.
    assert_eq!(profile.samples().len(), 3);
    assert_eq!(stat(&profile, "pprof_zero_value"), 1);
    assert_eq!(profile.start_time, Some(1_700_000_000_000_000_000));
    assert_eq!(profile.duration, Some(2_000_000_000));
    let attr = |k: &str| profile.attributes.get(k).map(String::as_str);
    assert_eq!(attr("pprof.drop_frames"), Some("runtime\\..*"));
    assert_eq!(attr("pprof.keep_frames"), Some("main\\..*"));
    assert_eq!(attr("pprof.comment.0"), Some("first comment"));
    assert_eq!(attr("pprof.comment.1"), Some("second comment"));
    assert_eq!(attr("pprof.doc_url"), Some("https://example.com/doc"));
    assert_eq!(attr("pprof.default_sample_type"), Some("wall"));

    let views = samples(&profile);
    let first = &views[0];
    assert_eq!((first.pid, first.tid), (Some(4242), Some(77)));
    assert_eq!(first.thread_name.as_deref(), Some("worker-1"));
    assert_eq!(first.weight, 3);
    assert_eq!(views[1].weight, 3_000_000);
    let last = &views[2];
    assert_eq!((last.pid, last.tid, last.weight), (None, None, 5_000_000));

    // Root first: main (with main.inlined inlined into it), foo::bar, the kernel.
    let stack = first.frames();
    let names: Vec<_> = stack.iter().map(|f| f.function.as_deref()).collect();
    assert_eq!(
        names,
        [
            Some("main.inlined"),
            Some("foo::bar()"),
            Some("do_syscall_64")
        ]
    );
    let kinds: Vec<_> = stack.iter().map(|f| f.kind.as_str()).collect();
    assert_eq!(kinds, ["native", "native", "kernel"]);
    assert_eq!(stack[1].system_name.as_deref(), Some("_ZN3foo3barEv"));
    assert_eq!(stack[0].system_name, None, "Go names are not mangled");
    assert_eq!(stack[0].file.as_deref(), Some("/src/util.go"));
    assert_eq!(stack[0].line, Some(7));
    assert_eq!(stack[0].address, Some(FrameAddress::Absolute(0x401234)));
    assert_eq!(
        stack[0].code_id.as_deref(),
        Some("b03e4a7f5e884c8da04b05fa32cc4cbd69faff51")
    );

    let sample = profile.samples().get(0);
    let root = profile.stack_frames(sample.stack.unwrap()).last().unwrap();
    let root = profile.frame(root);
    assert_eq!(root.column, Some(3));
    assert_eq!(root.inlined_into.len(), 1);
    let caller = &root.inlined_into[0];
    assert_eq!(profile.opt_str(caller.function), Some("main.main"));
    assert_eq!(profile.opt_str(caller.file), Some("/src/main.go"));
    assert_eq!((caller.line, caller.column), (Some(42), None));

    // Unsymbolized leaf of the second sample: address and image only.
    let unsymbolized = views[2].leaf().unwrap();
    assert_eq!(unsymbolized.function, None);
    assert_eq!(unsymbolized.address, Some(FrameAddress::Absolute(0x7f0042)));
    assert_eq!(
        unsymbolized.image_path.as_deref(),
        Some("/usr/lib/libgo.so")
    );
    // A Go-style build id cannot be a code id.
    assert_eq!(unsymbolized.code_id, None);
    assert_eq!(stat(&profile, "pprof_build_id_not_hex"), 1);

    let images: Vec<_> = profile.images().map(|(_, i)| i.clone()).collect();
    assert_eq!(images.len(), 3);
    assert_eq!(
        (images[0].start, images[0].end, images[0].file_offset),
        (0x400000, 0x500000, 0x1000)
    );
    assert_eq!(
        images[0].debug_id.map(|d| d.to_string()).as_deref(),
        Some("7f4a3eb0-885e-8d4c-a04b-05fa32cc4cbd")
    );

    // Labels, all kept in order, and the trace link.
    let labels = profile.label_set(sample.labels.unwrap());
    assert_eq!(labels.len(), 6);
    assert_eq!(profile.str(labels[0].key), "thread_id");
    assert_eq!(
        labels[0].value,
        LabelValue::Num {
            value: 77,
            unit: None
        }
    );
    match labels[3].value {
        LabelValue::Num { value, unit } => {
            assert_eq!(value, 512);
            assert_eq!(profile.opt_str(unit), Some("bytes"));
        }
        other => panic!("bytes_read is {other:?}"),
    }
    match labels[1].value {
        LabelValue::Str(s) => assert_eq!(profile.str(s), "worker-1"),
        other => panic!("thread_name is {other:?}"),
    }
    let link = profile.link(sample.link.unwrap());
    assert_eq!(hex(&link.trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(hex(&link.span_id), "00f067aa0ba902b7");
    assert_eq!(profile.samples().get(2).link, None);
    assert_eq!(profile.samples().get(2).labels, None);
}

#[test]
fn thread_label_spellings() {
    let mut b = Builder::new();
    b.p.sample_type = vec![b.vt("cpu", "nanoseconds")];
    let label_sets = [
        vec![b.str_label("thread", "main")],
        vec![b.str_label("thread", "12")],
        vec![b.str_label("tid", "13"), b.str_label("thread.name", "io")],
        vec![
            b.num_label("thread.id", 14, ""),
            b.num_label("process.pid", 9, ""),
        ],
    ];
    for label in label_sets {
        b.p.sample.push(pprof::Sample {
            location_id: vec![],
            value: vec![1],
            label,
        });
    }
    let profile = decode_ok(&b.encode(), "threads").profile;
    let got: Vec<_> = samples(&profile)
        .into_iter()
        .map(|s| (s.pid, s.tid, s.thread_name, s.stack.is_none()))
        .collect();
    assert_eq!(
        got,
        [
            (None, None, Some("main".to_owned()), true),
            (None, Some(12), None, true),
            (None, Some(13), Some("io".to_owned()), true),
            (Some(9), Some(14), None, true),
        ]
    );
}

#[test]
fn invalid_utf8_strings_are_repaired_and_counted() {
    let mut b = Builder::new();
    b.p.sample_type = vec![b.vt("cpu", "nanoseconds")];
    let name = b.bytes(b"caf\xe9");
    b.p.function.push(pprof::Function {
        id: 1,
        name,
        ..Default::default()
    });
    b.p.location.push(pprof::Location {
        id: 1,
        line: vec![line(1, 0, 0)],
        ..Default::default()
    });
    b.p.sample.push(pprof::Sample {
        location_id: vec![1],
        value: vec![10],
        label: vec![],
    });
    let profile = decode_ok(&b.encode(), "utf8").profile;
    assert_eq!(stat(&profile, "pprof_string_invalid_utf8"), 1);
    let leaf = samples(&profile)[0].leaf().unwrap().clone();
    assert_eq!(leaf.function.as_deref(), Some("caf\u{fffd}"));
    assert_eq!(leaf.kind, "unknown", "no address, image or telling file");
}

// ---- malformed input --------------------------------------------------------------------

fn pprof_error(bytes: &[u8]) -> ErrorKind {
    match decode(bytes, Some(InputFormat::Pprof)) {
        Ok(d) => panic!("decoded {} samples", d.profile.samples().len()),
        Err(e) => e.kind().clone(),
    }
}

fn malformed_what(bytes: &[u8]) -> String {
    match pprof_error(bytes) {
        ErrorKind::Malformed { format, what, .. } => {
            assert_eq!(format, "pprof");
            what
        }
        other => panic!("expected Malformed, got {other:?}"),
    }
}

/// The byte ranges `(start, end)` of the top-level fields of a protobuf message.
fn top_level_records(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut records = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let (tag, used) = read_varint(&bytes[at..]).expect("tag");
        let body = at + used;
        let end = match tag & 7 {
            0 => body + read_varint(&bytes[body..]).expect("varint").1,
            2 => {
                let (len, used) = read_varint(&bytes[body..]).expect("length");
                body + used + len as usize
            }
            other => panic!("wire type {other} in a pprof fixture"),
        };
        records.push((at, end));
        at = end;
    }
    records
}

#[test]
fn truncated_files_are_truncated_errors() {
    let plain = gunzip(&fixture(REPORT_SAMPLE));
    let records = top_level_records(&plain);
    assert_eq!(records.last().unwrap().1, plain.len());
    let mut inside = 0;
    for cut in 1..plain.len() {
        let within_a_record = records.iter().any(|&(start, end)| start < cut && cut < end);
        match decode(&plain[..cut], Some(InputFormat::Pprof)) {
            Err(e) if within_a_record => {
                inside += 1;
                assert!(
                    matches!(e.kind(), ErrorKind::Truncated { .. }),
                    "cut at {cut}: {e}"
                );
            }
            // Cut between records: a shorter, valid protobuf whose references may dangle.
            Err(e) => assert!(
                matches!(e.kind(), ErrorKind::Malformed { .. }),
                "cut at {cut}: {e}"
            ),
            Ok(d) => {
                assert!(!within_a_record, "cut at {cut} decoded");
                assert!(d.profile.samples().len() < non_zero_values(&raw(REPORT_SAMPLE)));
            }
        }
    }
    assert!(inside > plain.len() / 2, "most cuts fall inside a record");
    let gz = fixture(REPORT_SAMPLE);
    let kind = pprof_error(&gz[..gz.len() / 2]);
    assert!(
        matches!(
            kind,
            ErrorKind::Truncated { .. } | ErrorKind::Decompression { .. }
        ),
        "{kind:?}"
    );
}

#[test]
fn garbage_is_malformed() {
    assert!(malformed_what(&[0xff; 16]).contains("not a protobuf field"));
    assert!(malformed_what(b"not a profile at all").contains("not a protobuf field"));
    // Well-framed at the top level, but the sample_type body is not a message.
    let what = malformed_what(&[0x0a, 0x01, 0xff]);
    assert!(what.contains("Profile does not decode"), "{what}");
    // A string index in a varint where a message belongs.
    let what = malformed_what(&[0x0a, 0x02, 0x08, 0x01, 0x58, 0x01]);
    assert!(what.contains("Profile does not decode"), "{what}");
    // Samples are decoded one at a time: a broken one is named.
    let what = malformed_what(&[0x12, 0x00, 0x12, 0x01, 0xff]);
    assert!(what.starts_with("sample[1] does not decode"), "{what}");
    // A sample that is not a message at all.
    let what = malformed_what(&[0x10, 0x01]);
    assert!(what.contains("Profile does not decode"), "{what}");
}

#[test]
fn bad_references_are_named() {
    let mut b = synthetic();
    b.p.sample[1].location_id[0] = 99;
    assert_eq!(
        malformed_what(&b.encode()),
        "sample[1].location_id 99 not in location table"
    );

    let mut b = synthetic();
    b.p.sample_type[0].unit = 500;
    assert_eq!(
        malformed_what(&b.encode()),
        format!(
            "sample_type[0].unit 500 not in string table of {} entries",
            b.p.string_table.len()
        )
    );

    let mut b = synthetic();
    b.p.function[2].name = -1;
    assert!(malformed_what(&b.encode()).starts_with("function[2].name -1 not in string table"));

    let mut b = synthetic();
    b.p.location[1].line[0].function_id = 8;
    assert_eq!(
        malformed_what(&b.encode()),
        "location[1].line[0].function_id 8 not in function table"
    );

    let mut b = synthetic();
    b.p.location[0].mapping_id = 7;
    assert_eq!(
        malformed_what(&b.encode()),
        "location[0].mapping_id 7 not in mapping table"
    );

    let mut b = synthetic();
    b.p.sample[0].label[2].str = 1000;
    assert!(malformed_what(&b.encode()).starts_with("sample[0].label.str 1000"));

    let mut b = synthetic();
    b.p.sample[0].value.push(1);
    assert_eq!(
        malformed_what(&b.encode()),
        "sample[0] has 3 values for 2 sample types"
    );

    // A location id of 0 refers to nothing.
    let mut b = synthetic();
    b.p.sample[0].location_id[1] = 0;
    assert_eq!(
        malformed_what(&b.encode()),
        "sample[0].location_id 0 not in location table"
    );
}

#[test]
fn error_offsets_point_at_the_sample() {
    let mut b = synthetic();
    b.p.sample[1].location_id[0] = 99;
    let bytes = b.encode();
    let ErrorKind::Malformed { offset, .. } = pprof_error(&bytes) else {
        panic!("not malformed");
    };
    // The record starts with the tag of field 2 (sample), LEN.
    assert_eq!(bytes[offset as usize], 0x12);
    let second =
        pprof::Sample::decode(&bytes[offset as usize + 2..][..bytes[offset as usize + 1] as usize]);
    assert_eq!(second.unwrap().location_id, [99, 10]);
}

#[test]
fn duplicate_and_zero_ids_do_not_break_decoding() {
    let mut b = synthetic();
    let mut dup = b.p.location[0].clone();
    dup.address = 0xdead;
    b.p.location.push(dup);
    b.p.function.push(pprof::Function::default());
    let profile = decode_ok(&b.encode(), "duplicates").profile;
    assert_eq!(stat(&profile, "pprof_duplicate_id"), 1);
    assert_eq!(stat(&profile, "pprof_zero_id"), 1);
    // The first location with id 10 wins.
    assert!(profile
        .frames()
        .all(|(_, f)| f.address != Some(FrameAddress::Absolute(0xdead))));
}

#[test]
fn corrupted_bytes_fail_cleanly() {
    let plain = gunzip(&fixture(REPORT_SAMPLE));
    let mut failures = 0;
    for at in (0..plain.len()).step_by(2) {
        for flip in [0xff, 0x80, 0x01] {
            let mut bytes = plain.clone();
            bytes[at] ^= flip;
            if let Err(e) = decode(&bytes, Some(InputFormat::Pprof)) {
                failures += 1;
                assert!(
                    matches!(
                        e.kind(),
                        ErrorKind::Malformed { .. } | ErrorKind::Truncated { .. }
                    ),
                    "byte {at} ^ {flip:#x}: {e}"
                );
            }
        }
    }
    assert!(failures > plain.len() / 2, "most corruptions are detected");
}

// ---- pprof-rs: `cpu/count` ----------------------------------------------------------------

/// A profile shaped as tikv/pprof-rs writes it: one sample type `cpu/count`, a location per
/// function with one line, samples of (leaf-first functions, count). `period_ns` adds the
/// `cpu/nanoseconds` period type some versions write.
fn pprof_rs(period_ns: Option<i64>, samples: &[(&[&str], i64)]) -> pprof::Profile {
    let mut b = Builder::new();
    b.p.sample_type = vec![b.vt("cpu", "count")];
    if let Some(period) = period_ns {
        b.p.period_type = Some(b.vt("cpu", "nanoseconds"));
        b.p.period = period;
    }
    let mut ids: HashMap<String, u64> = HashMap::new();
    for (stack, count) in samples {
        let mut location_id = Vec::new();
        for name in *stack {
            let next = ids.len() as u64 + 1;
            let id = *ids.entry((*name).to_owned()).or_insert(next);
            if id == next {
                b.function(id, name, name, "src/main.rs");
                b.p.location.push(pprof::Location {
                    id,
                    line: vec![line(id, 10 + id as i64, 0)],
                    ..Default::default()
                });
            }
            location_id.push(id);
        }
        b.p.sample.push(pprof::Sample {
            location_id,
            value: vec![*count],
            label: vec![],
        });
    }
    b.p
}

const PPROF_RS_STACKS: [(&[&str], i64); 3] = [
    (&["work", "main"], 7),
    (&["hash", "work", "main"], 4),
    (&["main"], 2),
];

/// Converts a pprof-rs profile at a given start; returns the conversion and, per `samples`
/// row of the tables, `(value, weight_ns)`.
fn convert_pprof_rs(p: &pprof::Profile) -> (crate::Converted, Vec<(i64, Option<i64>)>) {
    let options = crate::ConvertOptions {
        metadata: crate::UploadMetadata {
            timestamp: Some(1_700_000_000.0),
            ..Default::default()
        },
        ..Default::default()
    };
    let converted = crate::convert_upload("uploads/rs.pb", "etag", &p.encode_to_vec(), &options)
        .unwrap_or_else(|e| panic!("{e}"));
    let tables = super::tables::read_tables(&converted);
    let rows = tables["samples"]
        .iter()
        .flat_map(|b| {
            let values = super::tables::i64s(b, "value");
            values
                .into_iter()
                .zip(super::tables::i64s(b, "weight_ns"))
                .map(|(v, ns)| (v.unwrap(), ns))
        })
        .collect();
    (converted, rows)
}

/// What the test expects of a pprof-rs conversion, from the profile it built.
fn check_pprof_rs_chunks(p: &pprof::Profile, converted: &crate::Converted, interval_ns: i64) {
    let counts: i64 = p.sample.iter().map(|s| s.value[0]).sum();
    let chunks = converted.sample_v2();
    assert!(
        !chunks.is_empty(),
        "cpu/count is CPU time, so chunks are written"
    );
    for (key, json) in &chunks {
        assert_eq!(
            crate::writers::sample_v2::check_sample_v2(json),
            vec![],
            "{key}"
        );
    }
    let v2 = &converted.manifest.sample_v2;
    assert_eq!(v2.samples, counts as u64, "one chunk sample per count");
    assert_eq!(
        v2.expansion.as_ref().map(|e| e.interval_ns),
        Some(interval_ns)
    );
    let series = &converted.manifest.series;
    assert_eq!(series.len(), 1);
    assert_eq!(
        (series[0].kind.as_str(), series[0].total_value),
        ("cpu_time", i128::from(counts))
    );
}

#[test]
fn pprof_rs_cpu_count_without_period_is_counted_cpu_time() {
    let p = pprof_rs(None, &PPROF_RS_STACKS);
    let profile = decode_ok(&p.encode_to_vec(), "pprof-rs").profile;
    assert_eq!(
        series_summary(&profile),
        [("cpu/count".into(), SeriesKind::CpuTime, None, None)]
    );
    let (converted, rows) = convert_pprof_rs(&p);
    // The rate is unknown: laid out at the default 100 Hz (10 ms apart, docs/outputs.md), and
    // no nanoseconds in the tables.
    check_pprof_rs_chunks(&p, &converted, 10_000_000);
    let values: Vec<i64> = p.sample.iter().map(|s| s.value[0]).collect();
    let mut table_values: Vec<i64> = rows.iter().map(|r| r.0).collect();
    table_values.sort_unstable();
    let mut expected = values.clone();
    expected.sort_unstable();
    assert_eq!(table_values, expected);
    assert!(rows.iter().all(|r| r.1.is_none()), "weight_ns is null");
}

#[test]
fn pprof_rs_cpu_count_with_a_period_is_cpu_time_at_that_rate() {
    // pprof-rs's default 99 Hz: a period of 1e9 / 99 ns.
    let period = 1_000_000_000 / 99;
    let p = pprof_rs(Some(period), &PPROF_RS_STACKS);
    let profile = decode_ok(&p.encode_to_vec(), "pprof-rs").profile;
    assert_eq!(
        series_summary(&profile),
        [("cpu/count".into(), SeriesKind::CpuTime, None, Some(99))]
    );
    let (converted, rows) = convert_pprof_rs(&p);
    check_pprof_rs_chunks(&p, &converted, period);
    assert_eq!(rows.len(), p.sample.len());
    for (value, weight_ns) in rows {
        assert_eq!(weight_ns, Some(value * period), "value {value}");
    }
}
