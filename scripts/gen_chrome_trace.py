#!/usr/bin/env python3
"""Writes a large DevTools-style Chrome trace, deterministically, for the benchmarks: mostly
complete (`X`) events nested a few levels deep on 16 threads, written as Chrome writes them
(each when it ends, so children before parents), with small `args`, `M` names, and V8 CPU
samples in a `Profile` event and `ProfileChunk`s on the main thread.

    gen_chrome_trace.py OUT [--mb 200]
"""

import argparse
import json
import random

NAMES = ["RunTask", "ParseHTML", "FunctionCall", "EvaluateScript", "Layout", "Paint",
         "UpdateLayoutTree", "v8.compile", "MinorGC", "TimerFire", "XHRReadyStateChange"]


def spans(rng, tid, start, depth, out):
    """A span and its children; each event is appended when it ends, as Chrome writes."""
    t = start + rng.randint(1, 20)
    end_children = t
    if depth < 5:
        for _ in range(rng.randint(0, 3)):
            end_children = spans(rng, tid, end_children, depth + 1, out) + rng.randint(1, 10)
    dur = max(end_children - start, 1) + rng.randint(1, 50)
    out.append({"args": {"data": {"frame": "F%d" % (tid % 4)}} if depth == 0 else {},
                "cat": "devtools.timeline", "dur": dur, "name": rng.choice(NAMES), "ph": "X",
                "pid": 4242, "tid": tid, "ts": start, "tts": start // 2})
    return start + dur


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--mb", type=int, default=200)
    args = parser.parse_args()
    rng = random.Random(24)
    limit = args.mb * 1_000_000
    with open(args.out, "w") as f:
        f.write('{"metadata":{"source":"DevTools","startTime":"2025-11-22T08:26:40.000Z"},"traceEvents":[\n')
        written = 0
        first = True

        def emit(event):
            nonlocal written, first
            text = ("" if first else ",\n") + json.dumps(event, separators=(",", ":"))
            first = False
            f.write(text)
            written += len(text)

        for tid in range(1, 17):
            emit({"args": {"name": "Thread%d" % tid}, "cat": "__metadata", "name": "thread_name",
                  "ph": "M", "pid": 4242, "tid": tid, "ts": 0})
        emit({"args": {"data": {"startTime": 1000}}, "cat": "disabled-by-default-v8.cpu_profiler",
              "id": "0x1", "name": "Profile", "ph": "P", "pid": 4242, "tid": 1, "ts": 1000})
        clocks = {tid: 1000 for tid in range(1, 17)}
        node = 1
        while written < limit:
            tid = rng.randint(1, 16)
            out = []
            clocks[tid] = spans(rng, tid, clocks[tid], 0, out) + rng.randint(5, 200)
            for event in out:
                emit(event)
            if rng.random() < 0.05:
                nodes = [{"callFrame": {"functionName": "f%d" % (node + i), "url": "app.js",
                                        "lineNumber": i, "columnNumber": 4, "scriptId": 7},
                          "id": node + i + 1, "parent": (node + i) if i else 1} for i in range(3)]
                if node == 1:
                    nodes.insert(0, {"callFrame": {"functionName": "(root)", "url": ""}, "id": 1})
                samples = [node + 1 + rng.randint(0, 2) for _ in range(50)]
                emit({"args": {"data": {"cpuProfile": {"nodes": nodes, "samples": samples},
                                        "timeDeltas": [rng.randint(90, 110) for _ in samples]}},
                      "cat": "disabled-by-default-v8.cpu_profiler", "id": "0x1",
                      "name": "ProfileChunk", "ph": "P", "pid": 4242, "tid": 1, "ts": clocks[1]})
                node += 3
        f.write("]}\n")


if __name__ == "__main__":
    main()
