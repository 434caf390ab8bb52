//! Helpers both test targets (integration/ and e2e/) use: repository files and fixtures, gzip, the
//! gcc-built library with its profiles, and a moto server (e2e/ and the command line's tests).
//! Target-specific helpers live beside their tests. `files`, `native` and `native_profiles` are also
//! compiled into the library's fixture tests (`shared/src/fixture_tests/`), so they reach
//! their siblings through `super::`.

// Beside the moto_site/ and moto_server.py it goes with.
mod files;
#[path = "e2e/moto.rs"]
pub mod moto;
pub mod native;
pub mod native_profiles;

pub use files::{fixture, gzip, plain, repo_file, repo_path};

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
