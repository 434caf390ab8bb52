//! The ingest function: proflake's HTTP receiver ([`proflake::receive`]) behind a Lambda
//! function URL. OTLP/HTTP and Pyroscope requests are read, checked and written into the
//! uploads bucket as ordinary uploads, which the bucket's notification then sends to the
//! convert function; `POST /v1/uploads` hands out presigned PUT URLs for files larger than a
//! function URL takes. `docs/ingest.md` describes the protocol, `docs/deploy.md` the function.

#![warn(missing_docs)]

mod app;
mod config;
mod tally;

pub use app::App;
pub use config::{Auth, Config, IngestSettings, DEFAULT_FUNCTION_NAME};
pub use tally::RequestTally;

use std::sync::Arc;
use std::time::Instant;

/// The function's `main`: settings, logging, the token, then the runtime's loop.
pub fn run() -> Result<(), lambda_http::Error> {
    proflake::return_large_blocks();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let started = Instant::now();
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("ingest: {e}");
            std::process::exit(1);
        }
    };
    proflake_lambda::init_logging(&config.common);
    runtime.block_on(async {
        let app = match App::from_env(config).await {
            Ok(app) => Arc::new(app),
            Err(e) => {
                tracing::error!(error = %e, "the function cannot start");
                std::process::exit(1);
            }
        };
        tracing::info!(init_ms = started.elapsed().as_millis() as u64, "ready");
        lambda_http::run(lambda_http::service_fn(move |request| {
            let app = Arc::clone(&app);
            async move { Ok::<_, std::convert::Infallible>(app.handle(request).await) }
        }))
        .await
    })
}
