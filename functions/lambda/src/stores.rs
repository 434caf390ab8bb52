//! Where a function's object stores come from: S3 buckets in production, anything the caller
//! likes in tests.

use std::sync::Arc;

use proflake::{store::ObjectStore, store::PrefixedStore, store::S3Store};

use crate::config::Config;

/// The shared AWS configuration from the standard environment (`AWS_REGION`, credentials,
/// `AWS_ENDPOINT_URL` and the per-service `AWS_ENDPOINT_URL_<SERVICE>` honoured by aws-config).
/// Load it once and build each service's client from it.
pub async fn aws_config_from_env() -> aws_config::SdkConfig {
    aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await
}

/// An S3 client from `shared`; path-style addressing when `AWS_ENDPOINT_URL` or
/// `AWS_ENDPOINT_URL_S3` is set, because moto and MinIO cannot resolve `bucket.host` names.
pub fn s3_client(shared: &aws_config::SdkConfig) -> aws_sdk_s3::Client {
    let endpoint_set = ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"]
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()));
    let s3_config = aws_sdk_s3::config::Builder::from(shared)
        .force_path_style(endpoint_set)
        .build();
    aws_sdk_s3::Client::from_conf(s3_config)
}

/// An S3 client from the standard AWS environment: [`s3_client`] of
/// [`aws_config_from_env`].
pub async fn s3_client_from_env() -> aws_sdk_s3::Client {
    s3_client(&aws_config_from_env().await)
}

/// The store of a bucket, by the bucket's name: what tests give a function instead of S3.
pub trait BucketStores: Fn(&str) -> Arc<dyn ObjectStore> + Send + Sync + 'static {}

impl<T: Fn(&str) -> Arc<dyn ObjectStore> + Send + Sync + 'static> BucketStores for T {}

#[derive(Clone)]
enum Source {
    S3(aws_sdk_s3::Client),
    Custom(Arc<dyn BucketStores>),
}

/// The store of each bucket, by the bucket's name. Cheap to clone: a function's state holds
/// one, and each message's task a clone of that.
#[derive(Clone)]
pub struct Stores {
    source: Source,
}

/// The two stores one upload is processed with.
pub struct StorePair {
    /// The bucket the upload is in.
    pub uploads: Arc<dyn ObjectStore>,
    /// Where its outputs go: the output bucket, under the output prefix.
    pub outputs: Arc<dyn ObjectStore>,
}

impl Stores {
    /// Buckets reached through `client`.
    pub fn s3(client: aws_sdk_s3::Client) -> Stores {
        Stores {
            source: Source::S3(client),
        }
    }

    /// Stores from a function of the bucket name (tests use local directories).
    pub fn custom(stores: impl BucketStores) -> Stores {
        Stores {
            source: Source::Custom(Arc::new(stores)),
        }
    }

    /// The store of `bucket`. Must be called inside the Tokio runtime: S3 stores keep its
    /// handle to drive the SDK from blocking threads.
    pub fn bucket(&self, bucket: &str) -> Arc<dyn ObjectStore> {
        match &self.source {
            Source::S3(client) => Arc::new(S3Store::new(
                client.clone(),
                bucket,
                tokio::runtime::Handle::current(),
            )),
            Source::Custom(store) => store(bucket),
        }
    }

    /// The stores for an upload in `upload_bucket`: the outputs in `config`'s output bucket,
    /// under its output prefix. Must be called inside the Tokio runtime, like
    /// [`Stores::bucket`].
    pub fn for_upload(&self, config: &Config, upload_bucket: &str) -> StorePair {
        StorePair {
            uploads: self.bucket(upload_bucket),
            outputs: PrefixedStore::wrap(
                self.bucket(config.output_bucket(upload_bucket)),
                &config.output_prefix,
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Vars;
    use proflake::store::LocalDirStore;

    #[test]
    fn outputs_go_to_the_output_bucket_under_the_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_owned();
        let stores = Stores::custom(move |bucket| {
            Arc::new(LocalDirStore::new(root.join(bucket))) as Arc<dyn ObjectStore>
        });
        let vars = Vars::from_lookup(|name| match name {
            "PROFLAKE_OUTPUT_BUCKET" => Some("out".into()),
            "PROFLAKE_OUTPUT_PREFIX" => Some("p/".into()),
            _ => None,
        });
        let config = Config::from_vars(&vars, "test-fn").unwrap();
        let pair = stores.for_upload(&config, "up");
        pair.uploads.put("a", b"1").unwrap();
        pair.outputs.put("b", b"2").unwrap();
        assert!(dir.path().join("up/a").is_file());
        assert!(dir.path().join("out/p/b").is_file());

        let same_bucket = Config::from_vars(&Vars::from_lookup(|_| None), "test-fn").unwrap();
        let pair = stores.for_upload(&same_bucket, "up");
        pair.outputs.put("c", b"3").unwrap();
        assert!(dir.path().join("up/c").is_file());
    }
}
