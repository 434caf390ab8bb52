//! Fixture-driven integration tests of the proflake library.

mod aggregated;
mod cpuprofile;
mod doc_links;
mod folded;
mod gen_inputs;
mod otlp;
mod perf_script;
mod perfetto_difftests;
mod perfetto_malformed;
mod perfetto_symbols;
mod perfetto_synthetic;
mod pprof;
mod sample_v2;
mod sentry;
mod streamed;
mod symbolize;
mod tables;
mod util;
