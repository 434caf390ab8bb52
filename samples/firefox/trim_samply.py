#!/usr/bin/env python3
"""Writes ls.json: the first samples of samply's profile of `ls` with only the tables they use.

The source is tests/fixtures/firefox/samply_ls-linux-profile.json (mstange/samply, MIT OR
Apache-2.0; see tests/fixtures/firefox/SOURCES.md). The `ls` thread keeps its first KEEP
samples; its stack, frame, function, resource and string tables, and the profile's libs, keep
the rows those samples reach, renumbered in their original order. Everything else is as samply
wrote it. Run from this folder: `python3 trim_samply.py`.
"""

import json

KEEP = 250
SOURCE = "../../tests/fixtures/firefox/samply_ls-linux-profile.json"


def keep_rows(table, rows):
    """The table with only `rows` (sorted), its `length` updated."""
    out = {k: [v[i] for i in rows] if isinstance(v, list) else v for k, v in table.items()}
    out["length"] = len(rows)
    return out


def renumber(rows):
    return {old: new for new, old in enumerate(rows)}


def trim(doc):
    thread = doc["threads"][1]
    samples = keep_rows(thread["samples"], range(KEEP))
    stacks, frames = set(), set()
    for s in samples["stack"]:
        while s is not None and s not in stacks:
            stacks.add(s)
            s = thread["stackTable"]["prefix"][s]
    stacks = sorted(stacks)
    frames = sorted({thread["stackTable"]["frame"][s] for s in stacks})
    funcs = sorted({thread["frameTable"]["func"][f] for f in frames})
    resources = sorted({thread["funcTable"]["resource"][f] for f in funcs} - {-1, None})
    libs = sorted({thread["resourceTable"]["lib"][r] for r in resources} - {None})
    strings = sorted(
        {thread["funcTable"]["name"][f] for f in funcs}
        | {thread["resourceTable"]["name"][r] for r in resources}
    )
    new_stack, new_frame, new_func = renumber(stacks), renumber(frames), renumber(funcs)
    new_resource, new_lib, new_string = renumber(resources), renumber(libs), renumber(strings)

    samples["stack"] = [new_stack.get(s) for s in samples["stack"]]
    stack_table = keep_rows(thread["stackTable"], stacks)
    stack_table["prefix"] = [new_stack.get(p) for p in stack_table["prefix"]]
    stack_table["frame"] = [new_frame[f] for f in stack_table["frame"]]
    frame_table = keep_rows(thread["frameTable"], frames)
    frame_table["func"] = [new_func[f] for f in frame_table["func"]]
    func_table = keep_rows(thread["funcTable"], funcs)
    func_table["name"] = [new_string[s] for s in func_table["name"]]
    func_table["resource"] = [new_resource.get(r, -1) for r in func_table["resource"]]
    resource_table = keep_rows(thread["resourceTable"], resources)
    resource_table["lib"] = [new_lib.get(lib) for lib in resource_table["lib"]]
    resource_table["name"] = [new_string[s] for s in resource_table["name"]]

    thread.update(
        samples=samples,
        stackTable=stack_table,
        frameTable=frame_table,
        funcTable=func_table,
        resourceTable=resource_table,
        stringArray=[thread["stringArray"][s] for s in strings],
    )
    doc["libs"] = [doc["libs"][i] for i in libs]
    return doc


with open(SOURCE, encoding="utf-8") as f:
    profile = trim(json.load(f))
with open("ls.json", "w", encoding="utf-8") as f:
    json.dump(profile, f, ensure_ascii=False, separators=(",", ":"))
