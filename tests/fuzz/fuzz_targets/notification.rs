//! Queue message bodies: S3 notifications, EventBridge S3 events, test events.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(body) = std::str::from_utf8(data) {
        let _ = proflake::events::parse_notification(body);
    }
});
