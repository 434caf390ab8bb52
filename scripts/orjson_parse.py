#!/usr/bin/env python3
"""The parse-only baseline for JSON inputs: reads FILE whole, then times orjson.loads of it
(best of --runs), the way a Python tool would read a trace before doing anything with it.

    orjson_parse.py FILE [--runs 3]
"""

import argparse
import resource
import sys
import time

import orjson


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with open(args.file, "rb") as f:
        data = f.read()
    best = None
    for _ in range(args.runs):
        start = time.perf_counter()
        doc = orjson.loads(data)
        elapsed = time.perf_counter() - start
        best = elapsed if best is None else min(best, elapsed)
        del doc
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"orjson.loads {len(data) / 1e6:.1f} MB: best {best:.3f} s of {args.runs}, peak RSS {peak_mb:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
