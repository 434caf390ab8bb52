//! Firefox Profiler profiles (gecko, processed, samply's, DevTools recordings).
#![no_main]

use libfuzzer_sys::fuzz_target;
use proflake::InputFormat;

fuzz_target!(|data: &[u8]| {
    let _ = proflake::decode(
        data,
        Some(InputFormat::Firefox),
        &proflake::Limits::default(),
    );
});
