//! Fixture-driven integration tests of the proflake library.

mod chrome;
mod clock;
mod cpuprofile;
mod doc_links;
mod firefox;
mod folded;
mod gen_inputs;
mod jfr;
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
mod streamed;
mod symbolize;
mod tables;
mod util;
