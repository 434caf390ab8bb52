//! A local directory used as the bucket.

use std::fs;
use std::io::{self, Read, Seek, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use md5::{Digest, Md5};
use rustc_hash::FxHashMap;

use super::writer::to_io;
use super::{too_large, ObjectInfo, ObjectStore, ObjectWriter};
use crate::error::{Error, ErrorKind, Result};

/// Objects as files under a root directory; keys are relative paths.
#[derive(Clone, Debug)]
pub struct LocalDirStore {
    root: PathBuf,
    /// ETags already hashed, by file. A conversion reads its upload and then checks (HEAD) it
    /// is unchanged; without this, a large upload would be read and hashed twice.
    etags: Arc<Mutex<FxHashMap<PathBuf, (FileVersion, String)>>>,
}

/// The buffer of a streamed write: objects written piece by piece reach the file in blocks
/// this large.
const WRITE_BUFFER_BYTES: usize = 256 * 1024;

/// What tells one content of a file from the next: `put` renames a new file into place, so
/// a rewrite changes the inode as well as the time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FileVersion {
    inode: u64,
    len: u64,
    modified_ns: i64,
}

impl FileVersion {
    fn of(meta: &fs::Metadata) -> Self {
        FileVersion {
            inode: meta.ino(),
            len: meta.len(),
            modified_ns: meta.mtime().saturating_mul(1_000_000_000) + meta.mtime_nsec(),
        }
    }
}

impl LocalDirStore {
    /// A store rooted at `root` (created on first write).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        LocalDirStore {
            root: root.into(),
            etags: Arc::default(),
        }
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

    /// Sets when the object at `key` was last written: a local upload of a file keeps the
    /// file's time, which the pipeline reads as the upload's arrival.
    pub fn set_modified(&self, key: &str, time: std::time::SystemTime) -> Result<()> {
        let path = self.path(key)?;
        let file = fs::File::options()
            .write(true)
            .open(&path)
            .map_err(|e| storage(key, e))?;
        file.set_modified(time).map_err(|e| storage(key, e))
    }
}

impl LocalDirStore {
    /// The file of `key` open, with its path and metadata; `None` if there is none. A file
    /// larger than `max_bytes` is refused.
    fn open(
        &self,
        key: &str,
        max_bytes: Option<u64>,
    ) -> Result<Option<(PathBuf, fs::File, fs::Metadata)>> {
        let path = self.path(key)?;
        let file = match fs::File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(storage(key, e)),
        };
        let meta = file.metadata().map_err(|e| storage(key, e))?;
        if let Some(max) = max_bytes.filter(|&max| meta.len() > max) {
            return Err(too_large(max));
        }
        Ok(Some((path, file, meta)))
    }

    /// The ETag of the open `file` at `path`: remembered for this version of the file, or
    /// hashed from the handle (which is then left at its end).
    fn etag(
        &self,
        key: &str,
        path: &Path,
        file: &mut fs::File,
        meta: &fs::Metadata,
    ) -> Result<String> {
        let version = FileVersion::of(meta);
        if let Some(etag) = self.remembered_etag(path, version) {
            return Ok(etag);
        }
        let mut md5 = Md5::new();
        io::copy(&mut file.take(meta.len()), &mut md5).map_err(|e| storage(key, e))?;
        let etag = hex::encode(md5.finalize());
        self.remember_etag(path, version, &etag);
        Ok(etag)
    }

    fn remembered_etag(&self, path: &Path, version: FileVersion) -> Option<String> {
        let etags = self.etags.lock().unwrap_or_else(|e| e.into_inner());
        etags
            .get(path)
            .filter(|(v, _)| *v == version)
            .map(|(_, etag)| etag.clone())
    }

    fn remember_etag(&self, path: &Path, version: FileVersion, etag: &str) {
        let mut etags = self.etags.lock().unwrap_or_else(|e| e.into_inner());
        etags.insert(path.to_owned(), (version, etag.to_owned()));
    }
}

fn info_of(meta: &fs::Metadata, etag: String) -> ObjectInfo {
    let last_modified_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .and_then(|d| i64::try_from(d.as_nanos()).ok());
    ObjectInfo {
        etag,
        size: meta.len(),
        last_modified_ns,
        user_metadata: Vec::new(),
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

    fn get_object(&self, key: &str, max_bytes: u64) -> Result<Option<(Vec<u8>, ObjectInfo)>> {
        let Some((path, file, meta)) = self.open(key, Some(max_bytes))? else {
            return Ok(None);
        };
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        // The file may grow between metadata() and the read: never read past the limit.
        file.take(max_bytes.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| storage(key, e))?;
        if bytes.len() as u64 > max_bytes {
            return Err(too_large(max_bytes));
        }
        let version = FileVersion::of(&meta);
        let etag = self.remembered_etag(&path, version).unwrap_or_else(|| {
            let etag = super::content_etag(&bytes);
            self.remember_etag(&path, version, &etag);
            etag
        });
        let mut info = info_of(&meta, etag);
        info.size = bytes.len() as u64;
        Ok(Some((bytes, info)))
    }

    fn get_reader<'s>(
        &'s self,
        key: &str,
        max_bytes: u64,
    ) -> Result<Option<(Box<dyn Read + Send + 's>, ObjectInfo)>> {
        let Some((path, mut file, meta)) = self.open(key, Some(max_bytes))? else {
            return Ok(None);
        };
        // Hashed through the handle that is then read, so both see the same file.
        let etag = self.etag(key, &path, &mut file, &meta)?;
        file.seek(io::SeekFrom::Start(0))
            .map_err(|e| storage(key, e))?;
        let reader = StoredFile {
            key: key.to_owned(),
            file: file.take(meta.len()),
        };
        Ok(Some((Box::new(reader), info_of(&meta, etag))))
    }

    fn head(&self, key: &str) -> Result<Option<ObjectInfo>> {
        let Some((path, mut file, meta)) = self.open(key, None)? else {
            return Ok(None);
        };
        let etag = self.etag(key, &path, &mut file, &meta)?;
        Ok(Some(info_of(&meta, etag)))
    }

    fn exists(&self, key: &str) -> Result<bool> {
        match fs::metadata(self.path(key)?) {
            Ok(meta) => Ok(meta.is_file()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(storage(key, e)),
        }
    }

    fn delete(&self, key: &str) -> Result<()> {
        let path = self.path(key)?;
        match fs::remove_file(&path) {
            Ok(()) => {
                self.remove_empty_parents(&path);
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(storage(key, e)),
        }
    }

    fn list(&self, prefix: &str) -> Result<Vec<String>> {
        // Walk from the deepest directory the prefix names, then filter by the whole prefix.
        let dir_part = prefix.rfind('/').map_or("", |i| &prefix[..i]);
        let start = if dir_part.is_empty() {
            self.root.clone()
        } else {
            self.path(dir_part)?
        };
        let mut keys = Vec::new();
        let mut pending = vec![start];
        while let Some(dir) = pending.pop() {
            let entries = match fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(storage(prefix, e)),
            };
            for entry in entries {
                let entry = entry.map_err(|e| storage(prefix, e))?;
                let path = entry.path();
                let kind = entry.file_type().map_err(|e| storage(prefix, e))?;
                if kind.is_dir() {
                    pending.push(path);
                    continue;
                }
                let name = entry.file_name();
                if name.to_string_lossy().starts_with(".proflake-") {
                    continue; // a write in progress
                }
                let Ok(rel) = path.strip_prefix(&self.root) else {
                    continue;
                };
                let key: Vec<_> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect();
                let key = key.join("/");
                if key.starts_with(prefix) {
                    keys.push(key);
                }
            }
        }
        keys.sort();
        Ok(keys)
    }

    fn put(&self, key: &str, bytes: &[u8]) -> Result<()> {
        // The bytes are whole already: written straight to the file, through no buffer.
        // No ETag is worked out here: only an upload's is ever compared (its conversion's id
        // is made from it), and it is hashed once, when first read, and remembered. Hashing
        // every object put would hash every output a conversion writes for no reader.
        let mut writer = self.file_writer(key, 0)?;
        writer
            .write_all(bytes)
            .map_err(|e| super::from_io(key, e))?;
        Box::new(writer).finish()
    }

    fn put_writer<'s>(&'s self, key: &str) -> Result<Box<dyn ObjectWriter + 's>> {
        Ok(Box::new(self.file_writer(key, WRITE_BUFFER_BYTES)?))
    }
}

impl LocalDirStore {
    /// S3 has no directories, so a directory a delete leaves empty goes too, up to the root:
    /// the local bucket then looks as its listing does. A directory that is not empty stays.
    fn remove_empty_parents(&self, path: &Path) {
        let mut dir = path.parent();
        while let Some(d) = dir.filter(|d| *d != self.root && d.starts_with(&self.root)) {
            if fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
    }

    /// A writer of `key` through a buffer of `buffer` bytes.
    fn file_writer(&self, key: &str, buffer: usize) -> Result<FileWriter> {
        let path = self.path(key)?;
        let dir = path.parent().unwrap_or(&self.root);
        // Written beside the target and renamed over it, so readers never see half an object.
        // A delete in another thread may remove the directory between its creation and the
        // temporary file's (`NotFound`), or while `create_dir_all` checks that a directory it
        // found is one (`AlreadyExists`): then it is made again.
        let mut attempts = 0;
        let (tmp, file) = loop {
            match fs::create_dir_all(dir).and_then(|()| tempfile_in(dir)) {
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::NotFound | io::ErrorKind::AlreadyExists
                    ) && attempts < 8 =>
                {
                    attempts += 1
                }
                made => break made.map_err(|e| storage(key, e))?,
            }
        };
        Ok(FileWriter {
            key: key.to_owned(),
            path,
            tmp: Some(tmp),
            file: Some(io::BufWriter::with_capacity(buffer, file)),
        })
    }
}

/// A stored file being read: its errors are storage errors on its key.
struct StoredFile {
    key: String,
    file: io::Take<fs::File>,
}

impl Read for StoredFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.file
            .read(buf)
            .map_err(|e| to_io(storage(&self.key, e)))
    }
}

/// An object on its way into a temporary file, renamed into place at `finish`.
struct FileWriter {
    key: String,
    path: PathBuf,
    /// The temporary file, until renamed.
    tmp: Option<PathBuf>,
    file: Option<io::BufWriter<fs::File>>,
}

impl Write for FileWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let file = self.file.as_mut().expect("written after finish");
        file.write(buf).map_err(|e| to_io(storage(&self.key, e)))
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let file = self.file.as_mut().expect("written after finish");
        file.write_all(buf)
            .map_err(|e| to_io(storage(&self.key, e)))
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl ObjectWriter for FileWriter {
    fn finish(mut self: Box<Self>) -> Result<()> {
        let key = self.key.clone();
        let file = self.file.take().expect("finished once");
        let file = file
            .into_inner()
            .map_err(|e| storage(&key, e.into_error()))?;
        file.sync_all().map_err(|e| storage(&key, e))?;
        drop(file);
        let tmp = self.tmp.take().expect("finished once");
        fs::rename(&tmp, &self.path).map_err(|e| {
            let _ = fs::remove_file(&tmp);
            storage(&key, e)
        })?;
        Ok(())
    }
}

impl Drop for FileWriter {
    fn drop(&mut self) {
        // Unfinished: the object never appears.
        if let Some(tmp) = self.tmp.take() {
            // Without flushing what is buffered: it would only be deleted.
            drop(self.file.take().map(io::BufWriter::into_parts));
            let _ = fs::remove_file(tmp);
        }
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

    /// Every file (or, with `want_dirs`, every directory) under `dir`, relative to it,
    /// temporary files included.
    fn walk(dir: &Path, want_dirs: bool) -> Vec<String> {
        let mut out = Vec::new();
        let mut pending = vec![dir.to_owned()];
        while let Some(d) = pending.pop() {
            for entry in fs::read_dir(d).unwrap() {
                let path = entry.unwrap().path();
                let is_dir = path.is_dir();
                if is_dir == want_dirs {
                    out.push(path.strip_prefix(dir).unwrap().display().to_string());
                }
                if is_dir {
                    pending.push(path);
                }
            }
        }
        out.sort();
        out
    }

    fn files(dir: &Path) -> Vec<String> {
        walk(dir, false)
    }

    fn dirs(dir: &Path) -> Vec<String> {
        walk(dir, true)
    }

    #[test]
    fn streamed_objects_appear_whole_at_finish_and_never_when_abandoned() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalDirStore::new(dir.path());
        store.put("a/b.json", b"old").unwrap();
        let mut writer = store.put_writer("a/b.json").unwrap();
        let bytes: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
        for piece in bytes.chunks(4099) {
            writer.write_all(piece).unwrap();
        }
        // Until it finishes, readers see the old object.
        assert_eq!(store.get("a/b.json").unwrap().unwrap(), b"old");
        writer.finish().unwrap();
        assert_eq!(store.get("a/b.json").unwrap().unwrap(), bytes);

        let mut abandoned = store.put_writer("a/c.json").unwrap();
        abandoned.write_all(&bytes).unwrap();
        drop(abandoned);
        let mut replaced = store.put_writer("a/b.json").unwrap();
        replaced.write_all(b"never seen").unwrap();
        drop(replaced);
        assert_eq!(store.get("a/b.json").unwrap().unwrap(), bytes);
        assert_eq!(files(dir.path()), vec!["a/b.json".to_owned()]);
    }

    #[test]
    fn objects_with_info_list_and_delete() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalDirStore::new(dir.path());
        store.put("uploads/a.bin", b"abc").unwrap();
        store.put("uploads/sub/b.bin", b"").unwrap();
        store.put("other/c.bin", b"x").unwrap();
        let (bytes, info) = store.get_object("uploads/a.bin", 3).unwrap().unwrap();
        assert_eq!(bytes, b"abc");
        assert_eq!(info.etag, "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(info.size, 3);
        assert!(info.last_modified_ns.unwrap() > 0);
        let err = store.get_object("uploads/a.bin", 2).unwrap_err();
        assert!(matches!(
            err.kind(),
            ErrorKind::LimitExceeded { max: 2, .. }
        ));
        assert_eq!(store.get_object("uploads/none", 9).unwrap(), None);
        // HEAD hashes without reading the object into memory, and a rewrite is seen even
        // at the same size within the same clock tick.
        assert_eq!(store.head("uploads/a.bin").unwrap().unwrap(), info);
        store.put("uploads/a.bin", b"abd").unwrap();
        let fresh = LocalDirStore::new(dir.path())
            .head("uploads/a.bin")
            .unwrap();
        assert_eq!(store.head("uploads/a.bin").unwrap(), fresh);
        assert_ne!(fresh.unwrap().etag, info.etag);
        assert_eq!(store.head("uploads/none").unwrap(), None);
        assert_eq!(
            store.list("uploads/").unwrap(),
            ["uploads/a.bin", "uploads/sub/b.bin"]
        );
        assert_eq!(store.list("uploads/a").unwrap(), ["uploads/a.bin"]);
        assert_eq!(store.list("nothing/").unwrap(), Vec::<String>::new());
        assert_eq!(store.list("").unwrap().len(), 3);
        assert!(store.exists("other/c.bin").unwrap());
        store.delete("other/c.bin").unwrap();
        store.delete("other/c.bin").unwrap();
        assert!(!store.exists("other/c.bin").unwrap());
    }

    #[test]
    fn deletes_leave_no_empty_directories() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalDirStore::new(dir.path());
        store.put("a/b/c/pending/x.json", b"x").unwrap();
        store.put("a/b/y.json", b"y").unwrap();
        store.delete("a/b/c/pending/x.json").unwrap();
        assert_eq!(dirs(dir.path()), ["a", "a/b"]);
        store.delete("a/b/y.json").unwrap();
        assert_eq!(dirs(dir.path()), Vec::<String>::new());
        assert!(dir.path().is_dir(), "the root stays");

        // Puts into a directory that deletes in another thread keep emptying all succeed.
        std::thread::scope(|scope| {
            scope.spawn(|| {
                for i in 0..2_000 {
                    store.put("d/e/put.json", b"p").unwrap();
                    if i % 2 == 0 {
                        store.delete("d/e/put.json").unwrap();
                    }
                }
            });
            for _ in 0..2_000 {
                store.put("d/e/other.json", b"o").unwrap();
                store.delete("d/e/other.json").unwrap();
            }
        });
        assert_eq!(files(dir.path()), ["d/e/put.json"]);
    }
}
