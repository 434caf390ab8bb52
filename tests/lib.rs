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

/// An error report (`<key>.error.json`, see docs/outputs.md) as JSON, each of its fields
/// checked to be there with its type.
pub fn error_report(json: &[u8]) -> serde_json::Value {
    let report: serde_json::Value = serde_json::from_slice(json)
        .unwrap_or_else(|e| panic!("no error report: {e}: {}", String::from_utf8_lossy(json)));
    assert!(
        report["report_version"]
            .as_u64()
            .is_some_and(|v| u32::try_from(v).is_ok()),
        "{report}"
    );
    for text in ["converter", "key", "etag", "reason", "error"] {
        assert!(report[text].is_string(), "{text}: {report}");
    }
    assert!(report["bytes"].is_u64(), "{report}");
    report
}

/// Gzip-compresses bytes.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}
