#!/usr/bin/env python3
"""Reads a downloaded output bucket the way an analyst would, and checks it against the manifests.

Usage: python tests/duckdb/read_bucket.py DIR

DIR mirrors the output bucket (keys as paths): `converted/<source_id>/manifest.json` and
`tables/v2/<table>/dt=YYYY-MM-DD/<source_id>.parquet`. DuckDB reads every table through the glob
`tables/v2/<table>/dt=*/*.parquet` with hive partitioning. For every manifest this checks:

* the `samples` rows of its source (counted by file, by the `source_id` column, and by joining
  `profiles`) equal the rows its `series` say the tables hold (the sum of `table_rows`): the
  tables hold every observation, not only what the Sample v2 chunks hold;
* per series, the rows and their total value equal the series' `table_rows` and `total_value`;
* its `profiles` rows' `samples` sum to the same total;
* every table file it lists is read, with the rows it lists, under its `dt` partition, and
  every row of it carries the file's source id;

and that no table row belongs to a source without a manifest. Prints one line per source and a
closing `read_bucket: N sources, M rows OK`; exits 1 with the mismatches otherwise.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import duckdb

TABLES = ["profiles", "samples", "stacks", "frames", "function_rollup"]
# Only uploads with instants or counter values write these.
OPTIONAL_TABLES = ["counters"]
VERSION = "v2"


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = Path(sys.argv[1]).resolve()
    manifests = {}
    for path in sorted(root.glob("converted/*/manifest.json")):
        manifest = json.loads(path.read_text())
        manifests[manifest["source"]["source_id"]] = manifest
    if not manifests:
        print(f"read_bucket: no manifests under {root}/converted/", file=sys.stderr)
        return 1

    con = duckdb.connect()
    present = []
    for table in TABLES + OPTIONAL_TABLES:
        files = sorted(root.glob(f"tables/{VERSION}/{table}/dt=*/*.parquet"))
        if not files and table in OPTIONAL_TABLES:
            continue
        present.append(table)
        if not files:
            print(f"read_bucket: no {table} files", file=sys.stderr)
            return 1
        glob = str(root / "tables" / VERSION / table / "dt=*" / "*.parquet")
        con.execute(
            f"CREATE VIEW {table} AS SELECT *, "
            f"regexp_extract(filename, '([0-9a-f]+)\\.parquet$', 1) AS file_source_id "
            f"FROM read_parquet('{glob}', hive_partitioning = true, filename = true)"
        )

    def rows(sql: str, *params) -> list[tuple]:
        return con.execute(sql, list(params)).fetchall()

    errors: list[str] = []
    samples_by_file = dict(rows("SELECT file_source_id, count(*) FROM samples GROUP BY 1"))
    samples_by_column = dict(rows("SELECT source_id, count(*) FROM samples GROUP BY 1"))
    samples_by_join = dict(
        rows(
            "SELECT p.source_id, count(*) FROM samples s "
            "JOIN profiles p USING (profile_id) GROUP BY 1"
        )
    )
    series = {
        (sid, sample_type, unit): (n, total)
        for sid, sample_type, unit, n, total in rows(
            "SELECT source_id, sample_type, sample_unit, count(*), sum(value) FROM samples GROUP BY ALL"
        )
    }
    profiles = {
        sid: (n, total)
        for sid, n, total in rows(
            "SELECT source_id, count(*), sum(samples) FROM profiles GROUP BY 1"
        )
    }
    orphan_samples = rows(
        "SELECT count(*) FROM samples s ANTI JOIN profiles p USING (profile_id)"
    )[0][0]
    if orphan_samples:
        errors.append(f"{orphan_samples} samples rows have no profiles row")
    for table in present:
        mislabelled = rows(f"SELECT count(*) FROM {table} WHERE source_id <> file_source_id")[0][0]
        if mislabelled:
            errors.append(f"{mislabelled} {table} rows carry another source id than their file's")

    total_rows = 0
    for sid, manifest in manifests.items():
        key = manifest["source"]["key"]
        expected = sum(s["table_rows"] for s in manifest["series"])
        by_file = samples_by_file.get(sid, 0)
        n_profiles, profile_total = profiles.get(sid, (0, 0))
        for how, got in (
            ("in its files", by_file),
            ("by source_id", samples_by_column.get(sid, 0)),
            ("joined to profiles", samples_by_join.get(sid, 0)),
            ("by profiles.samples", profile_total),
        ):
            if got != expected:
                errors.append(f"{key}: {got} samples rows {how}, its series say {expected}")
        listed = set()
        for s in manifest["series"]:
            listed.add((sid, s["sample_type"], s["sample_unit"]))
            got = series.get((sid, s["sample_type"], s["sample_unit"]), (0, 0))
            if got != (s["table_rows"], s["total_value"]):
                errors.append(
                    f"{key}: series {s['sample_type']}/{s['sample_unit']} has {got[0]} rows "
                    f"of total value {got[1]}, the manifest says {s['table_rows']} and {s['total_value']}"
                )
        unlisted = {k for k in series if k[0] == sid} - listed
        if unlisted:
            errors.append(f"{key}: series not in its manifest: {sorted(unlisted)}")
        for output in manifest["outputs"]:
            if not output["kind"].startswith("table:"):
                continue
            table = output["kind"].split(":", 1)[1]
            dt = output["key"].split("/dt=", 1)[1].split("/", 1)[0]
            got = rows(
                f"SELECT count(*), count(DISTINCT dt) FROM {table} "
                f"WHERE file_source_id = ? AND CAST(dt AS VARCHAR) = ?",
                sid,
                dt,
            )[0]
            if got != (output["rows"], 1 if output["rows"] else 0):
                errors.append(
                    f"{key}: {output['key']} reads as {got[0]} rows in dt={dt}, "
                    f"manifest says {output['rows']}"
                )
        total_rows += by_file
        print(f"{sid} {key}: {by_file} samples rows, {n_profiles} profiles")

    for table in present:
        for (sid,) in rows(f"SELECT DISTINCT file_source_id FROM {table}"):
            if sid not in manifests:
                errors.append(f"{table} has rows of source {sid}, which has no manifest")

    if errors:
        for error in errors:
            print(f"read_bucket: {error}", file=sys.stderr)
        return 1
    print(f"read_bucket: {len(manifests)} sources, {total_rows} rows OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
