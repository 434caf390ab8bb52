//! Helpers shared by the fixture tests: fixture loading, a flat rendering of decoded
//! samples that tests can compare field by field, trace_processor's CSV output, and small
//! protobuf framing helpers for building adversarial traces.

use std::path::{Path, PathBuf};

use crate::{
    model::CpuMode, model::FrameAddress, model::FrameHandle, model::Profile, model::Sample,
    model::SeriesKind, model::StackHandle, Decoded,
};

// ---- fixtures ---------------------------------------------------------------------------

pub use super::files::{fixture, fixture_path, gzip, plain, repo_file, repo_path};

/// Every file below `dir` (recursively; nothing when it does not exist) whose name ends with
/// `suffix`, documentation (`.md`) excepted.
pub fn files_under(dir: &Path, suffix: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        let name = path.to_string_lossy();
        if path.is_dir() {
            files_under(&path, suffix, out);
        } else if name.ends_with(suffix) && !name.ends_with(".md") {
            out.push(path);
        }
    }
}

// ---- containers -------------------------------------------------------------------------

/// Zstd-compresses bytes.
pub fn zstd_compress(bytes: &[u8]) -> Vec<u8> {
    zstd::encode_all(bytes, 3).unwrap()
}

/// The text of a fixture, relative to `tests/fixtures`.
pub fn fixture_text(rel: &str) -> String {
    String::from_utf8(fixture(rel)).unwrap_or_else(|e| panic!("fixture `{rel}` is not UTF-8: {e}"))
}

// ---- detection ---------------------------------------------------------------------------

/// What the sniffers look at: the first 4 KiB.
pub fn sniff_prefix(bytes: &[u8]) -> &[u8] {
    &bytes[..bytes.len().min(4096)]
}

/// Each of `inputs` (gunzipped) sniffs as `format`, and no other sniffer claims it whatever
/// the order they are tried in.
pub fn assert_only_sniffer(format: crate::InputFormat, inputs: &[(String, Vec<u8>)]) {
    for (name, bytes) in inputs {
        let bytes = plain(bytes.clone(), name);
        let prefix = sniff_prefix(&bytes);
        assert_eq!(crate::formats::sniff(prefix), Some(format), "{name}");
        for &other in crate::InputFormat::ALL {
            if other != format {
                assert!(!other.sniffs(prefix), "{name} sniffs as {other:?}");
            }
        }
    }
}

/// `format`'s sniffer claims no fixture or sample outside the directories named `own`.
pub fn assert_claims_no_other_input(format: crate::InputFormat, own: &str) {
    let mut inputs = Vec::new();
    for root in [fixture_path(""), repo_path("samples")] {
        for entry in std::fs::read_dir(root).unwrap() {
            let dir = entry.unwrap().path();
            if dir.file_name().is_some_and(|n| n != own) {
                files_under(&dir, "", &mut inputs);
            }
        }
    }
    assert!(inputs.len() >= 40, "only {} inputs found", inputs.len());
    for path in inputs {
        let bytes = plain(std::fs::read(&path).unwrap(), &path.display().to_string());
        assert!(
            !format.sniffs(sniff_prefix(&bytes)),
            "{} must not sniff as {format:?}",
            path.display()
        );
    }
}

/// Converts an input whose times are on a trace clock: without a start time or an arrival
/// time, or with an arrival time when a start time is required, it is refused
/// (`NoWallClock`); with only its arrival time it lands there, the same outputs a metadata
/// `timestamp` gives moved by the difference; with the metadata's `timestamp` it converts
/// (returned). `what` names it in failures.
pub fn convert_on_a_trace_clock(key: &str, bytes: &[u8], what: &str) -> crate::Converted {
    use crate::{convert_upload, ConvertOptions, ErrorKind, UploadMetadata};
    const TIMESTAMP_S: i64 = 1_700_000_000;
    const ARRIVAL_NS: i64 = (TIMESTAMP_S + 3_600) * 1_000_000_000;
    let refused = |options: &ConvertOptions| {
        let err = convert_upload(key, "etag", bytes, options)
            .err()
            .unwrap_or_else(|| panic!("{what}: a trace clock is no wall clock"));
        assert!(
            matches!(err.kind(), ErrorKind::NoWallClock { .. }),
            "{what}: {err}"
        );
    };
    refused(&ConvertOptions::default());
    refused(&ConvertOptions {
        received_at_ns: Some(ARRIVAL_NS),
        require_start_time: true,
        ..ConvertOptions::default()
    });
    let options = ConvertOptions {
        metadata: UploadMetadata {
            timestamp: Some(TIMESTAMP_S as f64),
            ..UploadMetadata::default()
        },
        ..ConvertOptions::default()
    };
    let at_timestamp =
        convert_upload(key, "etag", bytes, &options).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(
        at_timestamp.manifest.profile.clock_source, "metadata",
        "{what}"
    );
    let arrival = ConvertOptions {
        received_at_ns: Some(ARRIVAL_NS),
        ..ConvertOptions::default()
    };
    let at_arrival =
        convert_upload(key, "etag", bytes, &arrival).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(
        at_arrival.manifest.profile.clock_source, "arrival",
        "{what}"
    );
    let moved = ARRIVAL_NS - TIMESTAMP_S * 1_000_000_000;
    let outputs = |c: &crate::Converted, by: i64| -> Vec<_> {
        let outputs = c.manifest.outputs.iter();
        outputs
            .map(|o| {
                (
                    o.kind.clone(),
                    o.samples,
                    o.rows,
                    o.start_ns.map(|t| t - by),
                )
            })
            .collect()
    };
    assert_eq!(
        outputs(&at_arrival, moved),
        outputs(&at_timestamp, 0),
        "{what}"
    );
    at_timestamp
}

/// When the earliest output of a conversion starts, ns since the epoch.
pub fn first_output_start_ns(manifest: &crate::Manifest) -> i64 {
    let starts = manifest.outputs.iter().filter_map(|o| o.start_ns);
    starts.min().expect("an output with a start")
}

/// Decodes `bytes`, failing the test with `what` and the error when decoding fails.
pub fn decode_ok(bytes: &[u8], what: &str) -> Decoded {
    super::decode(bytes, None).unwrap_or_else(|e| panic!("{what}: decode failed: {e}"))
}

// ---- a flat view of the model -----------------------------------------------------------

/// One frame with every handle resolved to text, so that frames of different profiles compare.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameView {
    /// `FrameKind::name()`, or the producer's own word for `FrameKind::Other`.
    pub kind: String,
    pub function: Option<String>,
    pub system_name: Option<String>,
    pub module: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
    /// `Image.path` of the frame's image.
    pub image_path: Option<String>,
    /// `Image.code_id` as lowercase hex.
    pub code_id: Option<String>,
    /// Whether the frame has an image at all (an image may have no path).
    pub has_image: bool,
    pub address: Option<FrameAddress>,
}

impl FrameView {
    /// The name trace_processor shows for the frame: ART frames are split by the decoder into
    /// class (`module`) and method (`function`), trace_processor keeps `class.method`.
    pub fn tp_name(&self) -> Option<String> {
        match (&self.module, &self.function) {
            (Some(m), Some(f)) if self.kind == "jvm" => Some(format!("{m}.{f}")),
            (_, f) => f.clone(),
        }
    }

    /// `ImageRelative` address (Perfetto `rel_pc`), if that is what the frame has.
    pub fn rel_pc(&self) -> Option<u64> {
        match self.address {
            Some(FrameAddress::ImageRelative(pc)) => Some(pc),
            _ => None,
        }
    }
}

/// A sample series with its strings resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeriesView {
    pub kind: SeriesKind,
    pub name: String,
    pub unit: String,
    pub source: Option<String>,
    pub frequency_hz: Option<u64>,
    pub period: Option<u64>,
}

/// One sample with every handle resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SampleView {
    pub time: Option<i64>,
    pub pid: Option<i64>,
    pub tid: Option<i64>,
    pub process_name: Option<String>,
    pub thread_name: Option<String>,
    pub cpu: Option<u32>,
    pub cpu_mode: &'static str,
    pub unwind_error: Option<String>,
    pub counter: Option<u64>,
    pub weight: i64,
    pub series: SeriesView,
    /// Root first; `None` when the sample has no stack.
    pub stack: Option<Vec<FrameView>>,
}

impl SampleView {
    /// The stack's frames, root first (empty without a stack).
    pub fn frames(&self) -> &[FrameView] {
        self.stack.as_deref().unwrap_or(&[])
    }

    /// The leaf frame.
    pub fn leaf(&self) -> Option<&FrameView> {
        self.stack.as_ref().and_then(|s| s.last())
    }
}

/// A frame, resolved.
pub fn frame_view(profile: &Profile, h: FrameHandle) -> FrameView {
    let f = profile.frame(h);
    let s = |h| profile.opt_str(h).map(str::to_owned);
    let image = f.image.map(|i| profile.image(i));
    FrameView {
        kind: profile.kind_name(f.kind).to_owned(),
        function: s(f.function),
        system_name: s(f.system_name),
        module: s(f.module),
        file: s(f.file),
        line: f.line,
        image_path: image.and_then(|i| s(i.path)),
        code_id: image.and_then(|i| i.code_id.as_ref().map(|c| c.as_str().to_owned())),
        has_image: image.is_some(),
        address: f.address,
    }
}

/// The frames of a stack, root first (the model walks leaf first).
pub fn stack_root_first(profile: &Profile, leaf: StackHandle) -> Vec<FrameView> {
    let mut frames: Vec<FrameView> = profile
        .stack_frames(leaf)
        .map(|f| frame_view(profile, f))
        .collect();
    frames.reverse();
    frames
}

/// A sample, resolved.
pub fn sample_view(profile: &Profile, s: &Sample) -> SampleView {
    let thread = profile.thread(s.thread);
    let process = profile.process(thread.process);
    let series = profile.series(s.series);
    SampleView {
        time: s.time,
        pid: process.pid,
        tid: thread.tid,
        process_name: profile.opt_str(process.name).map(str::to_owned),
        thread_name: profile.opt_str(thread.name).map(str::to_owned),
        cpu: s.cpu,
        cpu_mode: s.cpu_mode.name(),
        unwind_error: profile.opt_str(s.unwind_error).map(str::to_owned),
        counter: s.counter,
        weight: s.weight,
        series: SeriesView {
            kind: series.kind,
            name: profile.str(series.name).to_owned(),
            unit: profile.str(series.unit).to_owned(),
            source: profile.opt_str(series.source).map(str::to_owned),
            frequency_hz: series.frequency_hz,
            period: series.period,
        },
        stack: s.stack.map(|leaf| stack_root_first(profile, leaf)),
    }
}

/// Every sample of a profile, resolved, in the profile's (time) order.
pub fn samples(profile: &Profile) -> Vec<SampleView> {
    profile
        .samples()
        .iter()
        .map(|s| sample_view(profile, &s))
        .collect()
}

/// A stat counter (0 when never counted).
pub fn stat(profile: &Profile, name: &str) -> u64 {
    profile.stats.get(name).copied().unwrap_or(0)
}

/// Whether trace_processor's `cpu_profiling_samples` (stdlib `stacks.cpu_profiling`) would
/// list the sample: it has a callstack and its session's timebase is time (unit "ns"). The
/// model keeps that as the series kind: CPU or wall time.
pub fn is_time_profiling_sample(s: &SampleView) -> bool {
    s.stack.is_some() && matches!(s.series.kind, SeriesKind::CpuTime | SeriesKind::WallTime)
}

/// trace_processor's spelling of a cpu mode column: NULL where the model says `Unknown`
/// (the StackSample execution-context view leaves it unset).
pub fn tp_cpu_mode(mode: &'static str) -> Option<&'static str> {
    (mode != CpuMode::Unknown.name()).then_some(mode)
}

// ---- trace_processor's CSV output -------------------------------------------------------

/// The CSV trace_processor prints: a header row of quoted names, then rows of unquoted
/// numbers, quoted strings and `"[NULL]"`.
#[derive(Debug)]
pub struct Csv {
    pub header: Vec<String>,
    /// `None` is trace_processor's `[NULL]`.
    pub rows: Vec<Vec<Option<String>>>,
}

fn split_csv_line(line: &str) -> Vec<(String, bool)> {
    let mut fields = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        let mut field = String::new();
        let quoted = chars.peek() == Some(&'"');
        if quoted {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    Some('"') => break,
                    Some(c) => field.push(c),
                    None => panic!("unterminated quoted field in CSV line {line:?}"),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                field.push(c);
                chars.next();
            }
        }
        fields.push((field, quoted));
        match chars.next() {
            Some(',') => continue,
            None => break,
            Some(c) => panic!("unexpected {c:?} after a field in CSV line {line:?}"),
        }
    }
    fields
}

impl Csv {
    /// Parses trace_processor's CSV output.
    pub fn parse(text: &str) -> Csv {
        let mut lines = text.lines().filter(|l| !l.trim().is_empty());
        let header: Vec<String> = split_csv_line(lines.next().expect("CSV has a header"))
            .into_iter()
            .map(|(f, _)| f)
            .collect();
        let rows: Vec<Vec<Option<String>>> = lines
            .map(|l| {
                let row: Vec<Option<String>> = split_csv_line(l)
                    .into_iter()
                    .map(|(f, _)| (f != "[NULL]").then_some(f))
                    .collect();
                assert_eq!(
                    row.len(),
                    header.len(),
                    "CSV row {l:?} vs header {header:?}"
                );
                row
            })
            .collect();
        Csv { header, rows }
    }

    fn col(&self, name: &str) -> usize {
        self.header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("CSV has no column {name:?}; columns: {:?}", self.header))
    }

    /// A cell as text (`None` for NULL).
    pub fn str(&self, row: usize, col: &str) -> Option<&str> {
        self.rows[row][self.col(col)].as_deref()
    }

    /// A cell as an integer (`None` for NULL).
    pub fn int(&self, row: usize, col: &str) -> Option<i64> {
        self.str(row, col).map(|v| {
            v.parse()
                .unwrap_or_else(|e| panic!("CSV cell {col}[{row}] = {v:?} is not an integer: {e}"))
        })
    }

    /// A cell as a number (`None` for NULL); trace_processor prints doubles as `512.000000`.
    pub fn float(&self, row: usize, col: &str) -> Option<f64> {
        self.str(row, col).map(|v| {
            v.parse()
                .unwrap_or_else(|e| panic!("CSV cell {col}[{row}] = {v:?} is not a number: {e}"))
        })
    }

    /// A cell holding a whole number printed as a double (`10020141.000000`).
    pub fn whole(&self, row: usize, col: &str) -> Option<u64> {
        self.float(row, col).map(|v| {
            assert!(
                v >= 0.0 && v.fract() == 0.0,
                "{col}[{row}] = {v} is not a whole number"
            );
            v as u64
        })
    }
}

// ---- protobuf framing -------------------------------------------------------------------

/// A protobuf varint.
pub fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return out;
        }
        out.push(b | 0x80);
    }
}

/// Reads a varint at the start of `bytes`: (value, bytes used).
pub fn read_varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// One `Trace.packet` record (tag 0x0a, length, body).
pub fn record(body: &[u8]) -> Vec<u8> {
    let mut out = vec![0x0a];
    out.extend(varint(body.len() as u64));
    out.extend_from_slice(body);
    out
}

/// The byte ranges of the top-level records of an uncompressed trace made only of
/// `Trace.packet` records: (start, header length, end).
pub fn record_spans(trace: &[u8]) -> Vec<(usize, usize, usize)> {
    let mut spans = Vec::new();
    let mut at = 0;
    while at < trace.len() {
        assert_eq!(trace[at], 0x0a, "record at byte {at} is not a Trace.packet");
        let (len, used) = read_varint(&trace[at + 1..]).expect("record length");
        let header = 1 + used;
        let end = at + header + len as usize;
        assert!(end <= trace.len(), "record at byte {at} runs past the end");
        spans.push((at, header, end));
        at = end;
    }
    spans
}
