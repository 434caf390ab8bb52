//! Identifiers derived from a raw ELF build ID.

use debugid::{CodeId, DebugId};

/// Length of Chrome's legacy module ids, which arrive as 33 hex characters instead of raw bytes.
const BREAKPAD_MODULE_ID_LEN: usize = 33;

/// The code ID (lowercase hex of the raw build ID) and the debug ID Sentry and symbol servers
/// look the image up by.
///
/// The debug ID takes the first 16 bytes of the build ID, zero-padded on the right, read as a
/// little-endian GUID with age 0: the rule Relay and `symbolic` use for ELF images, so
/// `b03e4a7f5e884c8da04b05fa32cc4cbd69faff51` gives `7f4a3eb0-885e-8d4c-a04b-05fa32cc4cbd`.
/// An empty build ID gives neither.
pub fn ids_from_build_id(raw: &[u8]) -> (Option<CodeId>, Option<DebugId>) {
    if raw.is_empty() {
        return (None, None);
    }
    if raw.len() == BREAKPAD_MODULE_ID_LEN && raw.iter().all(u8::is_ascii_hexdigit) {
        // Chrome ships breakpad module ids already in text form; trace_processor keeps them
        // verbatim and so do we.
        let text = String::from_utf8_lossy(raw).to_ascii_lowercase();
        return (
            Some(CodeId::new(text.clone())),
            DebugId::from_breakpad(&text).ok(),
        );
    }
    let mut guid = [0u8; 16];
    let n = raw.len().min(16);
    guid[..n].copy_from_slice(&raw[..n]);
    let debug_id = DebugId::from_guid_age(&guid, 0).ok();
    (Some(CodeId::from_binary(raw)), debug_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relay_examples() {
        let raw = hex::decode("b03e4a7f5e884c8da04b05fa32cc4cbd69faff51").unwrap();
        let (code, debug) = ids_from_build_id(&raw);
        assert_eq!(
            code.unwrap().as_str(),
            "b03e4a7f5e884c8da04b05fa32cc4cbd69faff51"
        );
        assert_eq!(
            debug.unwrap().to_string(),
            "7f4a3eb0-885e-8d4c-a04b-05fa32cc4cbd"
        );
        let (_, debug) = ids_from_build_id(&[0xaa, 0xbb, 0xcc, 0xdd]);
        assert_eq!(
            debug.unwrap().to_string(),
            "ddccbbaa-0000-0000-0000-000000000000"
        );
        assert_eq!(ids_from_build_id(&[]), (None, None));
    }
}
