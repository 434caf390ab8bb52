//! A store seen through a key prefix: outputs under a prefix of a bucket (the function's
//! `PROFLAKE_OUTPUT_PREFIX`), whatever the store.

use std::io::Read;
use std::sync::Arc;

use super::{ObjectInfo, ObjectStore, ObjectWriter};
use crate::error::Result;

/// Key `k` of this store is key `prefix + k` of the inner one.
pub struct PrefixedStore {
    inner: Arc<dyn ObjectStore>,
    prefix: String,
}

impl PrefixedStore {
    /// `inner` seen through `prefix`; `inner` itself when `prefix` is empty.
    pub fn wrap(inner: Arc<dyn ObjectStore>, prefix: &str) -> Arc<dyn ObjectStore> {
        if prefix.is_empty() {
            return inner;
        }
        Arc::new(PrefixedStore {
            inner,
            prefix: prefix.to_owned(),
        })
    }

    fn key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }
}

impl ObjectStore for PrefixedStore {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        self.inner.get(&self.key(key))
    }

    fn get_object(&self, key: &str, max_bytes: u64) -> Result<Option<(Vec<u8>, ObjectInfo)>> {
        self.inner.get_object(&self.key(key), max_bytes)
    }

    fn get_reader<'s>(
        &'s self,
        key: &str,
        max_bytes: u64,
    ) -> Result<Option<(Box<dyn Read + Send + 's>, ObjectInfo)>> {
        self.inner.get_reader(&self.key(key), max_bytes)
    }

    fn exists(&self, key: &str) -> Result<bool> {
        self.inner.exists(&self.key(key))
    }

    fn head(&self, key: &str) -> Result<Option<ObjectInfo>> {
        self.inner.head(&self.key(key))
    }

    fn put(&self, key: &str, bytes: &[u8]) -> Result<()> {
        self.inner.put(&self.key(key), bytes)
    }

    fn put_with_metadata(&self, key: &str, bytes: &[u8], metadata: &[(&str, &str)]) -> Result<()> {
        self.inner
            .put_with_metadata(&self.key(key), bytes, metadata)
    }

    fn put_writer<'s>(&'s self, key: &str) -> Result<Box<dyn ObjectWriter + 's>> {
        self.inner.put_writer(&self.key(key))
    }

    fn delete(&self, key: &str) -> Result<()> {
        self.inner.delete(&self.key(key))
    }

    fn list(&self, prefix: &str) -> Result<Vec<String>> {
        let keys = self.inner.list(&self.key(prefix))?;
        Ok(keys
            .into_iter()
            .filter_map(|k| k.strip_prefix(&self.prefix).map(str::to_owned))
            .collect())
    }

    /// The inner store's page (one bucket request, not the default's whole listing).
    fn list_page(&self, prefix: &str, after: Option<&str>, limit: usize) -> Result<Vec<String>> {
        let after = after.map(|a| self.key(a));
        let keys = self
            .inner
            .list_page(&self.key(prefix), after.as_deref(), limit)?;
        Ok(keys
            .into_iter()
            .filter_map(|k| k.strip_prefix(&self.prefix).map(str::to_owned))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::LocalDirStore;

    #[test]
    fn keys_are_prefixed_and_listed_without_the_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let inner: Arc<dyn ObjectStore> = Arc::new(LocalDirStore::new(dir.path()));
        let store = PrefixedStore::wrap(inner.clone(), "env/a/");
        store.put("converted/x.json", b"{}").unwrap();
        assert_eq!(inner.get("env/a/converted/x.json").unwrap().unwrap(), b"{}");
        assert!(store.exists("converted/x.json").unwrap());
        assert!(!inner.exists("converted/x.json").unwrap());
        let (bytes, info) = store.get_object("converted/x.json", 10).unwrap().unwrap();
        assert_eq!((bytes.as_slice(), info.size), (&b"{}"[..], 2));
        assert_eq!(store.list("converted/").unwrap(), ["converted/x.json"]);
        store.delete("converted/x.json").unwrap();
        assert_eq!(inner.get("env/a/converted/x.json").unwrap(), None);
    }

    #[test]
    fn pages_are_listed_through_the_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let inner: Arc<dyn ObjectStore> = Arc::new(LocalDirStore::new(dir.path()));
        inner.put("index/x", b"0").unwrap();
        let store = PrefixedStore::wrap(inner.clone(), "p/");
        for k in ["index/a", "index/b", "index/c"] {
            store.put(k, b"1").unwrap();
        }
        assert_eq!(
            store.list_page("index/", None, 2).unwrap(),
            ["index/a", "index/b"]
        );
        assert_eq!(
            store.list_page("index/", Some("index/b"), 2).unwrap(),
            ["index/c"]
        );
    }

    #[test]
    fn empty_prefix_is_the_store_itself() {
        let dir = tempfile::tempdir().unwrap();
        let inner: Arc<dyn ObjectStore> = Arc::new(LocalDirStore::new(dir.path()));
        assert!(Arc::ptr_eq(&PrefixedStore::wrap(inner.clone(), ""), &inner));
    }
}
