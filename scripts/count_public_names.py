#!/usr/bin/env python3
"""Count the library's reachable public names, as rustdoc's all.html lists them.

Build the docs first (every feature, so the lake and S3 names are in):

    cargo doc -p proflake --no-deps --lib --features lake-s3
    scripts/count_public_names.py [path/to/doc/proflake]

It prints the number of items (structs, enums, traits, functions, type aliases, constants,
statics, macros; modules are listed but not counted) and the items by namespace.
"""

import html
import os
import re
import sys
from collections import defaultdict

# rustdoc's page prefixes: `struct.Name.html` and so on.
KINDS = ("struct", "enum", "trait", "fn", "type", "constant", "static", "macro", "union",
         "traitalias", "attr", "derive", "primitive", "keyword")


def doc_dir():
    if len(sys.argv) > 1:
        return sys.argv[1]
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "target")
    return os.path.join(target, "doc", "proflake")


def main():
    root = doc_dir()
    with open(os.path.join(root, "all.html"), encoding="utf-8") as f:
        text = f.read()
    items = defaultdict(list)
    for href in re.findall(r'<li><a href="([^"#][^"]*)"', text):
        href = html.unescape(href)
        parts = href.split("/")
        kind, name = parts[-1].split(".", 2)[:2]
        if kind not in KINDS:
            continue
        namespace = "::".join(["proflake"] + parts[:-1])
        items[namespace].append(f"{kind} {name}")
    # Modules: every folder of the docs with an index page.
    modules = []
    for dirpath, _, files in os.walk(root):
        if "index.html" in files and dirpath != root:
            modules.append("proflake::" + os.path.relpath(dirpath, root).replace(os.sep, "::"))
    total = sum(len(v) for v in items.values())
    print(f"{total} public names")
    for namespace in sorted(items):
        names = sorted(items[namespace], key=lambda s: s.split(" ", 1)[1])
        print(f"\n{namespace} ({len(names)})")
        for n in names:
            print(f"  {n}")
    print(f"\nmodules ({len(modules)}, not counted)")
    for m in sorted(modules):
        print(f"  {m}")


if __name__ == "__main__":
    main()
