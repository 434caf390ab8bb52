//! What an invocation needs besides its event: the settings and where the stores come from.

use std::sync::Arc;

use proflake::{ObjectStore, PrefixedStore, S3Store};

use crate::config::Config;

type StoreFn = dyn Fn(&str) -> Arc<dyn ObjectStore> + Send + Sync;

enum Stores {
    S3(aws_sdk_s3::Client),
    Custom(Box<StoreFn>),
}

struct Inner {
    config: Config,
    stores: Stores,
}

/// The function's state, built once per cold start and shared by its invocations. Cheap to
/// clone: each message task holds one.
#[derive(Clone)]
pub struct App {
    inner: Arc<Inner>,
}

/// The two stores one upload is processed with.
pub(crate) struct StorePair {
    pub(crate) uploads: Arc<dyn ObjectStore>,
    pub(crate) outputs: Arc<dyn ObjectStore>,
}

impl App {
    /// S3 client from the standard AWS environment (`AWS_ENDPOINT_URL` / `AWS_ENDPOINT_URL_S3`
    /// honoured by aws-config; path-style addressing when either is set, because moto and MinIO
    /// cannot resolve `bucket.host` names).
    pub async fn from_env(config: Config) -> App {
        let shared = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        let endpoint_set = ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"]
            .iter()
            .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()));
        let s3_config = aws_sdk_s3::config::Builder::from(&shared)
            .force_path_style(endpoint_set)
            .build();
        App::new(config, aws_sdk_s3::Client::from_conf(s3_config))
    }

    /// An app whose stores are buckets reached through `s3`.
    pub fn new(config: Config, s3: aws_sdk_s3::Client) -> App {
        App::build(config, Stores::S3(s3))
    }

    /// Stores from a function of the bucket name (tests use local directories).
    pub fn with_stores(
        config: Config,
        stores: impl Fn(&str) -> Arc<dyn ObjectStore> + Send + Sync + 'static,
    ) -> App {
        App::build(config, Stores::Custom(Box::new(stores)))
    }

    fn build(config: Config, stores: Stores) -> App {
        App {
            inner: Arc::new(Inner { config, stores }),
        }
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The bucket outputs of an upload in `upload_bucket` go to.
    pub(crate) fn output_bucket<'a>(&'a self, upload_bucket: &'a str) -> &'a str {
        self.config()
            .output_bucket
            .as_deref()
            .unwrap_or(upload_bucket)
    }

    /// Stores for an upload in `upload_bucket`, the output prefix applied to the outputs. Must
    /// be called inside the Tokio runtime: S3 stores keep its handle to drive the SDK from
    /// blocking threads.
    pub(crate) fn stores_for(&self, upload_bucket: &str) -> StorePair {
        let store = |bucket: &str| -> Arc<dyn ObjectStore> {
            match &self.inner.stores {
                Stores::S3(client) => Arc::new(S3Store::new(
                    client.clone(),
                    bucket,
                    tokio::runtime::Handle::current(),
                )),
                Stores::Custom(store) => store(bucket),
            }
        };
        StorePair {
            uploads: store(upload_bucket),
            outputs: PrefixedStore::wrap(
                store(self.output_bucket(upload_bucket)),
                &self.config().output_prefix,
            ),
        }
    }
}
