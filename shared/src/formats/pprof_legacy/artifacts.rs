//! Frames the profiler's own signal handling leaves in stacks, removed as `go tool pprof`
//! removes them, so that a stack here reads as it does there.
//!
//! The leaf of a record is the interrupted program counter, taken from the signal context; the
//! frames above it come from unwinding the stack the signal handler runs on, which can start
//! with the handler's own frames. pprof's legacy reader therefore:
//! - drops, up to twice, the second frame when nearly every record has the same one there (at
//!   most one record in 32 may differ): a frame every stack passes through right above its
//!   leaf is the signal trampoline, not a caller;
//! - drops a second frame equal to the leaf: the handler recorded the interrupted address both
//!   from the context and from unwinding.
//!
//! Addresses are kept as recorded otherwise: callers stay return addresses, which
//! symbolization moves back into the call instruction itself.

use super::words::{Layout, Record};

/// Stat: frames dropped as the profiler's signal-handler frames.
pub(super) const SIGNAL_FRAMES: &str = "pprof_legacy_signal_frames";
/// Stat: second frames dropped for repeating the leaf.
pub(super) const REPEATED_LEAF: &str = "pprof_legacy_repeated_leaf";

/// How many second frames pprof looks at for signal-handler frames.
const MAX_SIGNAL_FRAMES: usize = 2;
/// One record in this many may lack the signal-handler frame.
const SIMILAR_RECORDS: usize = 32;

/// The addresses found to be signal-handler frames, in the order they are dropped.
#[derive(Debug, Default)]
pub(super) struct SignalFrames {
    addresses: Vec<u64>,
}

impl SignalFrames {
    /// Finds them over every record, as pprof does: each round counts the second frame of
    /// every record (once the earlier rounds' frames are dropped) and takes the address that
    /// at least all records but one in 32 have there.
    pub fn find(bytes: &[u8], layout: Layout, records: &[Record]) -> SignalFrames {
        let mut found = SignalFrames::default();
        let needed = records.len() - records.len() / SIMILAR_RECORDS;
        let mut tally: rustc_hash::FxHashMap<u64, usize> = rustc_hash::FxHashMap::default();
        for _ in 0..MAX_SIGNAL_FRAMES {
            tally.clear();
            for r in records {
                if let Some(second) = found.second(bytes, layout, r).1 {
                    *tally.entry(second).or_default() += 1;
                }
            }
            match tally.iter().find(|&(_, &n)| n >= needed) {
                Some((&address, _)) => found.addresses.push(address),
                None => break,
            }
        }
        found
    }

    /// How many frames after the leaf are signal-handler frames in `record`, and the second
    /// frame that remains once they are dropped.
    fn second(&self, bytes: &[u8], layout: Layout, record: &Record) -> (usize, Option<u64>) {
        let pc = |i: usize| layout.word(bytes, record.pcs + i * layout.width);
        let mut at = 1;
        for &address in &self.addresses {
            if at < record.depth && pc(at) == Some(address) {
                at += 1;
            }
        }
        (at - 1, (at < record.depth).then(|| pc(at)).flatten())
    }

    /// The record's program counters, leaf first, without the frames pprof drops, into
    /// `out`; returns how many signal-handler frames and repeated leaves were dropped.
    pub fn stack(
        &self,
        bytes: &[u8],
        layout: Layout,
        record: &Record,
        out: &mut Vec<u64>,
    ) -> (usize, usize) {
        out.clear();
        let (signal, second) = self.second(bytes, layout, record);
        let mut pcs = layout.words(bytes, record.pcs, record.depth);
        out.extend(pcs.next());
        let repeated = usize::from(second.is_some() && second == out.first().copied());
        out.extend(pcs.skip(signal + repeated));
        (signal, repeated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 64-bit little-endian profile body (no header) of records `(count, pcs)`.
    fn records(stacks: &[&[u64]]) -> (Vec<u8>, Vec<Record>) {
        let mut bytes = Vec::new();
        let mut records = Vec::new();
        for pcs in stacks {
            let offset = bytes.len();
            bytes.extend(1u64.to_le_bytes());
            bytes.extend((pcs.len() as u64).to_le_bytes());
            for pc in *pcs {
                bytes.extend(pc.to_le_bytes());
            }
            records.push(Record {
                offset,
                count: 1,
                depth: pcs.len(),
                pcs: offset + 16,
            });
        }
        (bytes, records)
    }

    fn stacks(stacks: &[&[u64]]) -> Vec<Vec<u64>> {
        let (bytes, records) = records(stacks);
        let layout = Layout {
            width: 8,
            big_endian: false,
        };
        let signal = SignalFrames::find(&bytes, layout, &records);
        let mut out = Vec::new();
        records
            .iter()
            .map(|r| {
                signal.stack(&bytes, layout, r, &mut out);
                out.clone()
            })
            .collect()
    }

    #[test]
    fn a_second_frame_every_record_shares_is_dropped_twice_at_most() {
        let got = stacks(&[&[1, 90, 91, 92, 5], &[2, 90, 91, 92, 6], &[3, 90, 91, 7]]);
        assert_eq!(got, [vec![1, 92, 5], vec![2, 92, 6], vec![3, 7]]);
    }

    #[test]
    fn a_second_frame_some_records_lack_stays() {
        let got = stacks(&[&[1, 90, 5], &[2, 90, 6], &[3, 80, 7]]);
        assert_eq!(got, [vec![1, 90, 5], vec![2, 90, 6], vec![3, 80, 7]]);
    }

    #[test]
    fn a_repeated_leaf_is_dropped() {
        let got = stacks(&[&[1, 1, 5], &[2, 3, 6], &[4, 7]]);
        assert_eq!(got, [vec![1, 5], vec![2, 3, 6], vec![4, 7]]);
    }
}
