#!/usr/bin/env python3
"""The binary recordings' rows of BENCHMARKS.md: a 100 MB Linux perf.data (`perf record -g`) and a
100 MB Java Flight Recording, each converted by proflake beside the recorder's own reader of the
same file (`perf script`, `jfr print --json`, output to /dev/null).

Usage: scripts/bench_recordings.py --proflake BIN --work DIR [--formats perf-data jfr]
           [--mb N] [--runs R] [--java JAVA] [--jfr JFR]

The inputs are recorded on this machine, not generated: a C program (built with frame pointers,
several threads, recursive call paths of varying depth) under `perf record -g -F 20000`, and a
Java program (threads computing, allocating and contending for a lock) under Flight Recorder
with execution sampling every millisecond and allocation and lock events. Each recorder runs
until the file passes N MB (default 100); a stamp beside the file records the arguments and a
file whose stamp and size match is reused. Needs `perf` with permission to record (root, or
perf_event_paranoid ≤ 1), gcc, and a JDK.

Each command is one child process, waited for with wait4() (wall time, CPU time user + sys, peak
RSS as ru_maxrss / 1024). Rows are medians of R runs (default 3), formats alternating; peak RSS
is the largest. `convert` writes into a fresh directory with `--no-publish`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

C_PROGRAM = r"""
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static volatile uint64_t sink;

__attribute__((noinline)) static uint64_t leaf(uint64_t x) {
    for (int i = 0; i < 200; i++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return x;
}
__attribute__((noinline)) static uint64_t walk_a(uint64_t x, int depth);
__attribute__((noinline)) static uint64_t walk_b(uint64_t x, int depth) {
    if (depth == 0) return leaf(x);
    return walk_a(x ^ 0x9e3779b97f4a7c15ULL, depth - 1) + 1;
}
__attribute__((noinline)) static uint64_t walk_a(uint64_t x, int depth) {
    if (depth == 0) return leaf(x);
    return (x & 1 ? walk_b(x >> 1, depth - 1) : walk_a(x >> 1, depth - 1)) + 1;
}
static void *worker(void *arg) {
    uint64_t x = (uint64_t)(uintptr_t)arg * 7919 + 1;
    for (;;) {
        x = walk_a(x, (int)(x % 24)) | 1;
        sink = x;
    }
    return NULL;
}
int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    pthread_t t[64];
    for (int i = 0; i < threads && i < 64; i++) pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
    pthread_join(t[0], NULL);
    return 0;
}
"""

JAVA_PROGRAM = r"""
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

public class Workload {
    static final Object LOCK = new Object();
    static volatile long sink;

    static long leaf(long x) {
        for (int i = 0; i < 200; i++) x = x * 6364136223846793005L + 1442695040888963407L;
        return x;
    }
    static long walkA(long x, int depth) {
        if (depth == 0) return leaf(x);
        return ((x & 1) != 0 ? walkB(x >>> 1, depth - 1) : walkA(x >>> 1, depth - 1)) + 1;
    }
    static long walkB(long x, int depth) {
        if (depth == 0) return leaf(x);
        return walkA(x ^ 0x9e3779b97f4a7c15L, depth - 1) + 1;
    }
    static void compute(long seed) {
        long x = seed;
        while (true) {
            x = walkA(x, (int) Long.remainderUnsigned(x, 24)) | 1;
            sink = x;
        }
    }
    static void allocate(long seed) {
        List<long[]> keep = new ArrayList<>();
        long x = seed;
        while (true) {
            x = leaf(x);
            keep.add(new long[(int) Long.remainderUnsigned(x, 128) + 1]);
            if (keep.size() > 4096) keep.clear();
            synchronized (LOCK) { sink += keep.size(); }
            if ((x & 3) == 0) LockSupport.parkNanos(1_000);
        }
    }
    public static void main(String[] args) throws Exception {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : 4;
        for (int i = 0; i < threads; i++) {
            final long seed = i + 1;
            Thread t = new Thread(() -> { if (seed % 2 == 0) allocate(seed); else compute(seed); }, "worker-" + i);
            t.setDaemon(true);
            t.start();
        }
        Thread.sleep(Long.MAX_VALUE);
    }
}
"""

# Flight Recorder settings: the events proflake reads, at rates that fill 100 MB in minutes.
JFC = """<?xml version="1.0" encoding="UTF-8"?>
<configuration version="2.0" label="bench">
  <event name="jdk.ExecutionSample"><setting name="enabled">true</setting><setting name="period">1 ms</setting></event>
  <event name="jdk.NativeMethodSample"><setting name="enabled">true</setting><setting name="period">10 ms</setting></event>
  <event name="jdk.ObjectAllocationInNewTLAB"><setting name="enabled">true</setting><setting name="stackTrace">true</setting></event>
  <event name="jdk.ObjectAllocationOutsideTLAB"><setting name="enabled">true</setting><setting name="stackTrace">true</setting></event>
  <event name="jdk.ObjectAllocationSample"><setting name="enabled">true</setting><setting name="throttle">10000/s</setting><setting name="stackTrace">true</setting></event>
  <event name="jdk.JavaMonitorEnter"><setting name="enabled">true</setting><setting name="threshold">0 ms</setting><setting name="stackTrace">true</setting></event>
  <event name="jdk.ThreadPark"><setting name="enabled">true</setting><setting name="threshold">0 ms</setting><setting name="stackTrace">true</setting></event>
  <event name="jdk.ActiveSetting"><setting name="enabled">true</setting></event>
</configuration>
"""


class Run:
    def __init__(self, wall: float, cpu: float, rss_kb: int, stdout: str = ""):
        self.wall, self.cpu, self.rss_kb, self.stdout = wall, cpu, rss_kb, stdout

    @property
    def rss_mb(self) -> float:
        return self.rss_kb / 1024


def run(argv: list[str], stdout=None) -> Run:
    """One child, waited for with wait4() so its rusage is its own and no other child's."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdout=stdout if stdout is not None else out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if code != 0:
        sys.exit(f"error: {' '.join(argv)} exited {code}\n{stderr}")
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, text)


def stamp_ok(path: Path, want: dict) -> bool:
    stamp_path = path.with_name(path.name + ".stamp.json")
    if not (path.exists() and stamp_path.exists()):
        return False
    stamp = json.loads(stamp_path.read_text())
    return {k: stamp.get(k) for k in want} == want and stamp.get("size") == path.stat().st_size


def write_stamp(path: Path, want: dict) -> None:
    path.with_name(path.name + ".stamp.json").write_text(json.dumps({**want, "size": path.stat().st_size}) + "\n")


def grow_until(proc: subprocess.Popen, path: Path, size: int, limit_s: float) -> None:
    """Waits until `path` passes `size` bytes (or `limit_s` passes), then interrupts `proc`."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and proc.poll() is None:
        if path.exists() and path.stat().st_size >= size:
            break
        time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def record_perf_data(work: Path, mb: float) -> Path:
    path = work / f"perf-data-{mb:g}mb.data"
    want = {"format": "perf-data", "mb": mb, "program": hashlib.sha256(C_PROGRAM.encode()).hexdigest()[:16]}
    if stamp_ok(path, want):
        print(f"reusing {path} ({path.stat().st_size / 1e6:.1f} MB)", file=sys.stderr)
        return path
    src, binary = work / "walk.c", work / "walk"
    src.write_text(C_PROGRAM)
    subprocess.run(["gcc", "-O1", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", str(binary), str(src)],
                   check=True)
    path.unlink(missing_ok=True)
    print(f"recording {path} ...", file=sys.stderr)
    # perf stops the workload and writes its feature sections (build IDs, event names) on SIGINT.
    proc = subprocess.Popen(["perf", "record", "-q", "-g", "-F", "20000", "-o", str(path), "--", str(binary), "2"],
                            stdout=subprocess.DEVNULL)
    grow_until(proc, path, int(mb * 1e6), 900)
    write_stamp(path, want)
    return path


def record_jfr(work: Path, mb: float, java: str) -> Path:
    path = work / f"jfr-{mb:g}mb.jfr"
    want = {"format": "jfr", "mb": mb, "java": java,
            "program": hashlib.sha256((JAVA_PROGRAM + JFC).encode()).hexdigest()[:16]}
    if stamp_ok(path, want):
        print(f"reusing {path} ({path.stat().st_size / 1e6:.1f} MB)", file=sys.stderr)
        return path
    src, jfc = work / "Workload.java", work / "bench.jfc"
    src.write_text(JAVA_PROGRAM)
    jfc.write_text(JFC)
    path.unlink(missing_ok=True)
    print(f"recording {path} ...", file=sys.stderr)
    # The repository of chunks is written as the recording runs; the file itself only on exit, so
    # the size is watched in the repository and the JVM stopped when it is large enough.
    repo = work / "jfr-repository"
    shutil.rmtree(repo, ignore_errors=True)
    repo.mkdir()
    proc = subprocess.Popen([java, "-XX:TLABSize=8k", "-XX:-ResizeTLAB", f"-XX:FlightRecorderOptions=repository={repo}",
                             f"-XX:StartFlightRecording=filename={path},settings={jfc},dumponexit=true",
                             str(src), "4"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline and proc.poll() is None:
        size = sum(f.stat().st_size for f in repo.rglob("*.jfr"))
        if size >= mb * 1e6:
            break
        time.sleep(1)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=300)
    shutil.rmtree(repo, ignore_errors=True)
    write_stamp(path, want)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--proflake", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--formats", nargs="+", choices=["perf-data", "jfr"], default=["perf-data", "jfr"])
    parser.add_argument("--mb", type=float, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--java", default="java")
    parser.add_argument("--jfr", default="jfr")
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)

    inputs: dict[str, Path] = {}
    if "perf-data" in args.formats:
        inputs["perf-data"] = record_perf_data(work, args.mb)
    if "jfr" in args.formats:
        inputs["jfr"] = record_jfr(work, args.mb, args.java)

    baseline_argv = {
        "perf-data": lambda p: ["perf", "script", "-i", str(p)],
        "jfr": lambda p: [args.jfr, "print", "--json", str(p)],
    }
    baseline_name = {"perf-data": "`perf script`", "jfr": "`jfr print --json`"}
    results: dict[tuple[str, str], list[Run]] = {}
    out = work / "out"
    with open(os.devnull, "wb") as devnull:
        for _ in range(args.runs):
            for fmt, path in inputs.items():
                results.setdefault((fmt, "baseline"), []).append(run(baseline_argv[fmt](path), stdout=devnull))
                results.setdefault((fmt, "decode"), []).append(
                    run([args.proflake, "inspect", "--decode-only", str(path)]))
                shutil.rmtree(out, ignore_errors=True)
                results.setdefault((fmt, "convert"), []).append(
                    run([args.proflake, "convert", str(path), "--out", str(out), "--no-publish"]))
                if not list((out / "tables").rglob("*.parquet")):
                    sys.exit(f"error: convert of {path} wrote no tables")
                shutil.rmtree(out, ignore_errors=True)

    med = lambda rows, attr: statistics.median(getattr(r, attr) for r in rows)  # noqa: E731
    print(f"Medians of {args.runs} alternating runs; peak RSS is the largest of the runs.\n")
    print("| input | command | wall s | CPU s | peak RSS MB | ÷ recorder's reader |")
    print("|---|---|---|---|---|---|")
    for fmt, path in inputs.items():
        base = results[(fmt, "baseline")]
        bw = med(base, "wall")
        size = path.stat().st_size / 1e6
        print(f"| {fmt} ({size:.1f} MB) | {baseline_name[fmt]} > /dev/null | {bw:.3f} | {med(base, 'cpu'):.3f} | "
              f"{max(r.rss_mb for r in base):.0f} | 1.00 |")
        for command, label in (("decode", "`inspect --decode-only`"), ("convert", "`convert`")):
            rows = results[(fmt, command)]
            wall = med(rows, "wall")
            print(f"| {fmt} | {label} | {wall:.3f} | {med(rows, 'cpu'):.3f} | {max(r.rss_mb for r in rows):.0f} | "
                  f"**{wall / bw:.2f}×** |")
    print()
    for fmt, path in inputs.items():
        peak = max(r.rss_kb for r in results[(fmt, "convert")]) * 1024
        size = path.stat().st_size
        summary = results[(fmt, "decode")][0].stdout.strip().splitlines()
        print(f"- {fmt}: peak RSS of `convert` **{peak / size:.2f}×** the input "
              f"({peak / 2**20:.0f} MB of {size / 1e6:.1f} MB); {summary[-1] if summary else ''}")


if __name__ == "__main__":
    main()
