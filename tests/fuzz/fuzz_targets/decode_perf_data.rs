//! Linux perf.data: the checks before `linux-perf-data` reads it, records, compressed records.
#![no_main]

use libfuzzer_sys::fuzz_target;
use proflake::InputFormat;

fuzz_target!(|data: &[u8]| {
    let _ = proflake::decode(
        data,
        Some(InputFormat::PerfData),
        &proflake::Limits::default(),
    );
});
