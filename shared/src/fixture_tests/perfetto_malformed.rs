//! Adversarial Perfetto inputs: each must give a specific error kind (or decode with the
//! problem counted), and nothing may panic.
//!
//! Traces are built with the prost types (`prost::Message::encode_to_vec`); compressed
//! payloads with flate2 / zstd. The decompression bombs are assembled by hand from repeated,
//! self-contained deflate blocks or zstd RLE blocks, so building them is cheap, and each is
//! constructed so that decoding it stays fast in a debug build (see the individual tests).

use std::io::Write;

use crate::{ErrorKind, Limits};
use flate2::{Compress, Compression, Crc, FlushCompress, Status};
use proflake_proto::perfetto::{
    trace_packet::{Data, OptionalTrustedPacketSequenceId},
    Callstack, Frame, InternedData, InternedString, Mapping, PerfSample, StreamingProfilePacket,
    ThreadDescriptor, Trace, TracePacket,
};
use prost::Message;

use super::util::{fixture, record, record_spans, samples, stat, varint};

const MIB: u64 = 1 << 20;

/// The decoder's default limits, which these tests hold to ([`Limits`]).
const MAX_PACKET_BYTES: u64 = 64 * MIB;
const MAX_INFLATED_PACKET_BYTES: u64 = 256 * MIB;
const MAX_COMPRESSION_DEPTH: u64 = 4;
const MAX_DECOMPRESSED_BYTES: u64 = 4096 * MIB;

#[test]
fn the_limits_held_to_are_the_defaults() {
    let limits = Limits::default();
    assert_eq!(
        (
            limits.max_packet_bytes,
            limits.max_inflated_packet_bytes,
            limits.max_packet_nesting,
            limits.max_decompressed_bytes
        ),
        (
            MAX_PACKET_BYTES,
            MAX_INFLATED_PACKET_BYTES,
            MAX_COMPRESSION_DEPTH,
            MAX_DECOMPRESSED_BYTES
        )
    );
}

/// The error kind of a decode that must fail.
fn error_kind(bytes: &[u8]) -> ErrorKind {
    error_kind_within(bytes, &Limits::default())
}

/// The error kind of a decode within `limits` that must fail.
fn error_kind_within(bytes: &[u8], limits: &Limits) -> ErrorKind {
    match crate::decode(bytes, None, limits) {
        Ok(d) => panic!(
            "expected an error, got {} samples",
            d.profile.samples().len()
        ),
        Err(e) => e.kind().clone(),
    }
}

// ---- building traces --------------------------------------------------------------------

fn packet(seq: u32) -> TracePacket {
    TracePacket {
        optional_trusted_packet_sequence_id: Some(
            OptionalTrustedPacketSequenceId::TrustedPacketSequenceId(seq),
        ),
        ..Default::default()
    }
}

fn string(iid: u64, s: &str) -> InternedString {
    InternedString {
        iid: Some(iid),
        r#str: Some(s.as_bytes().to_vec()),
    }
}

/// One frame `main` in `/libx.so`, callstack iid 1.
fn good_interned() -> InternedData {
    InternedData {
        function_names: vec![string(1, "main")],
        mapping_paths: vec![string(1, "libx.so")],
        mappings: vec![Mapping {
            iid: Some(1),
            start: Some(0x1000),
            end: Some(0x2000),
            path_string_ids: vec![1],
            ..Default::default()
        }],
        frames: vec![Frame {
            iid: Some(1),
            function_name_id: Some(1),
            mapping_id: Some(1),
            rel_pc: Some(0x10),
            ..Default::default()
        }],
        callstacks: vec![Callstack {
            iid: Some(1),
            frame_ids: vec![1],
        }],
        ..Default::default()
    }
}

/// A sequence that clears its state and interns `interned`, then one PerfSample using
/// `callstack_iid`.
fn sample_trace(interned: InternedData, callstack_iid: u64) -> Vec<u8> {
    let mut start = packet(1);
    start.sequence_flags = Some(1);
    start.timestamp = Some(1000);
    start.interned_data = Some(interned);
    let mut sample = packet(1);
    sample.sequence_flags = Some(2);
    sample.timestamp = Some(2000);
    sample.data = Some(Data::PerfSample(PerfSample {
        cpu: Some(0),
        pid: Some(7),
        tid: Some(7),
        cpu_mode: Some(2),
        callstack_iid: Some(callstack_iid),
        ..Default::default()
    }));
    Trace {
        packet: vec![start, sample],
    }
    .encode_to_vec()
}

fn zlib(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// A packet record whose `compressed_packets` payload is `payload` (as is).
fn compressed_record(payload: Vec<u8>) -> Vec<u8> {
    let p = TracePacket {
        data: Some(Data::CompressedPackets(payload)),
        ..Default::default()
    };
    record(&p.encode_to_vec())
}

/// Raw deflate blocks for `data`: byte aligned (sync flush), not final, and referring to
/// nothing before themselves, so that such pieces can be concatenated and repeated.
fn deflate_piece(data: &[u8]) -> Vec<u8> {
    let mut c = Compress::new(Compression::best(), false);
    let mut out = Vec::with_capacity(data.len() + 1024);
    let status = c.compress_vec(data, &mut out, FlushCompress::Sync).unwrap();
    assert_eq!(status, Status::Ok);
    assert_eq!(c.total_in(), data.len() as u64, "all input compressed");
    out
}

/// The final (empty) deflate block.
fn deflate_end() -> Vec<u8> {
    let mut c = Compress::new(Compression::best(), false);
    let mut out = Vec::with_capacity(64);
    c.compress_vec(&[], &mut out, FlushCompress::Finish)
        .unwrap();
    out
}

/// Adler-32 with a fast path for runs of zeros.
struct Adler32 {
    a: u64,
    b: u64,
}

impl Adler32 {
    const MOD: u64 = 65521;

    fn new() -> Self {
        Adler32 { a: 1, b: 0 }
    }

    fn update(&mut self, data: &[u8]) {
        for &x in data {
            self.a = (self.a + u64::from(x)) % Self::MOD;
            self.b = (self.b + self.a) % Self::MOD;
        }
    }

    fn zeros(&mut self, n: u64) {
        self.b = (self.b + (n % Self::MOD) * self.a) % Self::MOD;
    }

    fn sum(&self) -> u32 {
        ((self.b << 16) | self.a) as u32
    }
}

/// Header of a packet record holding a timestamp and one unknown field (number 1000) of
/// `payload` zero bytes: a valid TracePacket once the payload follows.
fn padding_packet_header(payload: u64) -> Vec<u8> {
    // timestamp = 1 first: a known field, as the format sniffer wants.
    let mut field = vec![0x40, 0x01];
    field.extend(varint((1000 << 3) | 2));
    field.extend(varint(payload));
    let mut out = vec![0x0a];
    out.extend(varint(field.len() as u64 + payload));
    out.extend(field);
    out
}

// ---- empty and random input -------------------------------------------------------------

#[test]
fn empty_input_is_unsupported() {
    assert!(matches!(
        error_kind(&[]),
        ErrorKind::UnsupportedFormat { .. }
    ));
}

/// splitmix64: a deterministic PRNG for reproducible random inputs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

#[test]
fn random_bytes_are_rejected() {
    for seed in 0..64u64 {
        let mut rng = Rng(seed);
        let len = 1 + (rng.next() % 4096) as usize;
        let bytes = rng.bytes(len);
        let kind = error_kind(&bytes);
        // Without a trace tag or a compression magic up front, no decoder recognises them.
        let magic = bytes[0] == 0x0a || bytes.starts_with(&[0x1f, 0x8b]);
        if !magic {
            assert!(
                matches!(kind, ErrorKind::UnsupportedFormat { .. }),
                "seed {seed}: {kind:?}"
            );
        }
        assert!(
            matches!(
                kind,
                ErrorKind::UnsupportedFormat { .. }
                    | ErrorKind::Malformed { .. }
                    | ErrorKind::Truncated { .. }
            ),
            "seed {seed}: {kind:?}"
        );
    }
}

/// Random bodies behind a record header that passes sniffing: the decoder gets past format
/// detection and must fail cleanly on the packet bytes.
#[test]
fn random_packet_bodies_fail_cleanly() {
    let mut malformed = 0;
    for seed in 0..64u64 {
        let mut rng = Rng(1000 + seed);
        let len = 16 + (rng.next() % 2048) as usize;
        // Field 8 (timestamp) varint first: a known TracePacket field, so the sniffer accepts.
        let mut body = vec![0x40, 0x01];
        body.extend(rng.bytes(len));
        let mut bytes = record(&body);
        let tail = (rng.next() % 64) as usize;
        bytes.extend(rng.bytes(tail));
        match crate::decode(&bytes, None, &crate::Limits::default()) {
            Ok(_) => {}
            Err(e) => {
                assert!(
                    matches!(
                        e.kind(),
                        ErrorKind::Malformed { .. }
                            | ErrorKind::Truncated { .. }
                            | ErrorKind::LimitExceeded { .. }
                    ),
                    "seed {seed}: {e}"
                );
                malformed += u32::from(matches!(e.kind(), ErrorKind::Malformed { .. }));
            }
        }
    }
    assert!(
        malformed > 0,
        "random packet bodies are mostly not protobuf"
    );
}

// ---- truncation -------------------------------------------------------------------------

/// Decodes every prefix of a plain trace: a cut at a record boundary decodes, a cut inside a
/// record is `Truncated` (or, while too little of the first record is there to recognise the
/// format, `UnsupportedFormat`).
fn check_every_prefix(rel: &str) {
    let bytes = fixture(rel);
    let spans = record_spans(&bytes);
    let full =
        crate::decode(&bytes, None, &crate::Limits::default()).expect("the whole trace decodes");
    for cut in 0..=bytes.len() {
        let result = crate::decode(&bytes[..cut], None, &crate::Limits::default());
        let boundary = cut == 0 || spans.iter().any(|&(_, _, end)| end == cut);
        let (first_start, first_header, _) = spans[0];
        match result {
            Ok(d) => {
                assert!(boundary, "{rel}: cut at {cut} (inside a record) decoded");
                assert!(d.profile.samples().len() <= full.profile.samples().len());
            }
            Err(e) if cut == 0 => {
                assert!(
                    matches!(e.kind(), ErrorKind::UnsupportedFormat { .. }),
                    "{e}"
                )
            }
            Err(e) => {
                assert!(!boundary, "{rel}: cut at record boundary {cut} failed: {e}");
                // The sniffer needs the record header and a whole first tag (two bytes here).
                let sniffable = cut >= first_start + first_header + 2;
                match e.kind() {
                    ErrorKind::Truncated { .. } => {}
                    ErrorKind::UnsupportedFormat { .. } if !sniffable => {}
                    other => panic!("{rel}: cut at {cut}: {other:?}"),
                }
            }
        }
    }
    assert_eq!(
        samples(
            &crate::decode(&bytes, None, &crate::Limits::default())
                .unwrap()
                .profile
        ),
        samples(&full.profile)
    );
}

#[test]
fn every_prefix_of_a_plain_trace() {
    check_every_prefix("perfetto/synthetic/perf_basic.pftrace");
}

#[test]
fn every_prefix_of_a_trace_with_compressed_packets() {
    check_every_prefix("perfetto/synthetic/perf_basic_compressed.pftrace");
}

/// A gzip file cut anywhere before its end is truncated (below two bytes the gzip magic is
/// not there, and the bytes are not a trace either).
#[test]
fn every_prefix_of_a_gzip_trace() {
    let bytes = fixture("perfetto/synthetic/perf_basic.pftrace.gz");
    for cut in 0..bytes.len() {
        let kind = error_kind(&bytes[..cut]);
        if cut < 2 {
            assert!(
                matches!(kind, ErrorKind::UnsupportedFormat { .. }),
                "cut at {cut}: {kind:?}"
            );
        } else {
            assert!(
                matches!(kind, ErrorKind::Truncated { .. }),
                "cut at {cut}: {kind:?}"
            );
        }
    }
    assert!(crate::decode(&bytes, None, &crate::Limits::default()).is_ok());
}

// ---- malformed records ------------------------------------------------------------------

#[test]
fn packet_bytes_that_do_not_decode_are_malformed() {
    let bad_bodies: [&[u8]; 3] = [
        // interned_data (field 12) claims 5 bytes, 1 follows.
        &[0x62, 0x05, 0x08],
        // timestamp, then a field with the invalid wire type 7.
        &[0x40, 0x01, 0x0f],
        // timestamp, then a varint of 11 bytes.
        &[
            0x40, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
        ],
    ];
    for body in bad_bodies {
        let kind = error_kind(&record(body));
        assert!(
            matches!(kind, ErrorKind::Malformed { .. }),
            "{body:x?}: {kind:?}"
        );
    }
    // The same after a good packet: the offset points at the second record.
    let good = sample_trace(good_interned(), 1);
    let mut bytes = good.clone();
    bytes.extend(record(&[0x62, 0x05, 0x08]));
    match error_kind(&bytes) {
        ErrorKind::Malformed { offset, .. } => assert_eq!(offset, good.len() as u64),
        other => panic!("{other:?}"),
    }
}

#[test]
fn top_level_fields_with_unsupported_wire_types_are_malformed() {
    let good = sample_trace(good_interned(), 1);
    // Field 2 with wire types 3 and 4 (groups), 6 and 7 (undefined).
    for tag in [0x13u8, 0x14, 0x16, 0x17] {
        let mut bytes = good.clone();
        bytes.push(tag);
        bytes.extend(good.iter().take(4));
        let kind = error_kind(&bytes);
        assert!(
            matches!(kind, ErrorKind::Malformed { .. }),
            "tag {tag:#x}: {kind:?}"
        );
    }
    // Trace.packet (field 1) must be length-delimited; field number 0 does not exist.
    for extra in [&[0x08u8, 0x01][..], &[0x02, 0x00][..]] {
        let mut bytes = good.clone();
        bytes.extend(extra);
        let kind = error_kind(&bytes);
        assert!(
            matches!(kind, ErrorKind::Malformed { .. }),
            "{extra:x?}: {kind:?}"
        );
    }
}

/// trace_processor skips other top-level fields of the wire types it knows.
#[test]
fn other_top_level_fields_are_skipped() {
    let good = sample_trace(good_interned(), 1);
    let want = samples(
        &crate::decode(&good, None, &crate::Limits::default())
            .unwrap()
            .profile,
    );
    let mut bytes = Vec::new();
    for (i, span) in record_spans(&good).into_iter().enumerate() {
        bytes.extend(&good[span.0..span.2]);
        match i {
            0 => bytes.extend([0x10, 0x96, 0x01]), // field 2, varint
            _ => bytes.extend([0x19, 1, 2, 3, 4, 5, 6, 7, 8]), // field 3, fixed64
        }
    }
    bytes.extend([0x25, 1, 2, 3, 4]); // field 4, fixed32
    bytes.extend([0x2a, 0x02, 0xaa, 0xbb]); // field 5, bytes
    bytes.extend(record(&[])); // an empty packet
    let got = samples(
        &crate::decode(&bytes, None, &crate::Limits::default())
            .unwrap()
            .profile,
    );
    assert_eq!(got, want);
    assert_eq!(got.len(), 1);
}

// ---- dangling interned ids --------------------------------------------------------------

/// Decodes, expecting one sample without a stack and `stat` counted once.
fn check_unresolved(interned: InternedData, callstack_iid: u64, stat_name: &str) {
    let d = crate::decode(
        &sample_trace(interned, callstack_iid),
        None,
        &crate::Limits::default(),
    )
    .unwrap_or_else(|e| panic!("{stat_name}: {e}"));
    let ss = samples(&d.profile);
    assert_eq!(ss.len(), 1, "{stat_name}: the sample is kept");
    assert_eq!(ss[0].stack, None, "{stat_name}");
    assert_eq!(
        (ss[0].time, ss[0].tid),
        (Some(2000), Some(7)),
        "{stat_name}"
    );
    assert_eq!(
        stat(&d.profile, stat_name),
        1,
        "{stat_name}: stats {:?}",
        d.profile.stats
    );
}

#[test]
fn resolvable_callstack_baseline() {
    let d = crate::decode(
        &sample_trace(good_interned(), 1),
        None,
        &crate::Limits::default(),
    )
    .unwrap();
    let ss = samples(&d.profile);
    assert_eq!(ss.len(), 1);
    let leaf = ss[0].leaf().expect("stack");
    assert_eq!(leaf.function.as_deref(), Some("main"));
    assert_eq!(leaf.image_path.as_deref(), Some("/libx.so"));
    assert!(d.profile.stats.is_empty(), "{:?}", d.profile.stats);
}

#[test]
fn callstack_referencing_a_missing_frame() {
    let mut i = good_interned();
    i.callstacks[0].frame_ids = vec![1, 77];
    check_unresolved(i, 1, "stackprofile_invalid_frame_id");
}

#[test]
fn frame_referencing_a_missing_mapping() {
    let mut i = good_interned();
    i.frames[0].mapping_id = Some(9);
    check_unresolved(i, 1, "stackprofile_invalid_mapping_id");
}

#[test]
fn frame_referencing_a_missing_function_name() {
    let mut i = good_interned();
    i.frames[0].function_name_id = Some(9);
    check_unresolved(i, 1, "stackprofile_invalid_string_id");
}

#[test]
fn sample_referencing_an_unknown_callstack() {
    check_unresolved(good_interned(), 5, "stackprofile_invalid_callstack_id");
}

// ---- delta-encoded time ----------------------------------------------------------------

/// A Chrome StreamingProfilePacket whose delta overflows the sequence clock: like
/// trace_processor, the packet is dropped (stat `streaming_profile_invalid_timestamp`), the
/// clock stays invalid for later packets (counted again) until a ThreadDescriptor sets a new
/// reference time, and no sample gets an overflowed time.
#[test]
fn streaming_profile_clock_overflow() {
    let descriptor = |reference_us: i64| {
        let mut p = packet(1);
        p.data = Some(Data::ThreadDescriptor(ThreadDescriptor {
            pid: Some(5),
            tid: Some(6),
            reference_timestamp_us: Some(reference_us),
            ..Default::default()
        }));
        p
    };
    let streaming = |delta_us: i64| {
        let mut p = packet(1);
        p.sequence_flags = Some(2);
        p.data = Some(Data::StreamingProfilePacket(StreamingProfilePacket {
            callstack_iid: vec![1],
            timestamp_delta_us: vec![delta_us],
            process_priority: None,
        }));
        p
    };
    let mut start = descriptor(1000);
    start.sequence_flags = Some(1);
    start.interned_data = Some(good_interned());
    let trace = Trace {
        packet: vec![
            start,
            streaming(i64::MAX), // 1 ms + i64::MAX µs overflows
            streaming(10),       // the clock is still invalid
            descriptor(2000),    // new reference: 2 ms
            streaming(10),
        ],
    };
    let d = crate::decode(&trace.encode_to_vec(), None, &crate::Limits::default()).unwrap();
    let ss = samples(&d.profile);
    assert_eq!(ss.len(), 1, "{ss:?}");
    assert_eq!(ss[0].time, Some(2_010_000));
    assert_eq!((ss[0].pid, ss[0].tid), (Some(5), Some(6)));
    assert_eq!(
        ss[0].leaf().and_then(|f| f.function.as_deref()),
        Some("main")
    );
    assert_eq!(
        stat(&d.profile, "streaming_profile_invalid_timestamp"),
        2,
        "{:?}",
        d.profile.stats
    );
}

// ---- compressed packets -----------------------------------------------------------------

#[test]
fn compressed_packets_nested_beyond_the_limit() {
    let mut trace = sample_trace(good_interned(), 1);
    for _ in 0..MAX_COMPRESSION_DEPTH {
        trace = compressed_record(zlib(&trace));
    }
    let d = crate::decode(&trace, None, &crate::Limits::default())
        .expect("nesting at the limit decodes");
    assert_eq!(samples(&d.profile).len(), 1);
    let trace = compressed_record(zlib(&trace));
    match error_kind(&trace) {
        ErrorKind::LimitExceeded { limit, max } => {
            assert_eq!(max, MAX_COMPRESSION_DEPTH);
            assert_eq!(limit, "max_packet_nesting");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn corrupt_zlib_in_compressed_packets() {
    let good = zlib(&sample_trace(good_interned(), 1));
    let mut bad_block = good.clone();
    bad_block[2] = 0xff; // first deflate block header: reserved block type 3
    let payloads: Vec<(&str, Vec<u8>)> = vec![
        ("reserved block type", bad_block),
        (
            "no zlib header",
            b"this is not a zlib stream at all".to_vec(),
        ),
    ];
    for (what, payload) in payloads {
        match error_kind(&compressed_record(payload)) {
            ErrorKind::Decompression { container } => assert_eq!(container, "zlib", "{what}"),
            other => panic!("{what}: {other:?}"),
        }
    }
    // A stream cut short: the inflated data ends inside a packet record.
    let cut = good[..good.len() / 2].to_vec();
    let kind = error_kind(&compressed_record(cut));
    assert!(matches!(kind, ErrorKind::Truncated { .. }), "{kind:?}");
}

#[test]
fn corrupt_zstd_in_compressed_packets() {
    let p = TracePacket {
        data: Some(Data::ZstdCompressedPackets(
            b"not zstd data at all".to_vec(),
        )),
        ..Default::default()
    };
    match error_kind(&record(&p.encode_to_vec())) {
        ErrorKind::Decompression { container } => assert_eq!(container, "zstd"),
        other => panic!("{other:?}"),
    }
}

/// A zlib `compressed_packets` bomb: 300 MiB of inflated data (one record announcing a
/// 300 MiB packet, then the zeros) in ~300 KB. Inflating all of it takes seconds in a debug
/// build, so the bomb is built to trip early: the packet-size limit (64 MiB) stops the
/// decoder at the record header. The inflated-size limit itself is exercised cheaply by
/// [`zstd_compressed_packets_bomb`].
#[test]
fn compressed_packets_bomb() {
    const ZEROS: u64 = 300 * MIB;
    let zeros_piece = deflate_piece(&vec![0u8; MIB as usize]);
    let header = padding_packet_header(ZEROS);
    let mut adler = Adler32::new();
    let mut z = vec![0x78, 0xda];
    z.extend(deflate_piece(&header));
    adler.update(&header);
    for _ in 0..ZEROS / MIB {
        z.extend(&zeros_piece);
    }
    adler.zeros(ZEROS);
    z.extend(deflate_end());
    z.extend(adler.sum().to_be_bytes());
    assert!(header.len() as u64 + ZEROS > MAX_INFLATED_PACKET_BYTES);
    assert!(
        (z.len() as u64) < MIB,
        "the bomb is small: {} bytes",
        z.len()
    );

    match error_kind(&compressed_record(z)) {
        ErrorKind::LimitExceeded { limit, max } => {
            assert_eq!((limit, max), ("max_packet_bytes", MAX_PACKET_BYTES));
        }
        other => panic!("{other:?}"),
    }
}

/// A zstd frame of raw blocks (`bytes`) and RLE blocks (`zeros` zero bytes), hand-built: no
/// content size, 128 KiB window, no checksum.
struct ZstdFrame(Vec<u8>);

impl ZstdFrame {
    const MAX_BLOCK: u64 = 128 * 1024;

    fn new() -> Self {
        ZstdFrame(vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38])
    }

    fn block(&mut self, last: bool, block_type: u32, size: u64) {
        let v = u32::from(last) | (block_type << 1) | ((size as u32) << 3);
        self.0.extend(&v.to_le_bytes()[..3]);
    }

    fn bytes(&mut self, data: &[u8]) {
        self.block(false, 0, data.len() as u64);
        self.0.extend(data);
    }

    fn zeros(&mut self, mut n: u64) {
        while n > 0 {
            let size = n.min(Self::MAX_BLOCK);
            self.block(false, 1, size);
            self.0.push(0);
            n -= size;
        }
    }

    fn finish(mut self) -> Vec<u8> {
        self.block(true, 0, 0);
        self.0
    }
}

/// `zstd_compressed_packets` inflating to 280 MiB in ~10 KB: 70 valid packets of 4 MiB each
/// (a timestamp and an unknown field of zeros). The ratio limit stops the decoder after a few
/// MiB; without it, the inflated-size limit (256 MiB) must.
#[test]
fn zstd_compressed_packets_bomb() {
    const PACKET_PAYLOAD: u64 = 4 * MIB;
    const PACKETS: u64 = 70;
    let header = padding_packet_header(PACKET_PAYLOAD);
    let mut frame = ZstdFrame::new();
    for _ in 0..PACKETS {
        frame.bytes(&header);
        frame.zeros(PACKET_PAYLOAD);
    }
    let z = frame.finish();
    assert!(PACKETS * (header.len() as u64 + PACKET_PAYLOAD) > MAX_INFLATED_PACKET_BYTES);
    assert!(z.len() < 16 * 1024, "the bomb is small: {} bytes", z.len());
    // The frame is valid zstd: the first packet inflates as built.
    let mut first = vec![0u8; header.len()];
    std::io::Read::read_exact(
        &mut zstd::stream::read::Decoder::new(&z[..]).unwrap(),
        &mut first,
    )
    .unwrap();
    assert_eq!(first, header);

    let p = TracePacket {
        data: Some(Data::ZstdCompressedPackets(z)),
        ..Default::default()
    };
    let bomb = record(&p.encode_to_vec());
    let defaults = Limits::default();
    assert_eq!(
        error_kind(&bomb),
        ErrorKind::LimitExceeded {
            limit: "max_decompression_ratio",
            max: defaults.max_decompression_ratio
        }
    );
    let without_ratio = Limits {
        max_decompression_ratio: u64::MAX,
        ..defaults
    };
    assert_eq!(
        error_kind_within(&bomb, &without_ratio),
        ErrorKind::LimitExceeded {
            limit: "max_inflated_packet_bytes",
            max: MAX_INFLATED_PACKET_BYTES
        }
    );
}

#[test]
fn packet_larger_than_the_limit() {
    // A record header announcing 64 MiB + 1; the body starts like a real packet.
    let mut bytes = vec![0x0a];
    bytes.extend(varint(MAX_PACKET_BYTES + 1));
    bytes.extend([0x40, 0x01, 0x50, 0x01]);
    match error_kind(&bytes) {
        ErrorKind::LimitExceeded { limit, max } => {
            assert_eq!((limit, max), ("max_packet_bytes", MAX_PACKET_BYTES));
        }
        other => panic!("{other:?}"),
    }
}

/// CRC-32 of `n` copies of a block whose CRC is `block`, by doubling.
fn crc_of_repeats(block: &Crc, mut n: u64) -> Crc {
    let mut result = Crc::new();
    let mut power = Crc::new();
    power.combine(block);
    while n > 0 {
        if n & 1 == 1 {
            result.combine(&power);
        }
        let mut doubled = Crc::new();
        doubled.combine(&power);
        doubled.combine(&power);
        power = doubled;
        n >>= 1;
    }
    result
}

/// A whole-file gzip bomb: a valid gzip member inflating to more than the 4 GiB input limit,
/// made of one record header announcing a 5 GiB packet and 5 GiB of zeros. The decoder must
/// refuse it without inflating it (the packet-size limit trips on the header).
#[test]
fn whole_file_gzip_bomb() {
    const CHUNKS: u64 = 5 * 1024; // of 1 MiB
    let zeros = vec![0u8; MIB as usize];
    let zeros_piece = deflate_piece(&zeros);
    let header = padding_packet_header(CHUNKS * MIB);
    let mut gz = vec![0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0x02, 0xff];
    gz.extend(deflate_piece(&header));
    for _ in 0..CHUNKS {
        gz.extend(&zeros_piece);
    }
    gz.extend(deflate_end());
    let mut crc = Crc::new();
    crc.update(&header);
    let mut zeros_crc = Crc::new();
    zeros_crc.update(&zeros);
    crc.combine(&crc_of_repeats(&zeros_crc, CHUNKS));
    let total = header.len() as u64 + CHUNKS * MIB;
    assert!(total > MAX_DECOMPRESSED_BYTES);
    gz.extend(crc.sum().to_le_bytes());
    gz.extend((total as u32).to_le_bytes());

    match error_kind(&gz) {
        ErrorKind::LimitExceeded { .. } => {}
        other => panic!("{other:?}"),
    }
}
