//! A function's `main`: settings, logging, state, then the Lambda runtime's loop.

use std::time::Instant;

use aws_lambda_events::event::sqs::SqsEvent;
use lambda_runtime::{service_fn, LambdaEvent};

use crate::config::{Settings, Vars};
use crate::function::{function_handler, Function};
use crate::logging::init_logging;

/// Runs function `F` in Lambda: reads its settings from the environment (printing the refusal
/// and exiting before anything starts when they are invalid), sets up logging, builds its state,
/// logs `ready` with the time that took, and answers its batches until Lambda stops it.
pub fn run<F: Function>() -> Result<(), lambda_runtime::Error> {
    proflake::allocator::return_large_blocks();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(serve::<F>())
}

async fn serve<F: Function>() -> Result<(), lambda_runtime::Error> {
    // Cold-start time is worth seeing: it is paid by the first message of each instance.
    let started = Instant::now();
    let config = match F::Config::from_vars(&Vars::from_env()) {
        Ok(config) => config,
        Err(e) => {
            // Logging is not set up yet, and it is configured by the environment that failed.
            eprintln!("{}: {e}", F::NAME);
            std::process::exit(1);
        }
    };
    init_logging(config.common());
    let app = F::from_env(config).await;
    tracing::info!(init_ms = started.elapsed().as_millis() as u64, "ready");
    let app = &app;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| async move {
        function_handler(app, event).await
    }))
    .await
}
