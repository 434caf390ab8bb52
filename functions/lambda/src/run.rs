//! A function's `main`: settings, logging, state, then the Lambda runtime's loop.

use std::future::Future;
use std::time::Instant;

use aws_lambda_events::event::sqs::SqsEvent;
use lambda_runtime::{service_fn, LambdaEvent};

use crate::function::{function_handler, Function};
use crate::logging::init_logging;
use crate::settings::{FunctionConfig, OwnSettings};

/// The `main` of the function `name`: reads its settings from the environment (printing the
/// refusal and exiting before anything starts when they are invalid), sets up logging, builds
/// its state with `from_env`, logs `ready` with the time that took, and answers its batches
/// until Lambda stops it.
pub fn run<S, F, Fut>(
    name: &str,
    from_env: impl FnOnce(FunctionConfig<S>) -> Fut,
) -> Result<(), lambda_runtime::Error>
where
    S: OwnSettings,
    F: Function,
    Fut: Future<Output = F>,
{
    proflake::return_large_blocks();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // Cold-start time is worth seeing: it is paid by the first message of each instance.
    let started = Instant::now();
    let config = match FunctionConfig::<S>::from_env() {
        Ok(config) => config,
        Err(e) => {
            // Logging is not set up yet, and it is configured by the environment that failed.
            eprintln!("{name}: {e}");
            std::process::exit(1);
        }
    };
    init_logging(&config.common);
    runtime.block_on(async {
        let app = from_env(config).await;
        tracing::info!(init_ms = started.elapsed().as_millis() as u64, "ready");
        let app = &app;
        lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| async move {
            function_handler(app, event).await
        }))
        .await
    })
}
