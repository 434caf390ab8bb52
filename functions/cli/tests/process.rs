//! `proflake process`: a directory laid out like the bucket, processed as the convert function
//! processes bucket notifications.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

mod common;

use common::{proflake, repo, text};

fn files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let rel = path.strip_prefix(root).unwrap().to_string_lossy();
                out.insert(rel.replace('\\', "/"), fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// Outputs only: what the converter wrote, not the uploads, nor the lake (whose data files
/// delta-rs names with random ids, and whose log records commit times).
fn outputs(root: &Path) -> BTreeMap<String, Vec<u8>> {
    files(root)
        .into_iter()
        .filter(|(k, _)| !k.starts_with("uploads/") && !k.starts_with("lake/"))
        .collect()
}

#[test]
fn uploads_with_sidecars_convert_like_convert_and_bad_ones_are_quarantined() {
    let bucket = tempfile::tempdir().unwrap();
    let uploads = bucket.path().join("uploads");
    fs::create_dir_all(&uploads).unwrap();
    fs::copy(
        repo("samples/perfetto/android_app.pftrace"),
        uploads.join("android_app.pftrace"),
    )
    .unwrap();
    // The sidecar carries what `convert --metadata` is given.
    fs::copy(
        repo("samples/perfetto/android_app.metadata.json"),
        uploads.join("android_app.pftrace.metadata.json"),
    )
    .unwrap();
    fs::write(uploads.join("broken.pftrace"), b"\x0a\xff\xff\xff").unwrap();

    let run = proflake(&["process", bucket.path().to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(1), "{}", text(&run.stderr));
    let stderr = text(&run.stderr);
    assert!(stderr.contains("uploads/broken.pftrace"), "{stderr}");
    assert!(stderr.contains("quarantined"), "{stderr}");
    let report =
        proflake_tests::error_report(&fs::read(uploads.join("broken.pftrace.error.json")).unwrap());
    assert_eq!(report["key"], "uploads/broken.pftrace");
    assert!(!report["reason"].as_str().unwrap().is_empty());

    // The same keys and bytes as `convert` of the same file with the same metadata.
    let converted = tempfile::tempdir().unwrap();
    let run = proflake(&[
        "convert",
        repo("samples/perfetto/android_app.pftrace")
            .to_str()
            .unwrap(),
        "--metadata",
        repo("samples/perfetto/android_app.metadata.json")
            .to_str()
            .unwrap(),
        "--out",
        converted.path().to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let processed = outputs(bucket.path());
    assert!(processed.keys().any(|k| k.ends_with("manifest.json")));
    // The manifests name the sidecar each conversion read: `convert` writes its own (the file
    // with the flags set over it), so only that ETag may differ.
    let without_sidecar_etag = |outputs: &BTreeMap<String, Vec<u8>>| -> BTreeMap<String, Vec<u8>> {
        outputs
            .iter()
            .map(|(key, bytes)| {
                if !key.ends_with("manifest.json") {
                    return (key.clone(), bytes.clone());
                }
                let mut manifest: serde_json::Value = serde_json::from_slice(bytes).unwrap();
                let etag = manifest["source"]
                    .as_object_mut()
                    .unwrap()
                    .remove("metadata_etag");
                assert!(etag.is_some(), "{key} names the sidecar it read");
                (key.clone(), serde_json::to_vec(&manifest).unwrap())
            })
            .collect()
    };
    assert_eq!(
        without_sidecar_etag(&processed),
        without_sidecar_etag(&outputs(converted.path()))
    );

    // Again: nothing to do, nothing rewritten, the report stays.
    let run = proflake(&["process", bucket.path().to_str().unwrap()]);
    assert!(
        text(&run.stdout).contains("already converted"),
        "{}",
        text(&run.stdout)
    );
    assert_eq!(outputs(bucket.path()), processed);
    assert!(uploads.join("broken.pftrace.error.json").is_file());
    assert!(!uploads
        .join("broken.pftrace.error.json.error.json")
        .exists());
}
