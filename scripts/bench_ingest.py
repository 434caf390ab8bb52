#!/usr/bin/env python3
"""The receiver's throughput: `proflake serve --no-convert` under small OTLP posts from 16
concurrent connections (wrk, a load generator that shares no code with proflake), and its memory
while it does that and while it refuses gzip bombs.

    scripts/bench_ingest.py --proflake target/release/proflake [--seconds 20]

Prints one line per figure, as BENCHMARKS.md quotes them:
- requests a second, and per CPU-second of serve (utime + stime from /proc), p50/p99 latency;
- serve's peak RSS (VmHWM) under that load;
- its peak RSS while refusing bombs: a body that inflates to 100 MiB (about 100 KB gzipped)
  and a 100 MiB gzipped body (refused from its Content-Length alone), 16 of each at once.
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "samples" / "otlp" / "sig-profiling_profile.v1_10.pb"
TOKEN = "bench-token"
CLIENTS = 16

LUA = """
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/x-protobuf"
wrk.headers["Content-Encoding"] = "gzip"
wrk.headers["Authorization"] = "Bearer %s"
local f = io.open("%s", "rb")
wrk.body = f:read("*all")
f:close()
done = function(summary, latency, requests)
  io.write(string.format("non-2xx: %%d\\n", summary.errors.status))
end
"""


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # utime and stime are fields 14 and 15 of the whole line (11 and 12 after the name).
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


def reset_peak(pid: int) -> None:
    # Writing 5 to clear_refs resets VmHWM to the current RSS (Linux 4.0+).
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def start_serve(proflake: str, store: Path) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PROFLAKE_INGEST_TOKEN": TOKEN, "PROFLAKE_LOG": "warn"}
    proc = subprocess.Popen(
        [proflake, "serve", "--store", str(store), "--listen", "127.0.0.1:0", "--no-convert"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = proc.stderr.readline()
    match = re.search(r"http://(\S+)", line)
    if not match:
        proc.kill()
        sys.exit(f"serve did not start: {line}")
    threading.Thread(target=proc.stderr.read, daemon=True).start()
    return proc, f"http://{match.group(1)}"


def post(url: str, body: bytes) -> int:
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/x-protobuf",
            "Content-Encoding": "gzip",
            "Authorization": f"Bearer {TOKEN}",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status
    except urllib.error.HTTPError as e:
        return e.code
    except (ConnectionError, urllib.error.URLError):
        # A body refused from its Content-Length is answered before it is sent whole.
        return 413


def bombs(url: str, body: bytes) -> list[int]:
    statuses: list[int] = []
    threads = [
        threading.Thread(target=lambda: statuses.append(post(url, body))) for _ in range(CLIENTS)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return statuses


def gzip_of_zeros(size: int) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = bytes(1 << 20)
    out = [compressor.compress(chunk) for _ in range(size >> 20)]
    out.append(compressor.flush())
    return b"".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--proflake", required=True)
    parser.add_argument("--seconds", type=int, default=20)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk not found: apt-get install wrk")
    work = Path(tempfile.mkdtemp(prefix="bench_ingest."))
    body = gzip.compress(SAMPLE.read_bytes(), 6, mtime=0)
    body_path = work / "request.pb.gz"
    body_path.write_bytes(body)
    script = work / "post.lua"
    script.write_text(LUA % (TOKEN, body_path))
    proc, base = start_serve(args.proflake, work / "store")
    try:
        url = f"{base}/v1development/profiles"
        if post(url, body) != 200:
            sys.exit("serve refused the request")
        reset_peak(proc.pid)
        before = cpu_seconds(proc.pid)
        wrk = subprocess.run(
            ["wrk", "-t2", f"-c{CLIENTS}", f"-d{args.seconds}s", "--latency", "-s", str(script), url],
            capture_output=True,
            text=True,
            check=True,
        )
        cpu = cpu_seconds(proc.pid) - before
        out = wrk.stdout
        rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
        total = int(re.search(r"(\d+) requests in", out).group(1))
        non_2xx = int(re.search(r"non-2xx: (\d+)", out).group(1))
        latency = dict(re.findall(r"^\s+(50|99)%\s+(\S+)", out, re.M))
        load_rss = peak_rss_mib(proc.pid)
        print(f"request body: {len(body)} bytes gzipped ({SAMPLE.stat().st_size} inflated)")
        print(f"{total} requests from {CLIENTS} connections in {args.seconds} s: {rate:.0f}/s, "
              f"non-2xx {non_2xx}; p50 {latency.get('50')}, p99 {latency.get('99')}")
        print(f"serve CPU: {cpu:.1f} s, {total / cpu:.0f} requests per CPU-second "
              f"({cpu / args.seconds:.2f} cores busy)")
        print(f"serve peak RSS under load: {load_rss:.1f} MiB")

        reset_peak(proc.pid)
        small_bomb = gzip_of_zeros(100 << 20)
        statuses = bombs(url, small_bomb)
        print(f"{CLIENTS} bombs of {len(small_bomb)} bytes inflating to 100 MiB: statuses "
              f"{sorted(set(statuses))}; serve peak RSS {peak_rss_mib(proc.pid):.1f} MiB")
        reset_peak(proc.pid)
        big = os.urandom(1 << 20) * 100
        statuses = bombs(url, big)
        print(f"{CLIENTS} bodies of 100 MiB: statuses {sorted(set(statuses))}; "
              f"serve peak RSS {peak_rss_mib(proc.pid):.1f} MiB")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
