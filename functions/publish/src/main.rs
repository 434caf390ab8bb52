//! `publish`: the Lambda bootstrap. See the `proflake_publish` library for what it does.

use std::time::Instant;

use lambda_runtime::{run, service_fn, LambdaEvent};
use proflake_lambda::init_logging;
use proflake_publish::{function_handler, App, Config};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    proflake::allocator::return_large_blocks();
    let started = Instant::now();
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(e) => {
            // Logging is not set up yet, and it is configured by the environment that failed.
            eprintln!("publish: {e}");
            std::process::exit(1);
        }
    };
    init_logging(&config.common);
    let app = App::from_env(config).await;
    tracing::info!(init_ms = started.elapsed().as_millis() as u64, "ready");
    let app = &app;
    run(service_fn(move |event: LambdaEvent<_>| async move {
        function_handler(app, event).await
    }))
    .await
}
