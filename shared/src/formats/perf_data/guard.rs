//! The checks a perf.data file passes before `linux-perf-data` reads it. The crate trusts the
//! lengths and counts it reads (it allocates a feature section, an `EVENT_DESC` list or an
//! AUXTRACE payload at the size the file states, inflates a compressed record without bound,
//! and asserts on an MMAP2 build-ID length), so each of those is checked here first against
//! the bytes that are really there and against `Limits`. It also reads a `perf_event_attr` of
//! a size between two of the kernel's versions short (up to the version below) and then goes
//! on four or more bytes early, reading an id count from the wrong place: such sizes are
//! refused wherever an attr is followed by what it reads next.

use std::io::{Read, Seek, SeekFrom};

use linux_perf_data::linux_perf_event_reader::{
    Endianness, RawEventRecord, ReadFormat, RecordType, SampleFormat,
};

use super::{malformed, FORMAT};
use crate::error::{ErrorKind, Result};
use crate::limits::{exceeded, Limits, RATIO_FLOOR_BYTES};

const HEADER_SIZE: u64 = 104;
const PIPE_HEADER_SIZE: u64 = 16;
const EVENT_HEADER_SIZE: u64 = 8;
/// `perf_event_attr` sizes: the first version, and far beyond the largest the kernel knows.
const ATTR_SIZE_MIN: u64 = 64;
const ATTR_SIZE_MAX: u64 = 4096;
/// The sizes of the kernel's `perf_event_attr` versions 0 to 7 (`PERF_ATTR_SIZE_VER*`).
const ATTR_VERSION_SIZES: [u64; 8] = [64, 72, 80, 96, 104, 112, 120, 128];

/// Whether the crate reads an attr that says it is `size` bytes as exactly that many: a
/// version's size, or one past the last (whose rest it skips).
fn attr_read_whole(size: u64) -> bool {
    ATTR_VERSION_SIZES.contains(&size) || size > ATTR_VERSION_SIZES[7]
}

const FEATURE_EVENT_DESC: usize = 12;

const RECORD_MMAP2: u32 = 10;
const RECORD_HEADER_FEATURE: u32 = 80;
const RECORD_AUXTRACE: u32 = 71;
const RECORD_COMPRESSED: u32 = 81;
const RECORD_COMPRESSED2: u32 = 83;
const MISC_MMAP_BUILD_ID: u16 = 1 << 14;

/// How the file is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    /// A header with sections; the feature sections follow the data.
    File,
    /// `perf record -o -`: the header's attrs and features are records in the stream.
    Pipe,
}

/// Checks the file of `len` bytes `file` holds, from its start, and says its mode.
pub(super) fn check<F: Read + Seek>(file: &mut F, len: u64, limits: &Limits) -> Result<Mode> {
    let mut head = [0u8; 16];
    read_at(file, 0, &mut head, len, "the file header")?;
    if &head[..8] != b"PERFILE2" {
        return Err(malformed(
            0,
            "not a little-endian perf.data file (magic PERFILE2)".into(),
        ));
    }
    let size = u64_at(&head, 8);
    let mut budget = Budget::new(limits);
    match size {
        PIPE_HEADER_SIZE => {
            records(file, PIPE_HEADER_SIZE, len, len, &mut budget)?;
            Ok(Mode::Pipe)
        }
        HEADER_SIZE => {
            let mut h = [0u8; HEADER_SIZE as usize];
            read_at(file, 0, &mut h, len, "the file header")?;
            let attr_size = u64_at(&h, 16);
            if !(ATTR_SIZE_MIN..=ATTR_SIZE_MAX).contains(&attr_size) {
                return Err(malformed(
                    16,
                    format!("attr_size {attr_size} is not a perf_event_attr size"),
                ));
            }
            let (attrs, data, event_types) = (section(&h, 24), section(&h, 40), section(&h, 56));
            for (s, what) in [
                (attrs, "attrs"),
                (data, "data"),
                (event_types, "event_types"),
            ] {
                within(s, len, what)?;
            }
            // perf's `attr_size` counts each attr's id section too; the old event_types
            // section puts one after each slot of `attr_size`.
            attr_entries(file, attrs, attr_size - 16, attr_size, len, "attrs")?;
            attr_entries(
                file,
                event_types,
                attr_size,
                attr_size + 16,
                len,
                "event_types",
            )?;
            let bits = &h[72..104];
            let count = (0..256).filter(|b| bits[b / 8] >> (b % 8) & 1 == 1).count() as u64;
            let table = data.0 + data.1;
            within((table, count * 16), len, "feature section table")?;
            let mut index = 0u64;
            for feature in 0..256 {
                if bits[feature / 8] >> (feature % 8) & 1 == 0 {
                    continue;
                }
                let mut entry = [0u8; 16];
                read_at(
                    file,
                    table + index * 16,
                    &mut entry,
                    len,
                    "feature section table",
                )?;
                let s = section(&entry, 0);
                within(s, len, "feature section")?;
                if feature == FEATURE_EVENT_DESC {
                    let body = read_vec(file, s, len)?;
                    event_desc(&body, s.0)?;
                }
                index += 1;
            }
            records(file, data.0, data.0 + data.1, len, &mut budget)?;
            Ok(Mode::File)
        }
        _ => Err(malformed(
            8,
            format!("header size {size} is neither 104 (file) nor 16 (pipe)"),
        )),
    }
}

/// Walks the records from `start` to `end`, checking the ones the crate would trust.
fn records<F: Read + Seek>(
    file: &mut F,
    start: u64,
    end: u64,
    len: u64,
    budget: &mut Budget,
) -> Result<()> {
    let mut at = start;
    let mut body = Vec::new();
    while at + EVENT_HEADER_SIZE <= end {
        let mut h = [0u8; 8];
        read_at(file, at, &mut h, len, "record header")?;
        let kind = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
        let misc = u16::from_le_bytes([h[4], h[5]]);
        let size = u64::from(u16::from_le_bytes([h[6], h[7]]));
        if size < EVENT_HEADER_SIZE {
            return Err(malformed(
                at,
                format!("record size {size} is less than its header"),
            ));
        }
        let body_len = size - EVENT_HEADER_SIZE;
        if at + size > len {
            // The crate stops at a record cut by the end of a pipe; a file's data section
            // must hold its records whole.
            if end == len {
                return Ok(());
            }
            return Err(ErrorKind::Truncated {
                offset: at,
                what: "perf.data record",
            }
            .into());
        }
        let mut next = at + size;
        match kind {
            RECORD_MMAP2
            | RECORD_HEADER_FEATURE
            | RECORD_AUXTRACE
            | RECORD_COMPRESSED
            | RECORD_COMPRESSED2 => {
                body.resize(body_len as usize, 0);
                read_at(file, at + EVENT_HEADER_SIZE, &mut body, len, "record")?;
                match kind {
                    // pid, tid, addr, len, pgoff, then the build ID's length.
                    RECORD_MMAP2
                        if misc & MISC_MMAP_BUILD_ID != 0
                            && body.get(32).is_some_and(|&n| n > 20) =>
                    {
                        return Err(malformed(at, "MMAP2 build ID longer than 20 bytes".into()));
                    }
                    // The crate keeps the low 32 bits of the feature's 64-bit id.
                    RECORD_HEADER_FEATURE
                        if body.len() >= 8
                            && u64_at(&body, 0) as u32 == FEATURE_EVENT_DESC as u32 =>
                    {
                        event_desc(&body[8..], at + 16)?;
                    }
                    RECORD_AUXTRACE => {
                        // The trace data follows the record, `size` bytes of it.
                        let extra = body.get(..8).map_or(0, |b| u64_at(b, 0));
                        next = next
                            .checked_add(extra)
                            .filter(|&n| n <= len)
                            .ok_or_else(|| {
                                malformed(
                                    at,
                                    format!("AUXTRACE data of {extra} bytes runs past the end"),
                                )
                            })?;
                    }
                    RECORD_COMPRESSED => budget.inflate(&body, at)?,
                    RECORD_COMPRESSED2 => {
                        let n = body.get(..8).map_or(u64::MAX, |b| u64_at(b, 0));
                        if n > body_len.saturating_sub(8) {
                            return Err(malformed(
                                at,
                                "COMPRESSED2 data size exceeds its record".into(),
                            ));
                        }
                        budget.inflate(&body[8..8 + n as usize], at)?;
                    }
                    _ => {}
                }
            }
            _ => {}
        }
        at = next;
    }
    Ok(())
}

/// The bytes compressed records inflate to, counted within the decompression limits.
struct Budget {
    max: u64,
    ratio: u64,
    compressed: u64,
    inflated: u64,
    scratch: Vec<u8>,
    context: Option<zstd::zstd_safe::DCtx<'static>>,
}

impl Budget {
    fn new(limits: &Limits) -> Self {
        Budget {
            max: limits.max_decompressed_bytes,
            ratio: limits.max_decompression_ratio,
            compressed: 0,
            inflated: 0,
            scratch: Vec::new(),
            context: None,
        }
    }

    /// Inflates one record's zstd data into scratch space, counting the bytes. perf compresses
    /// the records as one stream across records, so one context reads them all.
    fn inflate(&mut self, data: &[u8], at: u64) -> Result<()> {
        use zstd::zstd_safe::{InBuffer, OutBuffer};
        self.compressed += data.len() as u64;
        let context = self
            .context
            .get_or_insert_with(zstd::zstd_safe::DCtx::create);
        self.scratch.resize(1 << 16, 0);
        let mut input = InBuffer::around(data);
        loop {
            let mut output = OutBuffer::around(&mut self.scratch[..]);
            context
                .decompress_stream(&mut output, &mut input)
                .map_err(|_| malformed(at, "a compressed record that is not zstd data".into()))?;
            let n = output.pos() as u64;
            self.inflated += n;
            if self.inflated > self.max {
                return Err(exceeded("max_decompressed_bytes", self.max));
            }
            if self.inflated > RATIO_FLOOR_BYTES
                && self.inflated / self.compressed.max(1) > self.ratio
            {
                return Err(exceeded("max_decompression_ratio", self.ratio));
            }
            if input.pos() == data.len() && n < self.scratch.len() as u64 {
                break;
            }
            if n == 0 && input.pos() == data.len() {
                break;
            }
        }
        Ok(())
    }
}

/// The entries of a file's `attrs` (or old `event_types`) section, `entry` bytes each: an attr
/// in a slot of `slot` bytes, then the section of its ids, which the crate reads whole. Each
/// attr must be read whole and each id section lie within the file.
fn attr_entries<F: Read + Seek>(
    file: &mut F,
    (offset, size): (u64, u64),
    slot: u64,
    entry: u64,
    len: u64,
    what: &str,
) -> Result<()> {
    for i in 0..size / entry {
        let at = offset + i * entry;
        let mut own = [0u8; 4];
        read_at(file, at + 4, &mut own, len, "an attr")?;
        let own = u64::from(u32::from_le_bytes(own));
        if own > slot || !attr_read_whole(own) {
            return Err(malformed(
                at,
                format!("{what}: an attr of {own} bytes in slots of {slot}"),
            ));
        }
        let mut ids = [0u8; 16];
        read_at(file, at + slot, &mut ids, len, "an attr's ids")?;
        within(section(&ids, 0), len, "an attr's ids")?;
    }
    Ok(())
}

/// `EVENT_DESC`: `nr`, `attr_size`, then per event the attr, `nr_ids`, a string and the ids.
/// Every count must fit in the bytes there are, and every attr be read whole.
fn event_desc(body: &[u8], offset: u64) -> Result<()> {
    let bad = |what: &str| malformed(offset, format!("EVENT_DESC: {what}"));
    let word = |at: usize| -> Option<u64> {
        body.get(at..at + 4)
            .map(|b| u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
    };
    let (Some(nr), Some(attr_size)) = (word(0), word(4)) else {
        return Err(bad("cut short"));
    };
    if !(ATTR_SIZE_MIN..=ATTR_SIZE_MAX).contains(&attr_size) {
        return Err(bad(&format!(
            "attr_size {attr_size} is not a perf_event_attr size"
        )));
    }
    let mut at = 8u64;
    let total = body.len() as u64;
    for _ in 0..nr {
        // The attr states its own size, which may not exceed attr_size.
        let own = word(at as usize + 4).ok_or_else(|| bad("cut short"))?;
        if own > attr_size || !attr_read_whole(own) {
            return Err(bad(&format!(
                "an attr of {own} bytes in slots of {attr_size}"
            )));
        }
        at += attr_size;
        let ids = word(at as usize).ok_or_else(|| bad("cut short"))?;
        at += 4;
        let string = word(at as usize).ok_or_else(|| bad("cut short"))?;
        at += 4 + string;
        at = at.checked_add(ids * 8).ok_or_else(|| bad("cut short"))?;
        if at > total {
            return Err(bad("an event's name or ids run past the section"));
        }
    }
    Ok(())
}

fn section(bytes: &[u8], at: usize) -> (u64, u64) {
    (u64_at(bytes, at), u64_at(bytes, at + 8))
}

fn within((offset, size): (u64, u64), len: u64, what: &str) -> Result<()> {
    match offset.checked_add(size) {
        Some(end) if end <= len => Ok(()),
        _ => Err(malformed(
            0,
            format!(
                "the {what} section ({size} bytes at {offset}) runs past the end ({len} bytes)"
            ),
        )),
    }
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(b)
}

fn read_at<F: Read + Seek>(
    file: &mut F,
    at: u64,
    buf: &mut [u8],
    len: u64,
    what: &'static str,
) -> Result<()> {
    if at + buf.len() as u64 > len {
        return Err(ErrorKind::Truncated { offset: at, what }.into());
    }
    file.seek(SeekFrom::Start(at))
        .and_then(|_| file.read_exact(buf))
        .map_err(|e| crate::error::from_io(FORMAT, e))
}

fn read_vec<F: Read + Seek>(file: &mut F, (offset, size): (u64, u64), len: u64) -> Result<Vec<u8>> {
    let mut body = vec![0u8; size as usize];
    read_at(file, offset, &mut body, len, "feature section")?;
    Ok(body)
}

/// Whether the call-chain length a SAMPLE record states fits in the record. The crate
/// multiplies it by 8 unchecked, which overflows (a panic where overflow is checked, as in
/// fuzzing builds) for lengths past 2^61; this walks to the length as the crate's parser does
/// (its layout of `READ` values included) and compares it with the words left. A record too
/// short to hold the length is left to the crate, which refuses it.
pub(super) fn callchain_fits(record: &RawEventRecord<'_>) -> bool {
    let format = record.parse_info.sample_format;
    if record.record_type != RecordType::SAMPLE || !format.contains(SampleFormat::CALLCHAIN) {
        return true;
    }
    let data = record.data.as_slice();
    let words = data.len() / 8;
    let word = |i: usize| -> Option<u64> {
        let bytes = data.get(i * 8..i * 8 + 8)?;
        Some(match record.parse_info.endian {
            Endianness::LittleEndian => u64::from_le_bytes(bytes.try_into().ok()?),
            Endianness::BigEndian => u64::from_be_bytes(bytes.try_into().ok()?),
        })
    };
    let before_read = [
        SampleFormat::IDENTIFIER,
        SampleFormat::IP,
        SampleFormat::TID,
        SampleFormat::TIME,
        SampleFormat::ADDR,
        SampleFormat::ID,
        SampleFormat::STREAM_ID,
        SampleFormat::CPU,
        SampleFormat::PERIOD,
    ];
    let mut at = before_read.iter().filter(|f| format.contains(**f)).count();
    if format.contains(SampleFormat::READ) {
        let read = record.parse_info.read_format;
        let times = usize::from(read.contains(ReadFormat::TOTAL_TIME_ENABLED))
            + usize::from(read.contains(ReadFormat::TOTAL_TIME_RUNNING));
        let id = usize::from(read.contains(ReadFormat::ID));
        if read.contains(ReadFormat::GROUP) {
            at += 1 + times + id;
        } else {
            let Some(nr) = word(at) else { return true };
            let per_value = 1 + id as u64;
            // More values than words left: the crate runs out of bytes and refuses it.
            if nr.saturating_mul(per_value) > words as u64 {
                return true;
            }
            at += 1 + times + (nr * per_value) as usize;
        }
    }
    match word(at) {
        Some(length) => length <= (words.saturating_sub(at + 1)) as u64,
        None => true,
    }
}
