//! The tables of a bucket read in place (`--store s3://BUCKET[/PREFIX]`): the landing tables
//! through the S3 store, the lake through delta-rs, both reached with the standard AWS
//! environment, as the functions reach them.

use std::sync::Arc;

use proflake::lake::{Lake, LakeSettings};
use proflake::{store::PrefixedStore, store::S3Store};
use proflake::{tables::Table, tables::TablesFrom};

use crate::location::S3Location;
use crate::tiers::Tier;

/// Runs `read` on the tables of `bucket` in `tier`; `table` is the one the lake must have.
pub(crate) fn with_tables<T>(
    bucket: &S3Location,
    tier: Tier,
    table: Table,
    read: impl FnOnce(TablesFrom<'_>) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    // The S3 store and the lake block on this runtime from this thread, as the local lake does.
    let runtime = crate::lake::runtime()?;
    let shared = runtime.block_on(aws_config::load_defaults(
        aws_config::BehaviorVersion::latest(),
    ));
    // Without one the SDK fails each request with a message that does not say what to set.
    anyhow::ensure!(
        shared.region().is_some_and(|r| !r.as_ref().is_empty()),
        "no AWS region to reach {bucket} in: set AWS_REGION (or a profile's region)"
    );
    let s3 = S3Store::new(s3_client(&shared), &bucket.bucket, runtime.handle().clone());
    let store = PrefixedStore::wrap(Arc::new(s3), &bucket.prefix);
    match tier {
        Tier::Landing => read(TablesFrom::Landing(store.as_ref())),
        Tier::Lake => {
            let log = format!("{}{}/_delta_log/", Lake::PREFIX, table.name());
            anyhow::ensure!(
                !store.list_page(&log, None, 1)?.is_empty(),
                "{bucket} has no lake (nothing under {}): the publish function fills it, or \
                 read --tier landing",
                bucket.url_of(&log)
            );
            let lake = Lake::s3(
                &bucket.bucket,
                &bucket.prefix,
                Lake::s3_options_from_env(),
                runtime.handle().clone(),
                LakeSettings::default(),
            )?;
            read(TablesFrom::Lake(&lake))
        }
    }
}

/// An S3 client from `shared`, as the functions make theirs (`proflake_lambda::s3_client`):
/// path-style addressing when `AWS_ENDPOINT_URL` or `AWS_ENDPOINT_URL_S3` is set, because moto
/// and MinIO cannot resolve `bucket.host` names.
fn s3_client(shared: &aws_config::SdkConfig) -> aws_sdk_s3::Client {
    let endpoint_set = ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"]
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()));
    let config = aws_sdk_s3::config::Builder::from(shared)
        .force_path_style(endpoint_set)
        .build();
    aws_sdk_s3::Client::from_conf(config)
}
