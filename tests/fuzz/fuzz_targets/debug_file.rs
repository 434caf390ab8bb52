//! Uploaded debug files (ELF, Mach-O, PE/PDB, Breakpad): their build ID, and validating one
//! into a lookup cache.
#![no_main]

use libfuzzer_sys::fuzz_target;
use proflake::{symbols::debug_file_build_id, symbols::ingest_debug_file, symbols::DebugFileKeys};

fuzz_target!(
    init: {
        // libfuzzer-sys's panic hook aborts at once, but the library refuses a file that makes
        // symbolic panic (it catches the unwind): only a panic in proflake's own code, or one
        // that escapes the library, is a crash here.
        let abort = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let ours = info
                .location()
                .is_some_and(|l| l.file().contains("shared/src/"));
            if ours {
                abort(info);
            } else {
                eprintln!("{info}");
            }
        }));
    },
    |data: &[u8]| {
        if let Ok(build_id) = debug_file_build_id(data) {
            let keys = DebugFileKeys {
                debug_file: "debuginfo/fuzz/file".into(),
                symcache: "debuginfo/fuzz/file.symcache".into(),
            };
            let _ = ingest_debug_file(&build_id, data, keys);
        }
    }
);
