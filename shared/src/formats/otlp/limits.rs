//! Safety limits of the OTLP decoder. Decoded messages are bounded by the input size already;
//! these bound what the input can make the model grow to.

/// Most model samples from one input. Timestamps-only samples expand to one model sample per
/// timestamp (8 input bytes become a model row ten times that size), so this is the bound
/// that matters for memory.
pub(super) const MAX_SAMPLES: u64 = 20_000_000;
/// Most requests in one length-prefixed stream.
pub(super) const MAX_STREAM_MESSAGES: usize = 1_000_000;
/// Most profcheck findings kept as text; the rest are only counted, so a capture with a bad
/// time range on every timestamp cannot fill memory with messages.
pub(super) const MAX_FINDINGS: usize = 1000;
