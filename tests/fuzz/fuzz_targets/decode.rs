//! Format detection and whole-file decompression: what an upload goes through when nothing
//! names its format.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = proflake::decode(data, None, &proflake::Limits::default());
});
