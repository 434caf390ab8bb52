//! What an invocation needs besides its event: the settings, the stores, and the function's
//! own queue for continuation messages.

use std::sync::{Arc, Mutex};

use proflake_lambda::{aws_config_from_env, s3_client, BucketStores, StorePair, Stores};

use crate::config::Config;

/// Where continuation messages go: the function's own SQS queue, or a list in memory (tests).
#[derive(Clone)]
pub struct ContinuationQueue {
    target: Target,
}

#[derive(Clone)]
enum Target {
    Sqs {
        client: aws_sdk_sqs::Client,
        url: String,
    },
    Memory(Arc<Mutex<Vec<String>>>),
}

impl ContinuationQueue {
    /// The SQS queue at `url`.
    pub fn sqs(client: aws_sdk_sqs::Client, url: impl Into<String>) -> Self {
        ContinuationQueue {
            target: Target::Sqs {
                client,
                url: url.into(),
            },
        }
    }

    /// A queue in memory; [`ContinuationQueue::sent`] returns what was sent to it.
    pub fn memory() -> Self {
        ContinuationQueue {
            target: Target::Memory(Arc::default()),
        }
    }

    /// The bodies sent to a memory queue, in order (empty for SQS).
    pub fn sent(&self) -> Vec<String> {
        match &self.target {
            Target::Memory(sent) => sent.lock().expect("not poisoned").clone(),
            Target::Sqs { .. } => Vec::new(),
        }
    }

    /// Sends one message body.
    pub(crate) async fn send(&self, body: String) -> Result<(), String> {
        match &self.target {
            Target::Sqs { client, url } => client
                .send_message()
                .queue_url(url)
                .message_body(body)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| format!("{}", aws_sdk_sqs::error::DisplayErrorContext(e))),
            Target::Memory(sent) => {
                sent.lock().expect("not poisoned").push(body);
                Ok(())
            }
        }
    }
}

/// The function's state, built once per cold start and shared by its invocations. Cheap to
/// clone: each message task holds one.
#[derive(Clone)]
pub struct App {
    config: Arc<Config>,
    stores: Stores,
    queue: ContinuationQueue,
}

impl App {
    /// S3 and SQS clients from the standard AWS environment (`AWS_ENDPOINT_URL` honoured by
    /// aws-config; path-style S3 addressing when it is set); continuations go to
    /// `PROFLAKE_REHYDRATE_QUEUE_URL`.
    pub async fn from_env(config: Config) -> App {
        let shared = aws_config_from_env().await;
        let sqs = aws_sdk_sqs::Client::new(&shared);
        App::new(config, s3_client(&shared), sqs)
    }

    /// An app whose stores are buckets reached through `s3` and whose continuations go to the
    /// configured queue through `sqs`.
    pub fn new(config: Config, s3: aws_sdk_s3::Client, sqs: aws_sdk_sqs::Client) -> App {
        let queue = ContinuationQueue::sqs(sqs, config.queue_url.clone());
        App::with(config, Stores::s3(s3), queue)
    }

    /// Stores from a function of the bucket name (tests use local directories), continuations
    /// to `queue`.
    pub fn with_stores(config: Config, stores: impl BucketStores, queue: ContinuationQueue) -> App {
        App::with(config, Stores::custom(stores), queue)
    }

    fn with(config: Config, stores: Stores, queue: ContinuationQueue) -> App {
        let config = Arc::new(config);
        App {
            config,
            stores,
            queue,
        }
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Where continuations go.
    pub fn queue(&self) -> &ContinuationQueue {
        &self.queue
    }

    /// The upload bucket, and the output bucket under the output prefix. Must be called inside
    /// the Tokio runtime: S3 stores keep its handle to drive the SDK from blocking threads.
    pub(crate) fn stores(&self) -> StorePair {
        let upload_bucket = &self.config.upload_bucket;
        self.stores.for_upload(&self.config.common, upload_bucket)
    }
}

/// The shared settings, for `proflake_lambda`'s runtime.
impl AsRef<proflake_lambda::Config> for App {
    fn as_ref(&self) -> &proflake_lambda::Config {
        &self.config.common
    }
}
