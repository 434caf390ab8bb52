//! gperftools' legacy binary CPU profile, as its `CPUPROFILE=` profiler writes it (and Go's
//! `runtime/pprof` did before Go 1.9), which `go tool pprof` still reads.
//!
//! The file is the profiler's machine words as they were in memory, in the writer's width and
//! byte order: a header `0, 3, 0, period_us, 0`, records `count, depth, pc[depth]` (leaf
//! first), a trailer `0, 1, 0`, then, from gperftools on Linux, the text of
//! `/proc/self/maps`. The header alone tells the layout (see `words`).
//!
//! Like `go tool pprof`, the decoder gives two aggregated series: `samples/count` (the
//! records' counts) and `cpu/nanoseconds` (CPU time, count × period). The records carry no
//! time, thread or process. Frames are native program counters with the image the maps text
//! puts them in, dropped only where pprof drops them (`artifacts`).

mod artifacts;
mod import;
mod maps;
mod words;

use crate::error::{Error, ErrorKind, Result};
use crate::limits::Limits;
use crate::model::Profile;

const FORMAT: &str = "pprof-legacy";

/// Whether `prefix` starts with a legacy CPU profile header in one of the four word layouts.
pub(crate) fn test(prefix: &[u8]) -> bool {
    words::header(prefix).is_some()
}

/// Decodes a whole (decompressed) legacy CPU profile within `limits`.
pub(crate) fn decode(bytes: &[u8], limits: &Limits) -> Result<Profile> {
    let Some((layout, period_us)) = words::header(bytes) else {
        return Err(malformed(
            0,
            "the header is not the words 0, 3, 0, period, 0 in any word width or byte order".into(),
        ));
    };
    import::import(bytes, layout, period_us, limits)
}

fn malformed(offset: u64, what: String) -> Error {
    ErrorKind::Malformed {
        format: FORMAT,
        offset,
        what,
    }
    .into()
}
