#!/usr/bin/env python3
"""Writes android_app.pftrace: a traced_perf-style CPU profile of an Android app, built with
the Perfetto project's own trace schema (PyPI `perfetto`, offline).

What it holds, as a real `traced_perf` capture on Android does:
- clock snapshots (BOOTTIME, MONOTONIC, REALTIME), primary clock BOOTTIME;
- a process tree with two processes and their thread names;
- one perf sequence: SEQ_INCREMENTAL_STATE_CLEARED + trace_packet_defaults (BOOTTIME clock,
  cpu-clock timebase at 10 Hz), iid 0 = "" for the string tables, then samples with
  SEQ_NEEDS_INCREMENTAL_STATE and their interned data inline on first use;
- Java/ART frames (.odex/.oat mappings), native frames with build ids, kernel frames;
- sample packets batched into zlib `compressed_packets`, as traced writes them;
- 75 s of samples, so the converter must split it into two 60 s chunks.

Deterministic: the same script always writes the same bytes.
Usage: python make_android_app.py OUT.pftrace
"""
import random
import sys
import zlib

from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import (
    BuiltinClock, PerfEvents, Profiling, Trace, TracePacket)

CLEARED = TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
NEEDS = TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
BOOT = BuiltinClock.BUILTIN_CLOCK_BOOTTIME
MONO = BuiltinClock.BUILTIN_CLOCK_MONOTONIC
REAL = BuiltinClock.BUILTIN_CLOCK_REALTIME

BOOT0 = 86_400_000_000_000           # one day after boot
REAL0 = 1_763_800_000_000_000_000    # 2025-11-22T08:26:40Z
PERIOD_NS = 100_000_000              # 10 Hz
DURATION_NS = 75_000_000_000
SEQ = 7

APP, SF = 4242, 610
THREADS = {4242: (APP, 'main'), 4260: (APP, 'RenderThread'), 4261: (APP, 'DefaultDispatch'),
           610: (SF, 'surfaceflinger')}

PATHS = ['', 'apex', 'com.android.runtime', 'lib64', 'bionic', 'libc.so', 'com.android.art',
         'libart.so', 'data', 'app', 'com.example.app-1', 'oat', 'arm64', 'base.odex', 'system',
         'framework', 'boot-framework.oat', 'lib64', 'libhwui.so', 'bin', 'surfaceflinger',
         'kernel']
# iid: (path component iids, build id, start, end, load_bias)
MAPPINGS = {
    1: ([1, 2, 3, 4, 5], 'a1c0ffee0000000000000000000000000badf00d', 0x7a10000000, 0x7a100c8000, 0),
    2: ([1, 6, 3, 7], 'b2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1', 0x7a20000000, 0x7a20800000, 0),
    3: ([8, 9, 10, 11, 12, 13], '', 0x7b00000000, 0x7b00400000, 0),
    4: ([14, 15, 12, 16], '', 0x7000000000, 0x7002000000, 0),
    5: ([14, 17, 18], 'c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2', 0x7a30000000, 0x7a30600000, 0x4000),
    6: ([14, 19, 20], 'd4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3', 0x5a00000000, 0x5a00100000, 0),
    7: ([21], '', 0, 0, 0),
}
FUNCS = ['', '__start_thread', '__pthread_start', 'art_quick_invoke_stub',
         '_ZN3art9ArtMethod6InvokeEPNS_6ThreadEPjjPNS_6JValueEPKc',
         'android.app.ActivityThread.main', 'android.os.Looper.loop',
         'android.view.Choreographer.doFrame', 'com.example.app.MainActivity.onCreate',
         'com.example.app.feed.FeedAdapter.bind', 'com.example.app.feed.ImageDecoder.decode',
         'android.view.View.draw', '_ZN7android10uirenderer12renderthread12RenderThread10threadLoopEv',
         '_ZN7android10uirenderer13CanvasContext4drawEv', 'memcpy', 'malloc',
         'kotlinx.coroutines.scheduling.CoroutineScheduler$Worker.run',
         'com.example.app.sync.SyncWorker.doWork', 'main',
         '_ZN7android14SurfaceFlinger9onMessageEv', '_ZN7android14SurfaceFlinger9compositeEv',
         'el0_svc', 'do_epoll_wait']
# frame iid: (function iid, mapping iid, rel_pc)
FRAMES = {
    1: (1, 1, 0x9a000), 2: (2, 1, 0x9a100), 3: (3, 2, 0x21800), 4: (4, 2, 0x22040),
    5: (5, 4, 0x1a0), 6: (6, 4, 0x2c0), 7: (7, 4, 0x3e0), 8: (8, 3, 0x10),
    9: (9, 3, 0x80), 10: (10, 3, 0xf0), 11: (11, 4, 0x500), 12: (12, 5, 0x31000),
    13: (13, 5, 0x32200), 14: (14, 1, 0x5f000), 15: (15, 1, 0x44000), 16: (16, 4, 0x800),
    17: (17, 3, 0x160), 18: (18, 6, 0x2000), 19: (19, 6, 0x5400), 20: (20, 6, 0x5a00),
    21: (21, 7, 0xffffffc010012340), 22: (22, 7, 0xffffffc0102a0004),
}
ART = [1, 2, 3, 4]
# tid -> weighted callstacks (root first)
STACKS = {
    4242: [(ART + [5, 6, 7, 11], 4), (ART + [5, 6, 7, 9, 10], 3), (ART + [5, 6, 8], 1),
           (ART + [5, 6, 7, 9, 10, 14], 2), (ART + [5, 6, 21, 22], 1)],
    4260: [([1, 2, 12, 13], 5), ([1, 2, 12, 13, 14], 2), ([1, 2, 12, 15], 1)],
    4261: [(ART + [16, 17], 3), (ART + [16, 17, 15], 1)],
    610: [([18, 19, 20], 4), ([18, 19, 20, 14], 1), ([18, 21, 22], 2)],
}


def clock_snapshot(trace, boot):
    p = trace.packet.add()
    p.trusted_packet_sequence_id = 1
    p.timestamp = boot
    for cid, ts in ((BOOT, boot), (MONO, boot - 5_000_000_000), (REAL, boot - BOOT0 + REAL0)):
        p.clock_snapshot.clocks.add(clock_id=cid, timestamp=ts)
    p.clock_snapshot.primary_trace_clock = BOOT


def main(out):
    rnd = random.Random(20261122)
    t = Trace()
    clock_snapshot(t, BOOT0)
    p = t.packet.add()
    p.trusted_packet_sequence_id = 2
    p.timestamp = BOOT0
    for pid, cmd in ((APP, ['com.example.app']), (SF, ['/system/bin/surfaceflinger'])):
        p.process_tree.processes.add(pid=pid, ppid=1, cmdline=cmd)
    for tid, (pid, name) in THREADS.items():
        p.process_tree.threads.add(tid=tid, tgid=pid, name=name)

    p = t.packet.add()
    p.trusted_packet_sequence_id = SEQ
    p.timestamp = BOOT0
    p.sequence_flags = CLEARED
    p.trace_packet_defaults.timestamp_clock_id = BOOT
    tb = p.trace_packet_defaults.perf_sample_defaults.timebase
    tb.frequency = 1_000_000_000 // PERIOD_NS
    tb.counter = PerfEvents.SW_CPU_CLOCK
    p = t.packet.add()
    p.trusted_packet_sequence_id = SEQ
    p.sequence_flags = NEEDS
    p.interned_data.function_names.add(iid=0, str=b'')
    p.interned_data.mapping_paths.add(iid=0, str=b'')
    p.interned_data.build_ids.add(iid=0, str=b'')

    interned = {'path': set(), 'func': set(), 'map': set(), 'frame': set(), 'stack': set()}
    stack_ids = {}
    batch = Trace()

    def intern(idata, stack):
        key = tuple(stack)
        if key not in stack_ids:
            stack_ids[key] = len(stack_ids) + 1
        sid = stack_ids[key]
        if sid in interned['stack']:
            return sid
        for fid in stack:
            if fid in interned['frame']:
                continue
            func, mid, rel_pc = FRAMES[fid]
            if mid not in interned['map']:
                comps, build, start, end, bias = MAPPINGS[mid]
                for c in comps:
                    if c not in interned['path']:
                        idata.mapping_paths.add(iid=c, str=PATHS[c].encode())
                        interned['path'].add(c)
                kw = dict(iid=mid, start=start, end=end, load_bias=bias, path_string_ids=comps)
                if build:
                    idata.build_ids.add(iid=mid, str=bytes.fromhex(build))
                    kw['build_id'] = mid
                idata.mappings.add(**kw)
                interned['map'].add(mid)
            if func not in interned['func']:
                idata.function_names.add(iid=func, str=FUNCS[func].encode())
                interned['func'].add(func)
            idata.frames.add(iid=fid, function_name_id=func, mapping_id=mid, rel_pc=rel_pc)
            interned['frame'].add(fid)
        idata.callstacks.add(iid=sid, frame_ids=stack)
        interned['stack'].add(sid)
        return sid

    def flush():
        if batch.packet:
            t.packet.add().compressed_packets = zlib.compress(batch.SerializeToString(), 6)
            del batch.packet[:]

    count = 1_000_000
    for tick in range(DURATION_NS // PERIOD_NS):
        base = BOOT0 + 1_000_000_000 + tick * PERIOD_NS
        if tick and tick % 300 == 0:
            flush()
            clock_snapshot(t, base)
        for tid, (pid, _) in THREADS.items():
            if rnd.random() < 0.15:   # the thread was off CPU
                continue
            stacks, weights = zip(*STACKS[tid])
            stack = rnd.choices(stacks, weights)[0]
            pk = batch.packet.add()
            pk.trusted_packet_sequence_id = SEQ
            pk.sequence_flags = NEEDS
            pk.timestamp = base + rnd.randrange(0, 2_000_000)
            sid = intern(pk.interned_data, stack)
            if not pk.interned_data.ListFields():
                pk.ClearField('interned_data')
            s = pk.perf_sample
            count += PERIOD_NS
            s.cpu, s.pid, s.tid, s.timebase_count = rnd.randrange(8), pid, tid, count
            s.cpu_mode = Profiling.MODE_KERNEL if stack[-1] in (21, 22) else Profiling.MODE_USER
            s.callstack_iid = sid
    flush()
    with open(out, 'wb') as f:
        f.write(t.SerializeToString())


if __name__ == '__main__':
    main(sys.argv[1])
