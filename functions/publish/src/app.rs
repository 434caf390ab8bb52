//! What an invocation needs besides its event: the settings, the stores, and the lake.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use proflake::lake::Lake;
use proflake::ObjectStore;
use proflake_lambda::{StorePair, Stores};

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
    pub(crate) config: Arc<Config>,
    stores: Stores,
    lake_root: Arc<LakeRoot>,
}

impl App {
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
    pub fn with_stores(
        config: Config,
        stores: impl Fn(&str) -> Arc<dyn ObjectStore> + Send + Sync + 'static,
        root: LakeRoot,
    ) -> App {
        App::with(config, Stores::custom(stores), root)
    }

    pub(crate) fn with(config: Config, stores: Stores, lake_root: LakeRoot) -> App {
        let config = Arc::new(config);
        let lake_root = Arc::new(lake_root);
        App {
            config,
            stores,
            lake_root,
        }
    }

    /// The upload bucket, and the output bucket under the output prefix. Must be called
    /// inside the Tokio runtime (S3 stores keep its handle).
    pub(crate) fn stores(&self) -> StorePair {
        let config = &self.config;
        self.stores
            .for_upload(&config.common, &config.upload_bucket)
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
