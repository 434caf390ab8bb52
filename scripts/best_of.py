"""The timing the in-process parse baselines share (orjson_parse.py, text_parse.py,
words_parse.py): the best of several runs of one parse, with that run's CPU time."""

import resource
import time


def best_of(runs, parse):
    """Calls `parse()` `runs` times. Gives the best wall time in seconds, the CPU time of that
    run, the last run's result and the process's peak RSS in MB. A run's result is let go
    before the next run starts, so at most one is held at a time."""
    best = best_cpu = result = None
    for _ in range(runs):
        result = None
        start, start_cpu = time.perf_counter(), time.process_time()
        result = parse()
        elapsed, cpu = time.perf_counter() - start, time.process_time() - start_cpu
        if best is None or elapsed < best:
            best, best_cpu = elapsed, cpu
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return best, best_cpu, result, peak_mb
