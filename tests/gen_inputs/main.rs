//! Deterministic generators of the large benchmark inputs (BENCHMARKS.md): the same arguments
//! always write the same bytes.
//!
//! ```text
//! proflake-gen-inputs perfetto OUT [SECONDS=60] [THREADS=16]  traced_perf-style, 1 kHz a thread
//! proflake-gen-inputs otlp OUT [SAMPLES=100000]                OTLP v1.10 request, binary
//! proflake-gen-inputs pprof OUT [MB=50]                        uncompressed pprof, Go-style
//! proflake-gen-inputs folded OUT [MB=100]                      folded stacks, py-spy style
//! proflake-gen-inputs descriptors DIR                          the schemas, for other parsers
//! ```

mod folded;
mod otlp;
mod perfetto;
mod pprof;

use std::process::ExitCode;

/// xorshift64: the generators' only source of variety.
pub(crate) struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

const USAGE: &str = "usage: proflake-gen-inputs perfetto OUT [SECONDS=60] [THREADS=16]
       proflake-gen-inputs otlp OUT [SAMPLES=100000]
       proflake-gen-inputs pprof OUT [MB=50]
       proflake-gen-inputs folded OUT [MB=100]
       proflake-gen-inputs descriptors DIR";

fn number(arg: Option<&String>, default: u64) -> Result<u64, String> {
    arg.map_or(Ok(default), |a| {
        a.parse().map_err(|_| format!("not a number: {a}"))
    })
}

fn write(path: &str, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(path, bytes).map_err(|e| format!("cannot write {path}: {e}"))?;
    eprintln!("{path}: {} bytes", bytes.len());
    Ok(())
}

fn run(args: &[String]) -> Result<(), String> {
    let (Some(kind), Some(path)) = (args.first(), args.get(1)) else {
        return Err(USAGE.into());
    };
    let mut out = Vec::new();
    match kind.as_str() {
        "perfetto" => {
            let shape = perfetto::Shape {
                seconds: number(args.get(2), 60)?,
                hz: 1000,
                threads: number(args.get(3), 16)?,
            };
            perfetto::trace(&shape, &mut out);
        }
        "otlp" => otlp::request(number(args.get(2), 100_000)?, &mut out),
        "pprof" => pprof::profile(number(args.get(2), 50)? as usize * 1_000_000, &mut out),
        "folded" => folded::stacks(number(args.get(2), 100)? as usize * 1_000_000, &mut out),
        "descriptors" => {
            std::fs::create_dir_all(path).map_err(|e| format!("cannot create {path}: {e}"))?;
            write(
                &format!("{path}/perfetto_pprof.binpb"),
                proflake_proto::PERFETTO_PPROF_DESCRIPTORS,
            )?;
            return write(
                &format!("{path}/otlp.binpb"),
                proflake_proto::OTLP_DESCRIPTORS,
            );
        }
        _ => return Err(USAGE.into()),
    }
    write(path, &out)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(2)
        }
    }
}
