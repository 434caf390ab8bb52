#!/usr/bin/env python3
"""`proflake serve`, the HTTP receiver, driven over real HTTP by real clients' payloads.

Every test starts its own `proflake serve --listen 127.0.0.1:0` on a fresh temporary store,
talks to it with the standard library's HTTP client only, and stops it with SIGTERM (exit code
0 and the `stopped after N requests` line are checked each time). Payloads come from the
clients' own libraries: OTLP requests are built with OpenTelemetry's Python bindings
(opentelemetry-proto, OTLP v1.10 wire), Pyroscope pushes come from a live pyroscope-io program,
and the expected numbers are counted from what was sent, never from proflake's output. Checked:

* OTLP protobuf and JSON, gzipped and not, the Collector's and Logfire's ways of
  authenticating: answers, stored uploads and sidecars, the `profiles` table's service, release
  and environment, and per-function self and total values in the tables against the request;
* pyroscope-io pushing from a running program (through a recording proxy, to see what it
  sends): uploads, labels, conversion, `hot_loop` on top;
* Pyroscope's ingest API: folded stacks, a pprof in multipart/form-data, a JFR recording
  stored and then refused by its conversion with an error report beside it;
* every refusal (400, 401, 404, 405, 413, 415) in each protocol's own terms, with nothing
  stored, and the receiver's peak memory while it refuses a 100 MiB gzip bomb;
* a retried request stored under one key and converted once (a retry in another
  Content-Encoding replaces the upload and its conversion, as docs/ingest.md says);
* 200 concurrent requests each stored and converted once; a conversion queue of 4 answering
  503 with Retry-After under load, the clients' retries each converted once;
* a graceful shutdown that finishes the queued conversions.

Run with the project venv (tests/requirements.txt):
`PROFLAKE_BIN=target/debug/proflake .venv/bin/python tests/ingest/test_serve.py [TEST...]`.
The last line printed is `ingest tests: N passed, M failed`; the exit code is non-zero on a
failure.
"""

from __future__ import annotations

import base64
import collections
import gzip
import http.client
import http.server
import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import traceback
import uuid
import zlib
from collections import Counter
from pathlib import Path

import duckdb
from google.protobuf import json_format
from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2 as otlp_service
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.profiles.v1development import profiles_pb2 as otlp
from opentelemetry.proto.resource.v1 import resource_pb2

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("PROFLAKE_BIN", REPO / "target" / "debug" / "proflake"))
if not BIN.is_absolute():
    BIN = REPO / BIN
PYTHON = sys.executable
PPROF_SAMPLE = REPO / "samples" / "pprof" / "google-pprof_report_sample.cpu.pb.gz"
JFR_FIXTURE = REPO / "tests" / "fixtures" / "jfr" / "jdk17.jfr"

TOKEN = "proflake-test-token-7f3a"
OTLP_PATH = "/v1development/profiles"
PUSH_PATH = "/push.v1.PusherService/Push"
# A hung server or client fails its test instead of the run.
START_TIMEOUT_S = 30
STOP_TIMEOUT_S = 120
CONVERT_TIMEOUT_S = 120
HTTP_TIMEOUT_S = 60
# google.rpc.Code of each HTTP status, as the gRPC gateway maps them (OTLP/HTTP's Status body).
GRPC_CODE = {400: 3, 401: 16, 404: 5, 405: 12, 413: 8, 415: 3, 503: 14}
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# Requests answered, per server port: what `stopped after N requests` must say.
ANSWERED: Counter = Counter()
ANSWERED_LOCK = threading.Lock()
# Figures the final report prints (peak memory, 503s, what pyroscope-io sent).
FIGURES: dict[str, object] = {}


# ------------------------------------------------------------------------------------------
# proflake serve


class Serve:
    """One `proflake serve` on port 0 over a fresh temporary store: started on entry (the port
    read from its `listening on` line), stopped with SIGTERM by `stop()`, which checks exit code
    0 and the `stopped after N requests` line. The store is removed on exit."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, token: str | None = TOKEN):
        self.args = [str(a) for a in args]
        self.env = dict(os.environ)
        self.env.pop("PROFLAKE_INGEST_TOKEN", None)
        if token is not None:
            self.env["PROFLAKE_INGEST_TOKEN"] = token
        # Info level: serve logs each conversion (`converted key=...`), which the tests count.
        self.env["PROFLAKE_LOG"] = "info"
        self.env.update(env or {})
        self.store = Path(tempfile.mkdtemp(prefix="proflake-ingest-"))
        self.stderr: list[str] = []
        self.proc: subprocess.Popen | None = None
        self.port: int | None = None
        self.stopped_after: int | None = None
        self.terminated = False

    def __enter__(self) -> "Serve":
        self.proc = subprocess.Popen(
            [str(BIN), "serve", "--store", str(self.store), "--listen", "127.0.0.1:0", *self.args],
            env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True,
        )
        listening = threading.Event()

        def read_stderr():
            for line in self.proc.stderr:
                self.stderr.append(ANSI.sub("", line.rstrip("\n")))
                if "listening on http://" in line:
                    self.port = int(line.rsplit(":", 1)[1])
                    listening.set()

        self.reader = threading.Thread(target=read_stderr, daemon=True)
        self.reader.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not listening.wait(0.05):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise AssertionError(f"serve did not start (exit {self.proc.returncode}):\n{self.log()}")
        return self

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill()
        shutil.rmtree(self.store, ignore_errors=True)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def log(self) -> str:
        return "\n".join(self.stderr[-40:])

    def logged(self, outcome: str) -> Counter:
        """How often serve logged each key with `outcome` (`converted`, `quarantined`)."""
        pattern = re.compile(rf'proflake::serve: {outcome} key="([^"]+)"')
        return Counter(m.group(1) for line in self.stderr if (m := pattern.search(line)))

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()

    def peak_rss_bytes(self) -> int:
        """VmHWM of the running server: its peak resident set so far."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmHWM in /proc/PID/status")

    def terminate(self) -> None:
        self.terminated = True
        self.proc.send_signal(signal.SIGTERM)

    def stop(self) -> int:
        """SIGTERM (unless `terminate()` sent it), then exit code 0 and `stopped after N
        requests`; gives N."""
        if not self.terminated:
            self.terminate()
        try:
            code = self.proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"serve did not stop within {STOP_TIMEOUT_S} s of SIGTERM:\n{self.log()}")
        self.reader.join(10)
        assert code == 0, f"serve exited {code} after SIGTERM:\n{self.log()}"
        bad = [l for l in self.stderr if " ERROR " in l or "panicked" in l]
        assert not bad, f"serve logged errors:\n" + "\n".join(bad)
        stopped = [l for l in self.stderr if "proflake serve: stopped after" in l]
        assert len(stopped) == 1, f"no `stopped after` line:\n{self.log()}"
        self.stopped_after = int(stopped[0].split("stopped after")[1].split()[0])
        assert self.stopped_after == ANSWERED[self.port], (
            f"serve counted {self.stopped_after} requests, {ANSWERED[self.port]} were answered")
        return self.stopped_after

    # -- the store, as the tests read it

    def uploads(self, under: str = "") -> list[Path]:
        """The uploads (not sidecars nor error reports) under uploads/<under>."""
        root = self.store / "uploads" / under
        return sorted(p for p in root.rglob("*") if p.is_file()
                      and not p.name.endswith((".metadata.json", ".error.json"))
                      and not p.name.startswith("."))

    def all_files(self, under: str) -> list[Path]:
        root = self.store / under
        return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []

    def key(self, path: Path) -> str:
        return path.relative_to(self.store).as_posix()

    def manifests(self) -> list[dict]:
        return [json.loads(p.read_text()) for p in sorted(self.store.glob("converted/*/manifest.json"))]

    def wait_for(self, what: str, condition, timeout: float = CONVERT_TIMEOUT_S):
        """Polls `condition()` until it is truthy; gives its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = condition()
            if value:
                return value
            if self.proc.poll() is not None:
                raise AssertionError(f"serve exited ({self.proc.returncode}) while waiting for {what}:\n{self.log()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {what}:\n{self.log()}")
            time.sleep(0.1)

    def wait_for_manifests(self, n: int, timeout: float = CONVERT_TIMEOUT_S) -> list[dict]:
        self.wait_for(f"{n} manifests", lambda: len(self.manifests()) >= n, timeout)
        return self.manifests()

    def tables(self) -> "Tables":
        return Tables(self.store)


class Tables:
    """The store's landing Parquet tables, read with DuckDB as an analyst does."""

    def __init__(self, store: Path):
        self.con = duckdb.connect()
        self.con.execute("SET TimeZone = 'UTC'")
        for table in ["profiles", "samples", "stacks", "frames", "function_rollup"]:
            files = store / "tables" / "v2" / table / "*" / "*.parquet"
            self.con.execute(
                f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{files}', "
                "hive_partitioning = true, union_by_name = true)")

    def rows(self, query: str, *params) -> list[tuple]:
        return self.con.execute(query, list(params)).fetchall()

    def leaf_totals(self) -> dict[tuple[str, str], int]:
        """{(source_id, leaf frame name): sum of values}, joined from samples, stacks, frames."""
        return {(s, f): v for s, f, v in self.rows("""
            SELECT s.source_id, f.name, sum(s.value)::BIGINT
            FROM samples s
            JOIN stacks k ON k.source_id = s.source_id AND k.profile_id = s.profile_id AND k.stack_id = s.stack_id
            JOIN frames f ON f.source_id = k.source_id AND f.profile_id = k.profile_id AND f.frame_id = k.frame_id
            GROUP BY ALL""")}

    def rollup(self) -> dict[tuple[str, str], tuple[int, int]]:
        """{(source_id, function): (self, total)} from function_rollup."""
        return {(s, f): (a, b) for s, f, a, b in self.rows("""
            SELECT source_id, function, sum(self_value)::BIGINT, sum(total_value)::BIGINT
            FROM function_rollup GROUP BY ALL""")}


# ------------------------------------------------------------------------------------------
# HTTP, with the standard library only


class Reply:
    def __init__(self, status: int, headers: list[tuple[str, str]], body: bytes):
        self.status, self.headers, self.body = status, headers, body

    def header(self, name: str) -> str | None:
        values = self.header_all(name)
        return values[0] if values else None

    def header_all(self, name: str) -> list[str]:
        return [v for k, v in self.headers if k.lower() == name.lower()]

    def __repr__(self) -> str:
        return f"<{self.status} {self.header('Content-Type')} {self.body[:300]!r}>"


def request(port: int, path: str, body: bytes | None = b"", headers: dict | None = None,
            method: str = "POST", chunked: bool = False) -> Reply:
    """One request on its own connection; any status is returned, none raised. A body the
    server refuses before reading it may break the pipe: the answer is still read."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=HTTP_TIMEOUT_S)
    try:
        try:
            if chunked:
                pieces = (body[i:i + 65536] for i in range(0, len(body), 65536))
                conn.request(method, path, body=pieces, headers=headers or {}, encode_chunked=True)
            else:
                conn.request(method, path, body=body, headers=headers or {})
        except (BrokenPipeError, ConnectionResetError):
            pass
        response = conn.getresponse()
        reply = Reply(response.status, response.getheaders(), response.read())
        with ANSWERED_LOCK:
            ANSWERED[port] += 1
        return reply
    finally:
        conn.close()


def auth(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# ------------------------------------------------------------------------------------------
# Protobuf read by hand (google.rpc.Status, pprof): no bindings shared with the server


def _varint(data: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def pb_fields(data: bytes) -> list[tuple[int, int, object]]:
    """(field number, wire type, value) of every field of one message, in order: varints and
    fixed fields as unsigned ints, length-delimited fields as bytes. Raises on malformed input."""
    out, i = [], 0
    while i < len(data):
        key, i = _varint(data, i)
        field, wire = key >> 3, key & 7
        if field == 0:
            raise ValueError("field 0")
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 1:
            value, i = int.from_bytes(data[i:i + 8], "little"), i + 8
        elif wire == 2:
            n, i = _varint(data, i)
            value, i = data[i:i + n], i + n
        elif wire == 5:
            value, i = int.from_bytes(data[i:i + 4], "little"), i + 4
        else:
            raise ValueError(f"wire type {wire}")
        if i > len(data):
            raise ValueError("truncated")
        out.append((field, wire, value))
    return out


def rpc_status(body: bytes) -> tuple[int, str]:
    """google.rpc.Status {1 code int32, 2 message string, 3 details}: (code, message)."""
    code, message = 0, ""
    for field, wire, value in pb_fields(body):
        if field == 1 and wire == 0:
            code = value
        elif field == 2 and wire == 2:
            message = value.decode("utf-8")
        elif field != 3:
            raise ValueError(f"unexpected field {field} in a google.rpc.Status")
    return code, message


def _ints(wire: int, value) -> list[int]:
    """A repeated int64 field's values, packed or not, as signed numbers."""
    raw = [value] if wire == 0 else []
    if wire == 2:
        i = 0
        while i < len(value):
            v, i = _varint(value, i)
            raw.append(v)
    return [v - (1 << 64) if v >= 1 << 63 else v for v in raw]


def pprof_totals(data: bytes) -> dict[tuple[str, str], tuple[int, int]]:
    """{(sample type, unit): (samples with a non-zero value, sum of values)} of a pprof."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    types, samples, strings = [], [], []
    for field, wire, value in pb_fields(data):
        if field == 1:
            t = dict((f, v) for f, _, v in pb_fields(value))
            types.append((t.get(1, 0), t.get(2, 0)))
        elif field == 2:
            values = []
            for f, w, v in pb_fields(value):
                if f == 2:
                    values += _ints(w, v)
            samples.append(values)
        elif field == 6:
            strings.append(value.decode("utf-8"))
    totals = {}
    for k, (t, u) in enumerate(types):
        column = [s[k] for s in samples]
        totals[(strings[t], strings[u])] = (sum(1 for v in column if v), sum(column))
    return totals


# ------------------------------------------------------------------------------------------
# OTLP requests, built with opentelemetry-proto


# Stacks, root first, and the samples of each: (value in ns, offset of its timestamp in ns).
BASE_STACKS = {
    ("main", "handle_request", "compute_tax"): [(10_000_000, 1_000_000), (10_000_000, 2_000_000),
                                                (20_000_000, 3_000_000)],
    ("main", "handle_request", "render_page"): [(30_000_000, 4_000_000)],
    ("main", "serialize_json"): [(10_000_000, 5_000_000), (40_000_000, 6_000_000)],
    ("main", "handle_request", "db_query"): [(50_000_000, 7_000_000)],
}
T0_NS = 1_764_320_000_000_000_000  # 2025-11-28 08:53:20 UTC


def otlp_request(stacks=BASE_STACKS, instance: str = "one", service: str = "checkout",
                 t0: int = T0_NS) -> otlp_service.ExportProfilesServiceRequest:
    """One resource (service.name, service.version, deployment.environment.name, and
    service.instance.id = `instance`) with one cpu/nanoseconds profile: a sample per stack,
    values paired with timestamps, every dictionary table starting with its empty entry."""
    strings = [""]

    def s(text: str) -> int:
        if text not in strings:
            strings.append(text)
        return strings.index(text)

    d = otlp.ProfilesDictionary()
    d.mapping_table.add()
    d.location_table.add()
    d.function_table.add()
    d.link_table.add()
    d.attribute_table.add()
    d.stack_table.add()
    function_of: dict[str, int] = {}
    for stack in stacks:
        for name in stack:
            if name not in function_of:
                d.function_table.add(name_strindex=s(name), filename_strindex=s("app.py"))
                location = d.location_table.add()
                location.lines.add(function_index=len(d.function_table) - 1, line=10 + len(function_of))
                function_of[name] = len(d.location_table) - 1

    profile = otlp.Profile(
        sample_type=otlp.ValueType(type_strindex=s("cpu"), unit_strindex=s("nanoseconds")),
        period_type=otlp.ValueType(type_strindex=s("cpu"), unit_strindex=s("nanoseconds")),
        period=10_000_000, time_unix_nano=t0, duration_nano=1_000_000_000,
    )
    for stack, points in stacks.items():
        # location_indices: the leaf first.
        d.stack_table.add(location_indices=[function_of[n] for n in reversed(stack)])
        profile.samples.add(stack_index=len(d.stack_table) - 1, values=[v for v, _ in points],
                            timestamps_unix_nano=[t0 + o for _, o in points])
    d.string_table.extend(strings)

    def kv(key, value):
        return common_pb2.KeyValue(key=key, value=common_pb2.AnyValue(string_value=value))

    resource = resource_pb2.Resource(attributes=[
        kv("service.name", service), kv("service.version", "1.2.3"),
        kv("deployment.environment.name", "prod"), kv("service.instance.id", instance)])
    req = otlp_service.ExportProfilesServiceRequest(dictionary=d)
    rp = req.resource_profiles.add(resource=resource)
    rp.scope_profiles.add(scope=common_pb2.InstrumentationScope(name="proflake-tests")).profiles.append(profile)
    return req


def expected_totals(stacks=BASE_STACKS) -> tuple[dict[str, int], dict[str, int]]:
    """(self value per leaf function, total value per function on the stack), from the stacks."""
    leaf, total = Counter(), Counter()
    for stack, points in stacks.items():
        value = sum(v for v, _ in points)
        leaf[stack[-1]] += value
        for name in set(stack):
            total[name] += value
    return dict(leaf), dict(total)


def otlp_json(req) -> bytes:
    """OTLP/JSON as json_format writes it: lowerCamelCase names, 64-bit integers as strings."""
    return json_format.MessageToJson(req).encode()


def post_otlp(port: int, req, *, gzipped=False, as_json=False, headers=None) -> Reply:
    body = otlp_json(req) if as_json else req.SerializeToString()
    h = {"Content-Type": "application/json" if as_json else "application/x-protobuf"}
    if gzipped:
        body = gzip.compress(body)
        h["Content-Encoding"] = "gzip"
    h.update(auth() if headers is None else headers)
    reply = request(port, OTLP_PATH, body, h)
    reply.sent = body
    return reply


def check_otlp_success(reply: Reply, as_json: bool) -> None:
    assert reply.status == 200, reply
    want_type = "application/json" if as_json else "application/x-protobuf"
    assert reply.header("Content-Type") == want_type, reply
    if as_json:
        assert json.loads(reply.body) == {}, reply
    else:
        response = otlp_service.ExportProfilesServiceResponse.FromString(reply.body)
        assert not response.HasField("partial_success"), f"unexpected partial success: {response}"


def multipart(parts: list[tuple[str, str, bytes]]) -> tuple[str, bytes]:
    """A multipart/form-data body of (name, filename, bytes) parts: its content type and bytes."""
    boundary = "proflake-" + uuid.uuid4().hex
    body = b""
    for name, filename, data in parts:
        body += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; "
                 f"filename=\"{filename}\"\r\nContent-Type: application/octet-stream\r\n\r\n").encode()
        body += data + b"\r\n"
    body += f"--{boundary}--\r\n".encode()
    return f"multipart/form-data; boundary={boundary}", body


def sidecar(upload: Path) -> dict:
    return json.loads(upload.with_name(upload.name + ".metadata.json").read_text())


# ------------------------------------------------------------------------------------------
# The tests


def test_otlp_protobuf_and_json():
    """Five ways of posting one OTLP request (protobuf plain and gzipped, JSON plain and
    gzipped, Logfire's bare token): each answered 200 in its own content type, stored as sent,
    converted; the tables carry the resource's service, release and environment, and each
    upload's per-function self and total values are the request's."""
    ways = {
        # name: (gzipped, as JSON, headers)
        "proto": (False, False, auth()),
        "proto-gzip-collector": (True, False, auth()),
        "json": (False, True, auth()),
        "json-gzip": (True, True, auth()),
        "logfire": (True, False, {"Authorization": TOKEN}),
    }
    want_self, want_total = expected_totals()
    with Serve() as serve:
        sent = []
        for name, (gzipped, as_json, headers) in ways.items():
            # service.instance.id tells the ways apart; same content would be a retry, one key.
            req = otlp_request(instance=name)
            reply = post_otlp(serve.port, req, gzipped=gzipped, as_json=as_json, headers=headers)
            check_otlp_success(reply, as_json)
            sent.append(reply.sent)
            if as_json:  # OTLP/JSON: lowerCamelCase names, 64-bit integers as strings
                text = (gzip.decompress(reply.sent) if gzipped else reply.sent).decode()
                assert f'"timeUnixNano": "{T0_NS}"' in text and '"stackIndex": 1' in text, text[:500]
        manifests = serve.wait_for_manifests(len(ways))
        uploads = serve.uploads("otlp")
        assert len(uploads) == len(ways), uploads
        assert {p.parent.name for p in uploads} == {"checkout"}, uploads
        exts = Counter(".otlp.json" if p.name.endswith(".otlp.json") else p.suffix for p in uploads)
        assert exts == {".otlp": 3, ".otlp.json": 2}, exts
        for p in uploads:
            meta = sidecar(p)
            assert (meta.get("service"), meta.get("release"), meta.get("environment")) == (
                "checkout", "1.2.3", "prod"), meta
        # Stored as received: each body byte for byte, gzipped ones gzipped.
        assert sorted(p.read_bytes() for p in uploads) == sorted(sent), "uploads are not the bodies sent"
        assert sorted(m["source"]["key"] for m in manifests) == sorted(serve.key(p) for p in uploads)
        assert {m["source"]["format"] for m in manifests} == {"otlp", "otlp-json"}, manifests
        serve.stop()
        assert serve.logged("converted") == {serve.key(p): 1 for p in uploads}, serve.logged("converted")
        t = serve.tables()
        profiles = t.rows("""SELECT source_id, service, release, environment, attributes['service.instance.id'],
                                    sample_type, sample_unit, samples, total_value FROM profiles""")
        assert len(profiles) == len(ways), profiles
        n_samples = sum(len(p) for p in BASE_STACKS.values())
        instance_of = {}
        for source_id, service, release, env, instance, stype, sunit, samples, total in profiles:
            assert (service, release, env) == ("checkout", "1.2.3", "prod"), profiles
            assert (stype, sunit, samples, total) == ("cpu", "nanoseconds", n_samples, sum(want_self.values()))
            instance_of[source_id] = instance
        assert sorted(instance_of.values()) == sorted(ways), instance_of
        leaf = t.leaf_totals()
        rollup = t.rollup()
        for source_id in instance_of:
            got_leaf = {f: v for (s, f), v in leaf.items() if s == source_id}
            assert got_leaf == want_self, (instance_of[source_id], got_leaf, want_self)
            got_rollup = {f: v for (s, f), v in rollup.items() if s == source_id}
            assert got_rollup == {f: (want_self.get(f, 0), want_total[f]) for f in want_total}, got_rollup
        # TIMESTAMPTZ read as microseconds since the epoch (its Python form would need pytz).
        first = t.rows("SELECT min(epoch_us(timestamp)), max(epoch_us(timestamp)) FROM samples")[0]
        assert first == ((T0_NS + 1_000_000) // 1000, (T0_NS + 7_000_000) // 1000), first
        assert serve.stopped_after == len(ways)


# The program pyroscope-io profiles: it pushes to a proxy that records what it sends.
PYROSCOPE_PROGRAM = textwrap.dedent("""
    import sys, time
    import pyroscope

    url, token, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    pyroscope.configure(application_name="demo.app", server_address=url,
                        basic_auth_username="demo", basic_auth_password=token,
                        tags={"region": "eu"})

    def hot_loop(until):
        n = 0
        while time.monotonic() < until:
            n += 1
        return n

    cpu = time.thread_time()
    hot_loop(time.monotonic() + seconds)
    cpu = time.thread_time() - cpu
    print("shutdown", pyroscope.shutdown(), flush=True)
    print("hot_loop cpu", cpu, flush=True)
""")


class RecordingProxy:
    """A stdlib HTTP server that records each request (time, method, path, headers, body size)
    and forwards it unchanged to the server, giving back the server's answer."""

    def __init__(self, target_port: int):
        self.records: list[dict] = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("host", "connection", "keep-alive")}
                reply = request(target_port, self.path, body, headers)
                proxy.records.append({"t": time.monotonic(), "method": "POST", "path": self.path,
                                      "headers": dict(self.headers.items()), "bytes": len(body),
                                      "status": reply.status, "body": body})
                self.send_response(reply.status)
                for k, v in reply.headers:
                    if k.lower() not in ("content-length", "connection", "date", "transfer-encoding"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def push_series(gzipped_body: bytes) -> list[tuple[dict[str, str], list[bytes]]]:
    """The series of a push.v1.PushRequest, read by hand: (labels, raw profiles) of each
    (series 1 → labels 1 {name 1, value 2}, samples 2 {raw_profile 1, ID 2})."""
    body = gzip.decompress(gzipped_body) if gzipped_body[:2] == b"\x1f\x8b" else gzipped_body
    series = []
    for field, _, value in pb_fields(body):
        if field == 1:
            labels, raws = {}, []
            for f, _, v in pb_fields(value):
                if f == 1:
                    pair = {ff: vv.decode() for ff, _, vv in pb_fields(v)}
                    labels[pair.get(1, "")] = pair.get(2, "")
                elif f == 2:
                    raws += [vv for ff, _, vv in pb_fields(v) if ff == 1]
            series.append((labels, raws))
    return series


def push_labels(gzipped_body: bytes) -> list[dict[str, str]]:
    return [labels for labels, _ in push_series(gzipped_body)]


def test_pyroscope_io_live():
    """A live pyroscope-io program (Basic auth, tags) pushes through the Connect push API:
    uploads under uploads/pyroscope/demo.app/ with the labels, converted, and its hot function
    on top of the tables."""
    seconds = 12
    with Serve() as serve, RecordingProxy(serve.port) as proxy:
        started = time.monotonic()
        run = subprocess.run([PYTHON, "-c", PYROSCOPE_PROGRAM, f"http://127.0.0.1:{proxy.port}", TOKEN,
                              str(seconds)], capture_output=True, text=True, timeout=seconds + 60)
        elapsed = time.monotonic() - started
        assert run.returncode == 0, f"the pyroscope program failed ({run.returncode}):\n{run.stderr}"
        assert "shutdown True" in run.stdout, run.stdout + run.stderr
        records = proxy.records
        assert records, "pyroscope-io sent nothing"
        assert all(r["status"] == 200 for r in records), [(r["path"], r["status"]) for r in records]
        FIGURES["pyroscope-io requests"] = [
            {"after_s": round(r["t"] - started, 1), "path": r["path"], "bytes": r["bytes"],
             "status": r["status"]} for r in records]
        FIGURES["pyroscope-io headers"] = {k: v for k, v in records[0]["headers"].items()
                                           if k.lower() != "authorization"}
        authz = records[0]["headers"].get("Authorization") or records[0]["headers"].get("authorization", "")
        FIGURES["pyroscope-io authorization scheme"] = authz.split(" ")[0]
        FIGURES["pyroscope-io labels"] = push_labels(records[0]["body"])
        FIGURES["pyroscope-io run"] = f"{elapsed:.1f} s for {seconds} s of CPU burn"
        assert {r["path"] for r in records} == {PUSH_PATH}, {r["path"] for r in records}
        assert base64.b64decode(authz.split(" ")[1]) == f"demo:{TOKEN}".encode(), "Basic auth"
        uploads = serve.wait_for("uploads", lambda: serve.uploads("pyroscope/demo.app"))
        raws = [raw for r in records for _, rs in push_series(r["body"]) for raw in rs]
        n_raw = len(raws)
        manifests = serve.wait_for_manifests(len(uploads))
        assert len(serve.uploads()) == len(uploads), serve.uploads()
        assert all(p.suffix == ".pprof" for p in uploads), uploads
        for p in uploads:
            meta = sidecar(p)
            assert meta.get("service") == "demo.app", meta
            labels = meta.get("labels", {})
            assert labels.get("region") == "eu", meta
            assert labels.get("profile_type"), meta
            assert "service_name" not in labels and "__name__" not in labels, meta
        assert len(uploads) == n_raw, (len(uploads), n_raw)
        assert sorted(m["source"]["key"] for m in manifests) == sorted(serve.key(p) for p in uploads)
        assert not serve.all_files("uploads") or not any(
            p.name.endswith(".error.json") for p in serve.all_files("uploads")), "an error report"
        serve.stop()
        t = serve.tables()
        profiles = t.rows("SELECT DISTINCT service, attributes['region'], attributes['profile_type'] FROM profiles")
        assert profiles and all(s == "demo.app" and r == "eu" and pt for s, r, pt in profiles), profiles
        units = t.rows("SELECT DISTINCT sample_type, sample_unit FROM profiles")
        assert units == [("cpu", "nanoseconds")], units
        # Self CPU per function; pprof samples are aggregated, so a row is a stack, not a tick.
        top = t.rows("""SELECT function, sum(self_value)::BIGINT AS ns FROM function_rollup
                        GROUP BY ALL ORDER BY ns DESC""")
        FIGURES["pyroscope-io self CPU per function (ns)"] = top
        assert top[0][0] == "hot_loop", top
        # The program's own measure: the CPU time its main thread spent in hot_loop.
        burned_ns = float(run.stdout.split("hot_loop cpu")[1].split()[0]) * 1e9
        ratio = top[0][1] / burned_ns
        FIGURES["pyroscope-io hot_loop: profiled / thread_time"] = f"{top[0][1] / 1e9:.2f} s / {burned_ns / 1e9:.2f} s"
        # Loose: the sampler counts a runnable thread as on CPU, and this machine may be busy.
        assert 0.5 < ratio < 2.0, f"hot_loop profiled {top[0][1]} ns, burned {burned_ns:.0f} ns"
        assert top[0][1] >= 0.9 * sum(ns for _, ns in top), top
        FIGURES["pyroscope-io uploads"] = len(uploads)
        # The tables hold exactly what the pushed pprofs held, counted from the bytes sent.
        sent = Counter()
        for raw in raws:
            for (stype, unit), (n, total) in pprof_totals(raw).items():
                sent[(stype, unit, "n")] += n
                sent[(stype, unit, "total")] += total
        got = Counter()
        for stype, unit, n, total in t.rows(
                "SELECT sample_type, sample_unit, count(*), sum(value)::BIGINT FROM samples GROUP BY ALL"):
            got[(stype, unit, "n")] += n
            got[(stype, unit, "total")] += total
        assert got == sent, (got, sent)


FOLDED = b"""main;shop.handle;db.query 30
main;shop.handle;render 12
main;shop.handle 5
main;gc 3
main;shop.handle;db.query 8
"""


def folded_totals(text: bytes) -> dict[str, int]:
    leaf = Counter()
    for line in text.decode().splitlines():
        stack, count = line.rsplit(" ", 1)
        leaf[stack.split(";")[-1]] += int(count)
    return dict(leaf)


def test_ingest_api():
    """Pyroscope's ingest API: folded stacks with labels, a pprof in multipart/form-data and
    a JFR recording in a `jfr` part. The folded one's tables total its counts; the pprof's its
    own values; the JFR one's samples per event are those `jfr print --json` lists. A body that
    is no JFR is refused as it arrives."""
    with Serve() as serve:
        h = auth()
        folded = request(serve.port, "/ingest?name=shop%7Benv%3Dstaging%7D&format=folded"
                                     "&from=1700000000&sampleRate=100", FOLDED, h)
        assert folded.status == 200 and folded.body == b"", folded

        pprof_bytes = PPROF_SAMPLE.read_bytes()
        ctype, body = multipart([("profile", "profile.pprof", pprof_bytes)])
        pprof = request(serve.port, "/ingest?name=pprof.app%7Bhost%3Dh1%7D&format=pprof&spyName=gospy"
                                    "&from=1700000100", body, {**h, "Content-Type": ctype})
        assert pprof.status == 200, pprof

        # Basic auth, as the Java agent sends it.
        basic = "Basic " + base64.b64encode(f"agent:{TOKEN}".encode()).decode()
        # A body that starts like JFR but is none is refused before anything is stored.
        ctype, body = multipart([("jfr", "recording.jfr", b"FLR\x00\x00\x02\x00\x01" + os.urandom(200))])
        refused = request(serve.port, "/ingest?name=java.app&format=jfr&from=1700000200&spyName=javaspy",
                          body, {"Authorization": basic, "Content-Type": ctype})
        assert refused.status == 400 and b"jfr" in refused.body, refused
        FIGURES["JFR refusal"] = refused.body.decode(errors="replace").strip()

        jfr_bytes = JFR_FIXTURE.read_bytes()
        ctype, body = multipart([("jfr", "recording.jfr", jfr_bytes)])
        jfr = request(serve.port, "/ingest?name=java.app&format=jfr&from=1700000200&spyName=javaspy",
                      body, {"Authorization": basic, "Content-Type": ctype})
        assert jfr.status == 200, jfr

        jfr_upload = serve.wait_for("the JFR upload", lambda: serve.uploads("pyroscope/java.app"))[0]
        manifests = serve.wait_for_manifests(3)
        serve.stop()

        uploads = serve.uploads()
        assert [(p.parent.name, p.name.split(".", 1)[1]) for p in uploads] == [
            ("java.app", "jfr"), ("pprof.app", "pprof"), ("shop", "folded")], uploads
        by_service = {p.parent.name: p for p in uploads}
        assert by_service["shop"].read_bytes() == FOLDED
        assert by_service["pprof.app"].read_bytes() == pprof_bytes
        assert jfr_upload.read_bytes() == jfr_bytes, "the JFR upload is kept as sent"
        assert sidecar(by_service["shop"]) == {
            "service": "shop", "timestamp": 1700000000, "sample_rate_hz": 100, "labels": {"env": "staging"}}, \
            sidecar(by_service["shop"])
        assert sidecar(by_service["pprof.app"])["labels"] == {"host": "h1", "spy_name": "gospy"}
        assert not jfr_upload.with_name(jfr_upload.name + ".error.json").exists()
        assert serve.key(jfr_upload) in [m["source"]["key"] for m in manifests], manifests

        t = serve.tables()
        shop = t.rows("""SELECT source_id, service, attributes['env'], frequency_hz, epoch(start_time),
                                samples, total_value, total_weight_ns FROM profiles WHERE service = 'shop'""")
        assert len(shop) == 1, shop
        source_id, _, env, rate, start, n, total, weight_ns = shop[0]
        # sampleRate=100: each counted sample is 10 ms of CPU.
        assert (env, rate) == ("staging", 100), shop
        assert weight_ns == total * 10_000_000, shop
        assert start == 1700000000, start
        want = folded_totals(FOLDED)
        assert (n, total) == (len(FOLDED.splitlines()), sum(want.values())), shop
        got = {f: v for (s, f), v in t.leaf_totals().items() if s == source_id}
        assert got == want, (got, want)

        want_pprof = pprof_totals(pprof_bytes)
        got_pprof = {(st, su): (n, v) for st, su, n, v in t.rows(
            """SELECT sample_type, sample_unit, count(*), sum(value)::BIGINT FROM samples
               WHERE source_id IN (SELECT source_id FROM profiles WHERE service = 'pprof.app') GROUP BY ALL""")}
        assert got_pprof == {k: v for k, v in want_pprof.items() if v[0]}, (got_pprof, want_pprof)

        # The JFR recording's samples per event, against `jfr print --json` of it.
        with gzip.open(JFR_FIXTURE.with_suffix(".json.gz")) as f:
            want_jfr = collections.Counter(e["type"] for e in json.load(f))
        got_jfr = dict(t.rows("""SELECT sample_type, sum(samples)::BIGINT FROM profiles
                                 WHERE service = 'java.app' AND source_format = 'jfr' GROUP BY ALL"""))
        assert got_jfr == dict(want_jfr), (got_jfr, want_jfr)
        # Four requests: the refused recording is one.
        assert serve.stopped_after == 4


def check_refusal(reply: Reply, status: int, protocol: str, json_body=False, contains: str = "") -> str:
    """The status, and a body in the protocol's own terms: OTLP a google.rpc.Status (protobuf,
    or JSON for a JSON request) with the gRPC code of the status, Connect's error JSON for the
    push API, plain text otherwise. Gives the message."""
    assert reply.status == status, f"want {status}, got {reply}"
    ctype = reply.header("Content-Type") or ""
    if protocol == "otlp" and json_body:
        assert ctype == "application/json", reply
        doc = json.loads(reply.body)
        code, message = doc["code"], doc["message"]
        assert code == GRPC_CODE[status], reply
    elif protocol == "otlp":
        assert ctype == "application/x-protobuf", reply
        code, message = rpc_status(reply.body)
        assert code == GRPC_CODE[status], (code, reply)
    elif protocol == "push":
        assert ctype == "application/json", reply
        doc = json.loads(reply.body)
        message = doc["message"]
        assert doc["code"] in ("invalid_argument", "unauthenticated", "unimplemented",
                               "resource_exhausted", "unavailable"), reply
    else:
        assert ctype.startswith("text/plain"), reply
        message = reply.body.decode()
    assert message.strip(), f"no reason given: {reply}"
    assert contains.lower() in message.lower(), (contains, message)
    return message


def gzip_bomb(inflated: int) -> bytes:
    """`inflated` bytes of zeros, gzipped, without holding them."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = bytes(1 << 20)
    out = [z.compress(chunk) for _ in range(inflated >> 20)]
    out.append(z.flush())
    return b"".join(out)


def test_refusals_store_nothing():
    """Every refusal the receiver gives, each in its protocol's terms, and not one file
    stored; the peak memory of the receiver that refused a 100 MiB gzip bomb; then a receiver
    with a 1,000,000-byte limit refusing a body just past it, declared and chunked."""
    good = otlp_request(instance="refusals").SerializeToString()
    proto = {"Content-Type": "application/x-protobuf", **auth()}
    with Serve() as serve:
        p = serve.port
        baseline = serve.peak_rss_bytes()
        check_refusal(request(p, OTLP_PATH, b"this is not a protobuf message", proto), 400, "otlp")
        check_refusal(request(p, OTLP_PATH, b"{not json", {**proto, "Content-Type": "application/json"}),
                      400, "otlp", json_body=True)
        check_refusal(request(p, OTLP_PATH, b"\x1f\x8b not gzip at all",
                              {**proto, "Content-Encoding": "gzip"}), 400, "otlp", contains="gzip")
        # 401: no token, another token (Bearer, bare, Basic).
        for headers in [{"Content-Type": "application/x-protobuf"},
                        {**proto, **auth("wrong-token")},
                        {**proto, "Authorization": TOKEN + "x"},
                        {**proto, "Authorization": "Basic " + base64.b64encode(b"u:wrong").decode()},
                        {**proto, "Authorization": "Bearer"}]:
            reply = request(p, OTLP_PATH, good, headers)
            check_refusal(reply, 401, "otlp", contains="token")
            challenges = " | ".join(reply.header_all("WWW-Authenticate"))
            assert 'Bearer realm="proflake"' in challenges and 'Basic realm="proflake"' in challenges, reply.headers
        reply = request(p, PUSH_PATH, b"", {"Content-Type": "application/proto"})
        check_refusal(reply, 401, "push")
        assert json.loads(reply.body)["code"] == "unauthenticated", reply
        check_refusal(request(p, "/ingest?name=x", b"a;b 1\n", {}), 401, "ingest")
        # 413: 100 MiB of zeros gzipped (about 100 KiB sent).
        bomb = gzip_bomb(100 << 20)
        reply = request(p, OTLP_PATH, bomb, {**proto, "Content-Encoding": "gzip"})
        check_refusal(reply, 413, "otlp")
        FIGURES["gzip bomb"] = f"{len(bomb)} bytes inflating to {100 << 20}: {rpc_status(reply.body)[1]}"
        reply = request(p, PUSH_PATH, bomb, {**auth(), "Content-Type": "application/proto",
                                             "Content-Encoding": "gzip"})
        check_refusal(reply, 413, "push")
        assert json.loads(reply.body)["code"] == "resource_exhausted", reply
        check_refusal(request(p, "/ingest?name=bomb&format=folded", bomb,
                              {**auth(), "Content-Encoding": "gzip"}), 413, "ingest")
        # 415: another content type, another content encoding.
        check_refusal(request(p, OTLP_PATH, good, {**proto, "Content-Type": "text/plain"}), 415, "otlp",
                      contains="text/plain")
        check_refusal(request(p, OTLP_PATH, good, {**auth()}), 415, "otlp")
        check_refusal(request(p, OTLP_PATH, good, {**proto, "Content-Encoding": "br"}), 415, "otlp")
        check_refusal(request(p, PUSH_PATH, good, {**auth(), "Content-Type": "text/plain"}), 415, "push")
        # 400 in the push and ingest APIs' terms.
        reply = request(p, PUSH_PATH, b"\xff\xff\xff", {**auth(), "Content-Type": "application/proto"})
        check_refusal(reply, 400, "push")
        assert json.loads(reply.body)["code"] == "invalid_argument", reply
        check_refusal(request(p, "/ingest?format=folded", b"a;b 1\n", auth()), 400, "ingest", contains="name")
        check_refusal(request(p, "/ingest?name=x&format=speedscope", b"{}", auth()), 400, "ingest")
        check_refusal(request(p, "/ingest?name=x&format=pprof", b"not a pprof", auth()), 400, "ingest")
        # 404 and 405.
        check_refusal(request(p, "/v1/traces", good, proto), 404, "text", contains="/v1/traces")
        reply = request(p, OTLP_PATH, None, auth(), method="GET")
        check_refusal(reply, 405, "otlp")
        assert reply.header("Allow") == "POST", reply.headers
        reply = request(p, "/ingest?name=x", None, auth(), method="PUT")
        assert reply.status == 405 and reply.header("Allow") == "POST", reply
        # An empty request is no refusal: 200, a partial success saying so, nothing stored.
        reply = post_otlp(p, otlp_service.ExportProfilesServiceRequest())
        assert reply.status == 200, reply
        partial = otlp_service.ExportProfilesServiceResponse.FromString(reply.body).partial_success
        assert partial.rejected_profiles == 0 and "no samples" in partial.error_message, partial
        assert request(p, "/health", None, {}, method="GET").body == b"ok\n"

        time.sleep(0.3)
        stored = serve.all_files("uploads") + serve.all_files("converted") + serve.all_files("tables")
        peak = serve.peak_rss_bytes()
        FIGURES["peak RSS refusing the gzip bomb"] = f"{peak / 2**20:.1f} MiB (at start {baseline / 2**20:.1f} MiB)"
        serve.stop()
        assert stored == [], stored
        assert peak < 400e6, f"peak RSS {peak / 1e6:.0f} MB refusing a gzip bomb"

    with Serve(env={"PROFLAKE_LIMIT_MAX_REQUEST_BYTES": "1000000"}) as serve:
        over = b"\x0a" + bytes(1_000_000)
        reply = request(serve.port, OTLP_PATH, over, proto)
        check_refusal(reply, 413, "otlp", contains="1000000")
        reply = request(serve.port, OTLP_PATH, over, proto, chunked=True)
        check_refusal(reply, 413, "otlp", contains="1000000")
        # The limit holds once inflated too: a small gzipped body past it (the ratio limit
        # first), and one that inflates only 3 times, past max_request_bytes alone.
        reply = request(serve.port, OTLP_PATH, gzip_bomb(2 << 20), {**proto, "Content-Encoding": "gzip"})
        check_refusal(reply, 413, "otlp")
        mild = gzip.compress(os.urandom(500_000) + bytes(1_000_000))
        assert len(mild) < 1_000_000
        reply = request(serve.port, OTLP_PATH, mild, {**proto, "Content-Encoding": "gzip"})
        check_refusal(reply, 413, "otlp", contains="max_request_bytes")
        # Just under the limit is read (and refused for what it is, not for its size).
        reply = request(serve.port, OTLP_PATH, b"not protobuf" + bytes(999_000), proto)
        check_refusal(reply, 400, "otlp")
        assert check_otlp_success(post_otlp(serve.port, otlp_request(instance="small")), False) is None
        serve.wait_for_manifests(1)
        serve.stop()
        assert len(serve.uploads()) == 1, serve.uploads()


def test_retry_stored_once():
    """The same OTLP request three times, as a client retries. The identical retry (same
    bytes) is stored under the same key and not converted again: the manifest is not rewritten
    (same inode, same mtime) and serve logs one conversion. The gzipped retry (same content,
    other bytes) replaces the upload and its conversion, as docs/ingest.md says: still one
    upload key, one manifest (of the gzipped bytes), one source_id in every table."""
    req = otlp_request(instance="retry")
    plain = req.SerializeToString()
    with Serve() as serve:
        check_otlp_success(post_otlp(serve.port, req), False)
        serve.wait_for_manifests(1)
        upload = serve.uploads()[0]
        key = serve.key(upload)
        manifest = next(serve.store.glob("converted/*/manifest.json"))
        before = (manifest.stat().st_ino, manifest.stat().st_mtime_ns)

        check_otlp_success(post_otlp(serve.port, req), False)
        serve.wait_for("the identical retry's conversion to find itself done",
                       lambda: any(f'not converted key="{key}"' in l for l in serve.stderr))
        assert serve.uploads() == [upload] and upload.read_bytes() == plain
        assert (manifest.stat().st_ino, manifest.stat().st_mtime_ns) == before, "manifest rewritten by a retry"
        assert serve.logged("converted") == {key: 1}, serve.logged("converted")
        FIGURES["identical retry"] = [l.split("INFO ", 1)[-1] for l in serve.stderr if "not converted" in l]

        check_otlp_success(post_otlp(serve.port, req, gzipped=True), False)
        serve.wait_for("the gzipped retry's conversion", lambda: serve.logged("converted")[key] == 2)
        serve.stop()
        assert serve.uploads() == [upload], serve.uploads()
        assert gzip.decompress(upload.read_bytes()) == plain, "the gzipped body as sent"
        manifests = serve.manifests()
        assert len(manifests) == 1 and manifests[0]["source"]["key"] == key, manifests
        assert manifests[0]["source"]["container"] == "gzip", manifests[0]["source"]
        source_id = manifests[0]["source"]["source_id"]
        tables = {p.stem for p in serve.all_files("tables")}
        assert tables == {source_id}, f"outputs of the replaced conversion remain: {tables}"
        t = serve.tables()
        assert t.rows("SELECT count(DISTINCT source_id), count(*) FROM profiles") == [(1, 1)]
        assert serve.stopped_after == 3


def varied_stacks(i: int) -> dict:
    """BASE_STACKS with one value made unique to request `i`."""
    stacks = dict(BASE_STACKS)
    key = ("main", "handle_request", "render_page")
    stacks[key] = [(1_000_000 * (i + 1), 4_000_000)]
    return stacks


def post_all(port: int, bodies: list[bytes], threads: int):
    """Posts every body from `threads` threads at once, each a new connection; a 503 is
    retried after its Retry-After, as the Collector's exporter does. Gives ({index: final
    status}, [(index, status body, Retry-After) of each 503], [errors], seconds taken)."""
    work: queue.Queue = queue.Queue()
    for i in range(len(bodies)):
        work.put(i)
    statuses: dict[int, int] = {}
    busy: list[tuple[int, bytes, str | None]] = []
    errors: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(threads)

    def client():
        start.wait()
        while True:
            try:
                i = work.get_nowait()
            except queue.Empty:
                return
            for _ in range(60):
                try:
                    reply = request(port, OTLP_PATH, bodies[i], {"Content-Type": "application/x-protobuf", **auth()})
                except OSError as e:
                    with lock:
                        errors.append(f"{i}: {e!r}")
                    break
                if reply.status == 503:
                    retry_after = reply.header("Retry-After")
                    with lock:
                        busy.append((i, reply.body, retry_after))
                    time.sleep(float(retry_after or 1))
                    continue
                with lock:
                    statuses[i] = reply.status
                break

    began = time.monotonic()
    pool = [threading.Thread(target=client) for _ in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join(300)
    return statuses, busy, errors, time.monotonic() - began


def check_each_converted_once(serve: Serve, n: int, want_totals: list[int]) -> list[dict]:
    """n uploads, n manifests whose source keys are exactly the uploads, each upload converted
    once, and the profiles table: n source_ids with these totals."""
    manifests = serve.manifests()
    uploads = serve.uploads()
    assert len(uploads) == n, len(uploads)
    keys = {serve.key(p) for p in uploads}
    sources = [m["source"]["key"] for m in manifests]
    assert len(manifests) == n and set(sources) == keys and len(set(sources)) == n, (len(manifests), len(set(sources)))
    assert len({m["source"]["source_id"] for m in manifests}) == n
    assert serve.logged("converted") == {k: 1 for k in keys}, "each upload converted once"
    assert not list(serve.store.glob("converted/by-key/*/pending/*")), "a conversion left pending"
    t = serve.tables()
    assert t.rows("SELECT count(DISTINCT source_id), count(*) FROM profiles") == [(n, n)]
    assert sorted(v for (v,) in t.rows("SELECT total_value FROM profiles")) == sorted(want_totals)
    return manifests


def varied_totals(indices) -> list[int]:
    base = sum(expected_totals(BASE_STACKS)[0].values()) - 30_000_000
    return [base + 1_000_000 * (i + 1) for i in indices]


def test_concurrent_requests():
    """200 distinct OTLP requests from 16 threads at once (503s retried after Retry-After):
    all answered 200, 200 uploads, 200 manifests of those uploads, each upload converted once,
    200 source_ids in the profiles table with the values sent."""
    n, threads = 200, 16
    bodies = [otlp_request(varied_stacks(i), instance=f"c{i}").SerializeToString() for i in range(n)]
    with Serve("--workers", "2") as serve:
        began = time.monotonic()
        statuses, busy, errors, answered = post_all(serve.port, bodies, threads)
        assert not errors, errors[:5]
        assert Counter(statuses.values()) == {200: n}, Counter(statuses.values())
        assert all(r is not None and int(r) >= 1 for _, _, r in busy), busy
        serve.wait_for_manifests(n)
        converted = time.monotonic() - began
        FIGURES["concurrency"] = (f"{n} requests from {threads} threads answered in {answered:.1f} s, "
                                  f"converted in {converted:.1f} s; 503s retried: {len(busy)}")
        serve.stop()
        check_each_converted_once(serve, n, varied_totals(range(n)))
        assert serve.stopped_after == n + len(busy)


def test_full_queue_answers_503():
    """A conversion queue of 4 under 80 requests from 16 threads: the requests past it are
    answered 503 with Retry-After and a google.rpc.Status (UNAVAILABLE), nothing stored for
    them; retried after Retry-After, every request ends 200 and is converted once."""
    n, threads = 80, 16
    bodies = [otlp_request(varied_stacks(500 + i), instance=f"q{i}").SerializeToString() for i in range(n)]
    with Serve("--queue", "4", "--workers", "1") as serve:
        statuses, busy, errors, answered = post_all(serve.port, bodies, threads)
        assert not errors, errors[:5]
        assert Counter(statuses.values()) == {200: n}, Counter(statuses.values())
        FIGURES["full queue (--queue 4)"] = (f"{n} requests from {threads} threads: {len(busy)} answered 503 "
                                             f"and retried, all 200 after {answered:.1f} s")
        assert busy, "a queue of 4 never filled under 16 concurrent clients"
        for _, body, retry_after in busy:
            assert retry_after == "1", retry_after
            code, message = rpc_status(body)
            assert code == GRPC_CODE[503] and "retry" in message, (code, message)
        serve.wait_for_manifests(n)
        serve.stop()
        check_each_converted_once(serve, n, varied_totals(range(500, 500 + n)))
        assert serve.stopped_after == n + len(busy)


def test_graceful_shutdown():
    """20 requests (8 clients at once, so that conversions queue up) and one more whose body
    is half sent; SIGTERM right after the 20th answer: new connections are refused, the request
    in flight is still answered 200 once its body arrives, the exit code is 0, and every upload
    (21) has its manifest, converted once: the queued conversions finished before the exit."""
    n = 20
    bodies = [otlp_request(varied_stacks(1000 + i), instance=f"g{i}").SerializeToString() for i in range(n + 1)]
    with Serve() as serve:
        in_flight = socket.create_connection(("127.0.0.1", serve.port), timeout=HTTP_TIMEOUT_S)
        head = (f"POST {OTLP_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-protobuf\r\n"
                f"Authorization: Bearer {TOKEN}\r\nContent-Length: {len(bodies[n])}\r\n\r\n").encode()
        in_flight.sendall(head + bodies[n][:100])
        statuses, busy, errors, _ = post_all(serve.port, bodies[:n], 8)
        serve.terminate()
        at_term = len(serve.manifests())
        assert not errors and not busy and Counter(statuses.values()) == {200: n}, (statuses, busy, errors)
        time.sleep(0.5)
        try:
            socket.create_connection(("127.0.0.1", serve.port), timeout=2).close()
            refused = False
        except OSError:
            refused = True
        in_flight.sendall(bodies[n][100:])
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = in_flight.recv(4096)
            if not chunk:
                break
            answer += chunk
        in_flight.close()
        ANSWERED[serve.port] += 1
        serve.stop()
        said = [l for l in serve.stderr if "queued" in l or "shutting down" in l]
        FIGURES["graceful shutdown"] = f"{at_term} of {n} converted at SIGTERM; serve said: " + " / ".join(said)
        assert refused, "a new connection was accepted after SIGTERM"
        assert answer.startswith(b"HTTP/1.1 200 "), answer
        assert at_term < n, "every conversion was done before SIGTERM: nothing was left to finish"
        assert any("converting the" in l for l in said), said
        check_each_converted_once(serve, n + 1, varied_totals(range(1000, 1000 + n + 1)))
        assert not list(serve.store.rglob("*.error.json")), "an error report"
        assert serve.stopped_after == n + 1


TESTS = [
    test_otlp_protobuf_and_json,
    test_pyroscope_io_live,
    test_ingest_api,
    test_refusals_store_nothing,
    test_retry_stored_once,
    test_concurrent_requests,
    test_full_queue_answers_503,
    test_graceful_shutdown,
]


def main(argv: list[str]) -> int:
    if not BIN.is_file():
        print(f"no proflake binary at {BIN}: cargo build -p proflake-cli, or set PROFLAKE_BIN")
        print("\ningest tests: 0 passed, 1 failed")
        return 1
    chosen = [t for t in TESTS if not argv or any(a in t.__name__ for a in argv)]
    passed = failed = 0
    began = time.monotonic()
    for test in chosen:
        t0 = time.monotonic()
        try:
            test()
        except Exception:
            failed += 1
            print(f"FAIL {test.__name__} ({time.monotonic() - t0:.1f} s)")
            print(textwrap.indent(traceback.format_exc(), "    "))
        else:
            passed += 1
            print(f"ok   {test.__name__} ({time.monotonic() - t0:.1f} s)")
        sys.stdout.flush()
    if FIGURES:
        print("\nfigures:")
        for name, value in FIGURES.items():
            print(f"  {name}: {value}")
    print(f"  run time: {time.monotonic() - began:.1f} s")
    print(f"\ningest tests: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
