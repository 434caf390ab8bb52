//! pprof `profile.proto` (`perftools.profiles.Profile`), gzip-compressed or plain: the
//! container layer has already undone any compression, whatever the file is called.
//!
//! Every sample type becomes a model series, and every non-zero value of a pprof sample one
//! model sample in that series (pprof samples are aggregates with no time of their own, so
//! model samples carry none). Which series is CPU time or wall time, and so what Sample v2
//! takes, is decided by the rule shared with OTLP in `value_types`: a `cpu`/`wall` type with
//! a time unit, else one that counts samples (pprof-rs's `cpu/count`), else a `samples/count`
//! type whose period type is `cpu`/`wall`; allocations and everything else stay `Other`.
//!
//! Threads and processes come from labels where producers put them, trace links from
//! Pyroscope's `trace_id`/`span_id` labels; every label is kept as a model label. Mappings
//! with their build ids become images, locations become frames (see `frames`).
//!
//! Bad references (a location, function, mapping or string that does not exist) fail the
//! decode with an error naming the element; so does a sample whose value count differs from
//! the sample types, as in Go's pprof.

mod frames;
mod import;
mod labels;
mod offsets;
mod sniff;
mod tables;

use proflake_proto::pprof;
use prost::Message;

use crate::error::{Error, ErrorKind, Result};
use crate::limits::Limits;
use crate::model::Profile;

pub(crate) use sniff::test;

const FORMAT: &str = "pprof";

/// Decodes a (decompressed) pprof profile within `limits`.
pub(crate) fn decode(bytes: &[u8], limits: &Limits) -> Result<Profile> {
    let offsets = offsets::Offsets::scan(bytes, limits)?;
    // Everything but the samples, as one message: protobuf merges concatenated records. The
    // samples are decoded one at a time as they are imported.
    let mut profile = pprof::Profile::default();
    for run in offsets.rest() {
        profile.merge(&bytes[run.clone()]).map_err(|e| {
            Error::new(ErrorKind::Malformed {
                format: FORMAT,
                offset: run.start as u64,
                what: format!("Profile does not decode: {e}"),
            })
            .with_source(e)
        })?;
    }
    import::import(profile, bytes, &offsets, limits)
}

fn malformed(offset: u64, what: String) -> Error {
    ErrorKind::Malformed {
        format: FORMAT,
        offset,
        what,
    }
    .into()
}
