//! Sentry envelopes: the item splitter, then Sample v2 items and Perfetto compound items.
#![no_main]

use libfuzzer_sys::fuzz_target;
use proflake::InputFormat;

fuzz_target!(|data: &[u8]| {
    let _ = proflake::decode(
        data,
        Some(InputFormat::SentryEnvelope),
        &proflake::Limits::default(),
    );
});
