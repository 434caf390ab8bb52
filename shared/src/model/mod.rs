//! The neutral in-memory profile model every decoder produces and every writer consumes.
//!
//! Modelled on samply's `fxprof-processed-profile`: one [`Profile`] builder that interns
//! strings, images, frames and stacks and hands out `Copy` handles; stacks form a prefix tree
//! (each node is a frame plus its caller's node), so shared call paths are stored once and the
//! table is already the call tree. Nothing here knows about input formats or cloud services.

mod build_id;
mod frame;
mod handles;
mod labels;
mod mark;
mod profile;
mod sample;
mod sample_table;
mod stack_nodes;
mod thread;

pub use build_id::{ids_from_build_id, BuildId};
pub use frame::{Frame, FrameAddress, FrameKind, Image, InlinedCall, SymbolStatus};
pub use handles::{
    FrameHandle, ImageHandle, LabelSetHandle, LinkHandle, ProcessHandle, SeriesHandle, StackHandle,
    StringHandle, ThreadHandle,
};
pub use labels::{Label, LabelValue, Link};
pub use mark::{Mark, MarkKind, MarkScope};
pub use profile::{Profile, Timestamps};
pub(crate) use sample::{
    checked_seconds_to_ns, count_unit_scale, scaled_count_unit, seconds_to_ns,
};
pub use sample::{time_unit_ns, CpuMode, Sample, Series, SeriesKind};
pub use sample_table::SampleTable;
pub use thread::{Process, Thread};
