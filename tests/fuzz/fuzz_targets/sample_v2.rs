//! The Sample v2 reader: the chunk's JSON shape and Relay's rules on it, taking a chunk into
//! the model as an upload of its own, and a chunk that is read converting to chunks that are
//! read back.
#![no_main]

use libfuzzer_sys::fuzz_target;
use proflake::{ConvertOptions, InputFormat, Limits};

fuzz_target!(|data: &[u8]| {
    let limits = Limits::default();
    if proflake::decode(data, Some(InputFormat::SampleV2), &limits).is_err() {
        return;
    }
    let options = ConvertOptions {
        format: Some(InputFormat::SampleV2),
        ..ConvertOptions::default()
    };
    if let Ok(converted) = proflake::convert_upload("uploads/fuzz.json", "\"etag\"", data, &options)
    {
        for (key, json) in converted.sample_v2() {
            if let Err(e) = proflake::decode(json, Some(InputFormat::SampleV2), &limits) {
                panic!("{key} does not read back: {e}");
            }
        }
    }
});
