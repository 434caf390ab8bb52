//! What an invocation needs besides its event: the settings and where the stores come from.

use std::sync::Arc;

use proflake_lambda::{s3_client_from_env, BucketStores, StorePair, Stores};

use crate::config::Config;

/// The function's state, built once per cold start and shared by its invocations. Cheap to
/// clone: each message task holds one.
#[derive(Clone)]
pub struct App {
    config: Arc<Config>,
    stores: Stores,
}

impl App {
    /// S3 client from the standard AWS environment (`AWS_ENDPOINT_URL` / `AWS_ENDPOINT_URL_S3`
    /// honoured by aws-config; path-style addressing when either is set, because moto and MinIO
    /// cannot resolve `bucket.host` names).
    pub async fn from_env(config: Config) -> App {
        App::new(config, s3_client_from_env().await)
    }

    /// An app whose stores are buckets reached through `s3`.
    pub fn new(config: Config, s3: aws_sdk_s3::Client) -> App {
        App {
            config: Arc::new(config),
            stores: Stores::s3(s3),
        }
    }

    /// Stores from a function of the bucket name (tests use local directories).
    pub fn with_stores(config: Config, stores: impl BucketStores) -> App {
        App {
            config: Arc::new(config),
            stores: Stores::custom(stores),
        }
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Stores for an upload in `upload_bucket`, the output prefix applied to the outputs. Must
    /// be called inside the Tokio runtime: S3 stores keep its handle to drive the SDK from
    /// blocking threads.
    pub(crate) fn stores_for(&self, upload_bucket: &str) -> StorePair {
        self.stores.for_upload(&self.config.common, upload_bucket)
    }
}

/// The shared settings, for `proflake_lambda`'s runtime.
impl AsRef<proflake_lambda::Config> for App {
    fn as_ref(&self) -> &proflake_lambda::Config {
        &self.config.common
    }
}
