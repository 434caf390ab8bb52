//! Stable ids of derived objects.

use sha2::{Digest, Sha256};

/// 32 hex digits of SHA-256 over the parts: a stable id for derived objects.
pub fn derived_id(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    hex::encode(&h.finalize()[..16])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_ids_are_stable_hex() {
        let a = derived_id(&["chunk", "x", "1"]);
        assert_eq!(a.len(), 32);
        assert_eq!(a, derived_id(&["chunk", "x", "1"]));
        assert_ne!(a, derived_id(&["chunk", "x1", ""]));
    }
}
