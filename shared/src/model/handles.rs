//! Copy handles into the tables of one [`Profile`](super::Profile).
//!
//! A handle is only meaningful for the profile that issued it. The index inside is private to
//! the crate so that callers cannot forge handles or do arithmetic on them; `index()` exposes it
//! read-only for writers that lay tables out by position.
//!
//! A handle holds its index plus one, so that `Option` of a handle is as small as the handle:
//! a sample holds several, and a trace holds millions of samples.

use std::num::NonZeroU32;

macro_rules! handle {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(NonZeroU32);

        impl $name {
            /// Position of the row in its table (dense, starting at 0).
            pub fn index(self) -> usize {
                self.0.get() as usize - 1
            }

            /// The handle of row `index`.
            pub(crate) fn from_index(index: usize) -> Self {
                // The decoders' limits keep every table far below 2^32 - 1 rows.
                let n = u32::try_from(index + 1).expect("model table exceeds u32 rows");
                $name(NonZeroU32::new(n).expect("index + 1 is never 0"))
            }
        }
    };
}

handle!(
    /// An interned string.
    StringHandle
);
handle!(
    /// A loaded image (executable, shared library, kernel, dex/oat file).
    ImageHandle
);
handle!(
    /// A deduplicated frame.
    FrameHandle
);
handle!(
    /// A node of the stack prefix tree: a frame plus the stack of its caller.
    StackHandle
);
handle!(
    /// A process.
    ProcessHandle
);
handle!(
    /// A thread of one process.
    ThreadHandle
);
handle!(
    /// A sample series: what was sampled (CPU time, wall time, page faults, ...).
    SeriesHandle
);
handle!(
    /// A deduplicated set of sample labels.
    LabelSetHandle
);
handle!(
    /// A deduplicated trace link.
    LinkHandle
);
