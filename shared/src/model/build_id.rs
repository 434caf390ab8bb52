//! The ids of a native image: those derived from a raw ELF build ID, and the [`BuildId`] its
//! debug file is filed and looked up under.

use std::fmt;
use std::str::FromStr;

use debugid::{CodeId, DebugId};
use serde::{Deserialize, Serialize};

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

/// The id an image's debug file is filed and looked up under: the image's code id when it has
/// one (lowercase hex: an ELF file's GNU build ID, a Mach-O UUID, a PE timestamp and size, a
/// Chrome Breakpad module id), else its debug id as `symbolic` writes it
/// (`7f4a3eb0-885e-8d4c-a04b-05fa32cc4cbd`, then `-<age>` when the age is not 0). A debug file
/// also answers to the lowercase Breakpad spelling of its debug id ([`BuildId::breakpad`]).
///
/// The text names the folder of the image's debug files and of its build-ID index entries, and
/// is stored in JSON as it is, so reading it back gives the same id. Ids that a key or a caller
/// names are matched without regard to case, as their lowercase
/// ([`to_ascii_lowercase`](BuildId::to_ascii_lowercase)). An image's id keeps the case
/// `symbolic` writes, which is lowercase but for the timestamp of a PDB 2.0 debug id.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String")]
pub struct BuildId(String);

impl BuildId {
    /// The build ID of a code id; `None` for the nil (empty) one.
    pub fn from_code_id(code_id: &CodeId) -> Option<BuildId> {
        (!code_id.is_nil()).then(|| BuildId(code_id.as_str().to_ascii_lowercase()))
    }

    /// The Breakpad spelling of a debug id (no hyphens, the age last), lowercase.
    pub fn breakpad(debug_id: DebugId) -> BuildId {
        BuildId(debug_id.breakpad().to_string().to_ascii_lowercase())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id with its letters in lowercase: how ids a key or a caller names are matched.
    pub fn to_ascii_lowercase(&self) -> BuildId {
        BuildId(self.0.to_ascii_lowercase())
    }
}

/// The build ID of a debug id, nil or not.
impl From<DebugId> for BuildId {
    fn from(debug_id: DebugId) -> BuildId {
        BuildId(debug_id.to_string())
    }
}

/// Text that is no build ID: empty, or with something other than hex digits and hyphens.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a build ID (hex digits and hyphens)")]
pub struct InvalidBuildId(pub String);

/// Takes the text as it is (see [`BuildId::to_ascii_lowercase`] for matching).
impl FromStr for BuildId {
    type Err = InvalidBuildId;

    fn from_str(text: &str) -> Result<BuildId, InvalidBuildId> {
        BuildId::try_from(text.to_owned())
    }
}

impl TryFrom<String> for BuildId {
    type Error = InvalidBuildId;

    fn try_from(text: String) -> Result<BuildId, InvalidBuildId> {
        let valid = !text.is_empty() && text.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
        if valid {
            Ok(BuildId(text))
        } else {
            Err(InvalidBuildId(text))
        }
    }
}

impl fmt::Display for BuildId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for BuildId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<BuildId> for String {
    fn from(id: BuildId) -> String {
        id.0
    }
}

impl PartialEq<str> for BuildId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for BuildId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for BuildId {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
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

    #[test]
    fn a_build_id_is_the_code_id_else_the_debug_id_as_text() {
        let raw = hex::decode("b03e4a7f5e884c8da04b05fa32cc4cbd69faff51").unwrap();
        let (code, debug) = ids_from_build_id(&raw);
        let code = BuildId::from_code_id(&code.unwrap()).unwrap();
        assert_eq!(code, "b03e4a7f5e884c8da04b05fa32cc4cbd69faff51");
        assert_eq!(BuildId::from_code_id(&CodeId::nil()), None);
        let debug = debug.unwrap();
        assert_eq!(BuildId::from(debug), "7f4a3eb0-885e-8d4c-a04b-05fa32cc4cbd");
        assert_eq!(
            BuildId::breakpad(debug),
            "7f4a3eb0885e8d4ca04b05fa32cc4cbd0"
        );
        let aged: DebugId = "7f4a3eb0-885e-8d4c-a04b-05fa32cc4cbd-1a".parse().unwrap();
        assert_eq!(
            BuildId::from(aged),
            "7f4a3eb0-885e-8d4c-a04b-05fa32cc4cbd-1a"
        );
    }

    #[test]
    fn text_comes_back_as_it_was_and_matches_in_lowercase() {
        let pdb20: DebugId = "5AB38077-1".parse().unwrap();
        let id = BuildId::from(pdb20);
        assert_eq!(id, "5AB38077-1");
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(json, "\"5AB38077-1\"");
        assert_eq!(serde_json::from_str::<BuildId>(&json).unwrap(), id);
        assert_eq!(id.to_string().parse::<BuildId>().unwrap(), id);
        assert_eq!(id.to_ascii_lowercase(), "5ab38077-1");
        for bad in ["", "ab/cd", "ab cd", "xyz"] {
            assert!(bad.parse::<BuildId>().is_err(), "{bad:?}");
            assert!(serde_json::from_str::<BuildId>(&format!("{bad:?}")).is_err());
        }
    }
}
