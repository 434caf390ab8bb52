#!/usr/bin/env python3
"""The convert Lambda binary under `cargo lambda watch`, fed a real S3 notification from moto.

Run from anywhere with the workspace's venv: `.venv/bin/python tests/e2e/lambda_watch.py`.

1. starts moto_server (.venv/bin/moto_server, or $PROFLAKE_MOTO_SERVER) on a port of its own and
   sets it up like production: uploads and output buckets, the convert queue with its
   dead-letter queue and redrive policy, the uploads/ notification to the queue;
2. uploads one sample and receives the real notifications (moto's s3:TestEvent included), and
   writes them as the SQS event Lambda would deliver;
3. starts `cargo lambda watch` in the workspace root (it builds and runs the `convert` binary
   when `cargo lambda invoke convert` first calls it; the function's environment goes through
   `--env-var`, and the caller's AWS_* and PROFLAKE_* variables are kept out), retrying the
   invoke while the function compiles;
4. checks the response has no batch item failures and the upload's manifest, with every output
   it lists, is in the output bucket;
5. posts a gzipped OTLP request to the ingest binary through the watch's function URL emulation
   (`/lambda-url/ingest/...`, a function URL event with a base64 body): it must be stored in the
   uploads bucket with its metadata sidecar, refused without the token, and its two notifications
   (sidecar, then upload) converted once by the convert function; `POST /v1/uploads` must answer
   a presigned PUT that stores a file with its signed object metadata.

Prints `lambda_watch: PASS ...` and exits 0, or exits 1 with the reason. Everything it starts is
stopped on the way out; the whole run is bounded by --timeout (default 900 s, most of it for a
first compile; the test script normally has built the debug binary already).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from moto_server import MotoError, MotoServer

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"
REGION = "us-east-1"
UPLOADS_BUCKET = "proflake-uploads"
OUTPUT_BUCKET = "proflake-outputs"
QUEUE = "proflake-convert"
DLQ = "proflake-convert-dlq"
SAMPLE = REPO / "samples" / "pprof" / "google-pprof_report_sample.cpu.pb.gz"
OTLP_SAMPLE = REPO / "samples" / "otlp" / "sig-profiling_profile.v1_10.pb"
INGEST_TOKEN = "watch-token"
# A space and a '+': the notification carries the key form-urlencoded.
UPLOAD_KEY = "uploads/watch/report sample+1.pb.gz"


class Failure(Exception):
    pass


class Timeout(Exception):
    pass


def log(message: str) -> None:
    print(f"lambda_watch: {message}", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Moto(MotoServer):
    """moto_server on 127.0.0.1 (see moto_server.py)."""


def clients(endpoint: str):
    import boto3
    from botocore.config import Config

    kwargs = dict(
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
    s3 = boto3.client("s3", config=Config(s3={"addressing_style": "path"}), **kwargs)
    return s3, boto3.client("sqs", **kwargs)


def set_up(s3, sqs) -> tuple[str, str]:
    """Buckets, queues and notification as in production; returns (queue url, queue arn)."""
    for bucket in (UPLOADS_BUCKET, OUTPUT_BUCKET):
        s3.create_bucket(Bucket=bucket)
    dlq_url = sqs.create_queue(QueueName=DLQ)["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    queue_url = sqs.create_queue(
        QueueName=QUEUE,
        Attributes={
            "VisibilityTimeout": "60",
            "RedrivePolicy": json.dumps(
                {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "5"}
            ),
        },
    )["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    s3.put_bucket_notification_configuration(
        Bucket=UPLOADS_BUCKET,
        NotificationConfiguration={
            "QueueConfigurations": [
                {
                    "Id": "convert",
                    "QueueArn": queue_arn,
                    "Events": ["s3:ObjectCreated:*"],
                    "Filter": {"Key": {"FilterRules": [{"Name": "prefix", "Value": "uploads/"}]}},
                }
            ]
        },
    )
    return queue_url, queue_arn


def receive(sqs, queue_url: str, want: int) -> list[dict]:
    messages: list[dict] = []
    deadline = time.monotonic() + 30
    while len(messages) < want:
        if time.monotonic() > deadline:
            raise Failure(f"only {len(messages)} of {want} notifications arrived")
        got = sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=10,
            WaitTimeSeconds=2,
            MessageSystemAttributeNames=["All"],
        ).get("Messages", [])
        messages.extend(got)
    return messages


def sqs_event(messages: list[dict], queue_arn: str) -> dict:
    return {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": m.get("Attributes", {}),
                "messageAttributes": {},
                "md5OfBody": m.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": REGION,
            }
            for m in messages
        ]
    }


class Watch:
    """`cargo lambda watch` in its own process group, its output in a log file."""

    def __init__(self, port: int, env_vars: dict[str, str], log_path: Path) -> None:
        cargo_lambda = VENV_BIN / "cargo-lambda"
        if not cargo_lambda.is_file():
            raise Failure(
                f"{cargo_lambda} not found: run scripts/test.sh, which installs cargo-lambda "
                "into .venv"
            )
        self.cargo_lambda = cargo_lambda
        args = [
            str(cargo_lambda),
            "lambda",
            "watch",
            "--ignore-changes",
            "--invoke-address",
            "127.0.0.1",
            "--invoke-port",
            str(port),
            "--timeout",
            "600",
        ]
        for name, value in env_vars.items():
            args += ["--env-var", f"{name}={value}"]
        # The function's AWS settings come from --env-var only: nothing leaks in from the
        # caller's environment.
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PROFLAKE_"))}
        env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
        self.log_path = log_path
        self.log_file = open(log_path, "wb")
        self.proc = subprocess.Popen(
            args,
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self.log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.port = port

    def wait_listening(self, deadline: float) -> None:
        while True:
            if self.proc.poll() is not None:
                raise Failure(f"cargo lambda watch exited ({self.proc.returncode}):\n{self.tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    raise Failure(f"cargo lambda watch never listened:\n{self.tail()}")
                time.sleep(0.2)

    def invoke(self, data_file: Path, deadline: float) -> dict:
        """Invokes until the function answers (it may still be compiling)."""
        attempt = 0
        while True:
            attempt += 1
            if self.proc.poll() is not None:
                raise Failure(f"cargo lambda watch exited ({self.proc.returncode}):\n{self.tail()}")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Failure(f"the function never answered:\n{self.tail()}")
            run = subprocess.run(
                [
                    str(self.cargo_lambda),
                    "lambda",
                    "invoke",
                    "convert",
                    "--data-file",
                    str(data_file),
                    "--invoke-address",
                    "127.0.0.1",
                    "--invoke-port",
                    str(self.port),
                    "--output-format",
                    "json",
                ],
                cwd=REPO,
                capture_output=True,
                timeout=remaining,
            )
            out = run.stdout.decode(errors="replace").strip()
            if run.returncode == 0:
                try:
                    return json.loads(out)
                except json.JSONDecodeError:
                    raise Failure(f"invoke printed no JSON: {out!r}")
            err = run.stderr.decode(errors="replace").strip()
            log(f"invoke attempt {attempt} failed (retrying): {err or out}"[:500])
            time.sleep(min(5, max(0.5, deadline - time.monotonic())))

    def tail(self, lines: int = 60) -> str:
        self.log_file.flush()
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            except ProcessLookupError:
                pass
        else:
            # watch is gone; make sure the function it ran is too.
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.log_file.close()


def post(url: str, body: bytes, headers: dict[str, str], deadline: float) -> tuple[int, dict, bytes]:
    """POSTs to the function URL, retrying while the function is still being built."""
    import urllib.error
    import urllib.request

    while True:
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise Failure(f"{url} never answered")
        try:
            with urllib.request.urlopen(request, timeout=remaining) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as e:
            # The emulator answers 5xx while the function compiles or starts.
            if e.code < 500:
                return e.code, dict(e.headers), e.read()
            log(f"{url}: {e.code}, retrying")
        except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
            log(f"{url}: {e}, retrying")
        time.sleep(2)


def ingest_through_url(s3, sqs, queue_url: str, queue_arn: str, watch: "Watch", work: Path, deadline: float) -> str:
    import gzip
    import urllib.request

    base = f"http://127.0.0.1:{watch.port}/lambda-url/ingest"
    request = OTLP_SAMPLE.read_bytes()
    headers = {
        "Content-Type": "application/x-protobuf",
        "Content-Encoding": "gzip",
        "Authorization": f"Bearer {INGEST_TOKEN}",
    }
    status, answer_headers, answer = post(f"{base}/v1development/profiles", gzip.compress(request), headers, deadline)
    if status != 200 or answer != b"":
        raise Failure(f"OTLP post: {status} {answer!r} (watch log:\n{watch.tail()})")
    stored = s3.list_objects_v2(Bucket=UPLOADS_BUCKET, Prefix="uploads/otlp/").get("Contents", [])
    otlp_keys = [o["Key"] for o in stored]
    if len(otlp_keys) != 1 or not otlp_keys[0].endswith(".otlp"):
        raise Failure(f"expected one OTLP upload (its resource names no service: no sidecar), found {otlp_keys}")
    otlp_key = otlp_keys[0]
    body = s3.get_object(Bucket=UPLOADS_BUCKET, Key=otlp_key)["Body"].read()
    if gzip.decompress(body) != request:
        raise Failure("the stored upload is not the request as sent")
    unauthorized, headers_401, _ = post(
        f"{base}/v1development/profiles", request, {"Content-Type": "application/x-protobuf"}, deadline
    )
    if unauthorized != 401 or not any(k.lower() == "www-authenticate" for k in headers_401):
        raise Failure(f"a request without the token got {unauthorized}, {headers_401}")
    # Pyroscope's ingest API: a pprof with a service and labels, so a sidecar before the upload.
    status, _, answer = post(
        f"{base}/ingest?name=checkout%7Bregion%3Deu%7D&format=pprof",
        SAMPLE.read_bytes(),
        {"Authorization": f"Bearer {INGEST_TOKEN}"},
        deadline,
    )
    if status != 200:
        raise Failure(f"ingest post: {status} {answer!r}")
    stored = s3.list_objects_v2(Bucket=UPLOADS_BUCKET, Prefix="uploads/pyroscope/").get("Contents", [])
    keys = sorted(o["Key"] for o in stored)
    if len(keys) != 2 or keys[1] != keys[0] + ".metadata.json":
        raise Failure(f"expected a pprof upload and its sidecar, found {keys}")
    pprof_key = keys[0]

    # The three notifications (OTLP upload; the sidecar, then the pprof), converted as the
    # queue delivers them: each upload once, the sidecar found already read.
    messages = receive(sqs, queue_url, 3)
    from urllib.parse import unquote_plus

    notified = sorted(
        unquote_plus(r["s3"]["object"]["key"])
        for m in messages
        for r in json.loads(m["Body"]).get("Records", [])
    )
    if notified != sorted([otlp_key, pprof_key, pprof_key + ".metadata.json"]):
        raise Failure(f"notifications for {notified}")
    event_file = work / "ingest_event.json"
    event_file.write_text(json.dumps(sqs_event(messages, queue_arn)))
    response = watch.invoke(event_file, deadline)
    if response.get("batchItemFailures") != []:
        raise Failure(f"convert of the ingested uploads: {response}")
    for m in messages:
        sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"])
    listed = s3.list_objects_v2(Bucket=OUTPUT_BUCKET, Prefix="converted/").get("Contents", [])
    manifests = [
        json.loads(s3.get_object(Bucket=OUTPUT_BUCKET, Key=o["Key"])["Body"].read())
        for o in listed
        if o["Key"].endswith("/manifest.json")
    ]
    by_key = {}
    for m in manifests:
        by_key.setdefault(m["source"]["key"], []).append(m)
    if len(by_key.get(otlp_key, [])) != 1 or len(by_key.get(pprof_key, [])) != 1:
        raise Failure(f"expected one manifest each of {otlp_key} and {pprof_key}: {sorted(by_key)}")
    if not by_key[pprof_key][0]["source"].get("metadata_etag"):
        raise Failure(f"the manifest of {pprof_key} names no sidecar it read")
    # The sidecar's notification, handled beside its upload's, converted nothing: the upload
    # names the sidecar's ETag in its object metadata.
    head = s3.head_object(Bucket=UPLOADS_BUCKET, Key=pprof_key)
    if "sidecar-etag" not in head["Metadata"]:
        raise Failure(f"the upload names no sidecar: {head['Metadata']}")
    skipped = [
        line for line in watch.tail(400).splitlines() if "sidecar_already_read" in line
    ]
    if len(skipped) != 1:
        raise Failure(f"expected the sidecar's notification skipped once:\n{watch.tail(80)}")
    key = f"{otlp_key} and {pprof_key}"

    # A file too large for a request: a presigned PUT straight into the bucket.
    ask = json.dumps({"name": "big trace.pftrace", "service": "checkout", "release": "9.9"}).encode()
    status, _, answer = post(
        f"{base}/v1/uploads",
        ask,
        {"Content-Type": "application/json", "Authorization": INGEST_TOKEN},
        deadline,
    )
    if status != 200:
        raise Failure(f"/v1/uploads: {status} {answer!r}")
    plan = json.loads(answer)
    # A content type of its own: urllib's default (a form) makes moto parse the body as one.
    put_headers = {**plan["headers"], "Content-Type": "application/octet-stream"}
    put = urllib.request.Request(plan["url"], data=SAMPLE.read_bytes(), headers=put_headers, method="PUT")
    with urllib.request.urlopen(put, timeout=30) as response:
        if response.status != 200:
            raise Failure(f"the presigned PUT got {response.status}")
    head = s3.head_object(Bucket=UPLOADS_BUCKET, Key=plan["key"])
    if head["Metadata"] != {"service": "checkout", "release": "9.9"}:
        raise Failure(f"the presigned upload's metadata is {head['Metadata']}")
    # Its notification, left for the queue: drained so that nothing else reads it.
    for m in receive(sqs, queue_url, 1):
        sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"])
    return f"ingest: {key} stored with its sidecar and converted once; presigned PUT to {plan['key']}"


def check_outputs(s3, upload: bytes) -> tuple[dict, int]:
    etag = hashlib.md5(upload).hexdigest()
    listed = s3.list_objects_v2(Bucket=OUTPUT_BUCKET, Prefix="converted/").get("Contents", [])
    manifests = []
    for obj in listed:
        if obj["Key"].endswith("/manifest.json"):
            body = s3.get_object(Bucket=OUTPUT_BUCKET, Key=obj["Key"])["Body"].read()
            manifests.append(json.loads(body))
    mine = [m for m in manifests if m["source"]["key"] == UPLOAD_KEY]
    if len(mine) != 1:
        raise Failure(
            f"expected one manifest for {UPLOAD_KEY!r} in the output bucket, found "
            f"{[m['source']['key'] for m in manifests]}"
        )
    manifest = mine[0]
    if manifest["source"]["etag"] != etag:
        raise Failure(f"manifest etag {manifest['source']['etag']} is not the upload's {etag}")
    if manifest["profile"]["samples_written"] <= 0:
        raise Failure("the manifest lists no samples written")
    for output in manifest["outputs"]:
        body = s3.get_object(Bucket=OUTPUT_BUCKET, Key=output["key"])["Body"].read()
        if hashlib.sha256(body).hexdigest() != output["sha256"]:
            raise Failure(f"{output['key']}: sha256 differs from the manifest's")
    return manifest, len(manifest["outputs"])


def run(timeout: float, work: Path) -> str:
    deadline = time.monotonic() + timeout
    moto = Moto()
    watch = None
    try:
        log(f"moto on {moto.endpoint}")
        s3, sqs = clients(moto.endpoint)
        queue_url, queue_arn = set_up(s3, sqs)
        upload = SAMPLE.read_bytes()
        s3.put_object(
            Bucket=UPLOADS_BUCKET,
            Key=UPLOAD_KEY,
            Body=upload,
            Metadata={"release": "report-sample@1.0.0", "environment": "ci"},
        )
        messages = receive(sqs, queue_url, 2)
        bodies = [json.loads(m["Body"]) for m in messages]
        if not any(b.get("Event") == "s3:TestEvent" for b in bodies):
            raise Failure(f"no s3:TestEvent among {bodies}")
        if not any("Records" in b for b in bodies):
            raise Failure(f"no object notification among {bodies}")
        event_file = work / "event.json"
        event_file.write_text(json.dumps(sqs_event(messages, queue_arn), indent=2))

        port = free_port()
        env_vars = {
            "AWS_ENDPOINT_URL": moto.endpoint,
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_REGION": REGION,
            "PROFLAKE_OUTPUT_BUCKET": OUTPUT_BUCKET,
            "PROFLAKE_LOG": "info",
            # The ingest function's.
            "PROFLAKE_UPLOAD_BUCKET": UPLOADS_BUCKET,
            "PROFLAKE_INGEST_TOKEN": INGEST_TOKEN,
        }
        watch = Watch(port, env_vars, work / "watch.log")
        watch.wait_listening(deadline)
        log(f"cargo lambda watch on 127.0.0.1:{port}; invoking convert")
        started = time.monotonic()
        response = watch.invoke(event_file, deadline)
        elapsed = time.monotonic() - started
        if response.get("batchItemFailures") != []:
            raise Failure(f"response {response} (watch log:\n{watch.tail()})")
        manifest, outputs = check_outputs(s3, upload)
        # What the event source mapping does after a successful batch.
        for m in messages:
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"])
        ingested = ingest_through_url(s3, sqs, queue_url, queue_arn, watch, work, deadline)
        return (
            f"{len(messages)} messages (s3:TestEvent + {UPLOAD_KEY!r}) -> batchItemFailures [], "
            f"{manifest['source']['format']} upload converted to {outputs} outputs + manifest "
            f"({manifest['profile']['samples_written']} samples) in {elapsed:.1f} s; {ingested}"
        )
    finally:
        if watch is not None:
            watch.stop()
        moto.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timeout", type=float, default=900, help="overall limit, seconds")
    parser.add_argument("--keep", action="store_true", help="keep the work dir (event, log)")
    args = parser.parse_args()

    def on_alarm(signum, frame):
        raise Timeout(f"gave up after {args.timeout:.0f} s")

    signal.signal(signal.SIGALRM, on_alarm)
    # A hard stop a little after the soft deadline every step checks.
    signal.alarm(int(args.timeout) + 30)
    work = Path(tempfile.mkdtemp(prefix="lambda_watch."))
    try:
        summary = run(args.timeout, work)
    except (Failure, MotoError, Timeout, subprocess.TimeoutExpired) as e:
        print(f"lambda_watch: FAIL: {e}", file=sys.stderr)
        print(f"lambda_watch: work dir {work}", file=sys.stderr)
        return 1
    finally:
        signal.alarm(0)
    if args.keep:
        print(f"lambda_watch: kept {work}", file=sys.stderr)
    else:
        for path in sorted(work.iterdir()):
            path.unlink()
        work.rmdir()
    print(f"lambda_watch: PASS: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
