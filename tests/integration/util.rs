//! Helpers of the integration tests that stay outside the library: repository files and
//! fixtures, and compression. The fixture-driven tests of the decoders and writers, which name
//! the model, live in the library (`shared/src/fixture_tests/`).

use std::path::{Path, PathBuf};

pub use proflake_tests::{gzip, repo_file, repo_path};

/// The bytes, gunzipped when they are gzip (magic `1f 8b`).
pub fn plain(bytes: Vec<u8>, what: &str) -> Vec<u8> {
    use std::io::Read;
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return bytes;
    }
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes.as_slice())
        .read_to_end(&mut out)
        .unwrap_or_else(|e| panic!("{what}: gunzip failed: {e}"));
    out
}

/// Absolute path of a fixture, relative to `tests/fixtures`.
fn fixture_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel)
}

/// The bytes of a fixture, relative to `tests/fixtures`.
pub fn fixture(rel: &str) -> Vec<u8> {
    let path = fixture_path(rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read fixture {}: {e}", path.display()))
}
