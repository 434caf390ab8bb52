//! Compiles the project's .proto files with protox (pure Rust), so no system `protoc` is needed.

/// OTLP files, relative to their own include root `otlp/` (they import each other by the
/// upstream paths, `opentelemetry/proto/...`).
const OTLP_FILES: &[&str] = &[
    "opentelemetry/proto/common/v1/common.proto",
    "opentelemetry/proto/resource/v1/resource.proto",
    "opentelemetry/proto/profiles/v1development/profiles.proto",
    "opentelemetry/proto/collector/profiles/v1development/profiles_service.proto",
    "legacy/v1_8.proto",
    "legacy/v1_9.proto",
];

/// The receiver's files, relative to their include root `receive/`.
const RECEIVE_FILES: &[&str] = &[
    "pyroscope/types/v1/types.proto",
    "pyroscope/push/v1/push.proto",
    "google/rpc/status.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = ["perfetto/trace.proto", "pprof/profile.proto"];
    for f in &files {
        println!("cargo:rerun-if-changed={f}");
    }
    let descriptors = protox::compile(files, ["."])?;
    write_descriptors("perfetto_pprof.binpb", &descriptors)?;
    prost_build::Config::new().compile_fds(descriptors)?;

    // A separate compilation: with both `.` and `otlp` as include roots every OTLP file would
    // be reachable under two names.
    for f in OTLP_FILES {
        println!("cargo:rerun-if-changed=otlp/{f}");
    }
    let descriptors = protox::compile(OTLP_FILES, ["otlp"])?;
    write_descriptors("otlp.binpb", &descriptors)?;
    prost_build::Config::new().compile_fds(descriptors)?;

    // What the HTTP receiver reads and answers: Pyroscope's push API and google.rpc.Status.
    for f in RECEIVE_FILES {
        println!("cargo:rerun-if-changed=receive/{f}");
    }
    let descriptors = protox::compile(RECEIVE_FILES, ["receive"])?;
    prost_build::Config::new().compile_fds(descriptors)?;
    Ok(())
}

/// The compiled schema as a serialized `FileDescriptorSet`, for tools outside Rust (the
/// benchmarks parse the same messages with protobuf's own Python parser).
fn write_descriptors(
    name: &str,
    descriptors: &prost_types::FileDescriptorSet,
) -> Result<(), Box<dyn std::error::Error>> {
    use prost::Message;
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?).join(name);
    std::fs::write(out, descriptors.encode_to_vec())?;
    Ok(())
}
