#!/usr/bin/env python3
"""The large-input rows of BENCHMARKS.md: whole commands on generated inputs, side by side.

Usage: scripts/bench_big.py --proflake BIN --gen BIN [--runs N] [--work DIR]

Generates the inputs with proflake-gen-inputs (deterministic), then times, in alternating
order so drift hits every command alike, N runs (default 5) of each of:

  upb        protobuf's upb backend parses the file (scripts/upb_parse.py; parse-only baseline)
  convert    `proflake convert FILE --out DIR` into a fresh directory (the whole job, written);
             Perfetto traces over 64 MiB are converted a window at a time, with a second pass
  whole      the same with PROFLAKE_STREAM_ABOVE_BYTES set past the file (Perfetto only)
  inspect    `proflake inspect FILE`
  decode     `proflake inspect FILE --decode-only` (decoding alone, nothing summarized)
  gzip -dc   of the gzipped trace (the decompression floor)

Each run's wall time, CPU time (user + sys) and peak RSS come from wait4() of that one child.
Prints a Markdown table of medians and the ratios the targets are stated in. Standard library
only (plus the upb script's own imports).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class Run:
    def __init__(self, wall: float, cpu: float, rss_mb: float):
        self.wall, self.cpu, self.rss_mb = wall, cpu, rss_mb


def run(argv: list[str], stdout=subprocess.DEVNULL, env: dict[str, str] | None = None) -> Run:
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdout=stdout, stderr=subprocess.PIPE, env=None if env is None else {**os.environ, **env}
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"error: {' '.join(argv)} exited {proc.returncode}\n{err}")
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def upb_seconds(kind: str, path: Path, descriptors: Path) -> tuple[float, float]:
    """The parse time upb_parse.py measured in-process, and its process's peak RSS."""
    script = str(ROOT / "scripts/upb_parse.py")
    out = subprocess.run(
        [sys.executable, script, kind, str(path), "--runs", "1", "--descriptors", str(descriptors)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return float(out[0]), float(out[1])


def median(values: list[float]) -> float:
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--proflake", required=True)
    parser.add_argument("--gen", required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--work", default=None)
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="proflake-bench-"))
    work.mkdir(parents=True, exist_ok=True)

    inputs = {
        "perfetto 60 s": (work / "trace60.pftrace", ["perfetto", "60", "16"], "perfetto"),
        "perfetto 240 s": (work / "trace240.pftrace", ["perfetto", "240", "16"], "perfetto"),
        "otlp 100k samples": (work / "otlp100k.pb", ["otlp", "100000"], "otlp"),
        "pprof 50 MB": (work / "pprof50.pb", ["pprof", "50"], "pprof"),
    }
    # Always generated afresh: a stale input from an older generator would measure something else.
    for path, gen_args, _ in inputs.values():
        subprocess.run([args.gen, gen_args[0], str(path), *gen_args[1:]], check=True)
    descriptors = work / "descriptors"
    subprocess.run([args.gen, "descriptors", str(descriptors)], check=True)
    # Text has no upb baseline: its row shows that the upload is not held whole.
    folded = work / "folded100.txt"
    subprocess.run([args.gen, "folded", str(folded), "100"], check=True)
    gz = work / "trace60.pftrace.gz"
    with open(gz, "wb") as out:
        subprocess.run(["gzip", "-6", "-c", str(inputs["perfetto 60 s"][0])], stdout=out, check=True)

    def convert(path: Path, whole: bool = False) -> Run:
        out = work / "out"
        shutil.rmtree(out, ignore_errors=True)
        env = {"PROFLAKE_STREAM_ABOVE_BYTES": str(1 << 40)} if whole else None
        return run([args.proflake, "convert", str(path), "--out", str(out)], env=env)

    commands = {}
    for name, (path, _, kind) in inputs.items():
        commands[(name, "convert")] = lambda p=path: convert(p)
        if kind == "perfetto":
            commands[(name, "whole")] = lambda p=path: convert(p, whole=True)
        commands[(name, "inspect")] = lambda p=path: run([args.proflake, "inspect", str(p)])
        commands[(name, "decode")] = lambda p=path: run(
            [args.proflake, "inspect", str(p), "--decode-only"]
        )
    commands[("folded 100 MB", "convert")] = lambda: convert(folded)
    commands[("perfetto 60 s gzip", "convert")] = lambda: convert(gz)
    commands[("perfetto 60 s gzip", "gzip -dc")] = lambda: run(["gzip", "-dc", str(gz)])

    results: dict[tuple[str, str], list[Run]] = {k: [] for k in commands}
    upb: dict[str, list[tuple[float, float]]] = {name: [] for name in inputs}
    for _ in range(args.runs):
        for name, (path, _, kind) in inputs.items():
            upb[name].append(upb_seconds(kind, path, descriptors))
        for key, command in commands.items():
            results[key].append(command())

    def wall(key):
        return median([r.wall for r in results[key]])

    def cpu(key):
        return median([r.cpu for r in results[key]])

    def rss(key):
        return max(r.rss_mb for r in results[key])

    print(f"{args.runs} alternating runs per row; medians; peak RSS is the largest of the runs.\n")
    print("| input | command | wall s | CPU s | peak RSS MB | ratio |")
    print("|---|---|---|---|---|---|")
    for name, (path, _, _) in inputs.items():
        parse = median([t for t, _ in upb[name]])
        parse_rss = max(r for _, r in upb[name])
        size = path.stat().st_size / 1e6
        print(f"| {name} ({size:.1f} MB) | upb parse only | {parse:.3f} | | {parse_rss:.0f} | 1.00 |")
        for command in ("convert", "whole", "decode", "inspect"):
            key = (name, command)
            if key not in results:
                continue
            ratio = f"{wall(key) / parse:.2f}× upb"
            if command == "inspect":
                ratio += f", {wall(key) / wall((name, 'decode')):.2f}× decode"
            print(
                f"| {name} | {command} | {wall(key):.3f} | {cpu(key):.3f} | {rss(key):.0f} | {ratio} |"
            )
    plain = wall(("perfetto 60 s", "convert"))
    gunzip = wall(("perfetto 60 s gzip", "gzip -dc"))
    gz_convert = wall(("perfetto 60 s gzip", "convert"))
    print(
        f"| perfetto 60 s gzip ({gz.stat().st_size / 1e6:.1f} MB) | gzip -dc | {gunzip:.3f} | "
        f"{cpu(('perfetto 60 s gzip', 'gzip -dc')):.3f} | {rss(('perfetto 60 s gzip', 'gzip -dc')):.0f} | |"
    )
    print(
        f"| perfetto 60 s gzip | convert | {gz_convert:.3f} | {cpu(('perfetto 60 s gzip', 'convert')):.3f} | "
        f"{rss(('perfetto 60 s gzip', 'convert')):.0f} | {gz_convert / (gunzip + plain):.2f}× (gzip -dc + plain convert) |"
    )
    key = ("folded 100 MB", "convert")
    size = folded.stat().st_size / 1e6
    print(
        f"| folded 100 MB ({size:.1f} MB) | convert | {wall(key):.3f} | {cpu(key):.3f} | "
        f"{rss(key):.0f} | peak RSS {rss(key) / size:.2f}× the input |"
    )
    for command in ("convert", "whole"):
        small, big = rss(("perfetto 60 s", command)), rss(("perfetto 240 s", command))
        print(f"\n{command} peak RSS, 240 s trace / 60 s trace: {big / small:.2f}×")


if __name__ == "__main__":
    main()
