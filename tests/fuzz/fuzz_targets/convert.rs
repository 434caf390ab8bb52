//! The whole conversion: whatever a decoder accepts must plan and write without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use proflake::ConvertOptions;

fuzz_target!(|data: &[u8]| {
    // An arrival time lets inputs that record no start (aggregated ones like pprof and folded,
    // and those on a clock of their own) get past anchoring into planning and the writers.
    let options = ConvertOptions {
        received_at_ns: Some(1_700_000_000_000_000_000),
        ..ConvertOptions::default()
    };
    let _ = proflake::convert_upload("uploads/fuzz", "\"etag\"", data, &options);
});
