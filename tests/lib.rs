//! Helpers both test targets (integration/ and e2e/) use: repository files, compression, the
//! gcc-built library with its profiles, and a moto server (e2e/ and the command line's tests).
//! Target-specific helpers live beside their tests. `native` and `native_profiles` are also
//! compiled into the library's fixture tests (`shared/src/fixture_tests/`), so they reach
//! their siblings through `super::`.

// Beside the moto_site/ and moto_server.py it goes with.
#[path = "e2e/moto.rs"]
pub mod moto;
pub mod native;
pub mod native_profiles;

use std::io::Write;
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

/// Gzip-compresses bytes.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}
