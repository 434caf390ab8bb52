//! OTLP profiles (`opentelemetry.proto.profiles.v1development`): binary protobuf requests in the
//! v1.8, v1.9 and v1.10/v1.11 numberings, length-prefixed streams of them, and OTLP/JSON.
//!
//! Every request is checked with the profcheck rules (findings go to `Profile::findings`),
//! then imported: processes from resource or sample `process.*` attributes, one series per
//! OTLP profile, one model sample per observation. References into the dictionary are bounds-checked; a reference the model
//! needs that points nowhere is an error naming its path.

mod dict;
mod frames;
mod import;
mod json;
mod layout;
mod legacy;
mod process;
mod profcheck;
mod sniff;

use proflake_proto::otlp::legacy::{v1_8, v1_9};
use proflake_proto::otlp::profiles::ProfilesData;
use prost::Message;

use self::dict::Ctx;
use self::import::Importer;
use self::layout::Layout;
use self::profcheck::{Findings, Options};
use crate::error::{Error, ErrorKind, Result};
use crate::limits::{exceeded, Limits};
use crate::model::Profile;

/// Most profcheck findings kept as text; the rest are only counted, so a capture with a bad
/// time range on every timestamp cannot fill memory with messages. A bound on what is
/// reported, not on the input, so not one of the [`Limits`].
const MAX_FINDINGS: usize = 1000;

/// Whether decompressed content starts a binary OTLP profiles request (or a length-prefixed
/// stream of them). Strict enough not to claim pprof or Perfetto, which also start with 0x0a.
pub(crate) fn test(prefix: &[u8]) -> bool {
    sniff::is_binary(prefix, prefix.len() < super::SNIFF_LEN)
}

/// Whether decompressed content starts an OTLP/JSON profiles document.
pub(crate) fn test_json(prefix: &[u8]) -> bool {
    sniff::is_json(prefix)
}

/// Decodes a binary request, or a stream of requests each behind a 4-byte big-endian length
/// (as sig-profiling's `otlp-bench` stores them), into one profile.
pub(crate) fn decode(bytes: &[u8], limits: &Limits) -> Result<Profile> {
    let mut run = Run::new("otlp", limits);
    // A message never starts with 0x00 (field 0); a big-endian length below 16 MiB does.
    if bytes.first() != Some(&0) {
        run.binary(bytes, 0, None)?;
        return Ok(run.finish());
    }
    let mut at = 0usize;
    let mut index = 0usize;
    while at < bytes.len() {
        let Some(header) = bytes.get(at..at + 4) else {
            return Err(ErrorKind::Truncated {
                offset: at as u64,
                what: "OTLP stream length prefix",
            }
            .into());
        };
        let len = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let start = at + 4;
        let Some(body) = bytes.get(start..start + len) else {
            return Err(ErrorKind::Truncated {
                offset: at as u64,
                what: "OTLP stream message",
            }
            .into());
        };
        if index as u64 == limits.max_stream_messages {
            return Err(exceeded("max_stream_messages", limits.max_stream_messages));
        }
        run.binary(body, start as u64, Some(index))?;
        at = start + len;
        index += 1;
    }
    Ok(run.finish())
}

/// Decodes OTLP/JSON: one request object, or several separated by whitespace (JSON lines, as
/// the Collector's file exporter writes them).
pub(crate) fn decode_json(bytes: &[u8], limits: &Limits) -> Result<Profile> {
    limits.check_json_depth(bytes)?;
    let mut run = Run::new("otlp-json", limits);
    let mut docs = serde_json::Deserializer::from_slice(bytes).into_iter::<serde_json::Value>();
    let mut index = 0usize;
    loop {
        let offset = docs.byte_offset() as u64;
        let Some(doc) = docs.next() else { break };
        let doc = doc.map_err(|e| json_syntax(e, bytes.len()))?;
        let data = json::profiles_data(&doc).map_err(|e| {
            Error::new(ErrorKind::Malformed {
                format: "otlp-json",
                offset,
                what: e.0,
            })
        })?;
        run.request(&data, offset, Some(index).filter(|_| index > 0))?;
        index += 1;
    }
    if index == 0 {
        return Err(ErrorKind::Malformed {
            format: "otlp-json",
            offset: 0,
            what: "no JSON document".into(),
        }
        .into());
    }
    Ok(run.finish())
}

fn json_syntax(e: serde_json::Error, len: usize) -> Error {
    let kind = if e.is_eof() {
        ErrorKind::Truncated {
            offset: len as u64,
            what: "OTLP/JSON document",
        }
    } else {
        ErrorKind::Malformed {
            format: "otlp-json",
            offset: 0,
            what: format!("not JSON: {e}"),
        }
    };
    Error::new(kind).with_source(e)
}

/// One binary request parsed in the layout its bytes use, in the v1.10 messages, with the
/// layout and how many v1.8 profile comments it dropped.
fn parse_binary(
    bytes: &[u8],
    offset: u64,
    limits: &Limits,
) -> Result<(ProfilesData, Layout, usize)> {
    let layout = layout::detect(bytes, offset, limits)?;
    let invalid = |e: prost::DecodeError| {
        Error::new(ErrorKind::Malformed {
            format: "otlp",
            offset,
            what: format!("not a valid {} OTLP profiles request: {e}", layout.name()),
        })
        .with_source(e)
    };
    Ok(match layout {
        Layout::V1_10 => (ProfilesData::decode(bytes).map_err(invalid)?, layout, 0),
        Layout::V1_9 => (
            legacy::from_v1_9(v1_9::ProfilesData::decode(bytes).map_err(invalid)?),
            layout,
            0,
        ),
        Layout::V1_8 => {
            let (data, comments) =
                legacy::from_v1_8(v1_8::ProfilesData::decode(bytes).map_err(invalid)?);
            (data, layout, comments)
        }
    })
}

/// What the HTTP receiver needs to know of one OTLP request before it stores it, read without
/// building a profile: the request parses in one of the layouts, how many samples it holds,
/// each resource's string attributes, and the profcheck findings.
#[derive(Debug, Default)]
pub(crate) struct RequestSummary {
    /// Sample records of every profile.
    pub samples: usize,
    /// The string attributes of each resource, in request order.
    pub resources: Vec<Vec<(String, String)>>,
    /// profcheck's findings (the first [`MAX_FINDINGS`]) and how many there were.
    pub findings: Vec<String>,
    /// How many findings there were in all.
    pub findings_total: usize,
}

/// Reads one OTLP request (binary in any layout, or one OTLP/JSON document) into its
/// [`RequestSummary`]: an error is a body that does not parse as a request.
pub(crate) fn read_request(bytes: &[u8], json: bool, limits: &Limits) -> Result<RequestSummary> {
    let data = if json {
        limits.check_json_depth(bytes)?;
        let doc: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|e| json_syntax(e, bytes.len()))?;
        json::profiles_data(&doc).map_err(|e| {
            Error::new(ErrorKind::Malformed {
                format: "otlp-json",
                offset: 0,
                what: e.0,
            })
        })?
    } else {
        parse_binary(bytes, 0, limits)?.0
    };
    let mut findings = Findings::new(MAX_FINDINGS);
    profcheck::check(&data, Options::default(), &mut findings);
    let mut summary = RequestSummary {
        findings_total: findings.total,
        findings: findings.list,
        ..RequestSummary::default()
    };
    for resource in &data.resource_profiles {
        let attributes = resource.resource.iter().flat_map(|r| &r.attributes);
        let strings = attributes.filter_map(|kv| match kv.value.as_ref()?.value.as_ref()? {
            proflake_proto::otlp::common::any_value::Value::StringValue(s) => {
                Some((kv.key.clone(), s.clone()))
            }
            _ => None,
        });
        summary.resources.push(strings.collect());
        let profiles = resource.scope_profiles.iter().flat_map(|s| &s.profiles);
        summary.samples += profiles.map(|p| p.samples.len()).sum::<usize>();
    }
    Ok(summary)
}

/// One decode: the importer and the profcheck findings of every request.
struct Run<'l> {
    format: &'static str,
    importer: Importer,
    findings: Findings,
    limits: &'l Limits,
}

impl<'l> Run<'l> {
    fn new(format: &'static str, limits: &'l Limits) -> Self {
        Run {
            format,
            importer: Importer::new(format, limits),
            findings: Findings::new(MAX_FINDINGS),
            limits,
        }
    }

    /// Decodes one binary request in the layout its bytes use.
    fn binary(&mut self, bytes: &[u8], offset: u64, index: Option<usize>) -> Result<()> {
        let (data, layout, comments) = parse_binary(bytes, offset, self.limits)?;
        if comments > 0 {
            let p = self.importer.profile_mut();
            for _ in 0..comments {
                p.count("otlp v1.8 profile comments dropped");
            }
        }
        if layout != Layout::V1_10 {
            let p = self.importer.profile_mut();
            p.attributes
                .entry("otlp.layout".into())
                .or_insert_with(|| layout.name().into());
        }
        self.request(&data, offset, index)
    }

    fn request(&mut self, data: &ProfilesData, offset: u64, index: Option<usize>) -> Result<()> {
        let prefix = index.map_or_else(String::new, |i| format!("message[{i}]: "));
        let mut found = Findings::new(MAX_FINDINGS.saturating_sub(self.findings.list.len()));
        profcheck::check(data, Options::default(), &mut found);
        self.findings.total += found.total;
        self.findings
            .list
            .extend(found.list.into_iter().map(|f| format!("{prefix}{f}")));
        let ctx = Ctx {
            format: self.format,
            offset,
            prefix: index.map_or_else(String::new, |i| format!("message[{i}].")),
        };
        self.importer.request(data, ctx)
    }

    fn finish(self) -> Profile {
        let Run {
            importer, findings, ..
        } = self;
        let mut profile = importer.finish();
        profile.findings = findings.list;
        let hidden = findings.total - profile.findings.len();
        if hidden > 0 {
            profile
                .findings
                .push(format!("... and {hidden} more profcheck findings"));
        }
        profile
    }
}

#[cfg(test)]
mod tests;
