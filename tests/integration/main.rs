//! Integration tests of the proflake library through its public API: the benchmark input
//! generators, streamed conversion against whole conversion, and the repository's Markdown
//! links. The fixture-driven tests of the decoders and writers name the model and the writers'
//! checks, so they live in the library (`shared/src/fixture_tests/`).

mod doc_links;
mod gen_inputs;
mod streamed;
mod util;
