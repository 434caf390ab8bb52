//! Fixture-driven integration tests of the proflake library.

mod perfetto_difftests;
mod perfetto_malformed;
mod perfetto_synthetic;
mod sample_v2;
mod util;
