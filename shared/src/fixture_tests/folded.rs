//! Folded (collapsed stack) inputs: a real py-spy recording, CPython 3.15's
//! `profiling.sampling --collapsed` syntax, stackcollapse-perf output, and the errors of
//! malformed and oversized input. Fixture provenance: tests/fixtures/folded/SOURCES.md and
//! samples/folded/SOURCES.md.

use std::io::Read;

use super::decode;
use crate::{
    convert_upload, formats::sniff, model::SeriesKind, writers::sample_v2::check_sample_v2,
    ConvertOptions, Decoded, ErrorKind, InputFormat, UploadMetadata,
};

use super::util::{
    files_under, fixture, fixture_path, repo_file, repo_path, samples, stat, FrameView, SampleView,
};

/// py-spy's "Samples: N" for the committed recording (samples/folded/SOURCES.md).
const PYSPY_SAMPLES: i64 = 202;

fn pyspy_recording() -> Vec<u8> {
    repo_file("samples/folded/pyspy.folded")
}

fn decode_folded(bytes: &[u8], what: &str) -> Decoded {
    let decoded = decode(bytes, None).unwrap_or_else(|e| panic!("{what}: decode failed: {e}"));
    assert_eq!(
        decoded.format,
        InputFormat::Folded,
        "{what} sniffs as folded"
    );
    decoded
}

fn total_weight(samples: &[SampleView]) -> i64 {
    samples.iter().map(|s| s.weight).sum()
}

/// `(function, file, line)` of each frame, root first.
fn locations(frames: &[FrameView]) -> Vec<(Option<&str>, Option<&str>, Option<u32>)> {
    frames
        .iter()
        .map(|f| (f.function.as_deref(), f.file.as_deref(), f.line))
        .collect()
}

fn functions(s: &SampleView) -> Vec<Option<&str>> {
    s.frames().iter().map(|f| f.function.as_deref()).collect()
}

fn error_kind(bytes: &[u8], format: Option<InputFormat>) -> ErrorKind {
    match decode(bytes, format) {
        Ok(d) => panic!(
            "expected an error, got {:?} with {} samples",
            d.format,
            d.profile.samples().len()
        ),
        Err(e) => e.kind().clone(),
    }
}

/// Asserts a `Malformed` folded error at `offset` whose message names `line` and says `what`.
fn assert_malformed(kind: ErrorKind, offset: u64, line: u64, what: &str) {
    match kind {
        ErrorKind::Malformed {
            format,
            offset: at,
            what: message,
        } => {
            assert_eq!(format, "folded");
            assert_eq!(at, offset, "offset of the bad line ({message})");
            assert!(
                message.starts_with(&format!("line {line}: ")) && message.contains(what),
                "message {message:?} should name line {line} and say {what:?}"
            );
        }
        other => panic!("expected Malformed, got {other:?}"),
    }
}

// ---- py-spy ----------------------------------------------------------------------------

#[test]
fn pyspy_recording_weighs_what_pyspy_counted() {
    let sources = std::fs::read_to_string(repo_path("samples/folded/SOURCES.md")).unwrap();
    assert!(
        sources.contains(&format!("Samples: {PYSPY_SAMPLES} ")),
        "samples/folded/SOURCES.md records py-spy's Samples: {PYSPY_SAMPLES}"
    );
    let decoded = decode_folded(&pyspy_recording(), "pyspy.folded");
    let profile = &decoded.profile;
    let samples = samples(profile);
    assert_eq!(total_weight(&samples), PYSPY_SAMPLES);
    assert_eq!(samples.len(), 22, "one aggregated sample per line");
    assert!(samples.iter().all(|s| s.time.is_none()));
    assert_eq!(profile.start_time, None);
    assert_eq!(profile.duration, None);
    assert_eq!(
        profile.attributes.get("folded.dialect").map(String::as_str),
        Some("py-spy")
    );

    let series = &samples[0].series;
    assert_eq!(series.kind, SeriesKind::CpuTime);
    assert_eq!(
        (
            series.name.as_str(),
            series.unit.as_str(),
            series.source.as_deref()
        ),
        ("samples", "count", Some("py-spy"))
    );
    assert_eq!((series.frequency_hz, series.period), (None, None));
    assert_eq!(profile.all_series().len(), 1);
}

#[test]
fn pyspy_thread_frames_become_threads() {
    let decoded = decode_folded(&pyspy_recording(), "pyspy.folded");
    let samples = samples(&decoded.profile);
    let weight_of = |tid| -> i64 {
        samples
            .iter()
            .filter(|s| s.tid == Some(tid))
            .map(|s| s.weight)
            .sum()
    };
    assert_eq!(weight_of(18635), 103);
    assert_eq!(weight_of(18687), 99);
    let names: Vec<_> = decoded
        .profile
        .threads()
        .map(|(_, t)| (t.tid, decoded.profile.opt_str(t.name).map(str::to_owned)))
        .collect();
    assert_eq!(
        names,
        vec![
            (Some(18635), Some("MainThread".to_owned())),
            (Some(18687), Some("sieve".to_owned())),
        ],
        "the unnamed `thread (18635)` frame is the same thread as `thread (18635): MainThread`"
    );
    assert!(samples.iter().all(|s| s.pid.is_none()), "no --subprocesses");
    for s in &samples {
        assert!(
            !s.frames().iter().any(|f| f
                .function
                .as_deref()
                .is_some_and(|n| n.starts_with("thread ("))),
            "thread frames are not kept as frames"
        );
    }
    // `thread (18635): MainThread 2`: the thread, but no Python frames.
    let idle: Vec<_> = samples.iter().filter(|s| s.stack.is_none()).collect();
    assert_eq!(idle.len(), 1);
    assert_eq!((idle[0].tid, idle[0].weight), (Some(18635), 2));
}

#[test]
fn pyspy_frames_have_function_file_and_line() {
    let decoded = decode_folded(&pyspy_recording(), "pyspy.folded");
    let samples = samples(&decoded.profile);
    let genexpr = samples
        .iter()
        .find(|s| {
            s.leaf().and_then(|f| f.function.as_deref()) == Some("primes_below.<locals>.<genexpr>")
        })
        .expect("the sieve's generator expression is sampled");
    assert_eq!(genexpr.weight, 76);
    assert_eq!(genexpr.thread_name.as_deref(), Some("sieve"));
    assert_eq!(
        locations(genexpr.frames()),
        vec![
            (Some("Thread._bootstrap"), Some("threading.py"), Some(1002)),
            (
                Some("Thread._bootstrap_inner"),
                Some("threading.py"),
                Some(1045)
            ),
            (Some("Thread.run"), Some("threading.py"), Some(982)),
            (Some("sieve_worker"), Some("workload.py"), Some(36)),
            (Some("primes_below"), Some("workload.py"), Some(21)),
            (
                Some("primes_below.<locals>.<genexpr>"),
                Some("workload.py"),
                Some(21)
            ),
        ]
    );
    // Frozen modules have no file, only CPython's `<frozen ...>` name.
    let frozen = samples
        .iter()
        .flat_map(|s| s.frames())
        .find(|f| f.function.as_deref() == Some("_find_and_load"))
        .expect("a stack taken during start-up imports");
    assert_eq!(
        frozen.file.as_deref(),
        Some("<frozen importlib._bootstrap>")
    );
    assert_eq!(frozen.line, Some(1176));
    let every_frame = samples.iter().flat_map(|s| s.frames());
    assert!(every_frame.clone().all(|f| f.kind == "python"));
    assert!(every_frame
        .clone()
        .all(|f| f.file.is_some() && f.line.is_some()));
    assert!(every_frame
        .into_iter()
        .all(|f| !f.has_image && f.address.is_none()));
}

#[test]
fn pyspy_without_threads_keeps_the_empty_stack_line() {
    let decoded = decode_folded(&fixture("folded/pyspy_nothreads.folded"), "pyspy_nothreads");
    let samples = samples(&decoded.profile);
    assert_eq!(total_weight(&samples), 38);
    assert_eq!(samples.len(), 3);
    assert_eq!(
        locations(samples[0].frames()),
        vec![
            (Some("<module>"), Some("prog.py"), Some(12)),
            (Some("main"), Some("prog.py"), Some(8)),
            (Some("work"), Some("prog.py"), Some(4)),
        ]
    );
    assert_eq!((samples[2].stack.is_none(), samples[2].weight), (true, 2));
    assert!(samples.iter().all(|s| s.tid.is_none() && s.pid.is_none()));
    assert_eq!(samples[0].series.source.as_deref(), Some("py-spy"));
}

#[test]
fn pyspy_process_frames_become_processes() {
    let decoded = decode_folded(
        &fixture("folded/pyspy_subprocesses.folded"),
        "pyspy_subprocesses",
    );
    let profile = &decoded.profile;
    let samples = samples(profile);
    assert_eq!(total_weight(&samples), 15);
    // The innermost process frame is the sampled process; its ancestors are dropped.
    assert_eq!((samples[0].pid, samples[0].tid), (Some(4123), Some(4123)));
    assert_eq!(samples[0].process_name.as_deref(), Some("python3"));
    assert_eq!(samples[0].thread_name.as_deref(), Some("MainThread"));
    assert_eq!(
        functions(&samples[0]),
        vec![Some("<module>"), Some("run")],
        "process and thread frames are not frames"
    );
    let child = profile
        .processes()
        .find(|(_, p)| p.pid == Some(4123))
        .map(|(_, p)| p)
        .unwrap();
    assert_eq!(
        profile.opt_str(child.command_line),
        Some("python3 -m worker --jobs 2")
    );
    // A hex thread id (py-spy's Python thread id where there is no OS id).
    assert_eq!(
        (samples[1].pid, samples[1].tid),
        (Some(4100), Some(0x7F5C2A1B4740))
    );
    assert_eq!(profile.processes().len(), 2);
}

// ---- CPython profiling.sampling --------------------------------------------------------

#[test]
fn python_sampling_collapsed_frames() {
    let decoded = decode_folded(
        &fixture("folded/python_sampling.collapsed"),
        "python_sampling.collapsed",
    );
    let profile = &decoded.profile;
    let samples = samples(profile);
    assert_eq!(total_weight(&samples), 74);
    assert_eq!(samples.len(), 5);
    assert_eq!(
        profile.attributes.get("folded.dialect").map(String::as_str),
        Some("profiling.sampling")
    );
    let series = &samples[0].series;
    assert_eq!(
        series.kind,
        SeriesKind::WallTime,
        "profiling.sampling defaults to wall"
    );
    assert_eq!(series.source.as_deref(), Some("profiling.sampling"));

    assert_eq!((samples[0].tid, samples[0].weight), (Some(48213), 37));
    assert_eq!(
        locations(samples[0].frames()),
        vec![
            (Some("<module>"), Some("app.py"), Some(40)),
            (Some("main"), Some("app.py"), Some(33)),
            (Some("handle_request"), Some("app.py"), Some(21)),
            (Some("parse"), Some("json_io.py"), Some(12)),
        ]
    );
    assert!(samples[0].frames().iter().all(|f| f.kind == "python"));
    let gc = samples[2].leaf().unwrap();
    assert_eq!(
        (gc.kind.as_str(), gc.function.as_deref()),
        ("gc", Some("<GC>"))
    );
    assert_eq!(gc.file, None);
    let native = samples[4].leaf().unwrap();
    assert_eq!(native.kind, "native");
    assert_eq!(samples[4].tid, Some(48290));
    assert_eq!(
        functions(&samples[3])[..3],
        [Some("_bootstrap"), Some("_bootstrap_inner"), Some("run")]
    );
    assert!(samples.iter().all(|s| s.pid.is_none()));
}

#[test]
fn python_sampling_without_thread_prefix() {
    // Earlier 3.15 development builds wrote no `tid:` part (SOURCES.md).
    let decoded = decode_folded(b"file.py:func2:20;file.py:func1:10 2\n", "no tid");
    let samples = samples(&decoded.profile);
    assert_eq!(samples[0].tid, None);
    assert_eq!(
        locations(samples[0].frames()),
        vec![
            (Some("func2"), Some("file.py"), Some(20)),
            (Some("func1"), Some("file.py"), Some(10)),
        ]
    );
}

// ---- austin -------------------------------------------------------------------------------

#[test]
fn austin_wall_recording() {
    let decoded = decode_folded(&fixture("folded/austin_wall.folded"), "austin_wall.folded");
    let profile = &decoded.profile;
    let samples = samples(profile);
    assert_eq!(
        profile.attributes.get("folded.dialect").map(String::as_str),
        Some("austin")
    );
    assert_eq!(
        samples.len(),
        20,
        "one sample per stack line, comments skipped"
    );
    // Microseconds of wall time per thread, summed from the file (SOURCES.md).
    assert_eq!(total_weight(&samples), 193_302);
    let weight_of = |tid| -> i64 {
        samples
            .iter()
            .filter(|s| s.tid == Some(tid))
            .map(|s| s.weight)
            .sum()
    };
    assert_eq!((weight_of(27412), weight_of(27454)), (112_466, 80_836));
    assert!(samples.iter().all(|s| s.pid == Some(27412)));

    let series = &samples[0].series;
    assert_eq!(series.kind, SeriesKind::WallTime);
    assert_eq!(
        (
            series.name.as_str(),
            series.unit.as_str(),
            series.source.as_deref(),
            series.period
        ),
        ("wall", "microseconds", Some("austin"), Some(10_000)),
        "# mode: wall and # interval: 10000 from the header"
    );

    let fib = samples
        .iter()
        .find(|s| s.leaf().and_then(|f| f.function.as_deref()) == Some("fib"))
        .expect("the main thread's fib is sampled");
    let leaf = fib.leaf().unwrap();
    assert_eq!(
        (leaf.kind.as_str(), leaf.file.as_deref(), leaf.line),
        ("python", Some("/tmp/austin-run/workload.py"), Some(5))
    );
    assert_eq!(fib.tid, Some(27412));
    assert_eq!(
        fib.frames()[0].function.as_deref(),
        Some("<module>"),
        "process and thread frames are not frames"
    );
    let invalid = samples
        .iter()
        .flat_map(|s| s.frames())
        .find(|f| f.function.as_deref() == Some(":INVALID:"))
        .expect("austin's marker for a frame it could not read");
    assert_eq!(invalid.kind, "unknown");
}

#[test]
fn austin_cpu_recording_converts() {
    let bytes = fixture("folded/austin_cpu.folded");
    let decoded = decode_folded(&bytes, "austin_cpu.folded");
    let samples = samples(&decoded.profile);
    assert_eq!(samples.len(), 10);
    assert_eq!(total_weight(&samples), 101_948);
    assert_eq!(samples[0].series.kind, SeriesKind::CpuTime, "# mode: cpu");
    assert_eq!(samples[0].series.name, "cpu");

    let options = ConvertOptions {
        metadata: UploadMetadata {
            timestamp: Some(1_700_000_000.0),
            ..UploadMetadata::default()
        },
        ..ConvertOptions::default()
    };
    let converted = convert_upload("uploads/austin", "etag", &bytes, &options)
        .unwrap_or_else(|e| panic!("{e}"));
    let chunks = converted.sample_v2();
    assert_eq!(chunks.len(), 1);
    assert_eq!(check_sample_v2(&chunks[0].1), vec![]);
    // About 10 ms of CPU per line at austin's 10 ms interval: one sample each.
    let written: u64 = converted
        .manifest
        .outputs
        .iter()
        .filter_map(|o| o.samples)
        .sum();
    assert_eq!(written, 10);
}

#[test]
fn austin_without_header_and_unsupported_modes() {
    // Piped without its header: the root frames tell, and austin's default mode is wall.
    let decoded = decode_folded(b"P7;T0:8;/a/b.py:main:3 1000\n", "headless austin");
    let samples = samples(&decoded.profile);
    assert_eq!((samples[0].pid, samples[0].tid), (Some(7), Some(8)));
    assert_eq!(samples[0].series.unit, "microseconds");
    assert_eq!(samples[0].series.kind, SeriesKind::WallTime);
    assert_eq!(samples[0].series.period, None);

    let memory = b"# austin: 3.7.0\n# mode: memory\n\nP7;T0:8;/a/b.py:main:3 1000\n";
    assert_malformed(error_kind(memory, None), 16, 2, "austin mode `memory`");
    let fractional = b"# austin: 3.7.0\nP7;T0:8;/a/b.py:main:3 10.5\n";
    assert_malformed(
        error_kind(fractional, None),
        16,
        2,
        "austin counts are whole microseconds",
    );
}

#[test]
fn comment_lines_are_skipped() {
    let bytes = b"# written by hand\nmain;a 2\n\n#main;b 3\nmain;c 4\n# end\n";
    let decoded = decode_folded(bytes, "comments");
    let samples = samples(&decoded.profile);
    assert_eq!(samples.len(), 2);
    assert_eq!(total_weight(&samples), 6);
    assert_eq!(
        decoded
            .profile
            .attributes
            .get("folded.dialect")
            .map(String::as_str),
        Some("generic"),
        "only austin's own header makes a file austin's"
    );
    // Line numbers in errors still count the comment lines.
    assert_malformed(
        error_kind(b"# c\nmain x\n", Some(InputFormat::Folded)),
        4,
        2,
        "`x`",
    );
}

// ---- generic / stackcollapse-perf -------------------------------------------------------

#[test]
fn stackcollapse_perf_frames() {
    let decoded = decode_folded(
        &fixture("folded/stackcollapse_perf.folded"),
        "stackcollapse_perf.folded",
    );
    let profile = &decoded.profile;
    let samples = samples(profile);
    assert_eq!(total_weight(&samples), 69);
    assert_eq!(samples.len(), 5);
    assert_eq!(
        profile.attributes.get("folded.dialect").map(String::as_str),
        Some("generic")
    );
    assert_eq!(samples[0].series.source.as_deref(), Some("folded"));
    assert_eq!(samples[0].series.kind, SeriesKind::CpuTime);

    // The process name stays the root frame: nothing marks it as one.
    let idle = &samples[0];
    assert_eq!(idle.frames()[0].function.as_deref(), Some("swapper"));
    assert_eq!(idle.frames()[0].kind, "native");
    assert!(idle.frames()[1..].iter().all(|f| f.kind == "kernel"));
    assert_eq!(
        idle.leaf().unwrap().function.as_deref(),
        Some("default_idle_call")
    );

    let write = &samples[2];
    let kinds: Vec<_> = write.frames().iter().map(|f| f.kind.as_str()).collect();
    assert_eq!(kinds[..7], ["native"; 7]);
    assert_eq!(kinds[7..], ["kernel"; 3]);
    assert_eq!(
        write.leaf().unwrap().function.as_deref(),
        Some("ksys_write")
    );

    let unknown = &samples[3].frames()[1..];
    assert_eq!(
        (unknown[0].function.as_deref(), unknown[0].has_image),
        (None, false)
    );
    assert_eq!(unknown[1].function, None);
    assert_eq!(unknown[1].image_path.as_deref(), Some("libc.so.6"));

    let jit: Vec<_> = samples[4].frames()[1..]
        .iter()
        .map(|f| (f.kind.as_str(), f.function.as_deref()))
        .collect();
    assert_eq!(
        jit,
        vec![
            ("jit", Some("Interpreter")),
            ("jit", Some("com/example/Foo:.bar"))
        ]
    );
    assert!(samples.iter().all(|s| s.tid.is_none() && s.pid.is_none()));
}

#[test]
fn crlf_line_endings_decode_like_lf() {
    let crlf = fixture("folded/crlf.folded");
    assert!(
        crlf.windows(2).any(|w| w == b"\r\n"),
        "fixture has CRLF endings"
    );
    let lf: Vec<u8> = crlf.iter().copied().filter(|&b| b != b'\r').collect();
    let from_crlf = samples(&decode_folded(&crlf, "crlf.folded").profile);
    let from_lf = samples(&decode_folded(&lf, "crlf.folded with LF").profile);
    assert_eq!(from_crlf, from_lf);
    assert_eq!(total_weight(&from_crlf), 10);
    assert_eq!(from_crlf.len(), 3);
    assert_eq!(
        functions(&from_crlf[2]),
        vec![Some("main"), Some("io_wait")],
        "no carriage return left in the leaf"
    );
}

#[test]
fn blank_leaf_frame_is_kept() {
    // perf gives a symbol it could not name as an empty string, and stackcollapse-perf
    // writes it as a blank frame: the count's separator follows it.
    let decoded = decode_folded(b"perl;main;  5\nperl;main 2\n", "blank leaf");
    let samples = samples(&decoded.profile);
    assert_eq!(
        functions(&samples[0]),
        vec![Some("perl"), Some("main"), Some(" ")]
    );
    assert_eq!(samples[0].weight, 5);
    assert_eq!(functions(&samples[1]), vec![Some("perl"), Some("main")]);
    assert_eq!(stat(&decoded.profile, "folded_empty_frame"), 0);
}

#[test]
fn identical_stacks_on_different_lines_both_count() {
    let decoded = decode_folded(b"a;b 2\na;b 3\n", "repeated stack");
    let samples = samples(&decoded.profile);
    assert_eq!(total_weight(&samples), 5);
    assert_eq!(decoded.profile.stacks().len(), 2, "a and a;b, stored once");
}

// ---- malformed and oversized input -----------------------------------------------------

#[test]
fn line_without_count() {
    let bytes = b"main;work 3\nmain;work\n";
    assert_malformed(
        error_kind(bytes, Some(InputFormat::Folded)),
        12,
        2,
        "no sample count",
    );
    assert!(matches!(
        error_kind(bytes, None),
        ErrorKind::UnsupportedFormat { .. }
    ));
}

#[test]
fn negative_count() {
    let bytes = b"main;work -3\n";
    assert_malformed(
        error_kind(bytes, Some(InputFormat::Folded)),
        0,
        1,
        "negative sample count -3",
    );
    assert!(matches!(
        error_kind(bytes, None),
        ErrorKind::UnsupportedFormat { .. }
    ));
}

#[test]
fn bad_line_after_the_sniffed_prefix() {
    // Good lines fill the sniff window, so detection says folded and decoding finds the bad
    // line, giving its offset and number.
    let mut bytes = b"main;work 1\n".repeat(400);
    let offset = bytes.len() as u64;
    bytes.extend_from_slice(b"main;oops 1,5\n");
    assert_malformed(
        error_kind(&bytes, None),
        offset,
        401,
        "`1,5` is not a decimal number",
    );
}

#[test]
fn count_overflowing_i64() {
    let bytes = b"main 1\nmain;work 9223372036854775808\n";
    // Still reads as folded (it ends in digits), so both paths say what is wrong.
    for format in [Some(InputFormat::Folded), None] {
        assert_malformed(
            error_kind(bytes, format),
            7,
            2,
            "does not fit in a signed 64-bit integer",
        );
    }
    // i64::MAX itself is a valid count, but two of them overflow the total.
    let bytes = b"a 9223372036854775807\nb 9223372036854775807\n";
    assert!(matches!(
        error_kind(bytes, Some(InputFormat::Folded)),
        ErrorKind::LimitExceeded {
            limit: "folded total sample count",
            ..
        }
    ));
}

#[test]
fn fractional_counts_scale_every_weight_exactly() {
    let bytes = b"main;a 0.5\nmain;b 12.25\nmain;c 3\nmain;d 0.0\n";
    let decoded = decode_folded(bytes, "fractional counts");
    let samples = samples(&decoded.profile);
    // Two decimals at most: every weight is the count times 100, the zero line is dropped.
    let weights: Vec<(Option<&str>, i64)> = samples
        .iter()
        .map(|s| (s.leaf().and_then(|f| f.function.as_deref()), s.weight))
        .collect();
    assert_eq!(
        weights,
        vec![(Some("a"), 50), (Some("b"), 1225), (Some("c"), 300)]
    );
    assert_eq!(samples[0].series.unit, "count*1e-2");
    assert_eq!(samples[0].series.name, "samples");
    assert_eq!(stat(&decoded.profile, "folded_zero_count_line"), 1);

    // Whole counts only: unchanged, in plain `count`.
    let decoded = decode_folded(b"main;a 5\nmain;b 7\n", "whole counts");
    let whole = super::util::samples(&decoded.profile);
    assert_eq!(whole[0].series.unit, "count");
    assert_eq!(total_weight(&whole), 12);
}

#[test]
fn fractional_fixture_converts_with_exact_weights() {
    let bytes = fixture("folded/fractional.folded");
    let decoded = decode_folded(&bytes, "fractional.folded");
    let samples = samples(&decoded.profile);
    assert_eq!(
        samples[0].series.unit, "count*1e-3",
        "0.125 has three decimals"
    );
    let weights: Vec<i64> = samples.iter().map(|s| s.weight).collect();
    assert_eq!(weights, [1500, 12_250, 125, 3000, 40_750]);
    assert_eq!(
        functions(&samples[1])[4..],
        [Some("compute"), Some(" ")],
        "perf's empty symbol stays the leaf"
    );
    assert_eq!(samples[4].leaf().unwrap().kind, "kernel");

    let options = ConvertOptions {
        metadata: UploadMetadata {
            timestamp: Some(1_700_000_000.0),
            ..UploadMetadata::default()
        },
        ..ConvertOptions::default()
    };
    let converted = convert_upload("uploads/fractional", "etag", &bytes, &options)
        .unwrap_or_else(|e| panic!("{e}"));
    let chunks = converted.sample_v2();
    assert_eq!(check_sample_v2(&chunks[0].1), vec![]);
    // 1.5 -> 2, 12.25 -> 12, 0.125 -> 1 (no line disappears), 3, 40.75 -> 41.
    let written: u64 = converted
        .manifest
        .outputs
        .iter()
        .filter_map(|o| o.samples)
        .sum();
    assert_eq!(written, 2 + 12 + 1 + 3 + 41);
}

#[test]
fn fractional_count_errors_name_the_line() {
    assert_malformed(
        error_kind(b"a 1\nb 0.1234567891\n", None),
        4,
        2,
        "sample count 0.1234567891 has more than 9 decimals",
    );
    // Fits alone, but not once the file's 9 decimals scale it.
    assert_malformed(
        error_kind(b"a 0.000000001\nb 9300000000\n", None),
        14,
        2,
        "sample count 9300000000 times 10^9",
    );
}

#[test]
fn binary_garbage() {
    let bytes: &[u8] = &[0xff, 0xfe, 0x00, 0x13, 0x9c, b' ', b'1', b'\n', 0x80, 0x00];
    assert_malformed(
        error_kind(bytes, Some(InputFormat::Folded)),
        0,
        1,
        "not valid UTF-8",
    );
    assert!(matches!(
        error_kind(bytes, None),
        ErrorKind::UnsupportedFormat { .. }
    ));
    // Valid UTF-8 with a NUL is binary too.
    assert_malformed(
        error_kind(b"a 1\nb\0c 2\n", Some(InputFormat::Folded)),
        4,
        2,
        "NUL",
    );
}

#[test]
fn endless_line_hits_the_line_limit() {
    let mut bytes = b"main;work 1\n".to_vec();
    bytes.extend(std::iter::repeat_n(b'x', 64 << 20));
    let started = std::time::Instant::now();
    let kind = error_kind(&bytes, None);
    assert_eq!(
        kind,
        ErrorKind::LimitExceeded {
            limit: "max_line_bytes",
            max: 1 << 20,
        }
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "stops at the limit instead of scanning the whole line"
    );
    // A line just under the limit is fine.
    let mut long = vec![b'f'; (1 << 20) - 2];
    long.extend_from_slice(b" 1\n");
    let decoded = decode(&long, Some(InputFormat::Folded)).unwrap();
    assert_eq!(decoded.profile.samples().get(0).weight, 1);
}

#[test]
fn too_deep_stack_keeps_its_count_without_frames() {
    let deep = vec!["f"; 10_000].join(";");
    let bytes = format!("main;work 3\n{deep} 4\n");
    let decoded = decode(bytes.as_bytes(), None).unwrap();
    let samples = samples(&decoded.profile);
    assert_eq!(total_weight(&samples), 7);
    assert_eq!((samples[1].stack.is_none(), samples[1].weight), (true, 4));
    assert_eq!(stat(&decoded.profile, "folded_stack_too_deep"), 1);
    assert_eq!(functions(&samples[0]), vec![Some("main"), Some("work")]);
}

// ---- sniffing ----------------------------------------------------------------------------

/// The first bytes the sniffers see: decompressed, at most 4096.
fn sniff_prefix(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let reader: Box<dyn Read + '_> = match bytes {
        [0x1f, 0x8b, ..] => Box::new(flate2::read::GzDecoder::new(bytes)),
        [0x28, 0xb5, 0x2f, 0xfd, ..] => Box::new(zstd::stream::read::Decoder::new(bytes).unwrap()),
        _ => Box::new(bytes),
    };
    reader.take(4096).read_to_end(&mut out).unwrap();
    out
}

#[test]
fn folded_inputs_sniff_as_folded() {
    let mut inputs = vec![repo_path("samples/folded/pyspy.folded")];
    files_under(&fixture_path("folded"), "", &mut inputs);
    assert_eq!(inputs.len(), 11);
    for path in inputs {
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(
            sniff(&sniff_prefix(&bytes)),
            Some(InputFormat::Folded),
            "{}",
            path.display()
        );
    }
}

#[test]
fn other_formats_do_not_sniff_as_folded() {
    // Every committed fixture of the other formats: Perfetto traces, textprotos and CSVs,
    // Sentry JSON, OTLP and pprof.
    let mut inputs = Vec::new();
    for entry in std::fs::read_dir(fixture_path("")).unwrap() {
        let dir = entry.unwrap().path();
        if dir.file_name().is_some_and(|n| n != "folded") {
            files_under(&dir, "", &mut inputs);
        }
    }
    let committed = inputs.len();
    assert!(committed >= 40, "only {committed} fixtures found");
    inputs.push(repo_path("samples/perfetto/android_app.pftrace"));
    inputs.push(repo_path("samples/perfetto/android_app.metadata.json"));
    for path in inputs {
        let bytes = std::fs::read(&path).unwrap();
        assert_ne!(
            sniff(&sniff_prefix(&bytes)),
            Some(InputFormat::Folded),
            "{} must not sniff as folded",
            path.display()
        );
    }
}

#[test]
fn speedscope_samples_keep_recursion_and_a_last_line_without_newline() {
    let bytes = std::fs::read(fixture_path("folded/speedscope_recursion.folded")).unwrap();
    let decoded = decode(&bytes, None).unwrap();
    let rows = samples(&decoded.profile);
    assert_eq!((rows.len(), total_weight(&rows)), (10, 10));
    let deepest = rows.iter().map(|s| functions(s).len()).max().unwrap();
    assert_eq!(deepest, 6, "a;b;a;b;a;b");

    let bytes = std::fs::read(fixture_path("folded/speedscope_alternating.folded")).unwrap();
    assert!(!bytes.ends_with(b"\n"));
    let decoded = decode(&bytes, None).unwrap();
    let rows = samples(&decoded.profile);
    assert_eq!((rows.len(), total_weight(&rows)), (182, 182));
    assert_eq!(functions(&rows[181]), vec![Some("c"), Some("d")]);
}
