//! Safety limits of the folded decoder. Real producers stay far below them: py-spy caps a
//! stack at 4096 frames, which with long paths is a few hundred KB on one line.

/// Longest line, in bytes, line ending excluded.
pub(super) const MAX_LINE_BYTES: usize = 1 << 20;
/// Most lines with a count (each becomes one sample).
pub(super) const MAX_SAMPLES: u64 = 20_000_000;
/// Most frames in one stack; deeper stacks are counted and kept without frames. Deeper than
/// py-spy's cap and perf's default `kernel.perf_event_max_stack` (127) by far.
pub(super) const MAX_STACK_DEPTH: usize = 8192;
/// Most nodes in the stack prefix tree (distinct call paths), which bounds memory: without it
/// a 4 GiB input of ever-different deep stacks would build billions of nodes.
pub(super) const MAX_STACK_NODES: usize = 20_000_000;
