//! A function's work run off the async runtime, and what became of it when it failed.

use std::time::Instant;

use tokio::task::JoinError;

/// How work run off the runtime failed; either way a retry of its message may succeed.
#[derive(Debug)]
pub enum Failure {
    /// It returned an error.
    Error(proflake::Error),
    /// It panicked.
    Panic(JoinError),
}

impl Failure {
    /// The failure's reason, as metrics and logs name it: the error kind's, or `panic`.
    pub fn reason(&self) -> &'static str {
        match self {
            Failure::Error(e) => e.kind().reason(),
            Failure::Panic(_) => "panic",
        }
    }

    /// What a blocking task returned, its panic a failure like its error.
    pub fn joined<R>(joined: Result<proflake::Result<R>, JoinError>) -> Result<R, Failure> {
        match joined {
            Ok(Ok(done)) => Ok(done),
            Ok(Err(e)) => Err(Failure::Error(e)),
            Err(panic) => Err(Failure::Panic(panic)),
        }
    }
}

/// Runs `work` on Tokio's blocking threads, inside the caller's span: conversion is CPU-bound
/// and S3 stores block on the runtime, so neither may run on a worker. Returns what the work
/// made, or how it failed, and how long it took in milliseconds.
pub async fn off_runtime<R: Send + 'static>(
    work: impl FnOnce() -> proflake::Result<R> + Send + 'static,
) -> (Result<R, Failure>, u64) {
    let started = Instant::now();
    let span = tracing::Span::current();
    let job = tokio::task::spawn_blocking(move || {
        let _span = span.enter();
        work()
    });
    let result = Failure::joined(job.await);
    (result, started.elapsed().as_millis() as u64)
}

/// Counts a [`Failure`] of a message's work in a [`Tally`](crate::Tally) and logs it at ERROR:
/// the context fields given, then `reason`, `transient` (errors only), `duration_ms` and
/// `error`, with the message for an error or the one for a panic.
///
/// ```
/// # proflake_lambda::counters! { struct Counts { failures, failed_messages: Count "FailedMessages" } }
/// # async fn object(message_id: &str, bucket: &str, key: &str, tally: &mut Counts) -> bool {
/// let (result, duration_ms) = proflake_lambda::off_runtime(|| Ok(())).await;
/// match result {
///     Ok(()) => true,
///     Err(failure) => {
///         proflake_lambda::work_failed!(
///             tally,
///             &failure,
///             duration_ms,
///             [message_id, bucket, key],
///             "object failed; the message will be retried",
///             "conversion panicked; the message will be retried",
///         );
///         false
///     }
/// }
/// # }
/// ```
#[macro_export]
macro_rules! work_failed {
    ($tally:expr, $failure:expr, $duration_ms:expr, [$($context:tt)+],
        $failed:literal, $panicked:literal $(,)?) => {{
        let failure: &$crate::Failure = $failure;
        let duration_ms: u64 = $duration_ms;
        $crate::Tally::fail($tally, failure.reason());
        match failure {
            $crate::Failure::Error(e) => $crate::__private::tracing::error!(
                $($context)+,
                reason = e.kind().reason(),
                transient = e.kind().is_transient(),
                duration_ms,
                error = $crate::__private::error_chain(e),
                $failed
            ),
            $crate::Failure::Panic(panic) => $crate::__private::tracing::error!(
                $($context)+,
                reason = "panic",
                duration_ms,
                error = %panic,
                $panicked
            ),
        }
    }};
}
