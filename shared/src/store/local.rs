//! A local directory used as the bucket.

use std::fs;
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::ObjectStore;
use crate::error::{Error, ErrorKind, Result};

/// Objects as files under a root directory; keys are relative paths.
#[derive(Clone, Debug)]
pub struct LocalDirStore {
    root: PathBuf,
}

impl LocalDirStore {
    /// A store rooted at `root` (created on first write).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        LocalDirStore { root: root.into() }
    }

    /// The file that holds `key`. Keys that would leave the root are refused.
    pub fn path(&self, key: &str) -> Result<PathBuf> {
        let rel = Path::new(key);
        let safe = !key.is_empty() && rel.components().all(|c| matches!(c, Component::Normal(_)));
        if !safe {
            let e = io::Error::new(io::ErrorKind::InvalidInput, "key is not a relative path");
            return Err(storage(key, e));
        }
        Ok(self.root.join(rel))
    }
}

fn storage(key: &str, e: io::Error) -> Error {
    Error::new(ErrorKind::Storage { key: key.into() }).with_source(e)
}

impl ObjectStore for LocalDirStore {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        match fs::read(self.path(key)?) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(storage(key, e)),
        }
    }

    fn put(&self, key: &str, bytes: &[u8]) -> Result<()> {
        let path = self.path(key)?;
        let dir = path.parent().unwrap_or(&self.root);
        fs::create_dir_all(dir).map_err(|e| storage(key, e))?;
        // Write beside the target and rename over it, so readers never see half an object.
        let mut tmp = tempfile_in(dir).map_err(|e| storage(key, e))?;
        tmp.1.write_all(bytes).map_err(|e| storage(key, e))?;
        tmp.1.sync_all().map_err(|e| storage(key, e))?;
        drop(tmp.1);
        fs::rename(&tmp.0, &path).map_err(|e| {
            let _ = fs::remove_file(&tmp.0);
            storage(key, e)
        })
    }
}

fn tempfile_in(dir: &Path) -> io::Result<(PathBuf, fs::File)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    for _ in 0..100u32 {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = format!(".proflake-{}-{n}.tmp", std::process::id());
        let path = dir.join(name);
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(f) => return Ok((path, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "no free temporary name",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_refuses_escaping_keys() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalDirStore::new(dir.path());
        assert_eq!(store.get("a/b.json").unwrap(), None);
        store.put("a/b.json", b"one").unwrap();
        store.put("a/b.json", b"two").unwrap();
        assert_eq!(store.get("a/b.json").unwrap().unwrap(), b"two");
        for bad in ["../x", "/etc/passwd", "", "a/../../x"] {
            let err = store.put(bad, b"x").unwrap_err();
            assert!(matches!(err.kind(), ErrorKind::Storage { .. }), "{bad}");
        }
        let leftovers: Vec<_> = fs::read_dir(dir.path().join("a")).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary files left behind");
    }
}
