//! What an invocation needs besides its event: the settings and where the stores come from.

use std::sync::Arc;

use proflake::ObjectStore;
use proflake_lambda::{StorePair, Stores};

use crate::config::Config;

/// The function's state, built once per cold start and shared by its invocations. Cheap to
/// clone: each message task holds one.
#[derive(Clone)]
pub struct App {
    pub(crate) config: Arc<Config>,
    stores: Stores,
}

impl App {
    /// An app whose stores are buckets reached through `s3`.
    pub fn new(config: Config, s3: aws_sdk_s3::Client) -> App {
        App {
            config: Arc::new(config),
            stores: Stores::s3(s3),
        }
    }

    /// Stores from a function of the bucket name (tests use local directories).
    pub fn with_stores(
        config: Config,
        stores: impl Fn(&str) -> Arc<dyn ObjectStore> + Send + Sync + 'static,
    ) -> App {
        App {
            config: Arc::new(config),
            stores: Stores::custom(stores),
        }
    }

    /// Stores for an upload in `upload_bucket`, the output prefix applied to the outputs. Must
    /// be called inside the Tokio runtime: S3 stores keep its handle to drive the SDK from
    /// blocking threads.
    pub(crate) fn stores_for(&self, upload_bucket: &str) -> StorePair {
        self.stores.for_upload(&self.config.common, upload_bucket)
    }
}
