//! proflake: decode profiling data (Perfetto traces, ...) into one neutral model and write it
//! out as Sentry Sample v2 profile chunks.
//!
//! Data flows one way: bytes → [`decode`] → [`Profile`] → writers → store. The
//! [`convert`](pipeline) pipeline composes these steps.

#![warn(missing_docs)]

mod error;
mod formats;
mod model;
mod relay_rules;
mod symbol_names;

pub use error::{Error, ErrorKind, Result};
pub use formats::{decode, sniff, Container, Decoded, InputFormat, MAX_DECOMPRESSED_BYTES};
pub use model::{
    ids_from_build_id, CpuMode, Frame, FrameAddress, FrameHandle, FrameKind, Image, ImageHandle,
    InlinedCall, Process, ProcessHandle, Profile, Sample, Series, SeriesHandle, SeriesKind,
    StackHandle, StackNode, StringHandle, Thread, ThreadHandle, Timestamps,
};
