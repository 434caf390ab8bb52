#!/usr/bin/env python3
"""The write path before and after a change: `proflake convert` of the large inputs by two builds.

Usage: scripts/bench_write_path.py --before BIN --after BIN --work DIR [--runs N]

DIR holds the inputs `scripts/bench_big.py` generates (trace60.pftrace, trace240.pftrace,
otlp100k.pb, pprof50.pb). For each input, N alternating runs (default 5) of:

  before      BIN_BEFORE convert FILE --out D --no-publish
  after       BIN_AFTER  convert FILE --out D --no-publish            (every core)
  after, 1    BIN_AFTER  convert FILE --out D --no-publish --threads 1

and once each `convert` with the lake published (the command's default). Every run's outputs
(`converted/` and `tables/`) must be the same bytes as the first `before` run's: a run that
differs stops the script. Each run's wall time, CPU time (user + sys) and peak RSS come from
wait4() of that one child. Prints a Markdown table of medians. Standard library only.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

INPUTS = [
    ("perfetto 60 s", "trace60.pftrace"),
    ("perfetto 240 s", "trace240.pftrace"),
    ("otlp 100k samples", "otlp100k.pb"),
    ("pprof 50 MB", "pprof50.pb"),
]


def run(argv: list[str]) -> tuple[float, float, float]:
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"error: {' '.join(argv)} failed\n{err}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def same_tree(a: Path, b: Path) -> bool:
    """Whether two directories hold the same files with the same bytes."""
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    if mismatch or errors:
        return False
    return all(same_tree(a / d, b / d) for d in cmp.common_dirs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", required=True)
    parser.add_argument("--after", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    work = Path(args.work)
    commands = {
        "before": lambda f, d: [args.before, "convert", str(f), "--out", d, "--no-publish"],
        "after": lambda f, d: [args.after, "convert", str(f), "--out", d, "--no-publish"],
        "after, --threads 1": lambda f, d: [
            args.after, "convert", str(f), "--out", d, "--no-publish", "--threads", "1"
        ],
    }
    published = {
        "before, published": lambda f, d: [args.before, "convert", str(f), "--out", d],
        "after, published": lambda f, d: [args.after, "convert", str(f), "--out", d],
    }
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, name in INPUTS:
            path = work / name
            if not path.exists():
                sys.exit(f"error: {path} is missing (scripts/bench_big.py --work {work} makes it)")
            reference = Path(tmp) / "reference"
            times: dict[str, list[tuple[float, float, float]]] = {c: [] for c in commands}
            for i in range(args.runs):
                for command, argv in commands.items():
                    out = Path(tmp) / "out"
                    shutil.rmtree(out, ignore_errors=True)
                    times[command].append(run(argv(path, str(out))))
                    if not reference.exists():
                        out.rename(reference)
                        continue
                    for part in ("converted", "tables"):
                        if not same_tree(reference / part, out / part):
                            sys.exit(f"error: {command} on {name} wrote other {part}/ bytes")
            for command, argv in published.items():
                out = Path(tmp) / "out"
                shutil.rmtree(out, ignore_errors=True)
                times[command] = [run(argv(path, str(out)))]
            shutil.rmtree(reference, ignore_errors=True)
            for command, runs in times.items():
                before = "before, published" if "published" in command else "before"
                base = statistics.median(w for w, _, _ in times[before])
                wall = statistics.median(w for w, _, _ in runs)
                cpu = statistics.median(c for _, c, _ in runs)
                rss = max(r for _, _, r in runs)
                rows.append((label, command, wall, cpu, rss, wall / base))
    print(f"{args.runs} alternating runs per row (published: one); medians; peak RSS the largest.\n")
    print("| input | command | wall s | CPU s | peak RSS MB | wall ÷ before (same kind) |")
    print("|---|---|---|---|---|---|")
    for label, command, wall, cpu, rss, ratio in rows:
        print(f"| {label} | {command} | {wall:.3f} | {cpu:.3f} | {rss:.0f} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
