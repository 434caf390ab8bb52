#!/usr/bin/env bash
# Every row of BENCHMARKS.md (release builds). PROFLAKE_BENCH_SAMPLES sets the size of the
# in-process bench's generated trace (default 400000 samples); BENCH_RUNS the runs per row of
# the large-input table (default 5). Arguments go to the in-process convert bench.
set -euo pipefail
cd "$(dirname "$0")/.."
# Throughput in process: every sample and fixture, decode and each writer apart.
cargo bench -p proflake --bench convert "$@"
# Symbolization: lookup-cache size, frames/s, rehydration against conversion (needs gcc).
cargo bench -p proflake --bench symbolize
# Large generated inputs as whole commands beside protobuf's upb parser (needs .venv: the
# README's test command makes it).
cargo build --release --locked -q -p proflake-cli -p proflake-tests --bin proflake --bin proflake-gen-inputs
target_dir="${CARGO_TARGET_DIR:-target}"
.venv/bin/python scripts/bench_big.py --proflake "$target_dir/release/proflake" \
  --gen "$target_dir/release/proflake-gen-inputs" --runs "${BENCH_RUNS:-5}" \
  --work "$target_dir/bench-inputs"
# speedscope, Firefox, V8 cpuprofile, perf script and gperftools' legacy profile, each against a
# Python parse-only baseline (orjson for JSON; needs .venv).
.venv/bin/python scripts/bench_formats.py --proflake "$target_dir/release/proflake" \
  --runs "${BENCH_RUNS:-5}" --work "$target_dir/bench-inputs"
# perf.data and JFR recorded here (perf, gcc and a JDK), beside `perf script` and `jfr print --json`.
.venv/bin/python scripts/bench_recordings.py --proflake "$target_dir/release/proflake" \
  --runs "${BENCH_RUNS:-3}" --work "$target_dir/bench-inputs"
# Exports and release comparison beside DuckDB reading the same tables: a 1 M-sample slice as
# pprof against DuckDB's GROUP BY of it; two releases of 1,000 uploads each compared, landing and
# lake, against DuckDB's scan of their rollups.
.venv/bin/python scripts/bench_export.py --proflake "$target_dir/release/proflake" \
  --gen "$target_dir/release/proflake-gen-inputs" --runs "${BENCH_RUNS:-3}" \
  --work "$target_dir/bench-inputs/export"
# The lake at fleet scale: publish, compaction and the analysts' queries over both tiers (needs
# .venv-lake, which the README's test command makes).
.venv-lake/bin/python scripts/bench_lake.py --proflake "$target_dir/release/proflake" \
  --uploads "${BENCH_LAKE_UPLOADS:-10000}"
# The HTTP receiver: proflake serve --no-convert under wrk (apt-get install wrk), and its memory
# while refusing gzip bombs.
command -v wrk >/dev/null || { sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"; $sudo apt-get install -y -qq wrk; }
.venv/bin/python scripts/bench_ingest.py --proflake "$target_dir/release/proflake"
# Cold start of the convert function, and the size of each release binary.
cargo build --release --locked -q -p proflake-convert -p proflake-rehydrate -p proflake-publish
.venv/bin/python scripts/cold_start.py "$target_dir/release/convert" --runs 20
ls -l "$target_dir"/release/{convert,rehydrate,publish,proflake} | awk '{printf "%-40s %6.1f MB\n", $9, $5 / 1e6}'
