//! Copy handles into the tables of one [`Profile`](super::Profile).
//!
//! A handle is only meaningful for the profile that issued it. The index inside is private to
//! the crate so that callers cannot forge handles or do arithmetic on them; `index()` exposes it
//! read-only for writers that lay tables out by position.

macro_rules! handle {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub(crate) u32);

        impl $name {
            /// Position of the row in its table (dense, starting at 0).
            pub fn index(self) -> usize {
                self.0 as usize
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
