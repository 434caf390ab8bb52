#!/usr/bin/env python3
"""The parse-only baseline for JSON inputs: reads FILE whole, then times orjson.loads of it
(best of --runs, wall and CPU time of that run), the way a Python tool would read a trace before
doing anything with it.

    orjson_parse.py FILE [--runs 3]
"""

import argparse
import sys

import orjson

from best_of import best_of


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with open(args.file, "rb") as f:
        data = f.read()
    # Nothing of the document is kept: the baseline is the parse alone.
    best, best_cpu, _, peak_mb = best_of(args.runs, lambda: orjson.loads(data) and None)
    print(f"orjson.loads {len(data) / 1e6:.1f} MB: best {best:.3f} s (CPU {best_cpu:.3f} s) of {args.runs}, "
          f"peak RSS {peak_mb:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
