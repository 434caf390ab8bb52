//! Safety limits of the Perfetto decoder. Each is far above what real producers write
//! (traced_perf packets are a few KB, compressed packets stay below 512 KB) and each has an
//! adversarial test.

/// Largest single `TracePacket` record.
pub(super) const MAX_PACKET_BYTES: u64 = 64 << 20;
/// Largest inflated `compressed_packets` payload.
pub(super) const MAX_INFLATED_PACKET_BYTES: u64 = 256 << 20;
/// Deepest nesting of compressed packets inside compressed packets.
pub(super) const MAX_COMPRESSION_DEPTH: u32 = 4;
/// Most trace packets, counting empty and nested ones.
pub(super) const MAX_PACKETS: u64 = 50_000_000;
/// Most samples in one trace.
pub(super) const MAX_SAMPLES: u64 = 20_000_000;
/// Most writer sequences (`trusted_packet_sequence_id` values) with incremental state.
pub(super) const MAX_SEQUENCES: usize = 65_536;
/// Most interned entries alive at once, over all sequences.
pub(super) const MAX_INTERNED_ENTRIES: u64 = 20_000_000;
/// Most frames in one callstack; deeper callstacks are counted and left unresolved.
pub(super) const MAX_CALLSTACK_DEPTH: usize = 8192;
/// Most path components joined into one mapping name.
pub(super) const MAX_PATH_COMPONENTS: usize = 256;
/// Most ClockSnapshot packets kept for clock conversion.
pub(super) const MAX_CLOCK_SNAPSHOTS: usize = 1_000_000;
/// Most symbol lines kept from `module_symbols` packets until the end of the trace.
pub(super) const MAX_MODULE_SYMBOL_LINES: u64 = 20_000_000;
