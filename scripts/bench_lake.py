#!/usr/bin/env python3
"""The lake tier at fleet scale, measured side by side in one run (BENCHMARKS.md, "Lake").

Puts N uploads (the sample inputs, round-robin, each under its own key and with its metadata
sidecar) into a bucket directory and converts them with `proflake process --no-publish`. Then:

* times `proflake publish` of all N in one batch: wall and CPU time, peak RSS, uploads per
  second per core (N / CPU seconds);
* counts data files per (table, dt) partition, compacts (`proflake compact --retention-hours 0`,
  with its peak RSS and the largest partition's `samples` rows), and counts again;
* copies the landing rows into one file per table and day (DuckDB `COPY`), and times the
  analysts' `top_self_functions` and `series_totals` (docs/queries.sql) over the landing files,
  that copy, and the lake (DuckDB 1.4.4 with the delta extension for all three, median of
  `--runs`).

Run it with the lake venv's Python (DuckDB 1.4.4 and the delta extension wheel):
  .venv-lake/bin/python scripts/bench_lake.py --proflake target/release/proflake --uploads 10000
"""

from __future__ import annotations

import argparse
import importlib.util
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

import duckdb

ROOT = Path(__file__).resolve().parent.parent
TABLES = ["profiles", "samples", "stacks", "frames", "function_rollup"]


class Run:
    def __init__(self, wall: float, cpu: float, rss_mb: float, stdout: str):
        self.wall, self.cpu, self.rss_mb, self.stdout = wall, cpu, rss_mb, stdout


def run(argv: list[str]) -> Run:
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = proc.stdout.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"error: {' '.join(argv)} failed\n{err}")
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out)


def sample_inputs() -> list[tuple[Path, Path | None]]:
    """Every sample input with its metadata file, as tests/duckdb/test_queries.py finds them."""
    inputs = []
    for fmt in sorted((ROOT / "samples").iterdir()):
        if not fmt.is_dir():
            continue
        for f in sorted(fmt.iterdir()):
            if f.name.endswith(".metadata.json") or not f.is_file():
                continue
            stem = f.name.split(".")[0]
            if not (fmt / f"{stem}.expected").is_dir():
                continue
            meta = fmt / f"{stem}.metadata.json"
            inputs.append((f, meta if meta.is_file() else None))
    return inputs


def fill(store: Path, n: int) -> None:
    uploads = store / "uploads"
    uploads.mkdir(parents=True)
    inputs = sample_inputs()
    for i in range(n):
        src, meta = inputs[i % len(inputs)]
        name = f"{i:06d}-{src.name}"
        shutil.copyfile(src, uploads / name)
        if meta is not None:
            shutil.copyfile(meta, uploads / f"{name}.metadata.json")


def files_per_partition(store: Path) -> dict[str, int]:
    """The most data files any partition of each lake table has on disk."""
    most = {}
    for table in TABLES:
        counts = [
            sum(1 for f in d.iterdir() if f.suffix == ".parquet")
            for d in (store / "lake" / table).iterdir()
            if d.is_dir() and d.name.startswith("dt=")
        ]
        most[table] = max(counts, default=0)
    return most


def connect() -> duckdb.DuckDBPyConnection:
    spec = importlib.util.find_spec("duckdb_ext")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("the duckdb-ext-delta wheel is not installed (tests/lake/requirements.txt)")
    extensions = Path(list(spec.submodule_search_locations)[0]) / "extensions"
    con = duckdb.connect(
        config={
            "extension_directory": str(extensions),
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
        }
    )
    con.execute("LOAD delta")
    return con


def queries() -> dict[str, str]:
    """docs/queries.sql's set-up (everything before the first `-- name:` line, under "") and
    its named queries."""
    parts = re.split(r"^-- name: *(\S+) *$", (ROOT / "docs/queries.sql").read_text(), flags=re.M)
    named = {"": parts[0]}
    for name, body in zip(parts[1::2], parts[2::2]):
        named[name] = body.strip()
    return named


def time_query(root: Path, tier: str, name: str, runs: int) -> float:
    sql = queries()
    times = []
    for _ in range(runs):
        con = connect()
        con.execute(f"SET VARIABLE tables_root = '{root}'")
        con.execute(f"SET VARIABLE tier = '{tier}'")
        con.execute(sql[""])
        start = time.perf_counter()
        # Materialized in the database: fetching into Python would time the conversion too.
        con.execute(f"CREATE OR REPLACE TEMP TABLE answer AS {sql[name].rstrip().rstrip(';')}")
        times.append(time.perf_counter() - start)
        con.close()
    return statistics.median(times)


def one_file_per_table_and_day(store: Path, single: Path) -> None:
    con = duckdb.connect()
    for table in TABLES:
        src = f"{store}/tables/v2/{table}/*/*.parquet"
        out = single / "tables" / "v2" / table
        out.mkdir(parents=True)
        con.execute(
            f"COPY (FROM read_parquet('{src}', hive_partitioning = true, union_by_name = true)) "
            f"TO '{out}' (FORMAT parquet, PARTITION_BY (dt), COMPRESSION zstd)"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--proflake", default=str(ROOT / "target/release/proflake"))
    ap.add_argument("--uploads", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keep", help="work in this directory and keep it")
    args = ap.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-lake-"))
    store = work / "store"
    try:
        fill(store, args.uploads)
        convert = run([args.proflake, "process", "--store", str(store), "--no-publish"])
        publish = run([args.proflake, "publish", "--store", str(store)])
        report = json.loads(publish.stdout)
        before = files_per_partition(store)
        compact = run([args.proflake, "compact", "--store", str(store), "--retention-hours", "0"])
        after = files_per_partition(store)
        again = run([args.proflake, "publish", "--store", str(store)])
        con = duckdb.connect()
        biggest = con.execute(
            f"SELECT dt, count(*) FROM read_parquet('{store}/tables/v2/samples/*/*.parquet', "
            "hive_partitioning = true) GROUP BY dt ORDER BY 2 DESC LIMIT 1"
        ).fetchone()
        landing_files = sum(1 for _ in (store / "tables" / "v2").rglob("*.parquet"))
        single = work / "single"
        one_file_per_table_and_day(store, single)
        timings = {}
        for name in ("top_self_functions", "series_totals"):
            timings[name] = {
                "landing": time_query(store, "landing", name, args.runs),
                "one_file": time_query(single, "landing", name, args.runs),
                "lake": time_query(store, "lake", name, args.runs),
            }
        result = {
            "uploads": args.uploads,
            "landing_files": landing_files,
            "convert_wall_s": round(convert.wall, 2),
            "publish": {
                "wall_s": round(publish.wall, 2),
                "cpu_s": round(publish.cpu, 2),
                "peak_rss_mb": round(publish.rss_mb, 1),
                "uploads_per_cpu_s": round(args.uploads / publish.cpu, 1),
                "rows": report["rows"],
                "commits": report["commits"],
            },
            "files_per_partition_before_compaction": before,
            "files_per_partition_after_compaction": after,
            "compact": {
                "wall_s": round(compact.wall, 2),
                "peak_rss_mb": round(compact.rss_mb, 1),
                "largest_samples_partition_rows": biggest[1] if biggest else 0,
            },
            "publish_again": {
                "wall_s": round(again.wall, 2),
                "commits": json.loads(again.stdout)["commits"],
            },
            "queries_s": {k: {t: round(v, 3) for t, v in d.items()} for k, d in timings.items()},
            "ratios": {
                k: {
                    "lake_vs_one_file": round(d["lake"] / d["one_file"], 2),
                    "landing_vs_lake": round(d["landing"] / d["lake"], 1),
                }
                for k, d in timings.items()
            },
        }
        print(json.dumps(result, indent=2))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
