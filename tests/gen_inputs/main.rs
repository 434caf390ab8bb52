//! Deterministic generators of the large benchmark inputs (BENCHMARKS.md): the same arguments
//! always write the same bytes.
//!
//! ```text
//! proflake-gen-inputs perfetto OUT [SECONDS] [THREADS]   traced_perf-style, 1 kHz per thread
//! ```

mod perfetto;

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

fn usage() -> ExitCode {
    eprintln!("usage: proflake-gen-inputs perfetto OUT [SECONDS=60] [THREADS=16]");
    ExitCode::from(2)
}

fn number(arg: Option<&String>, default: u64) -> Option<u64> {
    arg.map_or(Some(default), |a| a.parse().ok())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut out = Vec::new();
    let path = match (args.first().map(String::as_str), args.get(1)) {
        (Some("perfetto"), Some(path)) => {
            let (Some(seconds), Some(threads)) = (number(args.get(2), 60), number(args.get(3), 16))
            else {
                return usage();
            };
            let shape = perfetto::Shape {
                seconds,
                hz: 1000,
                threads,
            };
            perfetto::trace(&shape, &mut out);
            path
        }
        _ => return usage(),
    };
    if let Err(e) = std::fs::write(path, &out) {
        eprintln!("error: cannot write {path}: {e}");
        return ExitCode::FAILURE;
    }
    eprintln!("{path}: {} bytes", out.len());
    ExitCode::SUCCESS
}
