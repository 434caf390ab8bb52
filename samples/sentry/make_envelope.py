#!/usr/bin/env python3
"""Builds android_perfetto.envelope: the envelope a Sentry Android SDK (8.38) sends for a
Perfetto profile chunk, with the SDK's real envelope header and chunk metadata (taken from
Relay's test envelope, see tests/fixtures/sentry/SOURCES.md) in front of this repository's
own sample trace, samples/perfetto/android_app.pftrace.

Usage: make_envelope.py OUTPUT
"""
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
SENTRY = ROOT / "tests" / "fixtures" / "sentry"


def main() -> None:
    out = pathlib.Path(sys.argv[1])
    header, item_header = (SENTRY / "relay_perfetto_envelope_headers.jsonl").read_text().splitlines()[:2]
    metadata = (SENTRY / "relay_perfetto_chunk_metadata.json").read_bytes()
    trace = (ROOT / "samples" / "perfetto" / "android_app.pftrace").read_bytes()
    item = json.loads(item_header)
    item["meta_length"] = len(metadata)
    item["length"] = len(metadata) + len(trace)
    body = header.encode() + b"\n" + json.dumps(item, separators=(",", ":")).encode() + b"\n"
    out.write_bytes(body + metadata + trace + b"\n")


if __name__ == "__main__":
    main()
