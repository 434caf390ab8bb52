#!/usr/bin/env python3
"""Cold start of a Lambda custom-runtime binary (a benchmark, not a test).

Usage: scripts/cold_start.py BINARY [--runs N] [--env K=V ...]

For each run, a fake Lambda Runtime API listens on 127.0.0.1 and BINARY is started as Lambda
would start `bootstrap` (AWS_LAMBDA_RUNTIME_API and the usual AWS_LAMBDA_* variables, dummy
credentials, no instance metadata). Two times are measured from just before the process is
spawned:

  ready         the first GET /2018-06-01/runtime/invocation/next: the handler finished its
                init (config, clients) and asks for work. This is the cold start.
  first invoke  the POST of the first invocation's response (or error): the first invocation,
                an empty SQS batch ({"Records":[]}), end to end.

The process is killed after each run. Prints median, p90, min and max in milliseconds, and the
binary's size. Exits 1 if the binary does not poll within --timeout seconds (default 10) in any
run, or exits before it does. Standard library only.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

API = "/2018-06-01"
REQUEST_ID = "8476a536-e9f4-11e8-9739-2dfe598c3fcd"
FUNCTION_NAME = "proflake-convert"
FUNCTION_ARN = f"arn:aws:lambda:us-east-1:123456789012:function:{FUNCTION_NAME}"
EVENT = b'{"Records":[]}'


@dataclass
class Run:
    """What the fake Runtime API saw during one run (perf_counter times)."""

    first_next: float | None = None
    first_end: float | None = None
    first_end_kind: str | None = None  # "response" or "error"
    first_end_body: bytes = b""
    init_error: bytes | None = None
    polled: threading.Event = field(default_factory=threading.Event)
    ended: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)


def make_handler(run: Run) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the real Runtime API

        def log_message(self, format, *args):  # noqa: A002 (the base class's name)
            pass

        def _reply(self, status: int, body: bytes, headers: dict[str, str] | None = None):
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def _body(self) -> bytes:
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def do_GET(self):
            now = time.perf_counter()
            if self.path != f"{API}/runtime/invocation/next":
                self._reply(404, b'{"errorType":"NotFound"}')
                return
            with run.lock:
                first = run.first_next is None
                if first:
                    run.first_next = now
            if not first:
                # Later polls are held until the run ends (the process is killed then).
                run.release.wait(60)
                self.close_connection = True
                return
            run.polled.set()
            deadline_ms = int(time.time() * 1000) + 300_000
            self._reply(
                200,
                EVENT,
                {
                    "Lambda-Runtime-Aws-Request-Id": REQUEST_ID,
                    "Lambda-Runtime-Deadline-Ms": str(deadline_ms),
                    "Lambda-Runtime-Invoked-Function-Arn": FUNCTION_ARN,
                    "Lambda-Runtime-Trace-Id": "Root=1-5bef4de7-ad49b0e87f6ef6c87fc2e700;"
                    "Parent=9a9197af755a6419;Sampled=1",
                },
            )

        def do_POST(self):
            now = time.perf_counter()
            body = self._body()
            if self.path == f"{API}/runtime/init/error":
                run.init_error = body
                run.polled.set()  # wake the waiter: it reports the init error
                self._reply(202, b'{"status":"OK"}')
                return
            for kind in ("response", "error"):
                if self.path == f"{API}/runtime/invocation/{REQUEST_ID}/{kind}":
                    with run.lock:
                        if run.first_end is None:
                            run.first_end = now
                            run.first_end_kind = kind
                            run.first_end_body = body
                    # Acknowledge before the waiter may kill the process.
                    self._reply(202, b'{"status":"OK"}')
                    run.ended.set()
                    return
            self._reply(404, b'{"errorType":"NotFound"}')

    return Handler


def lambda_env(port: int, extra: dict[str, str]) -> dict[str, str]:
    """The environment Lambda gives a provided.al2023 function, plus the function's own."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "TZ": ":UTC",
        "_HANDLER": "bootstrap",
        "AWS_LAMBDA_RUNTIME_API": f"127.0.0.1:{port}",
        "AWS_LAMBDA_FUNCTION_NAME": FUNCTION_NAME,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "2048",
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
        "AWS_LAMBDA_LOG_STREAM_NAME": "x",
        "AWS_LAMBDA_LOG_GROUP_NAME": "x",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_EC2_METADATA_DISABLED": "true",
        "PROFLAKE_OUTPUT_BUCKET": "out",
    }
    env.update(extra)
    return env


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # The binary is killed at the end of each run, mid-connection: not worth a traceback.
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class RunFailed(Exception):
    pass


def one_run(binary: str, timeout: float, extra_env: dict[str, str]) -> tuple[float, float | None, str | None]:
    """Returns (ready ms, first invoke ms or None, note or None)."""
    run = Run()
    server = Server(("127.0.0.1", 0), make_handler(run))
    serving = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    serving.start()
    env = lambda_env(server.server_address[1], extra_env)
    with tempfile.TemporaryFile() as output:
        t0 = time.perf_counter()
        process = subprocess.Popen([binary], env=env, stdin=subprocess.DEVNULL, stdout=output, stderr=output)
        try:
            deadline = t0 + timeout
            while not run.polled.wait(0.01):
                if process.poll() is not None:
                    raise RunFailed(f"exited with status {process.returncode} before polling")
                if time.perf_counter() > deadline:
                    raise RunFailed(f"did not poll the Runtime API within {timeout:g} s")
            if run.init_error is not None:
                raise RunFailed(f"reported an init error: {run.init_error.decode(errors='replace')}")
            ready = (run.first_next - t0) * 1000
            note = None
            remaining = max(0.0, deadline + timeout - time.perf_counter())
            if run.ended.wait(remaining):
                first = (run.first_end - t0) * 1000
                if run.first_end_kind == "error":
                    note = f"first invocation failed: {run.first_end_body.decode(errors='replace')[:200]}"
            else:
                first = None
                note = "no response to the first invocation"
            return ready, first, note
        except RunFailed as e:
            process.kill()
            process.wait()
            output.seek(0)
            tail = output.read()[-4000:].decode(errors="replace")
            raise RunFailed(f"{binary} {e}" + (f"\n--- its output (end) ---\n{tail}" if tail else "")) from None
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            run.release.set()
            server.shutdown()
            server.server_close()


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))  # ceil
    return ordered[int(rank) - 1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binary", metavar="BINARY", help="the Lambda bootstrap executable, e.g. target/release/convert")
    parser.add_argument("--runs", type=int, default=20, help="cold starts to measure (default 20)")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the first poll (default 10)")
    parser.add_argument("--env", action="append", default=[], metavar="K=V", help="extra environment variable (repeatable)")
    parser.add_argument("--json", action="store_true", help="print the measurements as JSON instead of a table")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    binary = os.path.abspath(args.binary)
    if not os.access(binary, os.X_OK) or not os.path.isfile(binary):
        parser.error(f"{args.binary} is not an executable file")
    extra_env = {}
    for item in args.env:
        name, sep, value = item.partition("=")
        if not sep or not name:
            parser.error(f"--env {item!r}: expected K=V")
        extra_env[name] = value

    ready: list[float] = []
    first: list[float] = []
    notes: list[str] = []
    for i in range(args.runs):
        try:
            r, f, note = one_run(binary, args.timeout, extra_env)
        except RunFailed as e:
            print(f"run {i + 1}: {e}", file=sys.stderr)
            return 1
        ready.append(r)
        if f is not None:
            first.append(f)
        if note:
            notes.append(f"run {i + 1}: {note}")

    size = os.path.getsize(binary)
    rows = [("ready (first /next)", ready), ("first invoke (response POST)", first)]
    if args.json:
        out = {
            "binary": args.binary,
            "size_bytes": size,
            "runs": args.runs,
            "ready_ms": ready,
            "first_invoke_ms": first,
            "notes": notes,
        }
        print(json.dumps(out, indent=2))
    else:
        print(f"binary: {args.binary} ({size:,} bytes, {size / 2**20:.1f} MiB)")
        print(f"runs:   {args.runs}, times from spawn, in ms")
        print()
        print(f"{'':30} {'median':>8} {'p90':>8} {'min':>8} {'max':>8}")
        for label, values in rows:
            if not values:
                print(f"{label:30} {'-':>8} {'-':>8} {'-':>8} {'-':>8}")
                continue
            stats = (statistics.median(values), percentile(values, 90), min(values), max(values))
            print(f"{label:30} " + " ".join(f"{v:8.1f}" for v in stats))
    for note in notes[:5]:
        print(note, file=sys.stderr)
    if len(notes) > 5:
        print(f"... and {len(notes) - 5} more", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
