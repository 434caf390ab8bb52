#!/usr/bin/env bash
# Runs every check: formatting, lints, all tests, and a check that the committed sample traces
# are exactly what their generators write. Installs what it needs on a bare machine: Python
# test tools go into .venv (pinned in tests/requirements.txt); Rust crates come from crates.io.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

step "python tools (.venv)"
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r tests/requirements.txt

step "sample traces are reproducible"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
.venv/bin/python samples/perfetto/make_android_app.py "$tmp/android_app.pftrace"
cmp samples/perfetto/android_app.pftrace "$tmp/android_app.pftrace"
echo "samples/perfetto/android_app.pftrace matches its generator"

step "cargo fmt"
cargo fmt --all --check

step "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "benchmarks compile"
cargo bench --workspace --locked --no-run

step "cargo test"
cargo test --workspace --locked 2>&1 | tee "$tmp/test.log"

# One closing line for the whole run, summed over every test binary.
awk '/^test result:/ { p += $4; f += $6 } END { printf "\nall tests: %d passed, %d failed\n", p, f }' "$tmp/test.log"
