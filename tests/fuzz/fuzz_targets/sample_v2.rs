//! The Sample v2 reader: the chunk's JSON shape, Relay's rules on it, writing it back, and
//! taking a chunk into the model as an upload of its own.
#![no_main]

use libfuzzer_sys::fuzz_target;
use proflake::InputFormat;

fuzz_target!(|data: &[u8]| {
    if let Ok(chunk) = proflake::outputs::read_chunk(data) {
        let _ = proflake::outputs::check_chunk(&chunk);
        let _ = proflake::outputs::write_chunk(&chunk);
    }
    let _ = proflake::outputs::check_sample_v2(data);
    let _ = proflake::decode(data, Some(InputFormat::SampleV2));
});
