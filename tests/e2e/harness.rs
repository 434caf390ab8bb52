//! The local stand-in for production: moto with the two buckets, the convert and rehydrate
//! queues with their dead-letter queues and redrive policies, the uploads bucket's notification
//! to the convert queue and the output bucket's (`debuginfo/`) to the rehydrate queue (as
//! infra/template.yaml sets them up). There is no event source mapping locally, so
//! [`Env::drain`] and [`Env::rehydrate_batch`] do its job: receive, call the handler, delete
//! what succeeded.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Duration;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use aws_sdk_s3::config::retry::RetryConfig;
use aws_sdk_s3::config::timeout::TimeoutConfig;
use aws_sdk_s3::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{
    FilterRule, FilterRuleName, NotificationConfiguration, NotificationConfigurationFilter,
    QueueConfiguration, S3KeyFilter,
};
use aws_sdk_sqs::types::QueueAttributeName;
use aws_sdk_sqs::types::{DeleteMessageBatchRequestEntry, Message, MessageSystemAttributeName};
use proflake_convert::{App, Config};

use crate::moto::Moto;

pub const REGION: &str = "us-east-1";
pub const UPLOADS_BUCKET: &str = "proflake-uploads";
pub const OUTPUT_BUCKET: &str = "proflake-outputs";
pub const QUEUE: &str = "proflake-convert";
pub const DLQ: &str = "proflake-convert-dlq";
pub const REHYDRATE_QUEUE: &str = "proflake-rehydrate";
pub const REHYDRATE_DLQ: &str = "proflake-rehydrate-dlq";
/// The production redrive policy's maxReceiveCount.
pub const MAX_RECEIVE_COUNT: u32 = 5;

pub use proflake_tests::{repo_file, repo_path};

/// Test credentials and region, nothing from the environment.
fn s3_config(endpoint: &str) -> aws_sdk_s3::config::Builder {
    aws_sdk_s3::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(REGION))
        .credentials_provider(Credentials::new("test", "test", None, None, "e2e"))
        .endpoint_url(endpoint)
        .force_path_style(true)
}

/// An S3 client for `endpoint` with the SDK's default retries and timeouts.
pub fn s3_client(endpoint: &str) -> aws_sdk_s3::Client {
    aws_sdk_s3::Client::from_conf(s3_config(endpoint).build())
}

/// An S3 client that gives up fast: two attempts, short backoff, short timeouts. For handlers
/// behind the fault proxy.
pub fn impatient_s3_client(endpoint: &str) -> aws_sdk_s3::Client {
    let conf = s3_config(endpoint)
        .retry_config(
            RetryConfig::standard()
                .with_max_attempts(2)
                .with_initial_backoff(Duration::from_millis(20))
                .with_max_backoff(Duration::from_millis(100)),
        )
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(2))
                .read_timeout(Duration::from_secs(5))
                .operation_attempt_timeout(Duration::from_secs(5))
                .operation_timeout(Duration::from_secs(15))
                .build(),
        )
        .build();
    aws_sdk_s3::Client::from_conf(conf)
}

pub fn sqs_client(endpoint: &str) -> aws_sdk_sqs::Client {
    let conf = aws_sdk_sqs::Config::builder()
        .behavior_version(aws_sdk_sqs::config::BehaviorVersion::latest())
        .region(aws_sdk_sqs::config::Region::new(REGION))
        .credentials_provider(aws_sdk_sqs::config::Credentials::new(
            "test", "test", None, None, "e2e",
        ))
        .endpoint_url(endpoint)
        .build();
    aws_sdk_sqs::Client::from_conf(conf)
}

/// The handler's configuration: outputs to [`OUTPUT_BUCKET`], the rest as in production.
pub fn config(concurrency: usize) -> Config {
    let vars: HashMap<&str, String> = HashMap::from([
        ("PROFLAKE_OUTPUT_BUCKET", OUTPUT_BUCKET.to_owned()),
        ("PROFLAKE_CONCURRENCY", concurrency.to_string()),
        ("PROFLAKE_LOG", "warn".to_owned()),
    ]);
    Config::from_lookup(|name| vars.get(name).cloned()).expect("handler config")
}

/// The rehydrate handler's configuration: the two buckets, its own queue at `queue_url`,
/// `extra` variables on top (an empty value unsets one).
pub fn rehydrate_config(queue_url: &str, extra: &[(&str, &str)]) -> proflake_rehydrate::Config {
    let mut vars: HashMap<&str, String> = HashMap::from([
        ("PROFLAKE_OUTPUT_BUCKET", OUTPUT_BUCKET.to_owned()),
        ("PROFLAKE_UPLOAD_BUCKET", UPLOADS_BUCKET.to_owned()),
        ("PROFLAKE_REHYDRATE_QUEUE_URL", queue_url.to_owned()),
        ("PROFLAKE_LOG", "warn".to_owned()),
    ]);
    for (name, value) in extra {
        vars.insert(*name, (*value).to_owned());
    }
    proflake_rehydrate::Config::from_lookup(|name| vars.get(name).cloned())
        .expect("rehydrate handler config")
}

/// Moto set up like production.
pub struct Env {
    pub moto: Moto,
    pub s3: aws_sdk_s3::Client,
    pub sqs: aws_sdk_sqs::Client,
    pub queue_url: String,
    pub queue_arn: String,
    pub dlq_url: String,
    pub rehydrate_url: String,
    pub rehydrate_arn: String,
    pub rehydrate_dlq_url: String,
}

/// One upload: key, bytes and `x-amz-meta-*` user metadata.
#[derive(Clone, Debug)]
pub struct Upload {
    pub key: String,
    pub bytes: Vec<u8>,
    pub meta: Vec<(String, String)>,
}

impl Upload {
    pub fn new(key: impl Into<String>, bytes: Vec<u8>) -> Upload {
        Upload {
            key: key.into(),
            bytes,
            meta: Vec::new(),
        }
    }

    pub fn with_meta(mut self, name: &str, value: &str) -> Upload {
        self.meta.push((name.to_owned(), value.to_owned()));
        self
    }
}

impl Env {
    /// A fresh moto with buckets, queues and notification; the queue's messages become
    /// visible again `visibility_timeout_s` after a receive that did not delete them.
    pub async fn start(visibility_timeout_s: u32) -> Env {
        let moto = tokio::task::spawn_blocking(Moto::start).await.unwrap();
        let s3 = s3_client(&moto.endpoint);
        let sqs = sqs_client(&moto.endpoint);
        for bucket in [UPLOADS_BUCKET, OUTPUT_BUCKET] {
            s3.create_bucket()
                .bucket(bucket)
                .send()
                .await
                .unwrap_or_else(|e| panic!("create bucket {bucket}: {e:?}"));
        }
        let (queue_url, queue_arn, dlq_url) =
            create_queue_pair(&sqs, QUEUE, DLQ, visibility_timeout_s).await;
        let (rehydrate_url, rehydrate_arn, rehydrate_dlq_url) =
            create_queue_pair(&sqs, REHYDRATE_QUEUE, REHYDRATE_DLQ, visibility_timeout_s).await;
        notify(&s3, UPLOADS_BUCKET, "convert", &queue_arn, "uploads/").await;
        notify(
            &s3,
            OUTPUT_BUCKET,
            "rehydrate",
            &rehydrate_arn,
            "debuginfo/",
        )
        .await;
        Env {
            moto,
            s3,
            sqs,
            queue_url,
            queue_arn,
            dlq_url,
            rehydrate_url,
            rehydrate_arn,
            rehydrate_dlq_url,
        }
    }

    /// A handler app on moto (real S3 client, default retries).
    pub fn app(&self, concurrency: usize) -> App {
        App::new(config(concurrency), s3_client(&self.moto.endpoint))
    }

    /// Receives and deletes the `s3:TestEvent` moto sends when the notification is set up, so
    /// that later counts are exact.
    pub async fn consume_test_event(&self) {
        let messages = self.receive(10, 5).await;
        assert_eq!(messages.len(), 1, "expected only the s3:TestEvent");
        assert!(is_test_event(&messages[0]), "{:?}", messages[0].body);
        self.delete(&messages).await;
    }

    /// [`Env::consume_test_event`] of the rehydrate queue.
    pub async fn consume_rehydrate_test_event(&self) {
        let messages = receive_from(&self.sqs, &self.rehydrate_url, 10, 5).await;
        assert_eq!(messages.len(), 1, "expected only the s3:TestEvent");
        assert!(is_test_event(&messages[0]), "{:?}", messages[0].body);
        delete_messages(&self.sqs, &self.rehydrate_url, &messages).await;
    }

    /// A rehydrate handler app on moto, continuations to the real rehydrate queue.
    pub fn rehydrate_app(&self, extra: &[(&str, &str)]) -> proflake_rehydrate::App {
        proflake_rehydrate::App::new(
            rehydrate_config(&self.rehydrate_url, extra),
            s3_client(&self.moto.endpoint),
            sqs_client(&self.moto.endpoint),
        )
    }

    /// Receives up to `max` messages of the rehydrate queue, long-polling up to `wait_s`.
    pub async fn receive_rehydrate(&self, max: i32, wait_s: i32) -> Vec<Message> {
        receive_from(&self.sqs, &self.rehydrate_url, max, wait_s).await
    }

    /// Deletes `messages` from the rehydrate queue.
    pub async fn delete_rehydrate(&self, messages: &[Message]) {
        delete_messages(&self.sqs, &self.rehydrate_url, messages).await;
    }

    /// One rehydrate invocation as the event source mapping makes it: the handler on
    /// `messages`, then every message not reported failed deleted. Returns the response and
    /// what the batch counted.
    pub async fn rehydrate_batch(
        &self,
        app: &proflake_rehydrate::App,
        messages: &[Message],
    ) -> (SqsBatchResponse, proflake_rehydrate::BatchTally) {
        let event = sqs_event(&self.rehydrate_arn, messages);
        let (response, tally) = proflake_rehydrate::handle_batch_tallied(app, event).await;
        let failed = failed_ids(&response);
        let done: Vec<Message> = messages
            .iter()
            .filter(|m| !failed.iter().any(|id| Some(id.as_str()) == m.message_id()))
            .cloned()
            .collect();
        self.delete_rehydrate(&done).await;
        (response, tally)
    }

    /// Puts `bytes` at `key` in the output bucket (a debug file, as an operator uploads it).
    pub async fn put_output(&self, key: &str, bytes: &[u8]) {
        self.s3
            .put_object()
            .bucket(OUTPUT_BUCKET)
            .key(key)
            .body(ByteStream::from(bytes.to_vec()))
            .send()
            .await
            .unwrap_or_else(|e| panic!("put {key}: {e:?}"));
    }

    /// Uploads `upload` to the uploads bucket.
    pub async fn put(&self, upload: &Upload) {
        put_upload(&self.s3, upload).await;
    }

    /// Receives up to `max` messages, long-polling up to `wait_s` seconds.
    pub async fn receive(&self, max: i32, wait_s: i32) -> Vec<Message> {
        receive_from(&self.sqs, &self.queue_url, max, wait_s).await
    }

    /// Deletes `messages` from the queue.
    pub async fn delete(&self, messages: &[Message]) {
        delete_messages(&self.sqs, &self.queue_url, messages).await;
    }

    /// The SQS event Lambda would deliver for `messages`.
    pub fn event(&self, messages: &[Message]) -> SqsEvent {
        sqs_event(&self.queue_arn, messages)
    }

    /// What the event source mapping does for one batch: receive up to 10 messages, call the
    /// handler, delete every message not reported in `batch_item_failures`. Returns the
    /// response and the messages (empty when the queue gave none within `wait_s`).
    pub async fn drain(&self, app: &App, wait_s: i32) -> (SqsBatchResponse, Vec<Message>) {
        let messages = self.receive(10, wait_s).await;
        if messages.is_empty() {
            return (SqsBatchResponse::default(), messages);
        }
        let response = self.handle_and_settle(app, &messages).await;
        (response, messages)
    }

    /// Calls the handler on `messages` and deletes those that succeeded.
    pub async fn handle_and_settle(&self, app: &App, messages: &[Message]) -> SqsBatchResponse {
        let response = proflake_convert::handle_batch(app, self.event(messages)).await;
        let failed = failed_ids(&response);
        let done: Vec<Message> = messages
            .iter()
            .filter(|m| !failed.iter().any(|id| Some(id.as_str()) == m.message_id()))
            .cloned()
            .collect();
        self.delete(&done).await;
        response
    }

    /// Drains until the queue gives nothing for one long poll; every batch must succeed whole.
    /// Returns every message handled.
    pub async fn drain_all(&self, app: &App) -> Vec<Message> {
        let mut all = Vec::new();
        loop {
            let (response, messages) = self.drain(app, 2).await;
            if messages.is_empty() {
                return all;
            }
            assert_eq!(
                failed_ids(&response),
                Vec::<String>::new(),
                "batch item failures for {:?}",
                bodies(&messages)
            );
            all.extend(messages);
        }
    }

    /// (visible, in flight) messages of a queue, as SQS counts them.
    pub async fn queue_depth(&self, queue_url: &str) -> (u64, u64) {
        let attributes = self
            .sqs
            .get_queue_attributes()
            .queue_url(queue_url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .send()
            .await
            .expect("queue attributes")
            .attributes
            .unwrap_or_default();
        let get = |name: QueueAttributeName| -> u64 {
            attributes
                .get(&name)
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("no {name:?} in {attributes:?}"))
        };
        (
            get(QueueAttributeName::ApproximateNumberOfMessages),
            get(QueueAttributeName::ApproximateNumberOfMessagesNotVisible),
        )
    }

    /// Asserts that the convert queue and the DLQ hold no message, visible or in flight.
    pub async fn assert_queues_empty(&self) {
        assert_eq!(
            self.queue_depth(&self.queue_url).await,
            (0, 0),
            "convert queue not empty"
        );
        assert_eq!(
            self.queue_depth(&self.dlq_url).await,
            (0, 0),
            "dead-letter queue not empty"
        );
    }

    /// Every key of a bucket under `prefix`, sorted.
    pub async fn keys(&self, bucket: &str, prefix: &str) -> Vec<String> {
        list_keys(&self.s3, bucket, prefix).await
    }

    /// Every object of a bucket: key → bytes.
    pub async fn snapshot(&self, bucket: &str) -> BTreeMap<String, Vec<u8>> {
        let keys = self.keys(bucket, "").await;
        let mut out = BTreeMap::new();
        for key in keys {
            let bytes = self.get(bucket, &key).await.expect("listed object exists");
            out.insert(key, bytes);
        }
        out
    }

    /// The object's bytes, or `None` if there is none.
    pub async fn get(&self, bucket: &str, key: &str) -> Option<Vec<u8>> {
        match self.s3.get_object().bucket(bucket).key(key).send().await {
            Ok(object) => Some(object.body.collect().await.unwrap().into_bytes().to_vec()),
            Err(e) => {
                let service = e.into_service_error();
                assert!(service.is_no_such_key(), "get {bucket}/{key}: {service:?}");
                None
            }
        }
    }

    /// Deletes every object of the output bucket.
    pub async fn clear_outputs(&self) {
        for key in self.keys(OUTPUT_BUCKET, "").await {
            self.s3
                .delete_object()
                .bucket(OUTPUT_BUCKET)
                .key(&key)
                .send()
                .await
                .expect("delete output");
        }
    }
}

/// A queue and its dead-letter queue with the production redrive policy: (URL, ARN, DLQ URL).
pub async fn create_queue_pair(
    sqs: &aws_sdk_sqs::Client,
    name: &str,
    dlq_name: &str,
    visibility_timeout_s: u32,
) -> (String, String, String) {
    let dlq_url = sqs
        .create_queue()
        .queue_name(dlq_name)
        .send()
        .await
        .expect("create DLQ")
        .queue_url
        .unwrap();
    let dlq_arn = queue_arn(sqs, &dlq_url).await;
    let redrive =
        format!(r#"{{"deadLetterTargetArn":"{dlq_arn}","maxReceiveCount":"{MAX_RECEIVE_COUNT}"}}"#);
    let queue_url = sqs
        .create_queue()
        .queue_name(name)
        .attributes(
            QueueAttributeName::VisibilityTimeout,
            visibility_timeout_s.to_string(),
        )
        .attributes(QueueAttributeName::RedrivePolicy, redrive)
        .send()
        .await
        .expect("create queue")
        .queue_url
        .unwrap();
    let arn = queue_arn(sqs, &queue_url).await;
    (queue_url, arn, dlq_url)
}

/// Notifies the queue `queue_arn` of every object created under `prefix` in `bucket`.
async fn notify(s3: &aws_sdk_s3::Client, bucket: &str, id: &str, queue_arn: &str, prefix: &str) {
    let prefix = FilterRule::builder()
        .name(FilterRuleName::Prefix)
        .value(prefix)
        .build();
    let notification = QueueConfiguration::builder()
        .id(id)
        .queue_arn(queue_arn)
        .events("s3:ObjectCreated:*".into())
        .filter(
            NotificationConfigurationFilter::builder()
                .key(S3KeyFilter::builder().filter_rules(prefix).build())
                .build(),
        )
        .build()
        .unwrap();
    s3.put_bucket_notification_configuration()
        .bucket(bucket)
        .notification_configuration(
            NotificationConfiguration::builder()
                .queue_configurations(notification)
                .build(),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("notification configuration of {bucket}: {e:?}"));
}

/// Receives up to `max` messages of the queue at `queue_url`, long-polling up to `wait_s`.
pub async fn receive_from(
    sqs: &aws_sdk_sqs::Client,
    queue_url: &str,
    max: i32,
    wait_s: i32,
) -> Vec<Message> {
    sqs.receive_message()
        .queue_url(queue_url)
        .max_number_of_messages(max)
        .wait_time_seconds(wait_s)
        .message_system_attribute_names(MessageSystemAttributeName::All)
        .send()
        .await
        .expect("receive")
        .messages
        .unwrap_or_default()
}

async fn queue_arn(sqs: &aws_sdk_sqs::Client, queue_url: &str) -> String {
    sqs.get_queue_attributes()
        .queue_url(queue_url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .expect("queue attributes")
        .attributes
        .and_then(|a| a.get(&QueueAttributeName::QueueArn).cloned())
        .expect("queue ARN")
}

pub async fn put_upload(s3: &aws_sdk_s3::Client, upload: &Upload) {
    let mut put = s3
        .put_object()
        .bucket(UPLOADS_BUCKET)
        .key(&upload.key)
        .body(ByteStream::from(upload.bytes.clone()));
    for (name, value) in &upload.meta {
        put = put.metadata(name, value);
    }
    put.send()
        .await
        .unwrap_or_else(|e| panic!("upload {}: {e:?}", upload.key));
}

pub async fn list_keys(s3: &aws_sdk_s3::Client, bucket: &str, prefix: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let mut pages = s3
        .list_objects_v2()
        .bucket(bucket)
        .prefix(prefix)
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        let page = page.unwrap_or_else(|e| panic!("list {bucket}/{prefix}: {e:?}"));
        keys.extend(
            page.contents()
                .iter()
                .filter_map(|o| o.key().map(str::to_owned)),
        );
    }
    keys.sort();
    keys
}

/// The entries of a `DeleteMessageBatch` of up to ten received messages.
pub fn delete_entries(batch: &[Message]) -> Vec<DeleteMessageBatchRequestEntry> {
    batch
        .iter()
        .enumerate()
        .map(|(i, m)| {
            DeleteMessageBatchRequestEntry::builder()
                .id(format!("m{i}"))
                .receipt_handle(m.receipt_handle().unwrap())
                .build()
                .unwrap()
        })
        .collect()
}

pub async fn delete_messages(sqs: &aws_sdk_sqs::Client, queue_url: &str, messages: &[Message]) {
    for batch in messages.chunks(10) {
        let entries = delete_entries(batch);
        if entries.is_empty() {
            continue;
        }
        let out = sqs
            .delete_message_batch()
            .queue_url(queue_url)
            .set_entries(Some(entries))
            .send()
            .await
            .expect("delete messages");
        assert!(out.failed().is_empty(), "delete failed: {:?}", out.failed());
    }
}

/// The SQS event Lambda would deliver for `messages` received from the queue `queue_arn`.
pub fn sqs_event(queue_arn: &str, messages: &[Message]) -> SqsEvent {
    let records: Vec<serde_json::Value> = messages
        .iter()
        .map(|m| {
            let attributes: BTreeMap<String, String> = m
                .attributes()
                .map(|a| {
                    a.iter()
                        .map(|(k, v)| (k.as_str().to_owned(), v.clone()))
                        .collect()
                })
                .unwrap_or_default();
            serde_json::json!({
                "messageId": m.message_id(),
                "receiptHandle": m.receipt_handle(),
                "body": m.body(),
                "attributes": attributes,
                "messageAttributes": {},
                "md5OfBody": m.md5_of_body().unwrap_or_default(),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": REGION,
            })
        })
        .collect();
    serde_json::from_value(serde_json::json!({ "Records": records })).expect("SqsEvent")
}

/// The message ids a response reports failed, in order.
pub fn failed_ids(response: &SqsBatchResponse) -> Vec<String> {
    response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect()
}

pub fn is_test_event(message: &Message) -> bool {
    let body: serde_json::Value = serde_json::from_str(message.body().unwrap_or("")).unwrap();
    body["Event"] == "s3:TestEvent"
}

pub fn bodies(messages: &[Message]) -> Vec<&str> {
    messages.iter().map(|m| m.body().unwrap_or("")).collect()
}

/// The decoded keys a notification message names (none for the test event).
pub fn notified_keys(message: &Message) -> Vec<String> {
    match proflake::events::parse_notification(message.body().unwrap_or("")).expect("notification")
    {
        proflake::events::Notification::Test => Vec::new(),
        proflake::events::Notification::Objects(objects) => {
            objects.into_iter().map(|o| o.key).collect()
        }
    }
}

/// Hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Writes `objects` (key → bytes) under `dir`, keys as relative paths.
pub fn mirror(objects: &BTreeMap<String, Vec<u8>>, dir: &Path) {
    for (key, bytes) in objects {
        let path = dir.join(key);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
    }
}

/// The manifest of the upload `key` with content `bytes`, from a bucket snapshot: the one
/// whose source is that key and content.
pub fn manifest_of(
    outputs: &BTreeMap<String, Vec<u8>>,
    key: &str,
    bytes: &[u8],
) -> Option<proflake::Manifest> {
    let etag = proflake::store::content_etag(bytes);
    manifests(outputs)
        .map(|(_, m)| m)
        .find(|m| m.source.key == key && m.source.etag == etag)
}

/// Every manifest of a bucket snapshot, with its key.
fn manifests(
    outputs: &BTreeMap<String, Vec<u8>>,
) -> impl Iterator<Item = (&String, proflake::Manifest)> {
    outputs
        .iter()
        .filter(|(k, _)| proflake::Manifest::is_key(k))
        .map(|(k, m)| (k, serde_json::from_slice(m).expect("manifest parses")))
}

/// Where a client puts the metadata sidecar of the upload at `key` (docs/inputs.md).
pub fn sidecar_key(key: &str) -> String {
    format!("{key}.metadata.json")
}

/// What the key of an error report ends with: it goes next to its upload (docs/outputs.md).
pub const ERROR_REPORT_SUFFIX: &str = ".error.json";

/// Where the error report of the upload at `key` goes when it is quarantined.
pub fn error_report_key(key: &str) -> String {
    format!("{key}{ERROR_REPORT_SUFFIX}")
}

/// The source id of the conversion of `bytes` uploaded at `key` (one part, so its ETag is
/// [`content_etag`](proflake::store::content_etag)): it depends on the key and the content
/// alone, so a conversion in memory names it as the job does.
pub fn source_id_of(key: &str, bytes: &[u8]) -> String {
    let etag = proflake::store::content_etag(bytes);
    // Placed anywhere: the time changes no key.
    let options = proflake::ConvertOptions {
        received_at_ns: Some(0),
        ..proflake::ConvertOptions::default()
    };
    proflake::convert_upload(key, &etag, bytes, &options)
        .unwrap_or_else(|e| panic!("{key}: {e}"))
        .manifest
        .source
        .source_id
}

/// Where the pointers to the uploads' current conversions are (docs/outputs.md).
pub const POINTERS: &str = "converted/by-key/";

/// Whether `key`, listed under [`POINTERS`], is a pointer rather than a pending record.
pub fn is_pointer_key(key: &str) -> bool {
    key.strip_prefix(POINTERS)
        .is_some_and(|name| !name.contains('/') && name.ends_with(".json"))
}

/// The pointer to the current conversion of the upload `key` in a bucket snapshot
/// (`converted/by-key/<key_id>.json`): its key and what it says (`key`, `etag`, `source_id`,
/// `manifest_key`).
pub fn pointer_of(
    outputs: &BTreeMap<String, Vec<u8>>,
    key: &str,
) -> Option<(String, serde_json::Value)> {
    outputs
        .iter()
        .filter(|(k, _)| is_pointer_key(k))
        .map(|(k, p)| {
            let pointer: serde_json::Value = serde_json::from_slice(p).expect("pointer parses");
            (k.clone(), pointer)
        })
        .find(|(_, p)| p["key"] == key)
}

/// Every key one conversion writes to the output bucket, as a snapshot holds them: the outputs
/// its manifest lists, the manifest, and the key's pointer to its current conversion.
pub fn conversion_keys(
    outputs: &BTreeMap<String, Vec<u8>>,
    manifest: &proflake::Manifest,
) -> std::collections::BTreeSet<String> {
    let mut keys: std::collections::BTreeSet<String> =
        manifest.outputs.iter().map(|o| o.key.clone()).collect();
    keys.extend(
        manifests(outputs)
            .filter(|(_, m)| m.source.source_id == manifest.source.source_id)
            .map(|(k, _)| k.clone()),
    );
    keys.extend(pointer_of(outputs, &manifest.source.key).map(|(k, _)| k));
    keys
}

/// A store whose puts of the keys `fails` picks fail as the bucket failing would (a transient
/// error: the job is retried, and what it wrote before stays until something settles it).
pub struct FailingPuts<S> {
    /// The store.
    pub inner: S,
    /// Which puts fail.
    pub fails: fn(&str) -> bool,
}

impl<S: proflake::store::ObjectStore> proflake::store::ObjectStore for FailingPuts<S> {
    fn get(&self, key: &str) -> proflake::Result<Option<Vec<u8>>> {
        self.inner.get(key)
    }
    fn get_object(
        &self,
        key: &str,
        max_bytes: u64,
    ) -> proflake::Result<Option<(Vec<u8>, proflake::store::ObjectInfo)>> {
        self.inner.get_object(key, max_bytes)
    }
    fn exists(&self, key: &str) -> proflake::Result<bool> {
        self.inner.exists(key)
    }
    fn head(&self, key: &str) -> proflake::Result<Option<proflake::store::ObjectInfo>> {
        self.inner.head(key)
    }
    fn put(&self, key: &str, bytes: &[u8]) -> proflake::Result<()> {
        if (self.fails)(key) {
            return Err(proflake::ErrorKind::Storage { key: key.into() }.into());
        }
        self.inner.put(key, bytes)
    }
    fn delete(&self, key: &str) -> proflake::Result<()> {
        self.inner.delete(key)
    }
    fn list(&self, prefix: &str) -> proflake::Result<Vec<String>> {
        self.inner.list(prefix)
    }
}

impl Env {
    /// Reads the pointers to current conversions not read yet into `known` (upload key →
    /// pointer key): a pointer's key never changes, so each is read once.
    pub async fn learn_pointers(&self, known: &mut HashMap<String, String>) {
        let seen: std::collections::HashSet<String> = known.values().cloned().collect();
        for pointer_key in self.keys(OUTPUT_BUCKET, POINTERS).await {
            if !is_pointer_key(&pointer_key) || seen.contains(&pointer_key) {
                continue;
            }
            if let Some(bytes) = self.get(OUTPUT_BUCKET, &pointer_key).await {
                let pointer: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
                let key = pointer["key"].as_str().expect("a pointer names its key");
                known.insert(key.to_owned(), pointer_key);
            }
        }
    }

    /// The pointer to the current conversion of the upload at `key`, if there is one.
    pub async fn pointer(
        &self,
        known: &mut HashMap<String, String>,
        key: &str,
    ) -> Option<serde_json::Value> {
        if !known.contains_key(key) {
            self.learn_pointers(known).await;
        }
        let bytes = self.get(OUTPUT_BUCKET, known.get(key)?).await?;
        Some(serde_json::from_slice(&bytes).unwrap())
    }

    /// Converts the upload at `key` as a job would, with the output bucket's puts of the keys
    /// `fails` picks failing: a job cut short, that leaves its pending record and what it wrote
    /// before.
    pub async fn cut_short(&self, key: &str, fails: fn(&str) -> bool) {
        let (s3, key) = (self.s3.clone(), key.to_owned());
        let runtime = tokio::runtime::Handle::current();
        let result = tokio::task::spawn_blocking(move || {
            let uploads =
                proflake::store::S3Store::new(s3.clone(), UPLOADS_BUCKET, runtime.clone());
            let outputs = FailingPuts {
                inner: proflake::store::S3Store::new(s3, OUTPUT_BUCKET, runtime),
                fails,
            };
            proflake::process_upload(
                &uploads,
                &outputs,
                &key,
                &proflake::ProcessOptions::default(),
            )
        })
        .await
        .unwrap();
        assert!(result.is_err(), "not cut short: {result:?}");
    }
}
