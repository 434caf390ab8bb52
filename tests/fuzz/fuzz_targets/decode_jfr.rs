//! Java Flight Recorder recordings: chunk headers, metadata, constant pools, events.
#![no_main]

use libfuzzer_sys::fuzz_target;
use proflake::InputFormat;

fuzz_target!(|data: &[u8]| {
    let _ = proflake::decode(data, Some(InputFormat::Jfr), &proflake::Limits::default());
});
