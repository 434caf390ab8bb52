//! A request's body as its content type and encoding say: the media type, and the bytes with
//! their `Content-Encoding` undone, never more than `max_request_bytes` of them.

use std::borrow::Cow;
use std::io::Read;

use http::header::{CONTENT_ENCODING, CONTENT_TYPE};
use http::request::Parts;
use http::StatusCode;

use super::Refusal;
use crate::error::{Error, ErrorKind};
use crate::formats::{decode, CappedReader, InputFormat};
use crate::limits::Limits;

/// The request's media type, lowercase, without parameters (`application/json` of
/// `Application/JSON; charset=utf-8`).
pub(super) fn media_type(head: &Parts) -> Option<String> {
    let value = head.headers.get(CONTENT_TYPE)?.to_str().ok()?;
    let essence = value.split(';').next().unwrap_or("").trim();
    Some(essence.to_ascii_lowercase())
}

/// 415 naming the media types a route takes.
pub(super) fn unsupported_media_type(head: &Parts, takes: &str) -> Refusal {
    let sent = media_type(head).unwrap_or_else(|| "no Content-Type".into());
    Refusal::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        format!("{sent} is not taken here; send {takes}"),
    )
}

/// The body with its `Content-Encoding` (gzip, zstd or none) undone, counted as it inflates
/// so that a bomb stops at `max_request_bytes` (or the decompression ratio limit) and is
/// answered 413.
pub(super) fn decoded_body<'b>(
    head: &Parts,
    body: &'b [u8],
    limits: &Limits,
) -> Result<Cow<'b, [u8]>, Refusal> {
    if body.len() as u64 > limits.max_request_bytes {
        return Err(Refusal::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the request body is larger than {} bytes (max_request_bytes)",
                limits.max_request_bytes
            ),
        ));
    }
    let encoding = match head.headers.get(CONTENT_ENCODING) {
        None => "identity".to_string(),
        Some(value) => value
            .to_str()
            .map_err(|_| Refusal::bad_request("Content-Encoding is not text"))?
            .trim()
            .to_ascii_lowercase(),
    };
    let cap = limits.inflate_cap(body.len(), ("max_request_bytes", limits.max_request_bytes));
    let reader: Box<dyn Read + '_> = match encoding.as_str() {
        "identity" | "" => return Ok(Cow::Borrowed(body)),
        "gzip" | "x-gzip" => Box::new(CappedReader::new(
            flate2::read::MultiGzDecoder::new(body),
            cap,
        )),
        "zstd" => {
            let decoder = zstd::stream::read::Decoder::new(body)
                .map_err(|e| Refusal::bad_request(format!("the zstd body does not open: {e}")))?;
            Box::new(CappedReader::new(decoder, cap))
        }
        other => {
            return Err(Refusal::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!("Content-Encoding {other} is not taken; send gzip, zstd or none"),
            ))
        }
    };
    let mut inflated = Vec::new();
    let mut reader = reader;
    match reader.read_to_end(&mut inflated) {
        Ok(_) => Ok(Cow::Owned(inflated)),
        Err(e) => match e
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<crate::formats::LimitHit>())
        {
            Some(hit) => Err(Refusal::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the {encoding} body inflates past the limit: {hit} ({})",
                    hit.limit
                ),
            )),
            None => Err(Refusal::bad_request(format!(
                "the body is not valid {encoding}: {e}"
            ))),
        },
    }
}

/// Decodes `bytes` as `format`, as the conversion will, within `limits` (their decompression
/// bound no larger than a request's): a request whose profile would not convert is refused
/// now, while its client can still hear why. `what` names the profile in the message.
pub(super) fn check_profile(
    bytes: &[u8],
    format: InputFormat,
    limits: &Limits,
    what: &str,
) -> Result<crate::formats::Decoded, Refusal> {
    let mut limits = limits.clone();
    limits.max_decompressed_bytes = limits.max_decompressed_bytes.min(limits.max_request_bytes);
    decode(bytes, Some(format), &limits).map_err(|e| refusal_of(&e, format, what))
}

/// The refusal of a profile that does not decode as `format`: 413 past a limit, else 400.
pub(super) fn refusal_of(e: &Error, format: InputFormat, what: &str) -> Refusal {
    let status = match e.kind() {
        ErrorKind::LimitExceeded { .. } => StatusCode::PAYLOAD_TOO_LARGE,
        _ => StatusCode::BAD_REQUEST,
    };
    Refusal::new(
        status,
        format!(
            "{what} is not a valid {} profile: {}",
            format.name(),
            crate::error_chain(e)
        ),
    )
}
