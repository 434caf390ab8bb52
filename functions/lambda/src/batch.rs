//! One SQS batch: its messages handled concurrently, failures reported per message so SQS
//! redelivers only those (the event source mapping needs `ReportBatchItemFailures`).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tracing::{error, info_span, Instrument};

use crate::config::Config;
use crate::metrics::{emf_documents, print_documents, MetricsTarget};
use crate::tally::Tally;

/// What became of one message: its counts, and whether SQS should deliver it again.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct MessageOutcome<T> {
    /// What handling the message counted, failed or not.
    pub(crate) tally: T,
    /// The message is reported as a batch item failure.
    pub(crate) failed: bool,
}

/// Handles one SQS batch with `handle_message` for each message; never fails as a whole: failed
/// messages are listed by message id.
///
/// At most `config.concurrency` messages are handled at once, each in its own task inside a
/// `message` span carrying its `message_id`. A message fails when `handle_message` says so or
/// when its task panicked (counted as a `panic` failure). A message without a message id is
/// still handled; if it fails it is reported with an empty identifier, which Lambda treats as a
/// failure of the whole batch, the only safe reading.
///
/// Closes the batch with [`finish_batch`]; returns its response and its tally.
pub(crate) async fn handle_messages<T, F, Fut>(
    config: &Config,
    event: SqsEvent,
    mut handle_message: F,
) -> (SqsBatchResponse, T)
where
    T: Tally,
    F: FnMut(SqsMessage) -> Fut,
    Fut: Future<Output = MessageOutcome<T>> + Send + 'static,
{
    let started = Instant::now();
    let permits = Arc::new(Semaphore::new(config.concurrency));
    let mut tasks = JoinSet::new();
    let mut ids = HashMap::new();
    for message in event.records {
        let message_id = message.message_id.clone().unwrap_or_default();
        let span = info_span!("message", message_id = message_id.as_str());
        let permits = permits.clone();
        let handled = handle_message(message);
        let id = message_id.clone();
        let task = tasks.spawn(
            async move {
                let _permit = permits.acquire_owned().await;
                (id, handled.await)
            }
            .instrument(span),
        );
        ids.insert(task.id(), message_id);
    }

    let mut tally = T::default();
    let mut failed = Vec::new();
    while let Some(joined) = tasks.join_next_with_id().await {
        match joined {
            Ok((_, (message_id, outcome))) => {
                tally.merge(outcome.tally);
                if outcome.failed {
                    failed.push(message_id);
                }
            }
            Err(join_error) => {
                let message_id = ids.remove(&join_error.id()).unwrap_or_default();
                error!(
                    message_id,
                    reason = "panic",
                    error = %join_error,
                    "message task panicked; the message will be retried"
                );
                tally.fail("panic");
                failed.push(message_id);
            }
        }
    }
    failed.sort();
    let response = finish_batch(config, &mut tally, failed, started);
    (response, tally)
}

/// Closes a batch: records how many messages failed, logs the tally's summary, prints its
/// metrics as EMF lines, and makes the response that lists the failed messages (sorted) for
/// SQS. Also for functions that handle a batch as a whole rather than message by message.
pub(crate) fn finish_batch<T: Tally>(
    config: &Config,
    tally: &mut T,
    failed: impl IntoIterator<Item = String>,
    started: Instant,
) -> SqsBatchResponse {
    let failed: Vec<String> = failed.into_iter().collect();
    tally.set_failed_messages(failed.len() as u64);
    let duration_ms = started.elapsed().as_millis() as u64;
    tally.log_batch(duration_ms);
    let target = MetricsTarget {
        namespace: &config.metrics_namespace,
        function_name: &config.function_name,
    };
    print_documents(&emf_documents(target, &*tally, duration_ms, now_ms()));
    let mut response = SqsBatchResponse::default();
    response.batch_item_failures = failed
        .into_iter()
        .map(|message_id| {
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = message_id;
            failure
        })
        .collect();
    response
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    use std::time::Duration;

    use super::*;
    use crate::config::Vars;
    use crate::tally::Metric;

    /// Counts messages; remembers what the batch told it.
    #[derive(Debug, Default)]
    struct Count {
        messages: u64,
        failed_messages: u64,
        failures: BTreeMap<String, u64>,
    }

    static LOGGED: Mutex<Vec<(u64, u64)>> = Mutex::new(Vec::new());

    impl Tally for Count {
        fn merge(&mut self, other: Self) {
            self.messages += other.messages;
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
            vec![Metric::count("Messages", self.messages)]
        }
        fn failures(&self) -> &BTreeMap<String, u64> {
            &self.failures
        }
        fn log_batch(&self, _: u64) {
            LOGGED
                .lock()
                .unwrap()
                .push((self.messages, self.failed_messages));
        }
    }

    async fn handle_batch<F, Fut>(config: &Config, event: SqsEvent, handle: F) -> SqsBatchResponse
    where
        F: FnMut(SqsMessage) -> Fut,
        Fut: Future<Output = MessageOutcome<Count>> + Send + 'static,
    {
        handle_messages(config, event, handle).await.0
    }

    fn config(concurrency: &str) -> Config {
        let concurrency = concurrency.to_owned();
        let vars = Vars::from_lookup(move |name| {
            (name == "PROFLAKE_CONCURRENCY").then(|| concurrency.clone())
        });
        Config::from_vars(&vars, "test-fn").unwrap()
    }

    fn event(messages: &[(Option<&str>, &str)]) -> SqsEvent {
        let mut event = SqsEvent::default();
        event.records = messages
            .iter()
            .map(|(id, body)| {
                let mut message = SqsMessage::default();
                message.message_id = id.map(str::to_owned);
                message.body = Some((*body).to_owned());
                message
            })
            .collect();
        event
    }

    fn failed_ids(response: &SqsBatchResponse) -> Vec<&str> {
        let ids: Vec<_> = response
            .batch_item_failures
            .iter()
            .map(|f| f.item_identifier.as_str())
            .collect();
        ids
    }

    /// Bodies: `ok` succeeds, `fail` fails, `panic` panics; each counts one message.
    async fn by_body(message: SqsMessage) -> MessageOutcome<Count> {
        let body = message.body.unwrap_or_default();
        let tally = Count {
            messages: 1,
            ..Count::default()
        };
        match body.as_str() {
            "ok" => MessageOutcome {
                tally,
                failed: false,
            },
            "fail" => MessageOutcome {
                tally,
                failed: true,
            },
            _ => panic!("bug in the handler"),
        }
    }

    #[tokio::test]
    async fn failed_and_panicked_messages_are_reported_sorted_and_the_rest_counted() {
        let config = config("2");
        let event = event(&[
            (Some("m3"), "fail"),
            (Some("m1"), "ok"),
            (Some("m2"), "panic"),
            (Some("m0"), "ok"),
        ]);
        let response = handle_batch(&config, event, by_body).await;
        assert_eq!(failed_ids(&response), ["m2", "m3"]);
        let logged = LOGGED.lock().unwrap().clone();
        assert!(logged.contains(&(3, 2)), "{logged:?}");
    }

    #[tokio::test]
    async fn message_without_id_fails_with_an_empty_identifier() {
        let response = handle_batch(&config("1"), event(&[(None, "fail")]), by_body).await;
        assert_eq!(failed_ids(&response), [""]);
        let response = handle_batch(&config("1"), event(&[(None, "panic")]), by_body).await;
        assert_eq!(failed_ids(&response), [""]);
        let response = handle_batch(&config("1"), event(&[(None, "ok")]), by_body).await;
        assert!(response.batch_item_failures.is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn at_most_concurrency_messages_run_at_once() {
        let now = Arc::new(AtomicUsize::new(0));
        let max = Arc::new(AtomicUsize::new(0));
        let messages: Vec<_> = (0..8).map(|_| (Some("m"), "ok")).collect();
        let response = handle_batch(&config("3"), event(&messages), |_| {
            let (now, max) = (now.clone(), max.clone());
            async move {
                let running = now.fetch_add(1, Ordering::SeqCst) + 1;
                max.fetch_max(running, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(50)).await;
                now.fetch_sub(1, Ordering::SeqCst);
                MessageOutcome::<Count>::default()
            }
        })
        .await;
        assert!(response.batch_item_failures.is_empty());
        assert_eq!(max.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn response_serializes_as_batch_item_failures() {
        let response = handle_batch(&config("2"), event(&[(Some("m1"), "fail")]), by_body).await;
        let json = serde_json::to_value(&response).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"batchItemFailures": [{"itemIdentifier": "m1"}]})
        );
    }
}
