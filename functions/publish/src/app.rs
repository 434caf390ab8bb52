//! What an invocation needs besides its event: the settings, the stores, and the lake.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use proflake::lake::Lake;
use proflake_lambda::{aws_config_from_env, s3_client, BucketStores, StorePair, Stores};

use crate::config::Config;

/// Where the lake's tables are.
#[derive(Clone, Debug)]
pub enum LakeRoot {
    /// In the output bucket, under the output prefix: `s3://<bucket>/<prefix>lake/`, with
    /// these delta-rs storage options (endpoint, region, credentials).
    S3(HashMap<String, String>),
    /// Under a directory per bucket (tests): `<dir>/<bucket>/<prefix>lake/`.
    Directory(PathBuf),
}

/// The function's state, built once per cold start and shared by its invocations.
#[derive(Clone)]
pub struct App {
    config: Arc<Config>,
    stores: Stores,
    lake_root: Arc<LakeRoot>,
}

impl App {
    /// The S3 client from the standard AWS environment (`AWS_ENDPOINT_URL` honoured, with
    /// path-style addressing), the lake in the output bucket.
    pub async fn from_env(config: Config) -> App {
        let shared = aws_config_from_env().await;
        let lake = LakeRoot::S3(proflake::lake::Lake::s3_options_from_env());
        App::with(config, Stores::s3(s3_client(&shared)), lake)
    }

    /// Buckets reached through `s3`, the lake in the output bucket reached with
    /// `lake_options` (tests point both at moto).
    pub fn new(
        config: Config,
        s3: aws_sdk_s3::Client,
        lake_options: HashMap<String, String>,
    ) -> App {
        App::with(config, Stores::s3(s3), LakeRoot::S3(lake_options))
    }

    /// Stores from a function of the bucket name and the lake under `root` (tests).
    pub fn with_stores(config: Config, stores: impl BucketStores, root: LakeRoot) -> App {
        App::with(config, Stores::custom(stores), root)
    }

    fn with(config: Config, stores: Stores, lake_root: LakeRoot) -> App {
        let config = Arc::new(config);
        let lake_root = Arc::new(lake_root);
        App {
            config,
            stores,
            lake_root,
        }
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The upload bucket, and the output bucket under the output prefix. Must be called
    /// inside the Tokio runtime (S3 stores keep its handle).
    pub(crate) fn stores(&self) -> StorePair {
        let upload_bucket = &self.config.upload_bucket;
        self.stores.for_upload(&self.config.common, upload_bucket)
    }

    /// The lake. Must be called inside the Tokio runtime, whose handle it blocks on.
    pub(crate) fn lake(&self) -> proflake::Result<Lake> {
        let config = &self.config;
        let runtime = tokio::runtime::Handle::current();
        let prefix = &config.common.output_prefix;
        match &*self.lake_root {
            LakeRoot::S3(options) => Lake::s3(
                &config.output_bucket,
                prefix,
                options.clone(),
                runtime,
                config.lake.clone(),
            ),
            LakeRoot::Directory(dir) => Lake::local(
                &dir.join(&config.output_bucket).join(prefix),
                runtime,
                config.lake.clone(),
            ),
        }
    }
}

/// The shared settings, for `proflake_lambda`'s runtime.
impl AsRef<proflake_lambda::Config> for App {
    fn as_ref(&self) -> &proflake_lambda::Config {
        &self.config.common
    }
}
