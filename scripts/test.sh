#!/usr/bin/env bash
# Runs every check: formatting, lints (Rust and the infra template), all tests (the end-to-end
# suite against moto server included), a check that the committed sample traces are exactly
# what their generators write, and a short fuzzing run of every decoder. Installs what it needs on a bare machine: Python
# test tools go into .venv (pinned in tests/requirements.txt), the lake tests' DuckDB 1.4.4 and its delta
# extension into .venv-lake (tests/lake/requirements.txt); Rust crates come from crates.io.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

step "machine: /dev/null is the null device"
# Cargo probes rustc with a program read from stdin, and build scripts send their probes' errors
# to /dev/null. Where /dev/null is a plain file, one build's errors become the next build's
# program and every later cargo command fails, so repair it before anything is built.
if [ ! -c /dev/null ]; then
  echo "/dev/null is not a character device ($(stat -c %F /dev/null 2>&1)); recreating it"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo rm -f /dev/null
  $sudo mknod -m 666 /dev/null c 1 3
fi
[ -c /dev/null ] || { echo "error: /dev/null is still not a character device" >&2; exit 1; }

# A check run builds everything once: incremental state would only add gigabytes of disk.
export CARGO_INCREMENTAL=0
echo "disk: $(df -h . | awk 'NR == 2 { print $4 " free of " $2 }')"

step "python tools (.venv)"
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r tests/requirements.txt

step "native tools: gcc and binutils (symbol tests), dump_syms (.tools)"
# The symbol tests build a C library and check every frame against addr2line.
if ! command -v gcc >/dev/null || ! command -v addr2line >/dev/null || ! command -v objcopy >/dev/null; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq && $sudo apt-get install -y -qq gcc binutils
fi
# Mozilla's dump_syms writes the Breakpad files the Breakpad test compares with the ELF.
if [ ! -x .tools/bin/dump_syms ]; then
  cargo install --quiet --locked dump_syms --version 2.3.9 --root .tools
fi

step "sample traces are reproducible"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
.venv/bin/python samples/perfetto/make_android_app.py "$tmp/android_app.pftrace"
cmp samples/perfetto/android_app.pftrace "$tmp/android_app.pftrace"
echo "samples/perfetto/android_app.pftrace matches its generator"
.venv/bin/python samples/sentry/make_envelope.py "$tmp/android_perfetto.envelope"
cmp samples/sentry/android_perfetto.envelope "$tmp/android_perfetto.envelope"
echo "samples/sentry/android_perfetto.envelope matches its generator"
python3 samples/chrome/make_claude_code.py "$tmp/claude_code.json"
cmp samples/chrome/claude_code.json "$tmp/claude_code.json"
for variant in snapshot truncated; do
  python3 samples/chrome/make_claude_code.py "$tmp/claude_code_$variant.json" "--$variant"
  cmp "tests/fixtures/chrome/claude_code_$variant.json" "$tmp/claude_code_$variant.json"
done
echo "samples/chrome/claude_code.json and its test variants match their generator"

step "infra: cfn-lint infra/template.yaml"
scripts/lint_infra.sh

step "cargo fmt"
cargo fmt --all --check

step "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "cargo doc (warnings denied)"
# The libraries' documentation, intra-doc links included: a link to a name the front door does
# not offer fails here. The command line's binary shares the library's name, so only libraries.
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --lib --locked


step "cargo test"
cargo test --workspace --locked 2>&1 | tee "$tmp/test.log"

step "benchmarks compile"
# In the test profile, on the dependencies the tests just built: this checks that every bench
# still builds. An optimized build would take longer than all the tests, and scripts/bench.sh
# makes one when the figures are wanted.
cargo test --workspace --locked --benches --no-run

step "DuckDB: docs/queries.sql on the stack tables of every sample"
# The debug CLI cargo test just built (built here too, to be sure it is current).
cargo build -q --locked -p proflake-cli
PROFLAKE_BIN="${CARGO_TARGET_DIR:-target}/debug/proflake" \
  .venv/bin/python tests/duckdb/test_queries.py 2>&1 | tee "$tmp/duckdb.log"

step "export: every format read by an independent reader, against DuckDB's totals"
# pprof through protobuf's Python runtime, OTLP through OpenTelemetry's own Python bindings,
# speedscope's documented fields, folded lines, the Firefox processed format's tables; then
# each export converted again. Reuses the debug CLI built above.
cargo build -q --locked -p proflake-tests --bin proflake-gen-inputs
PROFLAKE_BIN="${CARGO_TARGET_DIR:-target}/debug/proflake" \
  PROFLAKE_GEN_INPUTS="${CARGO_TARGET_DIR:-target}/debug/proflake-gen-inputs" \
  .venv/bin/python tests/export/test_export.py 2>&1 | tee "$tmp/export.log"

step "ingest: proflake serve against real clients (opentelemetry-proto, pyroscope-io)"
# OTLP/HTTP requests built with OpenTelemetry's own Python bindings, a live pyroscope-io program,
# Pyroscope's ingest API, every refusal, retries, 200 concurrent requests and a graceful stop,
# each checked in the tables with DuckDB. Reuses the debug CLI built above.
PROFLAKE_BIN="${CARGO_TARGET_DIR:-target}/debug/proflake" \
  .venv/bin/python tests/ingest/test_serve.py 2>&1 | tee "$tmp/ingest.log"

step "lake: Delta tables read by DuckDB 1.4.4's delta extension (.venv-lake)"
# The lake tier (proflake publish / compact) against the landing tables of the same stores, read by
# a reader that shares no code with the writer: the delta extension wheel fits only DuckDB 1.4.4,
# so it has a venv of its own (pinned in tests/lake/requirements.txt). Reuses the CLI built above.
if [ ! -x .venv-lake/bin/python ]; then
  python3 -m venv .venv-lake
fi
.venv-lake/bin/python -m pip install --quiet --disable-pip-version-check -r tests/lake/requirements.txt
PROFLAKE_BIN="${CARGO_TARGET_DIR:-target}/debug/proflake" \
  .venv-lake/bin/python tests/lake/test_lake.py 2>&1 | tee "$tmp/lake.log"

step "Glue: the template's lake and landing tables registered on moto, against docs/tables.md"
# Creates the Glue database and tables of infra/template.yaml on a moto server of its own and
# checks them against docs/tables.md's columns, with the publish function's event source, queue,
# schedules and the output bucket's manifest notification (routed through moto's S3).
.venv/bin/python tests/e2e/glue_tables.py 2>&1 | tee "$tmp/glue.log"

step "the compiled convert and ingest functions under cargo lambda watch, against moto"
cargo build -q --locked -p proflake-convert --bin convert
cargo build -q --locked -p proflake-ingest --bin ingest
PATH="$PWD/.venv/bin:$PATH" .venv/bin/python tests/e2e/lambda_watch.py

step "py-spy recording decodes to py-spy's sample count"
# A fresh recording of the committed workload (not byte-reproducible, so no cmp): the decoded
# total must equal the "Samples: N" py-spy prints. Reuses the debug CLI cargo test just built.
.venv/bin/py-spy record -r 100 -f raw --threads -o "$tmp/pyspy.folded" \
  -- .venv/bin/python samples/folded/workload.py >"$tmp/pyspy.log" 2>&1 ||
  { cat "$tmp/pyspy.log"; exit 1; }
pyspy_samples=$(sed -n 's/.*Samples: \([0-9][0-9]*\).*/\1/p' "$tmp/pyspy.log" | tail -n 1)
[ -n "$pyspy_samples" ] || { cat "$tmp/pyspy.log"; echo "py-spy printed no 'Samples: N'" >&2; exit 1; }
cargo run --locked -q -p proflake-cli -- inspect "$tmp/pyspy.folded" --json >"$tmp/pyspy.json"
.venv/bin/python - "$tmp/pyspy.json" "$pyspy_samples" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))["summary"]
expected = int(sys.argv[2])
total = sum(s["total_weight"] for s in summary["series"])
print(f"py-spy counted {expected} samples; proflake decoded a total weight of {total}")
sys.exit(0 if total == expected else 1)
PY

step "fuzz smoke: every target, ${FUZZ_SECONDS:-10} s each"
echo "disk: $(df -h . | awk 'NR == 2 { print $4 " free of " $2 }')"
# Coverage-guided fuzzing of every decoder and parser (tests/fuzz), seeded from the samples and
# fixtures: an input that panics, hangs or runs away with memory fails the run, which names it.
FUZZ_SECONDS=${FUZZ_SECONDS:-10} scripts/fuzz.sh

# One closing line for the whole run, summed over every test binary, the DuckDB, lake and Glue tests.
awk '/^test result:/ { p += $4; f += $6 }
     /^duckdb tests:/ { p += $3; f += $5 }
     /^lake tests:/ { p += $3; f += $5 }
     /^glue tests:/ { p += $3; f += $5 }
     /^ingest tests:/ { p += $3; f += $5 }
     END { printf "\nall tests: %d passed, %d failed\n", p, f }' "$tmp/test.log" "$tmp/duckdb.log" "$tmp/lake.log" "$tmp/glue.log" "$tmp/ingest.log"
