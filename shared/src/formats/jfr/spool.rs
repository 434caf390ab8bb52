//! A chunk read as its bytes stream in, never held whole: its metadata and constant-pool
//! records (what every event is decoded with, a small part of a chunk) are kept in memory,
//! and its events are spilled, to memory while they are few and then to an anonymous
//! temporary file, to be read back one at a time. A busy recording's chunks hold tens of MB
//! of events each.
//!
//! The kept records sit back to back in one buffer; each event read back is put after them,
//! so one [`Reader`] reads the event and the pool entries it refers to, and the positions the
//! values of both hold are positions in that buffer.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};

use super::chunk::{Header, HEADER_BYTES};
use super::constant_pool::POOL_EVENT;
use super::reader::Reader;
use super::FORMAT;
use crate::error::{from_io, ErrorKind, Result};
use crate::limits::{exceeded, Limits};

/// Bytes of events spilled to memory before they go to a temporary file.
const SPILL_IN_MEMORY: usize = 1 << 20;

#[cfg(test)]
thread_local! {
    /// [`SPILL_IN_MEMORY`] as a test sets it, to read small chunks through a file.
    pub(super) static SPILL_IN_MEMORY_FOR_TEST: std::cell::Cell<usize> =
        const { std::cell::Cell::new(SPILL_IN_MEMORY) };
}

fn spill_in_memory() -> usize {
    #[cfg(test)]
    return SPILL_IN_MEMORY_FOR_TEST.with(std::cell::Cell::get);
    #[cfg(not(test))]
    SPILL_IN_MEMORY
}

/// One chunk: its kept records, and its events to read back.
pub(crate) struct SpooledChunk {
    /// The metadata and constant-pool records, each with its size, then (while an event is
    /// read) that event's record.
    kept: Vec<u8>,
    /// How many bytes of `kept` are the kept records.
    kept_len: usize,
    /// By position in the chunk, in order: where each kept record starts in `kept`.
    kept_at: Vec<(u64, usize)>,
    events: Spill,
    /// The chunk's offset in the file, for errors.
    offset: u64,
    compressed: bool,
}

/// The events spilled: position in the chunk (8 bytes), length (4 bytes), the record.
enum Spill {
    Memory(Vec<u8>),
    File(BufWriter<File>),
}

impl Spill {
    fn push(&mut self, position: u64, record: &[u8]) -> Result<()> {
        // A record over 4 GiB is past any chunk limit worth setting.
        let length = u32::try_from(record.len())
            .map_err(|_| exceeded("max_event_bytes", u64::from(u32::MAX)))?;
        if let Spill::Memory(bytes) = self {
            if bytes.len() + record.len() > spill_in_memory() {
                let mut file = BufWriter::new(tempfile::tempfile().map_err(spill_error)?);
                file.write_all(bytes).map_err(spill_error)?;
                *self = Spill::File(file);
            }
        }
        let mut put = |b: &[u8]| -> Result<()> {
            match self {
                Spill::Memory(bytes) => {
                    bytes.extend_from_slice(b);
                    Ok(())
                }
                Spill::File(file) => file.write_all(b).map_err(spill_error),
            }
        };
        put(&position.to_le_bytes())?;
        put(&length.to_le_bytes())?;
        put(record)
    }
}

fn spill_error(e: std::io::Error) -> crate::Error {
    from_io("the JFR chunk's spilled events", e)
}

/// A varint read a byte at a time, as [`Reader::varint`] reads it; the bytes it took are
/// appended to `raw`. `None` when the input ends before it does.
fn read_varint(input: &mut dyn Read, raw: &mut Vec<u8>) -> std::io::Result<Option<u64>> {
    let mut value = 0u64;
    let mut byte = [0u8];
    for shift in (0..=56).step_by(7) {
        if input.read(&mut byte)? == 0 {
            return Ok(None);
        }
        raw.push(byte[0]);
        if shift == 56 {
            return Ok(Some(value | u64::from(byte[0]) << 56));
        }
        value |= u64::from(byte[0] & 0x7f) << shift;
        if byte[0] & 0x80 == 0 {
            return Ok(Some(value));
        }
    }
    unreachable!("the ninth byte ends a varint")
}

impl SpooledChunk {
    /// Reads the records of the chunk `header` starts, at `offset` in the (decompressed) file,
    /// from `input` (just past the header). `None` when the input ends before the chunk does.
    /// More than `max_event_bytes` of one chunk are refused as they arrive.
    pub(crate) fn read(
        input: &mut dyn Read,
        header: &Header,
        offset: u64,
        codec: &'static str,
        limits: &Limits,
    ) -> Result<Option<SpooledChunk>> {
        let mut chunk = SpooledChunk {
            kept: Vec::new(),
            kept_len: 0,
            kept_at: Vec::new(),
            events: Spill::Memory(Vec::new()),
            offset,
            compressed: header.compressed_integers,
        };
        let io = |e| super::super::io_error(e, codec, offset, "JFR chunk");
        let mut record = Vec::new();
        let mut position = HEADER_BYTES as u64;
        while position < header.size {
            if position > limits.max_event_bytes {
                return Err(exceeded("max_event_bytes", limits.max_event_bytes));
            }
            record.clear();
            let Some(size) = read_varint(input, &mut record).map_err(io)? else {
                return Ok(None);
            };
            let size_bytes = record.len() as u64;
            if size <= size_bytes || position.saturating_add(size) > header.size {
                return Err(ErrorKind::Malformed {
                    format: FORMAT,
                    offset: offset + position,
                    what: format!("event of {size} bytes does not fit in its chunk"),
                }
                .into());
            }
            // Grown as the bytes arrive: a size that lies allocates only what is there.
            let rest = size - size_bytes;
            if input.take(rest).read_to_end(&mut record).map_err(io)? < rest as usize {
                return Ok(None);
            }
            let mut r = Reader::new(&record, size_bytes as usize, offset + position, false);
            if r.varint()? <= POOL_EVENT {
                chunk.kept_at.push((position, chunk.kept.len()));
                chunk.kept.extend_from_slice(&record);
            } else {
                chunk.events.push(position, &record)?;
            }
            position += size;
        }
        if position > limits.max_event_bytes {
            return Err(exceeded("max_event_bytes", limits.max_event_bytes));
        }
        chunk.kept_len = chunk.kept.len();
        chunk.kept.shrink_to_fit();
        Ok(Some(chunk))
    }

    /// Where in [`kept`](SpooledChunk::kept) the kept record at chunk position `position`
    /// starts; `None` when no kept record starts there.
    pub(crate) fn locate(&self, position: u64) -> Option<usize> {
        let i = self.kept_at.partition_point(|&(p, _)| p < position);
        self.kept_at
            .get(i)
            .filter(|&&(p, _)| p == position)
            .map(|&(_, at)| at)
    }

    /// A reader of the kept records (positions from [`locate`](SpooledChunk::locate)).
    pub(crate) fn kept(&self) -> Reader<'_> {
        Reader::new(&self.kept[..self.kept_len], 0, self.offset, self.compressed)
    }

    /// Hands `each` every event record, in chunk order: a reader of the kept records with the
    /// event after them, and a reader of the event's record alone, just past its size.
    pub(crate) fn for_each_event(
        &mut self,
        mut each: impl for<'k> FnMut(&Reader<'k>, Reader<'k>) -> Result<()>,
    ) -> Result<()> {
        let SpooledChunk {
            kept,
            kept_len,
            events,
            offset,
            compressed,
            ..
        } = self;
        let (kept_len, offset, compressed) = (*kept_len, *offset, *compressed);
        let mut input: Box<dyn Read + '_> = match events {
            Spill::Memory(bytes) => Box::new(bytes.as_slice()),
            Spill::File(file) => {
                file.flush().map_err(spill_error)?;
                let file = file.get_mut();
                file.seek(SeekFrom::Start(0)).map_err(spill_error)?;
                Box::new(BufReader::with_capacity(1 << 16, file))
            }
        };
        let mut head = [0u8; 12];
        loop {
            match input.read_exact(&mut head) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
                Err(e) => return Err(spill_error(e)),
            }
            let position = u64::from_le_bytes(head[..8].try_into().expect("8 bytes"));
            let length = u32::from_le_bytes(head[8..].try_into().expect("4 bytes")) as usize;
            kept.truncate(kept_len);
            kept.reserve_exact(length);
            let read = input
                .by_ref()
                .take(length as u64)
                .read_to_end(kept)
                .map_err(spill_error)?;
            if read < length {
                return Err(spill_error(std::io::ErrorKind::UnexpectedEof.into()));
            }
            // Errors in the event give its offset in the file.
            let base = (offset + position).saturating_sub(kept_len as u64);
            let all = Reader::new(kept, 0, base, compressed);
            let event = all.record(kept_len, "event")?;
            each(&all, event)?;
        }
    }
}
