//! A tiny HTTP fault proxy between the handler's S3 client and moto.
//!
//! It runs on its own thread and runtime, so a handler that blocks its own runtime's threads
//! cannot starve it. Switching the mode cuts every open connection, so pooled keep-alive
//! connections opened in one mode never carry requests of the next.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;

/// What the proxy does with each connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Forward to moto.
    Pass,
    /// Answer every request `503 Slow Down` with S3's XML error body, then close.
    Error503,
    /// Accept, then close without a word.
    Drop,
}

struct Inner {
    mode: Fault,
    open: Vec<AbortHandle>,
}

struct State {
    /// The mode and the connections open, under one lock so a connection accepted while the
    /// mode changes is either cut or served in the new mode.
    inner: Mutex<Inner>,
    upstream: SocketAddr,
    passed: AtomicU64,
    errors_served: AtomicU64,
    dropped: AtomicU64,
}

/// The proxy. Dropping it stops it and closes its connections.
pub struct FaultProxy {
    /// `http://127.0.0.1:<port>`, the endpoint to give the S3 client.
    pub endpoint: String,
    state: Arc<State>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<thread::JoinHandle<()>>,
}

const SLOW_DOWN: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code>\
<Message>Please reduce your request rate.</Message><RequestId>E2EFAULT</RequestId>\
<HostId>e2e-fault-proxy</HostId></Error>";

impl FaultProxy {
    /// A proxy to `upstream_port` on 127.0.0.1, starting in `mode`.
    pub fn start(upstream_port: u16, mode: Fault) -> FaultProxy {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        std_listener.set_nonblocking(true).unwrap();
        let port = std_listener.local_addr().unwrap().port();
        let state = Arc::new(State {
            inner: Mutex::new(Inner {
                mode,
                open: Vec::new(),
            }),
            upstream: SocketAddr::from(([127, 0, 0, 1], upstream_port)),
            passed: AtomicU64::new(0),
            errors_served: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread_state = state.clone();
        let thread = thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("proxy runtime");
            runtime.block_on(async move {
                let listener = TcpListener::from_std(std_listener).expect("proxy listener");
                let accept = async {
                    loop {
                        let Ok((client, _)) = listener.accept().await else {
                            continue;
                        };
                        let mut inner = thread_state.inner.lock().unwrap();
                        let task = tokio::spawn(serve(thread_state.clone(), client, inner.mode));
                        inner.open.retain(|t| !t.is_finished());
                        inner.open.push(task.abort_handle());
                    }
                };
                tokio::select! {
                    _ = accept => {}
                    _ = stopped => {}
                }
                for task in thread_state.inner.lock().unwrap().open.drain(..) {
                    task.abort();
                }
            });
        });
        FaultProxy {
            endpoint: format!("http://127.0.0.1:{port}"),
            state,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Switches the mode and closes every open connection.
    pub fn set_mode(&self, mode: Fault) {
        let mut inner = self.state.inner.lock().unwrap();
        inner.mode = mode;
        for task in inner.open.drain(..) {
            task.abort();
        }
    }

    /// Connections forwarded to moto so far.
    pub fn passed(&self) -> u64 {
        self.state.passed.load(Ordering::SeqCst)
    }

    /// Requests answered 503 so far.
    pub fn errors_served(&self) -> u64 {
        self.state.errors_served.load(Ordering::SeqCst)
    }

    /// Connections dropped so far.
    pub fn dropped(&self) -> u64 {
        self.state.dropped.load(Ordering::SeqCst)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(state: Arc<State>, mut client: TcpStream, mode: Fault) {
    match mode {
        Fault::Pass => {
            let Ok(mut upstream) = TcpStream::connect(state.upstream).await else {
                return;
            };
            state.passed.fetch_add(1, Ordering::SeqCst);
            let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
        }
        Fault::Drop => {
            state.dropped.fetch_add(1, Ordering::SeqCst);
            drop(client);
        }
        Fault::Error503 => {
            let _ =
                tokio::time::timeout(Duration::from_secs(10), slow_down(&state, &mut client)).await;
        }
    }
}

/// Reads one request (head and a `Content-Length` body), answers 503 Slow Down, closes.
async fn slow_down(state: &State, client: &mut TcpStream) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let head_end = loop {
        if let Some(i) = find(&buf, b"\r\n\r\n") {
            break i + 4;
        }
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let is_head = head.starts_with("HEAD ");
    let length: usize = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0);
    let mut body = buf.len() - head_end;
    while body < length {
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body += n;
    }
    let mut response = format!(
        "HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\
         x-amz-request-id: E2EFAULT\r\nConnection: close\r\n\r\n",
        SLOW_DOWN.len()
    );
    if !is_head {
        response.push_str(SLOW_DOWN);
    }
    client.write_all(response.as_bytes()).await?;
    state.errors_served.fetch_add(1, Ordering::SeqCst);
    client.shutdown().await?;
    // Let the client read the answer before the socket goes (and eat anything it still sends).
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        while let Ok(n) = client.read(&mut chunk).await {
            if n == 0 {
                break;
            }
        }
    })
    .await;
    Ok(())
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
