#!/usr/bin/env python3
"""The parse-only baseline of BENCHMARKS.md: protobuf's upb backend parses a whole file into
messages and nothing else. Prints the median of --runs parses in seconds and the peak RSS.

Usage: scripts/upb_parse.py {perfetto,otlp,pprof} FILE [--runs N] [--descriptors DIR]

Perfetto traces parse with the Perfetto project's own Python classes. OTLP and pprof parse
with classes built from the descriptor sets `proflake-gen-inputs descriptors DIR` writes: the
same .proto files proflake is compiled from.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time


def from_descriptors(path: str, name: str):
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    with open(path, "rb") as f:
        files = descriptor_pb2.FileDescriptorSet.FromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for file in files.file:
        pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))


def message_class(kind: str, descriptors: str | None):
    from google.protobuf.internal import api_implementation

    if api_implementation.Type() != "upb":
        sys.exit(f"error: protobuf backend is {api_implementation.Type()}, not upb")
    if kind == "perfetto":
        from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace

        return Trace
    if kind not in ("otlp", "pprof"):
        sys.exit(f"error: unknown kind {kind}")
    if descriptors is None:
        sys.exit(f"error: {kind} needs --descriptors DIR")
    if kind == "otlp":
        return from_descriptors(
            f"{descriptors}/otlp.binpb",
            "opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest",
        )
    return from_descriptors(f"{descriptors}/perfetto_pprof.binpb", "perftools.profiles.Profile")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind")
    parser.add_argument("file")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--descriptors", default=None)
    args = parser.parse_args()
    cls = message_class(args.kind, args.descriptors)
    with open(args.file, "rb") as f:
        data = f.read()
    times = []
    for _ in range(args.runs):
        start = time.perf_counter()
        message = cls.FromString(data)
        times.append(time.perf_counter() - start)
        del message
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{statistics.median(times):.4f} {rss_mb:.0f}")


if __name__ == "__main__":
    main()
