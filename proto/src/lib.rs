//! Generated protobuf types. Only the format decoders in the `proflake` crate use them;
//! nothing generated appears in that crate's public API.

/// The Perfetto and pprof schemas above, as a serialized `google.protobuf.FileDescriptorSet`.
pub const PERFETTO_PPROF_DESCRIPTORS: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/perfetto_pprof.binpb"));

/// The OTLP schemas, as a serialized `google.protobuf.FileDescriptorSet`.
pub const OTLP_DESCRIPTORS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/otlp.binpb"));

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

/// OTLP profiles: the v1.10/v1.11 messages under their upstream package paths, and the v1.8 and
/// v1.9 numberings of `Profile`/`Sample` under `legacy`. The module tree mirrors the protobuf
/// packages because the generated code refers across packages by relative paths.
#[allow(missing_docs, clippy::all)]
pub mod otlp {
    pub mod opentelemetry {
        pub mod proto {
            pub mod common {
                pub mod v1 {
                    include!(concat!(
                        env!("OUT_DIR"),
                        "/opentelemetry.proto.common.v1.rs"
                    ));
                }
            }
            pub mod resource {
                pub mod v1 {
                    include!(concat!(
                        env!("OUT_DIR"),
                        "/opentelemetry.proto.resource.v1.rs"
                    ));
                }
            }
            pub mod profiles {
                pub mod v1development {
                    include!(concat!(
                        env!("OUT_DIR"),
                        "/opentelemetry.proto.profiles.v1development.rs"
                    ));
                }
            }
            pub mod collector {
                pub mod profiles {
                    pub mod v1development {
                        include!(concat!(
                            env!("OUT_DIR"),
                            "/opentelemetry.proto.collector.profiles.v1development.rs"
                        ));
                    }
                }
            }
        }
    }

    /// Pre-v1.10 numberings (proflake's own packages, not upstream names).
    pub mod legacy {
        pub mod v1_8 {
            include!(concat!(env!("OUT_DIR"), "/legacy.v1_8.rs"));
        }
        pub mod v1_9 {
            include!(concat!(env!("OUT_DIR"), "/legacy.v1_9.rs"));
        }
    }

    pub use opentelemetry::proto::collector::profiles::v1development as collector;
    pub use opentelemetry::proto::common::v1 as common;
    pub use opentelemetry::proto::profiles::v1development as profiles;
    pub use opentelemetry::proto::resource::v1 as resource;
}

/// Grafana Pyroscope's push API (`push.v1`, `types.v1`), as its SDKs send it.
#[allow(missing_docs, clippy::all)]
pub mod pyroscope {
    pub mod types {
        pub mod v1 {
            include!(concat!(env!("OUT_DIR"), "/types.v1.rs"));
        }
    }
    pub mod push {
        pub mod v1 {
            include!(concat!(env!("OUT_DIR"), "/push.v1.rs"));
        }
    }
}

/// `google.rpc.Status`, the error body of OTLP/HTTP.
#[allow(missing_docs, clippy::all)]
pub mod rpc {
    include!(concat!(env!("OUT_DIR"), "/google.rpc.rs"));
}
