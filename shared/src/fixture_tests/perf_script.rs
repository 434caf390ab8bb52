//! `perf script` text inputs: what the decoder makes of real and project-written recordings,
//! checked against counts this file reads from the text with its own line loop; detection both
//! ways; and the errors of malformed text. Fixture provenance:
//! tests/fixtures/perf_script/SOURCES.md.

use std::collections::BTreeMap;

use super::decode;
use crate::{
    formats::sniff, model::FrameAddress, model::LabelValue, model::Profile,
    writers::sample_v2::check_sample_v2, ErrorKind, InputFormat,
};

use super::util::{
    convert_on_a_trace_clock, files_under, fixture, fixture_path, plain, repo_path, samples, stat,
};

const FIXTURES: [&str; 6] = [
    "perf_script/speedscope_forks.linux-perf.txt",
    "perf_script/speedscope_one-sample.linux-perf.txt",
    "perf_script/speedscope_rust-mangled.linux-perf.txt",
    "perf_script/speedscope_simple-with-header.linux-perf.txt",
    "perf_script/proflake_inlined-exec.perf.txt.gz",
    "perf_script/proflake_no-callchain.perf.txt",
];

/// One callchain line as the test reads it.
#[derive(Debug)]
struct Line {
    address: u64,
    /// The symbol without `+0x…`, as printed (mangled).
    symbol: String,
    dso: String,
}

impl Line {
    fn inlined(&self) -> bool {
        self.dso == "inlined"
    }
}

/// One record as the test reads it.
#[derive(Debug)]
struct Record {
    comm: String,
    time_ns: i64,
    period: Option<i64>,
    event: String,
    /// Leaf first; for a record without a callchain, the frame on its header line.
    lines: Vec<Line>,
}

impl Record {
    /// Frames the record should have: one per address, an address's `(inlined)` lines and
    /// the line after them with the same address being one frame.
    fn depth(&self) -> usize {
        let l = &self.lines;
        (0..l.len())
            .filter(|&i| !l[i].inlined() || l.get(i + 1).is_none_or(|n| n.address != l[i].address))
            .count()
    }
}

/// `SECONDS.FRACTION` to ns with the test's own arithmetic.
fn ns(token: &str) -> i64 {
    let (s, f) = token.split_once('.').unwrap();
    let padded = format!("{f:0<9}");
    s.parse::<i64>().unwrap() * 1_000_000_000 + padded.parse::<i64>().unwrap()
}

fn is_time(token: &str) -> bool {
    token
        .strip_suffix(':')
        .and_then(|t| t.split_once('.'))
        .is_some_and(|(a, b)| {
            !a.is_empty()
                && !b.is_empty()
                && (a.chars().chain(b.chars())).all(|c| c.is_ascii_digit())
        })
}

fn frame_line(text: &str) -> Line {
    let text = text.trim();
    let (address, rest) = text.split_once(' ').unwrap();
    let open = rest.rfind(" (").unwrap();
    let symbol = rest[..open].trim();
    let symbol = match symbol.rfind("+0x") {
        Some(i) => &symbol[..i],
        None => symbol,
    };
    Line {
        address: u64::from_str_radix(address, 16).unwrap(),
        symbol: symbol.to_owned(),
        dso: rest[open + 2..rest.len() - 1].to_owned(),
    }
}

/// Every record of a text: a header line is one with a `DIGITS.DIGITS:` token that does not
/// start with a tab; the tab-indented lines after it are its callchain.
fn records(text: &str) -> Vec<Record> {
    let mut out: Vec<Record> = Vec::new();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if line.starts_with('\t') {
            out.last_mut().unwrap().lines.push(frame_line(line));
            continue;
        }
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let t = tokens.iter().position(|t| is_time(t)).unwrap();
        let mut who = &tokens[..t];
        if who.last().is_some_and(|w| w.starts_with('[')) {
            who = &who[..who.len() - 1];
        }
        let comm = who[..who.len() - 1].join(" ");
        let mut at = t + 1;
        let period = tokens[at].parse::<i64>().ok();
        at += usize::from(period.is_some());
        let event = tokens[at].strip_suffix(':').unwrap().to_owned();
        let rest = tokens[at + 1..].join(" ");
        let lines = if rest.ends_with(')') {
            vec![frame_line(&rest)]
        } else {
            vec![]
        };
        let time_ns = ns(tokens[t].strip_suffix(':').unwrap());
        out.push(Record {
            comm,
            time_ns,
            period,
            event,
            lines,
        });
    }
    // The decoder puts samples in time order, keeping the order of equal times.
    out.sort_by_key(|r| r.time_ns);
    out
}

fn text_of(rel: &str) -> String {
    String::from_utf8(plain(fixture(rel), rel)).unwrap()
}

/// The comm of each sample: its `comm` label, else its thread's name.
fn comms(profile: &Profile) -> Vec<String> {
    let table = profile.samples();
    (0..table.len())
        .map(|i| {
            let s = table.get(i);
            let label = s.labels.map(|l| profile.label_set(l)).and_then(|labels| {
                labels
                    .iter()
                    .find(|l| profile.str(l.key) == "comm")
                    .map(|l| match l.value {
                        LabelValue::Str(s) => profile.str(s).to_owned(),
                        LabelValue::Num { .. } => panic!("comm is text"),
                    })
            });
            let thread = profile.thread(s.thread).name;
            label.unwrap_or_else(|| profile.opt_str(thread).unwrap_or_default().to_owned())
        })
        .collect()
}

fn counts<T: Ord>(items: impl IntoIterator<Item = T>) -> BTreeMap<T, usize> {
    let mut map = BTreeMap::new();
    for item in items {
        *map.entry(item).or_default() += 1;
    }
    map
}

#[test]
fn one_timed_sample_per_record_with_its_comm_event_and_period() {
    for rel in FIXTURES {
        let want = records(&text_of(rel));
        let decoded = decode(&fixture(rel), None).unwrap_or_else(|e| panic!("{rel}: {e}"));
        assert_eq!(decoded.format, InputFormat::PerfScript, "{rel}");
        let rows = samples(&decoded.profile);
        assert_eq!(rows.len(), want.len(), "{rel}: header lines");
        let times: Vec<_> = rows.iter().map(|s| s.time.unwrap()).collect();
        let want_times: Vec<_> = want.iter().map(|r| r.time_ns).collect();
        assert_eq!(times, want_times, "{rel}");
        // Σ period per event (1 per record without a period).
        let mut got = BTreeMap::new();
        for s in &rows {
            *got.entry(s.series.name.clone()).or_insert(0) += s.weight;
        }
        let mut sums = BTreeMap::new();
        for r in &want {
            *sums.entry(r.event.clone()).or_insert(0) += r.period.unwrap_or(1);
        }
        assert_eq!(got, sums, "{rel}: Σ period per event");
        let got = counts(comms(&decoded.profile));
        assert_eq!(
            got,
            counts(want.iter().map(|r| r.comm.clone())),
            "{rel}: per comm"
        );
    }
}

#[test]
fn one_frame_per_address_and_unknown_symbols_keep_their_address() {
    for rel in FIXTURES {
        let want = records(&text_of(rel));
        let decoded = decode(&fixture(rel), None).unwrap();
        let rows = samples(&decoded.profile);
        let profile = &decoded.profile;
        let (mut unknown, mut inlined_into) = (0, 0);
        for (i, (s, r)) in rows.iter().zip(&want).enumerate() {
            let frames: Vec<_> = s.frames().iter().rev().collect();
            assert_eq!(frames.len(), r.depth(), "{rel} at {}", r.time_ns);
            // Leaf first, each frame at the address of its first line.
            let mut at = 0;
            for frame in &frames {
                let line = &r.lines[at];
                assert_eq!(
                    frame.address,
                    Some(FrameAddress::Absolute(line.address)),
                    "{rel}"
                );
                if line.symbol == "[unknown]" {
                    assert_eq!(frame.function, None, "{rel}");
                    unknown += 1;
                } else {
                    let printed = frame.system_name.as_ref().or(frame.function.as_ref());
                    assert_eq!(printed, Some(&line.symbol), "{rel}");
                }
                while r.lines[at].inlined()
                    && r.lines
                        .get(at + 1)
                        .is_some_and(|n| n.address == line.address)
                {
                    at += 1;
                }
                at += 1;
            }
            if let Some(leaf) = profile.samples().get(i).stack {
                inlined_into += (profile.stack_frames(leaf))
                    .map(|f| profile.frame(f).inlined_into.len())
                    .sum::<usize>();
            }
        }
        let want_unknown: usize = want
            .iter()
            .flat_map(|r| &r.lines)
            .filter(|l| l.symbol == "[unknown]")
            .count();
        assert_eq!(unknown, want_unknown, "{rel}: [unknown] frames");
        let lines: usize = want.iter().map(|r| r.lines.len()).sum();
        let depth: usize = want.iter().map(Record::depth).sum();
        assert_eq!(
            inlined_into,
            lines - depth,
            "{rel}: inlined lines folded into frames"
        );
    }
}

#[test]
fn kernel_frames_series_kinds_and_demangled_names() {
    let decoded = decode(&fixture(FIXTURES[0]), None).unwrap();
    let text = text_of(FIXTURES[0]);
    let kernel_lines = text
        .lines()
        .filter(|l| l.ends_with("([kernel.kallsyms])"))
        .count();
    let kernel_frames: usize = (samples(&decoded.profile).iter())
        .map(|s| s.frames().iter().filter(|f| f.kind == "kernel").count())
        .sum();
    assert_eq!(kernel_frames, kernel_lines);
    let rows = samples(&decoded.profile);
    assert!(rows
        .iter()
        .all(|s| (s.series.kind.name(), s.series.unit.as_str()) == ("cpu_time", "nanoseconds")));
    let cpus = counts(rows.iter().map(|s| s.cpu.unwrap()));
    assert_eq!(cpus.len(), 4, "the [cpu] column");

    let rows = samples(&decode(&fixture(FIXTURES[2]), None).unwrap().profile);
    assert!(rows
        .iter()
        .all(|s| s.series.name == "task-clock:ppp" && s.series.kind.name() == "cpu_time"));
    let rust = (rows.iter().flat_map(|s| s.frames()))
        .find(|f| {
            f.system_name
                .as_deref()
                .is_some_and(|n| n.starts_with("_R"))
        })
        .expect("a Rust v0 symbol");
    let function = rust.function.as_deref().unwrap();
    assert!(
        !function.starts_with("_R") && function.contains("::"),
        "{function}"
    );

    let rows = samples(&decode(&fixture(FIXTURES[4]), None).unwrap().profile);
    assert!(rows
        .iter()
        .all(|s| (s.series.kind.name(), s.series.unit.as_str()) == ("other", "count")));
    let vdso = (rows.iter().flat_map(|s| s.frames()))
        .find(|f| f.image_path.as_deref() == Some("[vdso]"))
        .unwrap();
    assert_eq!(
        (vdso.kind.as_str(), vdso.function.as_deref()),
        ("native", None)
    );
}

#[test]
fn threads_are_pid_tid_named_by_their_first_comm() {
    let decoded = decode(&fixture(FIXTURES[4]), None).unwrap();
    let rows = samples(&decoded.profile);
    let threads = counts(rows.iter().map(|s| (s.pid, s.tid, s.thread_name.clone())));
    let names: Vec<_> = threads.keys().cloned().collect();
    assert_eq!(
        names,
        [
            (Some(7971), Some(7971), Some("perf".into())),
            (Some(7971), Some(7975), Some("app".into()))
        ]
    );
    assert!(rows
        .iter()
        .all(|s| s.process_name.as_deref() == Some("perf")));
    assert_eq!(
        decoded
            .profile
            .attributes
            .get("perf.version")
            .map(String::as_str),
        Some("6.8.12")
    );

    // A lone id is the thread's: no process is known.
    let rows = samples(&decode(&fixture(FIXTURES[0]), None).unwrap().profile);
    let tids = counts(rows.iter().map(|s| (s.pid, s.tid.unwrap())));
    assert_eq!(tids.keys().map(|k| k.1).collect::<Vec<_>>(), [0, 9, 10, 11]);
    assert!(tids.keys().all(|k| k.0.is_none()));
}

#[test]
fn conversion_needs_a_timestamp_and_reports_every_record() {
    for rel in FIXTURES {
        let bytes = fixture(rel);
        let want = records(&text_of(rel));
        let converted = convert_on_a_trace_clock("uploads/p.perf", &bytes, rel);
        let manifest = &converted.manifest;
        assert_eq!(manifest.source.format, "perf-script");
        assert_eq!(manifest.profile.samples, want.len() as u64, "{rel}");
        for (event, n) in counts(want.iter().map(|r| r.event.clone())) {
            let series = manifest
                .series
                .iter()
                .find(|s| s.sample_type == event)
                .unwrap();
            assert_eq!(series.observations, n as u64, "{rel}: {event}");
        }
        for (_, chunk) in converted.sample_v2() {
            assert_eq!(check_sample_v2(chunk), vec![], "{rel}");
        }
    }
}

// ---- detection ---------------------------------------------------------------------------

fn prefix(bytes: &[u8]) -> &[u8] {
    &bytes[..bytes.len().min(4096)]
}

#[test]
fn only_the_perf_script_sniffer_claims_the_recordings() {
    for rel in FIXTURES {
        let bytes = plain(fixture(rel), rel);
        assert_eq!(
            sniff(prefix(&bytes)),
            Some(InputFormat::PerfScript),
            "{rel}"
        );
        for &other in InputFormat::ALL {
            if other != InputFormat::PerfScript {
                assert!(!other.sniffs(prefix(&bytes)), "{rel} sniffs as {other:?}");
            }
        }
    }
    // `perf script --header` with more than the sniffed prefix of `#` lines.
    let text = text_of(FIXTURES[3]);
    let (header, records) = text.split_at(text.find("\nsimple").unwrap() + 1);
    let padded = format!(
        "{header}{}{records}",
        "# bpf_prog_info 3: bpf_prog_6deef7357e7b4530 addr 0xffffffffc0366e7c size 54\n".repeat(60)
    );
    assert_eq!(
        sniff(prefix(padded.as_bytes())),
        Some(InputFormat::PerfScript)
    );
    assert!(!InputFormat::Folded.sniffs(prefix(padded.as_bytes())));
    let decoded = decode(padded.as_bytes(), None).unwrap();
    assert_eq!(decoded.profile.samples().len(), 136);
}

#[test]
fn the_perf_script_sniffer_claims_no_other_input() {
    let mut inputs = Vec::new();
    for root in [fixture_path(""), repo_path("samples")] {
        for entry in std::fs::read_dir(root).unwrap() {
            let dir = entry.unwrap().path();
            if dir
                .file_name()
                .is_some_and(|n| n != "perf_script" && n != "perf-script")
            {
                files_under(&dir, "", &mut inputs);
            }
        }
    }
    // perf script's text of the perf.data fixtures is perf script text too.
    inputs.retain(|p| !p.to_string_lossy().ends_with(".perf-script.txt.gz"));
    assert!(inputs.len() >= 40, "only {} inputs found", inputs.len());
    for path in inputs {
        let bytes = plain(std::fs::read(&path).unwrap(), &path.display().to_string());
        assert!(
            !InputFormat::PerfScript.sniffs(prefix(&bytes)),
            "{} must not sniff as perf-script",
            path.display()
        );
    }
}

// ---- malformed input ---------------------------------------------------------------------

fn malformed(bytes: &[u8]) -> (u64, String) {
    match decode(bytes, Some(InputFormat::PerfScript)) {
        Ok(d) => panic!(
            "expected an error, got {} samples",
            d.profile.samples().len()
        ),
        Err(e) => match e.kind() {
            ErrorKind::Malformed {
                format: "perf-script",
                offset,
                what,
            } => (*offset, what.clone()),
            other => panic!("expected a malformed perf script, got {other:?}"),
        },
    }
}

#[test]
fn lines_perf_does_not_print_are_errors_naming_the_line() {
    let text = text_of(FIXTURES[1]);
    let (offset, what) = malformed(format!("{text}\n\nmain;work 3\n").as_bytes());
    assert_eq!(offset, text.len() as u64 + 2);
    assert!(
        what.starts_with("line 8:") && what.contains("first line"),
        "{what}"
    );
    let (_, what) = malformed(b"a 1 1.0: 5 cycles:\n\na 1 1.5: cycles:\n");
    assert!(what.contains("line 3") && what.contains("period"), "{what}");
    // A cut record keeps the frames that were read; a source line under a frame is counted.
    let cut = &text[..text.find("main").unwrap()];
    let cut = &cut[..=cut.rfind('\n').unwrap()];
    let decoded = decode(format!("{cut}  a.c:5\n").as_bytes(), None).unwrap();
    assert_eq!(samples(&decoded.profile)[0].frames().len(), 2);
    assert_eq!(stat(&decoded.profile, "perf_unreadable_line"), 1);
}

#[test]
fn a_too_deep_callchain_keeps_its_sample_without_frames() {
    let mut text = String::from("app 1 1.0: 7 cycles:\n");
    for i in 0..9000 {
        text.push_str(&format!("\t{:x} f{i} (/bin/app)\n", 0x1000 + i));
    }
    text.push_str("\napp 1 2.0: 8 cycles:\n\t1000 f0 (/bin/app)\n");
    let decoded = decode(text.as_bytes(), None).unwrap();
    let rows = samples(&decoded.profile);
    assert_eq!(
        rows.iter()
            .map(|s| (s.weight, s.frames().len()))
            .collect::<Vec<_>>(),
        [(7, 0), (8, 1)]
    );
    assert_eq!(stat(&decoded.profile, "perf_stack_too_deep"), 1);
}
