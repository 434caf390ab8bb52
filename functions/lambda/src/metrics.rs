//! A batch's metrics as CloudWatch Embedded Metric Format: JSON lines on stdout that
//! CloudWatch Logs turns into metrics, so the function needs no `PutMetricData` calls or
//! permissions.

use serde_json::{json, Value};

use crate::tally::{Metric, Tally};

/// Where the documents go: the namespace and the `FunctionName` dimension.
#[derive(Clone, Copy, Debug)]
pub struct MetricsTarget<'a> {
    /// CloudWatch namespace.
    pub namespace: &'a str,
    /// Value of the `FunctionName` dimension.
    pub function_name: &'a str,
}

/// The EMF documents for one batch: the tally's metrics and `DurationMs` (dimension
/// `FunctionName`), then one `Failures` document per failure reason (dimensions
/// `FunctionName`, `Reason`), in reason order.
pub fn emf_documents(
    target: MetricsTarget<'_>,
    tally: &impl Tally,
    duration_ms: u64,
    timestamp_ms: u64,
) -> Vec<Value> {
    let mut batch = document(target, timestamp_ms, &["FunctionName"]);
    for metric in tally.metrics() {
        add_metric(&mut batch, metric);
    }
    add_metric(&mut batch, Metric::milliseconds("DurationMs", duration_ms));
    let mut documents = vec![batch];
    for (reason, &n) in tally.failures() {
        let mut doc = document(target, timestamp_ms, &["FunctionName", "Reason"]);
        doc["Reason"] = json!(reason);
        add_metric(&mut doc, Metric::count("Failures", n));
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

fn add_metric(doc: &mut Value, metric: Metric) {
    let metrics = doc["_aws"]["CloudWatchMetrics"][0]["Metrics"]
        .as_array_mut()
        .expect("document() makes the Metrics array");
    metrics.push(json!({"Name": metric.name, "Unit": metric.unit.as_str()}));
    doc[metric.name] = json!(metric.value);
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
    use std::collections::BTreeMap;

    use super::*;

    const TARGET: MetricsTarget<'static> = MetricsTarget {
        namespace: "proflake-test",
        function_name: "test-fn",
    };

    #[derive(Default)]
    struct TestTally {
        items: u64,
        bytes: u64,
        failures: BTreeMap<String, u64>,
    }

    impl Tally for TestTally {
        fn merge(&mut self, _: Self) {}
        fn fail(&mut self, reason: &str) {
            *self.failures.entry(reason.to_owned()).or_default() += 1;
        }
        fn set_failed_messages(&mut self, _: u64) {}
        fn metrics(&self) -> Vec<Metric> {
            vec![
                Metric::count("Items", self.items),
                Metric::bytes("Bytes", self.bytes),
            ]
        }
        fn failures(&self) -> &BTreeMap<String, u64> {
            &self.failures
        }
        fn log_batch(&self, _: u64) {}
    }

    #[test]
    fn batch_document_has_every_metric_with_its_unit_then_the_duration() {
        let tally = TestTally {
            items: 5,
            bytes: 4096,
            ..TestTally::default()
        };
        let docs = emf_documents(TARGET, &tally, 1234, 1_700_000_000_000);
        assert_eq!(docs.len(), 1, "no failure documents without failures");
        let doc = &docs[0];
        assert_eq!(doc["_aws"]["Timestamp"], 1_700_000_000_000u64);
        let cw = &doc["_aws"]["CloudWatchMetrics"];
        assert_eq!(cw.as_array().unwrap().len(), 1);
        assert_eq!(cw[0]["Namespace"], "proflake-test");
        assert_eq!(cw[0]["Dimensions"], json!([["FunctionName"]]));
        assert_eq!(doc["FunctionName"], "test-fn");
        let metrics = cw[0]["Metrics"].as_array().unwrap();
        let expected = [
            ("Items", "Count", 5),
            ("Bytes", "Bytes", 4096),
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
        let mut tally = TestTally::default();
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
            assert_eq!(doc["FunctionName"], "test-fn");
            assert_eq!(doc["_aws"]["Timestamp"], 1);
        }
    }
}
