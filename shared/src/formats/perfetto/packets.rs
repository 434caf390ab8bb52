//! Streaming the `TracePacket` records of a trace, descending into compressed packets.
//!
//! A trace is a run of `Trace.packet` (field 1) records; nothing but the current record is held
//! in memory. Compressed packets are inflated one at a time and their records handed on exactly
//! as if they stood at the top level.

use std::io::{self, BufRead, BufReader, Read};

use proflake_proto::perfetto::{trace_packet::Data, TracePacket};
use prost::Message;

use super::perf_packet::{self, PerfSamplePacket};
use crate::error::{Error, ErrorKind, Result};
use crate::formats::container::CappedReader;
use crate::formats::io_error;
use crate::limits::{exceeded, Limits};

const FORMAT: &str = "perfetto";

/// Reads protobuf records from a byte stream, tracking the offset for error messages.
struct RecordReader<R> {
    inner: R,
    offset: u64,
    codec: &'static str,
    max_packet_bytes: u64,
}

enum Record {
    /// A `Trace.packet` record of this many bytes, which follow.
    Packet(u64),
    /// Some other top-level field, skipped.
    Skipped,
}

impl<R: BufRead> RecordReader<R> {
    fn err(&self, e: io::Error, at: u64, what: &'static str) -> Error {
        io_error(e, self.codec, at, what)
    }

    fn malformed(&self, at: u64, what: impl Into<String>) -> Error {
        ErrorKind::Malformed {
            format: FORMAT,
            offset: at,
            what: what.into(),
        }
        .into()
    }

    /// Reads a varint; `Ok(None)` at a clean end of input.
    fn varint(&mut self, at: u64, what: &'static str) -> Result<Option<u64>> {
        let mut value = 0u64;
        for i in 0..10 {
            let codec = self.codec;
            let buf = self
                .inner
                .fill_buf()
                .map_err(|e| io_error(e, codec, at, what))?;
            let Some(&b) = buf.first() else {
                return if i == 0 {
                    Ok(None)
                } else {
                    Err(ErrorKind::Truncated { offset: at, what }.into())
                };
            };
            self.inner.consume(1);
            self.offset += 1;
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(Some(value));
            }
        }
        Err(self.malformed(at, "varint longer than 10 bytes"))
    }

    /// Hands the `len`-byte body of the packet record at `at` to `f`: straight from the
    /// reader's own buffer when it holds the whole body, as it does for all but the few
    /// packets that straddle a refill, else copied into `spare` first.
    fn with_packet<T>(
        &mut self,
        len: u64,
        at: u64,
        spare: &mut Vec<u8>,
        f: impl FnOnce(&[u8]) -> Result<T>,
    ) -> Result<T> {
        let codec = self.codec;
        let buffered = self
            .inner
            .fill_buf()
            .map_err(|e| io_error(e, codec, at, "packet"))?;
        if let Some(body) = usize::try_from(len).ok().and_then(|n| buffered.get(..n)) {
            let (out, n) = (f(body)?, body.len());
            self.inner.consume(n);
            self.offset += len;
            return Ok(out);
        }
        spare.clear();
        let read = (&mut self.inner)
            .take(len)
            .read_to_end(spare)
            .map_err(|e| self.err(e, at, "packet"))?;
        self.offset += read as u64;
        if (read as u64) < len {
            return Err(ErrorKind::Truncated {
                offset: at,
                what: "packet",
            }
            .into());
        }
        f(spare)
    }

    fn skip(&mut self, n: u64, at: u64, what: &'static str) -> Result<()> {
        let copied = io::copy(&mut (&mut self.inner).take(n), &mut io::sink())
            .map_err(|e| self.err(e, at, what))?;
        self.offset += copied;
        if copied < n {
            return Err(ErrorKind::Truncated { offset: at, what }.into());
        }
        Ok(())
    }

    /// Reads the next top-level record up to a packet's body. `strict` (inside compressed
    /// packets) rejects anything but packet records, as trace_processor's tokenizer does.
    fn next(&mut self, strict: bool) -> Result<Option<(Record, u64)>> {
        let at = self.offset;
        let Some(tag) = self.varint(at, "record tag")? else {
            return Ok(None);
        };
        let (field, wire_type) = (tag >> 3, tag & 7);
        if strict && tag != 0x0a {
            return Err(self.malformed(
                at,
                format!("compressed packets hold tag {tag:#x}, not a packet"),
            ));
        }
        match (field, wire_type) {
            (0, _) => Err(self.malformed(at, "field number 0")),
            (1, 2) => {
                let len = self
                    .varint(at, "packet length")?
                    .ok_or(ErrorKind::Truncated {
                        offset: at,
                        what: "packet length",
                    })?;
                if len > self.max_packet_bytes {
                    return Err(exceeded("max_packet_bytes", self.max_packet_bytes));
                }
                Ok(Some((Record::Packet(len), at)))
            }
            (1, _) => Err(self.malformed(at, format!("packet field with wire type {wire_type}"))),
            (_, 0) => {
                self.varint(at, "field value")?
                    .ok_or(ErrorKind::Truncated {
                        offset: at,
                        what: "field value",
                    })?;
                Ok(Some((Record::Skipped, at)))
            }
            (_, 1) => self
                .skip(8, at, "fixed64 field")
                .map(|()| Some((Record::Skipped, at))),
            (_, 5) => self
                .skip(4, at, "fixed32 field")
                .map(|()| Some((Record::Skipped, at))),
            (_, 2) => {
                let len = self
                    .varint(at, "field length")?
                    .ok_or(ErrorKind::Truncated {
                        offset: at,
                        what: "field length",
                    })?;
                self.skip(len, at, "length-delimited field")?;
                Ok(Some((Record::Skipped, at)))
            }
            _ => Err(self.malformed(at, format!("unsupported wire type {wire_type}"))),
        }
    }
}

/// The top-level read buffer: packets are decoded in place, so the larger it is, the fewer
/// straddle a refill and are copied.
const READ_BUFFER: usize = 64 * 1024;

/// A packet as the walker hands it on, by reference: a `TracePacket` is 736 bytes, and moving
/// millions of them was a tenth of the decode.
pub(super) enum Packet<'a> {
    /// A traced_perf sample packet, read without prost.
    PerfSample(&'a PerfSamplePacket),
    /// Any other packet, decoded by prost; the importer takes what it keeps out of it.
    Full(&'a mut TracePacket),
}

/// Where the walker hands each packet.
pub(super) type Sink<'s> = dyn FnMut(Packet<'_>) -> Result<()> + 's;

/// Walks every packet of a trace, calling `sink` for each in order.
pub(super) struct PacketWalker<'l> {
    packets: u64,
    limits: &'l Limits,
}

impl<'l> PacketWalker<'l> {
    pub(super) fn new(limits: &'l Limits) -> Self {
        PacketWalker { packets: 0, limits }
    }

    pub(super) fn walk<R: Read>(
        &mut self,
        input: R,
        codec: &'static str,
        sink: &mut Sink<'_>,
    ) -> Result<()> {
        self.walk_records(BufReader::with_capacity(READ_BUFFER, input), codec, 0, sink)
    }

    fn walk_records<R: BufRead>(
        &mut self,
        input: R,
        codec: &'static str,
        depth: u32,
        sink: &mut Sink<'_>,
    ) -> Result<()> {
        let mut reader = RecordReader {
            inner: input,
            offset: 0,
            codec,
            max_packet_bytes: self.limits.max_packet_bytes,
        };
        let mut spare = Vec::new();
        while let Some((record, at)) = reader.next(depth > 0)? {
            self.packets += 1;
            if self.packets > self.limits.max_packets {
                return Err(exceeded("max_packets", self.limits.max_packets));
            }
            let len = match record {
                Record::Packet(len) if len > 0 => len,
                _ => continue,
            };
            reader.with_packet(len, at, &mut spare, |body| {
                self.packet(body, at, depth, &mut *sink)
            })?;
        }
        Ok(())
    }

    /// Decodes one packet's body and hands it on, or the packets it holds compressed.
    fn packet(&mut self, body: &[u8], at: u64, depth: u32, sink: &mut Sink<'_>) -> Result<()> {
        if let Some(packet) = perf_packet::read(body) {
            return sink(Packet::PerfSample(&packet));
        }
        let mut packet = TracePacket::decode(body).map_err(|e| {
            Error::new(ErrorKind::Malformed {
                format: FORMAT,
                offset: at,
                what: "TracePacket does not decode".into(),
            })
            .with_source(e)
        })?;
        match packet.data {
            Some(Data::CompressedPackets(ref z)) => self.inflate(z, "zlib", depth, sink),
            Some(Data::ZstdCompressedPackets(ref z)) => self.inflate(z, "zstd", depth, sink),
            _ => sink(Packet::Full(&mut packet)),
        }
    }

    fn inflate(
        &mut self,
        data: &[u8],
        codec: &'static str,
        depth: u32,
        sink: &mut Sink<'_>,
    ) -> Result<()> {
        let limits = self.limits;
        if u64::from(depth) + 1 > limits.max_packet_nesting {
            return Err(exceeded("max_packet_nesting", limits.max_packet_nesting));
        }
        let cap = limits.inflate_cap(
            data.len(),
            (
                "max_inflated_packet_bytes",
                limits.max_inflated_packet_bytes,
            ),
        );
        match codec {
            "zstd" => {
                let decoder = zstd::stream::read::Decoder::with_buffer(data).map_err(|e| {
                    Error::new(ErrorKind::Decompression { container: "zstd" }).with_source(e)
                })?;
                let capped = CappedReader::new(decoder, cap);
                self.walk_records(BufReader::new(capped), "zstd", depth + 1, sink)
            }
            _ => {
                // trace_processor inflates with zlib-or-gzip header detection.
                let reader: Box<dyn Read> = if data.starts_with(&[0x1f, 0x8b]) {
                    Box::new(flate2::read::GzDecoder::new(data))
                } else {
                    Box::new(flate2::read::ZlibDecoder::new(data))
                };
                let capped = CappedReader::new(reader, cap);
                self.walk_records(BufReader::new(capped), "zlib", depth + 1, sink)
            }
        }
    }
}
