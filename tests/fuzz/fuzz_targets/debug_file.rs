//! Uploaded debug files (ELF, Mach-O, PE/PDB, Breakpad): their build ID, and adding one to a
//! store, which validates it into a lookup cache.
#![no_main]

use libfuzzer_sys::fuzz_target;
use proflake::store::LocalDirStore;
use proflake::symbols::{add_debug_file, debug_file_build_id, store_debug_file};

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
            // A bucket directory of this process's own, emptied before each input.
            let dir = std::env::temp_dir().join(format!("proflake-fuzz-debug-file-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            let store = LocalDirStore::new(&dir);
            if let Ok(key) = store_debug_file(&store, &build_id, "file", data) {
                let _ = add_debug_file(&store, &key, u64::MAX);
            }
        }
    }
);
