//! otlp inputs: fixtures decode into the model and convert to valid Sample v2.
//!
//! Fixtures (`fixtures/otlp`, see its SOURCES.md): the sig-profiling eBPF captures in their
//! original v1.8 numbering and re-encoded as v1.10 binary and JSON, and a synthetic request
//! covering the edge cases (v1.10 binary and JSON, v1.9 binary). Totals are checked against
//! counts taken from the raw messages with the proto crate, not only against constants.

use crate::{
    convert_upload, formats::sniff, model::FrameAddress, model::FrameKind, model::LabelValue,
    model::Profile, model::SeriesKind, writers::sample_v2::check_sample_v2, ConvertOptions,
    Decoded, ErrorKind, InputFormat,
};
use proflake_proto::otlp::profiles::ProfilesData;
use prost::Message;

use super::util::{decode_ok, files_under, fixture, fixture_path, gzip, samples, SampleView};

const PROFILE_V1_10: &str = "otlp/sig-profiling_profile.v1_10.pb";
const PROFILE_V1_8: &str = "otlp/sig-profiling_profile.v1_8.otlp";
const PROFILE_JSON: &str = "otlp/sig-profiling_profile.v1_10.json";
const K8S_0: &str = "otlp/sig-profiling_k8s_0.v1_10.pb";
const K8S_1: &str = "otlp/sig-profiling_k8s_1.v1_10.pb";
const K8S_STREAM: &str = "otlp/sig-profiling_k8s.v1_8.lenprefixed.otlp";
const SYNTH_V1_10: &str = "otlp/synthetic_edge_cases.v1_10.pb";
const SYNTH_V1_9: &str = "otlp/synthetic_edge_cases.v1_9.pb";
const SYNTH_JSON: &str = "otlp/synthetic_edge_cases.v1_10.json";

const BINARY: &[&str] = &[
    PROFILE_V1_10,
    PROFILE_V1_8,
    K8S_0,
    K8S_1,
    K8S_STREAM,
    SYNTH_V1_10,
    SYNTH_V1_9,
];
const JSON: &[&str] = &[PROFILE_JSON, SYNTH_JSON];

fn decode(rel: &str) -> Decoded {
    decode_ok(&fixture(rel), rel)
}

/// Counts in a v1.10 request, read with the proto crate: (resources, profiles, OTLP samples,
/// timestamps).
fn raw_counts(rel: &str) -> (usize, usize, usize, usize) {
    let data = ProfilesData::decode(fixture(rel).as_slice()).unwrap();
    let profiles: Vec<_> = data
        .resource_profiles
        .iter()
        .flat_map(|r| &r.scope_profiles)
        .flat_map(|s| &s.profiles)
        .collect();
    let samples: Vec<_> = profiles.iter().flat_map(|p| &p.samples).collect();
    let timestamps = samples.iter().map(|s| s.timestamps_unix_nano.len()).sum();
    (
        data.resource_profiles.len(),
        profiles.len(),
        samples.len(),
        timestamps,
    )
}

type ProcessView = (Option<i64>, Option<String>, Vec<(String, String)>);

/// Everything of a profile a reader sees, for comparing two decodes.
#[derive(Debug, PartialEq)]
struct Flat {
    samples: Vec<SampleView>,
    /// pid, name, attributes.
    processes: Vec<ProcessView>,
    labels: Vec<Vec<(String, String)>>,
    links: usize,
    start_time: Option<i64>,
    duration: Option<i64>,
    findings: Vec<String>,
}

fn flat(p: &Profile) -> Flat {
    let label = |v: LabelValue| match v {
        LabelValue::Str(s) => p.str(s).to_owned(),
        LabelValue::Num { value, unit } => format!("{value} {}", p.opt_str(unit).unwrap_or("")),
    };
    Flat {
        samples: samples(p),
        processes: p
            .processes()
            .map(|(_, pr)| {
                let attrs = pr
                    .attributes
                    .iter()
                    .map(|(k, v)| (p.str(*k).to_owned(), p.str(*v).to_owned()))
                    .collect();
                (pr.pid, p.opt_str(pr.name).map(str::to_owned), attrs)
            })
            .collect(),
        labels: p
            .samples()
            .iter()
            .map(|s| {
                s.labels
                    .map(|l| {
                        p.label_set(l)
                            .iter()
                            .map(|l| (p.str(l.key).to_owned(), label(l.value)))
                            .collect()
                    })
                    .unwrap_or_default()
            })
            .collect(),
        links: p.samples().iter().filter(|s| s.link.is_some()).count(),
        start_time: p.start_time,
        duration: p.duration,
        findings: p.findings.clone(),
    }
}

// ---- sniffing ---------------------------------------------------------------------------

fn prefix(bytes: &[u8]) -> &[u8] {
    &bytes[..bytes.len().min(4096)]
}

#[test]
fn otlp_fixtures_sniff_as_otlp() {
    for rel in BINARY {
        assert_eq!(
            sniff(prefix(&fixture(rel))),
            Some(InputFormat::Otlp),
            "{rel}"
        );
    }
    for rel in JSON {
        assert_eq!(
            sniff(prefix(&fixture(rel))),
            Some(InputFormat::OtlpJson),
            "{rel}"
        );
    }
}

/// The JSON fixture with its two top-level keys swapped, as the Collector's marshaler writes
/// them: the dictionary first.
fn dictionary_first(rel: &str) -> Vec<u8> {
    let doc: serde_json::Value = serde_json::from_slice(&fixture(rel)).unwrap();
    let swapped = format!(
        "{{\n \"dictionary\": {},\n \"resourceProfiles\": {}\n}}\n",
        serde_json::to_string_pretty(&doc["dictionary"]).unwrap(),
        serde_json::to_string_pretty(&doc["resourceProfiles"]).unwrap()
    );
    swapped.into_bytes()
}

#[test]
fn json_with_the_dictionary_first_sniffs_and_decodes() {
    for rel in JSON {
        let swapped = dictionary_first(rel);
        assert_eq!(
            sniff(prefix(&swapped)),
            Some(InputFormat::OtlpJson),
            "{rel} with the dictionary first"
        );
        let what = format!("{rel} with the dictionary first");
        assert_eq!(
            flat(&decode_ok(&swapped, &what).profile),
            flat(&decode(rel).profile),
            "{what}"
        );
    }
    // The real capture's dictionary alone is larger than the sniffed prefix.
    assert!(dictionary_first(PROFILE_JSON)[..4096]
        .windows(18)
        .all(|w| w != b"\"resourceProfiles\""));
}

#[test]
fn pprof_and_perfetto_do_not_sniff_as_otlp() {
    let mut pprof = Vec::new();
    files_under(&fixture_path("pprof"), ".pb.gz", &mut pprof);
    assert!(pprof.len() >= 4, "pprof fixtures found: {pprof:?}");
    let mut perfetto = Vec::new();
    files_under(&fixture_path("perfetto"), ".pftrace", &mut perfetto);
    assert!(perfetto.len() > 10, "Perfetto traces found");
    let not_otlp = |bytes: &[u8], what: &str| {
        let got = sniff(prefix(bytes));
        assert!(
            !matches!(got, Some(InputFormat::Otlp | InputFormat::OtlpJson)),
            "{what} sniffs as {got:?}"
        );
    };
    for path in pprof {
        let raw = std::fs::read(&path).unwrap();
        let mut plain = Vec::new();
        std::io::Read::read_to_end(
            &mut flate2::read::MultiGzDecoder::new(raw.as_slice()),
            &mut plain,
        )
        .unwrap();
        assert!(plain.len() > 100, "{}", path.display());
        not_otlp(&plain, &path.display().to_string());
        // Sniffing the whole file as if it were the prefix (a small input) too.
        not_otlp(&plain, &format!("{} (whole)", path.display()));
    }
    for path in perfetto {
        not_otlp(&std::fs::read(&path).unwrap(), &path.display().to_string());
    }
}

// ---- totals -----------------------------------------------------------------------------

fn only_series(p: &Profile) -> (SeriesKind, String, String, Option<u64>, Option<u64>) {
    let all: Vec<_> = p.all_series().collect();
    assert_eq!(all.len(), 1, "one series");
    let s = all[0].1;
    (
        s.kind,
        p.str(s.name).to_owned(),
        p.str(s.unit).to_owned(),
        s.frequency_hz,
        s.period,
    )
}

#[test]
fn sig_profiling_profile_totals() {
    assert_eq!(raw_counts(PROFILE_V1_10), (4, 4, 49, 189));
    for rel in [PROFILE_V1_10, PROFILE_V1_8, PROFILE_JSON] {
        let d = decode(rel);
        let p = &d.profile;
        // Timestamps-only: one model sample per timestamp, weight 1, with its time.
        assert_eq!(p.samples().len(), 189, "{rel}");
        assert!(
            p.samples()
                .iter()
                .all(|s| s.weight == 1 && s.time.is_some()),
            "{rel}"
        );
        assert_eq!(
            only_series(p),
            (
                SeriesKind::CpuTime,
                "samples".into(),
                "count".into(),
                Some(20),
                None
            ),
            "{rel}: samples/count every 50 000 000 cpu/nanoseconds is 20 Hz CPU time"
        );
        assert_eq!(
            p.attributes.get("otlp.scope.name").map(String::as_str),
            Some("go.opentelemetry.io/ebpf-profiler")
        );
        // Lenient time range: the last timestamps at exactly time + duration are accepted
        // (profcheck's strict rule gives 4 findings; see the unit tests).
        assert_eq!(p.findings, Vec::<String>::new(), "{rel}");
        assert!(p.samples().iter().all(|s| s.stack.is_some()));

        // Unsymbolized native frames keep what a symbolizer needs: address, image, build id.
        let unsymbolized: Vec<_> = p
            .frames()
            .map(|(_, f)| f)
            .filter(|f| f.kind == FrameKind::Native && f.function.is_none())
            .collect();
        assert!(!unsymbolized.is_empty(), "{rel}");
        for f in &unsymbolized {
            assert!(
                matches!(f.address, Some(FrameAddress::Absolute(a)) if a != 0),
                "{rel}"
            );
            let image = p.image(f.image.expect("native frames have a mapping"));
            assert!(image.path.is_some(), "{rel}");
        }
        assert!(unsymbolized
            .iter()
            .any(|f| p.image(f.image.unwrap()).debug_id.is_some()));
        // Interpreter frames carry no code address.
        assert!(p
            .frames()
            .all(|(_, f)| f.kind != FrameKind::Jvm || f.address.is_none()));
    }
}

#[test]
fn sig_profiling_k8s_totals() {
    // Here every OTLP Sample holds one timestamp: 58 and 107 are both.
    assert_eq!(raw_counts(K8S_0), (6, 6, 58, 58));
    assert_eq!(raw_counts(K8S_1), (7, 7, 107, 107));
    let k0 = decode(K8S_0);
    let k1 = decode(K8S_1);
    assert_eq!(k0.profile.samples().len(), 58);
    assert_eq!(k1.profile.samples().len(), 107);
    assert_eq!(k0.profile.findings, Vec::<String>::new());
    assert_eq!(k1.profile.findings, Vec::<String>::new());

    // The v1.8 stream holds both requests: one profile with the samples of both, in time
    // order (message 1 starts after message 0 ends).
    let stream = decode(K8S_STREAM);
    assert_eq!(stream.format, InputFormat::Otlp);
    let mut both = samples(&k0.profile);
    both.extend(samples(&k1.profile));
    assert_eq!(samples(&stream.profile), both);
    assert_eq!(stream.profile.start_time, k0.profile.start_time);
    let end = |p: &Profile| p.start_time.unwrap() + p.duration.unwrap();
    assert_eq!(end(&stream.profile), end(&k1.profile));
    assert_eq!(
        stream
            .profile
            .attributes
            .get("otlp.layout")
            .map(String::as_str),
        Some("v1.8")
    );
}

// ---- the same model from every encoding ---------------------------------------------------

#[test]
fn v1_8_decodes_like_its_v1_10_reencoding() {
    let old = decode(PROFILE_V1_8);
    let new = decode(PROFILE_V1_10);
    assert_eq!(flat(&old.profile), flat(&new.profile));
    assert!(
        flat(&new.profile).labels.iter().any(|l| !l.is_empty()),
        "labels compared"
    );
}

#[test]
fn v1_9_decodes_like_v1_10() {
    let old = decode(SYNTH_V1_9);
    let new = decode(SYNTH_V1_10);
    // The v1.9 file has the reference-based resource attributes as plain strings; resolved,
    // they are the same.
    assert_eq!(flat(&old.profile), flat(&new.profile));
    assert_eq!(
        old.profile
            .attributes
            .get("otlp.layout")
            .map(String::as_str),
        Some("v1.9")
    );
    assert_eq!(new.profile.attributes.get("otlp.layout"), None);
}

#[test]
fn json_decodes_like_binary() {
    for (json, binary) in [(PROFILE_JSON, PROFILE_V1_10), (SYNTH_JSON, SYNTH_V1_10)] {
        let j = decode(json);
        assert_eq!(j.format, InputFormat::OtlpJson);
        let b = decode(binary);
        assert_eq!(flat(&j.profile), flat(&b.profile), "{json}");
        assert_eq!(j.profile.attributes, b.profile.attributes, "{json}");
    }
}

#[test]
fn gzip_decodes_like_plain() {
    for rel in [PROFILE_V1_10, PROFILE_JSON, K8S_STREAM] {
        let zipped = decode_ok(&gzip(&fixture(rel)), rel);
        assert_eq!(zipped.container.name(), "gzip");
        assert_eq!(flat(&zipped.profile), flat(&decode(rel).profile), "{rel}");
    }
}

// ---- synthetic edge cases ---------------------------------------------------------------

#[test]
fn synthetic_resource_and_series() {
    let d = decode(SYNTH_V1_10);
    let p = &d.profile;
    assert_eq!(
        p.findings,
        Vec::<String>::new(),
        "passes every profcheck rule"
    );
    let (_, process) = p.processes().next().unwrap();
    assert_eq!(process.pid, Some(4242));
    let attrs: Vec<_> = process
        .attributes
        .iter()
        .map(|(k, v)| (p.str(*k), p.str(*v)))
        .collect();
    // `service.name` is written as key_strindex + string_value_strindex.
    assert_eq!(
        attrs,
        [
            ("host.name", "test-host"),
            ("service.name", "checkout"),
            ("process.pid", "4242")
        ]
    );
    let series: Vec<_> = p
        .all_series()
        .map(|(_, s)| {
            (
                s.kind,
                p.str(s.name),
                p.str(s.unit),
                s.frequency_hz,
                s.period,
            )
        })
        .collect();
    assert_eq!(
        series,
        [
            // A CPU-time type exists in the scope, so the sample counts are not CPU time.
            (SeriesKind::Other, "samples", "count", Some(100), None),
            (
                SeriesKind::CpuTime,
                "cpu",
                "nanoseconds",
                None,
                Some(10_000_000)
            ),
            (SeriesKind::Other, "off_cpu", "nanoseconds", None, None),
        ]
    );
    assert_eq!(
        p.attributes.get("otlp.profile_id").map(String::as_str),
        Some("0102030405060708090a0b0c0d0e0f10")
    );
    assert_eq!(
        (p.start_time, p.duration),
        (Some(1_700_000_000_000_000_000), Some(1_000_000_000))
    );
}

#[test]
fn synthetic_three_shapes() {
    let d = decode(SYNTH_V1_10);
    let views = samples(&d.profile);
    let by_series = |name: &str| -> Vec<(Option<i64>, i64)> {
        views
            .iter()
            .filter(|s| s.series.name == name)
            .map(|s| (s.time, s.weight))
            .collect()
    };
    let t = |ns: i64| Some(1_700_000_000_000_000_000 + ns);
    // timestamps only: one sample per timestamp, weight 1.
    assert_eq!(
        by_series("samples"),
        [
            (t(10_000_000), 1),
            (t(20_000_000), 1),
            (t(30_000_000), 1),
            (t(40_000_000), 1),
            (t(50_000_000), 1),
            (t(999_999_999), 1),
        ]
    );
    // values only: aggregated, no time, weight = value.
    assert_eq!(
        by_series("cpu"),
        [(None, 40_000_000), (None, 20_000_000), (None, 10_000_000)]
    );
    // values + timestamps: one per index.
    assert_eq!(
        by_series("off_cpu"),
        [(t(100_000_000), 1_500_000), (t(200_000_000), 2_500_000)]
    );
    // No `thread.id`: the samples cannot be told apart by thread, so `thread.name` stays a
    // label instead of naming one thread after whichever sample came first.
    assert!(views
        .iter()
        .all(|s| s.tid.is_none() && s.thread_name.is_none()));
    let p = &d.profile;
    let names: std::collections::BTreeSet<_> = p
        .samples()
        .iter()
        .filter_map(|s| s.labels)
        .flat_map(|l| p.label_set(l).to_vec())
        .filter(|l| p.str(l.key) == "thread.name")
        .map(|l| match l.value {
            LabelValue::Str(s) => p.str(s).to_owned(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        ["worker-1", "worker-2"]
    );
}

#[test]
fn synthetic_link_label_and_frames() {
    let d = decode(SYNTH_V1_10);
    let p = &d.profile;

    let linked: Vec<_> = p.samples().iter().filter(|s| s.link.is_some()).collect();
    assert_eq!(linked.len(), 1);
    assert_eq!(linked[0].time, Some(1_700_000_000_040_000_000));
    let link = p.link(linked[0].link.unwrap());
    assert_eq!(hex(&link.trace_id), "5b8efff798038103d269b633813fc60c");
    assert_eq!(hex(&link.span_id), "eee19b7ec3c1b174");

    let sized: Vec<_> = p
        .samples()
        .iter()
        .filter_map(|s| s.labels)
        .flat_map(|l| p.label_set(l).to_vec())
        .filter(|l| p.str(l.key) == "allocation.size")
        .collect();
    assert!(!sized.is_empty());
    for l in sized {
        let LabelValue::Num { value, unit } = l.value else {
            panic!("allocation.size is a number")
        };
        assert_eq!((value, p.opt_str(unit)), (128, Some("By")));
    }

    let frames: Vec<_> = p.frames().map(|(_, f)| f).collect();
    let named = |name: &str| {
        frames
            .iter()
            .find(|f| p.opt_str(f.function) == Some(name))
            .unwrap_or_else(|| panic!("frame {name}"))
    };
    // Two lines: main.inlinedHelper (innermost) inlined into main.work.
    let inlined = named("main.inlinedHelper");
    assert_eq!((inlined.line, inlined.column), (Some(42), Some(5)));
    assert_eq!(p.opt_str(inlined.file), Some("/src/app/work.go"));
    assert_eq!(inlined.inlined_into.len(), 1);
    let caller = &inlined.inlined_into[0];
    assert_eq!(
        (p.opt_str(caller.function), caller.line, caller.column),
        (Some("main.work"), Some(25), Some(3))
    );
    assert_eq!(p.opt_str(caller.file), Some("/src/app/work.go"));
    assert_eq!(p.kind_name(inlined.kind), "go");

    // A location with neither mapping nor lines: an address, nothing else.
    let bare: Vec<_> = frames.iter().filter(|f| f.function.is_none()).collect();
    assert_eq!(bare.len(), 1);
    assert_eq!(
        bare[0].address,
        Some(FrameAddress::Absolute(139_637_976_732_212))
    );
    assert_eq!(bare[0].image, None);
    assert_eq!(p.kind_name(bare[0].kind), "native");

    // The mapping's GNU build id becomes the image's code and debug ids.
    let images: Vec<_> = p.images().map(|(_, i)| i).collect();
    assert_eq!(images.len(), 1);
    let image = images[0];
    assert_eq!(p.opt_str(image.path), Some("/usr/bin/app"));
    assert_eq!((image.start, image.end), (4_194_304, 5_242_880));
    assert_eq!(
        image.code_id.as_ref().map(|c| c.as_str()),
        Some("0123456789abcdef")
    );
    assert_eq!(
        image.debug_id.map(|d| d.to_string()),
        Some("67452301-ab89-efcd-0000-000000000000".into())
    );
    let main = named("main.main");
    assert_eq!(main.image.map(|i| p.image(i).path), Some(image.path));

    // Stacks are root first in the model: __libc_start_main → main.main → ...
    let leaf = p.samples().get(0).stack.unwrap();
    let root = p.stack_frames(leaf).last().unwrap();
    assert_eq!(p.opt_str(p.frame(root).function), Some("__libc_start_main"));
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

// ---- malformed inputs -------------------------------------------------------------------

fn decode_err(bytes: &[u8]) -> crate::Error {
    match crate::decode(bytes, Some(InputFormat::Otlp), &crate::Limits::default()) {
        Ok(_) => panic!("decoded"),
        Err(e) => e,
    }
}

#[test]
fn truncated_requests_are_typed_errors() {
    let bytes = fixture(PROFILE_V1_10);
    let e = decode_err(&bytes[..bytes.len() - 3]);
    assert!(matches!(e.kind(), ErrorKind::Truncated { .. }), "{e}");
    for cut in (0..bytes.len()).step_by(97) {
        // Every cut is an error or (at a field boundary) a smaller request; never a panic.
        if let Err(e) = crate::decode(
            &bytes[..cut],
            Some(InputFormat::Otlp),
            &crate::Limits::default(),
        ) {
            assert!(
                matches!(
                    e.kind(),
                    ErrorKind::Truncated { .. } | ErrorKind::Malformed { .. }
                ),
                "cut {cut}: {e}"
            );
        }
    }
}

#[test]
fn out_of_range_stack_index_names_its_path() {
    let mut data = ProfilesData::decode(fixture(SYNTH_V1_10).as_slice()).unwrap();
    data.resource_profiles[0].scope_profiles[0].profiles[1].samples[2].stack_index = 99;
    let e = decode_err(&data.encode_to_vec());
    let ErrorKind::Malformed { format, what, .. } = e.kind() else {
        panic!("{e}")
    };
    assert_eq!(*format, "otlp");
    assert_eq!(
        what,
        "resource_profiles[0].scope_profiles[0].profiles[1].samples[2].stack_index 99 out of range (stack_table has 4)"
    );
}

#[test]
fn v1_7_sample_is_rejected_by_layout() {
    // resource_profiles { scope_profiles { profiles { sample { stack_index: 1, field 6: [5] } } } }
    let sample = [0x08, 0x01, 0x32, 0x01, 0x05];
    let wrap = |tag: u8, body: &[u8]| {
        let mut out = vec![tag, body.len() as u8];
        out.extend_from_slice(body);
        out
    };
    let bytes = wrap(0x0a, &wrap(0x12, &wrap(0x12, &wrap(0x12, &sample))));
    let e = decode_err(&bytes);
    let ErrorKind::Malformed { what, .. } = e.kind() else {
        panic!("{e}")
    };
    assert!(what.contains("layout v1.7"), "{what}");
}

#[test]
fn garbage_json_is_a_typed_error() {
    for (bytes, truncated) in [
        (&b"{\"resourceProfiles\": [{\"scopeProfiles\": ["[..], true),
        (b"{\"resourceProfiles\": [1, 2]}", false),
        (b"{\"resourceProfiles\": ]", false),
    ] {
        let e = super::decode(bytes, None).unwrap_err();
        if truncated {
            assert!(matches!(e.kind(), ErrorKind::Truncated { .. }), "{e}");
        } else {
            assert!(
                matches!(
                    e.kind(),
                    ErrorKind::Malformed {
                        format: "otlp-json",
                        ..
                    }
                ),
                "{e}"
            );
        }
    }
}

// ---- conversion -------------------------------------------------------------------------

#[test]
fn sig_profiling_converts_to_valid_sample_v2() {
    let bytes = fixture(PROFILE_V1_10);
    let converted = convert_upload("uploads/otlp", "etag", &bytes, &ConvertOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!converted.sample_v2().is_empty());
    let mut written = 0;
    for (key, json) in converted.sample_v2() {
        assert_eq!(check_sample_v2(json), vec![], "{key}");
    }
    for o in &converted.manifest.outputs {
        written += o.samples.unwrap_or(0);
    }
    // The writer drops threads with fewer than 2 samples in a chunk (as Relay would); the
    // capture spans 6 s, one chunk.
    let p = &converted.decoded.profile;
    let mut per_thread = std::collections::HashMap::new();
    for s in p.samples() {
        *per_thread.entry(s.thread).or_insert(0u64) += 1;
    }
    let kept: u64 = per_thread.values().filter(|&&n| n >= 2).sum();
    assert_eq!((p.samples().len(), kept), (189, 179));
    assert_eq!(written, kept);
}

#[test]
fn sig_profiling_processes_come_from_sample_attributes() {
    // The eBPF profiler makes one resource per container and puts `process.pid` and the
    // executable on each sample.
    let d = decode(PROFILE_V1_10);
    let f = flat(&d.profile);
    let ids: Vec<_> = f
        .processes
        .iter()
        .map(|(pid, name, _)| (pid.unwrap(), name.as_deref().unwrap()))
        .collect();
    assert_eq!(
        ids,
        [
            (236_982, "java"),
            (2566, "agent"),
            (2565, "system-probe"),
            (2573, "process-agent"),
            (236_993, "PerformanceTest"),
            (629_705, "node"),
            (631_233, "node"),
        ]
    );
    let java = &f.processes[0].2;
    let container = "1e82d7e19251ec59126d036da362a7bcf318420c2e5c9be3818ebc5f92873469";
    assert!(
        java.contains(&("container.id".into(), container.into())),
        "{java:?}"
    );
    assert!(java.contains(&(
        "process.executable.path".into(),
        "/usr/local/openjdk-17/bin/java".into()
    )));
    // Empty resource attributes (host processes have no container) are not kept.
    assert!(f.processes[1].2.iter().all(|(_, v)| !v.is_empty()));
    assert!(f.samples.iter().all(|s| s.pid.is_some() && s.tid.is_some()));
    // Process attributes of a sample are not repeated as labels; its context labels are
    // labels.
    let keys: std::collections::BTreeSet<_> =
        f.labels.iter().flatten().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys.into_iter().collect::<Vec<_>>(),
        ["process.context.label.module"]
    );

    assert_eq!(decode(K8S_0).profile.processes().len(), 11);
    assert_eq!(decode(K8S_1).profile.processes().len(), 17);
}
