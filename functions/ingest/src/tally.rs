//! What one request did, counted for its log line and its metrics.

use std::collections::BTreeMap;

use proflake_lambda::{Metric, Tally};

/// Counts of one request (one invocation).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestTally {
    /// Requests answered (1).
    pub requests: u64,
    /// Bytes of the request body as sent.
    pub bytes: u64,
    /// Uploads written.
    pub uploads: u64,
    /// Presigned upload URLs handed out.
    pub upload_urls: u64,
    /// Refusals by reason: `bad_request`, `unauthorized`, `too_large`, ...
    pub failures: BTreeMap<String, u64>,
}

/// The reason a refusal with `status` is counted under.
pub fn refusal_reason(status: u16) -> String {
    match status {
        400 => "bad_request".into(),
        401 => "unauthorized".into(),
        404 => "not_found".into(),
        405 => "method_not_allowed".into(),
        413 => "too_large".into(),
        415 => "unsupported_media_type".into(),
        429 | 503 => "unavailable".into(),
        other => format!("status_{other}"),
    }
}

impl Tally for RequestTally {
    fn merge(&mut self, other: Self) {
        self.requests += other.requests;
        self.bytes += other.bytes;
        self.uploads += other.uploads;
        self.upload_urls += other.upload_urls;
        for (reason, n) in other.failures {
            *self.failures.entry(reason).or_default() += n;
        }
    }

    fn fail(&mut self, reason: &str) {
        *self.failures.entry(reason.to_owned()).or_default() += 1;
    }

    // A function URL has no batches: nothing is reported back as failed.
    fn set_failed_messages(&mut self, _: u64) {}

    fn metrics(&self) -> Vec<Metric> {
        vec![
            Metric::count("Requests", self.requests),
            Metric::bytes("RequestBytes", self.bytes),
            Metric::count("Uploads", self.uploads),
            Metric::count("UploadUrls", self.upload_urls),
            Metric::count("Refused", self.failures.values().sum()),
        ]
    }

    fn failures(&self) -> &BTreeMap<String, u64> {
        &self.failures
    }

    fn log_batch(&self, duration_ms: u64) {
        tracing::info!(
            bytes = self.bytes,
            uploads = self.uploads,
            upload_urls = self.upload_urls,
            refused = ?self.failures,
            duration_ms,
            "request done"
        );
    }
}
