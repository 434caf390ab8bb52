//! gperftools' legacy binary CPU profiles (`CPUPROFILE=`), in any word layout.
#![no_main]

use libfuzzer_sys::fuzz_target;
use proflake::InputFormat;

fuzz_target!(|data: &[u8]| {
    let _ = proflake::decode(
        data,
        Some(InputFormat::PprofLegacy),
        &proflake::Limits::default(),
    );
});
