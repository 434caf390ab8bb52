//! The repository's files as tests read them: samples and fixtures by path, and gzip. Compiled
//! into the test helpers' crate and into the library's fixture tests
//! (`shared/src/fixture_tests/`); both crates sit one folder below the repository's root.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Absolute path of a file relative to the repository root (`samples/...`).
pub fn repo_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

/// The bytes of a file relative to the repository root.
pub fn repo_file(rel: &str) -> Vec<u8> {
    let path = repo_path(rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Absolute path of a fixture, relative to `tests/fixtures`.
pub fn fixture_path(rel: &str) -> PathBuf {
    repo_path("tests/fixtures").join(rel)
}

/// The bytes of a fixture, relative to `tests/fixtures`. Fails with a clear message when the
/// file is missing.
pub fn fixture(rel: &str) -> Vec<u8> {
    let path = fixture_path(rel);
    assert!(
        path.is_file(),
        "fixture `{rel}` is missing: expected a file at {}",
        path.display()
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read fixture {}: {e}", path.display()))
}

/// Gzip-compresses bytes.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// The bytes, gunzipped when they are gzip (magic `1f 8b`), so that every container variant
/// starts from the plain content.
pub fn plain(bytes: Vec<u8>, what: &str) -> Vec<u8> {
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return bytes;
    }
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes.as_slice())
        .read_to_end(&mut out)
        .unwrap_or_else(|e| panic!("{what}: gunzip failed: {e}"));
    out
}
