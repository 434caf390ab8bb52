//! What one batch did, counted for its metrics.

use std::collections::BTreeMap;

use proflake::pipeline::{DebugFileOutcome, RehydratePage};
use proflake::Outcome;
use proflake_lambda::{Metric, Tally};

/// Counts of one batch (or one message, merged into the batch's).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BatchTally {
    /// Debug-file keys notified, whatever became of them.
    pub debug_files: u64,
    /// Debug files that became their build ID's symbols.
    pub debug_files_stored: u64,
    /// Valid debug files not better than the one in use (or that very one).
    pub debug_files_kept: u64,
    /// Debug files refused with a report.
    pub debug_files_refused: u64,
    /// Object events that needed no work: derived keys (caches, metas, reports), keys gone,
    /// keys outside `debuginfo/`, events other than created.
    pub skipped: u64,
    /// Pages of rehydration run (one per message that rehydrates).
    pub pages: u64,
    /// Uploads converted again.
    pub reconverted: u64,
    /// Index entries whose upload already used the symbols in use.
    pub up_to_date: u64,
    /// Frames named by debug files in the reconversions.
    pub frames_symbolized: u64,
    /// Pending records of replaced content the sweep removed, with what they named.
    pub pending_removed: u64,
    /// Continuation messages sent.
    pub continuations: u64,
    /// Messages reported back to SQS as failed.
    pub failed_messages: u64,
    /// Failures by reason: refusal reasons, quarantine reasons of reconversions,
    /// `invalid_event`, `storage`, `continuation`, `panic`.
    pub failures: BTreeMap<String, u64>,
}

impl BatchTally {
    /// Counts what adding one debug file did.
    pub fn record_debug_file(&mut self, outcome: &DebugFileOutcome) {
        match outcome {
            DebugFileOutcome::Stored { .. } => {
                self.debug_files += 1;
                self.debug_files_stored += 1;
            }
            DebugFileOutcome::Kept { .. } => {
                self.debug_files += 1;
                self.debug_files_kept += 1;
            }
            DebugFileOutcome::Refused { reason, .. } => {
                self.debug_files += 1;
                self.debug_files_refused += 1;
                self.fail(reason);
            }
            DebugFileOutcome::Skipped { .. } => self.skipped += 1,
        }
    }

    /// Counts one page of rehydration.
    pub fn record_page(&mut self, page: &RehydratePage) {
        self.pages += 1;
        self.reconverted += page.reconverted;
        self.up_to_date += page.up_to_date;
        self.frames_symbolized += page.frames_symbolized;
        self.pending_removed += page.pending_removed;
        for outcome in &page.outcomes {
            if let Outcome::Quarantined(q) = outcome {
                self.fail(q.reason);
            }
        }
    }
}

impl Tally for BatchTally {
    fn merge(&mut self, other: BatchTally) {
        self.debug_files += other.debug_files;
        self.debug_files_stored += other.debug_files_stored;
        self.debug_files_kept += other.debug_files_kept;
        self.debug_files_refused += other.debug_files_refused;
        self.skipped += other.skipped;
        self.pages += other.pages;
        self.reconverted += other.reconverted;
        self.up_to_date += other.up_to_date;
        self.frames_symbolized += other.frames_symbolized;
        self.pending_removed += other.pending_removed;
        self.continuations += other.continuations;
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

    /// `DebugFiles`, `DebugFilesStored`, `DebugFilesKept`, `DebugFilesRefused`, `Skipped`,
    /// `Pages`, `Reconverted`, `UpToDate`, `FramesSymbolized`, `PendingRemoved`,
    /// `Continuations`, `FailedMessages`.
    fn metrics(&self) -> Vec<Metric> {
        vec![
            Metric::count("DebugFiles", self.debug_files),
            Metric::count("DebugFilesStored", self.debug_files_stored),
            Metric::count("DebugFilesKept", self.debug_files_kept),
            Metric::count("DebugFilesRefused", self.debug_files_refused),
            Metric::count("Skipped", self.skipped),
            Metric::count("Pages", self.pages),
            Metric::count("Reconverted", self.reconverted),
            Metric::count("UpToDate", self.up_to_date),
            Metric::count("FramesSymbolized", self.frames_symbolized),
            Metric::count("PendingRemoved", self.pending_removed),
            Metric::count("Continuations", self.continuations),
            Metric::count("FailedMessages", self.failed_messages),
        ]
    }

    fn failures(&self) -> &BTreeMap<String, u64> {
        &self.failures
    }

    fn log_batch(&self, duration_ms: u64) {
        tracing::info!(
            debug_files = self.debug_files,
            debug_files_stored = self.debug_files_stored,
            debug_files_kept = self.debug_files_kept,
            debug_files_refused = self.debug_files_refused,
            skipped = self.skipped,
            pages = self.pages,
            reconverted = self.reconverted,
            up_to_date = self.up_to_date,
            frames_symbolized = self.frames_symbolized,
            pending_removed = self.pending_removed,
            continuations = self.continuations,
            failed_messages = self.failed_messages,
            duration_ms,
            "batch done"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proflake_lambda::{emf_documents, MetricsTarget};
    use serde_json::json;

    #[test]
    fn outcomes_are_counted_and_tallies_merge() {
        let mut a = BatchTally::default();
        a.record_debug_file(&DebugFileOutcome::Refused {
            key: "debuginfo/ab/x".into(),
            report_key: "debuginfo/ab/x.error.json".into(),
            reason: "bad_debug_file",
            message: "bad".into(),
        });
        a.record_debug_file(&DebugFileOutcome::Skipped {
            key: "debuginfo/ab/meta.json".into(),
            why: "derived",
        });
        a.record_page(&RehydratePage {
            looked_at: 4,
            reconverted: 3,
            up_to_date: 1,
            frames_symbolized: 30,
            pending_removed: 2,
            pending_kept: 5,
            ..RehydratePage::default()
        });
        let mut b = BatchTally {
            continuations: 1,
            ..BatchTally::default()
        };
        b.fail("storage");
        a.merge(b);
        assert_eq!(
            (a.debug_files, a.debug_files_refused, a.skipped, a.pages),
            (1, 1, 1, 1)
        );
        assert_eq!(
            (
                a.reconverted,
                a.up_to_date,
                a.frames_symbolized,
                a.pending_removed,
                a.continuations
            ),
            (3, 1, 30, 2, 1)
        );
        let failures: Vec<_> = a.failures.iter().map(|(r, n)| (r.as_str(), *n)).collect();
        assert_eq!(failures, [("bad_debug_file", 1), ("storage", 1)]);
    }

    #[test]
    fn batch_document_has_every_metric() {
        let target = MetricsTarget {
            namespace: "proflake-test",
            function_name: "rehydrate-fn",
        };
        let tally = BatchTally {
            debug_files: 3,
            debug_files_stored: 1,
            debug_files_kept: 1,
            debug_files_refused: 1,
            skipped: 2,
            pages: 2,
            reconverted: 5,
            up_to_date: 7,
            frames_symbolized: 90,
            pending_removed: 4,
            continuations: 1,
            failed_messages: 1,
            ..BatchTally::default()
        };
        let docs = emf_documents(target, &tally, 12, 1);
        let names: Vec<_> = docs[0]["_aws"]["CloudWatchMetrics"][0]["Metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["Name"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            names,
            [
                "DebugFiles",
                "DebugFilesStored",
                "DebugFilesKept",
                "DebugFilesRefused",
                "Skipped",
                "Pages",
                "Reconverted",
                "UpToDate",
                "FramesSymbolized",
                "PendingRemoved",
                "Continuations",
                "FailedMessages",
                "DurationMs"
            ]
        );
        assert_eq!(docs[0]["Reconverted"], json!(5));
        assert_eq!(docs[0]["FramesSymbolized"], json!(90));
        assert_eq!(docs[0]["PendingRemoved"], json!(4));
        assert_eq!(docs[0]["DurationMs"], json!(12));
    }
}
