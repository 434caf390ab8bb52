//! The HTTP receiver: what producers POST (OTLP/HTTP profiles, Pyroscope's push and ingest
//! APIs) filed as ordinary uploads under `uploads/`, which the usual conversion then picks up.
//! It does no network I/O: a front end (`proflake serve`, the ingest function) hands it a
//! request's head and body and sends back the response it is given. `docs/ingest.md` describes
//! the protocol as clients see it.
//!
//! A request is handled in two steps, so that a front end with no room for more work can
//! refuse it before anything is written: [`Receiver::read`] checks the route, the token, the
//! content type and the body, and gives the uploads the request makes (`Accepted`);
//! [`Receiver::store`] writes them, each upload's metadata sidecar before the upload, and gives
//! the answer. Upload keys are derived from the content, so a client's retry writes the same
//! keys with the same bytes: the conversion of each finds itself done and converts nothing
//! again. Nothing is read from the store, so the receiver needs only to write under
//! `uploads/`.

mod accepted;
mod auth;
mod body;
mod direct;
mod ingest;
mod otlp;
mod push;
mod reply;
#[cfg(test)]
mod tests;

use http::request::Parts;
use http::{Method, StatusCode};
use sha2::{Digest, Sha256};

use crate::limits::Limits;
use crate::metadata::UploadMetadata;
use crate::store::{content_etag, sidecar_key, ObjectStore, SIDECAR_ETAG_METADATA};
pub(crate) use accepted::{Accepted, Stored};
use auth::Token;
pub use direct::DirectUpload;
use reply::Protocol;

/// An HTTP response as the receiver gives it: status, headers and the whole body.
type Response = http::Response<Vec<u8>>;

/// The receiver of one deployment: its token and its limits.
pub struct Receiver {
    token: Option<Token>,
    limits: Limits,
}

/// What reading a request gives: its uploads, what a partial success says, and where a client
/// is to upload a file itself.
type Read = (Vec<Upload>, Option<Partial>, Option<DirectUpload>);

/// One upload a request makes.
#[derive(Debug)]
struct Upload {
    key: String,
    bytes: Vec<u8>,
    /// The metadata sidecar's JSON, written before the upload so its conversion reads it.
    metadata: Option<Vec<u8>>,
}

/// The part of a request that was not taken, or what the client should know of it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Partial {
    rejected: i64,
    message: String,
}

/// Why a request is refused: the status and the message for the client.
#[derive(Debug)]
struct Refusal {
    status: StatusCode,
    message: String,
}

impl Refusal {
    fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Refusal {
            status,
            message: message.into(),
        }
    }

    fn bad_request(message: impl Into<String>) -> Self {
        Refusal::new(StatusCode::BAD_REQUEST, message)
    }
}

/// Seconds a client is asked to wait before it retries a request the store could not take.
const STORE_RETRY_AFTER_SECS: u32 = 1;

impl Receiver {
    /// A receiver that takes requests carrying `token` (any request when `None`) within
    /// `limits` (`max_request_bytes` for bodies, the rest for checking what they hold).
    pub fn new(token: Option<&str>, limits: Limits) -> Receiver {
        Receiver {
            token: token.map(Token::new),
            limits,
        }
    }

    /// The largest body a front end should read, in bytes: past it, answer
    /// [`Receiver::too_large`] without reading the rest.
    pub fn max_body_bytes(&self) -> u64 {
        self.limits.max_request_bytes
    }

    /// The answer to a request whose body is larger than [`Receiver::max_body_bytes`].
    pub fn too_large(&self, head: &Parts) -> Response {
        let message = format!(
            "the request body is larger than {} bytes (max_request_bytes)",
            self.limits.max_request_bytes
        );
        Protocol::of(head).refuse(head, StatusCode::PAYLOAD_TOO_LARGE, &message)
    }

    /// The answer to a request the front end has no room for now: 503 with `Retry-After`.
    pub fn busy(&self, head: &Parts, retry_after_secs: u32) -> Response {
        let protocol = Protocol::of(head);
        reply::with_retry_after(
            protocol.refuse(
                head,
                StatusCode::SERVICE_UNAVAILABLE,
                "the receiver is saturated; retry later",
            ),
            retry_after_secs,
        )
    }

    /// Reads a request: its route, token, content type and body. Gives the uploads it makes,
    /// or the answer that refuses it (nothing is written either way).
    pub fn read(&self, head: &Parts, body: &[u8]) -> Result<Accepted, Box<Response>> {
        let protocol = Protocol::of(head);
        if protocol == Protocol::Health {
            return Err(Box::new(reply::health()));
        }
        if protocol == Protocol::Unknown {
            let message = format!("no route {}", head.uri.path());
            return Err(Box::new(protocol.refuse(
                head,
                StatusCode::NOT_FOUND,
                &message,
            )));
        }
        if head.method != Method::POST {
            return Err(Box::new(reply::method_not_allowed(protocol, head)));
        }
        if let Some(token) = &self.token {
            if !token.accepts(head) {
                return Err(Box::new(reply::unauthorized(protocol, head)));
            }
        }
        let read = match protocol {
            Protocol::Otlp => otlp::read(head, body, &self.limits),
            Protocol::Push => push::read(head, body, &self.limits),
            Protocol::Ingest => ingest::read(head, body, &self.limits),
            Protocol::Upload => direct::read(head, body, &self.limits, &request_id(body))
                .map(|direct| (Vec::new(), None, Some(direct))),
            // Answered above; a route with no body to read.
            Protocol::Health | Protocol::Unknown => Err(Refusal::new(
                StatusCode::NOT_FOUND,
                format!("no route {}", head.uri.path()),
            )),
        };
        read.map(|(uploads, partial, direct)| Accepted {
            protocol,
            uploads,
            partial,
            direct,
        })
        .map_err(|refusal| Box::new(protocol.refuse(head, refusal.status, &refusal.message)))
    }

    /// Writes an accepted request's uploads into `store`, each sidecar before its upload, and
    /// gives the answer: success only once every upload is stored, 503 with `Retry-After` when
    /// the store fails.
    pub fn store(&self, store: &dyn ObjectStore, head: &Parts, accepted: &Accepted) -> Stored {
        let mut keys = Vec::new();
        if accepted.direct.is_some() {
            let message = "this receiver hands out no upload URLs; the ingest function does";
            return Stored {
                response: accepted
                    .protocol
                    .refuse(head, StatusCode::NOT_IMPLEMENTED, message),
                keys,
            };
        }
        for upload in &accepted.uploads {
            if let Err(e) = store_one(store, upload) {
                tracing::warn!(key = %upload.key, error = %crate::error_chain(&e), "storing a received upload failed");
                let response = accepted.protocol.refuse(
                    head,
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the store did not take the upload; retry later",
                );
                return Stored {
                    response: reply::with_retry_after(response, STORE_RETRY_AFTER_SECS),
                    keys,
                };
            }
            keys.push(upload.key.clone());
        }
        Stored {
            response: accepted.protocol.success(head, accepted.partial.as_ref()),
            keys,
        }
    }
}

impl Accepted {
    /// The keys of the uploads the request makes.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.uploads.iter().map(|u| u.key.as_str())
    }

    /// How many uploads the request makes.
    pub fn upload_count(&self) -> usize {
        self.uploads.len()
    }

    /// The protocol the request spoke.
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// Where the client is to upload a file itself, for a `/v1/uploads` request: the front end
    /// presigns it and answers with [`DirectUpload::reply`].
    pub fn direct_upload(&self) -> Option<&DirectUpload> {
        self.direct.as_ref()
    }
}

impl DirectUpload {
    /// The answer to this `/v1/uploads` request: the key, the presigned `url` to PUT the file
    /// to within `expires_in_secs`, and the headers the PUT must carry (the signed object
    /// metadata).
    pub fn reply(&self, url: &str, expires_in_secs: u64) -> http::Response<Vec<u8>> {
        direct_upload_reply(self, url, expires_in_secs)
    }
}

fn direct_upload_reply(direct: &DirectUpload, url: &str, expires_in_secs: u64) -> Response {
    let headers: serde_json::Map<String, serde_json::Value> = direct
        .metadata
        .iter()
        .map(|(name, value)| (format!("x-amz-meta-{name}"), value.as_str().into()))
        .collect();
    let body = serde_json::json!({
        "key": direct.key,
        "url": url,
        "method": "PUT",
        "headers": headers,
        "expires_in": expires_in_secs,
    });
    let mut response = Response::new(serde_json::to_vec(&body).expect("JSON of strings"));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

/// An id unique to one request of this process: its body, the time and a counter.
fn request_id(body: &[u8]) -> String {
    static REQUESTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = REQUESTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let (n, now) = (n.to_le_bytes(), now.to_le_bytes());
    content_id(&[b"direct upload", body, &now, &n])
}

/// Stores one upload, its sidecar first so that the upload's conversion reads it. The upload
/// names the sidecar's ETag in its object metadata, so the sidecar's own notification, which
/// may be handled beside the upload's, finds it read and converts nothing.
fn store_one(store: &dyn ObjectStore, upload: &Upload) -> crate::Result<()> {
    let Some(metadata) = &upload.metadata else {
        return store.put(&upload.key, &upload.bytes);
    };
    store.put(&sidecar_key(&upload.key), metadata)?;
    let etag = content_etag(metadata);
    store.put_with_metadata(
        &upload.key,
        &upload.bytes,
        &[(SIDECAR_ETAG_METADATA, etag.as_str())],
    )
}

/// 32 hex digits of SHA-256 over `parts`, each behind its length so that no two lists of
/// parts give the same input: the content-derived id of a received upload.
fn content_id(parts: &[&[u8]]) -> String {
    let mut hash = Sha256::new();
    for part in parts {
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part);
    }
    hex::encode(&hash.finalize()[..16])
}

/// The metadata sidecar of a received upload: the fields the request set, or `None` when it
/// set none.
fn sidecar_json(metadata: &UploadMetadata) -> Option<Vec<u8>> {
    let mut object = serde_json::Map::new();
    let texts = [
        ("service", &metadata.service),
        ("release", &metadata.release),
        ("environment", &metadata.environment),
    ];
    for (name, value) in texts {
        if let Some(value) = value {
            object.insert(name.into(), value.as_str().into());
        }
    }
    if let Some(timestamp) = metadata.timestamp {
        object.insert("timestamp".into(), timestamp.into());
    }
    if let Some(hz) = metadata.sample_rate_hz {
        object.insert("sample_rate_hz".into(), hz.into());
    }
    if !metadata.labels.is_empty() {
        let labels = metadata
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::from(v.as_str())))
            .collect();
        object.insert("labels".into(), serde_json::Value::Object(labels));
    }
    if !metadata.context_labels.is_empty() {
        let contexts = serde_json::to_value(&metadata.context_labels).expect("JSON of strings");
        object.insert("context_labels".into(), contexts);
    }
    (!object.is_empty()).then(|| serde_json::to_vec(&object).expect("JSON of strings"))
}
