//! Putting an upload into the store: streamed, and never over different bytes.

use std::io::Read;

use super::keys::{
    sidecar_key, upload_key, ERROR_REPORT_SUFFIX, METADATA_SIDECAR_SUFFIX, UPLOADS_PREFIX,
};
use super::{from_io, ObjectStore};
use crate::error::{ErrorKind, Result};

/// Stores the file `file_name` as an upload, with its metadata sidecar (JSON, see
/// [`UploadMetadata`](crate::UploadMetadata)) beside it when there is one, and returns the
/// upload's key (`uploads/<file_name>`), the key [`process_upload`](crate::process_upload)
/// converts. `upload` is read as a stream, so a large file is never held whole; a different
/// object at that key is never replaced (its upload would be lost).
pub fn store_upload(
    store: &dyn ObjectStore,
    file_name: &str,
    upload: &mut dyn Read,
    sidecar: Option<&[u8]>,
) -> Result<String> {
    let key = upload_key(file_name);
    put_upload(store, &key, upload)?;
    if let Some(sidecar) = sidecar {
        store.put(&sidecar_key(&key), sidecar)?;
    }
    Ok(key)
}

/// The keys of the uploads in `store`, sorted: what is under `uploads/` except the metadata
/// sidecars and error reports, which are read along with their uploads.
pub fn list_uploads(store: &dyn ObjectStore) -> Result<Vec<String>> {
    Ok(store
        .list(UPLOADS_PREFIX)?
        .into_iter()
        .filter(|k| !k.ends_with(METADATA_SIDECAR_SUFFIX) && !k.ends_with(ERROR_REPORT_SUFFIX))
        .collect())
}

/// Stores an upload at `key` unless the same bytes are already there.
fn put_upload(store: &dyn ObjectStore, key: &str, upload: &mut dyn Read) -> Result<()> {
    match store.get_reader(key, u64::MAX)? {
        Some((mut existing, _)) => {
            if same_bytes(&mut *existing, upload).map_err(|e| from_io(key, e))? {
                Ok(())
            } else {
                Err(ErrorKind::KeyConflict { key: key.into() }.into())
            }
        }
        None => {
            let mut writer = store.put_writer(key)?;
            std::io::copy(upload, &mut writer).map_err(|e| from_io(key, e))?;
            writer.finish()
        }
    }
}

/// Whether two streams hold the same bytes, read a block at a time.
fn same_bytes(a: &mut dyn Read, b: &mut dyn Read) -> std::io::Result<bool> {
    const BLOCK: u64 = 64 * 1024;
    let (mut x, mut y) = (Vec::new(), Vec::new());
    loop {
        x.clear();
        y.clear();
        let n = a.take(BLOCK).read_to_end(&mut x)?;
        b.take(BLOCK).read_to_end(&mut y)?;
        if x != y {
            return Ok(false);
        }
        if (n as u64) < BLOCK {
            return Ok(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::LocalDirStore;

    #[test]
    fn an_upload_is_stored_as_a_stream_and_never_replaced_by_other_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalDirStore::new(dir.path());
        // Longer than one comparison block, so blocks past the first are compared too.
        let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        assert_eq!(
            store_upload(&store, "big.bin", &mut &big[..], None).unwrap(),
            "uploads/big.bin"
        );
        assert_eq!(store.get("uploads/big.bin").unwrap().unwrap(), big);
        assert_eq!(
            store_upload(&store, "big.bin", &mut &big[..], None).unwrap(),
            "uploads/big.bin"
        );

        let mut late_change = big.clone();
        late_change[150_000] ^= 1;
        let shorter = &big[..big.len() - 1];
        let mut longer = big.clone();
        longer.push(0);
        for other in [&late_change[..], shorter, &longer[..], b""] {
            let err = store_upload(&store, "big.bin", &mut &other[..], None).unwrap_err();
            assert!(
                matches!(err.kind(), ErrorKind::KeyConflict { key } if key == "uploads/big.bin"),
                "{err}"
            );
        }
        assert_eq!(store.get("uploads/big.bin").unwrap().unwrap(), big);
    }
}
