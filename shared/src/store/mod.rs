//! A small object-store abstraction: the bucket, or a local directory laid out like it.

mod keys;
mod local;

pub use keys::{
    chunk_key, content_etag, manifest_key, source_id, table_key, upload_key, CONVERTED_PREFIX,
    TABLES_PREFIX, UPLOADS_PREFIX,
};
pub use local::LocalDirStore;

use crate::error::Result;

/// Whole-object storage. `put` must be atomic: a reader sees the old object or the new one,
/// never part of one.
pub trait ObjectStore {
    /// The object at `key`, or `None` if there is none.
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>>;
    /// Stores `bytes` at `key`, replacing any object there.
    fn put(&self, key: &str, bytes: &[u8]) -> Result<()>;
}
