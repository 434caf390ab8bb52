//! What one batch did, counted for its metrics.

use std::collections::BTreeMap;

use proflake::Outcome;

/// Counts of one batch (or one message, merged into the batch's).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BatchTally {
    /// Object events handled, whatever became of them.
    pub objects: u64,
    /// Uploads converted.
    pub converted: u64,
    /// Uploads whose manifest already existed.
    pub already_converted: u64,
    /// Uploads quarantined with an error report.
    pub quarantined: u64,
    /// Object events that needed no work.
    pub skipped: u64,
    /// Messages reported back to SQS as failed.
    pub failed_messages: u64,
    /// Bytes read of converted and quarantined uploads.
    pub bytes: u64,
    /// Samples written.
    pub samples: u64,
    /// Failures by reason: quarantine reasons, `invalid_event`, `storage`, `panic`.
    pub failures: BTreeMap<String, u64>,
}

impl BatchTally {
    /// Counts what processing one upload did.
    pub fn record(&mut self, outcome: &Outcome) {
        match outcome {
            Outcome::Converted(c) => {
                self.converted += 1;
                self.bytes += c.bytes;
                self.samples += c.samples;
            }
            Outcome::AlreadyConverted { .. } => self.already_converted += 1,
            Outcome::Quarantined(q) => {
                self.quarantined += 1;
                self.bytes += q.bytes;
                self.fail(q.reason);
            }
            Outcome::Skipped { .. } => self.skipped += 1,
        }
    }

    /// Counts one failure for `reason`.
    pub fn fail(&mut self, reason: &str) {
        *self.failures.entry(reason.to_owned()).or_default() += 1;
    }

    /// Adds `other`'s counts to these.
    pub fn merge(&mut self, other: BatchTally) {
        self.objects += other.objects;
        self.converted += other.converted;
        self.already_converted += other.already_converted;
        self.quarantined += other.quarantined;
        self.skipped += other.skipped;
        self.failed_messages += other.failed_messages;
        self.bytes += other.bytes;
        self.samples += other.samples;
        for (reason, n) in other.failures {
            *self.failures.entry(reason).or_default() += n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proflake::{ConvertedUpload, Quarantine, SkipReason};

    #[test]
    fn outcomes_are_counted_and_tallies_merge() {
        let mut a = BatchTally::default();
        a.record(&Outcome::Converted(ConvertedUpload {
            key: "uploads/a".into(),
            source_id: "s".into(),
            manifest_key: "converted/s/manifest.json".into(),
            format: "pprof".into(),
            bytes: 100,
            samples: 7,
            objects: 4,
            replaced: None,
        }));
        a.record(&Outcome::Quarantined(Quarantine {
            key: "uploads/b".into(),
            report_key: "uploads/b.error.json".into(),
            reason: "malformed",
            message: "bad".into(),
            bytes: 10,
        }));
        a.record(&Outcome::Skipped {
            key: "uploads/c".into(),
            why: SkipReason::Missing,
        });
        let mut b = BatchTally {
            objects: 1,
            failed_messages: 1,
            ..BatchTally::default()
        };
        b.record(&Outcome::AlreadyConverted {
            key: "uploads/a".into(),
            manifest_key: "converted/s/manifest.json".into(),
        });
        b.fail("malformed");
        b.fail("storage");
        a.merge(b);
        assert_eq!(
            (a.converted, a.quarantined, a.skipped, a.already_converted),
            (1, 1, 1, 1)
        );
        assert_eq!(
            (a.objects, a.failed_messages, a.bytes, a.samples),
            (1, 1, 110, 7)
        );
        let failures: Vec<_> = a.failures.iter().map(|(r, n)| (r.as_str(), *n)).collect();
        assert_eq!(failures, [("malformed", 2), ("storage", 1)]);
    }
}
