//! A small object-store abstraction: the bucket, or a local directory laid out like it.

pub(crate) mod keys;
mod local;
mod prefixed;
#[cfg(feature = "s3")]
mod s3;
mod upload;
mod writer;

pub use keys::content_etag;
#[cfg(test)]
pub(crate) use keys::TABLES_PREFIX;
pub(crate) use keys::{
    build_id_index_key, build_id_index_prefix, by_key_prefix, chunk_key, conversion_prefix,
    current_conversion_key, debug_file_key, debug_info_key, debug_meta_key, direct_upload_key,
    error_report_key, is_debug_meta_key, is_manifest_key, manifest_key, pending_conversion_key,
    pending_conversion_of, pending_conversions_prefix, pointer_key, profile_key_of_sidecar,
    received_upload_key, sidecar_key, source_id, symcache_key, table_key, table_prefix,
    DebugInfoKey, BUILD_ID_INDEX_PREFIX, DEBUGINFO_PREFIX, ERROR_REPORT_SUFFIX,
    SIDECAR_ETAG_METADATA,
};
#[cfg(feature = "lake")]
pub(crate) use keys::{
    key_id, key_id_of_pointer, key_id_of_published, publish_batch_key, published_key,
    unpublishable_report_key, LAKE_PREFIX, PUBLISHED_PREFIX, PUBLISH_BATCHES_PREFIX,
};
pub use local::LocalDirStore;
pub use prefixed::PrefixedStore;
#[cfg(feature = "s3")]
pub use s3::S3Store;
pub use upload::{list_uploads, store_upload};
pub(crate) use writer::from_io;
pub use writer::ObjectWriter;

use std::io::{self, Read};

use crate::error::Result;
use writer::BufferedPut;

/// What a store knows of an object besides its bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjectInfo {
    /// ETag without quotes (the hex MD5 of the bytes for single-part uploads).
    pub etag: String,
    /// Size in bytes.
    pub size: u64,
    /// When the object was last written, ns since the Unix epoch.
    pub last_modified_ns: Option<i64>,
    /// User metadata (S3 `x-amz-meta-*`), names lowercase without the prefix.
    pub user_metadata: Vec<(String, String)>,
}

/// Whole-object storage. `put` must be atomic: a reader sees the old object or the new one,
/// never part of one. Every method fails with [`ErrorKind::Storage`](crate::ErrorKind::Storage)
/// (transient) when the store itself fails.
pub trait ObjectStore: Send + Sync {
    /// The object at `key`, or `None` if there is none.
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>>;
    /// The object at `key` with what the store knows of it, or `None` if there is none. An
    /// object larger than `max_bytes` is refused with
    /// [`ErrorKind::LimitExceeded`](crate::ErrorKind::LimitExceeded) without being read whole.
    fn get_object(&self, key: &str, max_bytes: u64) -> Result<Option<(Vec<u8>, ObjectInfo)>>;
    /// The object at `key` as a stream of its bytes, with what the store knows of it, or
    /// `None` if there is none; refused like [`get_object`](ObjectStore::get_object) past
    /// `max_bytes`. Read errors carry the store's error (see `from_io`). The default reads
    /// the object whole; stores that can stream override it.
    fn get_reader<'s>(
        &'s self,
        key: &str,
        max_bytes: u64,
    ) -> Result<Option<(Box<dyn Read + Send + 's>, ObjectInfo)>> {
        Ok(self.get_object(key, max_bytes)?.map(|(bytes, info)| {
            (
                Box::new(io::Cursor::new(bytes)) as Box<dyn Read + Send>,
                info,
            )
        }))
    }
    /// Whether an object exists at `key`.
    fn exists(&self, key: &str) -> Result<bool>;
    /// What the store knows of the object at `key` without its bytes, or `None` if there is
    /// none. The default reads the object; stores that can do better override it.
    fn head(&self, key: &str) -> Result<Option<ObjectInfo>> {
        Ok(self.get_object(key, u64::MAX)?.map(|(_, info)| info))
    }
    /// Stores `bytes` at `key`, replacing any object there.
    fn put(&self, key: &str, bytes: &[u8]) -> Result<()>;
    /// [`put`](ObjectStore::put) with user metadata (S3 `x-amz-meta-*`, names without the
    /// prefix). A store that keeps no user metadata (a local directory) stores the bytes alone,
    /// which is the default.
    fn put_with_metadata(&self, key: &str, bytes: &[u8], metadata: &[(&str, &str)]) -> Result<()> {
        let _ = metadata;
        self.put(key, bytes)
    }
    /// Starts writing the object at `key` piece by piece; it replaces any object there when
    /// the writer finishes. The default collects the bytes and `put`s them; stores that can
    /// stream override it.
    fn put_writer<'s>(&'s self, key: &str) -> Result<Box<dyn ObjectWriter + 's>> {
        Ok(Box::new(BufferedPut::new(self, key)))
    }
    /// Removes the object at `key`; removing a missing object is not an error.
    fn delete(&self, key: &str) -> Result<()>;
    /// Every key that starts with `prefix`, sorted.
    fn list(&self, prefix: &str) -> Result<Vec<String>>;
    /// At most `limit` keys that start with `prefix` and sort after `after`, sorted: one page
    /// of a listing too large to hold at once. The default lists everything; the bucket asks
    /// for one page.
    fn list_page(&self, prefix: &str, after: Option<&str>, limit: usize) -> Result<Vec<String>> {
        Ok(self
            .list(prefix)?
            .into_iter()
            .filter(|k| after.is_none_or(|a| k.as_str() > a))
            .take(limit)
            .collect())
    }
}

/// The error for an object over the size limit.
pub(crate) fn too_large(max_bytes: u64) -> crate::Error {
    crate::ErrorKind::LimitExceeded {
        limit: "object size in bytes",
        max: max_bytes,
    }
    .into()
}
