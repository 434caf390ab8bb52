//! Helpers of the integration tests that stay outside the library: repository files and
//! fixtures, and compression. The fixture-driven tests of the decoders and writers, which name
//! the model, live in the library (`shared/src/fixture_tests/`).

pub use proflake_tests::{fixture, gzip, plain, repo_file, repo_path};
