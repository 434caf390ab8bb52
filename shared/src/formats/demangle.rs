//! Human-readable function names from mangled linker symbols.

use std::borrow::Cow;

use symbolic_common::{Language, Name, NameMangling};
use symbolic_demangle::{Demangle, DemangleOptions};

/// Demangles a C++ or Rust symbol (with parameters, as trace_processor and symbolizers show
/// them); any other name comes back unchanged.
pub fn demangle(name: &str) -> Cow<'_, str> {
    if !(name.starts_with("_Z") || name.starts_with("_R") || name.starts_with("__Z")) {
        return Cow::Borrowed(name);
    }
    let symbol = Name::new(name, NameMangling::Mangled, Language::Unknown);
    match symbol.demangle(DemangleOptions::complete()) {
        Some(d) if !d.is_empty() => Cow::Owned(d),
        _ => Cow::Borrowed(name),
    }
}

#[cfg(test)]
mod tests {
    use super::demangle;

    #[test]
    fn demangles_cpp_and_keeps_plain_names() {
        assert_eq!(
            demangle("_ZN3art9ArtMethod6InvokeEPNS_6ThreadEPjjPNS_6JValueEPKc"),
            "art::ArtMethod::Invoke(art::Thread*, unsigned int*, unsigned int, art::JValue*, char const*)"
        );
        assert_eq!(demangle("pthread_cond_signal"), "pthread_cond_signal");
        assert_eq!(demangle("_Znot-valid"), "_Znot-valid");
    }
}
