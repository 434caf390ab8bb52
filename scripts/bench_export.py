#!/usr/bin/env python3
"""The export and compare rows of BENCHMARKS.md, each beside DuckDB reading the same tables.

Usage: .venv/bin/python scripts/bench_export.py --proflake BIN --gen GEN --work DIR
           [--seconds 63] [--threads 16] [--uploads 1000] [--runs 3]

* **Export:** a Perfetto trace of S seconds × T threads sampled at 1 kHz (about 1 M samples with
  the defaults, `proflake-gen-inputs perfetto`) is converted into a store; then
  `proflake export --format pprof --service bench` (every sample of the store: a 1 M-sample
  slice) is timed beside DuckDB's own `GROUP BY` of the same slice from the same Parquet files:
  the samples summed per profile, stack and thread, which is the aggregation a pprof file holds.
* **Compare:** U folded uploads of each of two releases of one service (40 functions with
  per-upload noise, as the compare test's fleet) are converted; then `proflake compare` is
  timed beside DuckDB's scan of the two releases' rollups (per upload and function, the sums
  `compare` starts from).

proflake runs as a child process, waited for with wait4() (wall, CPU user + sys, peak RSS).
DuckDB runs in this process: a fresh connection per run, timed around the query with its result
fetched; it uses every core (proflake's export uses three threads, its comparison one). Rows are medians
of R runs; the export and its DuckDB query alternate run by run.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb


def run(argv: list[str]) -> tuple[float, float, int]:
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            sys.exit(f"error: {' '.join(map(str, argv))}\n{err.read().decode(errors='replace')}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024


def duckdb_time(sql: str) -> float:
    con = duckdb.connect()
    start = time.perf_counter()
    rows = con.execute(sql).fetchall()
    took = time.perf_counter() - start
    assert rows, sql
    return took


def median_runs(runs: int, f):
    results = [f() for _ in range(runs)]
    if isinstance(results[0], tuple):
        return tuple(statistics.median(r[i] for r in results) if i < 2 else max(r[i] for r in results)
                     for i in range(len(results[0])))
    return statistics.median(results)


def fleet_upload(rng: random.Random, planted: dict[int, float]) -> str:
    weights = [1.0 / (i + 2.0) ** 1.2 * planted.get(i, 1.0) for i in range(40)]
    noisy = [w * (1.0 + 0.16 * (rng.random() - 0.5)) for w in weights]
    total = sum(noisy)
    return "".join(f"main;handle;work_{i:02} {round(w / total * 20000)}\n" for i, w in enumerate(noisy))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--proflake", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--work", required=True, type=Path)
    ap.add_argument("--seconds", type=int, default=63)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--uploads", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    a.work.mkdir(parents=True, exist_ok=True)

    # --- export ---
    trace = a.work / f"perfetto-{a.seconds}s-{a.threads}t.pftrace"
    if not trace.exists():
        subprocess.run([a.gen, "perfetto", trace, str(a.seconds), str(a.threads)], check=True)
    store = a.work / "export-store"
    if not (store / "tables").exists():
        subprocess.run([a.proflake, "convert", trace, "--out", store, "--service", "bench",
                        "--no-publish"], check=True, capture_output=True)
    samples = f"{store}/tables/v2/samples/*/*.parquet"
    profiles = f"{store}/tables/v2/profiles/*/*.parquet"
    rows = duckdb.connect().execute(f"SELECT count(*) FROM read_parquet('{samples}')").fetchone()[0]
    out = a.work / "export.pb.gz"
    group_by = (f"SELECT s.profile_id, s.stack_id, s.thread_id, sum(s.value) "
                f"FROM read_parquet('{samples}') s JOIN read_parquet('{profiles}') p USING (profile_id) "
                f"WHERE p.service = 'bench' GROUP BY ALL")
    # The two alternate run by run, so that a busy moment of the machine slows both.
    ours, theirs = [], []
    for _ in range(a.runs):
        ours.append(run([a.proflake, "export", "--store", store, "--format", "pprof", "--service", "bench",
                         "-o", out]))
        theirs.append(duckdb_time(group_by))
    wall, cpu = (statistics.median(r[i] for r in ours) for i in (0, 1))
    rss = max(r[2] for r in ours)
    duck = statistics.median(theirs)
    print(f"export: {rows} samples rows; proflake export --format pprof {wall:.3f} s wall, {cpu:.3f} s CPU, "
          f"{rss} MB; DuckDB GROUP BY {duck:.3f} s; ratio {wall / duck:.2f}x; file {out.stat().st_size} bytes")

    # --- compare ---
    fleet = a.work / f"fleet-{a.uploads}"
    fstore = fleet / "store"
    if not (fstore / "tables").exists():
        rng = random.Random(7)
        for release, planted in (("1.0", {}), ("1.1", {0: 1.25, 3: 0.7})):
            d = fleet / release
            d.mkdir(parents=True, exist_ok=True)
            paths = []
            for u in range(a.uploads):
                p = d / f"shop-{release}-{u:04}.folded"
                p.write_text(fleet_upload(rng, planted))
                paths.append(str(p))
            for i in range(0, len(paths), 200):
                subprocess.run([a.proflake, "convert", *paths[i:i + 200], "--out", fstore, "--service", "shop",
                                "--release", release, "--start-time", "1764000000", "--no-publish"],
                               check=True, capture_output=True)
    # The landing tier (a file per upload), then the lake (published, compacted, and vacuumed
    # at once, so that the lake's directory holds only its active files for DuckDB to read).
    if not (fstore / "lake" / "function_rollup").exists():
        subprocess.run([a.proflake, "publish", "--store", fstore], check=True, capture_output=True)
        subprocess.run([a.proflake, "compact", "--store", fstore, "--retention-hours", "0"], check=True,
                       capture_output=True)
    for tier, files in (("landing", f"{fstore}/tables/v2/function_rollup/*/*.parquet"),
                        ("lake", f"{fstore}/lake/function_rollup/dt=*/*.parquet")):
        wall, cpu, rss = median_runs(a.runs, lambda: run(
            [a.proflake, "compare", "--store", fstore, "--tier", tier, "--service", "shop", "--base", "1.0",
             "--head", "1.1", "--json"]))
        scan = (f"SELECT source_id, release, sample_type, function, sum(self_value), sum(total_value), "
                f"sum(self_rows) FROM read_parquet('{files}') WHERE service = 'shop' "
                f"AND release IN ('1.0', '1.1') GROUP BY ALL")
        duck = median_runs(a.runs, lambda: duckdb_time(scan))
        print(f"compare ({tier}): {a.uploads} uploads per release; proflake compare {wall:.3f} s wall, "
              f"{cpu:.3f} s CPU, {rss} MB; DuckDB scan of the rollups {duck:.3f} s; ratio {wall / duck:.2f}x")


if __name__ == "__main__":
    main()
