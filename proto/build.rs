//! Compiles the project's .proto files with protox (pure Rust), so no system `protoc` is needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = ["perfetto/trace.proto", "pprof/profile.proto"];
    for f in &files {
        println!("cargo:rerun-if-changed={f}");
    }
    let descriptors = protox::compile(files, ["."])?;
    prost_build::Config::new().compile_fds(descriptors)?;
    Ok(())
}
