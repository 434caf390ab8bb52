//! The token a request must carry: as `Authorization: Bearer T`, as the bare header value
//! (Logfire's exporter), or as the password of Basic auth (Pyroscope's SDKs, Grafana Cloud
//! style). Compared in constant time, through its SHA-256 so that not even its length shows.

use base64::Engine;
use http::header::AUTHORIZATION;
use http::request::Parts;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The deployment's token, kept as its SHA-256.
pub(super) struct Token([u8; 32]);

impl Token {
    pub(super) fn new(token: &str) -> Token {
        Token(Sha256::digest(token.as_bytes()).into())
    }

    /// Whether the request carries the token.
    pub(super) fn accepts(&self, head: &Parts) -> bool {
        let Some(presented) = presented(head) else {
            return false;
        };
        let digest: [u8; 32] = Sha256::digest(&presented).into();
        digest.ct_eq(&self.0).into()
    }
}

/// The token a request presents, in any of the three forms.
fn presented(head: &Parts) -> Option<Vec<u8>> {
    let value = head.headers.get(AUTHORIZATION)?.as_bytes();
    let value = value.trim_ascii();
    let (scheme, rest) = match value.iter().position(|&b| b == b' ') {
        Some(at) => (&value[..at], value[at + 1..].trim_ascii()),
        None => (&value[..0], value),
    };
    if scheme.eq_ignore_ascii_case(b"bearer") {
        Some(rest.to_vec())
    } else if scheme.eq_ignore_ascii_case(b"basic") {
        let pair = base64::engine::general_purpose::STANDARD
            .decode(rest)
            .ok()?;
        let colon = pair.iter().position(|&b| b == b':')?;
        Some(pair[colon + 1..].to_vec())
    } else {
        Some(value.to_vec())
    }
}
