//! What one batch did, counted for its metrics and its log line.

use proflake::Outcome;
use proflake_lambda::{counters, Tally};

counters! {
    /// Counts of one batch (or one message, merged into the batch's).
    pub struct BatchTally {
        /// Failures by reason: quarantine reasons, `invalid_event`, `storage`, `panic`.
        failures,
        /// Object events handled, whatever became of them.
        objects: Count "Objects",
        /// Uploads converted.
        converted: Count "Converted",
        /// Uploads whose manifest already existed.
        already_converted: Count "AlreadyConverted",
        /// Uploads quarantined with an error report.
        quarantined: Count "Quarantined",
        /// Object events that needed no work.
        skipped: Count "Skipped",
        /// Messages reported back to SQS as failed.
        failed_messages: Count "FailedMessages",
        /// Bytes read of converted and quarantined uploads.
        bytes: Bytes "Bytes" unlogged,
        /// Samples written.
        samples: Count "Samples" unlogged,
    }
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use proflake::store::{LocalDirStore, ObjectStore};
    use proflake::{process_upload, ProcessOptions};
    use proflake_lambda::{emf_documents, MetricsTarget};
    use serde_json::json;

    #[test]
    fn outcomes_are_counted_and_tallies_merge() {
        // An outcome of each kind, as processing gives them: an upload converted, a corrupt
        // one quarantined, a missing one skipped, and the first again, already converted.
        let dir = tempfile::tempdir().unwrap();
        let store = LocalDirStore::new(dir.path());
        store
            .put("uploads/a.folded", b"main;work 4\nmain;idle 3\n")
            .unwrap();
        let corrupt = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03this is not deflate data";
        store.put("uploads/b.pb.gz", corrupt).unwrap();
        let process =
            |key| process_upload(&store, &store, key, &ProcessOptions::default()).unwrap();
        let converted = process("uploads/a.folded");
        let quarantined = process("uploads/b.pb.gz");
        let skipped = process("uploads/c.folded");
        let again = process("uploads/a.folded");
        let (Outcome::Converted(c), Outcome::Quarantined(q)) = (&converted, &quarantined) else {
            panic!("{converted:?} {quarantined:?}");
        };
        assert!(matches!(skipped, Outcome::Skipped { .. }), "{skipped:?}");
        assert!(
            matches!(again, Outcome::AlreadyConverted { .. }),
            "{again:?}"
        );
        assert!(c.samples > 0 && q.bytes == corrupt.len() as u64);

        let mut a = BatchTally::default();
        a.record(&converted);
        a.record(&quarantined);
        a.record(&skipped);
        let mut b = BatchTally {
            objects: 1,
            failed_messages: 1,
            ..BatchTally::default()
        };
        b.record(&again);
        b.fail(q.reason);
        b.fail("storage");
        a.merge(b);
        assert_eq!(
            (a.converted, a.quarantined, a.skipped, a.already_converted),
            (1, 1, 1, 1)
        );
        assert_eq!(
            (a.objects, a.failed_messages, a.bytes, a.samples),
            (1, 1, c.bytes + q.bytes, c.samples)
        );
        let failures: Vec<_> = a.failures.iter().map(|(r, n)| (r.as_str(), *n)).collect();
        assert_eq!(failures, [(q.reason, 2), ("storage", 1)]);
    }

    #[test]
    fn batch_document_has_every_metric_with_its_unit() {
        let target = MetricsTarget {
            namespace: "proflake-test",
            function_name: "convert-fn",
        };
        let tally = BatchTally {
            objects: 5,
            converted: 2,
            already_converted: 1,
            quarantined: 1,
            skipped: 1,
            failed_messages: 1,
            bytes: 4096,
            samples: 202,
            ..BatchTally::default()
        };
        let docs = emf_documents(target, &tally, 1234, 1_700_000_000_000);
        assert_eq!(docs.len(), 1, "no failure documents without failures");
        let doc = &docs[0];
        assert_eq!(doc["_aws"]["Timestamp"], 1_700_000_000_000u64);
        let cw = &doc["_aws"]["CloudWatchMetrics"];
        assert_eq!(cw.as_array().unwrap().len(), 1);
        assert_eq!(cw[0]["Namespace"], "proflake-test");
        assert_eq!(cw[0]["Dimensions"], json!([["FunctionName"]]));
        assert_eq!(doc["FunctionName"], "convert-fn");
        let metrics = cw[0]["Metrics"].as_array().unwrap();
        let expected = [
            ("Objects", "Count", 5),
            ("Converted", "Count", 2),
            ("AlreadyConverted", "Count", 1),
            ("Quarantined", "Count", 1),
            ("Skipped", "Count", 1),
            ("FailedMessages", "Count", 1),
            ("Bytes", "Bytes", 4096),
            ("Samples", "Count", 202),
            ("DurationMs", "Milliseconds", 1234),
        ];
        assert_eq!(metrics.len(), expected.len());
        for (metric, (name, unit, value)) in metrics.iter().zip(expected) {
            assert_eq!(metric, &json!({"Name": name, "Unit": unit}));
            assert_eq!(doc[name], value, "{name}");
        }
    }

    #[test]
    fn failures_by_reason_get_their_own_documents() {
        let mut tally = BatchTally::default();
        tally.fail("storage");
        tally.fail("malformed");
        tally.fail("malformed");
        let target = MetricsTarget {
            namespace: "proflake-test",
            function_name: "convert-fn",
        };
        let docs = emf_documents(target, &tally, 0, 1);
        let reasons: Vec<_> = docs[1..]
            .iter()
            .map(|d| {
                (
                    d["Reason"].as_str().unwrap(),
                    d["Failures"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(reasons, [("malformed", 2), ("storage", 1)]);
    }
}
