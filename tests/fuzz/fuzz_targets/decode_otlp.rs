//! OTLP profiles, binary: every layout, and length-prefixed request streams.
#![no_main]

use libfuzzer_sys::fuzz_target;
use proflake::InputFormat;

fuzz_target!(|data: &[u8]| {
    let _ = proflake::decode(data, Some(InputFormat::Otlp), &proflake::Limits::default());
});
