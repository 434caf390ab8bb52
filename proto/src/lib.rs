//! Generated protobuf types. Only the format decoders in the `proflake` crate use them;
//! nothing generated appears in that crate's public API.

/// Perfetto trace packets: the subset proflake reads (`perfetto.protos`).
#[allow(missing_docs, clippy::all)]
pub mod perfetto {
    include!(concat!(env!("OUT_DIR"), "/perfetto.protos.rs"));
}

/// pprof profiles (`perftools.profiles`).
#[allow(missing_docs, clippy::all)]
pub mod pprof {
    include!(concat!(env!("OUT_DIR"), "/perftools.profiles.rs"));
}
