//! V8 `.cpuprofile` documents (Node `--cpu-prof`, DevTools `Profiler.Profile`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use proflake::InputFormat;

fuzz_target!(|data: &[u8]| {
    let _ = proflake::decode(
        data,
        Some(InputFormat::V8CpuProfile),
        &proflake::Limits::default(),
    );
});
