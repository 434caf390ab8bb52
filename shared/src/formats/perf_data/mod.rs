//! Linux `perf.data` (`perf record`'s binary output), in file mode and pipe mode (`-o -`),
//! with zstd-compressed records (`-z`). Records are read by `linux-perf-data` one at a time;
//! only the model and the mappings of live processes are held.
//!
//! A file-mode recording keeps its feature sections (event names, build IDs, clock data)
//! after the records, so it is read with seeks: the (already decompressed) stream is first
//! spooled to an anonymous temporary file, never to memory. Pipe mode could be read straight
//! from the stream, but goes the same way so that [`guard`] can check every record before the
//! crate trusts its lengths.
//!
//! Times are on perf's clock (since boot) unless the recording carries `CLOCK_DATA` (`perf
//! record -k CLOCK_REALTIME` or `--clockid` with perf ≥ 5.13), which places them on the wall
//! clock. `--call-graph dwarf` samples have their user stack bytes unwound ([`unwind`]) through
//! the runtime binaries the caller hands over by build ID; without the binary of the sampled
//! code they keep the kernel frames and the user leaf, and are marked and counted.

mod address_space;
mod guard;
mod importer;
mod unwind;

use std::io::{BufReader, Read, Seek, SeekFrom};

use linux_perf_data::{PerfFileReader, PerfFileRecord};

use self::guard::Mode;
use self::importer::Importer;
use super::binaries::UnwindBinaries;
use crate::error::{Error, ErrorKind, Result};
use crate::limits::{exceeded, Limits};
use crate::model::Profile;

const FORMAT: &str = "perf-data";

/// The magic both modes start with (big-endian files, `2ELIFREP`, are not read).
const MAGIC: &[u8] = b"PERFILE2";

fn malformed(offset: u64, what: String) -> Error {
    ErrorKind::Malformed {
        format: FORMAT,
        offset,
        what,
    }
    .into()
}

/// Whether `prefix` starts a perf.data file: its magic, then a header size of 104 (file mode)
/// or 16 (pipe mode).
pub(crate) fn test(prefix: &[u8]) -> bool {
    if !prefix.starts_with(MAGIC) {
        return false;
    }
    match prefix.get(8..16) {
        Some(size) => matches!(size, [104, 0, 0, 0, 0, 0, 0, 0] | [16, 0, 0, 0, 0, 0, 0, 0]),
        // Too short to say more: the magic alone decides.
        None => true,
    }
}

/// Decodes (decompressed) perf.data within `limits`, unwinding DWARF-mode user stacks with the
/// `binaries` at hand. `codec` names the whole-file compression, for error messages.
pub(crate) fn decode(
    mut input: impl Read,
    codec: &'static str,
    limits: &Limits,
    binaries: &dyn UnwindBinaries,
) -> Result<Profile> {
    let mut file = tempfile::tempfile().map_err(|e| crate::error::from_io("perf.data spool", e))?;
    let len = std::io::copy(&mut input, &mut file)
        .map_err(|e| super::io_error(e, codec, 0, "perf.data"))?;
    if len > limits.max_decompressed_bytes {
        return Err(exceeded(
            "max_decompressed_bytes",
            limits.max_decompressed_bytes,
        ));
    }
    let mut file = BufReader::new(file);
    let mode = guard::check(&mut file, len, limits)?;
    file.seek(SeekFrom::Start(0))
        .map_err(|e| crate::error::from_io("perf.data spool", e))?;
    refuse_on_panic(|| {
        let reader = match mode {
            Mode::File => PerfFileReader::parse_file(file),
            Mode::Pipe => PerfFileReader::parse_pipe(file),
        }
        .map_err(|e| crate_error(e, "header"))?;
        read_records(reader, limits, binaries)
    })
}

/// Runs `read`, which hands the file to the crates, and refuses the file if that panics:
/// linux-perf-event-reader multiplies a sample's call-chain length by 8 unchecked (an
/// overflow panics in builds with overflow checks). An upload must be refused with its
/// report, not take the function down.
fn refuse_on_panic(read: impl FnOnce() -> Result<Profile>) -> Result<Profile> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(read)).unwrap_or_else(|payload| {
        let message = (payload.downcast_ref::<&str>().copied())
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("no message");
        Err(malformed(
            0,
            format!("a record linux-perf-data cannot read ({message})"),
        ))
    })
}

fn read_records<R: Read>(
    reader: PerfFileReader<R>,
    limits: &Limits,
    binaries: &dyn UnwindBinaries,
) -> Result<Profile> {
    let PerfFileReader {
        mut perf_file,
        mut record_iter,
    } = reader;
    let mut importer = Importer::new(&perf_file, limits, binaries)?;
    let mut index = 0u64;
    while let Some(record) = record_iter
        .next_record(&mut perf_file)
        .map_err(|e| crate_error(e, "records"))?
    {
        index += 1;
        if let PerfFileRecord::EventRecord { attr_index, record } = record {
            importer.record(attr_index, &record, index)?;
        }
    }
    importer.finish()
}

/// The crate's error as ours: a cut file is truncated, anything else malformed.
fn crate_error(e: linux_perf_data::Error, what: &'static str) -> Error {
    if let linux_perf_data::Error::IoError(io) = &e {
        if io.kind() == std::io::ErrorKind::UnexpectedEof {
            return ErrorKind::Truncated { offset: 0, what }.into();
        }
    }
    malformed(0, format!("{what}: {e}"))
}

#[cfg(test)]
mod tests;
