#!/usr/bin/env python3
"""Exports read by readers that share no code with proflake, and round trips.

Converts real sample inputs (pprof, perf script, perf.data, folded, speedscope, a Chrome
trace of spans, JFR) into a store with the proflake CLI, then exports the store, or a slice
of it, in every format and checks what an independent reader finds in the file against
DuckDB's own per-series, per-stack totals of the same tables:

* pprof and OTLP: protobuf's Python runtime (pprof from the upstream profile.proto's
  descriptors; OTLP with OpenTelemetry's own Python bindings, tests/export/read_otlp.py);
* speedscope: the file format's documented fields checked here, samples and weights summed,
  evented profiles replayed from their open and close events;
* folded stacks: the lines, split as flamegraph.pl splits them;
* Firefox Profiler: the processed format's tables walked by tests/export/read_firefox.py.

Then each export is converted again by proflake and its tables' totals compared with the
original's. Plain Python: `python tests/export/test_export.py`. The CLI comes from
$PROFLAKE_BIN (default target/debug/proflake), the descriptor sets from $PROFLAKE_GEN_INPUTS
(default target/debug/proflake-gen-inputs). The last line printed is
`export tests: N passed, M failed`.
"""

from __future__ import annotations

import collections
import gzip
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import duckdb

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
BIN = Path(os.environ.get("PROFLAKE_BIN", REPO / "target" / "debug" / "proflake"))
GEN = Path(os.environ.get("PROFLAKE_GEN_INPUTS", REPO / "target" / "debug" / "proflake-gen-inputs"))

# (file, service, release): two services, and two releases of one.
INPUTS = [
    ("samples/pprof/google-pprof_report_sample.cpu.pb.gz", "report", "1.0"),
    ("samples/perf-script/simple-with-header.perf.txt", "shop", "1.0"),
    ("samples/perf-data/spin.data", "shop", "2.0"),
    ("samples/folded/pyspy.folded", "shop", "2.0"),
    ("samples/speedscope/pyspy.speedscope.json", "web", "1.0"),
    ("samples/chrome/claude_code.json", "agent", "1.0"),
    ("samples/jfr/workload-jdk25.jfr.gz", "java", "1.0"),
]


def run(*args: str) -> str:
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} failed:\n{done.stderr}")
    return done.stderr


def convert(store: Path, path: Path, *flags: str) -> None:
    metadata = path.with_name(path.name.split(".")[0] + ".metadata.json")
    extra = ["--metadata", str(metadata)] if metadata.exists() else []
    run(BIN, "convert", "-o", store, path, *extra, *flags)


def stack_totals(store: Path, where: str = "TRUE") -> dict:
    """{(sample_type, unit): {(frame names root first): summed value}} from the tables."""
    tables = store / "tables" / "v2"
    con = duckdb.connect()
    for t in ("profiles", "samples", "stacks", "frames"):
        con.execute(
            f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{tables}/{t}/*/*.parquet', "
            "hive_partitioning = false)"
        )
    rows = con.execute(
        f"""
        WITH RECURSIVE walk(profile_id, stack_id, node, path) AS (
            SELECT DISTINCT s.profile_id, s.stack_id, s.stack_id, []::VARCHAR[]
            FROM samples s WHERE s.stack_id IS NOT NULL
            UNION ALL
            SELECT w.profile_id, w.stack_id, st.parent_id, list_prepend(f.name, w.path)
            FROM walk w
            JOIN stacks st ON st.profile_id = w.profile_id AND st.stack_id = w.node
            JOIN frames f ON f.profile_id = st.profile_id AND f.frame_id = st.frame_id
        ),
        paths AS (SELECT profile_id, stack_id, path FROM walk WHERE node IS NULL)
        SELECT s.sample_type, s.sample_unit, coalesce(p.path, []::VARCHAR[]), sum(s.value)
        FROM samples s
        JOIN profiles pr USING (profile_id)
        LEFT JOIN paths p ON p.profile_id = s.profile_id AND p.stack_id = s.stack_id
        WHERE {where}
        GROUP BY ALL
        """
    ).fetchall()
    out: dict = collections.defaultdict(dict)
    for sample_type, unit, path, total in rows:
        out[(sample_type, unit)][tuple(path)] = int(total)
    return dict(out)


def drop_zero(totals: dict) -> dict:
    return {k: {p: v for p, v in s.items() if v != 0} for k, s in totals.items()}


# --- independent readers ------------------------------------------------------------------


def pprof_class():
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    descriptors = Path(tempfile.mkdtemp()) / "descriptors"
    run(GEN, "descriptors", descriptors)
    files = descriptor_pb2.FileDescriptorSet.FromString(
        (descriptors / "perfetto_pprof.binpb").read_bytes()
    )
    pool = descriptor_pool.DescriptorPool()
    for f in files.file:
        pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("perftools.profiles.Profile"))


def pprof_read(path: Path):
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return pprof_class().FromString(data)


def pprof_strings(profile) -> list[str]:
    # The project's profile.proto reads string_table as bytes, so that a file with text that
    # is not UTF-8 still decodes; the strings here are UTF-8.
    return [b.decode("utf-8") for b in profile.string_table]


def pprof_totals(profile) -> dict:
    strings = pprof_strings(profile)
    functions = {f.id: strings[f.name] for f in profile.function}
    mappings = {m.id: strings[m.filename] for m in profile.mapping}
    names = {}
    for loc in profile.location:
        if loc.line:
            names[loc.id] = functions[loc.line[0].function_id]
        else:
            image = mappings.get(loc.mapping_id, "").replace("\\", "/").rsplit("/", 1)[-1] or "?"
            names[loc.id] = f"{image}!{loc.address:#x}"
    types = [(strings[t.type], strings[t.unit]) for t in profile.sample_type]
    out: dict = collections.defaultdict(lambda: collections.defaultdict(int))
    for s in profile.sample:
        path = tuple(names[i] for i in reversed(s.location_id))
        for t, v in zip(types, s.value):
            if v:
                out[t][path] += v
    return {k: dict(v) for k, v in out.items()}


SPEEDSCOPE_UNITS = {"bytes", "microseconds", "milliseconds", "nanoseconds", "none", "seconds"}


def speedscope_check(doc: dict) -> None:
    """The fields speedscope's file format (file-format-spec.ts) requires, with their types."""
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    frames = doc["shared"]["frames"]
    for f in frames:
        assert isinstance(f["name"], str)
        for key in ("line", "col"):
            assert key not in f or isinstance(f[key], (int, float))
    for p in doc["profiles"]:
        assert p["type"] in ("sampled", "evented") and isinstance(p["name"], str)
        assert p["unit"] in SPEEDSCOPE_UNITS
        assert isinstance(p["startValue"], (int, float)) and isinstance(p["endValue"], (int, float))
        if p["type"] == "sampled":
            assert len(p["samples"]) == len(p["weights"])
            assert all(0 <= i < len(frames) for s in p["samples"] for i in s)
        else:
            depth = []
            last = p["startValue"]
            for e in p["events"]:
                assert e["type"] in ("O", "C") and e["at"] >= last, e
                last = e["at"]
                if e["type"] == "O":
                    depth.append(e["frame"])
                else:
                    assert depth and depth.pop() == e["frame"], "closes what it opened last"
            assert not depth, "every opened frame is closed"


def speedscope_totals(doc: dict) -> dict:
    """{profile name's series: {path: total}}: sampled weights summed, evented replayed."""
    names = [f["name"] for f in doc["shared"]["frames"]]
    out: dict = collections.defaultdict(lambda: collections.defaultdict(int))
    for p in doc["profiles"]:
        series = p["name"].rsplit(" (", 1)[1].rstrip(")")
        if p["type"] == "sampled":
            for stack, weight in zip(p["samples"], p["weights"]):
                out[series][tuple(names[i] for i in stack)] += weight
        else:
            stack: list[str] = []
            at = None
            for e in p["events"]:
                if stack and at is not None and e["at"] > at:
                    out[series][tuple(stack)] += e["at"] - at
                at = e["at"]
                if e["type"] == "O":
                    stack.append(names[e["frame"]])
                else:
                    stack.pop()
    return {k: dict(v) for k, v in out.items()}


def folded_totals(text: str) -> dict:
    out: dict = collections.defaultdict(int)
    for line in text.splitlines():
        path, count = line.rsplit(" ", 1)
        out[tuple(path.split(";"))] += int(count)
    return dict(out)


def by_stack(totals: dict, series: tuple) -> dict:
    return totals[series]


class Exports(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = Path(tempfile.mkdtemp(prefix="proflake-export-"))
        cls.store = cls.tmp / "store"
        for path, service, release in INPUTS:
            convert(cls.store, REPO / path, "--service", service, "--release", release)
        cls.tables = stack_totals(cls.store)

    def export(self, fmt: str, *flags: str, name: str | None = None) -> Path:
        out = self.tmp / (name or f"export.{fmt}")
        run(BIN, "export", "--store", self.store, "--format", fmt, "-o", out, *flags)
        return out

    def round_trip(self, path: Path, *flags: str) -> dict:
        store = Path(tempfile.mkdtemp(dir=self.tmp))
        run(BIN, "convert", "-o", store, path, "--service", "again", *flags)
        return stack_totals(store)

    # --- pprof ---

    def test_pprof_whole_store_per_series_and_stack(self) -> None:
        profile = pprof_read(self.export("pprof"))
        self.assertEqual(profile.string_table[0], b"")
        self.assertTrue(all(m.id > 0 for m in profile.mapping))
        read = pprof_totals(profile)
        self.assertEqual(drop_zero(self.tables), read)
        build_ids = {pprof_strings(profile)[m.build_id] for m in profile.mapping if m.build_id}
        self.assertTrue(build_ids, "the perf.data sample's images keep their build IDs")
        print(f"pprof: {len(profile.sample)} samples, {len(read)} series, "
              f"{sum(sum(v.values()) for v in read.values())} total, build IDs {sorted(build_ids)[:2]}")

    def test_pprof_round_trip(self) -> None:
        path = self.export("pprof", "--service", "report")
        again = self.round_trip(path)
        self.assertEqual(stack_totals(self.store, "pr.service = 'report'"), again)

    def test_pprof_fleet_slice(self) -> None:
        profile = pprof_read(self.export("pprof", "--service", "shop", "--release", "2.0",
                                         name="slice.pb.gz"))
        expected = stack_totals(self.store, "pr.service = 'shop' AND pr.release = '2.0'")
        self.assertEqual(drop_zero(expected), pprof_totals(profile))
        self.assertEqual(len(expected), 2, "perf.data's and the folded file's series")

    def test_pprof_pgo(self) -> None:
        profile = pprof_read(self.export("pprof", "--service", "shop", "--release", "1.0",
                                          "--pgo", name="pgo.pb.gz"))
        s = pprof_strings(profile)
        self.assertEqual([(s[t.type], s[t.unit]) for t in profile.sample_type],
                         [("samples", "count"), ("cpu", "nanoseconds")])
        self.assertTrue(all(not x.label for x in profile.sample))
        self.assertTrue(all(loc.line for loc in profile.location if loc.address == 0))
        expected = stack_totals(self.store, "pr.service = 'shop' AND pr.release = '1.0'")
        ((_, stacks),) = expected.items()
        read = pprof_totals(profile)
        self.assertEqual(read[("cpu", "nanoseconds")], stacks)

    def test_lake_and_landing_tiers_agree(self) -> None:
        # `convert` publishes each upload into the lake too.
        self.assertTrue((self.store / "lake" / "samples" / "_delta_log").is_dir())
        read = {}
        for tier in ("lake", "landing"):
            path = self.export("pprof", "--tier", tier, "--service", "shop", name=f"{tier}.pb.gz")
            read[tier] = pprof_totals(pprof_read(path))
        self.assertEqual(read["lake"], read["landing"])
        self.assertEqual(read["lake"], drop_zero(stack_totals(self.store, "pr.service = 'shop'")))

    # --- speedscope ---

    def test_speedscope_each_series(self) -> None:
        for (series, unit), stacks in self.tables.items():
            with self.subTest(series=series):
                doc = json.loads(self.export("speedscope", "--series", series,
                                             name=f"{series}.speedscope.json").read_text())
                speedscope_check(doc)
                read = speedscope_totals(doc)
                self.assertEqual(read[series], {p: v for p, v in stacks.items() if v})

    def test_speedscope_round_trip(self) -> None:
        path = self.export("speedscope", "--series", "cpu-clock", name="rt.speedscope.json")
        again = self.round_trip(path)
        ((_, stacks),) = again.items()
        self.assertEqual(stacks, self.tables[("cpu-clock", "nanoseconds")])

    # --- folded ---

    def test_folded(self) -> None:
        path = self.export("folded", "--series", "cpu-clock", name="cpu.folded")
        read = folded_totals(path.read_text())
        self.assertEqual(read, self.tables[("cpu-clock", "nanoseconds")])
        again = self.round_trip(path)
        ((_, stacks),) = again.items()
        self.assertEqual(stacks, read)

    # --- Firefox Profiler ---

    def test_firefox(self) -> None:
        import read_firefox

        for series in ("cpu-clock", "samples"):
            with self.subTest(series=series):
                path = self.export("firefox", "--series", series, name=f"{series}.firefox.json")
                # A frame known only by its address is an address in its library in the
                # Firefox format (relative to the library, which the Firefox Profiler
                # symbolicates), where the tables name it `<image>!0x<absolute address>`: such
                # frames are compared as "an address", everything else by name.
                def plain(stack: tuple) -> tuple:
                    return tuple("<address>" if n.startswith("0x") or "!0x" in n else n
                                 for n in stack)

                read: dict = collections.defaultdict(int)
                for (_thread, stack), weight in read_firefox.totals(path).items():
                    read[plain(stack)] += weight
                ((_, stacks),) = stack_totals(
                    self.store, f"s.sample_type = '{series}'").items()
                expected: dict = collections.defaultdict(int)
                for stack, v in stacks.items():
                    expected[plain(stack)] += v
                self.assertEqual(dict(read), {p: v for p, v in expected.items() if v})

    # --- OTLP ---

    def test_otlp_binary_and_json(self) -> None:
        import read_otlp

        for json_flag in (False, True):
            with self.subTest(json=json_flag):
                flags = ["--json"] if json_flag else []
                path = self.export("otlp", *flags, name=f"export{'.json' if json_flag else '.pb'}")
                read: dict = collections.defaultdict(dict)
                for (sample_type, unit, stack), value in read_otlp.totals(path, json=json_flag).items():
                    read[(sample_type, unit)][stack] = value
                self.assertEqual(dict(read), drop_zero(self.tables))
                again = self.round_trip(path)
                self.assertEqual(again, self.tables)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed = len(result.failures) + len(result.errors)
    print(f"export tests: {result.testsRun - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
