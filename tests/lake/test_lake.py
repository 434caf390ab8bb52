#!/usr/bin/env python3
"""The lake tier (`proflake publish`'s Delta tables under `<store>/lake/<table>/`) read by a
reader that shares no code with its writer: DuckDB 1.4.4 with the delta extension (built on
delta-kernel-rs; proflake writes with delta-rs), both from the wheels pinned in
tests/lake/requirements.txt, loaded from the extension wheel's own directory with no network.

Each lake table must hold exactly the rows of the landing tier (the Parquet files under
`<store>/tables/v2/<table>/dt=YYYY-MM-DD/<source_id>.parquet`): the same rows, as many times,
column for column, with the landing file's partition as the string column `dt`. Checked

* after converting every sample input (`samples/<format>/<name>.<ext>` beside `<name>.expected/`,
  with `<name>.metadata.json` when present) with `convert --no-publish`, then `publish`:
  per (source_id, dt) row counts, per series sums, and every row both ways (EXCEPT ALL); and
  every `-- name:` query of docs/queries.sql answers the same over `tier = 'lake'` as over the
  landing files, and its day filter skips other days' files on both tiers;
* that `publish` again changes nothing (no Delta version, no data file written), that `convert`
  and `process` publish by themselves unless `--no-publish`, and that `publish --rebuild` gives
  the same lake;
* replacement: new content under the same upload key (a new source_id) leaves nothing of the
  old one in any lake table, even when its rows move to another day, and the rows of another
  upload published into the same files stay, once;
* rehydration: `proflake symbols add` re-converts an upload under the same source_id with new
  frame names (a gcc-built library profiled as bare addresses, as tests/duckdb/test_queries.py
  does); after `publish` the lake has the new names and no row twice;
* compaction: after many small publishes, `compact` leaves at most 2 files per table and day
  with the same rows, keeps replaced files for the retention, and `--retention-hours 0` removes
  every unreferenced file; readers querying all along always see the same totals;
* two `publish` processes at once on the same store never count an upload twice.
* a column added to a landing table within the version (`profiles.clock_source`): a lake table
  made before it gains it on the next publish, after `dt`; rows published before read NULL,
  rows published after the landing values, and compaction keeps both.

Plain Python, run with the lake venv: `.venv-lake/bin/python tests/lake/test_lake.py`. The CLI
comes from $PROFLAKE_BIN (default target/debug/proflake). Nothing is skipped: a missing
subcommand, tool or extension fails. The last line printed is `lake tests: N passed, M failed`.
"""

from __future__ import annotations

import collections
import datetime as dt
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse
from pathlib import Path

import duckdb

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("PROFLAKE_BIN", REPO / "target" / "debug" / "proflake"))
if not BIN.is_absolute():
    BIN = REPO / BIN
REQUIREMENTS = REPO / "tests" / "lake" / "requirements.txt"

# Shared with the landing tier's tests: the sample discovery, the queries file's parser and the
# native library of the symbolization flow (plain functions and classes, no tests).
sys.path.insert(0, str(REPO / "tests" / "duckdb"))
import test_queries as tq  # noqa: E402

VERSION = "v2"
TABLES = ["profiles", "samples", "stacks", "frames", "function_rollup"]
READER_DUCKDB = "1.4.4"
# One command's limit: a hung writer fails its test instead of the run.
TIMEOUT_S = 600
HUGE = 1_000_000_000
FOLDED = REPO / "samples" / "folded" / "pyspy.folded"
FOLDED_META = REPO / "samples" / "folded" / "pyspy.metadata.json"
PPROF = REPO / "samples" / "pprof" / "google-pprof_report_sample.cpu.pb.gz"
PPROF_META = REPO / "samples" / "pprof" / "google-pprof_report_sample.metadata.json"

# What a reader sums per table to see whether it read each row exactly once.
TOTALS = {
    "profiles": "count(*), sum(total_value)",
    "samples": "count(*), sum(value)",
    "stacks": "count(*), sum(depth)",
    "frames": "count(*), sum(frame_id)",
    "function_rollup": "count(*), sum(self_value), sum(total_value)",
}


# ------------------------------------------------------------------------------------------
# The reader: DuckDB 1.4.4 and the delta extension of the duckdb-ext-delta wheel


def extension_dir() -> Path:
    """`<site-packages>/duckdb_ext/extensions`, where the wheel put delta.duckdb_extension
    (under v1.4.4/<platform>/). A missing wheel fails: nothing is fetched."""
    spec = importlib.util.find_spec("duckdb_ext")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        path = Path(location) / "extensions"
        if list(path.glob(f"v{duckdb.__version__}/*/delta.duckdb_extension")):
            return path
    raise AssertionError(
        f"no delta.duckdb_extension for DuckDB {duckdb.__version__} under duckdb_ext/extensions "
        f"(looked in {locations}): run with .venv-lake, pip install -r {REQUIREMENTS.relative_to(REPO)}"
    )


def reader() -> duckdb.DuckDBPyConnection:
    """A DuckDB session with the wheel's delta extension loaded; never installs or fetches one."""
    con = duckdb.connect(config={
        "extension_directory": str(extension_dir()),
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
    })
    con.execute("SET TimeZone = 'UTC'")
    con.execute("LOAD delta")
    return con


def sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def lake_scan(root: Path, table: str, *options: str) -> str:
    return f"delta_scan({', '.join([sql_string(str(root / 'lake' / table)), *options])})"


def landing_scan(root: Path, table: str) -> str:
    """The landing files with `dt` from their partition, as the string the lake holds."""
    files = sql_string(str(root / "tables" / VERSION / table / "*" / "*.parquet"))
    return f"read_parquet({files}, hive_partitioning = true, hive_types = {{'dt': VARCHAR}}, union_by_name = true)"


def rows(con, query: str) -> list[tuple]:
    return con.execute(query).fetchall()


def local_path(filename: str) -> Path:
    """A path delta_scan reports (a plain path or a file:// URL) as a resolved local path."""
    if filename.startswith("file:"):
        filename = urllib.parse.unquote(urllib.parse.urlparse(filename).path)
    return Path(filename).resolve()


# ------------------------------------------------------------------------------------------
# The writer: the proflake CLI on a local store


def cli(*args, timeout: float = TIMEOUT_S) -> str:
    command = [str(BIN), *map(str, args)]
    try:
        run = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"proflake {' '.join(map(str, args))} ran over {timeout} s") from None
    if run.returncode != 0:
        raise AssertionError(
            f"proflake {' '.join(map(str, args))} failed ({run.returncode}):\n{run.stderr}{run.stdout}"
        )
    return run.stdout


def require_lake_commands() -> None:
    """The lake tier's subcommands and flags, or a failure saying which is missing."""
    if not BIN.is_file():
        raise AssertionError(f"no proflake binary at {BIN} (set PROFLAKE_BIN)")
    wanted = {"publish": ["--store", "--rebuild"], "compact": ["--store", "--retention-hours"],
              "convert": ["--no-publish"], "process": ["--no-publish"]}
    for command, flags in wanted.items():
        run = subprocess.run([str(BIN), command, "--help"], capture_output=True, text=True)
        if run.returncode != 0:
            raise AssertionError(f"proflake has no `{command}` subcommand (the lake tier):\n{run.stderr}")
        missing = [f for f in flags if f not in run.stdout]
        if missing:
            raise AssertionError(f"`proflake {command}` has no {', '.join(missing)}:\n{run.stdout}")


class Store:
    """A local store (the directory `convert --out` writes), its landing tier and its lake."""

    def __init__(self, root: Path):
        self.root = root

    def convert(self, inputs, metadata: Path | None = None, *flags: str, publish: bool = False) -> str:
        args = ["convert", *inputs, "--out", self.root]
        if metadata is not None:
            args += ["--metadata", metadata]
        if not publish:
            args.append("--no-publish")
        return cli(*args, *flags)

    def reupload(self, name: str, content: bytes, sidecar: dict | None = None, publish: bool = False) -> str:
        """New content at `uploads/<name>`, as a bucket overwrite (`convert` refuses to replace
        an upload), with its sidecar, converted by `process` as the notification would be."""
        uploads = self.root / "uploads"
        uploads.mkdir(parents=True, exist_ok=True)
        (uploads / name).write_bytes(content)
        if sidecar is not None:
            (uploads / f"{name}.metadata.json").write_text(json.dumps(sidecar))
        return cli("process", "--store", self.root, f"uploads/{name}", *([] if publish else ["--no-publish"]))

    def publish(self, *flags: str) -> str:
        return cli("publish", "--store", self.root, *flags)

    def compact(self, *flags: str) -> str:
        return cli("compact", "--store", self.root, *flags)

    def lake(self, table: str) -> Path:
        return self.root / "lake" / table

    def log_entries(self, table: str) -> list[str]:
        """The table's commits: `_delta_log/<version>.json`, one per Delta version."""
        return sorted(p.name for p in (self.lake(table) / "_delta_log").glob("*.json"))

    def version(self, table: str) -> int:
        return max(int(name.split(".")[0]) for name in self.log_entries(table))

    def data_files(self, table: str) -> dict[Path, tuple[int, int]]:
        """Every Parquet data file on disk (the log's checkpoints left out), with size and
        modification time: a file written again shows."""
        lake = self.lake(table)
        return {
            p.resolve(): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in lake.rglob("*.parquet")
            if "_delta_log" not in p.relative_to(lake).parts
        }

    def active_files(self, con, table: str) -> dict[str, set[Path]]:
        """The data files the table's current version reads, per `dt`."""
        out: dict[str, set[Path]] = collections.defaultdict(set)
        for day, filename in rows(con, f"SELECT DISTINCT dt, filename FROM {lake_scan(self.root, table, 'filename = true')}"):
            out[day].add(local_path(filename))
        return dict(out)

    def source_ids(self, con, table: str, tier: str) -> set[str]:
        scan = lake_scan(self.root, table) if tier == "lake" else landing_scan(self.root, table)
        return {r[0] for r in rows(con, f"SELECT DISTINCT source_id FROM {scan}")}

    def source_of_key(self, con, name: str) -> str:
        """The landing source id of the upload `uploads/<name>`."""
        found = rows(con, f"SELECT DISTINCT source_id FROM {landing_scan(self.root, 'profiles')} "
                          f"WHERE source_key = {sql_string('uploads/' + name)}")
        assert len(found) == 1, f"uploads/{name}: source ids {found}"
        return found[0][0]

    def totals(self, con, tier: str) -> dict[str, tuple]:
        """TOTALS of every table in one query."""
        scan = (lambda t: lake_scan(self.root, t)) if tier == "lake" else (lambda t: landing_scan(self.root, t))
        select = ", ".join(f"(SELECT ({TOTALS[t]}) FROM {scan(t)}) AS {t}" for t in TABLES)
        (answer,) = rows(con, f"SELECT {select}")
        return {t: tuple(v.values()) if isinstance(v, dict) else tuple(v) for t, v in zip(TABLES, answer)}


def staged(directory: Path, name: str, content: bytes) -> Path:
    """`content` as `directory/name`: the file name is the upload key's (`uploads/<name>`)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_bytes(content)
    return path


def folded_sidecar(shift_days: int = 0) -> dict:
    """pyspy's metadata (its `timestamp` fixes the day of an aggregated upload), moved on."""
    meta = json.loads(FOLDED_META.read_text())
    meta["timestamp"] += shift_days * 86_400
    return meta


def folded_metadata(directory: Path, name: str, shift_days: int = 0) -> Path:
    """folded_sidecar() as a file for `convert --metadata`."""
    meta = folded_sidecar(shift_days)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(json.dumps(meta))
    return path


# ------------------------------------------------------------------------------------------
# Lake against landing


class TierChecks(unittest.TestCase):
    """The lake against the landing tier of one store."""

    maxDiff = None

    def columns(self, con, scan: str) -> list[tuple[str, str]]:
        return [(r[0], r[1]) for r in rows(con, f"DESCRIBE SELECT * FROM {scan}")]

    def check_schema(self, con, store: Store, table: str) -> list[tuple[str, str]]:
        """The lake's columns are the landing files' (names, order, types) and `dt` VARCHAR."""
        lake = self.columns(con, lake_scan(store.root, table))
        landing = self.columns(con, landing_scan(store.root, table))
        self.assertIn(("dt", "VARCHAR"), lake, f"{table}: the lake's dt is a string partition column")
        self.assertEqual([c for c in lake if c[0] != "dt"], [c for c in landing if c[0] != "dt"], table)
        return [c for c in landing if c[0] != "dt"] + [("dt", "VARCHAR")]

    def check_same_rows(self, con, store: Store, tables=TABLES) -> dict[str, int]:
        """Every table: the lake holds the landing rows exactly (each as many times), with the
        landing partition as `dt`. Returns the row counts."""
        counted = {}
        for table in tables:
            with self.subTest(table=table):
                self.assertTrue((store.lake(table) / "_delta_log").is_dir(), f"no Delta table at {store.lake(table)}")
                columns = self.check_schema(con, store, table)
                lake, landing = lake_scan(store.root, table), landing_scan(store.root, table)

                per_day = "SELECT source_id, dt, count(*) FROM {} GROUP BY ALL ORDER BY ALL"
                landing_days = rows(con, per_day.format(landing))
                self.assertTrue(landing_days, f"{table}: no landing rows")
                self.assertEqual(rows(con, per_day.format(lake)), landing_days, f"{table}: rows per (source_id, dt)")

                if table == "samples":
                    per_series = ("SELECT source_id, sample_type, sample_unit, sum(value), count(*) "
                                  "FROM {} GROUP BY ALL ORDER BY ALL")
                    self.assertEqual(rows(con, per_series.format(lake)), rows(con, per_series.format(landing)),
                                     "samples: sum(value) and rows per (source_id, sample_type, sample_unit)")

                # Every row, both ways, as many times: nested values compared as their text.
                select = ", ".join(
                    f'CAST("{name}" AS VARCHAR) AS "{name}"' if any(k in kind for k in ("MAP", "STRUCT", "[]"))
                    else f'"{name}"'
                    for name, kind in columns
                )
                differ = rows(con, f"""
                    WITH lake AS (SELECT {select} FROM {lake}), landing AS (SELECT {select} FROM {landing})
                    (SELECT 'lake only' AS side, * FROM (FROM lake EXCEPT ALL FROM landing) LIMIT 5)
                    UNION ALL
                    (SELECT 'landing only' AS side, * FROM (FROM landing EXCEPT ALL FROM lake) LIMIT 5)""")
                self.assertEqual(differ, [], f"{table}: rows in one tier only")
                counted[table] = sum(n for *_, n in landing_days)
        return counted


# ------------------------------------------------------------------------------------------
# Module set-up: every sample input, converted into one store, then published


class Ctx:
    tmp: Path
    main: Store


CTX = Ctx()


def setUpModule():
    if duckdb.__version__ != READER_DUCKDB:
        raise AssertionError(f"DuckDB {duckdb.__version__}: the lake tests run with .venv-lake's {READER_DUCKDB}")
    require_lake_commands()
    CTX.tmp = Path(tempfile.mkdtemp(prefix="proflake-lake-"))
    CTX.main = Store(CTX.tmp / "main")
    inputs = tq.sample_inputs()
    if not inputs:
        raise AssertionError("no sample inputs found under samples/")
    for path, meta in inputs:
        CTX.main.convert([path], meta)
    if (CTX.main.root / "lake").exists() and any((CTX.main.root / "lake").iterdir()):
        raise AssertionError("`convert --no-publish` wrote into lake/")
    CTX.main.publish()


def tearDownModule():
    if getattr(CTX, "tmp", None) is not None:
        shutil.rmtree(CTX.tmp, ignore_errors=True)


def new_store(test: type[unittest.TestCase], prefix: str) -> Store:
    tmp = Path(tempfile.mkdtemp(prefix=f"proflake-lake-{prefix}-"))
    test.addClassCleanup(shutil.rmtree, tmp, True)
    return Store(tmp / "store")


# ------------------------------------------------------------------------------------------
# Tests


class ReaderTest(unittest.TestCase):
    """The reader is the pinned DuckDB and the wheel's delta extension, loaded offline."""

    def test_reader_is_the_pinned_release(self):
        pins = dict(
            line.split("==", 1) for line in (l.split("#", 1)[0].strip() for l in REQUIREMENTS.read_text().splitlines()) if line
        )
        self.assertEqual(pins["duckdb"], READER_DUCKDB)
        for package, version in pins.items():
            self.assertEqual(importlib.metadata.version(package), version, package)
        self.assertEqual(duckdb.__version__, READER_DUCKDB)

    def test_delta_loads_from_the_wheel(self):
        con = reader()
        (loaded, path) = rows(con, "SELECT loaded, install_path FROM duckdb_extensions() WHERE extension_name = 'delta'")[0]
        self.assertTrue(loaded)
        self.assertTrue(Path(path).resolve().is_relative_to(extension_dir().resolve()), path)
        functions = {r[0] for r in rows(con, "SELECT function_name FROM duckdb_functions() WHERE function_name LIKE 'delta%'")}
        self.assertIn("delta_scan", functions)
        con.close()


class PublishTest(TierChecks):
    """Every sample input, converted with --no-publish into one store, then published."""

    def test_lake_holds_the_landing_rows(self):
        con = reader()
        counted = self.check_same_rows(con, CTX.main)
        con.close()
        self.assertEqual(set(counted), set(TABLES))
        # Every upload is in every table.
        con = reader()
        for table in TABLES:
            with self.subTest(table=table):
                self.assertEqual(CTX.main.source_ids(con, table, "lake"), CTX.main.source_ids(con, "profiles", "landing"))
        con.close()

    def test_lake_partitions_are_the_landing_days(self):
        # `dt` is a real column: the lake's files sit in one day each, the landing file's day.
        con = reader()
        for table in TABLES:
            with self.subTest(table=table):
                days = {p.parent.name.removeprefix("dt=") for p in (CTX.main.root / "tables" / VERSION / table).glob("dt=*/*.parquet")}
                self.assertEqual(set(CTX.main.active_files(con, table)), days)
                for day, files in CTX.main.active_files(con, table).items():
                    for f in files:
                        self.assertTrue(f.is_file(), f)
                        self.assertTrue(f.is_relative_to(CTX.main.lake(table).resolve()), f)
        con.close()

    def test_publish_again_changes_nothing(self):
        before = {t: (CTX.main.log_entries(t), CTX.main.data_files(t)) for t in TABLES}
        for table, (log, files) in before.items():
            self.assertTrue(log, f"{table}: no Delta version")
            self.assertTrue(files, f"{table}: no data file")
        CTX.main.publish()
        for table, (log, files) in before.items():
            with self.subTest(table=table):
                self.assertEqual(CTX.main.log_entries(table), log, f"{table}: publish again made a new version")
                self.assertEqual(CTX.main.data_files(table), files, f"{table}: publish again wrote data files")


class QueriesOverTheLakeTest(unittest.TestCase):
    """docs/queries.sql with `tier = 'lake'` answers as over the landing files (both read with
    DuckDB 1.4.4, the file's one switch the only difference)."""

    maxDiff = None

    @classmethod
    def setUpClass(cls):
        # A timed upload on two days (test_queries.py's: a Sample v2 chunk of the Android sample
        # and a copy of it two days on), published: one file per table and day.
        cls.days = new_store(cls, "days")
        inputs = cls.days.root.parent / "inputs"
        inputs.mkdir()
        chunk_path = next(p for p in sorted((REPO / tq.DAYS_INPUT).glob("*.json")) if p.name != "manifest.json")
        chunk = json.loads(chunk_path.read_text())
        (inputs / "day1.json").write_text(json.dumps(chunk))
        chunk["chunk_id"] = hashlib.md5(b"day2").hexdigest()
        for sample in chunk["profile"]["samples"]:
            sample["timestamp"] += tq.DAY_SHIFT_S
        (inputs / "day2.json").write_text(json.dumps(chunk))
        cls.days.convert([inputs / "day1.json", inputs / "day2.json"])
        cls.days.publish()

    def session(self, root: Path, tier: str | None, **params) -> duckdb.DuckDBPyConnection:
        """docs/queries.sql's set-up in a reader session, with `tier` and parameters set first."""
        con = reader()
        if tier is not None:
            con.execute(f"SET VARIABLE tier = {sql_string(tier)}")
        con.execute(f"SET VARIABLE tables_root = {sql_string(str(root))}")
        for key, value in params.items():
            con.execute(f"SET VARIABLE {key} = {tq.literal(value)}")
        con.execute(tq.SETUP_SQL)
        for key, value in params.items():
            con.execute(f"SET VARIABLE {key} = {tq.literal(value)}")
        return con

    def answer(self, tier: str | None, name: str, root: Path | None = None, **params) -> list[tuple]:
        con = self.session(root or CTX.main.root, tier, **params)
        out = [tuple(r.values()) for r in tq.fetch(con, tq.QUERIES[name])]
        con.close()
        return out

    def test_the_file_switches_tier_with_one_variable(self):
        self.assertRegex(tq.SETUP_SQL, r"SET VARIABLE tier = coalesce\(getvariable\('tier'\), 'landing'\)")
        self.assertIn("delta_scan(", tq.SETUP_SQL)
        self.assertIn("read_parquet(", tq.SETUP_SQL)
        self.assertGreaterEqual(len(tq.QUERIES), 9)

    def test_every_query_answers_the_same_over_the_lake(self):
        variants = {"defaults": {}, "every series": {"sample_type": "*", "top_n": HUGE}}
        for label, params in variants.items():
            for name in tq.QUERIES:
                with self.subTest(query=name, params=label):
                    landing = self.answer(None, name, **params)
                    lake = self.answer("lake", name, **params)
                    if label == "defaults":
                        # The file's example values fit the Android sample: every query answers.
                        self.assertTrue(lake, f"{name} returned no rows over the lake")
                    self.assertEqual(collections.Counter(lake), collections.Counter(landing))
                    self.assertEqual(self.answer("landing", name, **params), landing)

    def test_views_have_the_tables_columns_and_the_day(self):
        # `dt`: the landing partition read as a DATE, the lake's own string column (a cast
        # would stop delta_scan from skipping files); the same days either way.
        described = {}
        for tier, day_type in (("landing", "DATE"), ("lake", "VARCHAR")):
            con = self.session(CTX.main.root, tier)
            for table in TABLES:
                with self.subTest(tier=tier, table=table):
                    columns = [(r[0], r[1]) for r in rows(con, f"DESCRIBE {table}")]
                    self.assertIn(("dt", day_type), columns)
                    described[(tier, table)] = [c for c in columns if c[0] != "dt"]
                    days = rows(con, f"SELECT DISTINCT CAST(dt AS VARCHAR) FROM {table} ORDER BY ALL")
                    self.assertTrue(days)
                    described[(tier, table, "days")] = days
            con.close()
        for table in TABLES:
            self.assertEqual(described[("lake", table)], described[("landing", table)], table)
            self.assertEqual(described[("lake", table, "days")], described[("landing", table, "days")], table)

    def test_time_window_skips_other_days_files_on_both_tiers(self):
        # As test_queries.py's pruning test, over each tier: a window on the second day reads
        # only that day's samples file, and answers the same.
        con = reader()
        (start_us,) = rows(con, f"SELECT epoch_us(min(timestamp)) FROM {lake_scan(self.days.root, 'samples')}")[0]
        self.assertEqual(len(self.days.data_files("samples")), 2)
        con.close()
        day2 = dt.datetime.fromtimestamp(start_us / 1e6 + tq.DAY_SHIFT_S - 60, dt.timezone.utc)
        window = dict(time_from=day2, time_to=day2 + dt.timedelta(hours=1))
        answers = {}
        for tier in ("landing", "lake"):
            with self.subTest(tier=tier):
                answers[tier] = self.answer(tier, "samples_in_time_window", self.days.root, **window)
                self.assertTrue(answers[tier], "no samples in the window")
                con = self.session(self.days.root, tier, **window)
                query = tq.QUERIES["samples_in_time_window"].rstrip().rstrip(";")
                plan = "\n".join(r[1] for r in con.execute("EXPLAIN ANALYZE " + query).fetchall())
                con.close()
                self.assertIn("Scanning Files: 1/2", plan)
        self.assertEqual(answers["lake"], answers["landing"])

    def test_an_unknown_tier_is_refused(self):
        con = reader()
        con.execute(f"SET VARIABLE tables_root = {sql_string(str(CTX.main.root))}")
        con.execute(tq.SETUP_SQL)
        con.execute("SET VARIABLE tier = 'lakehouse'")
        with self.assertRaisesRegex(duckdb.Error, "tier"):
            con.execute("SELECT count(*) FROM samples").fetchall()
        con.close()


class PublishingCommandsTest(TierChecks):
    """`convert` and `process` publish unless --no-publish; `publish --rebuild` rebuilds."""

    @classmethod
    def setUpClass(cls):
        cls.store = new_store(cls, "commands")

    def test_convert_process_and_rebuild(self):
        store, con = self.store, reader()
        # convert publishes by itself.
        store.convert([PPROF], PPROF_META, publish=True)
        self.check_same_rows(con, store)
        first = store.source_of_key(con, PPROF.name)

        # --no-publish leaves the lake as it was.
        inputs = self.store.root.parent / "inputs"
        folded = staged(inputs, "commands.folded", FOLDED.read_bytes())
        store.convert([folded], folded_metadata(inputs, "commands.metadata.json"))
        second = store.source_of_key(con, folded.name)
        for table in TABLES:
            self.assertEqual(store.source_ids(con, table, "lake"), {first}, table)

        # process publishes what it converted, and what was left unpublished.
        shutil.copyfile(FOLDED, store.root / "uploads" / "processed.folded")
        cli("process", store.root)
        third = store.source_of_key(con, "processed.folded")
        self.check_same_rows(con, store)
        for table in TABLES:
            self.assertEqual(store.source_ids(con, table, "lake"), {first, second, third}, table)

        # --rebuild: the same rows again, even with a table gone, and publish after it
        # changes nothing.
        shutil.rmtree(store.lake("frames"))
        store.publish("--rebuild")
        self.check_same_rows(con, store)
        rebuilt = {t: (store.log_entries(t), store.data_files(t)) for t in TABLES}
        store.publish()
        for table in TABLES:
            self.assertEqual((store.log_entries(table), store.data_files(table)), rebuilt[table], table)
        con.close()


class ReplacementTest(TierChecks):
    """New content under the same upload key: the old source id leaves every lake table."""

    @classmethod
    def setUpClass(cls):
        cls.store = new_store(cls, "replace")
        cls.inputs = cls.store.root.parent / "inputs"

    def test_new_content_under_the_same_key_replaces_the_old(self):
        store, con = self.store, reader()
        # Uploads that stay (one of them on the replaced one's day, so published into the same
        # files), and the one replaced.
        store.convert([PPROF], PPROF_META)
        v1_meta = folded_metadata(self.inputs, "v1.metadata.json")
        old = staged(self.inputs / "v1", "replaced.folded", FOLDED.read_bytes())
        neighbour = staged(self.inputs / "v1", "neighbour.folded", FOLDED.read_bytes() + b"thread (5): neighbour 5\n")
        store.convert([old, neighbour], v1_meta)
        store.publish()
        self.check_same_rows(con, store)
        kept = {store.source_of_key(con, PPROF.name), store.source_of_key(con, neighbour.name)}
        old_id = store.source_of_key(con, old.name)
        old_days = {d for (d,) in rows(con, f"SELECT DISTINCT dt FROM {lake_scan(store.root, 'samples')} WHERE source_id = '{old_id}'")}
        for table in TABLES:
            self.assertIn(old_id, store.source_ids(con, table, "lake"), table)

        # Other content (half the lines) at the same key, on another day.
        lines = FOLDED.read_text().splitlines(keepends=True)
        store.reupload(old.name, "".join(lines[: len(lines) // 2]).encode(), folded_sidecar(shift_days=3))
        new_id = store.source_of_key(con, old.name)
        self.assertNotEqual(new_id, old_id)
        self.assertNotIn(old_id, store.source_ids(con, "profiles", "landing"), "the landing tier replaced it")
        store.publish()

        for table in TABLES:
            with self.subTest(table=table):
                ids = store.source_ids(con, table, "lake")
                self.assertNotIn(old_id, ids)
                self.assertEqual(ids, kept | {new_id})
        new_days = {d for (d,) in rows(con, f"SELECT DISTINCT dt FROM {lake_scan(store.root, 'samples')} WHERE source_id = '{new_id}'")}
        self.assertTrue(new_days.isdisjoint(old_days), "the replacement moved days")
        # The neighbour's rows, in the old day's files, are all still there, once.
        self.check_same_rows(con, store)
        self.assertEqual(store.totals(con, "lake"), store.totals(con, "landing"))
        con.close()


class RehydrationTest(TierChecks):
    """`symbols add` re-converts an upload under the same source id with new frame names:
    `publish` puts the new rows in place of the old."""

    @classmethod
    def setUpClass(cls):
        missing = [t for t in tq.NATIVE_TOOLS if shutil.which(t) is None]
        if missing:
            raise AssertionError(f"missing {', '.join(missing)}: scripts/test.sh installs gcc and binutils")
        cls.store = new_store(cls, "symbols")
        tmp = cls.store.root.parent
        (tmp / "lib").mkdir()
        lib = cls.lib = tq.NativeLib(tmp / "lib")
        # test_queries.py's profile: every instruction of `work` and `outer` as leaves, and
        # `outer → work`, all as bare addresses of the library's build ID.
        ret = lib.return_address("outer", "work")
        leaves = lib.instructions("work") + [a for a in lib.instructions("outer") if a != ret]
        profile = tmp / "work.otlp.json"
        profile.write_text(json.dumps(tq.native_request(lib, leaves, ret, leaves[0])))
        (cls.store.root / "uploads").mkdir(parents=True)
        (cls.store.root / "uploads" / f"{profile.name}.metadata.json").write_text(
            json.dumps({"service": tq.NATIVE_SERVICE, "release": tq.NATIVE_RELEASE})
        )
        cls.profile = profile
        cls.addresses = len(leaves) + 1

    def frame_names(self, con, tier: str) -> collections.Counter:
        scan = lake_scan(self.store.root, "frames") if tier == "lake" else landing_scan(self.store.root, "frames")
        return collections.Counter(r[0] for r in rows(con, f"SELECT name FROM {scan}"))

    def test_symbols_add_then_publish_renames_the_frames(self):
        store, con = self.store, reader()
        store.convert([self.profile])
        store.publish()
        self.check_same_rows(con, store)
        before = self.frame_names(con, "lake")
        self.assertEqual(sum(before.values()), self.addresses)
        for name in before:
            self.assertRegex(name, r"^libwork\.so!0x[0-9a-f]+$")
        ids = {t: store.source_ids(con, t, "lake") for t in TABLES}

        added = cli("symbols", "add", self.lib.path, "--store", store.root)
        self.assertIn("1 reconverted", added)
        after_landing = self.frame_names(con, "landing")
        self.assertNotEqual(after_landing, before, "symbols add renamed the landing frames")
        store.publish()

        after = self.frame_names(con, "lake")
        self.assertEqual(after, after_landing)
        self.assertFalse([n for n in after if "!0x" in n], "a frame still named by its address")
        self.assertIn("work", after)
        # The same upload (same source id), its rows replaced, none twice.
        for table in TABLES:
            with self.subTest(table=table):
                self.assertEqual(store.source_ids(con, table, "lake"), ids[table])
        self.assertEqual(
            rows(con, f"SELECT profile_id, frame_id, count(*) FROM {lake_scan(store.root, 'frames')} GROUP BY ALL HAVING count(*) > 1"),
            [],
        )
        self.assertEqual(
            rows(con, f"SELECT profile_id, stack_id, count(*) FROM {lake_scan(store.root, 'stacks')} GROUP BY ALL HAVING count(*) > 1"),
            [],
        )
        self.check_same_rows(con, store)
        # The rollup counts the new names: no address left there either.
        self.assertEqual(
            rows(con, f"SELECT function FROM {lake_scan(store.root, 'function_rollup')} WHERE function LIKE '%!0x%'"), []
        )
        con.close()


def publish_batches(store: Store, inputs: Path, batches: int, prefix: str) -> None:
    """`batches` small uploads of the same day, each converted and published on its own: a
    file per table and batch in that day's partitions."""
    meta = folded_metadata(inputs, f"{prefix}.metadata.json")
    for i in range(batches):
        path = staged(inputs, f"{prefix}_{i}.folded", FOLDED.read_bytes() + f"thread (9{i}): batch;{prefix}_{i} {i + 1}\n".encode())
        store.convert([path], meta)
        store.publish()


class CompactionTest(TierChecks):
    """Many small publishes, then `compact`: few files, the same rows, old files kept for the
    retention and removed without it."""

    BATCHES = 6

    @classmethod
    def setUpClass(cls):
        cls.store = new_store(cls, "compact")
        publish_batches(cls.store, cls.store.root.parent / "inputs", cls.BATCHES, "small")

    def test_compact_bin_packs_and_vacuums(self):
        store, con = self.store, reader()
        self.check_same_rows(con, store)
        totals = store.totals(con, "landing")
        before = {t: store.active_files(con, t) for t in TABLES}
        for table, days in before.items():
            self.assertGreaterEqual(max(len(f) for f in days.values()), self.BATCHES, f"{table}: small files to compact")
        versions = {t: store.version(t) for t in TABLES}

        store.compact()
        for table in TABLES:
            with self.subTest(table=table):
                after = store.active_files(con, table)
                self.assertEqual(set(after), set(before[table]), "the same days")
                for day, files in after.items():
                    self.assertLessEqual(len(files), 2, f"{table} dt={day}: {len(files)} files after compact")
                self.assertGreater(store.version(table), versions[table], "compact made a version")
                # Replaced files stay on disk for the retention (168 h by default).
                on_disk = set(store.data_files(table))
                active = set().union(*after.values())
                self.assertLessEqual(active, on_disk)
                self.assertLessEqual(set().union(*before[table].values()), on_disk, "removed within the retention")
        self.check_same_rows(con, store)
        self.assertEqual(store.totals(con, "lake"), totals)

        # A checkpoint: a reader need not replay every commit.
        for table in TABLES:
            self.assertTrue(list((store.lake(table) / "_delta_log").glob("*.checkpoint*.parquet")), f"{table}: no checkpoint")

        store.compact("--retention-hours", "0")
        for table in TABLES:
            with self.subTest(table=table, step="vacuum"):
                active = set().union(*store.active_files(con, table).values())
                self.assertEqual(set(store.data_files(table)), active, "files no version reads are removed")
        self.check_same_rows(con, store)
        self.assertEqual(store.totals(con, "lake"), totals)
        con.close()


def make_table_without(store: Store, con, table: str, column: str) -> None:
    """Replaces the lake's `table` with the table a publisher of the schema before `column`
    was added made: its log's first commit with the schema without `column`, and the landing
    rows in one data file per day without it (written by DuckDB, not by proflake)."""
    lake = store.lake(table)
    first = [json.loads(line) for line in (lake / "_delta_log" / f"{0:020}.json").read_text().splitlines()]
    protocol = next(a for a in first if "protocol" in a)
    metadata = next(a for a in first if "metaData" in a)
    schema = json.loads(metadata["metaData"]["schemaString"])
    assert any(f["name"] == column for f in schema["fields"]), f"{table} has no {column} to take away"
    schema["fields"] = [f for f in schema["fields"] if f["name"] != column]
    metadata["metaData"]["schemaString"] = json.dumps(schema)
    actions = [protocol, metadata]
    shutil.rmtree(lake)
    (lake / "_delta_log").mkdir(parents=True)
    landing = landing_scan(store.root, table)
    for (day,) in rows(con, f"SELECT DISTINCT dt FROM {landing} ORDER BY dt"):
        relative = f"dt={day}/part-00000-before-{column}.parquet"
        (lake / relative).parent.mkdir()
        where = f"WHERE dt = {sql_string(day)}"
        con.execute(f"COPY (SELECT * EXCLUDE (dt, {column}) FROM {landing} {where}) "
                    f"TO {sql_string(str(lake / relative))} (FORMAT parquet)")
        (count,) = rows(con, f"SELECT count(*) FROM {landing} {where}")[0]
        actions.append({"add": {
            "path": relative, "partitionValues": {"dt": day}, "size": (lake / relative).stat().st_size,
            "modificationTime": int(time.time() * 1000), "dataChange": True,
            "stats": json.dumps({"numRecords": count}),
        }})
    (lake / "_delta_log" / f"{0:020}.json").write_text("".join(json.dumps(a) + "\n" for a in actions))


class AddedColumnTest(TierChecks):
    """A lake table made before a column was added to its landing table within version 2
    (`profiles` before `clock_source`): the next publish adds the column, and DuckDB reads it
    by name, NULL in the rows published before."""

    ADDED = "clock_source"

    @classmethod
    def setUpClass(cls):
        cls.store = new_store(cls, "added-column")
        cls.inputs = cls.store.root.parent / "inputs"

    def test_the_next_publish_adds_the_column(self):
        store, con = self.store, reader()
        before = staged(self.inputs, "before.folded", FOLDED.read_bytes())
        store.convert([before], FOLDED_META, publish=True)
        make_table_without(store, con, "profiles", self.ADDED)
        profiles = lake_scan(store.root, "profiles")
        self.assertNotIn(self.ADDED, [name for name, _ in self.columns(con, profiles)])
        before_id = store.source_of_key(con, before.name)

        after = staged(self.inputs, "after.folded", FOLDED.read_bytes() + b"thread (5): after 5\n")
        store.convert([after], FOLDED_META, publish=True)
        after_id = store.source_of_key(con, after.name)
        self.assertEqual(self.columns(con, profiles)[-2:], [("dt", "VARCHAR"), (self.ADDED, "VARCHAR")])

        per_value = f"SELECT source_id, dt, {self.ADDED}, count(*) FROM {{}} GROUP BY ALL"
        landing = rows(con, per_value.format(landing_scan(store.root, "profiles")))
        want = collections.Counter()
        for source_id, day, value, count in landing:
            want[(source_id, day, None if source_id == before_id else value)] += count
        self.assertTrue(any(k[0] == after_id and k[2] is not None for k in want), landing)
        self.assertEqual(collections.Counter({(a, b, c): n for a, b, c, n in rows(con, per_value.format(profiles))}), want)
        self.check_same_rows(con, store, [t for t in TABLES if t != "profiles"])

        store.compact("--retention-hours", "0")
        for day, files in store.active_files(con, "profiles").items():
            self.assertEqual(len(files), 1, f"dt={day}: {files}")
        self.assertEqual(collections.Counter({(a, b, c): n for a, b, c, n in rows(con, per_value.format(profiles))}), want)
        self.check_same_rows(con, store, [t for t in TABLES if t != "profiles"])
        con.close()


class ReadWhileCompactingTest(unittest.TestCase):
    """Readers querying the lake while `compact` rewrites it always see each row once."""

    BATCHES = 8
    READERS = 2

    @classmethod
    def setUpClass(cls):
        cls.store = new_store(cls, "readers")
        publish_batches(cls.store, cls.store.root.parent / "inputs", cls.BATCHES, "read")

    def test_totals_never_change_during_compact(self):
        store = self.store
        con = reader()
        expected = store.totals(con, "landing")
        self.assertEqual(store.totals(con, "lake"), expected)
        files_before = {t: set().union(*store.active_files(con, t).values()) for t in TABLES}
        con.close()

        done = threading.Event()
        seen: list[tuple[float, float, dict | str]] = []
        lock = threading.Lock()

        def read_loop():
            con = reader()
            try:
                while True:
                    last = done.is_set()
                    start = time.monotonic()
                    try:
                        got: dict | str = store.totals(con, "lake")
                    except Exception as e:  # noqa: BLE001 - a failed read is a finding
                        got = f"{type(e).__name__}: {e}"
                    with lock:
                        seen.append((start, time.monotonic(), got))
                    if last:
                        return
            finally:
                con.close()

        threads = [threading.Thread(target=read_loop) for _ in range(self.READERS)]
        for t in threads:
            t.start()
        time.sleep(0.2)  # readers under way before the compaction starts
        began = time.monotonic()
        run = subprocess.run([str(BIN), "compact", "--store", str(store.root)], capture_output=True, text=True,
                             timeout=TIMEOUT_S)
        ended = time.monotonic()
        done.set()
        for t in threads:
            t.join(timeout=TIMEOUT_S)
        self.assertEqual(run.returncode, 0, run.stderr)

        wrong = [(s - began, got) for s, _, got in seen if got != expected]
        self.assertEqual(wrong[:3], [], f"{len(wrong)} of {len(seen)} reads saw other totals than {expected}")
        overlapping = sum(1 for s, e, _ in seen if s < ended and e > began)
        inside = sum(1 for s, e, _ in seen if s >= began and e <= ended)
        print(f"\n  {len(seen)} reads, {overlapping} while compact ran ({inside} wholly), compact took "
              f"{ended - began:.2f} s", file=sys.stderr)
        self.assertTrue(overlapping, "no read ran while compact did")

        con = reader()
        for table in TABLES:
            after = set().union(*store.active_files(con, table).values())
            self.assertNotEqual(after, files_before[table], f"{table}: compact rewrote nothing")
        self.assertEqual(store.totals(con, "lake"), expected)
        con.close()


class ConcurrentPublishTest(TierChecks):
    """Two `publish` processes at once on the same store never count an upload twice."""

    ROUNDS = 3

    @classmethod
    def setUpClass(cls):
        cls.store = new_store(cls, "concurrent")
        cls.inputs = cls.store.root.parent / "inputs"

    def test_two_publishers_at_once(self):
        store, con = self.store, reader()
        meta = folded_metadata(self.inputs, "concurrent.metadata.json")
        for round_ in range(self.ROUNDS):
            with self.subTest(round=round_):
                # New uploads, and in later rounds one replaced, all unpublished.
                for i in range(3):
                    path = staged(self.inputs / f"r{round_}", f"c{round_}_{i}.folded",
                                  FOLDED.read_bytes() + f"thread (7{i}): r{round_} {i + 1}\n".encode())
                    store.convert([path], meta)
                if round_:
                    store.reupload("c0_0.folded", FOLDED.read_bytes() + f"thread (8): again {round_}\n".encode(),
                                   folded_sidecar())
                if round_ == 1:
                    store.convert([PPROF], PPROF_META)
                publishers = [
                    subprocess.Popen([str(BIN), "publish", "--store", str(store.root)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                    for _ in range(2)
                ]
                results = [(p.wait(timeout=TIMEOUT_S), p.stderr.read()) for p in publishers]
                for p in publishers:
                    p.stdout.close()
                    p.stderr.close()
                for code, err in results:
                    self.assertEqual(code, 0, f"a concurrent publish failed:\n{err}")
                self.check_same_rows(con, store)
                self.assertEqual(store.totals(con, "lake"), store.totals(con, "landing"))
        # And a third publish alone finds nothing to do.
        log = {t: store.log_entries(t) for t in TABLES}
        store.publish()
        self.assertEqual({t: store.log_entries(t) for t in TABLES}, log)
        con.close()


def main() -> int:
    suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__])
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
    # A test with failing subtests fails once; a module or class set-up error (no test of it
    # ran) counts as one failure. Skips count as failures: nothing here may skip.
    failing = {getattr(t, "test_case", t).id() for t, _ in result.failures + result.errors}
    failing |= {t.id() for t in result.unexpectedSuccesses}
    failing |= {t.id() for t, _ in result.skipped}
    ran_and_failed = {t for t in failing if "(" not in t and not t.startswith("setUpModule")}
    passed = result.testsRun - len(ran_and_failed)
    ok = result.wasSuccessful() and not result.skipped and result.testsRun > 0
    if result.testsRun == 0 and not failing:
        failing.add("no test ran")
    print(f"\nlake tests: {max(passed, 0)} passed, {len(failing)} failed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
