//! A moto server of our own: one process per test, on a port the kernel picks, killed on drop.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use crate::repo_path;

/// How long moto may take to start (Python imports; two tests may start theirs at once on a
/// loaded 2-core machine).
const STARTUP: Duration = Duration::from_secs(60);

/// A running `moto_server`. Dropping it kills the process.
pub struct Moto {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub endpoint: String,
    /// The port it listens on.
    pub port: u16,
}

/// `moto_server`: `$PROFLAKE_MOTO_SERVER`, else the workspace's `.venv/bin/moto_server`.
pub fn moto_server_path() -> PathBuf {
    let path = std::env::var_os("PROFLAKE_MOTO_SERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_path(".venv/bin/moto_server"));
    assert!(
        path.is_file(),
        "moto_server not found at {} (set PROFLAKE_MOTO_SERVER, or run scripts/test.sh, which \
         installs moto into .venv)",
        path.display()
    );
    path
}

impl Moto {
    /// Starts moto on `127.0.0.1:0` and reads the port it bound from its start-up line, so
    /// tests starting servers at the same time never race for a port.
    pub fn start() -> Moto {
        let path = moto_server_path();
        // moto_site/sitecustomize.py silences the per-request log.
        let mut python_path = std::ffi::OsString::from(repo_path("tests/e2e/moto_site"));
        if let Some(inherited) = std::env::var_os("PYTHONPATH").filter(|p| !p.is_empty()) {
            python_path.push(":");
            python_path.push(inherited);
        }
        let mut child = Command::new(&path)
            .args(["-H", "127.0.0.1", "-p", "0"])
            .env("PYTHONPATH", python_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", path.display()));
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, rx) = mpsc::channel();
        // Reads moto's log for its port, then keeps draining it so moto never blocks on a
        // full pipe. Ends when moto exits.
        thread::spawn(move || {
            let mut lines = BufReader::new(stderr);
            let mut line = Vec::new();
            let mut sent = false;
            loop {
                line.clear();
                match lines.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                if !sent {
                    let text = String::from_utf8_lossy(&line);
                    if let Some(port) = text
                        .split("Running on http://127.0.0.1:")
                        .nth(1)
                        .and_then(|rest| rest.trim().parse::<u16>().ok())
                    {
                        let _ = tx.send(Ok(port));
                        sent = true;
                    } else {
                        let _ = tx.send(Err(text.into_owned()));
                    }
                }
            }
            let mut rest = Vec::new();
            let _ = lines.read_to_end(&mut rest);
        });
        let deadline = Instant::now() + STARTUP;
        let mut log = String::new();
        let port = loop {
            match rx.recv_timeout(Duration::from_millis(200)) {
                Ok(Ok(port)) => break port,
                Ok(Err(line)) => log.push_str(&line),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = child.wait();
                    panic!("moto_server exited before listening ({status:?}):\n{log}");
                }
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("moto_server did not listen within {STARTUP:?}:\n{log}");
            }
        };
        let moto = Moto {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
            port,
        };
        moto.wait_until_answering(deadline);
        moto
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until moto answers an HTTP request (it prints its address just before serving).
    fn wait_until_answering(&self, deadline: Instant) {
        loop {
            if let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) {
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let request =
                    "GET /moto-api/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
                let mut head = [0u8; 12];
                if stream.write_all(request.as_bytes()).is_ok()
                    && stream.read_exact(&mut head).is_ok()
                    && head.starts_with(b"HTTP/1.")
                {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "moto_server on port {} does not answer",
                self.port
            );
            thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
