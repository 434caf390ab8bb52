#!/usr/bin/env python3
"""The analysts' queries (docs/queries.sql) against real conversions of every sample input.

Converts each sample input (`samples/<format>/<name>.<ext>` beside a `<name>.expected/`
directory, with `<name>.metadata.json` when present) with the proflake CLI, then

* runs every `-- name:` query of docs/queries.sql in DuckDB and checks its answer against an
  independent computation from the Sample v2 chunk JSON the same conversion wrote;
* checks that the tables' totals equal the chunks' sample counts, ids resolve, and the files
  follow docs/tables.md (columns, types, nullability, key-value metadata, partitions, sorting);
* checks that converting twice gives byte-identical Parquet files.

Plain Python: `python tests/duckdb/test_queries.py`. The CLI comes from $PROFLAKE_BIN (default
target/debug/proflake). The last line printed is `duckdb tests: N passed, M failed`.
"""

from __future__ import annotations

import collections
import datetime as dt
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import duckdb

REPO = Path(__file__).resolve().parents[2]
QUERIES_SQL = Path(os.environ.get("PROFLAKE_QUERIES_SQL", REPO / "docs" / "queries.sql"))
TABLES_MD = REPO / "docs" / "tables.md"
BIN = Path(os.environ.get("PROFLAKE_BIN", REPO / "target" / "debug" / "proflake"))
if not BIN.is_absolute():
    BIN = REPO / BIN

TABLES = ["profiles", "samples", "stacks", "frames", "function_rollup"]
HUGE = 1_000_000_000

# The upload converted twice under two releases for the release comparison.
RELEASE_INPUT = ("samples/folded/pyspy.folded", "samples/folded/pyspy.metadata.json")
RELEASE_SERVICE = "release-check"
RELEASE_A = "workload@1.0.0"
RELEASE_B = "workload@1.1.0"
# The same upload converted on two days, for partition pruning.
DAY1 = 1_763_800_000  # 2025-11-22 08:26:40 UTC
DAY2 = DAY1 + 2 * 86_400


# ------------------------------------------------------------------------------------------
# docs/queries.sql


def parse_queries(text: str) -> tuple[str, dict[str, str]]:
    """The set-up block (everything before the first `-- name:`) and the named queries."""
    parts = re.split(r"^-- name: *(\S+) *$", text, flags=re.M)
    setup, rest = parts[0], parts[1:]
    queries: dict[str, str] = {}
    for name, body in zip(rest[0::2], rest[1::2]):
        if name in queries:
            raise ValueError(f"query {name} named twice")
        queries[name] = body.strip()
    return setup, queries


SETUP_SQL, QUERIES = parse_queries(QUERIES_SQL.read_text())


def literal(value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dt.datetime):
        return f"TIMESTAMPTZ '{value.astimezone(dt.timezone.utc).isoformat()}'"
    return "'" + str(value).replace("'", "''") + "'"


def connect(root: Path, **params) -> duckdb.DuckDBPyConnection:
    """A session with the parameters set first, then the file's own set-up block."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute(f"SET VARIABLE tables_root = {literal(str(root))}")
    for name, value in params.items():
        con.execute(f"SET VARIABLE {name} = {literal(value)}")
    con.execute(SETUP_SQL)
    # Again after the set-up, which replaces NULL (unset) with its example values.
    for name, value in params.items():
        con.execute(f"SET VARIABLE {name} = {literal(value)}")
    return con


def run_query(root: Path, name: str, **params) -> list[dict]:
    """A named query's rows, in its order. TIMESTAMPTZ values come back as microseconds since
    the epoch (DuckDB's Python client would need pytz to return them as datetimes)."""
    con = connect(root, **params)
    con.execute(f"CREATE TEMP TABLE answer AS {QUERIES[name].rstrip().rstrip(';')}")
    columns = con.execute("SELECT column_name, column_type FROM (DESCRIBE answer)").fetchall()
    select = ", ".join(
        f'epoch_us("{c}") AS "{c}"' if t == "TIMESTAMP WITH TIME ZONE" else f'"{c}"' for c, t in columns
    )
    rows = con.execute(f"SELECT {select} FROM answer ORDER BY rowid").fetchall()
    con.close()
    return [dict(zip([c for c, _ in columns], r)) for r in rows]


def sql(con, query: str, *args) -> list[tuple]:
    return con.execute(query, list(args)).fetchall()


# ------------------------------------------------------------------------------------------
# Conversions and the Sample v2 chunks they wrote


def sample_inputs() -> list[tuple[Path, Path | None]]:
    """Each sample input with an expected output, and its metadata file when it has one."""
    found = []
    for fmt in sorted(p for p in (REPO / "samples").iterdir() if p.is_dir()):
        for path in sorted(p for p in fmt.iterdir() if p.is_file()):
            stem = path.name.split(".")[0]
            if path.name.endswith(".metadata.json") or not (fmt / f"{stem}.expected").is_dir():
                continue
            meta = fmt / f"{stem}.metadata.json"
            found.append((path, meta if meta.is_file() else None))
    return found


def convert(inputs: list[Path], out: Path, metadata: Path | None = None, *flags: str) -> None:
    args = [str(BIN), "convert", *map(str, inputs), "--out", str(out)]
    if metadata is not None:
        args += ["--metadata", str(metadata)]
    args += list(flags)
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({run.returncode}):\n{run.stderr}")


class Chunk:
    """One Sample v2 chunk, read independently of the tables."""

    def __init__(self, path: Path, source_id: str, source_format: str):
        data = json.loads(path.read_text())
        self.data = data
        self.source_id = source_id
        self.source_format = source_format
        self.chunk_id = data["chunk_id"]
        prof = data["profile"]
        self.frames = prof["frames"]
        self.stacks = prof["stacks"]
        self.samples = prof["samples"]
        self.thread_names = {
            int(tid): meta.get("name") for tid, meta in prof.get("thread_metadata", {}).items()
        }

    def frame_name(self, index: int) -> str:
        """The table's `frames.name` rule applied to a chunk frame: function, else
        `<image file name>!0x<address>`, else `<unknown>`."""
        frame = self.frames[index]
        if frame.get("function") is not None:
            return frame["function"]
        if frame.get("instruction_addr") is not None:
            image = os.path.basename(frame["package"]) if frame.get("package") else "?"
            return f"{image}!{frame['instruction_addr']}"
        return "<unknown>"

    def stack_of(self, sample: dict) -> list[int]:
        """Leaf-first frame indices of a sample ([] for an idle sample)."""
        return self.stacks[sample["stack_id"]]

    def with_stack(self) -> list[dict]:
        return [s for s in self.samples if self.stack_of(s)]


class Output:
    """A conversion output directory: manifests and chunks."""

    def __init__(self, root: Path):
        self.root = root
        self.manifests = {}
        self.chunks: dict[str, Chunk] = {}
        for path in sorted(root.glob("converted/*/manifest.json")):
            manifest = json.loads(path.read_text())
            source_id = manifest["source"]["source_id"]
            self.manifests[source_id] = manifest
            for out in manifest["outputs"]:
                if out["kind"] == "sample_v2":
                    self.chunks[out["chunk_id"]] = Chunk(
                        root / out["key"], source_id, manifest["source"]["format"]
                    )

    def chunks_of(self, source_id: str) -> list[Chunk]:
        return [c for c in self.chunks.values() if c.source_id == source_id]

    def parquet_files(self) -> dict[str, bytes]:
        base = self.root / "tables"
        return {
            str(p.relative_to(self.root)): p.read_bytes() for p in sorted(base.rglob("*.parquet"))
        }


class Ctx:
    tmp: Path
    main: Output
    again: Output
    release: Output
    days: Output
    profile_keys: dict[str, tuple]  # profile_id -> (service, sample_unit), from the tables


CTX = Ctx()


def setUpModule():
    if not BIN.is_file():
        raise RuntimeError(f"no proflake binary at {BIN} (set PROFLAKE_BIN)")
    CTX.tmp = Path(tempfile.mkdtemp(prefix="proflake-duckdb-"))
    main, again = CTX.tmp / "main", CTX.tmp / "again"
    for path, meta in sample_inputs():
        convert([path], main, meta)
        convert([path], again, meta)
    CTX.main, CTX.again = Output(main), Output(again)

    # The same upload twice (two keys, so two source ids), once per release.
    release = CTX.tmp / "release"
    src, meta = (REPO / p for p in RELEASE_INPUT)
    staged = CTX.tmp / "staged"
    staged.mkdir()
    for tag, rel in (("a", RELEASE_A), ("b", RELEASE_B)):
        copy = staged / f"release_{tag}.folded"
        shutil.copyfile(src, copy)
        convert([copy], release, meta, "--release", rel, "--service", RELEASE_SERVICE)
    CTX.release = Output(release)

    # The same upload on two days.
    days = CTX.tmp / "days"
    for tag, start in (("day1", DAY1), ("day2", DAY2)):
        copy = staged / f"{tag}.folded"
        shutil.copyfile(src, copy)
        convert([copy], days, meta, "--start-time", str(start))
    CTX.days = Output(days)

    con = connect(main)
    CTX.profile_keys = {
        pid: (svc, unit) for pid, svc, unit in sql(con, "SELECT profile_id, service, sample_unit FROM profiles")
    }
    con.close()


def tearDownModule():
    if getattr(CTX, "tmp", None) is not None:
        shutil.rmtree(CTX.tmp, ignore_errors=True)


def chunk_tid(value) -> int:
    """A table thread id as the chunk writes it: Sample v2 needs one, so an unknown (NULL)
    thread id is written as "0" there."""
    return 0 if value is None else value


def timestamp_us(seconds: float) -> int:
    return round(seconds * 1_000_000)


def group_key(chunk: Chunk) -> tuple:
    """(service, sample_unit) of a chunk's profile: the grouping every per-service query uses."""
    return CTX.profile_keys[chunk.chunk_id]


def comparable(name: str) -> str:
    """A frame name for comparing paths: an unsymbolized frame's address dropped. The table
    names it by the address as recorded (image-relative for Perfetto), the chunk holds the
    absolute address; unsymbolized_frames_by_build_id checks the addresses themselves."""
    return re.sub(r"!0x[0-9a-f]+$", "!0x…", name)


def is_generated_name(name: str) -> bool:
    """A `frames.name` made for a frame without a function."""
    return name == "<unknown>" or re.fullmatch(r".*!0x[0-9a-f]+", name) is not None


# ------------------------------------------------------------------------------------------
# Expectations from the chunk JSON


def expected_self(chunks) -> dict[tuple, collections.Counter]:
    """Leaf frame names by sample count, per (service, unit)."""
    out: dict[tuple, collections.Counter] = collections.defaultdict(collections.Counter)
    for c in chunks:
        for s in c.with_stack():
            out[group_key(c)][c.frame_name(c.stack_of(s)[0])] += 1
    return out


def expected_total(chunks) -> dict[tuple, collections.Counter]:
    """Frame names anywhere in the stack, once per sample, per (service, unit)."""
    out: dict[tuple, collections.Counter] = collections.defaultdict(collections.Counter)
    for c in chunks:
        for s in c.with_stack():
            for name in {c.frame_name(i) for i in c.stack_of(s)}:
                out[group_key(c)][name] += 1
    return out


def split_by_function(counter: collections.Counter, named: set[str]):
    """Counts of names that are real functions, and the sum of the rest."""
    functions = {k: v for k, v in counter.items() if k in named}
    return functions, sum(v for k, v in counter.items() if k not in named)


def function_names(chunks) -> set[str]:
    return {f["function"] for c in chunks for f in c.frames if f.get("function") is not None}


# ------------------------------------------------------------------------------------------
# Tests


class QueryFileTest(unittest.TestCase):
    def test_file_has_setup_and_named_queries(self):
        for view in ["profiles", "samples", "stacks", "frames", "function_rollup"]:
            self.assertRegex(SETUP_SQL, rf"CREATE OR REPLACE VIEW {view} AS")
        self.assertIn("getvariable('tables_root')", SETUP_SQL)
        self.assertGreaterEqual(len(QUERIES), 8)
        for name, body in QUERIES.items():
            self.assertRegex(name, r"^[a-z][a-z0-9_]*$")
            first = body.splitlines()[0]
            self.assertTrue(first.startswith("-- ") and len(first) > 10, f"{name}: no one-line comment")
            code = "\n".join(l for l in body.splitlines() if not l.lstrip().startswith("--"))
            code = re.sub(r"'[^']*'", "''", code)
            self.assertEqual(code.strip().count(";"), 1, f"{name}: not exactly one statement")
            self.assertTrue(code.strip().endswith(";"), name)
            self.assertNotRegex(code, r"\w\s*->\s*\w", f"{name}: DuckDB 2.0 rejects -> lambdas")

    def test_every_query_has_a_check(self):
        checked = {n[len("test_query_"):] for n in dir(NamedQueriesTest) if n.startswith("test_query_")}
        self.assertEqual(set(QUERIES), checked)

    def test_every_query_runs_with_its_default_parameters(self):
        # The file's own example values fit the README's sample (the Android trace), which the
        # main output holds; every query must answer with rows.
        con = duckdb.connect()
        con.execute("SET TimeZone = 'UTC'")
        con.execute(f"SET VARIABLE tables_root = {literal(str(CTX.main.root))}")
        con.execute(SETUP_SQL)
        for name, query in QUERIES.items():
            with self.subTest(query=name):
                con.execute(f"CREATE OR REPLACE TEMP TABLE answer AS {query.rstrip().rstrip(';')}")
                rows = con.execute("SELECT count(*) FROM answer").fetchone()[0]
                self.assertGreater(rows, 0, f"{name} returned no rows")
        con.close()


class NamedQueriesTest(unittest.TestCase):
    maxDiff = None

    def chunks(self):
        return list(CTX.main.chunks.values())

    def test_query_top_self_functions(self):
        chunks = self.chunks()
        named = function_names(chunks)
        expected = expected_self(chunks)
        rows = run_query(CTX.main.root, "top_self_functions", top_n=HUGE)
        actual: dict[tuple, collections.Counter] = collections.defaultdict(collections.Counter)
        for r in rows:
            key = (r["service"], r["sample_unit"])
            self.assertNotIn(r["function"], actual[key], f"{key}: {r['function']} twice")
            actual[key][r["function"]] = r["self_samples"]
        self.assertEqual(set(actual), set(expected))
        for key in expected:
            with self.subTest(group=key):
                exp_f, exp_rest = split_by_function(expected[key], named)
                act_f, act_rest = split_by_function(actual[key], named)
                self.assertEqual(act_f, exp_f)
                self.assertEqual(act_rest, exp_rest)
                for name in actual[key]:
                    if name not in named:
                        self.assertTrue(is_generated_name(name), name)
                group = [r for r in rows if (r["service"], r["sample_unit"]) == key]
                self.assertAlmostEqual(sum(r["self_pct"] for r in group), 100.0, delta=0.01 * len(group) + 0.01)
                weights = [r["self_weight"] for r in group]
                self.assertEqual(weights, sorted(weights, reverse=True))
        # The cut keeps each group's first top_n rows.
        top = run_query(CTX.main.root, "top_self_functions", top_n=3)
        for key in expected:
            full = [r for r in rows if (r["service"], r["sample_unit"]) == key][:3]
            cut = [r for r in top if (r["service"], r["sample_unit"]) == key]
            self.assertEqual(cut, full)

    def test_query_top_total_functions(self):
        chunks = self.chunks()
        named = function_names(chunks)
        expected = expected_total(chunks)
        rows = run_query(CTX.main.root, "top_total_functions", top_n=HUGE)
        actual: dict[tuple, collections.Counter] = collections.defaultdict(collections.Counter)
        for r in rows:
            key = (r["service"], r["sample_unit"])
            self.assertNotIn(r["function"], actual[key])
            actual[key][r["function"]] = r["total_samples"]
        self.assertEqual(set(actual), set(expected))
        with_stack = collections.Counter()
        for c in chunks:
            with_stack[group_key(c)] += len(c.with_stack())
        for key in expected:
            with self.subTest(group=key):
                exp_f, _ = split_by_function(expected[key], named)
                act_f, _ = split_by_function(actual[key], named)
                self.assertEqual(act_f, exp_f)
                # No function is on more samples than the group has; the roots are on all.
                self.assertLessEqual(max(actual[key].values()), with_stack[key])
                for r in rows:
                    if (r["service"], r["sample_unit"]) == key:
                        self.assertLessEqual(r["total_pct"], 100.0)
        top = run_query(CTX.main.root, "top_total_functions", top_n=2)
        for key in expected:
            full = [r for r in rows if (r["service"], r["sample_unit"]) == key][:2]
            cut = [r for r in top if (r["service"], r["sample_unit"]) == key]
            self.assertEqual(cut, full)

    def test_query_top_functions_rollup(self):
        chunks = self.chunks()
        named = function_names(chunks)
        exp_self, exp_total = expected_self(chunks), expected_total(chunks)
        rows = run_query(CTX.main.root, "top_functions_rollup", top_n=HUGE)
        act_self: dict[tuple, collections.Counter] = collections.defaultdict(collections.Counter)
        act_total: dict[tuple, collections.Counter] = collections.defaultdict(collections.Counter)
        for r in rows:
            key = (r["service"], r["sample_unit"])
            act_self[key][r["function"]] = r["self_samples"]
            act_total[key][r["function"]] = r["total_samples"]
        self.assertEqual(set(act_total), set(exp_total))
        for key in exp_self:
            with self.subTest(group=key):
                self.assertEqual(
                    split_by_function(+act_self[key], named), split_by_function(exp_self[key], named)
                )
        # The rollup's weights agree with the samples they summarize.
        con = connect(CTX.main.root)
        by_samples = dict(
            ((svc, unit, fn), (w, n))
            for svc, unit, fn, w, n in sql(
                con,
                """SELECT p.service, p.sample_unit, f.name, sum(s.weight), count(*)
                   FROM samples s JOIN profiles p USING (profile_id)
                   JOIN stacks st ON st.profile_id = s.profile_id AND st.stack_id = s.stack_id
                   JOIN frames f ON f.profile_id = st.profile_id AND f.frame_id = st.frame_id
                   GROUP BY ALL""",
            )
        )
        con.close()
        by_rollup = {
            (r["service"], r["sample_unit"], r["function"]): (r["self_weight"], r["self_samples"])
            for r in rows
            if r["self_samples"] > 0
        }
        self.assertEqual(by_rollup, by_samples)

    def test_rollup_totals_count_every_function_on_the_stack(self):
        """function_rollup.total_samples: samples with the function anywhere in the stack, as the
        chunk's stacks show it (functions a frame was inlined into included, as in
        top_total_functions and the flame graph)."""
        chunks = self.chunks()
        named = function_names(chunks)
        expected = expected_total(chunks)
        rows = run_query(CTX.main.root, "top_functions_rollup", top_n=HUGE)
        actual: dict[tuple, collections.Counter] = collections.defaultdict(collections.Counter)
        for r in rows:
            actual[(r["service"], r["sample_unit"])][r["function"]] = r["total_samples"]
        for key in expected:
            with self.subTest(group=key):
                self.assertEqual(split_by_function(actual[key], named)[0], split_by_function(expected[key], named)[0])

    def test_query_flame_graph_folded(self):
        services = sorted({svc for svc, _ in CTX.profile_keys.values()}, key=lambda s: (s is None, s or ""))
        self.assertTrue(services)
        for service in services:
            with self.subTest(service=service):
                chunks = [c for c in self.chunks() if group_key(c)[0] == service]
                expected = collections.Counter()
                for c in chunks:
                    for s in c.with_stack():
                        path = ";".join(comparable(c.frame_name(i)) for i in reversed(c.stack_of(s)))
                        expected[(group_key(c)[1], path)] += 1
                rows = run_query(CTX.main.root, "flame_graph_folded", service=service)
                raw = [(r["sample_unit"], r["folded"].rsplit(" ", 1)[0]) for r in rows]
                self.assertEqual(len(raw), len(set(raw)), "a stack folded twice")
                actual = collections.Counter()
                weights = collections.Counter()
                for r in rows:
                    path, weight = r["folded"].rsplit(" ", 1)
                    path = ";".join(comparable(n) for n in path.split(";"))
                    actual[(r["sample_unit"], path)] += r["samples"]
                    weights[r["sample_unit"]] += int(weight)
                    self.assertGreater(int(weight), 0)
                self.assertEqual(actual, expected)
                con = connect(CTX.main.root)
                total = dict(
                    sql(
                        con,
                        """SELECT p.sample_unit, sum(s.weight) FROM samples s JOIN profiles p USING (profile_id)
                           WHERE p.service IS NOT DISTINCT FROM ? AND s.stack_id IS NOT NULL GROUP BY ALL""",
                        service,
                    )
                )
                con.close()
                self.assertEqual(dict(weights), total)

    def test_query_cpu_per_thread(self):
        expected = collections.Counter()
        names = {}
        for c in self.chunks():
            for s in c.samples:
                tid = int(s["thread_id"])
                key = group_key(c) + (tid,)
                expected[key] += 1
                names.setdefault(key, set()).add(c.thread_names.get(tid))
        rows = run_query(CTX.main.root, "cpu_per_thread")
        actual = collections.Counter()
        for r in rows:
            key = (r["service"], r["sample_unit"], chunk_tid(r["thread_id"]))
            actual[key] += r["samples"]
            self.assertIn(r["thread_name"], names.get(key, set()), key)
        self.assertEqual(actual, expected)
        con = connect(CTX.main.root)
        totals = dict(
            ((svc, unit), w)
            for svc, unit, w in sql(con, "SELECT service, sample_unit, sum(total_weight) FROM profiles GROUP BY ALL")
        )
        con.close()
        weights = collections.Counter()
        for r in rows:
            weights[(r["service"], r["sample_unit"])] += r["weight"]
        self.assertEqual(dict(weights), totals)

    def test_query_release_comparison(self):
        root = CTX.release.root
        chunks = list(CTX.release.chunks.values())
        self.assertEqual({c.data["release"] for c in chunks}, {RELEASE_A, RELEASE_B})
        # Each release's leaf shares, from its chunks' sample counts.
        shares = {}
        for rel in (RELEASE_A, RELEASE_B):
            counts = collections.Counter()
            for c in chunks:
                if c.data["release"] == rel:
                    for s in c.with_stack():
                        counts[c.frame_name(c.stack_of(s)[0])] += 1
            total = sum(counts.values())
            shares[rel] = {k: 100.0 * v / total for k, v in counts.items()}
        self.assertEqual(shares[RELEASE_A], shares[RELEASE_B])
        rows = run_query(root, "release_comparison", release_a=RELEASE_A, release_b=RELEASE_B)
        self.assertEqual({r["service"] for r in rows}, {RELEASE_SERVICE})
        self.assertEqual({r["function"] for r in rows}, set(shares[RELEASE_A]))
        for r in rows:
            with self.subTest(function=r["function"]):
                self.assertEqual(r["self_weight_a"], r["self_weight_b"])
                self.assertEqual(r["self_pct_a"], r["self_pct_b"])
                self.assertEqual(r["delta_pct"], 0)
                # Folded counts: one sample per count, weight 1 each.
                self.assertAlmostEqual(float(r["self_pct_a"]), shares[RELEASE_A][r["function"]], delta=1e-4)
        # Against a release with no samples, B's shares are all 0 and the deltas are -A's.
        rows = run_query(root, "release_comparison", release_a=RELEASE_A, release_b="never-released")
        self.assertEqual({r["function"] for r in rows}, set(shares[RELEASE_A]))
        for r in rows:
            self.assertEqual(r["self_pct_b"], 0)
            self.assertEqual(r["delta_pct"], -r["self_pct_a"])
        self.assertAlmostEqual(float(sum(r["self_pct_a"] for r in rows)), 100.0, delta=0.01)

    def test_query_unsymbolized_frames_by_build_id(self):
        chunks = self.chunks()
        addresses = collections.defaultdict(set)
        samples = collections.Counter()
        for c in chunks:
            # No function; or the writer's "<unknown>", which it adds to a frame that has
            # neither function, file nor address.
            unsym = {
                i: f.get("package")
                for i, f in enumerate(c.frames)
                if f.get("function") is None
                or (f["function"] == "<unknown>" and f.get("filename") is None and f.get("instruction_addr") is None)
            }
            for i, pkg in unsym.items():
                addresses[pkg]
                if c.frames[i].get("instruction_addr") is not None:
                    addresses[pkg].add(int(c.frames[i]["instruction_addr"], 16))
            for s in c.with_stack():
                for pkg in {unsym[i] for i in c.stack_of(s) if i in unsym}:
                    samples[pkg] += 1
        self.assertTrue(addresses, "the samples hold no unsymbolized frame: nothing is checked")
        rows = run_query(CTX.main.root, "unsymbolized_frames_by_build_id")
        act_addresses = collections.Counter()
        act_samples = collections.Counter()
        for r in rows:
            act_addresses[r["image_path"]] += r["addresses"]
            act_samples[r["image_path"]] += r["samples"]
        self.assertEqual(dict(act_addresses), {k: len(v) for k, v in addresses.items()})
        self.assertEqual(dict(act_samples), dict(samples))
        # Build ids are lowercase hex, as the docs say, wherever an image has one.
        for r in rows:
            if r["build_id"] is not None:
                self.assertRegex(r["build_id"], r"^[0-9a-f]+$")

    def test_query_samples_in_time_window(self):
        # A window inside the Android sample's first minute, away from any sample's instant.
        chunks = self.chunks()
        android = [c for c in chunks if c.source_format == "perfetto"]
        start = min(s["timestamp"] for c in android for s in c.samples)
        lo, hi = timestamp_us(start) + 10_000_000, timestamp_us(start) + 40_000_000
        all_us = [timestamp_us(s["timestamp"]) for c in chunks for s in c.samples]
        while any(abs(t - lo) <= 2 for t in all_us):
            lo += 7
        while any(abs(t - hi) <= 2 for t in all_us):
            hi += 7
        expected = collections.Counter()
        for c in chunks:
            for s in c.samples:
                if lo <= timestamp_us(s["timestamp"]) < hi:
                    expected[group_key(c)] += 1
        self.assertTrue(expected)
        to_dt = lambda us: dt.datetime.fromtimestamp(us / 1e6, dt.timezone.utc)  # noqa: E731
        rows = run_query(CTX.main.root, "samples_in_time_window", time_from=to_dt(lo), time_to=to_dt(hi))
        actual = {(r["service"], r["sample_unit"]): r["samples"] for r in rows}
        self.assertEqual(actual, dict(expected))
        for r in rows:
            self.assertGreaterEqual(r["first_sample"], lo)
            self.assertLess(r["last_sample"], hi)

    def test_time_window_prunes_partitions_and_row_groups(self):
        root = CTX.days.root
        day2 = dt.datetime.fromtimestamp(DAY2, dt.timezone.utc)
        window = dict(time_from=day2, time_to=day2 + dt.timedelta(hours=1))
        rows = run_query(root, "samples_in_time_window", **window)
        chunks = list(CTX.days.chunks.values())
        expected = sum(len(c.samples) for c in chunks if min(s["timestamp"] for s in c.samples) >= DAY2)
        self.assertGreater(expected, 0)
        self.assertEqual(sum(r["samples"] for r in rows), expected)
        self.assertEqual(len(list((root / "tables/v1/samples").glob("dt=*/*.parquet"))), 2)
        con = connect(root, **window)
        plan = "\n".join(r[1] for r in con.execute("EXPLAIN ANALYZE " + QUERIES["samples_in_time_window"].rstrip().rstrip(";")).fetchall())
        # The dt filter: only the second day's samples file is opened.
        day_of = lambda t: dt.datetime.fromtimestamp(t, dt.timezone.utc).date().isoformat()  # noqa: E731
        self.assertIn("Scanning Files: 1/2", plan)
        self.assertIn(f"samples/dt={day_of(DAY2)}/", plan)
        self.assertNotIn(f"samples/dt={day_of(DAY1)}/", plan)
        # The timestamp filter alone: the other day's row group is skipped by its statistics.
        plan = "\n".join(
            r[1]
            for r in con.execute(
                "EXPLAIN ANALYZE SELECT count(*) FROM samples WHERE timestamp >= getvariable('time_from') "
                "AND timestamp < getvariable('time_to')"
            ).fetchall()
        )
        con.close()
        self.assertRegex(plan, r"Row Groups Scanned: 1 / 2")


class TotalsTest(unittest.TestCase):
    """For every sample input: the tables count exactly what the Sample v2 chunks hold."""

    def setUp(self):
        self.con = connect(CTX.main.root)

    def tearDown(self):
        self.con.close()

    def one(self, query, *args):
        return sql(self.con, query, *args)[0][0]

    def test_every_sample_input_was_converted(self):
        formats = {m["source"]["format"] for m in CTX.main.manifests.values()}
        self.assertEqual(len(CTX.main.manifests), len(sample_inputs()))
        for fmt in ["perfetto", "otlp", "pprof", "folded", "sentry-envelope"]:
            self.assertIn(fmt, formats)

    def test_sample_counts_per_profile_equal_chunks(self):
        for source_id, manifest in CTX.main.manifests.items():
            with self.subTest(source=manifest["source"]["key"]):
                chunks = CTX.main.chunks_of(source_id)
                self.assertTrue(chunks)
                profile_ids = {
                    r[0] for r in sql(self.con, "SELECT profile_id FROM profiles WHERE source_id = ?", source_id)
                }
                self.assertEqual(profile_ids, {c.chunk_id for c in chunks})
                for c in chunks:
                    n = self.one("SELECT count(*) FROM samples WHERE profile_id = ?", c.chunk_id)
                    self.assertEqual(n, len(c.samples), c.chunk_id)
                    self.assertEqual(
                        self.one("SELECT samples FROM profiles WHERE profile_id = ?", c.chunk_id), len(c.samples)
                    )
                    with_stack = self.one(
                        "SELECT count(*) FROM samples WHERE profile_id = ? AND stack_id IS NOT NULL", c.chunk_id
                    )
                    self.assertEqual(with_stack, len(c.with_stack()), c.chunk_id)
                self.assertEqual(
                    self.one("SELECT sum(samples) FROM profiles WHERE source_id = ?", source_id),
                    manifest["profile"]["samples_written"],
                )

    def test_profiles_describe_their_chunks(self):
        for c in CTX.main.chunks.values():
            with self.subTest(chunk=c.chunk_id):
                row = self.con.execute(
                    """SELECT profiler_id, platform, release, environment, source_format, source_id,
                              epoch_us(start_time), epoch_us(end_time) FROM profiles WHERE profile_id = ?""",
                    [c.chunk_id],
                ).fetchone()
                manifest = CTX.main.manifests[c.source_id]
                self.assertEqual(
                    row[:6],
                    (
                        c.data["profiler_id"],
                        c.data["platform"],
                        c.data.get("release"),
                        c.data.get("environment"),
                        manifest["source"]["format"],
                        c.source_id,
                    ),
                )
                times = [timestamp_us(s["timestamp"]) for s in c.samples]
                self.assertLessEqual(abs(row[6] - min(times)), 1)
                self.assertLessEqual(abs(row[7] - max(times)), 1)

    def test_total_weight_is_sum_of_sample_weights(self):
        bad = sql(
            self.con,
            """SELECT p.profile_id, p.total_weight, s.w FROM profiles p
               LEFT JOIN (SELECT profile_id, sum(weight) AS w FROM samples GROUP BY 1) s USING (profile_id)
               WHERE s.w IS DISTINCT FROM p.total_weight""",
        )
        self.assertEqual(bad, [])
        self.assertGreater(self.one("SELECT count(*) FROM profiles"), 0)

    def test_threads_match_chunks(self):
        for c in CTX.main.chunks.values():
            with self.subTest(chunk=c.chunk_id):
                actual = collections.Counter(
                    dict(
                        sql(
                            self.con,
                            "SELECT coalesce(thread_id, 0), count(*) FROM samples WHERE profile_id = ? GROUP BY 1",
                            c.chunk_id,
                        )
                    )
                )
                self.assertEqual(actual, collections.Counter(int(s["thread_id"]) for s in c.samples))

    def test_ids_resolve(self):
        checks = {
            "samples.stack_id -> stacks": """SELECT count(*) FROM samples s WHERE s.stack_id IS NOT NULL AND NOT EXISTS
                (SELECT 1 FROM stacks st WHERE st.profile_id = s.profile_id AND st.stack_id = s.stack_id)""",
            "samples.profile_id -> profiles": """SELECT count(*) FROM samples s WHERE NOT EXISTS
                (SELECT 1 FROM profiles p WHERE p.profile_id = s.profile_id)""",
            "stacks.frame_id -> frames": """SELECT count(*) FROM stacks st WHERE NOT EXISTS
                (SELECT 1 FROM frames f WHERE f.profile_id = st.profile_id AND f.frame_id = st.frame_id)""",
            "stacks.parent_id -> stacks, one level up, earlier": """SELECT count(*) FROM stacks c WHERE c.parent_id IS NOT NULL
                AND NOT EXISTS (SELECT 1 FROM stacks p WHERE p.profile_id = c.profile_id AND p.stack_id = c.parent_id
                                AND p.depth + 1 = c.depth AND p.stack_id < c.stack_id)""",
            "roots at depth 0": "SELECT count(*) FROM stacks WHERE (parent_id IS NULL) <> (depth = 0)",
            "stack ids dense": """SELECT count(*) FROM (SELECT profile_id, max(stack_id) + 1 - count(DISTINCT stack_id) AS gap
                FROM stacks GROUP BY 1) WHERE gap <> 0 OR gap IS NULL""",
            "frame ids dense": """SELECT count(*) FROM (SELECT profile_id, max(frame_id) + 1 - count(DISTINCT frame_id) AS gap
                FROM frames GROUP BY 1) WHERE gap <> 0 OR gap IS NULL""",
            "one dt per profile": """SELECT count(*) FROM (SELECT profile_id, count(DISTINCT dt) AS n FROM
                (SELECT profile_id, dt FROM samples UNION ALL SELECT profile_id, dt FROM stacks
                 UNION ALL SELECT profile_id, dt FROM frames UNION ALL SELECT profile_id, dt FROM profiles)
                GROUP BY 1) WHERE n <> 1""",
            "profiles dt is the UTC date of start_time": """SELECT count(*) FROM profiles
                WHERE dt <> CAST(timezone('UTC', start_time) AS DATE)""",
            "rollup dt is the UTC date of hour": """SELECT count(*) FROM function_rollup
                WHERE dt <> CAST(timezone('UTC', hour) AS DATE) OR hour <> date_trunc('hour', hour)""",
        }
        for what, query in checks.items():
            with self.subTest(check=what):
                self.assertEqual(self.one(query), 0)

    def test_chunk_stacks_equal_table_stacks(self):
        # Each sample's call path, leaf first with inlined callers expanded, as in the chunk.
        con = self.con
        for c in CTX.main.chunks.values():
            with self.subTest(chunk=c.chunk_id):
                frames = {
                    fid: (name, [i["function"] or "<unknown>" for i in inl])
                    for fid, name, inl in sql(
                        con, "SELECT frame_id, name, inlined_into FROM frames WHERE profile_id = ?", c.chunk_id
                    )
                }
                nodes = {
                    sid: (parent, fid)
                    for sid, parent, fid in sql(
                        con, "SELECT stack_id, parent_id, frame_id FROM stacks WHERE profile_id = ?", c.chunk_id
                    )
                }
                table_paths = collections.Counter()
                for (sid,) in sql(
                    con,
                    "SELECT stack_id FROM samples WHERE profile_id = ? AND stack_id IS NOT NULL",
                    c.chunk_id,
                ):
                    names = []
                    while sid is not None:
                        parent, fid = nodes[sid]
                        name, inlined = frames[fid]
                        names += [comparable(name)] + inlined
                        sid = parent
                    table_paths[tuple(names)] += 1
                chunk_paths = collections.Counter(
                    tuple(comparable(c.frame_name(i)) for i in c.stack_of(s)) for s in c.with_stack()
                )
                self.assertEqual(table_paths, chunk_paths)

    def test_rollup_self_samples_equal_samples_with_a_stack(self):
        for source_id, manifest in CTX.main.manifests.items():
            with self.subTest(source=manifest["source"]["key"]):
                rollup = self.one(
                    f"""SELECT sum(self_samples) FROM read_parquet(
                        '{CTX.main.root}/tables/v1/function_rollup/*/{source_id}.parquet')"""
                )
                rollup_weight = self.one(
                    f"""SELECT sum(self_weight) FROM read_parquet(
                        '{CTX.main.root}/tables/v1/function_rollup/*/{source_id}.parquet')"""
                )
                expected = sum(len(c.with_stack()) for c in CTX.main.chunks_of(source_id))
                self.assertEqual(rollup, expected)
                weight = self.one(
                    """SELECT sum(s.weight) FROM samples s JOIN profiles p USING (profile_id)
                       WHERE p.source_id = ? AND s.stack_id IS NOT NULL""",
                    source_id,
                )
                self.assertEqual(rollup_weight, weight)
                # Every sample's leaf counts in total too.
                self.assertGreaterEqual(
                    self.one(
                        f"""SELECT min(total_samples - self_samples) FROM read_parquet(
                        '{CTX.main.root}/tables/v1/function_rollup/*/{source_id}.parquet')"""
                    ),
                    0,
                )


def docs_columns() -> dict[str, list[tuple[str, str, bool]]]:
    """Each table's (column, type, nullable) rows from docs/tables.md."""
    text = TABLES_MD.read_text()
    out = {}
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        m = re.match(r"`(\w+)`", section)
        if not m or m.group(1) not in TABLES:
            continue
        cols = []
        for line in section.splitlines():
            row = re.match(r"^\| `(\w+)` \| ([^|]+) \|", line)
            if row:
                typ = row.group(2).strip()
                nullable = typ.endswith(", null")
                cols.append((row.group(1), typ.removesuffix(", null"), nullable))
        out[m.group(1)] = cols
    return out


def duckdb_type(doc_type: str) -> str:
    """The DuckDB spelling of a docs/tables.md type."""
    doc_type = doc_type.replace("TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE")
    m = re.fullmatch(r"LIST\((.*)\)", doc_type)
    if m:
        return f"{duckdb_type(m.group(1))}[]"
    m = re.fullmatch(r"STRUCT\((.*)\)", doc_type)
    if m:
        fields = [f.strip().split(" ", 1) for f in m.group(1).split(",")]
        return "STRUCT(" + ", ".join(f'"{n}" {t}' for n, t in fields) + ")"
    return doc_type


def top_level_repetition(con, path) -> dict[str, str]:
    """REQUIRED / OPTIONAL of each top-level column of a Parquet file (nested fields skipped)."""
    schema = con.execute(f"SELECT name, repetition_type, num_children FROM parquet_schema('{path}')").fetchall()
    out = {}
    pending = [schema[0][2]]  # children still to visit at each open level; the root first
    for name, repetition, children in schema[1:]:
        if len(pending) == 1:
            out[name] = repetition
        pending[-1] -= 1
        if children:
            pending.append(children)
        while len(pending) > 1 and pending[-1] == 0:
            pending.pop()
    return out


class FilesTest(unittest.TestCase):
    """The Parquet files follow docs/tables.md."""

    def files(self, table):
        return sorted((CTX.main.root / "tables/v1" / table).glob("dt=*/*.parquet"))

    def test_columns_and_types_match_the_docs(self):
        documented = docs_columns()
        self.assertEqual(set(documented), set(TABLES))
        con = duckdb.connect()
        for table, cols in documented.items():
            for path in self.files(table):
                with self.subTest(file=str(path.relative_to(CTX.main.root))):
                    described = [
                        (name, typ)
                        for name, typ, *_ in con.execute(f"DESCRIBE SELECT * FROM read_parquet('{path}', hive_partitioning = false)").fetchall()
                    ]
                    # DuckDB quotes only some struct field names ("column"): compare unquoted.
                    self.assertEqual(
                        [(n, t.replace('"', "")) for n, t in described],
                        [(n, duckdb_type(t).replace('"', "")) for n, t, _ in cols],
                    )
                    self.assertEqual(
                        top_level_repetition(con, path),
                        {name: "OPTIONAL" if nullable else "REQUIRED" for name, _, nullable in cols},
                    )
        con.close()

    def test_key_value_metadata_and_layout(self):
        con = duckdb.connect()
        for source_id, manifest in CTX.main.manifests.items():
            listed = {o["key"]: o for o in manifest["outputs"] if o["kind"].startswith("table:")}
            for table in TABLES:
                paths = sorted((CTX.main.root / "tables/v1" / table).glob(f"dt=*/{source_id}.parquet"))
                with self.subTest(source=source_id, table=table):
                    self.assertTrue(paths)
                    for path in paths:
                        key = str(path.relative_to(CTX.main.root))
                        self.assertRegex(key, rf"^tables/v1/{table}/dt=\d{{4}}-\d\d-\d\d/{source_id}\.parquet$")
                        self.assertIn(key, listed)
                        self.assertEqual(listed[key]["kind"], f"table:{table}")
                        data = path.read_bytes()
                        self.assertEqual(listed[key]["bytes"], len(data))
                        self.assertEqual(listed[key]["sha256"], hashlib.sha256(data).hexdigest())
                        rows = con.execute(f"SELECT count(*) FROM read_parquet('{path}')").fetchone()[0]
                        self.assertEqual(listed[key].get("rows"), rows)
                        kv = {
                            k.decode(): v.decode()
                            for k, v in con.execute(
                                f"SELECT key, value FROM parquet_kv_metadata('{path}')"
                            ).fetchall()
                        }
                        self.assertEqual(kv.get("proflake.schema_version"), "1")
                        self.assertEqual(kv.get("proflake.table"), table)
            self.assertEqual(
                len(listed),
                len(list((CTX.main.root / "tables/v1").glob(f"*/dt=*/{source_id}.parquet"))),
            )
        con.close()

    def test_rows_are_sorted_and_compressed(self):
        sort = {
            "profiles": "start_time, profile_id",
            "samples": "timestamp, profile_id",
            "stacks": "profile_id, stack_id",
            "frames": "profile_id, frame_id",
            "function_rollup": "hour, service, function",
        }
        con = duckdb.connect()
        for table, order in sort.items():
            for path in self.files(table):
                with self.subTest(file=str(path.relative_to(CTX.main.root))):
                    unsorted = con.execute(
                        f"""SELECT count(*) FROM (
                              SELECT file_row_number AS r, row_number() OVER (ORDER BY {order} NULLS FIRST, file_row_number) - 1 AS s
                              FROM read_parquet('{path}', file_row_number = true)) WHERE r <> s"""
                    ).fetchone()[0]
                    self.assertEqual(unsorted, 0)
                    codecs = {
                        r[0]
                        for r in con.execute(f"SELECT DISTINCT compression FROM parquet_metadata('{path}')").fetchall()
                    }
                    self.assertEqual(codecs, {"ZSTD"})
                    plain_strings = con.execute(
                        f"""SELECT DISTINCT path_in_schema FROM parquet_metadata('{path}')
                            WHERE type = 'BYTE_ARRAY' AND encodings NOT LIKE '%RLE_DICTIONARY%'"""
                    ).fetchall()
                    self.assertEqual(plain_strings, [], "strings not dictionary-encoded")
                    big = con.execute(
                        f"SELECT max(row_group_num_rows) FROM parquet_metadata('{path}')"
                    ).fetchone()[0]
                    self.assertLessEqual(big, 131_072)
        con.close()


class DeterminismTest(unittest.TestCase):
    def test_converting_twice_gives_identical_parquet(self):
        first, second = CTX.main.parquet_files(), CTX.again.parquet_files()
        self.assertTrue(first)
        self.assertEqual(sorted(first), sorted(second))
        for key in first:
            with self.subTest(file=key):
                self.assertTrue(first[key] == second[key], f"{key} differs between two conversions")

    def test_reconverting_into_the_same_directory_rewrites_the_same_bytes(self):
        before = CTX.main.parquet_files()
        path, meta = sample_inputs()[0]
        convert([path], CTX.main.root, meta)
        self.assertEqual(CTX.main.parquet_files(), before)


def main() -> int:
    suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__])
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
    # A test with failing subtests fails once; a module set-up error (no test ran) counts as one.
    failing = {getattr(t, "test_case", t).id() for t, _ in result.failures + result.errors}
    failing |= {t.id() for t in result.unexpectedSuccesses}
    ran_and_failed = {t for t in failing if not t.startswith("setUpModule") and "(" not in t}
    passed = result.testsRun - len(result.skipped) - len(ran_and_failed)
    print(f"\nduckdb tests: {max(passed, 0)} passed, {len(failing)} failed")
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
