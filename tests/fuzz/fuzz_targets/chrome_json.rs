//! Chrome trace-event JSON documents (streamed: cut documents, any key order).
#![no_main]

use libfuzzer_sys::fuzz_target;
use proflake::InputFormat;

fuzz_target!(|data: &[u8]| {
    let _ = proflake::decode(
        data,
        Some(InputFormat::ChromeJson),
        &proflake::Limits::default(),
    );
});
