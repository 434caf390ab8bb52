//! Uploaded debug files (ELF, Mach-O, PE/PDB, Breakpad): their build ID, and validating one
//! into a lookup cache.
#![no_main]

use libfuzzer_sys::fuzz_target;
use proflake::symbolize::{debug_file_build_id, ingest_debug_file};

fuzz_target!(|data: &[u8]| {
    if let Ok(build_id) = debug_file_build_id(data) {
        let _ = ingest_debug_file(&build_id, "debuginfo/fuzz/file", data);
    }
});
