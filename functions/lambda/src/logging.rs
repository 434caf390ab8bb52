//! Log setup: structured lines on stdout, which Lambda sends to CloudWatch Logs.

use tracing_subscriber::EnvFilter;

use crate::config::{Config, LogFormat};

/// Installs the global tracing subscriber from `config`. A second call (tests) keeps the first.
pub fn init_logging(config: &Config) {
    // from_lookup checked the filter; fall back rather than run blind if it was built by hand.
    let filter = EnvFilter::try_new(&config.log_filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stdout)
        // CloudWatch shows escape codes as text.
        .with_ansi(false);
    let _ = match config.log_format {
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
        LogFormat::Text => builder.try_init(),
    };
}
