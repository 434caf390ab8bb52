//! Answers in each protocol's own terms: OTLP/HTTP's `ExportProfilesServiceResponse` and
//! `google.rpc.Status`, Connect's `PushResponse` and error JSON for Pyroscope's push API, plain
//! text for its ingest API.

use http::header::{ALLOW, CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use http::request::Parts;
use http::{HeaderValue, StatusCode};
use proflake_proto::otlp::collector::{
    ExportProfilesPartialSuccess, ExportProfilesServiceResponse,
};
use proflake_proto::pyroscope::push::v1::PushResponse;
use proflake_proto::rpc::Status;
use prost::Message;

use super::body::media_type;
use super::{Partial, Response};

/// Which API a request speaks, by its path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// OTLP/HTTP profiles: `/v1development/profiles`, `/v1/profiles`.
    Otlp,
    /// Pyroscope's push API over Connect: `/push.v1.PusherService/Push`.
    Push,
    /// Pyroscope's ingest API: `/ingest`.
    Ingest,
    /// A presigned URL to upload a file straight into the bucket: `/v1/uploads`.
    Upload,
    /// The health check: `/health`.
    Health,
    /// Any other path.
    Unknown,
}

impl Protocol {
    /// The protocol of a request's path.
    pub fn of(head: &Parts) -> Protocol {
        match head.uri.path() {
            "/v1development/profiles" | "/v1/profiles" => Protocol::Otlp,
            "/push.v1.PusherService/Push" => Protocol::Push,
            "/ingest" => Protocol::Ingest,
            "/v1/uploads" => Protocol::Upload,
            "/health" => Protocol::Health,
            _ => Protocol::Unknown,
        }
    }

    /// A short, stable name for logs and metrics.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Otlp => "otlp",
            Protocol::Push => "pyroscope_push",
            Protocol::Ingest => "pyroscope_ingest",
            Protocol::Upload => "upload",
            Protocol::Health => "health",
            Protocol::Unknown => "unknown",
        }
    }

    /// The answer to a request taken whole, or with `partial` refused or worth a warning.
    pub(super) fn success(self, head: &Parts, partial: Option<&Partial>) -> Response {
        let json = wants_json(head);
        match self {
            Protocol::Otlp => {
                let partial_success = partial.map(|p| ExportProfilesPartialSuccess {
                    rejected_profiles: p.rejected,
                    error_message: p.message.clone(),
                });
                let body = if json {
                    match &partial_success {
                        // OTLP/JSON: lowerCamelCase, 64-bit integers as strings.
                        Some(p) => serde_json::to_vec(&serde_json::json!({
                            "partialSuccess": {
                                "rejectedProfiles": p.rejected_profiles.to_string(),
                                "errorMessage": p.error_message,
                            }
                        }))
                        .expect("JSON of strings"),
                        None => b"{}".to_vec(),
                    }
                } else {
                    ExportProfilesServiceResponse { partial_success }.encode_to_vec()
                };
                respond(StatusCode::OK, otlp_type(json), body)
            }
            Protocol::Push => {
                let body = if json {
                    b"{}".to_vec()
                } else {
                    PushResponse {}.encode_to_vec()
                };
                respond(StatusCode::OK, connect_type(json), body)
            }
            Protocol::Ingest | Protocol::Upload | Protocol::Health | Protocol::Unknown => {
                respond(StatusCode::OK, "text/plain; charset=utf-8", Vec::new())
            }
        }
    }

    /// The answer that refuses a request with `status`, `message` saying why.
    pub(crate) fn refuse(self, head: &Parts, status: StatusCode, message: &str) -> Response {
        let json = wants_json(head);
        match self {
            Protocol::Otlp => {
                let status_body = Status {
                    code: grpc_code(status),
                    message: message.into(),
                };
                let body = if json {
                    serde_json::to_vec(&serde_json::json!({
                        "code": status_body.code,
                        "message": status_body.message,
                    }))
                    .expect("JSON of a string")
                } else {
                    status_body.encode_to_vec()
                };
                respond(status, otlp_type(json), body)
            }
            Protocol::Push => {
                let body = serde_json::to_vec(&serde_json::json!({
                    "code": connect_code(status),
                    "message": message,
                }))
                .expect("JSON of a string");
                respond(status, "application/json", body)
            }
            Protocol::Upload => {
                let body = serde_json::to_vec(&serde_json::json!({ "error": message }))
                    .expect("JSON of a string");
                respond(status, "application/json", body)
            }
            Protocol::Ingest | Protocol::Health | Protocol::Unknown => {
                let mut text = message.as_bytes().to_vec();
                text.push(b'\n');
                respond(status, "text/plain; charset=utf-8", text)
            }
        }
    }
}

/// The answer of the health check.
pub(super) fn health() -> Response {
    respond(
        StatusCode::OK,
        "text/plain; charset=utf-8",
        b"ok\n".to_vec(),
    )
}

/// 405 for a method other than POST, with `Allow`.
pub(super) fn method_not_allowed(protocol: Protocol, head: &Parts) -> Response {
    let message = format!("{} is not allowed; send POST", head.method);
    let mut response = protocol.refuse(head, StatusCode::METHOD_NOT_ALLOWED, &message);
    response
        .headers_mut()
        .insert(ALLOW, HeaderValue::from_static("POST"));
    response
}

/// 401 for a missing or wrong token, with the schemes the receiver takes.
pub(super) fn unauthorized(protocol: Protocol, head: &Parts) -> Response {
    let message = "a token is required: Authorization: Bearer <token>, the bare token, \
                   or Basic auth with the token as the password";
    let mut response = protocol.refuse(head, StatusCode::UNAUTHORIZED, message);
    let headers = response.headers_mut();
    headers.append(
        WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"proflake\""),
    );
    headers.append(
        WWW_AUTHENTICATE,
        HeaderValue::from_static("Basic realm=\"proflake\""),
    );
    response
}

/// `response` with `Retry-After` in whole seconds.
pub(super) fn with_retry_after(mut response: Response, seconds: u32) -> Response {
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(seconds));
    response
}

fn respond(status: StatusCode, content_type: &'static str, body: Vec<u8>) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// Whether the request's body is JSON, so the answer is too (OTLP: the response uses the
/// request's content type).
fn wants_json(head: &Parts) -> bool {
    media_type(head).is_some_and(|m| m == "application/json")
}

fn otlp_type(json: bool) -> &'static str {
    if json {
        "application/json"
    } else {
        "application/x-protobuf"
    }
}

fn connect_type(json: bool) -> &'static str {
    if json {
        "application/json"
    } else {
        "application/proto"
    }
}

/// The `google.rpc.Code` of an HTTP status, as the gRPC gateway maps them.
fn grpc_code(status: StatusCode) -> i32 {
    match status.as_u16() {
        400 | 415 => 3, // INVALID_ARGUMENT
        401 => 16,      // UNAUTHENTICATED
        404 => 5,       // NOT_FOUND
        405 => 12,      // UNIMPLEMENTED
        413 | 429 => 8, // RESOURCE_EXHAUSTED
        503 => 14,      // UNAVAILABLE
        _ => 13,        // INTERNAL
    }
}

/// The Connect error code of an HTTP status (connectrpc.com/docs/protocol, "Error Codes").
fn connect_code(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 | 415 => "invalid_argument",
        401 => "unauthenticated",
        404 | 405 => "unimplemented",
        413 | 429 => "resource_exhausted",
        503 => "unavailable",
        _ => "internal",
    }
}
