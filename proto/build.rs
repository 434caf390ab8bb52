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

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = ["perfetto/trace.proto", "pprof/profile.proto"];
    for f in &files {
        println!("cargo:rerun-if-changed={f}");
    }
    let descriptors = protox::compile(files, ["."])?;
    prost_build::Config::new().compile_fds(descriptors)?;

    // A separate compilation: with both `.` and `otlp` as include roots every OTLP file would
    // be reachable under two names.
    for f in OTLP_FILES {
        println!("cargo:rerun-if-changed=otlp/{f}");
    }
    let descriptors = protox::compile(OTLP_FILES, ["otlp"])?;
    prost_build::Config::new().compile_fds(descriptors)?;
    Ok(())
}
