use std::sync::atomic::{AtomicBool, Ordering};

use super::*;
use crate::error::ErrorKind;
use crate::pipeline::error_report::ERROR_REPORT_VERSION;
use crate::pipeline::{rehydrate, RehydrateOptions, RehydratePage, RehydrateScope};
use crate::store::LocalDirStore;
use crate::writers::outputs::OutputSink;

const FOLDED: &[u8] = b"main;work;spin 7\nmain;idle 3\n";

fn local() -> (tempfile::TempDir, LocalDirStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalDirStore::new(dir.path());
    (dir, store)
}

fn manifest(store: &LocalDirStore, key: &str) -> crate::pipeline::Manifest {
    serde_json::from_slice(&store.get(key).unwrap().expect("manifest exists")).unwrap()
}

#[test]
fn converts_then_reports_already_converted_unless_asked_again() {
    let (_dir, store) = local();
    store.put("uploads/a.folded", FOLDED).unwrap();
    let opts = ProcessOptions::default();
    let Outcome::Converted(c) = process_upload(&store, &store, "uploads/a.folded", &opts).unwrap()
    else {
        panic!("not converted")
    };
    assert_eq!(c.samples, 10);
    assert_eq!(c.format, "folded");
    let m = manifest(&store, &c.manifest_key);
    assert_eq!(c.objects, m.outputs.len() as u64 + 1);
    for o in &m.outputs {
        assert!(store.exists(&o.key).unwrap(), "{}", o.key);
    }
    let again = process_upload(&store, &store, "uploads/a.folded", &opts).unwrap();
    assert!(
        matches!(again, Outcome::AlreadyConverted { ref manifest_key, .. } if *manifest_key == c.manifest_key)
    );
    let forced = ProcessOptions {
        reconvert: true,
        ..opts
    };
    let before = store.get(&c.manifest_key).unwrap();
    assert!(matches!(
        process_upload(&store, &store, "uploads/a.folded", &forced).unwrap(),
        Outcome::Converted(_)
    ));
    assert_eq!(store.get(&c.manifest_key).unwrap(), before);
}

#[test]
fn bad_input_is_quarantined_with_a_readable_report_and_no_outputs() {
    let (_dir, store) = local();
    store
        .put("uploads/bad.pftrace", b"\x00\x01garbage")
        .unwrap();
    let out = process_upload(
        &store,
        &store,
        "uploads/bad.pftrace",
        &ProcessOptions::default(),
    )
    .unwrap();
    let Outcome::Quarantined(q) = out else {
        panic!("not quarantined: {out:?}")
    };
    assert_eq!(q.report_key, "uploads/bad.pftrace.error.json");
    assert_eq!(q.reason, "unsupported_format");
    let report: ErrorReport =
        serde_json::from_slice(&store.get(&q.report_key).unwrap().unwrap()).unwrap();
    assert_eq!(report.key, "uploads/bad.pftrace");
    assert_eq!(report.reason, "unsupported_format");
    assert!(
        report.error.contains("uploads/bad.pftrace"),
        "{}",
        report.error
    );
    assert_eq!(report.bytes, 9);
    assert_eq!(store.list("converted/").unwrap(), Vec::<String>::new());
    // The report's own notification is not a new upload.
    let own = process_upload(&store, &store, &q.report_key, &ProcessOptions::default()).unwrap();
    assert!(matches!(
        own,
        Outcome::Skipped {
            why: SkipReason::ErrorReport,
            ..
        }
    ));
    // Fixed content under the same key converts, and the stale report goes.
    store.put("uploads/bad.pftrace", FOLDED).unwrap();
    let fixed = ProcessOptions {
        format: Some(InputFormat::Folded),
        ..ProcessOptions::default()
    };
    let out = process_upload(&store, &store, "uploads/bad.pftrace", &fixed).unwrap();
    assert!(matches!(out, Outcome::Converted(_)), "{out:?}");
    assert!(!store.exists(&q.report_key).unwrap());
}

#[test]
fn oversized_upload_is_quarantined_unread() {
    let (_dir, store) = local();
    store.put("uploads/big.folded", FOLDED).unwrap();
    let opts = ProcessOptions {
        limits: crate::Limits {
            max_object_bytes: 8,
            ..crate::Limits::default()
        },
        ..ProcessOptions::default()
    };
    let Outcome::Quarantined(q) =
        process_upload(&store, &store, "uploads/big.folded", &opts).unwrap()
    else {
        panic!("not quarantined")
    };
    assert_eq!(q.reason, "limit_exceeded");
    assert_eq!(q.bytes, 0);
    assert!(q.message.contains("max_object_bytes = 8"), "{}", q.message);
}

#[test]
fn sidecar_and_object_metadata_apply_and_a_late_sidecar_reconverts() {
    let (_dir, store) = local();
    store.put("uploads/a.folded", FOLDED).unwrap();
    let opts = ProcessOptions::default();
    let Outcome::Converted(first) =
        process_upload(&store, &store, "uploads/a.folded", &opts).unwrap()
    else {
        panic!()
    };
    let chunk_key = |m: &crate::pipeline::Manifest| {
        m.outputs
            .iter()
            .find(|o| o.kind == "sample_v2")
            .unwrap()
            .key
            .clone()
    };
    let m = manifest(&store, &first.manifest_key);
    let chunk: serde_json::Value =
        serde_json::from_slice(&store.get(&chunk_key(&m)).unwrap().unwrap()).unwrap();
    assert_eq!(chunk["release"], serde_json::Value::Null);

    // A sidecar that arrives later: its own event converts the upload again with it.
    store
        .put(
            "uploads/a.folded.metadata.json",
            br#"{"release":"app@2","environment":"prod","timestamp":1700000000.5}"#,
        )
        .unwrap();
    let out = process_upload(&store, &store, "uploads/a.folded.metadata.json", &opts).unwrap();
    let Outcome::Converted(second) = out else {
        panic!("{out:?}")
    };
    assert_eq!(
        second.manifest_key, first.manifest_key,
        "same upload, same keys"
    );
    let m = manifest(&store, &second.manifest_key);
    let chunk: serde_json::Value =
        serde_json::from_slice(&store.get(&chunk_key(&m)).unwrap().unwrap()).unwrap();
    assert_eq!(chunk["release"], "app@2");
    assert_eq!(chunk["environment"], "prod");
    assert_eq!(chunk["profile"]["samples"][0]["timestamp"], 1700000000.5);

    // The sidecar's notification again: the current conversion read this very sidecar.
    let again = process_upload(&store, &store, "uploads/a.folded.metadata.json", &opts).unwrap();
    assert!(
        matches!(
            again,
            Outcome::Skipped {
                why: SkipReason::SidecarAlreadyRead,
                ..
            }
        ),
        "{again:?}"
    );

    // A sidecar written before its upload (as the HTTP receiver writes them): the upload's
    // conversion reads it, and the sidecar's own notification then converts nothing.
    store
        .put("uploads/b.folded.metadata.json", br#"{"release":"app@3"}"#)
        .unwrap();
    let early = process_upload(&store, &store, "uploads/b.folded.metadata.json", &opts).unwrap();
    assert!(matches!(
        early,
        Outcome::Skipped {
            why: SkipReason::SidecarWithoutUpload,
            ..
        }
    ));
    store.put("uploads/b.folded", FOLDED).unwrap();
    let Outcome::Converted(b) = process_upload(&store, &store, "uploads/b.folded", &opts).unwrap()
    else {
        panic!()
    };
    let m = manifest(&store, &b.manifest_key);
    assert!(m.source.metadata_etag.is_some());
    let late = process_upload(&store, &store, "uploads/b.folded.metadata.json", &opts).unwrap();
    assert!(matches!(
        late,
        Outcome::Skipped {
            why: SkipReason::SidecarAlreadyRead,
            ..
        }
    ));
    // Another sidecar under the same key is new metadata: converted again.
    store
        .put("uploads/b.folded.metadata.json", br#"{"release":"app@4"}"#)
        .unwrap();
    let changed = process_upload(&store, &store, "uploads/b.folded.metadata.json", &opts).unwrap();
    assert!(matches!(changed, Outcome::Converted(_)), "{changed:?}");

    let orphan = process_upload(&store, &store, "uploads/none.metadata.json", &opts).unwrap();
    assert!(matches!(
        orphan,
        Outcome::Skipped {
            why: SkipReason::SidecarWithoutUpload,
            ..
        }
    ));
    let missing = process_upload(&store, &store, "uploads/none", &opts).unwrap();
    assert!(matches!(
        missing,
        Outcome::Skipped {
            why: SkipReason::Missing,
            ..
        }
    ));
}

/// A local directory that keeps user metadata too, as S3 does.
struct WithUserMetadata {
    inner: LocalDirStore,
    metadata: std::sync::Mutex<std::collections::HashMap<String, Vec<(String, String)>>>,
}

impl WithUserMetadata {
    fn with(&self, key: &str, info: Option<ObjectInfo>) -> Option<ObjectInfo> {
        info.map(|mut info| {
            let kept = self.metadata.lock().unwrap();
            info.user_metadata = kept.get(key).cloned().unwrap_or_default();
            info
        })
    }
}

impl ObjectStore for WithUserMetadata {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        self.inner.get(key)
    }
    fn get_object(&self, key: &str, max: u64) -> Result<Option<(Vec<u8>, ObjectInfo)>> {
        let object = self.inner.get_object(key, max)?;
        Ok(object.map(|(bytes, info)| (bytes, self.with(key, Some(info)).unwrap())))
    }
    fn head(&self, key: &str) -> Result<Option<ObjectInfo>> {
        Ok(self.with(key, self.inner.head(key)?))
    }
    fn exists(&self, key: &str) -> Result<bool> {
        self.inner.exists(key)
    }
    fn put(&self, key: &str, bytes: &[u8]) -> Result<()> {
        self.put_with_metadata(key, bytes, &[])
    }
    fn put_with_metadata(&self, key: &str, bytes: &[u8], metadata: &[(&str, &str)]) -> Result<()> {
        let pairs = metadata.iter().map(|(n, v)| (n.to_string(), v.to_string()));
        self.metadata
            .lock()
            .unwrap()
            .insert(key.into(), pairs.collect());
        self.inner.put(key, bytes)
    }
    fn delete(&self, key: &str) -> Result<()> {
        self.inner.delete(key)
    }
    fn list(&self, prefix: &str) -> Result<Vec<String>> {
        self.inner.list(prefix)
    }
}

/// The HTTP receiver's writes: the sidecar, then the upload naming the sidecar's ETag. The two
/// notifications may be handled side by side, the sidecar's first: it converts nothing, and the
/// upload's conversion reads the sidecar.
#[test]
fn a_sidecar_its_upload_names_is_read_by_the_uploads_conversion_alone() {
    let dir = tempfile::tempdir().unwrap();
    let store = WithUserMetadata {
        inner: LocalDirStore::new(dir.path()),
        metadata: Default::default(),
    };
    let sidecar = br#"{"release":"app@5","labels":{"region":"eu"}}"#;
    store
        .put("uploads/r.folded.metadata.json", sidecar)
        .unwrap();
    let etag = crate::store::content_etag(sidecar);
    let hint = [(SIDECAR_ETAG_METADATA, etag.as_str())];
    store
        .put_with_metadata("uploads/r.folded", FOLDED, &hint)
        .unwrap();
    let opts = ProcessOptions::default();
    let first = process_upload(&store, &store, "uploads/r.folded.metadata.json", &opts).unwrap();
    assert!(
        matches!(
            first,
            Outcome::Skipped {
                why: SkipReason::SidecarAlreadyRead,
                ..
            }
        ),
        "before the upload is converted: {first:?}"
    );
    let Outcome::Converted(c) = process_upload(&store, &store, "uploads/r.folded", &opts).unwrap()
    else {
        panic!()
    };
    let m: crate::pipeline::Manifest =
        serde_json::from_slice(&store.get(&c.manifest_key).unwrap().unwrap()).unwrap();
    assert_eq!(m.source.metadata_etag.as_deref(), Some(etag.as_str()));
    // A sidecar replaced since is other metadata: its notification converts again.
    store
        .put("uploads/r.folded.metadata.json", br#"{"release":"app@6"}"#)
        .unwrap();
    let replaced = process_upload(&store, &store, "uploads/r.folded.metadata.json", &opts).unwrap();
    assert!(matches!(replaced, Outcome::Converted(_)), "{replaced:?}");
}

#[test]
fn bad_metadata_is_quarantined_naming_its_source() {
    let (_dir, store) = local();
    store.put("uploads/a.folded", FOLDED).unwrap();
    store
        .put("uploads/a.folded.metadata.json", b"{not json")
        .unwrap();
    let out = process_upload(
        &store,
        &store,
        "uploads/a.folded",
        &ProcessOptions::default(),
    )
    .unwrap();
    let Outcome::Quarantined(q) = out else {
        panic!("{out:?}")
    };
    assert_eq!(q.reason, "invalid_metadata");
    assert!(
        q.message.contains("a.folded.metadata.json"),
        "{}",
        q.message
    );
}

/// A store whose writes of keys under `under` fail while `down` is set, like a throttling or
/// unreachable bucket.
struct Flaky {
    inner: LocalDirStore,
    down: AtomicBool,
    under: &'static str,
}

impl Flaky {
    /// Failing every write while `down`.
    fn new(inner: LocalDirStore, down: bool) -> Self {
        Flaky {
            inner,
            down: AtomicBool::new(down),
            under: "",
        }
    }

    fn check(&self, key: &str) -> Result<()> {
        if self.down.load(Ordering::SeqCst) && key.starts_with(self.under) {
            return Err(ErrorKind::Storage { key: key.into() }.into());
        }
        Ok(())
    }
}

impl ObjectStore for Flaky {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        self.inner.get(key)
    }
    fn get_object(&self, key: &str, max: u64) -> Result<Option<(Vec<u8>, ObjectInfo)>> {
        self.inner.get_object(key, max)
    }
    fn exists(&self, key: &str) -> Result<bool> {
        self.inner.exists(key)
    }
    fn put(&self, key: &str, bytes: &[u8]) -> Result<()> {
        self.check(key)?;
        self.inner.put(key, bytes)
    }
    fn delete(&self, key: &str) -> Result<()> {
        self.check(key)?;
        self.inner.delete(key)
    }
    fn list(&self, prefix: &str) -> Result<Vec<String>> {
        self.inner.list(prefix)
    }
}

#[test]
fn store_failures_are_transient_errors_and_leave_no_manifest() {
    let (_dir, uploads) = local();
    let (_out_dir, out) = local();
    uploads.put("uploads/a.folded", FOLDED).unwrap();
    uploads.put("uploads/bad.bin", b"\x00garbage").unwrap();
    let flaky = Flaky::new(out, true);
    let opts = ProcessOptions::default();
    let err = process_upload(&uploads, &flaky, "uploads/a.folded", &opts).unwrap_err();
    assert!(err.kind().is_transient(), "{err}");
    assert_eq!(flaky.inner.list("").unwrap(), Vec::<String>::new());
    // A quarantine whose report cannot be written is retried too, not dropped.
    let flaky_uploads = Flaky::new(uploads.clone(), true);
    let err = process_upload(&flaky_uploads, &flaky, "uploads/bad.bin", &opts).unwrap_err();
    assert!(err.kind().is_transient(), "{err}");
    flaky.down.store(false, Ordering::SeqCst);
    let out = process_upload(&uploads, &flaky, "uploads/a.folded", &opts).unwrap();
    assert!(matches!(out, Outcome::Converted(_)));
}

/// A store whose reads of an upload break off after `after` bytes, like an S3 body cut off
/// by the network.
struct CutOff {
    inner: LocalDirStore,
    after: u64,
}

impl ObjectStore for CutOff {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        self.inner.get(key)
    }
    fn get_object(&self, key: &str, max: u64) -> Result<Option<(Vec<u8>, ObjectInfo)>> {
        self.inner.get_object(key, max)
    }
    fn get_reader<'s>(
        &'s self,
        key: &str,
        max: u64,
    ) -> Result<Option<(Box<dyn std::io::Read + Send + 's>, ObjectInfo)>> {
        use std::io::Read;
        let Some((reader, info)) = self.inner.get_reader(key, max)? else {
            return Ok(None);
        };
        let broken: Box<dyn Read + Send> =
            Box::new(reader.take(self.after).chain(Broken(key.into())));
        Ok(Some((broken, info)))
    }
    fn exists(&self, key: &str) -> Result<bool> {
        self.inner.exists(key)
    }
    fn put(&self, key: &str, bytes: &[u8]) -> Result<()> {
        self.inner.put(key, bytes)
    }
    fn delete(&self, key: &str) -> Result<()> {
        self.inner.delete(key)
    }
    fn list(&self, prefix: &str) -> Result<Vec<String>> {
        self.inner.list(prefix)
    }
}

/// A reader that fails as a store's does.
struct Broken(String);

impl std::io::Read for Broken {
    fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
        Err(crate::error::to_io(
            ErrorKind::Storage {
                key: self.0.clone(),
            }
            .into(),
        ))
    }
}

#[test]
fn an_upload_cut_off_while_read_is_retried_not_quarantined() {
    let trace = include_bytes!("../../../samples/perfetto/android_app.pftrace");
    let folded_gz = {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(FOLDED).unwrap();
        gz.finish().unwrap()
    };
    // A Perfetto trace is decoded as it is read; a gzipped folded file is read whole first.
    for (key, bytes) in [
        ("uploads/a.pftrace", &trace[..]),
        ("uploads/a.folded.gz", &folded_gz[..]),
    ] {
        let (_dir, store) = local();
        store.put(key, bytes).unwrap();
        let cut = CutOff {
            inner: store,
            after: bytes.len() as u64 / 2,
        };
        let opts = ProcessOptions::default();
        let err = process_upload(&cut, &cut, key, &opts).unwrap_err();
        assert!(err.kind().is_transient(), "{key}: {err}");
        assert!(
            matches!(err.kind(), ErrorKind::Storage { key: k } if k == key),
            "{err}"
        );
        // No outputs, no error report: only the record that the conversion started, naming
        // nothing outside its own folder, for whoever settles the key next.
        let etag = cut.inner.head(key).unwrap().unwrap().etag;
        let record = crate::store::pending_conversion_key(key, &source_id(key, &etag));
        let mut expected = vec![key.to_owned(), record.clone()];
        expected.sort();
        assert_eq!(cut.inner.list("").unwrap(), expected, "{key}");
        let record: crate::writers::outputs::PendingConversion =
            serde_json::from_slice(&cut.inner.get(&record).unwrap().unwrap()).unwrap();
        assert!(record.outputs.is_empty(), "{key}: {record:?}");
    }
}

#[test]
fn a_report_whose_removal_failed_goes_when_the_message_comes_back() {
    let (_dir, store) = local();
    let (_out_dir, out) = local();
    let uploads = Flaky::new(store.clone(), false);
    let opts = ProcessOptions::default();
    let key = "uploads/a.folded";
    let report_key = error_report_key(key);
    store.put(key, b"\x00garbage").unwrap();
    let out_1 = process_upload(&uploads, &out, key, &opts).unwrap();
    assert!(matches!(out_1, Outcome::Quarantined(_)), "{out_1:?}");
    assert!(store.exists(&report_key).unwrap());

    // Good content replaces the bad; the conversion is stored and settled, but the report of
    // the bad content cannot be removed: the message fails, and comes back.
    store.put(key, FOLDED).unwrap();
    uploads.down.store(true, Ordering::SeqCst);
    let err = process_upload(&uploads, &out, key, &opts).unwrap_err();
    assert!(err.kind().is_transient(), "{err}");
    assert!(store.exists(&report_key).unwrap());
    uploads.down.store(false, Ordering::SeqCst);
    let again = process_upload(&uploads, &out, key, &opts).unwrap();
    assert!(
        matches!(again, Outcome::AlreadyConverted { .. }),
        "{again:?}"
    );
    assert!(
        !store.exists(&report_key).unwrap(),
        "the converted upload still has the report of the content it replaced"
    );

    // A report about the converted content itself is not the redelivery's to remove.
    let etag = store.head(key).unwrap().unwrap().etag;
    let own = ErrorReport {
        report_version: ERROR_REPORT_VERSION,
        converter: "test".into(),
        key: key.into(),
        etag,
        bytes: FOLDED.len() as u64,
        reason: "invalid_metadata".into(),
        error: "test".into(),
    };
    store
        .put(&report_key, &serde_json::to_vec(&own).unwrap())
        .unwrap();
    let again = process_upload(&uploads, &out, key, &opts).unwrap();
    assert!(matches!(again, Outcome::AlreadyConverted { .. }));
    assert!(store.exists(&report_key).unwrap());
}

const OTHER_FOLDED: &[u8] = b"main;other 5\n";

fn keys_of(store: &LocalDirStore, prefix: &str) -> Vec<String> {
    store.list(prefix).unwrap()
}

#[test]
fn a_reupload_under_the_same_key_replaces_the_earlier_conversion() {
    let (_dir, store) = local();
    let opts = ProcessOptions::default();
    store.put("uploads/a.folded", FOLDED).unwrap();
    let Outcome::Converted(first) =
        process_upload(&store, &store, "uploads/a.folded", &opts).unwrap()
    else {
        panic!()
    };
    assert_eq!(first.replaced, None);
    let first_outputs: Vec<String> = manifest(&store, &first.manifest_key)
        .outputs
        .into_iter()
        .map(|o| o.key)
        .collect();

    store.put("uploads/a.folded", OTHER_FOLDED).unwrap();
    let Outcome::Converted(second) =
        process_upload(&store, &store, "uploads/a.folded", &opts).unwrap()
    else {
        panic!()
    };
    assert_ne!(second.source_id, first.source_id);
    assert_eq!(second.replaced.as_deref(), Some(first.source_id.as_str()));
    assert!(!store.exists(&first.manifest_key).unwrap());
    for key in &first_outputs {
        assert!(
            !store.exists(key).unwrap(),
            "{key} of the replaced upload remains"
        );
    }
    let m = manifest(&store, &second.manifest_key);
    for o in &m.outputs {
        assert!(store.exists(&o.key).unwrap(), "{}", o.key);
    }
    // Exactly one conversion's tables remain: queries count the key's content once.
    let tables = keys_of(&store, "tables/");
    assert!(!tables.is_empty());
    assert!(tables
        .iter()
        .all(|k| k.ends_with(&format!("{}.parquet", second.source_id))));
    // Redelivery of the old event changes nothing: the key's content is the new one.
    let again = process_upload(&store, &store, "uploads/a.folded", &opts).unwrap();
    assert!(
        matches!(again, Outcome::AlreadyConverted { .. }),
        "{again:?}"
    );
    assert!(store.exists(&second.manifest_key).unwrap());

    // Bad content replacing good: quarantined, and the good content's outputs go too.
    store.put("uploads/a.folded", b"\x00garbage").unwrap();
    let out = process_upload(&store, &store, "uploads/a.folded", &opts).unwrap();
    assert!(matches!(out, Outcome::Quarantined(_)), "{out:?}");
    assert!(!store.exists(&second.manifest_key).unwrap());
    assert_eq!(keys_of(&store, "tables/"), Vec::<String>::new());
    assert_eq!(keys_of(&store, "converted/"), Vec::<String>::new());
}

/// Overwrites the upload with other bytes the first time the job checks it: a re-upload that
/// lands while the earlier content is being converted.
struct OverwrittenDuringConversion {
    inner: LocalDirStore,
    overwritten: AtomicBool,
}

impl ObjectStore for OverwrittenDuringConversion {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        self.inner.get(key)
    }
    fn get_object(&self, key: &str, max: u64) -> Result<Option<(Vec<u8>, ObjectInfo)>> {
        self.inner.get_object(key, max)
    }
    fn exists(&self, key: &str) -> Result<bool> {
        self.inner.exists(key)
    }
    fn head(&self, key: &str) -> Result<Option<ObjectInfo>> {
        if !self.overwritten.swap(true, Ordering::SeqCst) {
            self.inner.put(key, OTHER_FOLDED)?;
        }
        self.inner.head(key)
    }
    fn put(&self, key: &str, bytes: &[u8]) -> Result<()> {
        self.inner.put(key, bytes)
    }
    fn delete(&self, key: &str) -> Result<()> {
        self.inner.delete(key)
    }
    fn list(&self, prefix: &str) -> Result<Vec<String>> {
        self.inner.list(prefix)
    }
}

#[test]
fn content_overwritten_during_conversion_is_not_kept_and_the_new_content_converts() {
    let (_dir, store) = local();
    store.put("uploads/a.folded", FOLDED).unwrap();
    let racing = OverwrittenDuringConversion {
        inner: store.clone(),
        overwritten: AtomicBool::new(false),
    };
    let opts = ProcessOptions::default();
    let out = process_upload(&racing, &store, "uploads/a.folded", &opts).unwrap();
    assert!(
        matches!(
            out,
            Outcome::Skipped {
                why: SkipReason::Overwritten,
                ..
            }
        ),
        "{out:?}"
    );
    assert_eq!(keys_of(&store, "converted/"), Vec::<String>::new());
    assert_eq!(keys_of(&store, "tables/"), Vec::<String>::new());
    // The newer content's own event.
    let out = process_upload(&store, &store, "uploads/a.folded", &opts).unwrap();
    let Outcome::Converted(c) = out else {
        panic!("{out:?}")
    };
    assert_eq!(c.samples, 5);
    assert_eq!(c.replaced, None);
}

#[test]
fn a_conversion_cut_short_leaves_nothing_once_the_replacing_content_settles() {
    // The replacing content converts, or is quarantined: either way the key's content is
    // settled, and what the earlier job wrote before the bucket failed goes.
    for replacement in [OTHER_FOLDED, &b"\x00garbage"[..]] {
        let (_dir, uploads) = local();
        let (_out_dir, out) = local();
        let key = "uploads/p.folded";
        uploads.put(key, FOLDED).unwrap();
        let first = source_id(key, &uploads.head(key).unwrap().unwrap().etag);
        // Chunks and the first two table files are written, then the bucket fails.
        let failing = Flaky {
            under: "tables/v2/stacks/",
            ..Flaky::new(out.clone(), true)
        };
        let opts = ProcessOptions::default();
        let err = process_upload(&uploads, &failing, key, &opts).unwrap_err();
        assert!(err.kind().is_transient(), "{err}");
        let left = keys_of(&out, "");
        assert!(
            left.iter().any(|k| k.starts_with("tables/v2/samples/")),
            "{left:?}"
        );
        assert!(left.iter().any(|k| k.contains("/sample-v2/")), "{left:?}");
        // The record named every table file before the first was written.
        let record: crate::writers::outputs::PendingConversion = serde_json::from_slice(
            &out.get(&crate::store::pending_conversion_key(key, &first))
                .unwrap()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(record.source_id, first);
        let tables = record
            .outputs
            .iter()
            .filter(|k| k.starts_with("tables/"))
            .count();
        assert_eq!(tables, 5, "{record:?}");

        // The content is replaced before the message comes back; the retry and the new
        // content's own event both process the key's new content.
        uploads.put(key, replacement).unwrap();
        let outcome = process_upload(&uploads, &out, key, &opts).unwrap();
        let kept: Vec<String> = match &outcome {
            Outcome::Converted(c) => {
                let m = manifest(&out, &c.manifest_key);
                let mut kept: Vec<String> = m.outputs.iter().map(|o| o.key.clone()).collect();
                kept.push(c.manifest_key.clone());
                kept.push(crate::store::current_conversion_key(key));
                kept
            }
            Outcome::Quarantined(_) => Vec::new(),
            other => panic!("{other:?}"),
        };
        let mut kept = kept;
        kept.sort();
        assert_eq!(keys_of(&out, ""), kept, "{outcome:?}");
        let again = process_upload(&uploads, &out, key, &opts).unwrap();
        assert!(!matches!(again, Outcome::Converted(_)), "{again:?}");
        assert_eq!(keys_of(&out, ""), kept, "settled again: {again:?}");
    }
}

/// Every page of the scheduled sweep, with `grace` as the pending records' grace period.
fn sweep(uploads: &LocalDirStore, out: &LocalDirStore, grace: u64) -> RehydratePage {
    let options = RehydrateOptions {
        pending_grace: std::time::Duration::from_secs(grace),
        // Small pages: the sweep goes on from the index to `converted/by-key/` across pages.
        max_entries: 2,
        ..RehydrateOptions::default()
    };
    let mut total = RehydratePage::default();
    let mut after: Option<String> = None;
    for _ in 0..100 {
        let page = rehydrate(
            uploads,
            out,
            RehydrateScope::Sweep,
            after.as_deref(),
            &options,
        );
        let page = page.unwrap();
        after = page.next.clone();
        total.absorb(page);
        if after.is_none() {
            return total;
        }
    }
    panic!("the sweep does not end");
}

#[test]
fn the_sweep_removes_what_a_late_job_of_replaced_content_left() {
    // The one case settling cannot see: a job of replaced content still running when the new
    // content settles writes more, then fails for good. Its record and outputs are left as
    // such a job leaves them.
    let (_dir, uploads) = local();
    let (_out_dir, out) = local();
    let key = "uploads/late.folded";
    uploads.put(key, FOLDED).unwrap();
    let old = source_id(key, &uploads.head(key).unwrap().unwrap().etag);
    uploads.put(key, OTHER_FOLDED).unwrap();
    let opts = ProcessOptions::default();
    assert!(matches!(
        process_upload(&uploads, &out, key, &opts).unwrap(),
        Outcome::Converted(_)
    ));
    let settled = keys_of(&out, "");
    let table = format!("tables/v2/samples/dt=2025-01-01/{old}.parquet");
    let chunk = format!("{}sample-v2/0.json", crate::store::conversion_prefix(&old));
    let mut late = StoreOutputs::pending(&out, key, &old);
    crate::writers::outputs::PendingConversion::start(&out, key, &old).unwrap();
    late.put(&chunk, b"{}".to_vec()).unwrap();
    late.record_pending(&[&table]).unwrap();
    late.put(&table, b"PAR1".to_vec()).unwrap();
    // A key whose job failed for good on the content it still holds: its record stays for
    // the retries or a redrive to settle.
    let kept_key = "uploads/failed.folded";
    uploads.put(kept_key, FOLDED).unwrap();
    let failed = source_id(kept_key, &uploads.head(kept_key).unwrap().unwrap().etag);
    crate::writers::outputs::PendingConversion::start(&out, kept_key, &failed).unwrap();
    let record = crate::store::pending_conversion_key(key, &old);
    let kept_record = crate::store::pending_conversion_key(kept_key, &failed);
    let left = keys_of(&out, "");
    for k in [&table, &chunk, &record, &kept_record] {
        assert!(left.contains(k), "{k} in {left:?}");
    }

    // Younger than the grace period: nothing is touched.
    let page = sweep(&uploads, &out, 3_600);
    assert_eq!((page.pending_removed, page.pending_kept), (0, 2));
    assert_eq!(keys_of(&out, ""), left);

    let page = sweep(&uploads, &out, 0);
    assert_eq!((page.pending_removed, page.pending_kept), (1, 1));
    let mut expected = settled.clone();
    expected.push(kept_record.clone());
    expected.sort();
    assert_eq!(keys_of(&out, ""), expected);
    // Again: nothing more to do.
    let page = sweep(&uploads, &out, 0);
    assert_eq!((page.pending_removed, page.pending_kept), (0, 1));
    assert_eq!(keys_of(&out, ""), expected);

    // A record of an earlier writer does not name its upload: the key's pointer does.
    out.put(
        &record,
        format!(r#"{{"source_id":"{old}","outputs":["{table}"]}}"#).as_bytes(),
    )
    .unwrap();
    out.put(&table, b"PAR1").unwrap();
    let page = sweep(&uploads, &out, 0);
    assert_eq!((page.pending_removed, page.pending_kept), (1, 1));
    assert_eq!(keys_of(&out, ""), expected);
}

/// Replaces the upload at `key` with `replacement` as it is read the second time.
struct ReplacedOnSecondRead {
    inner: LocalDirStore,
    key: &'static str,
    replacement: &'static [u8],
    reads: std::sync::atomic::AtomicUsize,
}

impl ObjectStore for ReplacedOnSecondRead {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        self.inner.get(key)
    }
    fn get_object(&self, key: &str, max: u64) -> Result<Option<(Vec<u8>, ObjectInfo)>> {
        self.inner.get_object(key, max)
    }
    fn get_reader<'s>(
        &'s self,
        key: &str,
        max_bytes: u64,
    ) -> Result<Option<(Box<dyn std::io::Read + Send + 's>, ObjectInfo)>> {
        if key == self.key && self.reads.fetch_add(1, Ordering::SeqCst) == 1 {
            self.inner.put(key, self.replacement)?;
        }
        self.inner.get_reader(key, max_bytes)
    }
    fn head(&self, key: &str) -> Result<Option<ObjectInfo>> {
        self.inner.head(key)
    }
    fn exists(&self, key: &str) -> Result<bool> {
        self.inner.exists(key)
    }
    fn put(&self, key: &str, bytes: &[u8]) -> Result<()> {
        self.inner.put(key, bytes)
    }
    fn delete(&self, key: &str) -> Result<()> {
        self.inner.delete(key)
    }
    fn list(&self, prefix: &str) -> Result<Vec<String>> {
        self.inner.list(prefix)
    }
}

#[test]
fn a_trace_replaced_before_its_second_pass_is_retried_and_its_new_content_converted() {
    const KEY: &str = "uploads/app.pftrace";
    let trace = include_bytes!("../../../samples/perfetto/android_app.pftrace");
    let (_dir, uploads) = local();
    let (_out_dir, out) = local();
    uploads.put(KEY, trace).unwrap();
    let replacing = ReplacedOnSecondRead {
        inner: uploads.clone(),
        key: KEY,
        replacement: FOLDED,
        reads: Default::default(),
    };
    let opts = ProcessOptions {
        stream_above_bytes: Some(1),
        ..ProcessOptions::default()
    };
    // The second pass finds other content: a transient error, and no manifest.
    let err = process_upload(&replacing, &out, KEY, &opts).unwrap_err();
    assert!(err.kind().is_transient(), "{err}");
    assert!(err.to_string().contains(KEY), "{err}");
    assert_eq!(replacing.reads.load(Ordering::SeqCst), 2);
    assert!(keys_of(&out, "converted/")
        .iter()
        .all(|k| !k.ends_with("manifest.json")));
    // Retried, the key's new content converts, and nothing of the cut-short run is left.
    let outcome = process_upload(&uploads, &out, KEY, &opts).unwrap();
    let Outcome::Converted(c) = &outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(c.format, "folded");
    let m = manifest(&out, &c.manifest_key);
    let mut kept: Vec<String> = m.outputs.iter().map(|o| o.key.clone()).collect();
    kept.push(c.manifest_key.clone());
    kept.push(crate::store::current_conversion_key(KEY));
    kept.sort();
    assert_eq!(keys_of(&out, ""), kept);
}

/// One `perf script` record: its time is seconds on perf's clock, no wall clock.
const PERF_RECORD: &[u8] = b"app 10/10 123.250000: 1000 cpu-clock:\n\
\t401000 main (/usr/bin/app)\n\n";

#[test]
fn a_trace_clock_upload_lands_at_its_arrival_unless_a_start_time_is_required() {
    let (_dir, store) = local();
    let key = "uploads/a.perf.txt";
    store.put(key, PERF_RECORD).unwrap();
    let arrival = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_321);
    store.set_modified(key, arrival).unwrap();

    let required = ProcessOptions {
        require_start_time: true,
        ..ProcessOptions::default()
    };
    let out = process_upload(&store, &store, key, &required).unwrap();
    let Outcome::Quarantined(q) = out else {
        panic!("not quarantined: {out:?}")
    };
    assert_eq!(q.reason, "no_wall_clock");

    let out = process_upload(&store, &store, key, &ProcessOptions::default()).unwrap();
    let Outcome::Converted(c) = out else {
        panic!("not converted: {out:?}")
    };
    let m = manifest(&store, &c.manifest_key);
    assert_eq!(m.profile.clock_source, "arrival");
    assert!(
        m.profile.timestamps.contains("arrival"),
        "{}",
        m.profile.timestamps
    );
    // The one sample is the first, at the arrival; its table files lie on that day.
    let days: Vec<&str> = m
        .outputs
        .iter()
        .filter(|o| o.kind.starts_with("table:"))
        .map(|o| o.key.split('/').nth(3).unwrap())
        .collect();
    assert!(
        !days.is_empty() && days.iter().all(|d| *d == "dt=2023-11-14"),
        "{days:?}"
    );
    // The quarantine's report went with the conversion.
    assert!(!store.exists(&q.report_key).unwrap());
}
