#!/usr/bin/env python3
"""The parse-only baseline for gperftools' legacy binary CPU profile: reads FILE whole, then
times (best of --runs) what a Python reader does with it: find the word size and byte order from
the header `0, 3, 0, period, 0`, load the words into an `array` (swapped if need be), walk the
records `count, depth, pc...` to the trailer `0, 1, 0`, slicing out each record's program
counters, and split the /proc/self/maps text after them into its lines and fields. Nothing is
kept but the totals.

    words_parse.py FILE [--runs 3]

Prints one line: `legacy profile N MB: best S s (CPU C s) of R, peak RSS M MB, ...`.
"""

import argparse
import array
import struct
import sys

from best_of import best_of


def layout(data):
    """(array typecode, word size, big-endian?) that makes the header read `0, 3, 0, _, 0`."""
    for size, code in ((8, "Q"), (4, "I")):
        for big in (False, True):
            header = struct.unpack(("<>"[big]) + code * 5, data[:5 * size])
            if header[:3] == (0, 3, 0) and header[4] == 0:
                return code, size, big
    raise ValueError("not a legacy CPU profile: header %r" % data[:40])


def words_of(data, code, size, big):
    """Every whole word of the file (the maps text too: where the records end is not known yet)."""
    words = array.array(code)
    assert words.itemsize == size
    words.frombytes(data[:len(data) // size * size])
    if big != (sys.byteorder == "big"):
        words.byteswap()
    return words


def walk(words):
    """(samples, records, frames, index of the word after the trailer)."""
    samples = records = frames = 0
    i, n = 5, len(words)
    while i + 2 <= n:
        count, depth = words[i], words[i + 1]
        if count == 0 and depth == 1 and i + 2 < n and words[i + 2] == 0:
            return samples, records, frames, i + 3
        pcs = words[i + 2:i + 2 + depth]
        samples += count
        records += 1
        frames += len(pcs)
        i += 2 + depth
    return samples, records, frames, n


def maps_lines(text):
    """The executable mappings of the maps text: `start-end perms offset dev inode path`."""
    executable = 0
    for line in text.splitlines():
        fields = line.split(None, 5)
        if len(fields) >= 5 and "x" in fields[1]:
            start, end = (int(x, 16) for x in fields[0].split("-"))
            executable += end > start
    return executable


def parse(data):
    code, size, big = layout(data)
    words = words_of(data, code, size, big)
    samples, records, frames, end = walk(words)
    executable = maps_lines(data[end * size:].decode("utf-8", errors="replace"))
    return samples, records, frames, executable


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with open(args.file, "rb") as f:
        data = f.read()
    best, best_cpu, totals, peak_mb = best_of(args.runs, lambda: parse(data))
    samples, records, frames, executable = totals
    print(f"legacy profile {len(data) / 1e6:.1f} MB: best {best:.3f} s (CPU {best_cpu:.3f} s) of {args.runs}, "
          f"peak RSS {peak_mb:.0f} MB, {records} records, {samples} samples, {frames} frames, "
          f"{executable} executable mappings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
