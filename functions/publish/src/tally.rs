//! What one batch did, counted for its metrics.

use std::collections::BTreeMap;

use proflake::lake::{CompactReport, PublishReport};
use proflake_lambda::{Metric, Tally};

/// Counts of one batch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BatchTally {
    /// Manifests notified.
    pub manifests: u64,
    /// Object events that needed no work (keys other than manifests, other buckets).
    pub skipped: u64,
    /// Conversions whose rows were added (new, or replacing an earlier conversion's).
    pub uploads_published: u64,
    /// Of those, conversions that replaced rows of their key.
    pub uploads_replaced: u64,
    /// Keys without a conversion any more whose rows were removed.
    pub uploads_removed: u64,
    /// Keys already up to date.
    pub uploads_up_to_date: u64,
    /// Rows added.
    pub rows_published: u64,
    /// Data files added (publish and compaction).
    pub files_added: u64,
    /// Data files removed (publish and compaction).
    pub files_removed: u64,
    /// Commits made.
    pub commits: u64,
    /// Commits planned again after another writer committed first.
    pub commit_retries: u64,
    /// Manifests whose conversion is still settling its key (their messages come again).
    pub settling: u64,
    /// Conversions that cannot be published.
    pub quarantined: u64,
    /// Files vacuum deleted.
    pub files_vacuumed: u64,
    /// Longest time from a manifest's write to its commit.
    pub publish_lag_ms: u64,
    /// Messages reported back to SQS as failed.
    pub failed_messages: u64,
    /// Failures by reason (`invalid_event`, `lake`, `storage`, `unpublishable`, `panic`).
    pub failures: BTreeMap<String, u64>,
}

impl BatchTally {
    /// Counts one publish.
    pub fn record_publish(&mut self, r: &PublishReport) {
        self.uploads_published += r.published;
        self.uploads_replaced += r.replaced;
        self.uploads_removed += r.removed;
        self.uploads_up_to_date += r.up_to_date;
        self.rows_published += r.rows;
        self.files_added += r.files_added;
        self.files_removed += r.files_removed;
        self.commits += r.commits;
        self.commit_retries += r.commit_retries;
        self.settling += r.settling.len() as u64;
        for q in &r.quarantined {
            self.quarantined += 1;
            self.fail(&q.reason);
        }
        let lag = r.max_lag_ms.map_or(0, |ms| u64::try_from(ms).unwrap_or(0));
        self.publish_lag_ms = self.publish_lag_ms.max(lag);
    }

    /// Counts one compaction.
    pub fn record_compact(&mut self, r: &CompactReport) {
        self.files_added += r.files_added;
        self.files_removed += r.files_removed;
        self.commits += r.partitions_compacted;
        self.files_vacuumed += r.files_vacuumed;
    }
}

impl Tally for BatchTally {
    fn merge(&mut self, other: BatchTally) {
        self.manifests += other.manifests;
        self.skipped += other.skipped;
        self.uploads_published += other.uploads_published;
        self.uploads_replaced += other.uploads_replaced;
        self.uploads_removed += other.uploads_removed;
        self.uploads_up_to_date += other.uploads_up_to_date;
        self.rows_published += other.rows_published;
        self.files_added += other.files_added;
        self.files_removed += other.files_removed;
        self.commits += other.commits;
        self.commit_retries += other.commit_retries;
        self.settling += other.settling;
        self.quarantined += other.quarantined;
        self.files_vacuumed += other.files_vacuumed;
        self.publish_lag_ms = self.publish_lag_ms.max(other.publish_lag_ms);
        self.failed_messages += other.failed_messages;
        for (reason, n) in other.failures {
            *self.failures.entry(reason).or_default() += n;
        }
    }

    fn fail(&mut self, reason: &str) {
        *self.failures.entry(reason.to_owned()).or_default() += 1;
    }

    fn set_failed_messages(&mut self, n: u64) {
        self.failed_messages = n;
    }

    fn metrics(&self) -> Vec<Metric> {
        vec![
            Metric::count("Manifests", self.manifests),
            Metric::count("Skipped", self.skipped),
            Metric::count("UploadsPublished", self.uploads_published),
            Metric::count("UploadsReplaced", self.uploads_replaced),
            Metric::count("UploadsRemoved", self.uploads_removed),
            Metric::count("UploadsUpToDate", self.uploads_up_to_date),
            Metric::count("RowsPublished", self.rows_published),
            Metric::count("FilesAdded", self.files_added),
            Metric::count("FilesRemoved", self.files_removed),
            Metric::count("Commits", self.commits),
            Metric::count("CommitRetries", self.commit_retries),
            Metric::count("Settling", self.settling),
            Metric::count("Quarantined", self.quarantined),
            Metric::count("FilesVacuumed", self.files_vacuumed),
            Metric::milliseconds("PublishLagMs", self.publish_lag_ms),
            Metric::count("FailedMessages", self.failed_messages),
        ]
    }

    fn failures(&self) -> &BTreeMap<String, u64> {
        &self.failures
    }

    fn log_batch(&self, duration_ms: u64) {
        tracing::info!(
            manifests = self.manifests,
            skipped = self.skipped,
            uploads_published = self.uploads_published,
            uploads_replaced = self.uploads_replaced,
            uploads_removed = self.uploads_removed,
            uploads_up_to_date = self.uploads_up_to_date,
            rows_published = self.rows_published,
            files_added = self.files_added,
            files_removed = self.files_removed,
            commits = self.commits,
            commit_retries = self.commit_retries,
            settling = self.settling,
            quarantined = self.quarantined,
            files_vacuumed = self.files_vacuumed,
            publish_lag_ms = self.publish_lag_ms,
            failed_messages = self.failed_messages,
            duration_ms,
            "batch done"
        );
    }
}
