//! A batch's metrics as CloudWatch Embedded Metric Format: JSON lines on stdout that
//! CloudWatch Logs turns into metrics, so the function needs no `PutMetricData` calls or
//! permissions.

use serde_json::{json, Value};

use crate::tally::BatchTally;

/// Where the documents go: the namespace and the `FunctionName` dimension.
#[derive(Clone, Copy, Debug)]
pub struct MetricsTarget<'a> {
    /// CloudWatch namespace.
    pub namespace: &'a str,
    /// Value of the `FunctionName` dimension.
    pub function_name: &'a str,
}

/// The EMF documents for one batch: the batch's counts, then one `Failures` document per
/// failure reason (dimensions `FunctionName`, `Reason`), in reason order.
pub fn emf_documents(
    target: MetricsTarget<'_>,
    tally: &BatchTally,
    duration_ms: u64,
    timestamp_ms: u64,
) -> Vec<Value> {
    let counts = [
        ("Objects", tally.objects, "Count"),
        ("Converted", tally.converted, "Count"),
        ("AlreadyConverted", tally.already_converted, "Count"),
        ("Quarantined", tally.quarantined, "Count"),
        ("Skipped", tally.skipped, "Count"),
        ("FailedMessages", tally.failed_messages, "Count"),
        ("Bytes", tally.bytes, "Bytes"),
        ("Samples", tally.samples, "Count"),
        ("DurationMs", duration_ms, "Milliseconds"),
    ];
    let mut batch = document(target, timestamp_ms, &["FunctionName"]);
    for (name, value, unit) in counts {
        add_metric(&mut batch, name, value, unit);
    }
    let mut documents = vec![batch];
    for (reason, &n) in &tally.failures {
        let mut doc = document(target, timestamp_ms, &["FunctionName", "Reason"]);
        doc["Reason"] = json!(reason);
        add_metric(&mut doc, "Failures", n, "Count");
        documents.push(doc);
    }
    documents
}

fn document(target: MetricsTarget<'_>, timestamp_ms: u64, dimensions: &[&str]) -> Value {
    json!({
        "_aws": {
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [{
                "Namespace": target.namespace,
                "Dimensions": [dimensions],
                "Metrics": [],
            }],
        },
        "FunctionName": target.function_name,
    })
}

fn add_metric(doc: &mut Value, name: &str, value: u64, unit: &str) {
    let metrics = doc["_aws"]["CloudWatchMetrics"][0]["Metrics"]
        .as_array_mut()
        .expect("document() makes the Metrics array");
    metrics.push(json!({"Name": name, "Unit": unit}));
    doc[name] = json!(value);
}

/// Writes each document as one line of stdout. EMF is only recognised when a document is a
/// whole log line; `println!` holds the stdout lock for the line, so log lines from other threads
/// cannot cut into it (and tests capture it).
pub fn print_documents(documents: &[Value]) {
    for doc in documents {
        println!("{doc}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TARGET: MetricsTarget<'static> = MetricsTarget {
        namespace: "proflake-test",
        function_name: "convert-fn",
    };

    #[test]
    fn batch_document_has_every_metric_with_its_unit() {
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
        let docs = emf_documents(TARGET, &tally, 1234, 1_700_000_000_000);
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
    fn one_failures_document_per_reason() {
        let mut tally = BatchTally::default();
        tally.fail("storage");
        tally.fail("malformed");
        tally.fail("malformed");
        let docs = emf_documents(TARGET, &tally, 0, 1);
        assert_eq!(docs.len(), 3);
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
        for doc in &docs[1..] {
            let cw = &doc["_aws"]["CloudWatchMetrics"][0];
            assert_eq!(cw["Namespace"], "proflake-test");
            assert_eq!(cw["Dimensions"], json!([["FunctionName", "Reason"]]));
            assert_eq!(
                cw["Metrics"],
                json!([{"Name": "Failures", "Unit": "Count"}])
            );
            assert_eq!(doc["FunctionName"], "convert-fn");
            assert_eq!(doc["_aws"]["Timestamp"], 1);
        }
    }
}
