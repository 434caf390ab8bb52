#!/usr/bin/env bash
# Coverage-guided fuzzing of every entry point that reads untrusted bytes (tests/fuzz), on the
# stable toolchain: cargo-fuzz without a sanitizer (`-s none`), since sanitizers need nightly.
#
#   scripts/fuzz.sh [TARGET...]    every target (or those named), FUZZ_SECONDS each (default 20)
#
# Each target starts from seeds assembled here from samples/ and tests/fixtures (by format),
# the small hand-written seeds in tests/fuzz/seeds/ and the regression inputs in
# tests/fuzz/regressions/, plus what earlier runs on this checkout found (tests/fuzz/work/, not
# committed). An input that panics, runs longer than FUZZ_TIMEOUT seconds or needs more than
# FUZZ_RSS_MB of memory fails the run, which then prints the input's path and how to reproduce it.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-20}
timeout=${FUZZ_TIMEOUT:-10}
rss_mb=${FUZZ_RSS_MB:-2048}
max_len=${FUZZ_MAX_LEN:-1048576}
fuzz_dir=tests/fuzz
work=$fuzz_dir/work

# The pinned cargo-fuzz goes into .tools like the other tools the checks install.
if [ ! -x .tools/bin/cargo-fuzz ]; then
  cargo install --quiet --locked cargo-fuzz --version 0.13.2 --root .tools
fi
export PATH="$PWD/.tools/bin:$PATH"

all_targets=(decode decode_perfetto decode_otlp decode_otlp_json decode_pprof decode_folded
  cpuprofile decode_perf_script decode_perf_data decode_jfr pprof_legacy firefox speedscope chrome_json decode_sentry_envelope sample_v2 convert notification debug_file receive)
if [ $# -gt 0 ]; then targets=("$@"); else targets=("${all_targets[@]}"); fi

mkdir -p "$work/logs"
# Not --locked: the library's dependencies change in shared/Cargo.toml, and a fuzz lock file
# that lags behind must not fail the checks. Cargo adds what is missing and keeps every pin.
lock_before=$(cksum <"$fuzz_dir/Cargo.lock")
metadata=$(cargo metadata --format-version 1 --no-deps --manifest-path "$fuzz_dir/Cargo.toml")
if [ "$(cksum <"$fuzz_dir/Cargo.lock")" != "$lock_before" ]; then
  echo "note: $fuzz_dir/Cargo.lock was behind shared/Cargo.toml and is updated; commit it"
fi
target_dir=$(printf '%s' "$metadata" | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
bin_dir=$target_dir/$(rustc -vV | sed -n 's/^host: //p')/release
build_start=$SECONDS
# Several codegen units per crate: the build is what costs in CI, not the runs.
if ! cargo fuzz build -s none --codegen-units 16 --fuzz-dir "$fuzz_dir" >"$work/logs/build.log" 2>&1; then
  # The linker's command line is one line of several kilobytes: cut long lines so that what
  # the linker said (after it) is not lost in the output.
  grep -v '^ *= note: *"cc"' "$work/logs/build.log" | cut -c 1-400 | tail -n 60
  echo "disk: $(df -h "$fuzz_dir" | awk 'NR == 2 { print $4 " free of " $2 }'); memory: $(free -m | awk 'NR == 2 { print $7 " MB available" }')"
  echo "error: building the fuzz targets failed" >&2
  exit 1
fi
echo "fuzz targets built in $((SECONDS - build_start)) s"

# Seeds: copies named after their source path, so one file can seed several targets.
add_seed() { # TARGET FILE...
  local dir=$work/seeds/$1 file
  shift
  mkdir -p "$dir"
  for file in "$@"; do
    [ -f "$file" ] || continue
    if [ "$(stat -c %s "$file")" -le "$max_len" ]; then
      cp "$file" "$dir/${file//\//_}"
    fi
    # Mutations of a gzip member fail its CRC, so the plain content is a seed too.
    case "$file" in
      *.gz)
        # (head stops gzip early on content longer than max_len)
        gzip -dc "$file" 2>/dev/null | head -c "$max_len" >"$dir/${file//\//_}.plain" || true
        ;;
    esac
  done
}
rm -rf "$work/seeds"
mkdir -p "$work/seeds"
shopt -s nullglob globstar
perfetto=(samples/perfetto/*.pftrace tests/fixtures/perfetto/**/*.pftrace tests/fixtures/perfetto/**/*.pftrace.gz)
otlp=(samples/otlp/*.pb tests/fixtures/otlp/*.pb tests/fixtures/otlp/*.otlp tests/fixtures/pprof/not_pprof/*)
otlp_json=(tests/fixtures/otlp/*.json)
pprof=(samples/pprof/*.pb.gz tests/fixtures/pprof/*.pb.gz)
folded=(samples/folded/*.folded tests/fixtures/folded/*.folded tests/fixtures/folded/*.collapsed)
cpuprofile=(samples/cpuprofile/*.cpuprofile tests/fixtures/cpuprofile/*.cpuprofile)
speedscope=(samples/speedscope/*.speedscope.json tests/fixtures/speedscope/*.json)
chrome=(samples/chrome/claude_code.json tests/fixtures/chrome/*.json)
firefox=(samples/firefox/*.json* tests/fixtures/firefox/*.json)
pprof_legacy=(samples/pprof-legacy/*.prof tests/fixtures/pprof-legacy/*.cpu)
perf_script=(samples/perf-script/*.txt tests/fixtures/perf_script/*.txt tests/fixtures/perf_script/*.gz)
perf_data=(samples/perf-data/*.data tests/fixtures/perf_data/*.data)
jfr=(samples/jfr/*.jfr tests/fixtures/jfr/*.jfr tests/fixtures/jfr/*.jfr.gz)
envelope=(samples/sentry/*.envelope tests/fixtures/sentry/*.jsonl)
chunks=(tests/fixtures/sentry/*.json samples/*/*.expected/[0-9a-f]*.json)
add_seed decode_perfetto "${perfetto[@]}"
add_seed decode_otlp "${otlp[@]}"
add_seed decode_otlp_json "${otlp_json[@]}"
add_seed decode_pprof "${pprof[@]}"
add_seed decode_folded "${folded[@]}"
add_seed cpuprofile "${cpuprofile[@]}"
add_seed speedscope "${speedscope[@]}"
add_seed chrome_json "${chrome[@]}"
add_seed firefox "${firefox[@]}"
add_seed pprof_legacy "${pprof_legacy[@]}"
add_seed decode_perf_script "${perf_script[@]}"
add_seed decode_perf_data "${perf_data[@]}"
add_seed decode_jfr "${jfr[@]}"
add_seed decode_sentry_envelope "${envelope[@]}"
add_seed sample_v2 "${chunks[@]}"
add_seed receive "${otlp[@]}" "${otlp_json[@]}" "${pprof[@]}" "${folded[@]}"
for t in decode convert; do
  add_seed "$t" "${perfetto[@]}" "${otlp[@]}" "${otlp_json[@]}" "${pprof[@]}" "${folded[@]}" \
    "${cpuprofile[@]}" "${perf_script[@]}" "${perf_data[@]}" "${jfr[@]}" "${pprof_legacy[@]}" "${speedscope[@]}" "${chrome[@]}" "${firefox[@]}" "${envelope[@]}" "${chunks[@]}"
done
# Debug files: a small gcc-built library with inlined calls (DWARF with inlinees), the same
# without DWARF (symbols only), and its Breakpad file when dump_syms is installed.
mkdir -p "$work/seeds/debug_file"
if command -v gcc >/dev/null; then
  cat >"$work/lib.c" <<'C'
static inline int square(int x) { return x * x; }
__attribute__((noinline)) int leaf(int x) { return square(x) + 1; }
int root(int x) { return leaf(x) * 2; }
C
  gcc -shared -fPIC -g -O2 -Wl,--build-id -o "$work/seeds/debug_file/lib.so" "$work/lib.c"
  objcopy --strip-debug "$work/seeds/debug_file/lib.so" "$work/seeds/debug_file/lib.stripped.so"
  if [ -x .tools/bin/dump_syms ]; then
    .tools/bin/dump_syms "$work/seeds/debug_file/lib.so" >"$work/seeds/debug_file/lib.sym" 2>/dev/null ||
      rm -f "$work/seeds/debug_file/lib.sym"
  fi
fi
for dir in "$fuzz_dir"/seeds/* "$fuzz_dir"/regressions/*; do
  [ -d "$dir" ] && add_seed "$(basename "$dir")" "$dir"/*
done

failed=()
for target in "${targets[@]}"; do
  corpus=$work/corpus/$target
  artifacts=$work/artifacts/$target
  log=$work/logs/$target.log
  mkdir -p "$corpus" "$artifacts" "$work/seeds/$target" "$work/logs"
  # New inputs go to the first directory, the kept corpus; the seeds are only read.
  status=0
  "$bin_dir/$target" "$corpus" "$work/seeds/$target" \
    -max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb="$rss_mb" -max_len="$max_len" \
    -artifact_prefix="$artifacts/" -print_final_stats=1 >"$log" 2>&1 || status=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 || true)
  printf '%-24s %s: %s runs, %s/s, %s, corpus %s inputs\n' "$target" \
    "$([ "$status" -eq 0 ] && echo ok || echo FAILED)" "${execs:-?}" "${rate:-?}" "${cov:-cov: ?}" \
    "$(find "$corpus" -type f | wc -l)"
  if [ "$status" -ne 0 ]; then
    failed+=("$target")
    grep -A 40 -m 1 -E '^==[0-9]+== ERROR|panicked at|^thread .* panicked' "$log" | head -n 60 || tail -n 40 "$log"
    input=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
    echo "  input: ${input:-(none written; see $log)}"
    # The same build flags as above, so cargo fuzz reuses the build.
    cargo_fuzz="PATH=\"\$PWD/.tools/bin:\$PATH\" cargo fuzz"
    flags="-s none --codegen-units 16 --fuzz-dir $fuzz_dir $target ${input:-INPUT}"
    echo "  reproduce: $bin_dir/$target ${input:-INPUT}"
    echo "         or: $cargo_fuzz run $flags"
    echo "  minimize:  $cargo_fuzz tmin $flags"
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzzing found failures in: ${failed[*]}" >&2
  exit 1
fi
echo "fuzzing: ${#targets[@]} targets, ${seconds} s each, no failure"
