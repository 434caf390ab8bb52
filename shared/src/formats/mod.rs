//! Input formats: sniffing and one decoder per format, each turning bytes into a
//! [`Profile`].
//!
//! Decompression of the whole file is its own step ([`Container`]); the format is then
//! detected from the decompressed content, never from a file name.

pub(crate) mod binaries;
mod chrome;
mod container;
mod demangle;
mod firefox;
mod folded;
mod jfr;
/// A JFR recording of three chunks, each started so many ns after the one before, for the
/// pipeline's tests of a second pass.
#[cfg(test)]
pub(crate) use jfr::synthetic_tests::chunks_apart as jfr_chunks_apart;
mod json_document;
mod json_scan;
mod otlp;
mod perf_data;
mod perf_script;
mod perfetto;
mod pprof;
mod pprof_legacy;
mod protowire;
mod second_pass;
pub(crate) mod sentry;
mod spans;
mod speedscope;
mod text_blocks;
mod v8;
mod value_types;

use std::io::{self, Read};

pub use container::Container;
pub(crate) use container::{CappedReader, LimitHit};
pub(crate) use jfr::{
    apply_context_labels, context_relabeling, read_snapshot as read_labels_snapshot, ContextLabels,
};
pub(crate) use otlp::{read_request as read_otlp_request, RequestSummary as OtlpRequest};
pub use second_pass::Reopen;
pub(crate) use second_pass::{decode_first_pass, Decoding, SecondPass};
pub use sentry::chunk::PassThrough;

use crate::error::{Error, ErrorKind, Result};
use crate::limits::Limits;
use crate::metadata::UploadMetadata;
use crate::model::Profile;

/// How many leading bytes the sniffers look at.
const SNIFF_LEN: usize = 4096;

/// The input formats proflake decodes. Closed: a new format is a new variant, a new module and
/// one arm in `sniff` and the decoder's `match`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InputFormat {
    /// Perfetto protobuf trace (`.pftrace`, `.perfetto-trace`).
    Perfetto,
    /// OTLP profiles, binary protobuf: an `ExportProfilesServiceRequest` / `ProfilesData`
    /// (layouts v1.8 to v1.11), or a stream of them each behind a 4-byte big-endian length.
    Otlp,
    /// OTLP profiles as OTLP/JSON.
    OtlpJson,
    /// pprof `profile.proto`.
    Pprof,
    /// A Sentry envelope holding `profile_chunk` items (Sample v2 JSON, or SDK metadata plus a
    /// Perfetto trace).
    SentryEnvelope,
    /// One Sentry Sample v2 profile chunk (JSON).
    SampleV2,
    /// Folded (collapsed) stacks: `root;...;leaf COUNT` lines.
    Folded,
    /// A V8 CPU profile (`.cpuprofile`: DevTools `Profiler.Profile`, Node `--cpu-prof`).
    V8CpuProfile,
    /// speedscope's JSON format (sampled and evented profiles).
    Speedscope,
    /// Chrome's Trace Event Format (JSON): Chrome and DevTools traces, agent traces.
    ChromeJson,
    /// A Firefox Profiler profile: the gecko format Firefox writes, or the processed format
    /// profiler.firefox.com saves and samply writes.
    Firefox,
    /// gperftools' legacy binary CPU profile (`CPUPROFILE=`, Go's `runtime/pprof` before 1.9).
    PprofLegacy,
    /// Linux perf samples as `perf script` prints them.
    PerfScript,
    /// Linux `perf.data`, as `perf record` writes it (file or pipe mode).
    PerfData,
    /// A Java Flight Recorder recording (`.jfr`), the JDK's or async-profiler's.
    Jfr,
}

impl InputFormat {
    /// Every format, in the order the sniffer tries them.
    pub const ALL: &'static [InputFormat] = &[
        // Binary magics (`PERFILE2`, `FLR\0`) that no protobuf, JSON or text another sniffer
        // would take.
        InputFormat::PerfData,
        InputFormat::Jfr,
        // OTLP's sniffer is the strictest of the protobuf ones; Perfetto's would also claim a
        // request whose first resource has no `resource` field.
        InputFormat::Otlp,
        InputFormat::Perfetto,
        InputFormat::Pprof,
        // Its first word is 0, which the protobuf sniffers above reject.
        InputFormat::PprofLegacy,
        InputFormat::SentryEnvelope,
        // Before the JSON formats whose sniffers would take any object.
        InputFormat::V8CpuProfile,
        InputFormat::Speedscope,
        InputFormat::ChromeJson,
        InputFormat::Firefox,
        InputFormat::SampleV2,
        InputFormat::OtlpJson,
        // Before folded stacks: a prefix of `#` lines is no folded line, but perf's header.
        InputFormat::PerfScript,
        InputFormat::Folded,
    ];

    /// The format's short name, as used on the command line and in outputs.
    pub fn name(self) -> &'static str {
        match self {
            InputFormat::Perfetto => "perfetto",
            InputFormat::Otlp => "otlp",
            InputFormat::OtlpJson => "otlp-json",
            InputFormat::Pprof => "pprof",
            InputFormat::SentryEnvelope => "sentry-envelope",
            InputFormat::SampleV2 => "sample-v2",
            InputFormat::Folded => "folded",
            InputFormat::V8CpuProfile => "cpuprofile",
            InputFormat::Speedscope => "speedscope",
            InputFormat::ChromeJson => "chrome-json",
            InputFormat::Firefox => "firefox",
            InputFormat::PprofLegacy => "pprof-legacy",
            InputFormat::PerfScript => "perf-script",
            InputFormat::PerfData => "perf-data",
            InputFormat::Jfr => "jfr",
        }
    }

    /// Whether `prefix`, the first bytes of decompressed content, looks like this format,
    /// whatever the formats tried before it say.
    pub fn sniffs(self, prefix: &[u8]) -> bool {
        match self {
            InputFormat::Perfetto => perfetto::test(prefix),
            InputFormat::Otlp => otlp::test(prefix),
            InputFormat::OtlpJson => otlp::test_json(prefix),
            InputFormat::Pprof => pprof::test(prefix),
            InputFormat::SentryEnvelope => sentry::test_envelope(prefix),
            InputFormat::SampleV2 => sentry::chunk::test_chunk(prefix),
            InputFormat::Folded => folded::test(prefix),
            InputFormat::V8CpuProfile => v8::test(prefix),
            InputFormat::Speedscope => speedscope::test(prefix),
            InputFormat::ChromeJson => chrome::test(prefix),
            InputFormat::Firefox => firefox::test(prefix),
            InputFormat::PprofLegacy => pprof_legacy::test(prefix),
            InputFormat::PerfScript => perf_script::test(prefix),
            InputFormat::PerfData => perf_data::test(prefix),
            InputFormat::Jfr => jfr::test(prefix),
        }
    }

    /// Parses a short name.
    pub fn from_name(name: &str) -> Option<InputFormat> {
        Self::ALL.iter().copied().find(|f| f.name() == name)
    }
}

/// A decoded input.
#[derive(Debug)]
pub struct Decoded {
    /// The profile.
    pub profile: Profile,
    /// The detected format.
    pub format: InputFormat,
    /// The whole-file compression that was undone.
    pub container: Container,
    /// Metadata the input carries itself (the SDK's chunk metadata in a Sentry envelope). The
    /// caller's metadata takes precedence over it.
    pub metadata: Option<UploadMetadata>,
    /// Sample v2 chunks the input already holds, in input order, read into `profile` too;
    /// Relay accepts them, so they are passed through unchanged instead of being written
    /// from the model.
    pub chunks: Vec<PassThrough>,
}

/// A Sample v2 chunk as an input holds it.
#[derive(Debug)]
pub(crate) struct SampleV2Item {
    /// Where the chunk starts in the (decompressed) input.
    pub offset: u64,
    /// The `platform` header of its envelope item, which must agree with the chunk's.
    pub platform: Option<String>,
    /// The chunk's bytes.
    pub json: Vec<u8>,
}

/// What a decoder returns beyond the profile.
#[derive(Debug, Default)]
pub(crate) struct Extras {
    pub metadata: Option<UploadMetadata>,
    pub sample_v2: Vec<SampleV2Item>,
}

/// Detects the format of decompressed content from its first bytes.
pub fn sniff(prefix: &[u8]) -> Option<InputFormat> {
    InputFormat::ALL.iter().copied().find(|f| f.sniffs(prefix))
}

/// Decodes `bytes` (compressed or not) into a profile within `limits`. `format` overrides
/// detection.
pub(crate) fn decode(
    bytes: &[u8],
    format: Option<InputFormat>,
    limits: &Limits,
) -> Result<Decoded> {
    decode_stream(bytes, bytes.len() as u64, format, limits)
}

/// An upload with its whole-file compression being undone as it is read, and its format.
pub(crate) struct Opened<R> {
    pub format: InputFormat,
    pub container: Container,
    /// The decompressed bytes, from the first.
    pub stream: R,
}

/// Opens the `len` bytes `input` reads: detects and undoes the container and detects the
/// format (`format` overrides detection), reading no more than the first few KiB.
pub(crate) fn open_stream<'a>(
    mut input: impl Read + 'a,
    len: u64,
    format: Option<InputFormat>,
    limits: &Limits,
) -> Result<Opened<impl Read + 'a>> {
    // The container's magic, read whole even from a reader that hands out fewer bytes.
    let mut magic = Vec::with_capacity(4);
    (&mut input)
        .take(4)
        .read_to_end(&mut magic)
        .map_err(|e| io_error(e, Container::Plain.name(), 0, "first bytes"))?;
    let container = Container::sniff(&magic);
    let input = io::Cursor::new(magic).chain(input);
    let mut reader = container::open(input, len, container, limits)
        .map_err(|e| io_error(e, container.name(), 0, "container header"))?;
    let mut prefix = Vec::with_capacity(SNIFF_LEN);
    (&mut reader)
        .take(SNIFF_LEN as u64)
        .read_to_end(&mut prefix)
        .map_err(|e| io_error(e, container.name(), 0, "first bytes"))?;
    let format = match format.or_else(|| sniff(&prefix)) {
        Some(f) => f,
        None => {
            let tried: Vec<_> = InputFormat::ALL.iter().map(|f| f.name()).collect();
            return Err(ErrorKind::UnsupportedFormat {
                tried: tried.join(", "),
            }
            .into());
        }
    };
    Ok(Opened {
        format,
        container,
        stream: io::Cursor::new(prefix).chain(reader),
    })
}

/// [`decode`] of the `len` bytes `input` reads. Perfetto traces, folded stacks and perf script
/// text are decoded as they are read; the other formats are read whole first.
pub(crate) fn decode_stream(
    input: impl Read,
    len: u64,
    format: Option<InputFormat>,
    limits: &Limits,
) -> Result<Decoded> {
    decode_stream_with(input, len, format, limits, &binaries::NoBinaries)
}

/// [`decode_stream`] with the runtime binaries a decoder that unwinds may ask for.
pub(crate) fn decode_stream_with(
    input: impl Read,
    len: u64,
    format: Option<InputFormat>,
    limits: &Limits,
    binaries: &dyn binaries::UnwindBinaries,
) -> Result<Decoded> {
    let opened = open_stream(input, len, format, limits)?;
    decode_opened(opened, len, limits, binaries)
}

/// Decodes an opened upload of `len` stored bytes.
pub(crate) fn decode_opened(
    opened: Opened<impl Read>,
    len: u64,
    limits: &Limits,
    binaries: &dyn binaries::UnwindBinaries,
) -> Result<Decoded> {
    let Opened {
        format,
        container,
        mut stream,
    } = opened;
    let streamed = match format {
        InputFormat::Perfetto => Some(perfetto::decode(&mut stream, container.name(), limits)?),
        InputFormat::Folded => Some(folded::decode(&mut stream, container.name(), limits)?),
        InputFormat::ChromeJson => Some(chrome::decode(&mut stream, container.name(), limits)?),
        InputFormat::PerfScript => {
            Some(perf_script::decode(&mut stream, container.name(), limits)?)
        }
        InputFormat::PerfData => Some(perf_data::decode(
            &mut stream,
            container.name(),
            limits,
            binaries,
        )?),
        InputFormat::Jfr => {
            let profile = jfr::decode(&mut stream, container.name(), limits)?;
            return accepted(profile, format, container, jfr::extras(), limits);
        }
        _ => None,
    };
    let (profile, extras) = match streamed {
        Some(profile) => (profile, Extras::default()),
        None => read_whole(format, container, stream, len, limits)?,
    };
    accepted(profile, format, container, extras, limits)
}

/// Decodes a format that is not streamable (a protobuf message or JSON document as a whole):
/// reads it all, within the decompression limit.
fn read_whole(
    format: InputFormat,
    container: Container,
    mut stream: impl Read,
    len: u64,
    limits: &Limits,
) -> Result<(Profile, Extras)> {
    // A plain input is as long as the store said: read into one allocation, not a doubling one.
    let capacity = match container {
        Container::Plain => len.min(limits.max_decompressed_bytes),
        _ => 0,
    };
    let mut whole = Vec::with_capacity(usize::try_from(capacity).unwrap_or(0));
    stream
        .read_to_end(&mut whole)
        .map_err(|e| io_error(e, container.name(), 0, "input"))?;
    Ok(match format {
        InputFormat::Perfetto
        | InputFormat::Folded
        | InputFormat::ChromeJson
        | InputFormat::PerfScript
        | InputFormat::PerfData
        | InputFormat::Jfr => unreachable!("streamed"),
        InputFormat::Otlp => (otlp::decode(&whole, limits)?, Extras::default()),
        InputFormat::OtlpJson => (otlp::decode_json(&whole, limits)?, Extras::default()),
        InputFormat::Pprof => (pprof::decode(&whole, limits)?, Extras::default()),
        InputFormat::SentryEnvelope => sentry::decode_envelope(&whole, limits)?,
        InputFormat::SampleV2 => sentry::chunk::decode_chunk(whole),
        InputFormat::V8CpuProfile => (v8::decode(&whole, limits)?, Extras::default()),
        InputFormat::Speedscope => (speedscope::decode(&whole, limits)?, Extras::default()),
        InputFormat::Firefox => (firefox::decode(&whole, limits)?, Extras::default()),
        InputFormat::PprofLegacy => (pprof_legacy::decode(&whole, limits)?, Extras::default()),
    })
}

/// The decoded input, once the Sample v2 chunks it holds are taken in and the model is
/// within `limits`.
fn accepted(
    mut profile: Profile,
    format: InputFormat,
    container: Container,
    extras: Extras,
    limits: &Limits,
) -> Result<Decoded> {
    let chunks = sentry::chunk::accept_items(&mut profile, extras.sample_v2, limits)?;
    limits.check_profile(&profile)?;
    Ok(Decoded {
        profile,
        format,
        container,
        metadata: extras.metadata,
        chunks,
    })
}

/// Maps an I/O error from a decompressing reader onto the error kinds callers match on.
pub(crate) fn io_error(
    e: io::Error,
    codec: &'static str,
    offset: u64,
    what: &'static str,
) -> Error {
    // A failing store under the reader (an S3 body cut off): its own error, transient.
    if e.get_ref().is_some_and(|r| r.is::<Error>()) {
        return crate::error::from_io("", e);
    }
    if let Some(hit) = e.get_ref().and_then(|r| r.downcast_ref::<LimitHit>()) {
        return ErrorKind::LimitExceeded {
            limit: hit.limit,
            max: hit.max,
        }
        .into();
    }
    let kind = if e.kind() == io::ErrorKind::UnexpectedEof {
        ErrorKind::Truncated { offset, what }
    } else {
        ErrorKind::Decompression { container: codec }
    };
    Error::new(kind).with_source(e)
}
