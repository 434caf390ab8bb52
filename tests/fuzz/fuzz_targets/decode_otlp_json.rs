//! OTLP profiles as OTLP/JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;
use proflake::InputFormat;

fuzz_target!(|data: &[u8]| {
    let _ = proflake::decode(
        data,
        Some(InputFormat::OtlpJson),
        &proflake::Limits::default(),
    );
});
