#!/usr/bin/env python3
"""The parse-only baseline for `perf script` text: what a Python tool does before it can use
the samples. It reads FILE a line at a time (as such tools stream perf's output rather than hold
it), splits each record's header line on whitespace (time, period and event, read from the
right since the comm may hold blanks) and each callchain line into its address, symbol and DSO,
and counts records and frames. Nothing is kept. Best of --runs; unlike orjson_parse.py, the
timed part includes reading the file (from the page cache after the first run), since a
streaming reader cannot separate the two.

    text_parse.py FILE [--runs 3]

Prints one line: `perf script text N MB: best S s (CPU C s) of R, peak RSS M MB, ...`.
"""

import argparse
import os
import sys

from best_of import best_of


def parse_header(line):
    """(time in seconds, period, event) of a record's header line."""
    fields = line.split()
    # `... TIME: PERIOD EVENT:`: the first field ending in ':' with a '.' is the time.
    for i, field in enumerate(fields):
        if field.endswith(":") and "." in field:
            seconds = float(field[:-1])
            rest = fields[i + 1:]
            if rest and rest[0].isdigit():
                return seconds, int(rest[0]), rest[1][:-1] if len(rest) > 1 else ""
            return seconds, 1, rest[0][:-1] if rest else ""
    raise ValueError("no time in header line: %r" % line)


def parse_frame(line):
    """(address, symbol, dso) of a callchain line: `addr symbol+0xoff (dso)`."""
    address, rest = line.split(None, 1)
    symbol, _, dso = rest.rstrip("\n").rpartition(" (")
    return int(address, 16), symbol, dso[:-1]


def parse(path):
    """Walks the whole file; returns (records, frames)."""
    records = frames = 0
    in_record = False
    # perf prints symbols as found, not always UTF-8: repair rather than fail, as proflake does.
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.isspace():
                # A blank line ends the record's callchain.
                in_record = False
            elif line[0] == "#":
                continue
            elif in_record and line[0] == "\t":
                # perf indents callchain lines with a tab; without -g every line is a header.
                parse_frame(line)
                frames += 1
            else:
                parse_header(line)
                records += 1
                in_record = True
    return records, frames


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    best, best_cpu, (records, frames), peak_mb = best_of(args.runs, lambda: parse(args.file))
    size = os.path.getsize(args.file)
    print(f"perf script text {size / 1e6:.1f} MB: best {best:.3f} s (CPU {best_cpu:.3f} s) of {args.runs}, "
          f"peak RSS {peak_mb:.0f} MB, {records} records, {frames} frames")
    return 0


if __name__ == "__main__":
    sys.exit(main())
