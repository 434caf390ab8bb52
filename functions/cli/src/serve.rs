//! `proflake serve`: the HTTP receiver over a local store directory. Requests are read and
//! stored by the library's [`Receiver`]; each upload they write is converted in the background
//! as `proflake process` would, from a bounded queue (a request that would overfill it is
//! answered 503 with `Retry-After`, before anything is stored).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;
use clap::Args;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use proflake::receive::Receiver;
use proflake::{error_chain, process_upload, store::LocalDirStore, Outcome, ProcessOptions};

/// A response as the receiver gives it: status, headers and the whole body.
type Response = hyper::http::Response<Vec<u8>>;

/// The variable that holds the token clients must present.
const TOKEN_VARIABLE: &str = "PROFLAKE_INGEST_TOKEN";

/// Seconds a client is asked to wait when the conversion queue is full.
const BUSY_RETRY_AFTER_SECS: u32 = 1;

/// How long a request waits for its turn to be read before it is answered 503.
const TURN_WAIT: Duration = Duration::from_secs(5);

/// How long requests in flight may take to finish once a shutdown is asked for.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

#[derive(Args)]
pub(crate) struct ServeArgs {
    /// Directory that mirrors the bucket: uploads go to DIR/uploads/.
    #[arg(long)]
    store: PathBuf,
    /// Address and port to listen on (port 0: any free port, printed at start).
    #[arg(long, default_value = "127.0.0.1:4318")]
    listen: SocketAddr,
    /// File whose first line is the token clients must present (default: the
    /// PROFLAKE_INGEST_TOKEN variable). Without a token, only a loopback address is served.
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Store uploads without converting them.
    #[arg(long)]
    no_convert: bool,
    /// Most uploads waiting for conversion; a request that would pass it is answered 503.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..))]
    queue: u64,
    /// Threads converting uploads.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64))]
    workers: u64,
    /// Most requests whose bodies are read and checked at once (default: twice the cores).
    /// Each may hold up to max_request_bytes as sent and as much again inflated, so this bounds
    /// the memory requests take; the others wait their turn (5 s at most, then 503).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=4096))]
    max_reading: Option<u64>,
}

pub(crate) fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let token = token(&args)?;
    if token.is_none() {
        anyhow::ensure!(
            args.listen.ip().is_loopback(),
            "no token: set {TOKEN_VARIABLE} or --token-file to listen on {}, which is not a \
             loopback address",
            args.listen
        );
        eprintln!("warning: no token ({TOKEN_VARIABLE} or --token-file): serving loopback only, to anyone on this machine");
    }
    let limits = crate::limits()?;
    let store = Arc::new(LocalDirStore::new(&args.store));
    let conversions = (!args.no_convert).then(|| {
        Conversions::start(
            Arc::clone(&store),
            ProcessOptions {
                limits: limits.clone(),
                ..ProcessOptions::default()
            },
            args.queue as usize,
            args.workers as usize,
        )
    });
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let reading = args.max_reading.map_or(2 * cores, |n| n as usize);
    let state = Arc::new(State {
        reading: Arc::new(tokio::sync::Semaphore::new(reading)),
        receiver: Receiver::new(token.as_deref(), limits),
        store,
        conversions,
        requests: AtomicU64::new(0),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    runtime.block_on(listen(args.listen, Arc::clone(&state)))?;
    drop(runtime);
    let state = Arc::into_inner(state).context("requests still hold the server's state")?;
    if let Some(conversions) = state.conversions {
        conversions.finish();
    }
    eprintln!(
        "proflake serve: stopped after {} requests",
        state.requests.load(Ordering::Relaxed)
    );
    Ok(ExitCode::SUCCESS)
}

/// The token from --token-file, else the variable; `None` when neither gives one.
fn token(args: &ServeArgs) -> anyhow::Result<Option<String>> {
    let text = match &args.token_file {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the token file {}", path.display()))?,
        None => std::env::var(TOKEN_VARIABLE).unwrap_or_default(),
    };
    let token = text.lines().next().unwrap_or("").trim().to_string();
    if args.token_file.is_some() && token.is_empty() {
        anyhow::bail!("the token file holds no token");
    }
    Ok((!token.is_empty()).then_some(token))
}

struct State {
    /// Turns to read and check a request: bounds the bodies held at once.
    reading: Arc<tokio::sync::Semaphore>,
    receiver: Receiver,
    store: Arc<LocalDirStore>,
    conversions: Option<Conversions>,
    requests: AtomicU64,
}

/// Accepts connections until SIGTERM or SIGINT, then lets the requests in flight finish.
async fn listen(address: SocketAddr, state: Arc<State>) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("cannot listen on {address}"))?;
    let local = listener.local_addr()?;
    eprintln!("proflake serve: listening on http://{local}");
    let graceful = GracefulShutdown::new();
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, _) = match accepted {
                    Ok(connection) => connection,
                    Err(e) => {
                        tracing::warn!(error = %e, "accepting a connection failed");
                        continue;
                    }
                };
                let state = Arc::clone(&state);
                let service = service_fn(move |request| handle(Arc::clone(&state), request));
                let connection = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service);
                let connection = graceful.watch(connection);
                tokio::spawn(async move {
                    if let Err(e) = connection.await {
                        tracing::debug!(error = %e, "connection ended with an error");
                    }
                });
            }
            _ = terminate.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    drop(listener);
    eprintln!("proflake serve: shutting down; finishing the requests in flight");
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        eprintln!("proflake serve: requests still in flight after {SHUTDOWN_GRACE:?}; stopping");
    }
    Ok(())
}

/// One request: its body read within the limit, then read, stored and queued for conversion
/// off the runtime (the store is blocking I/O).
async fn handle(
    state: Arc<State>,
    request: hyper::Request<Incoming>,
) -> Result<hyper::Response<Full<Bytes>>, std::convert::Infallible> {
    state.requests.fetch_add(1, Ordering::Relaxed);
    let (head, body) = request.into_parts();
    let max = state.receiver.max_body_bytes();
    let declared = head
        .headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|length| length > max) {
        return Ok(closing(into_hyper(state.receiver.too_large(&head))));
    }
    // A turn before the body is read, so no more bodies are held than there are turns.
    let turn = Arc::clone(&state.reading).acquire_owned();
    let Ok(Ok(turn)) = tokio::time::timeout(TURN_WAIT, turn).await else {
        return Ok(into_hyper(
            state.receiver.busy(&head, BUSY_RETRY_AFTER_SECS),
        ));
    };
    let limit = usize::try_from(max).unwrap_or(usize::MAX);
    let body = match Limited::new(body, limit).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                return Ok(closing(into_hyper(state.receiver.too_large(&head))));
            }
            tracing::debug!(error = %e, "reading a request body failed");
            let mut response = hyper::Response::new(Full::new(Bytes::new()));
            *response.status_mut() = hyper::StatusCode::BAD_REQUEST;
            return Ok(response);
        }
    };
    let response = tokio::task::spawn_blocking(move || {
        let response = receive(&state, &head, &body);
        drop(turn);
        response
    })
    .await
    .unwrap_or_else(|e| {
        tracing::error!(error = %e, "a request's handler failed");
        let mut response = Response::new(Vec::new());
        *response.status_mut() = hyper::StatusCode::INTERNAL_SERVER_ERROR;
        response
    });
    Ok(into_hyper(response))
}

fn receive(state: &State, head: &hyper::http::request::Parts, body: &[u8]) -> Response {
    let accepted = match state.receiver.read(head, body) {
        Ok(accepted) => accepted,
        Err(refused) => return *refused,
    };
    let reserved = accepted.upload_count();
    if let Some(conversions) = &state.conversions {
        if !conversions.reserve(reserved) {
            return state.receiver.busy(head, BUSY_RETRY_AFTER_SECS);
        }
    }
    let stored = state.receiver.store(state.store.as_ref(), head, &accepted);
    if let Some(conversions) = &state.conversions {
        // A retry's uploads are queued too: their conversion finds itself done.
        conversions.release(reserved - stored.keys.len());
        for key in stored.keys {
            conversions.send(key);
        }
    }
    stored.response
}

/// `response` to a request whose body is left unread: the connection cannot carry another.
fn closing(mut response: hyper::Response<Full<Bytes>>) -> hyper::Response<Full<Bytes>> {
    response.headers_mut().insert(
        hyper::header::CONNECTION,
        hyper::header::HeaderValue::from_static("close"),
    );
    response
}

fn into_hyper(response: Response) -> hyper::Response<Full<Bytes>> {
    response.map(|body| Full::new(Bytes::from(body)))
}

/// The background conversion of stored uploads: a queue bounded by reservation, and the
/// threads that empty it.
struct Conversions {
    sender: Mutex<Option<mpsc::Sender<String>>>,
    waiting: Arc<AtomicUsize>,
    capacity: usize,
    workers: Vec<std::thread::JoinHandle<()>>,
}

impl Conversions {
    fn start(
        store: Arc<LocalDirStore>,
        options: ProcessOptions,
        capacity: usize,
        workers: usize,
    ) -> Conversions {
        let (sender, receiver) = mpsc::channel::<String>();
        let receiver = Arc::new(Mutex::new(receiver));
        let waiting = Arc::new(AtomicUsize::new(0));
        let workers = (0..workers)
            .map(|_| {
                let (store, options) = (Arc::clone(&store), options.clone());
                let (receiver, waiting) = (Arc::clone(&receiver), Arc::clone(&waiting));
                std::thread::spawn(move || loop {
                    let next = receiver.lock().expect("queue lock").recv();
                    let Ok(key) = next else { break };
                    convert(store.as_ref(), &key, &options);
                    waiting.fetch_sub(1, Ordering::AcqRel);
                })
            })
            .collect();
        Conversions {
            sender: Mutex::new(Some(sender)),
            waiting,
            capacity,
            workers,
        }
    }

    /// Takes room for `n` uploads in the queue, if there is room for all of them.
    fn reserve(&self, n: usize) -> bool {
        self.waiting
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |waiting| {
                (waiting + n <= self.capacity).then_some(waiting + n)
            })
            .is_ok()
    }

    /// Gives back room taken for uploads that were not queued (the store failed).
    fn release(&self, n: usize) {
        if n > 0 {
            self.waiting.fetch_sub(n, Ordering::AcqRel);
        }
    }

    /// Queues a stored upload, in room reserved for it.
    fn send(&self, key: String) {
        if let Some(sender) = self.sender.lock().expect("queue lock").as_ref() {
            // The workers only stop once the sender is dropped, so the send cannot fail.
            let _ = sender.send(key);
        }
    }

    /// Converts what is queued, then stops the threads.
    fn finish(self) {
        let waiting = self.waiting.load(Ordering::Acquire);
        if waiting > 0 {
            eprintln!("proflake serve: converting the {waiting} queued uploads");
        }
        drop(self.sender.lock().expect("queue lock").take());
        for worker in self.workers {
            let _ = worker.join();
        }
    }
}

/// Converts one stored upload as `proflake process` does, and logs what became of it.
fn convert(store: &LocalDirStore, key: &str, options: &ProcessOptions) {
    match process_upload(store, store, key, options) {
        Ok(Outcome::Converted(converted)) => {
            tracing::info!(key, source_id = %converted.source_id, "converted")
        }
        Ok(Outcome::Quarantined(quarantine)) => {
            tracing::warn!(key, reason = %quarantine.reason, "quarantined")
        }
        Ok(outcome) => tracing::info!(key, outcome = ?outcome, "not converted"),
        Err(e) => tracing::error!(key, error = %error_chain(&e), "conversion failed"),
    }
}
