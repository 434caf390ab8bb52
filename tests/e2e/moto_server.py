"""moto_server for the Python end-to-end tests: started on 127.0.0.1 on a port the kernel picks
(read from its start-up line), its log drained so it never blocks, killed by stop(). The Rust
tests start theirs the same way (tests/e2e/moto.rs)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"


class MotoError(RuntimeError):
    """moto_server is missing, did not start, or does not answer."""


class MotoServer:
    """A running moto_server; `endpoint` is its URL."""

    def __init__(self) -> None:
        server = Path(os.environ.get("PROFLAKE_MOTO_SERVER", VENV_BIN / "moto_server"))
        if not server.is_file():
            raise MotoError(
                f"moto_server not found at {server}: run scripts/test.sh, which installs moto into .venv"
            )
        env = dict(os.environ)
        # moto_site/sitecustomize.py silences the per-request log (as tests/e2e/moto.rs does).
        site = str(REPO / "tests" / "e2e" / "moto_site")
        env["PYTHONPATH"] = site + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.proc = subprocess.Popen(
            [str(server), "-H", "127.0.0.1", "-p", "0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
        )
        found = threading.Event()
        self.port = 0
        lines: list[str] = []

        def read() -> None:
            for raw in self.proc.stderr:  # keeps draining so moto never blocks on the pipe
                if not found.is_set():
                    line = raw.decode(errors="replace")
                    lines.append(line)
                    m = re.search(r"Running on http://127\.0\.0\.1:(\d+)", line)
                    if m:
                        self.port = int(m.group(1))
                        found.set()

        threading.Thread(target=read, daemon=True).start()
        deadline = time.monotonic() + 60
        while not found.wait(0.1):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise MotoError("moto_server did not start:\n" + "".join(lines))
        self.endpoint = f"http://127.0.0.1:{self.port}"
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise MotoError("moto_server does not answer")
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
