#!/usr/bin/env python3
"""The analysts' queries (docs/queries.sql) against real conversions of every sample input.

Converts each sample input (`samples/<format>/<name>.<ext>` beside a `<name>.expected/`
directory, with `<name>.metadata.json` when present) with the proflake CLI, then

* checks that the tables hold every observation of the input: per series, the rows and their
  total value equal the input's own (the folded file's lines, the pprof file's samples, decoded
  here), the decoder's (`proflake inspect`) and the manifest's `series`; the Sample v2 chunks'
  samples are among the rows (a chunk leaves out lone threads), and an aggregated row stands
  for as many chunk samples as its value;
* runs every `-- name:` query of docs/queries.sql in DuckDB and checks its answer against an
  independent computation: the table rows read with plain scans and walked here in Python;
* checks that ids resolve and the files follow docs/tables.md (columns, types, nullability,
  key-value metadata, partitions, sorting), and that converting twice gives byte-identical
  Parquet files;
* symbolization by build ID: builds a C library with gcc (as tests/native.rs does), converts an
  OTLP/JSON profile of it with bare addresses, checks that the queries name its frames
  `libwork.so!0x…`, runs `proflake symbols add`, and checks the rollup and the queries against
  addr2line's inline chains of the same addresses. gcc and binutils are required (a missing
  tool fails the tests; scripts/test.sh installs them).

Plain Python: `python tests/duckdb/test_queries.py`. The CLI comes from $PROFLAKE_BIN (default
target/debug/proflake). The last line printed is `duckdb tests: N passed, M failed`.
"""

from __future__ import annotations

import collections
import datetime as dt
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import zlib
from pathlib import Path

import duckdb

# The time units series are written in: their values convert to ns whatever the frequency.
TIME_UNITS = {"nanoseconds", "microseconds", "milliseconds", "seconds"}
REPO = Path(__file__).resolve().parents[2]
QUERIES_SQL = Path(os.environ.get("PROFLAKE_QUERIES_SQL", REPO / "docs" / "queries.sql"))
TABLES_MD = REPO / "docs" / "tables.md"
BIN = Path(os.environ.get("PROFLAKE_BIN", REPO / "target" / "debug" / "proflake"))
if not BIN.is_absolute():
    BIN = REPO / BIN

VERSION = "v2"
TABLES = ["profiles", "samples", "stacks", "frames", "function_rollup"]
# Written only for uploads with instants or counter values (the Chrome sample has some).
MARK_TABLES = ["counters"]
HUGE = 1_000_000_000
U64 = (1 << 64) - 1

# The upload converted twice under two releases for the release comparison.
RELEASE_INPUT = ("samples/folded/pyspy.folded", "samples/folded/pyspy.metadata.json")
RELEASE_SERVICE = "release-check"
RELEASE_A = "workload@1.0.0"
RELEASE_B = "workload@1.1.0"
# The same timed upload (a Sample v2 chunk of the Android sample) on two days, for partition
# pruning: the second copy's samples are moved two days on.
DAYS_INPUT = "samples/perfetto/android_app.expected"
DAY_SHIFT_S = 2 * 86_400
FOLDED = "samples/folded/pyspy.folded"
PPROF = "samples/pprof/google-pprof_report_sample.cpu.pb.gz"
PERFETTO = "samples/perfetto/android_app.pftrace"


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


def fetch(con, query: str, *args) -> list[dict]:
    """Rows as dicts. TIMESTAMPTZ values come back as microseconds since the epoch (DuckDB's
    Python client would need pytz to return them as datetimes)."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE answer AS {query.rstrip().rstrip(';')}", list(args))
    columns = con.execute("SELECT column_name, column_type FROM (DESCRIBE answer)").fetchall()
    select = ", ".join(
        f'epoch_us("{c}") AS "{c}"' if t == "TIMESTAMP WITH TIME ZONE" else f'"{c}"' for c, t in columns
    )
    rows = con.execute(f"SELECT {select} FROM answer ORDER BY rowid").fetchall()
    return [dict(zip([c for c, _ in columns], r)) for r in rows]


def run_query(root: Path, name: str, **params) -> list[dict]:
    """A named query's rows, in its order."""
    con = connect(root, **params)
    rows = fetch(con, QUERIES[name])
    con.close()
    return rows


def sql(con, query: str, *args) -> list[tuple]:
    return con.execute(query, list(args)).fetchall()


# ------------------------------------------------------------------------------------------
# Conversions, the Sample v2 chunks and the tables they wrote


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


def inspect_series(path: Path) -> dict[tuple[str, str], dict]:
    """The decoder's series of an input (`proflake inspect --json`), by (name, unit)."""
    run = subprocess.run([str(BIN), "inspect", str(path), "--json"], capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"inspect {path} failed:\n{run.stderr}")
    return {(s["name"], s["unit"]): s for s in json.loads(run.stdout)["summary"]["series"]}


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

    def path(self, sample: dict) -> tuple[str, ...]:
        """Root-first comparable frame names of a sample's stack (() for an empty stack)."""
        return tuple(comparable(self.frame_name(i)) for i in reversed(self.stacks[sample["stack_id"]]))


class Tables:
    """Every table row of an output, read with plain scans (no joins, none of the queries'
    SQL), and the call paths walked here: what the queries' answers are checked against."""

    def __init__(self, root: Path):
        con = duckdb.connect()
        con.execute("SET TimeZone = 'UTC'")

        def scan(table: str) -> list[dict]:
            files = sorted((root / "tables" / VERSION / table).glob("dt=*/*.parquet"))
            if not files:
                return []
            paths = "[" + ", ".join(literal(str(f)) for f in files) + "]"
            return fetch(con, f"SELECT * FROM read_parquet({paths}, hive_partitioning = false)")

        self.profiles = {p["profile_id"]: p for p in scan("profiles")}
        self.samples = scan("samples")
        self.nodes = {(r["profile_id"], r["stack_id"]): r for r in scan("stacks")}
        self.frames = {(r["profile_id"], r["frame_id"]): r for r in scan("frames")}
        self.rollup = scan("function_rollup")
        con.close()
        self._paths: dict[tuple, tuple] = {}

    def frame_names(self, profile_id: str, frame_id: int) -> list[str]:
        """The functions a frame stands for, outermost first: those its code was inlined into,
        then its own name."""
        f = self.frames[(profile_id, frame_id)]
        inlined = [c["function"] if c["function"] is not None else "<unknown>" for c in f["inlined_into"]]
        return list(reversed(inlined)) + [f["name"]]

    def frame_ids(self, profile_id: str, stack_id: int | None) -> list[int]:
        """Frame ids from the root to the leaf."""
        out = []
        while stack_id is not None:
            node = self.nodes[(profile_id, stack_id)]
            out.append(node["frame_id"])
            stack_id = node["parent_id"]
            if len(out) > len(self.nodes):
                raise AssertionError(f"stacks of {profile_id} loop")
        return out[::-1]

    def path(self, profile_id: str, stack_id: int | None) -> tuple[str, ...]:
        """Function names from the root to the leaf, inlined callers expanded."""
        key = (profile_id, stack_id)
        if key not in self._paths:
            names = []
            for fid in self.frame_ids(profile_id, stack_id):
                names += self.frame_names(profile_id, fid)
            self._paths[key] = tuple(names)
        return self._paths[key]

    def leaf(self, row: dict) -> str:
        """`frames.name` of a sample's leaf frame."""
        node = self.nodes[(row["profile_id"], row["stack_id"])]
        return self.frames[(row["profile_id"], node["frame_id"])]["name"]

    def selected(self, sample_type: str | None = None) -> set[str]:
        """The profile ids `sample_type` selects, by the rule docs/queries.sql states: a name
        picks that series, '*' every series, and NULL each upload's CPU-time series, else its
        wall-time series."""
        if sample_type == "*":
            return set(self.profiles)
        if sample_type is not None:
            return {pid for pid, p in self.profiles.items() if p["sample_type"] == sample_type}
        has_cpu = {p["source_id"] for p in self.profiles.values() if p["series_kind"] == "cpu_time"}
        return {
            pid
            for pid, p in self.profiles.items()
            if p["series_kind"] == ("cpu_time" if p["source_id"] in has_cpu else "wall_time")
        }

    def rows_of(self, profile_ids: set[str]) -> list[dict]:
        return [r for r in self.samples if r["profile_id"] in profile_ids]

    def key(self, row: dict) -> tuple:
        """(service, sample_type, sample_unit): every per-service answer's group."""
        p = self.profiles[row["profile_id"]]
        return (p["service"], p["sample_type"], p["sample_unit"])


class Output:
    """A conversion output directory: manifests, chunks and tables."""

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
        self.tables = Tables(root)

    def chunks_of(self, source_id: str) -> list[Chunk]:
        return [c for c in self.chunks.values() if c.source_id == source_id]

    def source_of_key(self, suffix: str) -> str:
        """The source id of the upload whose key ends with `suffix`."""
        (sid,) = [s for s, m in self.manifests.items() if m["source"]["key"].endswith(suffix)]
        return sid

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
    inputs: dict[str, Path]  # source_id -> the input file of the main output


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
    CTX.inputs = {}
    for path, _ in sample_inputs():
        CTX.inputs[CTX.main.source_of_key("/" + path.name)] = path

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

    # A timed upload on two days.
    days = CTX.tmp / "days"
    chunk = sorted((REPO / DAYS_INPUT).glob("*.json"))
    chunk = json.loads(next(p for p in chunk if p.name != "manifest.json").read_text())
    (staged / "day1.json").write_text(json.dumps(chunk))
    # Another recording of the same process: a chunk id of its own, its samples two days on.
    chunk["chunk_id"] = hashlib.md5(b"day2").hexdigest()
    for s in chunk["profile"]["samples"]:
        s["timestamp"] += DAY_SHIFT_S
    (staged / "day2.json").write_text(json.dumps(chunk))
    convert([staged / "day1.json", staged / "day2.json"], days)
    CTX.days = Output(days)


def tearDownModule():
    if getattr(CTX, "tmp", None) is not None:
        shutil.rmtree(CTX.tmp, ignore_errors=True)


def timestamp_us(seconds: float) -> int:
    return round(seconds * 1_000_000)


def comparable(name: str) -> str:
    """A frame name for comparing paths: an unsymbolized frame's address dropped. The table
    names it by the address as recorded (image-relative for Perfetto), the chunk holds the
    absolute address; TablesTest checks the addresses themselves."""
    return re.sub(r"!0x[0-9a-f]+$", "!0x…", name)


def unsigned(address: int | None) -> int | None:
    """A BIGINT address column read back as the unsigned 64 bits it holds."""
    return None if address is None else address & U64


def nullable_sum(values) -> int | None:
    """SQL's sum: NULL when every value is NULL."""
    present = [v for v in values if v is not None]
    return sum(present) if present else None


# ------------------------------------------------------------------------------------------
# The inputs, read here


def folded_rows(path: Path) -> collections.Counter:
    """(thread id, root-first function names, count) of every line of a py-spy folded file,
    by multiplicity. py-spy writes `thread (<tid>): <name>;frame;…` (or `thread (<tid>);…`
    without a name) and frames `function (file:line)`."""
    out = collections.Counter()
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        stack, count = line.rsplit(" ", 1)
        fields = stack.split(";")
        m = re.fullmatch(r"thread \((\d+)\)(?::.*)?", fields[0])
        assert m, f"not a py-spy thread field: {fields[0]!r}"
        names = tuple(re.sub(r" \([^()]*:\d+\)$", "", f) for f in fields[1:])
        out[(int(m.group(1)), names, int(count))] += 1
    return out


def _varint(b: bytes, i: int) -> tuple[int, int]:
    x = shift = 0
    while True:
        c = b[i]
        i += 1
        x |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return x, i


def _fields(b: bytes):
    """(field number, wire type, value) of a protobuf message."""
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(b, i)
        elif wire == 2:
            n, i = _varint(b, i)
            value, i = b[i : i + n], i + n
        elif wire == 1:
            value, i = b[i : i + 8], i + 8
        elif wire == 5:
            value, i = b[i : i + 4], i + 4
        else:
            raise ValueError(f"wire type {wire}")
        yield number, wire, value


def _ints(wire: int, value) -> list[int]:
    if wire == 0:
        return [value]
    out, i = [], 0
    while i < len(value):
        x, i = _varint(value, i)
        out.append(x)
    return out


def perf_sample_fields(path: Path) -> collections.Counter:
    """(tid, cpu, CPU mode, unwind error, timebase count) of every PerfSample of a trace, by
    multiplicity, decoded with Perfetto's own Python classes; names as trace_processor spells
    them, counts as the table's signed 64 bits."""
    from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Profiling, Trace

    def packets(data: bytes):
        trace = Trace()
        trace.ParseFromString(data)
        for packet in trace.packet:
            if packet.HasField("compressed_packets"):
                yield from packets(zlib.decompress(packet.compressed_packets))
            else:
                yield packet

    out = collections.Counter()
    for packet in packets(path.read_bytes()):
        if not packet.HasField("perf_sample"):
            continue
        ps = packet.perf_sample
        if ps.kernel_records_lost or ps.HasField("producer_event"):
            continue  # not samples
        mode = Profiling.CpuMode.Name(ps.cpu_mode).removeprefix("MODE_").lower() if ps.cpu_mode else None
        unwind = (
            Profiling.StackUnwindError.Name(ps.unwind_error).removeprefix("UNWIND_ERROR_").lower()
            if ps.HasField("unwind_error")
            else None
        )
        count = ps.timebase_count if ps.HasField("timebase_count") else None
        if count is not None and count >= 1 << 63:
            count -= 1 << 64
        out[(ps.tid, ps.cpu if ps.HasField("cpu") else None, mode, unwind, count)] += 1
    return out


def pprof_series(path: Path) -> dict[tuple[str, str], collections.Counter]:
    """Per (sample type, unit) of a gzipped pprof Profile: (root-first function names, value)
    of every sample with a non-zero value, by multiplicity. A location's lines are innermost
    first, so a root-first path takes locations and their lines in reverse."""
    data = gzip.decompress(path.read_bytes())
    strings, types, samples, locations, functions = [], [], [], {}, {}
    for number, wire, value in _fields(data):
        if number == 6:
            strings.append(value.decode())
        elif number == 1:
            t = {n: v for n, _, v in _fields(value)}
            types.append((t.get(1, 0), t.get(2, 0)))
        elif number == 2:
            locs, values = [], []
            for n, w, v in _fields(value):
                if n == 1:
                    locs += _ints(w, v)
                elif n == 2:
                    values += [x - (1 << 64) if x >= 1 << 63 else x for x in _ints(w, v)]
            samples.append((locs, values))
        elif number == 4:
            loc = {"lines": [], "address": 0}
            for n, _, v in _fields(value):
                if n == 1:
                    loc["id"] = v
                elif n == 3:
                    loc["address"] = v
                elif n == 4:
                    loc["lines"].append({a: b for a, _, b in _fields(v)}.get(1, 0))
            locations[loc["id"]] = loc
        elif number == 5:
            f = {n: v for n, _, v in _fields(value)}
            functions[f[1]] = f.get(2, 0)  # the name's string index
    out: dict[tuple[str, str], collections.Counter] = {}
    for i, (type_index, unit_index) in enumerate(types):
        series = out.setdefault((strings[type_index], strings[unit_index]), collections.Counter())
        for locs, values in samples:
            if values[i] == 0:
                continue
            names = []
            for loc_id in reversed(locs):
                loc = locations[loc_id]
                if not loc["lines"]:
                    names.append("?!0x…")
                names += [strings[functions[f]] for f in reversed(loc["lines"])]
            series[(tuple(comparable(n) for n in names), values[i])] += 1
    return out


# ------------------------------------------------------------------------------------------
# Tests


class QueryFileTest(unittest.TestCase):
    def test_file_has_setup_and_named_queries(self):
        for view in ["profiles", "samples", "stacks", "frames", "function_rollup", "selected_profiles"]:
            self.assertRegex(SETUP_SQL, rf"CREATE OR REPLACE VIEW {view} AS")
        self.assertIn("getvariable('tables_root')", SETUP_SQL)
        self.assertIn(f"/tables/{VERSION}/", SETUP_SQL)
        self.assertNotIn("/tables/v1/", QUERIES_SQL.read_text())
        self.assertRegex(SETUP_SQL, r"SET VARIABLE sample_type = coalesce\(getvariable\('sample_type'\)")
        self.assertGreaterEqual(len(QUERIES), 9)
        for name, body in QUERIES.items():
            self.assertRegex(name, r"^[a-z][a-z0-9_]*$")
            first = body.splitlines()[0]
            self.assertTrue(first.startswith("-- ") and len(first) > 10, f"{name}: no one-line comment")
            code = "\n".join(l for l in body.splitlines() if not l.lstrip().startswith("--"))
            code = re.sub(r"'[^']*'", "''", code)
            self.assertEqual(code.strip().count(";"), 1, f"{name}: not exactly one statement")
            self.assertTrue(code.strip().endswith(";"), name)
            self.assertNotRegex(code, r"\w\s*->\s*\w", f"{name}: DuckDB 2.0 rejects -> lambdas")
            # v1's columns are gone; a query naming them would fail only on some inputs.
            self.assertNotRegex(code, r"\b(s\.weight|total_weight|self_weight|self_samples|total_samples)\b", name)

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


def by_key(rows: list[dict], *columns: str) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = collections.defaultdict(list)
    for r in rows:
        out[tuple(r[c] for c in columns)].append(r)
    return out


GROUP = ("service", "sample_type", "sample_unit")


class NamedQueriesTest(unittest.TestCase):
    maxDiff = None

    @property
    def t(self) -> Tables:
        return CTX.main.tables

    def expected_self(self, tables: Tables, sample_type=None) -> dict[tuple, dict[str, list[int]]]:
        """Per group, each leaf function's [value, rows]."""
        out: dict[tuple, dict[str, list[int]]] = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0]))
        for r in tables.rows_of(tables.selected(sample_type)):
            if r["stack_id"] is not None:
                acc = out[tables.key(r)][tables.leaf(r)]
                acc[0] += r["value"]
                acc[1] += 1
        return out

    def expected_total(self, tables: Tables, sample_type=None) -> dict[tuple, dict[str, list[int]]]:
        """Per group, each function anywhere on the stack (once per row): [value, rows]."""
        out: dict[tuple, dict[str, list[int]]] = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0]))
        for r in tables.rows_of(tables.selected(sample_type)):
            if r["stack_id"] is not None:
                for name in set(tables.path(r["profile_id"], r["stack_id"])):
                    acc = out[tables.key(r)][name]
                    acc[0] += r["value"]
                    acc[1] += 1
        return out

    def test_query_series_totals(self):
        t = self.t
        rows = run_query(CTX.main.root, "series_totals")
        actual = {(r["source_id"], r["sample_type"], r["sample_unit"]): r for r in rows}
        self.assertEqual(len(actual), len(rows), "a series listed twice")
        expected = collections.defaultdict(list)
        for r in t.samples:
            expected[(r["source_id"], r["sample_type"], r["sample_unit"])].append(r)
        self.assertEqual(set(actual), set(expected))
        selected = {
            (p["source_id"], p["sample_type"], p["sample_unit"]) for pid, p in t.profiles.items() if pid in t.selected()
        }
        for key, got in actual.items():
            with self.subTest(series=key):
                series = expected[key]
                self.assertEqual(got["rows"], len(series))
                self.assertEqual(got["total_value"], sum(r["value"] for r in series))
                self.assertEqual(got["total_weight_ns"], nullable_sum(r["weight_ns"] for r in series))
                self.assertEqual(got["profiles"], len({r["profile_id"] for r in series}))
                self.assertEqual(got["selected"], key in selected)
                times = [r["timestamp"] for r in series if r["timestamp"] is not None]
                self.assertEqual((got["first_sample"], got["last_sample"]), (min(times, default=None), max(times, default=None)))
        # The default selects one series of every upload.
        self.assertEqual({s for s, *_ in selected}, set(CTX.main.manifests))
        # '*' selects every series, a name only that name's.
        every = run_query(CTX.main.root, "series_totals", sample_type="*")
        self.assertTrue(all(r["selected"] for r in every))
        named = run_query(CTX.main.root, "series_totals", sample_type="samples")
        self.assertEqual({r["sample_type"] for r in named if r["selected"]}, {"samples"})
        self.assertGreater(sum(r["selected"] for r in named), 0)

    def test_query_top_self_functions(self):
        expected = self.expected_self(self.t)
        rows = run_query(CTX.main.root, "top_self_functions", top_n=HUGE)
        groups = by_key(rows, *GROUP)
        self.assertEqual(set(groups), set(expected))
        for key, group in groups.items():
            with self.subTest(group=key):
                actual = {r["function"]: [r["self_value"], r["self_rows"]] for r in group}
                self.assertEqual(len(actual), len(group), "a function twice")
                self.assertEqual(actual, {k: v for k, v in expected[key].items()})
                self.assertAlmostEqual(sum(r["self_pct"] for r in group), 100.0, delta=0.01 * len(group) + 0.01)
                values = [r["self_value"] for r in group]
                self.assertEqual(values, sorted(values, reverse=True))
        # The cut keeps each group's first top_n rows.
        top = by_key(run_query(CTX.main.root, "top_self_functions", top_n=3), *GROUP)
        for key, group in groups.items():
            self.assertEqual(top[key], group[:3])

    def test_top_self_functions_per_named_series(self):
        # A named series answers for that series only, and with its own values.
        for sample_type in sorted({p["sample_type"] for p in self.t.profiles.values()}):
            with self.subTest(sample_type=sample_type):
                expected = self.expected_self(self.t, sample_type)
                rows = run_query(CTX.main.root, "top_self_functions", top_n=HUGE, sample_type=sample_type)
                self.assertEqual({r["sample_type"] for r in rows}, {sample_type} if expected else set())
                actual = collections.defaultdict(dict)
                for r in rows:
                    actual[tuple(r[c] for c in GROUP)][r["function"]] = [r["self_value"], r["self_rows"]]
                self.assertEqual(actual, {k: dict(v) for k, v in expected.items()})

    def test_query_top_total_functions(self):
        expected = self.expected_total(self.t)
        rows = run_query(CTX.main.root, "top_total_functions", top_n=HUGE)
        groups = by_key(rows, *GROUP)
        self.assertEqual(set(groups), set(expected))
        for key, group in groups.items():
            with self.subTest(group=key):
                actual = {r["function"]: [r["total_value"], r["total_rows"]] for r in group}
                self.assertEqual(len(actual), len(group), "a function twice")
                self.assertEqual(actual, dict(expected[key]))
                # Shares of the group's value on a stack; a function on every stack has 100.
                group_value = sum(v for v, _ in self.expected_self(self.t)[key].values())
                for r in group:
                    self.assertEqual(float(r["total_pct"]), round(100.0 * r["total_value"] / group_value, 2))
                    self.assertLessEqual(r["total_pct"], 100.0)
        top = by_key(run_query(CTX.main.root, "top_total_functions", top_n=2), *GROUP)
        for key, group in groups.items():
            self.assertEqual(top[key], group[:2])

    def test_query_top_functions_rollup(self):
        exp_self, exp_total = self.expected_self(self.t), self.expected_total(self.t)
        rows = run_query(CTX.main.root, "top_functions_rollup", top_n=HUGE)
        groups = by_key(rows, *GROUP)
        self.assertEqual(set(groups), set(exp_total))
        for key, group in groups.items():
            with self.subTest(group=key):
                # Self: leaf frames only; total: every function on the stack, inlined callers
                # included, as top_total_functions counts them.
                self_ = {r["function"]: [r["self_value"], r["self_rows"]] for r in group if r["self_rows"]}
                total = {r["function"]: [r["total_value"], r["total_rows"]] for r in group}
                self.assertEqual(self_, dict(exp_self[key]))
                self.assertEqual(total, dict(exp_total[key]))
                values = [r["self_value"] for r in group]
                self.assertEqual(values, sorted(values, reverse=True))
        # The rollup holds series the selection leaves out (pprof's sample counts beside its
        # CPU time), so the answer above shows the selection at work.
        t = self.t
        selected = {(p["source_id"], p["sample_type"], p["sample_unit"]) for pid, p in t.profiles.items() if pid in t.selected()}
        other = {(r["source_id"], r["sample_type"], r["sample_unit"]) for r in t.rollup} - selected
        self.assertTrue(other, "every series is selected: the selection is not checked")

    def test_query_flame_graph_folded(self):
        t = self.t
        services = sorted({p["service"] for p in t.profiles.values()}, key=lambda s: (s is None, s or ""))
        self.assertTrue(services)
        for service in services:
            with self.subTest(service=service):
                expected = collections.defaultdict(lambda: [0, 0])
                for r in t.rows_of(t.selected()):
                    if r["stack_id"] is not None and t.key(r)[0] == service:
                        acc = expected[(r["sample_type"], r["sample_unit"], ";".join(t.path(r["profile_id"], r["stack_id"])))]
                        acc[0] += r["value"]
                        acc[1] += 1
                rows = run_query(CTX.main.root, "flame_graph_folded", service=service)
                actual = {}
                for r in rows:
                    path, value = r["folded"].rsplit(" ", 1)
                    key = (r["sample_type"], r["sample_unit"], path)
                    self.assertNotIn(key, actual, "a stack folded twice")
                    actual[key] = [int(value), r["rows"]]
                self.assertEqual(actual, dict(expected))

    def test_query_cpu_per_thread(self):
        t = self.t
        expected = collections.defaultdict(lambda: [0, [], 0])
        for r in t.rows_of(t.selected()):
            acc = expected[t.key(r) + (r["thread_id"], r["thread_name"])]
            acc[0] += r["value"]
            acc[1].append(r["weight_ns"])
            acc[2] += 1
        rows = run_query(CTX.main.root, "cpu_per_thread")
        actual = {}
        for r in rows:
            key = tuple(r[c] for c in GROUP) + (r["thread_id"], r["thread_name"])
            self.assertNotIn(key, actual)
            actual[key] = [r["value"], r["weight_ns"], r["rows"]]
        self.assertEqual(actual, {k: [v, nullable_sum(w), n] for k, (v, w, n) in expected.items()})
        for key, group in by_key(rows, *GROUP).items():
            self.assertAlmostEqual(float(sum(r["pct"] for r in group)), 100.0, delta=0.01 * len(group) + 0.01)
        # A series counted in samples has a time in ns when its sampling interval is known
        # (py-spy's folded file gives none).
        intervals = collections.defaultdict(set)
        for p in t.profiles.values():
            intervals[(p["service"], p["sample_type"], p["sample_unit"])].add(
                p["sample_unit"] in TIME_UNITS or p["period"] is not None or p["frequency_hz"] is not None
            )
        for r in rows:
            known = intervals[tuple(r[c] for c in GROUP)]
            self.assertEqual(r["weight_ns"] is not None, known == {True}, r)
        self.assertTrue(any(r["weight_ns"] for r in rows))

    def test_query_release_comparison(self):
        root = CTX.release.root
        profiles = CTX.release.tables.profiles.values()
        self.assertEqual({p["release"] for p in profiles}, {RELEASE_A, RELEASE_B})
        # Each release's leaf shares, from the folded file itself: its last frame's function,
        # weighed by the line's count.
        counts = collections.Counter()
        for (_, names, count), n in folded_rows(REPO / RELEASE_INPUT[0]).items():
            if names:
                counts[names[-1]] += count * n
        total = sum(counts.values())
        shares = {k: 100.0 * v / total for k, v in counts.items()}
        rows = run_query(root, "release_comparison", release_a=RELEASE_A, release_b=RELEASE_B)
        self.assertEqual({r["service"] for r in rows}, {RELEASE_SERVICE})
        self.assertEqual({r["function"] for r in rows}, set(shares))
        for r in rows:
            with self.subTest(function=r["function"]):
                self.assertEqual(r["self_value_a"], counts[r["function"]])
                self.assertEqual(r["self_value_a"], r["self_value_b"])
                self.assertEqual(r["self_pct_a"], r["self_pct_b"])
                self.assertEqual(r["delta_pct"], 0)
                self.assertAlmostEqual(float(r["self_pct_a"]), shares[r["function"]], delta=1e-4)
        # Against a release with no samples, B's shares are all 0 and the deltas are -A's.
        rows = run_query(root, "release_comparison", release_a=RELEASE_A, release_b="never-released")
        self.assertEqual({r["function"] for r in rows}, set(shares))
        for r in rows:
            self.assertEqual(r["self_pct_b"], 0)
            self.assertEqual(r["delta_pct"], -r["self_pct_a"])
        self.assertAlmostEqual(float(sum(r["self_pct_a"] for r in rows)), 100.0, delta=0.01)

    def test_query_unsymbolized_frames_by_build_id(self):
        t = self.t
        selected = t.selected()
        images = collections.defaultdict(lambda: {"addresses": set(), "frames": 0, "profiles": set()})
        unsym = {}
        for (pid, fid), f in t.frames.items():
            if pid in selected and not f["symbolized"]:
                image = (f["build_id"], f["image_path"])
                unsym[(pid, fid)] = image
                acc = images[image]
                if f["address"] is not None:
                    acc["addresses"].add(unsigned(f["address"]))
                acc["frames"] += 1
                acc["profiles"].add(pid)
        self.assertTrue(images, "the samples hold no unsymbolized frame: nothing is checked")
        hits = collections.defaultdict(list)
        for r in t.rows_of(selected):
            on_stack = {unsym[(r["profile_id"], f)] for f in t.frame_ids(r["profile_id"], r["stack_id"]) if (r["profile_id"], f) in unsym}
            for image in on_stack:
                hits[image].append(r["weight_ns"])
        expected = {
            image: {
                "addresses": len(acc["addresses"]),
                "lowest_address": f"0x{min(acc['addresses']):x}" if acc["addresses"] else None,
                "highest_address": f"0x{max(acc['addresses']):x}" if acc["addresses"] else None,
                "frames": acc["frames"],
                "profiles": len(acc["profiles"]),
                "rows": len(hits[image]),
                "weight_ns": nullable_sum(hits[image]),
            }
            for image, acc in images.items()
        }
        rows = run_query(CTX.main.root, "unsymbolized_frames_by_build_id")
        actual = {(r["build_id"], r["image_path"]): {k: v for k, v in r.items() if k not in ("build_id", "image_path")} for r in rows}
        self.assertEqual(len(actual), len(rows))
        self.assertEqual(actual, expected)
        self.assertEqual([r["rows"] for r in rows], sorted((r["rows"] for r in rows), reverse=True))
        # Build ids are lowercase hex, as the docs say, wherever an image has one.
        for r in rows:
            if r["build_id"] is not None:
                self.assertRegex(r["build_id"], r"^[0-9a-f]+$")

    def check_window(self, lo: int, hi: int, sample_type=None) -> int:
        """samples_in_time_window over [lo, hi) µs against the rows with a time in it; the
        number of rows found."""
        t = self.t
        to_dt = lambda us: dt.datetime.fromtimestamp(us / 1e6, dt.timezone.utc)  # noqa: E731
        expected = collections.defaultdict(list)
        for r in t.rows_of(t.selected(sample_type)):
            if r["timestamp"] is not None and lo <= r["timestamp"] < hi:
                expected[t.key(r)].append(r)
        rows = run_query(
            CTX.main.root, "samples_in_time_window", time_from=to_dt(lo), time_to=to_dt(hi), sample_type=sample_type
        )
        actual = {tuple(r[c] for c in GROUP): r for r in rows}
        self.assertEqual(len(actual), len(rows))
        self.assertEqual(set(actual), set(expected))
        for key, got in actual.items():
            want = expected[key]
            self.assertEqual(got["rows"], len(want))
            self.assertEqual(got["value"], sum(r["value"] for r in want))
            self.assertEqual(got["weight_ns"], nullable_sum(r["weight_ns"] for r in want))
            self.assertEqual(got["profiles"], len({r["profile_id"] for r in want}))
            self.assertEqual(got["first_sample"], min(r["timestamp"] for r in want))
            self.assertEqual(got["last_sample"], max(r["timestamp"] for r in want))
        return sum(len(v) for v in expected.values())

    def test_query_samples_in_time_window(self):
        # A window inside the Android sample's first minute, away from any sample's instant.
        t = self.t
        timed = [r["timestamp"] for r in t.samples if r["timestamp"] is not None]
        start = min(r["timestamp"] for r in t.samples if r["timestamp"] is not None and t.profiles[r["profile_id"]]["source_format"] == "perfetto")
        lo, hi = start + 10_000_000, start + 40_000_000
        while any(abs(x - lo) <= 2 for x in timed):
            lo += 7
        while any(abs(x - hi) <= 2 for x in timed):
            hi += 7
        for sample_type in (None, "*"):
            with self.subTest(sample_type=sample_type):
                self.assertGreater(self.check_window(lo, hi, sample_type), 0)
        # Aggregated samples have no time, so they are in no window, not even one around
        # their profile's start.
        aggregated = [p for p in t.profiles.values() if p["timestamps"] == "aggregated"]
        self.assertTrue(aggregated)
        for p in aggregated:
            with self.subTest(profile=p["profile_id"]):
                self.check_window(p["start_time"] - 1_000_000, p["end_time"] + 1_000_000, "*")

    def test_time_window_prunes_partitions_and_row_groups(self):
        root = CTX.days.root
        start = min(r["timestamp"] for r in CTX.days.tables.samples)
        day2 = dt.datetime.fromtimestamp(start / 1e6 + DAY_SHIFT_S - 60, dt.timezone.utc)
        window = dict(time_from=day2, time_to=day2 + dt.timedelta(hours=1))
        rows = run_query(root, "samples_in_time_window", **window)
        expected = sum(1 for r in CTX.days.tables.samples if r["timestamp"] >= start + DAY_SHIFT_S * 1_000_000 - 1)
        self.assertGreater(expected, 0)
        self.assertEqual(sum(r["rows"] for r in rows), expected)
        self.assertEqual(len(list((root / "tables" / VERSION / "samples").glob("dt=*/*.parquet"))), 2)
        con = connect(root, **window)
        plan = "\n".join(r[1] for r in con.execute("EXPLAIN ANALYZE " + QUERIES["samples_in_time_window"].rstrip().rstrip(";")).fetchall())
        # The dt filter: only the second day's samples file is opened.
        day_of = lambda us: dt.datetime.fromtimestamp(us / 1e6, dt.timezone.utc).date().isoformat()  # noqa: E731
        self.assertIn("Scanning Files: 1/2", plan)
        self.assertIn(f"samples/dt={day_of(start + DAY_SHIFT_S * 1_000_000)}/", plan)
        self.assertNotIn(f"samples/dt={day_of(start)}/", plan)
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


def chunk_tid(value) -> int:
    """A table thread id as the chunk writes it: Sample v2 needs one, so an unknown (NULL)
    thread id is written as "0" there."""
    return 0 if value is None else value


def manifest_series(manifest: dict) -> dict[tuple[str, str], dict]:
    return {(s["sample_type"], s["sample_unit"]): s for s in manifest["series"]}


class TablesTest(unittest.TestCase):
    """For every sample input: the tables hold every observation of the input, exactly."""

    maxDiff = None

    def setUp(self):
        self.con = connect(CTX.main.root)

    def tearDown(self):
        self.con.close()

    def one(self, query, *args):
        return sql(self.con, query, *args)[0][0]

    @property
    def t(self) -> Tables:
        return CTX.main.tables

    def series_rows(self, source_id: str) -> dict[tuple[str, str], list[dict]]:
        out = collections.defaultdict(list)
        for r in self.t.samples:
            if r["source_id"] == source_id:
                out[(r["sample_type"], r["sample_unit"])].append(r)
        return out

    def test_every_sample_input_was_converted(self):
        formats = {m["source"]["format"] for m in CTX.main.manifests.values()}
        self.assertEqual(len(CTX.main.manifests), len(sample_inputs()))
        self.assertEqual(set(CTX.inputs), set(CTX.main.manifests))
        for fmt in ["perfetto", "otlp", "pprof", "folded", "sentry-envelope"]:
            self.assertIn(fmt, formats)

    def test_series_totals_equal_the_decoders(self):
        # Per series, one row per observation the decoder read, and its total value.
        for source_id, path in CTX.inputs.items():
            with self.subTest(input=path.name):
                decoded = {k: (s["samples"], s["total_weight"]) for k, s in inspect_series(path).items()}
                tabled = {k: (len(rows), sum(r["value"] for r in rows)) for k, rows in self.series_rows(source_id).items()}
                # A span stretch across a window boundary is one row per window: the same total,
                # at least as many rows.
                for k, rows in self.series_rows(source_id).items():
                    if {self.t.profiles[r["profile_id"]]["timestamps"] for r in rows} == {"spans"}:
                        self.assertGreaterEqual(tabled[k][0], decoded[k][0], k)
                        tabled[k] = (decoded[k][0], tabled[k][1])
                self.assertEqual(tabled, decoded)

    def test_folded_rows_are_the_file_lines(self):
        path = REPO / FOLDED
        source_id = CTX.main.source_of_key("/" + path.name)
        t = self.t
        rows = [r for r in t.samples if r["source_id"] == source_id]
        tabled = collections.Counter(
            (r["thread_id"], tuple(comparable(n) for n in t.path(r["profile_id"], r["stack_id"])), r["value"]) for r in rows
        )
        expected = folded_rows(path)
        self.assertEqual(tabled, expected)
        # A line without frames (py-spy's idle samples) is a row without a stack.
        self.assertTrue(any(not names for _, names, _ in expected))
        self.assertTrue(all(r["timestamp"] is None for r in rows))

    def test_pprof_rows_are_the_file_samples(self):
        path = REPO / PPROF
        source_id = CTX.main.source_of_key("/" + path.name)
        t = self.t
        expected = pprof_series(path)
        self.assertGreater(len(expected), 1, "one series: every series being kept is not checked")
        tabled = {
            key: collections.Counter(
                (tuple(comparable(n) for n in t.path(r["profile_id"], r["stack_id"])), r["value"]) for r in rows
            )
            for key, rows in self.series_rows(source_id).items()
        }
        self.assertEqual(tabled, expected)

    def test_perf_samples_keep_mode_unwind_error_and_counter(self):
        path = REPO / PERFETTO
        source_id = CTX.main.source_of_key("/" + path.name)
        expected = perf_sample_fields(path)
        modes = {mode for _, _, mode, _, _ in expected}
        self.assertLessEqual({"kernel", "user"}, modes, "one CPU mode: the mapping is not checked")
        self.assertTrue(all(count is not None for *_, count in expected))
        tabled = collections.Counter(
            (r["thread_id"], r["cpu"], r["cpu_mode"], r["unwind_error"], r["counter"])
            for r in self.t.samples
            if r["source_id"] == source_id
        )
        self.assertEqual(tabled, expected)

    def test_chunk_samples_are_table_rows(self):
        """The chunks hold the selected series (CPU time, else wall time). A chunk sample with
        a recorded time is a row of it (lone threads' rows have no chunk sample); an
        aggregated row stands for as many chunk samples as its value holds intervals."""
        t = self.t
        selected = t.selected()
        for source_id, manifest in CTX.main.manifests.items():
            chunks = CTX.main.chunks_of(source_id)
            with self.subTest(source=manifest["source"]["key"]):
                self.assertTrue(chunks)
                rows = [r for r in t.samples if r["source_id"] == source_id and r["profile_id"] in selected]
                self.assertTrue(rows)
                series = {(r["sample_type"], r["sample_unit"]) for r in rows}
                self.assertEqual(len(series), 1, series)
                kinds = {t.profiles[r["profile_id"]]["timestamps"] for r in rows}
                self.assertEqual(len(kinds), 1)
                table = collections.defaultdict(list)
                chunk = collections.defaultdict(list)
                def key(r):
                    return (chunk_tid(r["thread_id"]), tuple(comparable(n) for n in t.path(r["profile_id"], r["stack_id"])))

                if kinds == {"recorded"}:
                    for r in rows:
                        table[key(r)].append(r["timestamp"])
                    for c in chunks:
                        for s in c.samples:
                            chunk[(int(s["thread_id"]), c.path(s))].append(timestamp_us(s["timestamp"]))
                    left_out = 0
                    for key in set(table) | set(chunk):
                        left_out += self.match_times(key, sorted(chunk[key]), sorted(table[key]))
                    written = sum(len(c.samples) for c in chunks)
                    self.assertEqual(len(rows), written + left_out)
                    (entry,) = [e for k, e in manifest_series(manifest).items() if k in series]
                    self.assertEqual(sum(entry["left_out"].values()), left_out)
                elif kinds == {"spans"}:
                    self.assert_span_samples_in_rows(rows, chunks, key)
                else:
                    (interval,) = {c.data["synthetic_timestamps"]["interval_ns"] for c in chunks}
                    for r in rows:
                        per_interval = r["weight_ns"] / interval if r["weight_ns"] is not None else r["value"]
                        table[key(r)].append(max(1, int(per_interval + 0.5)))
                    for c in chunks:
                        for s in c.samples:
                            chunk[(int(s["thread_id"]), c.path(s))].append(1)
                    self.assertEqual({k: sum(v) for k, v in chunk.items()}, {k: sum(v) for k, v in table.items()})

    def assert_span_samples_in_rows(self, rows, chunks, key):
        """Span series are sampled at a fixed interval: every chunk sample lies inside a
        stretch (a row) of its thread and stack, and every stretch at least an interval long
        holds one."""
        (interval,) = {c.data["synthetic_timestamps"]["interval_ns"] for c in chunks}
        self.assertTrue(all(c.data["synthetic_timestamps"]["rule"].startswith("span input") for c in chunks))
        stretches = collections.defaultdict(list)
        for r in rows:
            # Times are whole µs in the tables, and stretches start at any ns: ±1 µs.
            stretches[key(r)].append((r["timestamp"], r["timestamp"] + (r["weight_ns"] + 999) // 1000))
        inside = collections.Counter()
        for c in chunks:
            for s in c.samples:
                at = timestamp_us(s["timestamp"])
                k = (int(s["thread_id"]), c.path(s))
                hits = [st for st in stretches[k] if st[0] - 1 <= at <= st[1] + 1]
                self.assertTrue(hits, f"{k}: chunk sample at {at} µs is in no stretch")
                inside[(k, hits[0])] += 1
        for k, spans in stretches.items():
            for st in spans:
                if st[1] - st[0] >= interval // 1000 + 2:
                    self.assertGreater(inside[(k, st)], 0, f"{k}: the stretch {st} has no sample")

    def match_times(self, key, chunk: list[int], table: list[int]) -> int:
        """Pairs every chunk sample time with a row's (±1 µs: the chunk's float seconds);
        the rows left over."""
        i = j = 0
        while i < len(chunk):
            self.assertLess(j, len(table), f"{key}: chunk sample at {chunk[i]} µs is no table row")
            if abs(chunk[i] - table[j]) <= 1:
                i, j = i + 1, j + 1
            elif table[j] < chunk[i]:
                j += 1
            else:
                self.fail(f"{key}: chunk sample at {chunk[i]} µs is no table row")
        return len(table) - len(chunk)

    def test_manifest_series_count_the_rows(self):
        t = self.t
        for source_id, manifest in CTX.main.manifests.items():
            with self.subTest(source=manifest["source"]["key"]):
                listed = manifest_series(manifest)
                self.assertEqual(len(listed), len(manifest["series"]), "a series listed twice")
                rows = self.series_rows(source_id)
                self.assertEqual(set(listed), set(rows))
                chunk_series = {(r["sample_type"], r["sample_unit"]) for r in t.rows_of(t.selected()) if r["source_id"] == source_id}
                written = sum(len(c.samples) for c in CTX.main.chunks_of(source_id))
                for key, entry in listed.items():
                    self.assertEqual(entry["table_rows"], len(rows[key]), key)
                    self.assertEqual(entry["observations"], len(rows[key]), key)
                    self.assertEqual(entry["total_value"], sum(r["value"] for r in rows[key]), key)
                    self.assertEqual(entry["chunk_samples"], written if key in chunk_series else 0, key)
                    self.assertTrue(all(isinstance(n, int) and n > 0 for n in entry["left_out"].values()), entry)
                    # Every observation reached a chunk or is counted with why it did not.
                    self.assertEqual(entry["observations_in_chunks"] + sum(entry["left_out"].values()), entry["observations"], entry)
                    kinds = {p["series_kind"] for p in t.profiles.values() if p["source_id"] == source_id and (p["sample_type"], p["sample_unit"]) == key}
                    self.assertEqual(kinds, {entry["kind"]}, key)
                    if key not in chunk_series:
                        # A series Sample v2 does not write is left out whole, with its reason.
                        self.assertEqual(sum(entry["left_out"].values()), entry["observations"], entry)
                # The table files' rows, as listed, add up to the series' rows.
                samples_rows = sum(o["rows"] for o in manifest["outputs"] if o["kind"] == "table:samples")
                self.assertEqual(samples_rows, sum(e["table_rows"] for e in listed.values()))

    def test_profiles_describe_their_rows(self):
        t = self.t
        rows_of = collections.defaultdict(list)
        for r in t.samples:
            rows_of[r["profile_id"]].append(r)
        self.assertEqual(set(rows_of), set(t.profiles), "a profile without rows, or rows without a profile")
        for pid, p in t.profiles.items():
            rows = rows_of[pid]
            with self.subTest(profile=pid):
                self.assertRegex(pid, r"^[0-9a-f]{32}$")
                self.assertEqual(p["samples"], len(rows))
                self.assertEqual(p["total_value"], sum(r["value"] for r in rows))
                self.assertEqual(p["total_weight_ns"], nullable_sum(r["weight_ns"] for r in rows))
                self.assertEqual({(r["source_id"], r["sample_type"], r["sample_unit"]) for r in rows},
                                 {(p["source_id"], p["sample_type"], p["sample_unit"])})
                self.assertIn(p["series_kind"], ("cpu_time", "wall_time", "other"))
                times = [r["timestamp"] for r in rows]
                if p["timestamps"] in ("recorded", "spans"):
                    self.assertNotIn(None, times)
                    self.assertEqual((p["start_time"], p["end_time"]), (min(times), max(times)))
                    self.assertLess(p["end_time"] - p["start_time"], 60_000_000)
                else:
                    self.assertEqual(p["timestamps"], "aggregated")
                    self.assertEqual(set(times), {None})
                    self.assertEqual(p["end_time"], p["start_time"])
        # A profile is one series of one process: an aggregated series is one profile, and a
        # recorded one is cut into windows that do not overlap.
        windows = collections.defaultdict(list)
        for p in t.profiles.values():
            windows[(p["source_id"], p["pid"], p["sample_type"], p["sample_unit"])].append(p)
        for key, ps in windows.items():
            if ps[0]["timestamps"] == "aggregated":
                self.assertEqual(len(ps), 1, key)
            ps.sort(key=lambda p: p["start_time"])
            for a, b in zip(ps, ps[1:]):
                self.assertLess(a["end_time"], b["start_time"], key)

    def test_profiles_carry_the_upload(self):
        t = self.t
        selected = t.selected()
        for source_id, manifest in CTX.main.manifests.items():
            profiles = [p for p in t.profiles.values() if p["source_id"] == source_id]
            with self.subTest(source=manifest["source"]["key"]):
                self.assertTrue(profiles)
                for p in profiles:
                    self.assertEqual(p["source_key"], manifest["source"]["key"])
                    self.assertEqual(p["source_etag"], manifest["source"]["etag"])
                    self.assertEqual(p["source_format"], manifest["source"]["format"])
                    self.assertEqual(p["converter"], manifest["converter"])
                chunk_pid = {o["chunk_id"]: o.get("pid") for o in manifest["outputs"] if o["kind"] == "sample_v2"}
                for c in CTX.main.chunks_of(source_id):
                    mine = [p for p in profiles if p["profile_id"] in selected and p["pid"] == chunk_pid[c.chunk_id]]
                    self.assertTrue(mine, c.chunk_id)
                    for p in mine:
                        self.assertEqual(
                            (p["platform"], p["release"], p["environment"]),
                            (c.data["platform"], c.data.get("release"), c.data.get("environment")),
                        )

    def test_weight_ns_is_the_value_in_nanoseconds(self):
        t = self.t
        to_ns = {"nanoseconds": 1, "microseconds": 1_000, "milliseconds": 1_000_000, "seconds": 1_000_000_000}
        ratios = collections.defaultdict(set)
        for r in t.samples:
            p = t.profiles[r["profile_id"]]
            if p["sample_unit"] in to_ns:
                self.assertEqual(r["weight_ns"], r["value"] * to_ns[p["sample_unit"]], p["profile_id"])
            elif p["series_kind"] in ("cpu_time", "wall_time") and r["weight_ns"] is not None:
                # Counted samples of a time series: one sampling interval each.
                self.assertEqual(r["weight_ns"] % r["value"], 0)
                ratios[r["profile_id"]].add(r["weight_ns"] // r["value"])
            else:
                self.assertIsNone(r["weight_ns"], p["profile_id"])
        self.assertTrue(ratios, "no counted time series: the interval rule is not checked")
        for pid, ratio in ratios.items():
            self.assertEqual(len(ratio), 1, pid)
            self.assertGreater(next(iter(ratio)), 0)

    def test_addresses_are_the_recorded_64_bits(self):
        # Every chunk frame's instruction address is a table frame's address: as recorded,
        # or image start + address for an image-relative one; kernel addresses (top bit set)
        # read as negative BIGINTs whose bits are the address.
        t = self.t
        absolute = collections.defaultdict(set)
        base_relative = set()
        for f in t.frames.values():
            if f["address"] is None:
                continue
            a = unsigned(f["address"])
            if f["address_space"] == "image_relative":
                a = (a + unsigned(f["image_start"])) & U64
            absolute[f["image_path"]].add(a)
            if f["address_space"] == "base_relative":
                base_relative.add(f["image_path"])
        chunk = collections.defaultdict(set)
        for c in CTX.main.chunks.values():
            # A base-relative frame is placed at the base the chunk lists for its library.
            bases = {i.get("code_file"): int(i["image_addr"], 16) for i in c.data.get("debug_meta", {}).get("images", [])}
            for f in c.frames:
                if f.get("instruction_addr") is not None:
                    a = int(f["instruction_addr"], 16)
                    package = f.get("package")
                    # Samples of different formats can name one image path (`[kernel.kallsyms]`
                    # from samply and from perf.data), base-relative in one and absolute in the
                    # other: the base-relative reading is taken where it is the table's.
                    if package in base_relative:
                        relative = a - bases.get(package, 0)
                        if relative in absolute[package] or a not in absolute[package]:
                            a = relative
                    chunk[package].add(a)
        self.assertTrue(chunk)
        for image, addresses in chunk.items():
            with self.subTest(image=image):
                self.assertLessEqual(addresses, absolute[image])
        negative = [f for f in t.frames.values() if f["address"] is not None and f["address"] < 0]
        self.assertTrue(negative, "no address with the top bit set: the encoding is not checked")
        self.assertTrue(any(unsigned(f["address"]) in chunk[f["image_path"]] for f in negative))
        printed = self.one("SELECT count(*) FROM frames WHERE address < 0 AND printf('%x', address) NOT LIKE 'ffff%'")
        self.assertEqual(printed, 0)

    def test_ids_resolve(self):
        checks = {
            "samples.stack_id -> stacks": """SELECT count(*) FROM samples s WHERE s.stack_id IS NOT NULL AND NOT EXISTS
                (SELECT 1 FROM stacks st WHERE st.profile_id = s.profile_id AND st.stack_id = s.stack_id)""",
            "samples.profile_id -> profiles": """SELECT count(*) FROM samples s WHERE NOT EXISTS
                (SELECT 1 FROM profiles p WHERE p.profile_id = s.profile_id AND p.source_id = s.source_id
                 AND p.sample_type = s.sample_type AND p.sample_unit = s.sample_unit)""",
            "stacks.frame_id -> frames": """SELECT count(*) FROM stacks st WHERE NOT EXISTS
                (SELECT 1 FROM frames f WHERE f.profile_id = st.profile_id AND f.frame_id = st.frame_id)""",
            "stacks.parent_id -> stacks, one level up, earlier": """SELECT count(*) FROM stacks c WHERE c.parent_id IS NOT NULL
                AND NOT EXISTS (SELECT 1 FROM stacks p WHERE p.profile_id = c.profile_id AND p.stack_id = c.parent_id
                                AND p.depth + 1 = c.depth AND p.stack_id < c.stack_id)""",
            "roots at depth 0": "SELECT count(*) FROM stacks WHERE (parent_id IS NULL) <> (depth = 0)",
            "stack ids dense from 0": """SELECT count(*) FROM (SELECT profile_id, min(stack_id) AS lo,
                max(stack_id) + 1 - count(DISTINCT stack_id) AS gap FROM stacks GROUP BY 1) WHERE gap <> 0 OR lo <> 0""",
            "frame ids dense from 0": """SELECT count(*) FROM (SELECT profile_id, min(frame_id) AS lo,
                max(frame_id) + 1 - count(DISTINCT frame_id) AS gap FROM frames GROUP BY 1) WHERE gap <> 0 OR lo <> 0""",
            "one source per profile": """SELECT count(*) FROM (SELECT profile_id, count(DISTINCT source_id) AS n FROM
                (SELECT profile_id, source_id FROM samples UNION ALL SELECT profile_id, source_id FROM stacks
                 UNION ALL SELECT profile_id, source_id FROM frames UNION ALL SELECT profile_id, source_id FROM profiles)
                GROUP BY 1) WHERE n <> 1""",
            "one dt per profile": """SELECT count(*) FROM (SELECT profile_id, count(DISTINCT dt) AS n FROM
                (SELECT profile_id, dt FROM samples UNION ALL SELECT profile_id, dt FROM stacks
                 UNION ALL SELECT profile_id, dt FROM frames UNION ALL SELECT profile_id, dt FROM profiles)
                GROUP BY 1) WHERE n <> 1""",
            "profiles dt is the UTC date of start_time": """SELECT count(*) FROM profiles
                WHERE dt <> CAST(timezone('UTC', start_time) AS DATE)""",
            "rollup dt is the UTC date of hour": """SELECT count(*) FROM function_rollup
                WHERE dt <> CAST(timezone('UTC', hour) AS DATE) OR hour <> date_trunc('hour', hour)""",
            "rollup series are profiles' series": """SELECT count(*) FROM function_rollup r WHERE NOT EXISTS
                (SELECT 1 FROM profiles p WHERE p.source_id = r.source_id AND p.sample_type = r.sample_type
                 AND p.sample_unit = r.sample_unit)""",
        }
        for what, query in checks.items():
            with self.subTest(check=what):
                self.assertEqual(self.one(query), 0)

    def test_rollup_sums_the_rows_with_a_stack(self):
        # Every series, selected or not: per upload and series, the leaves' rows and values
        # are the rows with a stack; a function on a stack counts once per row.
        t = self.t
        for source_id, manifest in CTX.main.manifests.items():
            with self.subTest(source=manifest["source"]["key"]):
                rollup = collections.defaultdict(lambda: [0, 0])
                for r in t.rollup:
                    if r["source_id"] == source_id:
                        acc = rollup[(r["sample_type"], r["sample_unit"])]
                        acc[0] += r["self_rows"]
                        acc[1] += r["self_value"]
                        self.assertGreaterEqual(r["total_rows"], r["self_rows"])
                        self.assertGreaterEqual(r["total_value"], r["self_value"])
                expected = {
                    key: [sum(1 for r in rows if r["stack_id"] is not None),
                          sum(r["value"] for r in rows if r["stack_id"] is not None)]
                    for key, rows in self.series_rows(source_id).items()
                }
                self.assertEqual(dict(rollup), {k: v for k, v in expected.items() if v[0]})


def docs_columns() -> dict[str, list[tuple[str, str, bool]]]:
    """Each table's (column, type, nullable) rows from docs/tables.md."""
    text = TABLES_MD.read_text()
    out = {}
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        m = re.match(r"`(\w+)`", section)
        if not m or m.group(1) not in TABLES + MARK_TABLES:
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
        return sorted((CTX.main.root / "tables" / VERSION / table).glob("dt=*/*.parquet"))

    def test_columns_and_types_match_the_docs(self):
        documented = docs_columns()
        self.assertEqual(set(documented), set(TABLES + MARK_TABLES))
        self.assertTrue(self.files("counters"), "the Chrome sample writes counters")
        con = duckdb.connect()
        for table, cols in documented.items():
            self.assertEqual(cols[0][:2], ("source_id", "VARCHAR"), f"{table}: source_id first")
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
                    # Every row names the upload the file is named by.
                    ids = con.execute(f"SELECT DISTINCT source_id FROM read_parquet('{path}')").fetchall()
                    self.assertLessEqual(set(ids), {(path.stem,)})
        con.close()

    def test_views_read_files_of_an_older_writer(self):
        # A file written before a column was added lacks it: the views read its rows with NULL
        # there and keep the column of newer files, whichever file DuckDB opens first.
        added = ["cpu_mode", "unwind_error", "counter"]
        root = Path(tempfile.mkdtemp(dir=CTX.tmp, prefix="older-writer-"))
        shutil.copytree(CTX.main.root / "tables", root / "tables")
        samples = root / "tables" / VERSION / "samples"
        newer = sorted(samples.glob("dt=*/*.parquet"))
        old = samples / "dt=2000-01-01" / "older.parquet"  # the first file in glob order
        old.parent.mkdir()
        con = duckdb.connect()
        con.execute(
            f"COPY (SELECT * EXCLUDE ({', '.join(added)}) FROM read_parquet({literal(str(newer[0]))}, hive_partitioning = false)) "
            f"TO {literal(str(old))} (FORMAT parquet)"
        )
        old_rows = con.execute(f"SELECT count(*) FROM read_parquet({literal(str(old))})").fetchone()[0]
        con.close()
        self.assertGreater(old_rows, 0)
        con = connect(root)
        columns = [r[0] for r in con.execute("DESCRIBE samples").fetchall()]
        self.assertLessEqual(set(added), set(columns))
        rows = sql(con, "SELECT dt = DATE '2000-01-01' AS old, count(*), count(cpu_mode), count(counter) FROM samples GROUP BY ALL ORDER BY old")
        con.close()
        every = CTX.main.tables.samples
        with_mode = sum(1 for r in every if r["cpu_mode"] is not None)
        with_counter = sum(1 for r in every if r["counter"] is not None)
        self.assertGreater(with_mode, 0)
        self.assertEqual(rows, [(False, len(every), with_mode, with_counter), (True, old_rows, 0, 0)])

    def test_key_value_metadata_and_layout(self):
        con = duckdb.connect()
        base = CTX.main.root / "tables" / VERSION
        for source_id, manifest in CTX.main.manifests.items():
            listed = {o["key"]: o for o in manifest["outputs"] if o["kind"].startswith("table:")}
            for table in TABLES:
                paths = sorted((base / table).glob(f"dt=*/{source_id}.parquet"))
                with self.subTest(source=source_id, table=table):
                    self.assertTrue(paths)
                    for path in paths:
                        key = str(path.relative_to(CTX.main.root))
                        self.assertRegex(key, rf"^tables/{VERSION}/{table}/dt=\d{{4}}-\d\d-\d\d/{source_id}\.parquet$")
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
                        self.assertEqual(kv.get("proflake.schema_version"), VERSION[1:])
                        self.assertEqual(kv.get("proflake.table"), table)
            self.assertEqual(len(listed), len(list(base.glob(f"*/dt=*/{source_id}.parquet"))))
        self.assertFalse((CTX.main.root / "tables" / "v1").exists(), "version 1 is no longer written")
        con.close()

    def test_rows_are_sorted_and_compressed(self):
        sort = {
            "profiles": "start_time, profile_id",
            "samples": "timestamp, profile_id",
            "stacks": "profile_id, stack_id",
            "frames": "profile_id, frame_id",
            "function_rollup": "hour, service, function",
            "counters": "timestamp, pid, thread_id",
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


# ------------------------------------------------------------------------------------------
# Symbolization by build ID: a native library built here, profiled as bare addresses, named by
# `proflake symbols add`, and every answer checked against binutils' own reading of it

# tests/native.rs's library. `mix` and `fold` are always inlined: `work`'s loop has two inline
# levels, `outer` calls `work` (a return address to adjust).
NATIVE_SOURCE = r"""
static inline __attribute__((always_inline)) unsigned mix(unsigned x) {
    return (x * 2654435761u) ^ (x >> 7);
}
static inline __attribute__((always_inline)) unsigned fold(unsigned n) {
    unsigned s = 0;
    for (unsigned i = 0; i < n; i++)
        s += mix(i + s);
    return s;
}
__attribute__((noinline)) unsigned work(unsigned n) {
    return fold(n) + 1;
}
__attribute__((noinline)) unsigned outer(unsigned n) {
    unsigned t = 0;
    for (unsigned i = 0; i < n; i++)
        t ^= work(i);
    return t;
}
"""
# Where the library's first segment starts; where the profile says it was loaded (runtime =
# NATIVE_BASE + virtual address); when it was profiled (2026-11-01T00:00:00Z). As tests/native.rs.
NATIVE_LINKED_AT = 0x20_0000
NATIVE_BASE = 0x7F55_0000_0000
NATIVE_START_S = 1_793_491_200
NATIVE_TOOLS = ("gcc", "readelf", "objdump", "addr2line")
NATIVE_IMAGE = "/data/app/libwork.so"
# The upload's sidecar (uploads/<name>.metadata.json, kept with the upload, so rehydration
# converts with it too): the service the flame graph is drawn for and a release to compare.
NATIVE_SERVICE = "libwork-symbols"
NATIVE_RELEASE = "libwork@1.0.0"
# The series the request names (its string table's "samples", "count").
NATIVE_GROUP = (NATIVE_SERVICE, "samples", "count")


def native_tool(*args) -> str:
    """A tool's standard output. A missing tool fails the test, never skips it: scripts/test.sh
    installs gcc and binutils."""
    args = [str(a) for a in args]
    try:
        run = subprocess.run(args, capture_output=True, text=True)
    except FileNotFoundError as e:
        raise AssertionError(f"cannot run {args[0]} ({e}): scripts/test.sh installs gcc and binutils") from None
    if run.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed ({run.returncode}):\n{run.stderr}")
    return run.stdout


class NativeLib:
    """The library, built by gcc as tests/native.rs builds it, and what binutils say about it."""

    def __init__(self, directory: Path):
        src = directory / "work.c"
        src.write_text(NATIVE_SOURCE)
        self.path = directory / "libwork.so"
        native_tool("gcc", "-O2", "-g", "-fPIC", "-shared", "-Wl,--build-id=sha1",
                    f"-Wl,-Ttext-segment={NATIVE_LINKED_AT:#x}", "-o", self.path, src)
        notes = native_tool("readelf", "-n", self.path)
        (self.build_id,) = [l.split("Build ID: ", 1)[1].strip() for l in notes.splitlines() if "Build ID: " in l]
        self.loads = []
        for line in native_tool("readelf", "-lW", self.path).splitlines():
            f = line.split()
            if f and f[0] == "LOAD":
                self.loads.append({"offset": int(f[1], 16), "vaddr": int(f[2], 16), "filesz": int(f[4], 16),
                                   "executable": "E" in f[6:-1]})
        assert self.loads[0]["vaddr"] == NATIVE_LINKED_AT, "linked where asked"
        self.symbols = native_tool("readelf", "-sW", self.path)
        self.listing = native_tool("objdump", "-d", "--no-show-raw-insn", self.path).splitlines()

    def text(self) -> dict:
        """The executable segment."""
        (load,) = [l for l in self.loads if l["executable"]]
        return load

    def function_lines(self, function: str) -> list[str]:
        """objdump's lines of `function`, after its header, up to the blank line that ends it."""
        header = f"<{function}>:"
        start = next(i for i, l in enumerate(self.listing) if l.endswith(header)) + 1
        out = []
        for line in self.listing[start:]:
            if ":" not in line:
                break
            out.append(line)
        return out

    def instructions(self, function: str) -> list[int]:
        """Every instruction address of `function`, within its symbol's size (the alignment
        padding after it is never executed)."""
        ((start, size),) = {
            (int(f[1], 16), int(f[2]))
            for f in (l.split() for l in self.symbols.splitlines())
            if len(f) >= 8 and f[3] == "FUNC" and f[7] == function
        }
        out = []
        for line in self.function_lines(function):
            address = int(line.strip().split(":", 1)[0], 16)
            if address >= start + size:
                break
            out.append(address)
        assert out, f"objdump lists {function}"
        return out

    def return_address(self, caller: str, callee: str) -> int:
        """The instruction after `caller`'s call to `callee` (through the PLT: `<work@plt>`)."""
        lines = self.function_lines(caller)
        for line, after in zip(lines, lines[1:]):
            if "call" in line and (f"<{callee}>" in line or f"<{callee}@plt>" in line):
                return int(after.strip().split(":", 1)[0], 16)
        raise AssertionError(f"{caller} calls {callee}")

    def addr2line(self, addresses: list[int]) -> list[list[str]]:
        """addr2line's inline chain of each virtual address: function names, innermost first."""
        out = native_tool("addr2line", "-a", "-f", "-i", "-C", "-e", self.path, *(f"{a:#x}" for a in addresses))
        chains: list[list[str]] = []
        lines = iter(out.splitlines())
        for line in lines:
            if line.startswith("0x"):
                chains.append([])
            else:
                next(lines)  # file:line
                chains[-1].append(line)
        assert len(chains) == len(addresses)
        return chains


def native_request(lib: NativeLib, leaves: list[int], ret: int, callee: int) -> dict:
    """tests/native.rs's `otlp_request`: an eBPF-profiler-shaped OTLP/JSON request with absolute
    addresses in a mapping of the code segment, one timed sample per leaf address and one
    `outer → work` stack whose caller location is the return address itself."""
    text = lib.text()
    runtime = [NATIVE_BASE + va for va in leaves] + [NATIVE_BASE + ret]
    locations = [{}] + [{"mappingIndex": 1, "address": str(a), "attributeIndices": [2]} for a in runtime]
    stacks = [{}] + [{"locationIndices": [i + 1]} for i in range(len(leaves))]
    # Leaf first, as pprof.
    stacks.append({"locationIndices": [leaves.index(callee) + 1, len(runtime)]})
    samples = [
        {"stackIndex": s, "timestampsUnixNano": [str(NATIVE_START_S * 1_000_000_000 + s * 10_000_000)]}
        for s in range(1, len(stacks))
    ]
    return {
        "resourceProfiles": [{
            "resource": {"attributes": [{"key": "process.pid", "value": {"intValue": "42"}}]},
            "scopeProfiles": [{"profiles": [{
                "sampleType": {"typeStrindex": 3, "unitStrindex": 4},
                "samples": samples,
                "timeUnixNano": str(NATIVE_START_S * 1_000_000_000),
                "durationNano": "1000000000",
                "periodType": {"typeStrindex": 5, "unitStrindex": 6},
                "period": "10000000",
            }]}],
        }],
        "dictionary": {
            "mappingTable": [{}, {
                "memoryStart": str(NATIVE_BASE + text["vaddr"]),
                "memoryLimit": str(NATIVE_BASE + text["vaddr"] + text["filesz"]),
                "fileOffset": str(text["offset"]),
                "filenameStrindex": 7,
                "attributeIndices": [1],
            }],
            "locationTable": locations,
            "stackTable": stacks,
            "stringTable": ["", "process.executable.build_id.gnu", "profile.frame.type",
                            "samples", "count", "cpu", "nanoseconds", NATIVE_IMAGE],
            "attributeTable": [{},
                               {"keyStrindex": 1, "value": {"stringValue": lib.build_id}},
                               {"keyStrindex": 2, "value": {"stringValue": "native"}}],
        },
    }


def cli(*args) -> str:
    run = subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True)
    if run.returncode != 0:
        raise AssertionError(f"proflake {' '.join(map(str, args))} failed ({run.returncode}):\n{run.stderr}")
    return run.stdout


class SymbolizedQueriesTest(unittest.TestCase):
    """The rollup and every query in docs/queries.sql see the names `proflake symbols add`
    gives native frames that arrived as bare addresses, as addr2line reads those addresses."""

    maxDiff = None

    @classmethod
    def setUpClass(cls):
        missing = [t for t in NATIVE_TOOLS if shutil.which(t) is None]
        if missing:
            raise AssertionError(f"missing {', '.join(missing)}: scripts/test.sh installs gcc and binutils")
        tmp = Path(tempfile.mkdtemp(prefix="proflake-duckdb-symbols-"))
        cls.addClassCleanup(shutil.rmtree, tmp, True)
        (tmp / "lib").mkdir()
        lib = cls.lib = NativeLib(tmp / "lib")

        # The addresses profiled: every instruction of `work` and `outer` as leaves (the return
        # address excepted: an address both leaf and return address is looked up as a return
        # address), and `outer → work` with the leaf at `work`'s first instruction.
        cls.ret = lib.return_address("outer", "work")
        cls.leaves = lib.instructions("work") + [a for a in lib.instructions("outer") if a != cls.ret]
        cls.callee = cls.leaves[0]
        # Each sample's frames, leaf first: (virtual address, whether it is a return address).
        cls.stacks = [[(va, False)] for va in cls.leaves] + [[(cls.callee, False), (cls.ret, True)]]
        # addr2line's chain per frame: at the address, or for a caller at its call instruction.
        lookups = sorted({va - 1 if is_ret else va for stack in cls.stacks for va, is_ret in stack})
        cls.chains = dict(zip(lookups, lib.addr2line(lookups)))

        profile = tmp / "work.otlp.json"
        profile.write_text(json.dumps(native_request(lib, cls.leaves, cls.ret, cls.callee)))
        store = cls.store = tmp / "bucket"
        # The sidecar, uploaded before the profile.
        (store / "uploads").mkdir(parents=True)
        (store / "uploads" / f"{profile.name}.metadata.json").write_text(
            json.dumps({"service": NATIVE_SERVICE, "release": NATIVE_RELEASE})
        )
        cli("convert", profile, "--store", store)
        # The tables as they were before any debug file: a copy to query.
        cls.before = tmp / "before"
        shutil.copytree(store, cls.before)
        cls.added = cli("symbols", "add", lib.path, "--store", store)

    # ---- the independent answers: the request's samples and addr2line's chains ------------

    def chain(self, va: int, is_ret: bool) -> list[str]:
        """Function names of a frame, innermost first."""
        return self.chains[va - 1 if is_ret else va]

    def address_name(self, va: int, is_ret: bool) -> str:
        """`frames.name` of the frame before symbols: image file name and the absolute address
        as recorded (the return address itself for the caller)."""
        return f"{os.path.basename(NATIVE_IMAGE)}!0x{NATIVE_BASE + va:x}"

    def expected(self, names) -> dict[str, dict]:
        """Per function, [value, rows] as self (leaf), total (anywhere on the stack, once per
        sample) and per folded stack (root first, inlined callers expanded), with `names(va,
        is_ret)` giving a frame's names innermost first. Every sample counts 1: one timestamp of
        a counting sampler."""
        self_ = collections.defaultdict(lambda: [0, 0])
        total = collections.defaultdict(lambda: [0, 0])
        folded = collections.defaultdict(lambda: [0, 0])
        for stack in self.stacks:
            frames = [names(va, is_ret) for va, is_ret in stack]
            for acc in [self_[frames[0][0]]] + [total[n] for n in {n for f in frames for n in f}]:
                acc[0] += 1
                acc[1] += 1
            path = [n for f in reversed(frames) for n in reversed(f)]
            acc = folded[";".join(path)]
            acc[0] += 1
            acc[1] += 1
        return {"self": dict(self_), "total": dict(total), "folded": dict(folded)}

    def symbolized(self) -> dict[str, dict]:
        return self.expected(self.chain)

    def unsymbolized(self) -> dict[str, dict]:
        return self.expected(lambda va, is_ret: [self.address_name(va, is_ret)])

    # ---- the answers of the queries --------------------------------------------------------

    def answers(self, root: Path) -> dict[str, dict]:
        """top_self_functions, top_total_functions, top_functions_rollup (self and total) and
        flame_graph_folded, as {function or folded stack: [value, rows]}; each answers for the
        library's one group only."""
        out = {}
        rows = run_query(root, "top_self_functions", top_n=HUGE)
        self.assertEqual({tuple(r[c] for c in GROUP) for r in rows}, {NATIVE_GROUP})
        out["self"] = {r["function"]: [r["self_value"], r["self_rows"]] for r in rows}
        self.assertEqual(len(out["self"]), len(rows), "a function twice")
        self.assertAlmostEqual(float(sum(r["self_pct"] for r in rows)), 100.0, delta=0.01 * len(rows) + 0.01)

        rows = run_query(root, "top_total_functions", top_n=HUGE)
        self.assertEqual({tuple(r[c] for c in GROUP) for r in rows}, {NATIVE_GROUP})
        out["total"] = {r["function"]: [r["total_value"], r["total_rows"]] for r in rows}
        self.assertEqual(len(out["total"]), len(rows), "a function twice")
        for r in rows:
            self.assertEqual(float(r["total_pct"]), round(100.0 * r["total_value"] / len(self.stacks), 2), r)

        rows = run_query(root, "top_functions_rollup", top_n=HUGE)
        self.assertEqual({tuple(r[c] for c in GROUP) for r in rows}, {NATIVE_GROUP})
        out["rollup_self"] = {r["function"]: [r["self_value"], r["self_rows"]] for r in rows if r["self_rows"]}
        out["rollup_total"] = {r["function"]: [r["total_value"], r["total_rows"]] for r in rows}
        self.assertEqual(len(out["rollup_total"]), len(rows), "a function twice")

        rows = run_query(root, "flame_graph_folded", service=NATIVE_SERVICE)
        self.assertEqual({(r["sample_type"], r["sample_unit"]) for r in rows}, {NATIVE_GROUP[1:]})
        out["folded"] = {}
        for r in rows:
            path, value = r["folded"].rsplit(" ", 1)
            self.assertNotIn(path, out["folded"], "a stack folded twice")
            out["folded"][path] = [int(value), r["rows"]]
        return out

    def check_answers(self, root: Path, expected: dict[str, dict]):
        got = self.answers(root)
        for query, answer, want in [
            ("top_self_functions", "self", "self"),
            ("top_total_functions", "total", "total"),
            ("top_functions_rollup (self)", "rollup_self", "self"),
            ("top_functions_rollup (total)", "rollup_total", "total"),
            ("flame_graph_folded", "folded", "folded"),
        ]:
            with self.subTest(query=query):
                self.assertEqual(got[answer], expected[want])

    # ---- tests -----------------------------------------------------------------------------

    def test_the_library_has_inlined_code_at_the_addresses_profiled(self):
        # What the other tests rely on: addr2line reads two inline levels (fold, mix) under
        # `work`, and the caller frame is `outer`.
        self.assertRegex(self.lib.build_id, r"^[0-9a-f]{40}$")
        self.assertGreaterEqual(max(len(c) for c in self.chains.values()), 3)
        self.assertEqual(self.chain(self.ret, True), ["outer"])
        self.assertEqual(self.chain(self.callee, False)[-1], "work")
        self.assertIn("fold", {n for c in self.chains.values() for n in c})
        for va in self.leaves:
            self.assertIn(self.chain(va, False)[-1], ("work", "outer"), f"{va:#x}")

    def test_before_symbols_the_queries_name_frames_by_address(self):
        expected = self.unsymbolized()
        self.check_answers(self.before, expected)
        # Nothing but addresses: one name per address profiled.
        self.assertEqual(len(expected["total"]), len(self.leaves) + 1)
        for name in expected["total"]:
            self.assertRegex(name, r"^libwork\.so!0x[0-9a-f]+$")
        t = Tables(self.before)
        self.assertEqual({f["symbol_status"] for f in t.frames.values()}, {"unknown_image"})
        self.assertEqual({f["build_id"] for f in t.frames.values()}, {self.lib.build_id})
        # The image is what a symbolization pass should fetch: every address, every row.
        rows = run_query(self.before, "unsymbolized_frames_by_build_id")
        self.assertEqual(
            [(r["build_id"], r["image_path"], r["addresses"], r["frames"], r["rows"]) for r in rows],
            [(self.lib.build_id, NATIVE_IMAGE, len(self.leaves) + 1, len(self.leaves) + 1, len(self.stacks))],
        )

    def test_symbols_add_reconverts_the_upload(self):
        self.assertIn(self.lib.build_id, self.added)
        self.assertIn("Inlines", self.added)
        self.assertIn(
            f"1 upload(s) looked at, 1 reconverted, 0 up to date, {len(self.leaves) + 1} frame(s) symbolized",
            self.added,
        )
        self.assertTrue((self.store / "debuginfo" / self.lib.build_id / "libwork.so").is_file())
        t = Tables(self.store)
        self.assertEqual({f["symbol_status"] for f in t.frames.values()}, {"symbolicated"})
        self.assertTrue(all(f["symbolized"] for f in t.frames.values()))
        # The tables' own inline chains are addr2line's, frame by frame.
        for f in t.frames.values():
            with self.subTest(address=f"{unsigned(f['address']):#x}"):
                va = unsigned(f["address"]) - NATIVE_BASE
                is_ret = va == self.ret
                self.assertEqual([f["function"]] + [c["function"] for c in f["inlined_into"]], self.chain(va, is_ret))
                self.assertEqual(f["name"], self.chain(va, is_ret)[0])

    def test_after_symbols_the_queries_see_the_new_names(self):
        expected = self.symbolized()
        self.check_answers(self.store, expected)
        # The inlined functions are in the answers, in their order on the stack.
        inlined = {n for c in self.chains.values() for n in c[:-1]}
        self.assertIn("fold", inlined)
        for name in inlined | {"work", "outer"}:
            self.assertIn(name, expected["total"])
        deepest = max(self.chains.values(), key=len)
        self.assertTrue(any(";".join(reversed(deepest)) in path for path in expected["folded"]))
        self.assertIn(";".join(["outer"] + list(reversed(self.chain(self.callee, False)))), expected["folded"])

    def test_after_symbols_the_rollup_table_sums_the_new_names(self):
        # The function_rollup rows themselves (one hour here), summed per function.
        t = Tables(self.store)
        self.assertEqual({(r["service"], r["release"], r["sample_type"], r["sample_unit"]) for r in t.rollup},
                         {(NATIVE_SERVICE, NATIVE_RELEASE, *NATIVE_GROUP[1:])})
        self_ = collections.defaultdict(lambda: [0, 0])
        total = collections.defaultdict(lambda: [0, 0])
        for r in t.rollup:
            self_[r["function"]][0] += r["self_value"]
            self_[r["function"]][1] += r["self_rows"]
            total[r["function"]][0] += r["total_value"]
            total[r["function"]][1] += r["total_rows"]
        expected = self.symbolized()
        self.assertEqual({k: v for k, v in self_.items() if v[1]}, expected["self"])
        self.assertEqual(dict(total), expected["total"])

    def test_after_symbols_release_comparison_sees_the_new_names(self):
        # The release the sidecar gives is kept by the rehydration: its leaf functions' shares.
        expected = self.symbolized()["self"]
        rows = run_query(self.store, "release_comparison", release_a=NATIVE_RELEASE, release_b="never-released")
        self.assertEqual({r["function"]: r["self_value_a"] for r in rows}, {k: v for k, (v, _) in expected.items()})
        for r in rows:
            self.assertEqual(float(r["self_pct_a"]), round(100.0 * expected[r["function"]][0] / len(self.stacks), 4))
            self.assertEqual(r["self_value_b"], 0)

    def test_after_symbols_no_frame_is_left_to_symbolize(self):
        self.assertEqual(run_query(self.store, "unsymbolized_frames_by_build_id"), [])

    def test_no_query_answers_with_an_address_after_symbols(self):
        # Every query, with parameters that select the library's profile: no answer names a
        # frame by its address any more, while before the symbols those answering with names did.
        params = dict(service=NATIVE_SERVICE, release_a=NATIVE_RELEASE, release_b="never-released", top_n=HUGE,
                      time_from=dt.datetime.fromtimestamp(NATIVE_START_S, dt.timezone.utc),
                      time_to=dt.datetime.fromtimestamp(NATIVE_START_S + 60, dt.timezone.utc))
        address = re.compile(r"!0x[0-9a-f]+")
        named_before = set()
        for name in QUERIES:
            with self.subTest(query=name):
                before = run_query(self.before, name, **params)
                after = run_query(self.store, name, **params)
                if name != "unsymbolized_frames_by_build_id":
                    self.assertTrue(after, f"{name} returned no rows")
                strings = lambda rows: [v for r in rows for v in r.values() if isinstance(v, str)]  # noqa: E731
                if any(address.search(v) for v in strings(before)):
                    named_before.add(name)
                self.assertEqual([v for v in strings(after) if address.search(v)], [])
        self.assertLessEqual(
            {"top_self_functions", "top_total_functions", "top_functions_rollup", "flame_graph_folded", "release_comparison"},
            named_before,
        )


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
