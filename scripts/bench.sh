#!/usr/bin/env bash
# Conversion throughput benchmarks (release build). PROFLAKE_BENCH_SAMPLES sets the size of the
# generated trace (default 400000 samples).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench -p proflake --bench convert "$@"
# Symbolization: lookup-cache size, frames/s, rehydration against conversion (needs gcc).
cargo bench -p proflake --bench symbolize
