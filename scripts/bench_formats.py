#!/usr/bin/env python3
"""Per-format rows of BENCHMARKS.md: proflake's decoding and conversion of a large generated
input of each format, against a Python parse-only baseline of the same file.

Usage: scripts/bench_formats.py --proflake BIN --work DIR [--formats F ...]
           [--mb-json N] [--mb-text N] [--mb-binary N] [--runs R] [--python PY]

Formats: speedscope, firefox, cpuprofile (JSON; default 200 MB each, as the Chrome trace row),
perf-script (text; default 100 MB, as the folded row) and pprof-legacy (binary; default 50 MB, as
the pprof row). Each input is written by scripts/gen_format_inputs.py (deterministic) into DIR,
unless DIR already holds it: a stamp beside the file records the generator's arguments, a hash
of the generator and the size it wrote, and a file whose stamp and size match is reused.

For each format, measured as whole processes (wall time, CPU time user + sys and peak RSS from
wait4() of that one child):

  baseline   Python parsing the file, in a subprocess of its own (so its RSS is its own), with
             R parses in process and the best taken (its wall and CPU time are that parse's,
             measured inside; process start and reading the file are left out, except for text,
             whose reader streams):
               JSON          orjson.loads of the bytes already read   (scripts/orjson_parse.py)
               perf script   lines split into records and frames      (scripts/text_parse.py)
               pprof-legacy  array of the words, records walked       (scripts/words_parse.py)
  decode     `proflake inspect --decode-only FILE`
  convert    `proflake convert FILE --out DIR --no-publish` into a fresh directory, with
             `--start-time 1700000000` where the format's times are not on the wall clock
             (speedscope's evented profiles, V8's clock, perf's clock); Firefox profiles carry
             theirs, and a legacy profile, which has no times, starts at the file's mtime as
             folded stacks do

The proflake rows are medians of R runs, alternating formats so drift hits all alike. Prints a
Markdown table in the style of BENCHMARKS.md (÷ baseline is wall time over the baseline's wall
time), then each format's peak RSS of `convert` over the input's size. Peak RSS columns are
ru_maxrss / 1024, as in bench_big.py; the ratio to the input is computed in bytes.

The JSON baseline needs orjson in the Python that runs it (--python, default this one: the
README's .venv). Standard library otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"
START_TIME = "1700000000"

# format: (size class, file suffix, baseline script, baseline's name in the table, needs --start-time)
FORMATS = {
    "speedscope": ("json", ".speedscope.json", "orjson_parse.py", "`orjson.loads`", True),
    "firefox": ("json", ".firefox.json", "orjson_parse.py", "`orjson.loads`", False),
    "cpuprofile": ("json", ".cpuprofile", "orjson_parse.py", "`orjson.loads`", True),
    "perf-script": ("text", ".perf.txt", "text_parse.py", "Python split into records and frames", True),
    "pprof-legacy": ("binary", ".prof", "words_parse.py", "Python `array` of the words, records walked", False),
}
BEST = re.compile(r"best ([0-9.]+) s \(CPU ([0-9.]+) s\)")


class Run:
    def __init__(self, wall: float, cpu: float, rss_kb: int, stdout: str = ""):
        self.wall, self.cpu, self.rss_kb, self.stdout = wall, cpu, rss_kb, stdout

    @property
    def rss_mb(self) -> float:
        return self.rss_kb / 1024


def run(argv: list[str]) -> Run:
    """One child, waited for with wait4() so its rusage is its own and no other child's."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if proc.returncode != 0:
        sys.exit(f"error: {' '.join(argv)} exited {proc.returncode}\n{stderr}")
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, stdout)


def generator_hash() -> str:
    return hashlib.sha256((SCRIPTS / "gen_format_inputs.py").read_bytes()).hexdigest()[:16]


def ensure_input(fmt: str, mb: float, work: Path) -> Path:
    """The generated input, written unless the stamp says this generator already wrote it."""
    path = work / f"{fmt}-{mb:g}mb{FORMATS[fmt][1]}"
    stamp_path = path.with_name(path.name + ".stamp.json")
    want = {"format": fmt, "mb": mb, "generator": generator_hash()}
    if path.exists() and stamp_path.exists():
        stamp = json.loads(stamp_path.read_text())
        if {k: stamp.get(k) for k in want} == want and stamp.get("size") == path.stat().st_size:
            print(f"reusing {path} ({path.stat().st_size / 1e6:.1f} MB)", file=sys.stderr)
            return path
    print(f"generating {path} ...", file=sys.stderr)
    stamp_path.unlink(missing_ok=True)
    subprocess.run([sys.executable, str(SCRIPTS / "gen_format_inputs.py"), fmt, str(path), "--mb", f"{mb:g}"],
                   check=True)
    stamp_path.write_text(json.dumps({**want, "size": path.stat().st_size}) + "\n")
    return path


def baseline(python: str, fmt: str, path: Path, runs: int) -> Run:
    """The baseline script's best parse (wall and CPU measured inside), and its process's peak RSS."""
    script = SCRIPTS / FORMATS[fmt][2]
    result = run([python, str(script), str(path), "--runs", str(runs)])
    match = BEST.search(result.stdout)
    if not match:
        sys.exit(f"error: no timing in {script.name}'s output: {result.stdout!r}")
    return Run(float(match.group(1)), float(match.group(2)), result.rss_kb, result.stdout.strip())


def decode(proflake: str, path: Path) -> Run:
    return run([proflake, "inspect", "--decode-only", str(path)])


def convert(proflake: str, fmt: str, path: Path, work: Path) -> Run:
    out = work / "out"
    shutil.rmtree(out, ignore_errors=True)
    argv = [proflake, "convert", str(path), "--out", str(out), "--no-publish"]
    if FORMATS[fmt][4]:
        argv += ["--start-time", START_TIME]
    result = run(argv)
    # A conversion that wrote no tables is a failure, whatever its exit status.
    if not list((out / "tables").rglob("*.parquet")):
        sys.exit(f"error: {' '.join(argv)} wrote no tables")
    shutil.rmtree(out, ignore_errors=True)
    return result


def check_orjson(python: str) -> None:
    probe = subprocess.run([python, "-c", "import orjson"], capture_output=True)
    if probe.returncode != 0:
        sys.exit(f"error: {python} cannot import orjson (the JSON baseline); "
                 "pass --python with one that can (tests/requirements.txt)")


def med(runs: list[Run], attr: str) -> float:
    return statistics.median(getattr(r, attr) for r in runs)


def table(inputs: dict[str, Path], base: dict[str, Run], results: dict[tuple[str, str], list[Run]],
          runs: int) -> None:
    print(f"Baselines: best of {runs} parses in process. proflake: medians of {runs} alternating runs; "
          "peak RSS is the largest of the runs.\n")
    print("| input | command | wall s | CPU s | peak RSS MB | ÷ baseline |")
    print("|---|---|---|---|---|---|")
    for fmt, path in inputs.items():
        b = base[fmt]
        size = path.stat().st_size / 1e6
        name = f"{FORMATS[fmt][3]} (best of {runs})"
        print(f"| {fmt} ({size:.1f} MB) | {name} | {b.wall:.3f} | {b.cpu:.3f} | {b.rss_mb:.0f} | 1.00 |")
        for command, label in (("decode", "`inspect --decode-only`"), ("convert", "`convert`")):
            rows = results[(fmt, command)]
            if command == "convert" and FORMATS[fmt][4]:
                label = "`convert --start-time …`"
            wall = med(rows, "wall")
            print(f"| {fmt} | {label} | {wall:.3f} | {med(rows, 'cpu'):.3f} | "
                  f"{max(r.rss_mb for r in rows):.0f} | **{wall / b.wall:.2f}×** |")
    print()
    for fmt, path in inputs.items():
        rows = results[(fmt, "convert")]
        peak = max(r.rss_kb for r in rows) * 1024
        size = path.stat().st_size
        samples = results[(fmt, "decode")][0].stdout.strip().rpartition(", ")[2]
        print(f"- {fmt}: peak RSS of `convert` **{peak / size:.2f}×** the input "
              f"({peak / 2**20:.0f} MB of {size / 1e6:.1f} MB); decodes to {samples}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--proflake", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--formats", nargs="+", choices=list(FORMATS), default=list(FORMATS))
    parser.add_argument("--mb-json", type=float, default=200)
    parser.add_argument("--mb-text", type=float, default=100)
    parser.add_argument("--mb-binary", type=float, default=50)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--python", default=sys.executable, help="interpreter for the baselines")
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    if any(FORMATS[f][0] == "json" for f in args.formats):
        check_orjson(args.python)

    mb = {"json": args.mb_json, "text": args.mb_text, "binary": args.mb_binary}
    inputs = {fmt: ensure_input(fmt, mb[FORMATS[fmt][0]], work) for fmt in args.formats}

    base = {}
    for fmt, path in inputs.items():
        base[fmt] = baseline(args.python, fmt, path, args.runs)
        print(base[fmt].stdout, file=sys.stderr)
    results: dict[tuple[str, str], list[Run]] = {(f, c): [] for f in inputs for c in ("decode", "convert")}
    for r in range(args.runs):
        for fmt, path in inputs.items():
            results[(fmt, "decode")].append(decode(args.proflake, path))
            results[(fmt, "convert")].append(convert(args.proflake, fmt, path, work))
        print(f"run {r + 1} of {args.runs} done", file=sys.stderr)
    table(inputs, base, results, args.runs)


if __name__ == "__main__":
    main()
