//! Folded stacks in every dialect (py-spy, CPython, austin, stackcollapse-perf).
#![no_main]

use libfuzzer_sys::fuzz_target;
use proflake::InputFormat;

fuzz_target!(|data: &[u8]| {
    let _ = proflake::decode(
        data,
        Some(InputFormat::Folded),
        &proflake::Limits::default(),
    );
});
