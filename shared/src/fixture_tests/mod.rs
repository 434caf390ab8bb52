//! Fixture-driven tests of the decoders and the writers: real and adversarial inputs of every
//! format (under `tests/fixtures/` and `samples/`), decoded and converted, with the model, the
//! sniffers and the Sample v2 checks named directly. They need names the library keeps to
//! itself, so they are tests of the crate rather than of its public API.

mod chrome;
mod clock;
mod cpuprofile;
// Repository files and fixtures, shared with the tests outside the library.
#[path = "../../../tests/files.rs"]
mod files;
mod firefox;
mod folded;
mod jfr;
// The gcc-built library and its profiles, shared with the tests outside the library.
#[path = "../../../tests/native.rs"]
mod native;
#[path = "../../../tests/native_profiles.rs"]
mod native_profiles;
mod otlp;
mod perf_data;
mod perf_script;
mod perfetto_difftests;
mod perfetto_malformed;
mod perfetto_symbols;
mod perfetto_synthetic;
mod pprof;
mod pprof_legacy;
mod sample_v2;
mod sentry;
mod speedscope;
mod symbolize;
mod tables;
mod util;

// For native.rs, which finds its tools by the repository root in either crate.
use util::repo_path;

/// [`crate::decode`] within the default limits, as most fixtures are decoded.
fn decode(bytes: &[u8], format: Option<crate::InputFormat>) -> crate::Result<crate::Decoded> {
    crate::decode(bytes, format, &crate::Limits::default())
}
