#!/usr/bin/env bash
# The flame graph of BENCHMARKS.md: `proflake convert` of the 60 s bench trace under perf, with
# DWARF call stacks, drawn by proflake itself. Needs perf and the bench inputs (scripts/bench.sh
# makes them). Usage: scripts/flamegraph.sh [OUT.svg]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/bench/convert-flamegraph.svg}
work=${CARGO_TARGET_DIR:-target}/flamegraph
mkdir -p "$work"
# A release build with line tables, unstripped, apart from the real release build.
CARGO_TARGET_DIR="$work/build" CARGO_PROFILE_RELEASE_DEBUG=line-tables-only \
  CARGO_PROFILE_RELEASE_STRIP=none cargo build --release --locked -q -p proflake-cli
bin=$work/build/release/proflake
trace=${CARGO_TARGET_DIR:-target}/bench-inputs/trace60.pftrace
rm -rf "$work/out"
perf record -q -F 999 --call-graph dwarf,16384 -o "$work/perf.data" \
  "$bin" convert "$trace" --out "$work/out" >/dev/null
perf script -i "$work/perf.data" -s /usr/lib/perf-core/scripts/python/stackcollapse.py \
  2>/dev/null >"$work/convert.folded"
# Generic arguments make Rust names kilobytes long; the names without them are plenty.
python3 - "$work/convert.folded" <<'PY'
import re, sys
generics = re.compile(r"([\w}])<[^<>;]*>")
lines = []
for line in open(sys.argv[1]):
    shorter = generics.sub(r"\1", line)
    while shorter != line:
        line, shorter = shorter, generics.sub(r"\1", shorter)
    lines.append(line)
open(sys.argv[1], "w").writelines(lines)
PY
"$bin" flamegraph "$work/convert.folded" --format folded --out "$out" \
  --title "proflake convert, perfetto 60 s bench trace"
