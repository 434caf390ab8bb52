//! What one batch did, counted for its metrics and its log line.

use proflake::{lake::CompactReport, lake::PublishReport};
use proflake_lambda::{counters, Tally};

counters! {
    /// Counts of one batch.
    pub struct BatchTally {
        /// Failures by reason (`invalid_event`, `lake`, `lake_schema`, `storage`,
        /// `unpublishable`, `panic`).
        failures,
        /// Manifests notified.
        manifests: Count "Manifests",
        /// Object events that needed no work (keys other than manifests, other buckets).
        skipped: Count "Skipped",
        /// Conversions whose rows were added (new, or replacing an earlier conversion's).
        uploads_published: Count "UploadsPublished",
        /// Of those, conversions that replaced rows of their key.
        uploads_replaced: Count "UploadsReplaced",
        /// Keys without a conversion any more whose rows were removed.
        uploads_removed: Count "UploadsRemoved",
        /// Keys already up to date.
        uploads_up_to_date: Count "UploadsUpToDate",
        /// Rows added.
        rows_published: Count "RowsPublished",
        /// Data files added (publish and compaction).
        files_added: Count "FilesAdded",
        /// Data files removed (publish and compaction).
        files_removed: Count "FilesRemoved",
        /// Commits made.
        commits: Count "Commits",
        /// Commits planned again after another writer committed first.
        commit_retries: Count "CommitRetries",
        /// Manifests whose conversion is still settling its key (their messages come again).
        settling: Count "Settling",
        /// Conversions that cannot be published.
        quarantined: Count "Quarantined",
        /// Files vacuum deleted.
        files_vacuumed: Count "FilesVacuumed",
        /// Longest time from a manifest's write to its commit.
        publish_lag_ms: Milliseconds "PublishLagMs" max,
        /// Messages reported back to SQS as failed.
        failed_messages: Count "FailedMessages",
    }
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
