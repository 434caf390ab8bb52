//! What one batch did, counted for its metrics and its log line.

use proflake::Outcome;
use proflake::{symbols::DebugFileOutcome, RehydratePage};
use proflake_lambda::{counters, Tally};

counters! {
    /// Counts of one batch (or one message, merged into the batch's).
    pub struct BatchTally {
        /// Failures by reason: refusal reasons, quarantine reasons of reconversions,
        /// `invalid_event`, `storage`, `continuation`, `panic`.
        failures,
        /// Debug-file keys notified, whatever became of them.
        debug_files: Count "DebugFiles",
        /// Debug files that became their build ID's symbols.
        debug_files_stored: Count "DebugFilesStored",
        /// Valid debug files not better than the one in use (or that very one).
        debug_files_kept: Count "DebugFilesKept",
        /// Debug files refused with a report.
        debug_files_refused: Count "DebugFilesRefused",
        /// Object events that needed no work: derived keys (caches, metas, reports), keys gone,
        /// keys outside `debuginfo/`, events other than created.
        skipped: Count "Skipped",
        /// Pages of rehydration run (one per message that rehydrates).
        pages: Count "Pages",
        /// Uploads converted again.
        reconverted: Count "Reconverted",
        /// Index entries whose upload already used the symbols in use.
        up_to_date: Count "UpToDate",
        /// Frames named by debug files in the reconversions.
        frames_symbolized: Count "FramesSymbolized",
        /// Pending records of replaced content the sweep removed, with what they named.
        pending_removed: Count "PendingRemoved",
        /// Continuation messages sent.
        continuations: Count "Continuations",
        /// Messages reported back to SQS as failed.
        failed_messages: Count "FailedMessages",
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use proflake_lambda::{emf_documents, MetricsTarget};
    use serde_json::json;

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
}
