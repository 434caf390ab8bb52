#!/usr/bin/env python3
"""Writes a large input of one format, deterministically, for the per-format benchmarks
(scripts/bench_formats.py). Every format draws its stacks the same way: a call graph of a few
thousand functions, each calling 2 to 5 others, walked down from a few entry points into 4,000
distinct stacks (fewer below 50 MB) of depth 5 to 30, so they share prefixes as real call trees
do, then picked with a skewed (Zipf-like) popularity, so that a few stacks hold most samples and
stacks repeat. Times only increase.

    gen_format_inputs.py FORMAT OUT [--mb N]

FORMAT is one of:

  speedscope    py-spy / pyinstrument style speedscope JSON: Python frames in `shared.frames`,
                six sampled profiles (`samples` from the root, `weights` in seconds) and two
                evented ones (`O`/`C` events, properly nested, `at` in seconds)
  firefox       samply-style processed Firefox Profiler profile (`preprocessedProfileVersion`
                41, as samples/firefox/ls.json): profile-wide `libs`, eight threads of one
                process, each with its string array, func, frame, resource and stack tables and
                samples (`stack`, `time` in ms, `weight`, `threadCPUDelta` in µs); native frames
                with addresses relative to their library, kernel frames in the `Kernel` category
  cpuprofile    Node `--cpu-prof` style V8 profile: the node tree (`children`, `hitCount`), with
                `(root)`, `(program)`, `(garbage collector)` and `(idle)`, then `startTime`,
                `endTime`, `samples` and `timeDeltas` (about 1 ms apart)
  perf-script   `perf script --header -F comm,tid,pid,cpu,time,period,event,ip,sym,symoff,dso`:
                16 threads of three processes, `cpu-clock` records with callchains leaf first
                (`addr symbol+0xoff (dso)`), some ending in kernel frames
  pprof-legacy  gperftools' binary CPU profile: 64-bit little-endian words, the header
                `0, 3, 0, 10000, 0`, records `count, depth, pc...` (leaf first, the same stack
                recorded again as the profiler's table evicts it), the trailer `0, 1, 0`, then
                the /proc/self/maps text whose executable mappings hold every pc

The file is about N MB (default 200): writing stops at the first batch of records past N × 10^6
bytes (for JSON, past each profile's or thread's share of it), then the document is closed. The
same arguments always write the same bytes. Standard library only.
"""

import argparse
import array
import itertools
import json
import random
import sys

FORMATS = ("speedscope", "firefox", "cpuprofile", "perf-script", "pprof-legacy")

N_FUNCS = 3000
N_KERNEL_FUNCS = 200
BATCH = 500

VERBS = ["read", "write", "parse", "encode", "decode", "handle", "dispatch", "flush", "poll", "load",
         "store", "lookup", "insert", "merge", "sort", "hash", "compress", "render", "visit", "resolve"]
NOUNS = ["request", "buffer", "header", "frame", "block", "record", "index", "table", "node", "token",
         "chunk", "message", "stream", "entry", "segment", "page", "batch", "span", "query", "key"]
MODULES = ["server", "codec", "storage", "cache", "router", "worker", "scheduler", "protocol",
           "session", "metrics", "planner", "executor", "compactor", "wal", "tls", "pool"]
KERNEL_NAMES = ["entry_SYSCALL_64_after_hwframe", "do_syscall_64", "__x64_sys_read", "__x64_sys_write",
                "ksys_read", "vfs_read", "new_sync_read", "tcp_recvmsg", "tcp_sendmsg", "sock_sendmsg",
                "__schedule", "schedule", "futex_wait", "do_futex", "ep_poll", "do_epoll_wait",
                "copy_user_enhanced_fast_string", "clear_page_erms", "handle_mm_fault", "exc_page_fault",
                "asm_exc_page_fault", "filemap_read", "ext4_file_read_iter", "__alloc_pages"]


def function_names(rng, n):
    """Distinct `module`, `verb_noun` pairs, the parts every format spells its names from."""
    names = []
    for i in range(n):
        names.append((MODULES[i % len(MODULES)], "%s_%s_%d" % (rng.choice(VERBS), rng.choice(NOUNS), i)))
    return names


def stack_count(limit):
    """4,000 distinct stacks from 50 MB up; fewer below, so that a small file's tree and tables
    (which do not grow with the samples) stay a small part of it."""
    return min(4000, max(100, limit // 12_500))


def draw_stacks(rng, n_funcs, n_stacks, entry_points):
    """Distinct stacks (root first) walked down a call graph, so they share their tops."""
    callees = [rng.sample(range(n_funcs), rng.randint(2, 5)) for _ in range(n_funcs)]
    seen, stacks = set(), []
    while len(stacks) < n_stacks:
        f = rng.choice(entry_points)
        stack = [f]
        for _ in range(rng.randint(5, 30) - 1):
            f = rng.choice(callees[f])
            stack.append(f)
        if tuple(stack) not in seen:
            seen.add(tuple(stack))
            stacks.append(stack)
    return stacks


def kernel_tails(rng, n_stacks):
    """For about a fifth of the stacks, the kernel frames under the user leaf (syscalls, faults)."""
    tails = []
    for _ in range(n_stacks):
        if rng.random() < 0.2:
            start = rng.randrange(N_KERNEL_FUNCS)
            tails.append([(start + k * 7) % N_KERNEL_FUNCS for k in range(rng.randint(2, 8))])
        else:
            tails.append([])
    return tails


def kernel_name(k):
    """A kernel symbol; past the list, the compiler's split-off parts of the same functions."""
    name = KERNEL_NAMES[k % len(KERNEL_NAMES)]
    return name if k < len(KERNEL_NAMES) else "%s.part.%d" % (name, k // len(KERNEL_NAMES) - 1)


def popularity(rng, n):
    """Cumulative Zipf-like weights over n stacks in a shuffled order: a few stacks are hot."""
    weights = [1.0 / (i + 1) ** 0.9 for i in range(n)]
    rng.shuffle(weights)
    return list(itertools.accumulate(weights))


def picks(rng, cum, n=BATCH):
    """A batch of stack indices drawn by popularity."""
    return rng.choices(range(len(cum)), cum_weights=cum, k=n)


class Out:
    """A text file that counts what it was given, so writers stop at the size asked for."""

    def __init__(self, path, limit):
        self.f = open(path, "w", encoding="utf-8")
        self.written = 0
        self.limit = limit

    def write(self, text):
        self.f.write(text)
        self.written += len(text.encode("utf-8")) if not text.isascii() else len(text)

    def full(self):
        return self.written >= self.limit

    def close(self):
        self.f.close()


def dumps(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# speedscope -------------------------------------------------------------------------------

def write_speedscope(rng, out):
    names = function_names(rng, N_FUNCS)
    frames = [{"name": "%s.%s" % (mod.capitalize(), fn) if i % 3 else fn,
               "file": "/srv/app/app/%s.py" % mod, "line": 10 + (i * 37) % 900}
              for i, (mod, fn) in enumerate(names)]
    frames += [{"name": "<module>", "file": "/srv/app/main.py", "line": 1},
               {"name": "_bootstrap", "file": "/usr/lib/python3.12/threading.py", "line": 1012},
               {"name": "run", "file": "/usr/lib/python3.12/threading.py", "line": 992}]
    # Each stack starts at the module or a thread's bootstrap (the frames after the graph's).
    drawn = draw_stacks(rng, N_FUNCS, stack_count(out.limit), list(range(6)))
    stacks = [[N_FUNCS + s[0] % 3] + s for s in drawn]
    texts = [dumps(s) for s in stacks]
    cum = popularity(rng, len(stacks))
    out.write('{"$schema":"https://www.speedscope.app/file-format-schema.json","name":"python app.py",'
              '"activeProfileIndex":0,"exporter":"py-spy@0.4.0","profiles":[')
    kinds = ["sampled"] * 6 + ["evented"] * 2
    share = out.limit // len(kinds)
    for n, kind in enumerate(kinds):
        if n:
            out.write(",")
        budget = out.written + share
        if kind == "sampled":
            write_sampled(rng, out, n, texts, cum, budget)
        else:
            write_evented(rng, out, n, stacks, cum, budget)
    out.write('],"shared":{"frames":%s}}\n' % dumps(frames))


def write_sampled(rng, out, n, texts, cum, budget):
    """One py-spy thread: stacks from the root, weights of 10 ms (idle stretches merged)."""
    body, weights, size = [], [], 0
    while not body or out.written + size < budget:
        for i in picks(rng, cum):
            body.append(texts[i])
            size += len(texts[i]) + 1
            weights.append("0.01" if rng.random() < 0.9 else "0.02")
    end = sum(0.02 if w == "0.02" else 0.01 for w in weights)
    out.write('{"type":"sampled","name":"Thread %d \\"worker-%d\\"","unit":"seconds","startValue":0.0,'
              '"endValue":%.2f,"samples":[' % (3600 + n, n, end))
    out.write(",".join(body))
    out.write('],"weights":[')
    out.write(",".join(weights))
    out.write("]}")


def write_evented(rng, out, n, stacks, cum, budget):
    """One pyinstrument-style profile: each stack held a while, frames closed and opened between."""
    events, size, t, current = [], 0, 0.0, []
    while not events or out.written + size < budget:
        for i in picks(rng, cum, 50):
            stack = stacks[i]
            common = 0
            while common < min(len(current), len(stack)) and current[common] == stack[common]:
                common += 1
            at = "%.6f" % t
            before = len(events)
            for f in reversed(current[common:]):
                events.append('{"type":"C","at":%s,"frame":%d}' % (at, f))
            for f in stack[common:]:
                events.append('{"type":"O","at":%s,"frame":%d}' % (at, f))
            size += sum(len(e) + 1 for e in events[before:])
            current = stack
            t += rng.randint(50, 5000) / 1e6
    at = "%.6f" % t
    events.extend('{"type":"C","at":%s,"frame":%d}' % (at, f) for f in reversed(current))
    out.write('{"type":"evented","name":"Thread %d \\"event-loop-%d\\"","unit":"seconds","startValue":0.0,'
              '"endValue":%s,"events":[' % (3600 + n, n, at))
    out.write(",".join(events))
    out.write("]}")


# Firefox ----------------------------------------------------------------------------------

LIBS = [("myapp", "/opt/myapp/bin/myapp"), ("libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6"),
        ("libstdc++.so.6", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30"),
        ("libssl.so.3", "/usr/lib/x86_64-linux-gnu/libssl.so.3"),
        ("libz.so.1", "/usr/lib/x86_64-linux-gnu/libz.so.1.2.13"),
        ("[kernel.kallsyms]", "[kernel.kallsyms]")]


def native_functions(rng):
    """(name, lib index, address relative to the lib) of the user functions, then the kernel's."""
    funcs = []
    for i, (mod, fn) in enumerate(function_names(rng, N_FUNCS)):
        # Most code is the program's own; the rest spread over its shared libraries.
        lib = 0 if i % 4 else 1 + (i // 4) % 4
        name = "%s::%s" % (mod, fn) if lib == 0 else fn
        funcs.append((name, lib, 0x1000 + i * 0x240))
    for k in range(N_KERNEL_FUNCS):
        funcs.append((kernel_name(k), 5, 0x100000 + k * 0x180))
    return funcs


def native_stacks(rng, limit):
    """Stacks of function indices, root first: user frames, then maybe kernel frames."""
    stacks = draw_stacks(rng, N_FUNCS, stack_count(limit), list(range(8)))
    tails = kernel_tails(rng, len(stacks))
    return [s + [N_FUNCS + k for k in tail] for s, tail in zip(stacks, tails)]


def write_firefox(rng, out):
    funcs = native_functions(rng)
    stacks = native_stacks(rng, out.limit)
    libs = [{"name": name, "path": path, "debugName": name, "debugPath": path,
             "breakpadId": "%032X0" % rng.getrandbits(128), "codeId": "%040x" % rng.getrandbits(160),
             "arch": None} for name, path in LIBS]
    meta = {"categories": [{"name": "Other", "color": "grey", "subcategories": ["Other"]},
                           {"name": "User", "color": "yellow", "subcategories": ["Other"]},
                           {"name": "Kernel", "color": "orange", "subcategories": ["Other"]}],
            "debug": False, "extensions": {"baseURL": [], "id": [], "length": 0, "name": []},
            "interval": 1.0, "preprocessedProfileVersion": 41, "processType": 0,
            "product": "myapp on host (perf version 6.1)",
            "sampleUnits": {"eventDelay": "ms", "threadCPUDelta": "µs", "time": "ms"},
            "startTime": 1700000000000.0, "symbolicated": True, "pausedRanges": [], "version": 24,
            "markerSchema": []}
    out.write('{"meta":%s,"libs":%s,"threads":[' % (dumps(meta), dumps(libs)))
    n_threads = 8
    share = out.limit // n_threads
    for tid in range(n_threads):
        if tid:
            out.write(",")
        # Threads run different parts of the program: each has a quarter of the stacks.
        mine = stacks[tid % 4::4]
        write_firefox_thread(rng, out, tid, funcs, mine, popularity(rng, len(mine)), out.written + share)
    out.write('],"pages":[],"profilerOverhead":[],"counters":[]}\n')


def firefox_tables(funcs, stacks):
    """One thread's string array, func/frame/resource tables and stack table (a prefix tree),
    and the stack index of each of `stacks`."""
    strings, string_index = [], {}

    def intern(s):
        if s not in string_index:
            string_index[s] = len(strings)
            strings.append(s)
        return string_index[s]

    resources = [intern(name) for name, _ in LIBS]
    func_rows, func_index = [], {}
    stack_prefix, stack_frame, stack_category, node_index = [], [], [], {}
    leaves = []
    for stack in stacks:
        parent = None
        for f in stack:
            if f not in func_index:
                func_index[f] = len(func_rows)
                func_rows.append(f)
            key = (parent, func_index[f])
            if key not in node_index:
                node_index[key] = len(stack_prefix)
                stack_prefix.append(parent)
                stack_frame.append(func_index[f])
                stack_category.append(2 if funcs[f][1] == 5 else 1)
            parent = node_index[key]
        leaves.append(parent)
    n_funcs = len(func_rows)
    # One frame per function: the frame table's row i is function i, at a call site inside it.
    func_table = {"length": n_funcs, "name": [intern(funcs[f][0]) for f in func_rows],
                  "isJS": [False] * n_funcs, "relevantForJS": [False] * n_funcs,
                  "resource": [funcs[f][1] for f in func_rows], "fileName": [None] * n_funcs,
                  "lineNumber": [None] * n_funcs, "columnNumber": [None] * n_funcs}
    frame_table = {"length": n_funcs, "address": [funcs[f][2] + 0x2b for f in func_rows],
                   "inlineDepth": [0] * n_funcs,
                   "category": [2 if funcs[f][1] == 5 else 1 for f in func_rows],
                   "subcategory": [0] * n_funcs, "func": list(range(n_funcs)),
                   "nativeSymbol": [None] * n_funcs, "innerWindowID": [None] * n_funcs,
                   "implementation": [None] * n_funcs, "line": [None] * n_funcs,
                   "column": [None] * n_funcs, "optimizations": [None] * n_funcs}
    resource_table = {"length": len(LIBS), "lib": list(range(len(LIBS))), "name": resources,
                      "host": [None] * len(LIBS), "type": [1] * len(LIBS)}
    stack_table = {"length": len(stack_prefix), "prefix": stack_prefix, "frame": stack_frame,
                   "category": stack_category, "subcategory": [0] * len(stack_prefix)}
    return strings, func_table, frame_table, resource_table, stack_table, leaves


def write_firefox_thread(rng, out, n, funcs, stacks, cum, budget):
    strings, func_table, frame_table, resource_table, stack_table, leaves = firefox_tables(funcs, stacks)
    empty_markers = {"length": 0, "category": [], "data": [], "endTime": [], "name": [], "phase": [],
                     "startTime": []}
    head = {"frameTable": frame_table, "funcTable": func_table, "markers": empty_markers,
            "name": "GeckoMain" if n == 0 else "worker-%d" % n,
            "nativeSymbols": {"address": [], "length": 0, "libIndex": [], "name": []},
            "pausedRanges": [], "pid": 4242, "processName": "myapp", "processShutdownTime": None,
            "processStartupTime": 0.0, "processType": "default", "registerTime": 0.0,
            "resourceTable": resource_table}
    text = dumps(head)
    out.write(text[:-1])
    # The samples are most of the file: columns of stack indices, times, weights, CPU deltas.
    stack_col, time_col, cpu_col, t = [], [], [], 0.0
    size = 0
    while not stack_col or out.written + size < budget:
        for i in picks(rng, cum):
            t += rng.randint(950, 1100) / 1000.0
            stack_col.append(str(leaves[i]))
            time_col.append("%.3f" % t)
            cpu_col.append(str(rng.randint(0, 1000)))
            size += len(stack_col[-1]) + len(time_col[-1]) + len(cpu_col[-1]) + 5
    count = len(stack_col)
    out.write(',"samples":{"length":%d,"stack":[' % count)
    out.write(",".join(stack_col))
    out.write('],"time":[')
    out.write(",".join(time_col))
    out.write('],"weight":[')
    out.write(",".join(["1"] * count))
    out.write('],"weightType":"samples","threadCPUDelta":[')
    out.write(",".join(cpu_col))
    out.write(']},"stackTable":%s,"stringArray":%s,"tid":%d,"unregisterTime":null}'
              % (dumps(stack_table), dumps(strings), 4242 + n))


# V8 cpuprofile ----------------------------------------------------------------------------

def write_cpuprofile(rng, out):
    names = function_names(rng, N_FUNCS)
    stacks = draw_stacks(rng, N_FUNCS, stack_count(out.limit), list(range(6)))
    # The node tree: one node per distinct path from the root; ids 2 to 4 are V8's own nodes.
    nodes = [{"id": 1, "callFrame": {"functionName": "(root)", "scriptId": "0", "url": "",
                                     "lineNumber": -1, "columnNumber": -1}, "children": []}]
    for vid, name in ((2, "(program)"), (3, "(garbage collector)"), (4, "(idle)")):
        nodes.append({"id": vid, "callFrame": {"functionName": name, "scriptId": "0", "url": "",
                                               "lineNumber": -1, "columnNumber": -1}})
        nodes[0]["children"].append(vid)
    index = {}
    leaves = []
    for stack in stacks:
        parent = 1
        for f in stack:
            key = (parent, f)
            if key not in index:
                mod, fn = names[f]
                node = {"id": len(nodes) + 1,
                        "callFrame": {"functionName": fn if f % 7 else "", "scriptId": str(20 + f % 97),
                                      "url": "file:///srv/app/src/%s.js" % mod,
                                      "lineNumber": (f * 37) % 900, "columnNumber": (f * 13) % 60}}
                index[key] = node["id"]
                nodes.append(node)
                nodes[parent - 1].setdefault("children", []).append(node["id"])
            parent = index[key]
        leaves.append(parent)
    # V8's synthetic nodes take a share of the ticks, as in real Node profiles.
    leaves += [2, 3, 4]
    cum = popularity(rng, len(leaves))
    # Node ids and deltas, kept compact (4 bytes each) until the tree is written with hit counts.
    samples, deltas = array.array("I"), array.array("I")
    hits = [0] * (len(nodes) + 1)
    size = sum(len(dumps(node)) + 12 for node in nodes)
    while not samples or size < out.limit:
        for i in picks(rng, cum, 5000):
            node = leaves[i]
            samples.append(node)
            hits[node] += 1
            # About 1 ms apart, now and then a long pause (a blocked event loop).
            delta = rng.randint(950, 1300) if rng.random() < 0.995 else rng.randint(2000, 20000)
            deltas.append(delta)
            size += len(str(node)) + len(str(delta)) + 2
    start = 19723438153
    out.write('{"nodes":[')
    out.write(",".join(dumps(v8_node(node, hits)) for node in nodes))
    out.write('],"startTime":%d,"endTime":%d,"samples":[' % (start, start + sum(deltas) + 1000))
    write_numbers(out, samples)
    out.write('],"timeDeltas":[')
    write_numbers(out, deltas)
    out.write("]}\n")


def v8_node(node, hits):
    """The node with its hit count, its keys in the order V8 writes them."""
    ordered = {"id": node["id"], "callFrame": node["callFrame"], "hitCount": hits[node["id"]]}
    if "children" in node:
        ordered["children"] = node["children"]
    return ordered


def write_numbers(out, values):
    for i in range(0, len(values), 1_000_000):
        if i:
            out.write(",")
        out.write(",".join(map(str, values[i:i + 1_000_000])))


# perf script ------------------------------------------------------------------------------

DSOS = ["/opt/myapp/bin/myapp", "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30", "/usr/lib/x86_64-linux-gnu/libssl.so.3",
        "/usr/lib/x86_64-linux-gnu/libz.so.1.2.13"]


def mangled(mod, fn):
    """An Itanium C++ name `mod::fn()`, as perf prints symbols before demangling."""
    return "_ZN%d%s%d%sEv" % (len(mod), mod, len(fn), fn)


def write_perf_script(rng, out):
    names = function_names(rng, N_FUNCS)
    stacks = draw_stacks(rng, N_FUNCS, stack_count(out.limit), list(range(8)))
    tails = kernel_tails(rng, len(stacks))
    lines = []
    for i, (mod, fn) in enumerate(names):
        dso = 0 if i % 4 else 1 + (i // 4) % 4
        symbol = mangled(mod, fn) if dso == 0 else fn
        base = (0x55d0c3a00000 if dso == 0 else 0x7f1c2e000000 + dso * 0x1000000) + i * 0x240
        off = 0x10 + (i * 0x1d) % 0x200
        lines.append("\t%16x %s+0x%x (%s)\n" % (base + off, symbol, off, DSOS[dso]))
    kernel = []
    for k in range(N_KERNEL_FUNCS):
        off = 0x5 + (k * 0x13) % 0x100
        name = kernel_name(k)
        address = 0xffffffff81000000 + k * 0x1000 + off
        kernel.append("\t%16x %s+0x%x ([kernel.kallsyms])\n" % (address, name, off))
    # Each stack's callchain, leaf first, as perf prints it.
    chains = ["".join([kernel[k] for k in reversed(tail)] + [lines[f] for f in reversed(stack)])
              for stack, tail in zip(stacks, tails)]
    cum = popularity(rng, len(chains))
    threads = [("myapp", 4242, 4242 + t) for t in range(8)] + \
              [("myapp-io", 4242, 4300 + t) for t in range(4)] + \
              [("sidecar", 5100, 5100 + t) for t in range(4)]
    out.write("# ========\n# captured on    : Tue Nov 14 22:13:20 2023\n# hostname : bench-host\n"
              "# os release : 6.1.0-13-amd64\n# perf version : 6.1.55\n# arch : x86_64\n"
              "# nrcpus online : 8\n# cmdline : /usr/bin/perf record -F 999 -g -a -- sleep 600\n"
              "# event : name = cpu-clock, , id = { 9, 10 }, type = 1, size = 136, "
              "{ sample_period, sample_freq } = 999, sample_type = IP|TID|TIME|CALLCHAIN|CPU|PERIOD\n"
              "# ========\n#\n")
    t_ns = 198789_000_000_000
    while not out.full():
        records = []
        for i in picks(rng, cum, 100):
            comm, pid, tid = rng.choice(threads)
            t_ns += rng.randint(50_000, 150_000)
            records.append("%s %5d/%-5d [%03d] %d.%06d: %10d cpu-clock: \n%s\n" % (
                comm, pid, tid, tid % 8, t_ns // 1_000_000_000, t_ns // 1000 % 1_000_000,
                1001001, chains[i]))
        out.write("".join(records))


# gperftools legacy CPU profile ------------------------------------------------------------

MAPS = [  # start, end, perms, offset, inode, path: the executable ones hold the functions.
    (0x55d0c3a00000, 0x55d0c3a40000, "r--p", 0, 1048611, "/opt/myapp/bin/myapp"),
    (0x55d0c3a40000, 0x55d0c3c00000, "r-xp", 0x40000, 1048611, "/opt/myapp/bin/myapp"),
    (0x55d0c3c00000, 0x55d0c3c80000, "r--p", 0x200000, 1048611, "/opt/myapp/bin/myapp"),
    (0x55d0c3c80000, 0x55d0c3c90000, "rw-p", 0x280000, 1048611, "/opt/myapp/bin/myapp"),
    (0x55d0c5000000, 0x55d0c7000000, "rw-p", 0, 0, "[heap]"),
    (0x7f1c2d000000, 0x7f1c2d028000, "r--p", 0, 326801, "/usr/lib/x86_64-linux-gnu/libc.so.6"),
    (0x7f1c2d028000, 0x7f1c2d1bd000, "r-xp", 0x28000, 326801, "/usr/lib/x86_64-linux-gnu/libc.so.6"),
    (0x7f1c2d1bd000, 0x7f1c2d215000, "r--p", 0x1bd000, 326801, "/usr/lib/x86_64-linux-gnu/libc.so.6"),
    (0x7f1c2d400000, 0x7f1c2d499000, "r--p", 0, 326803, "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30"),
    (0x7f1c2d499000, 0x7f1c2d59a000, "r-xp", 0x99000, 326803, "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30"),
    (0x7f1c2d600000, 0x7f1c2d610000, "r--p", 0, 326805, "/usr/lib/x86_64-linux-gnu/libz.so.1.2.13"),
    (0x7f1c2d610000, 0x7f1c2d680000, "r-xp", 0x10000, 326805, "/usr/lib/x86_64-linux-gnu/libz.so.1.2.13"),
    (0x7f1c2d700000, 0x7f1c2d708000, "r--p", 0, 326807, "/usr/lib/x86_64-linux-gnu/libprofiler.so.0.5.5"),
    (0x7f1c2d708000, 0x7f1c2d720000, "r-xp", 0x8000, 326807, "/usr/lib/x86_64-linux-gnu/libprofiler.so.0.5.5"),
    (0x7ffd4a000000, 0x7ffd4a021000, "rw-p", 0, 0, "[stack]"),
    (0x7ffd4a1fe000, 0x7ffd4a200000, "r-xp", 0, 0, "[vdso]"),
]


def function_pcs():
    """A return address inside an executable mapping for each function (most in the program)."""
    # The program's and the libraries' text, not the vdso's.
    text = [(start, end) for start, end, perms, *_ in MAPS if perms == "r-xp" and start < 0x7ffd00000000]
    pcs = []
    for i in range(N_FUNCS):
        start, end = text[0] if i % 4 else text[1 + (i // 4) % (len(text) - 1)]
        pcs.append(start + (i * 0x2f3 + 0x41) % (end - start))
    return pcs


def write_pprof_legacy(rng, path, limit):
    pcs = function_pcs()
    stacks = draw_stacks(rng, N_FUNCS, stack_count(limit), list(range(8)))
    # Leaf first, as the profiler records them.
    records = [[pcs[f] for f in reversed(stack)] for stack in stacks]
    cum = popularity(rng, len(records))
    # The hottest stacks stay in the profiler's table long enough to count more than one tick.
    hot = {i for i, w in enumerate(itertools.pairwise([0.0] + cum)) if w[1] - w[0] > 0.1}
    maps = "".join("%012x-%012x %s %08x 00:00 %-10d %s\n" % (start, end, perms, offset, inode, name)
                   for start, end, perms, offset, inode, name in MAPS)
    words = array.array("Q", [0, 3, 0, 10000, 0])
    if sys.byteorder != "little":
        words.byteswap()
    with open(path, "wb") as f:
        f.write(words.tobytes())
        written = len(words) * 8
        while written < limit - len(maps):
            words = array.array("Q")
            for i in picks(rng, cum):
                # Evictions write the same stack again as a new record, with its count so far.
                count = 1 + int(rng.expovariate(0.5)) if i in hot else 1
                words.append(count)
                words.append(len(records[i]))
                words.extend(records[i])
            if sys.byteorder != "little":
                words.byteswap()
            f.write(words.tobytes())
            written += len(words) * 8
        trailer = array.array("Q", [0, 1, 0])
        if sys.byteorder != "little":
            trailer.byteswap()
        f.write(trailer.tobytes())
        f.write(maps.encode())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("format", choices=FORMATS)
    parser.add_argument("out")
    parser.add_argument("--mb", type=float, default=200)
    args = parser.parse_args()
    # One seed per format, so each file is the same whatever else is generated.
    rng = random.Random("proflake-%s" % args.format)
    limit = int(args.mb * 1_000_000)
    if args.format == "pprof-legacy":
        write_pprof_legacy(rng, args.out, limit)
        return 0
    out = Out(args.out, limit)
    try:
        {"speedscope": write_speedscope, "firefox": write_firefox, "cpuprofile": write_cpuprofile,
         "perf-script": write_perf_script}[args.format](rng, out)
    finally:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
