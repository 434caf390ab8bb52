#!/usr/bin/env python3
"""An independent reader of the Firefox Profiler's processed profile format.

Reads only the processed-format fields (threads[].samples, stackTable, frameTable,
funcTable and the string table) and sums each sample's weight per thread and stack:
``totals(path)`` returns ``{(thread_name, (function, ...root first)): summed_weight}``.

The string table is the thread's own ``stringArray`` (or ``stringTable``, as some writers
name it), else the profile's ``shared.stringArray`` (processed version 56 and later).
A missing or null weight counts 1, as the profiler counts it. A sample without a stack
is summed under the empty tuple. The file may be gzipped.

Usage: read_firefox.py PROFILE.json  (prints the totals as JSON: a list of
{"thread", "stack", "weight"} objects, sorted by thread and stack)
"""

import gzip
import json
import sys


def _load(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data.decode("utf-8"))


def _strings(profile, thread):
    for key in ("stringArray", "stringTable"):
        own = thread.get(key)
        if isinstance(own, list):
            return own
    shared = profile.get("shared") or {}
    strings = shared.get("stringArray")
    if isinstance(strings, list):
        return strings
    raise ValueError("thread %r has no string table" % thread.get("name"))


def _number(value):
    """A weight as an int when it is whole, so that sums compare exactly."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _thread_totals(profile, thread, out):
    name = thread.get("name") or ""
    strings = _strings(profile, thread)
    stack_table = thread["stackTable"]
    prefixes = stack_table["prefix"]
    stack_frames = stack_table["frame"]
    frame_funcs = thread["frameTable"]["func"]
    func_names = thread["funcTable"]["name"]
    if len(prefixes) != len(stack_frames):
        raise ValueError("thread %r: stackTable columns differ in length" % name)

    # Every stack's function names, root first; a prefix always comes before its stack.
    paths = []
    for i, (prefix, frame) in enumerate(zip(prefixes, stack_frames)):
        function = strings[func_names[frame_funcs[frame]]]
        if prefix is None:
            paths.append((function,))
        elif 0 <= prefix < i:
            paths.append(paths[prefix] + (function,))
        else:
            raise ValueError("thread %r: stack %d has prefix %r" % (name, i, prefix))

    samples = thread["samples"]
    stacks = samples["stack"]
    weights = samples.get("weight")
    if weights is not None and len(weights) != len(stacks):
        raise ValueError("thread %r: samples.weight and samples.stack differ" % name)
    for i, stack in enumerate(stacks):
        weight = 1 if weights is None or weights[i] is None else weights[i]
        path = () if stack is None else paths[stack]
        key = (name, path)
        out[key] = _number(out.get(key, 0) + weight)


def totals(path):
    """{(thread_name, tuple_of_function_names_root_first): summed_weight} of a processed profile."""
    profile = _load(path)
    meta = profile.get("meta") or {}
    if "preprocessedProfileVersion" not in meta:
        raise ValueError("%s is not a processed profile (no meta.preprocessedProfileVersion)" % path)
    out = {}
    for thread in profile.get("threads") or []:
        _thread_totals(profile, thread, out)
    return out


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: read_firefox.py PROFILE.json\n")
        return 2
    rows = [
        {"thread": thread, "stack": list(stack), "weight": weight}
        for (thread, stack), weight in sorted(totals(argv[1]).items())
    ]
    json.dump(rows, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
