//! speedscope documents (sampled and evented profiles).
#![no_main]

use libfuzzer_sys::fuzz_target;
use proflake::InputFormat;

fuzz_target!(|data: &[u8]| {
    let _ = proflake::decode(
        data,
        Some(InputFormat::Speedscope),
        &proflake::Limits::default(),
    );
});
