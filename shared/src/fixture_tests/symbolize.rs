//! Symbolization by build ID against binutils: a library built by gcc in the test, profiled
//! in the Perfetto form (`rel_pc`, ELF virtual addresses) and the OTLP form (absolute
//! addresses in a mapping), named from its debug file, and compared frame by frame with
//! `addr2line -f -i -C` on the same addresses.

use std::collections::BTreeMap;

use crate::symbolize::Quality;
use crate::{
    pipeline::RehydrateScope, rehydrate, symbols::add_debug_file, symbols::DebugFileOutcome,
    Manifest, RehydrateOptions,
};
use crate::{
    process_upload, store::manifest_key, store::source_id, store::LocalDirStore,
    store::ObjectStore, Outcome, ProcessOptions,
};
use serde_json::json;

use super::native::{build, NativeLib, LINKED_AT};
use super::native_profiles::{
    addresses, assert_matches_addr2line, otlp_request, perfetto_trace, Addresses, BASE, START_S,
};

const TRACE_KEY: &str = "uploads/work.pftrace";
const OTLP_KEY: &str = "uploads/work.otlp.json";

/// A bucket directory holding both profiles (and the trace's start time in its sidecar).
fn bucket_with_profiles(lib: &NativeLib, a: &Addresses) -> (tempfile::TempDir, LocalDirStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalDirStore::new(dir.path());
    store.put(TRACE_KEY, &perfetto_trace(lib, a)).unwrap();
    let sidecar = json!({"timestamp": START_S, "platform": "android"});
    store
        .put(
            &format!("{TRACE_KEY}.metadata.json"),
            &serde_json::to_vec(&sidecar).unwrap(),
        )
        .unwrap();
    store.put(OTLP_KEY, &otlp_request(lib, a)).unwrap();
    (dir, store)
}

fn convert(store: &LocalDirStore, key: &str) -> Manifest {
    match process_upload(store, store, key, &ProcessOptions::default()).unwrap() {
        Outcome::Converted(c) => {
            serde_json::from_slice(&store.get(&c.manifest_key).unwrap().unwrap()).unwrap()
        }
        other => panic!("{key}: {other:?}"),
    }
}

fn manifest(store: &LocalDirStore, key: &str) -> Manifest {
    let etag = store.head(key).unwrap().unwrap().etag;
    let json = store
        .get(&manifest_key(&source_id(key, &etag)))
        .unwrap()
        .unwrap();
    serde_json::from_slice(&json).unwrap()
}

fn debug_key(lib: &NativeLib, name: &str) -> String {
    format!("debuginfo/{}/{name}", lib.build_id)
}

/// Every object of the outputs (everything but the uploads and the symbol store), by key.
fn outputs(store: &LocalDirStore) -> BTreeMap<String, Vec<u8>> {
    ["converted/", "tables/", "index/"]
        .iter()
        .flat_map(|p| store.list(p).unwrap())
        .map(|k| {
            let v = store.get(&k).unwrap().unwrap();
            (k, v)
        })
        .collect()
}

#[test]
fn symbols_uploaded_after_the_profiles_name_every_frame_as_addr2line_does() {
    let lib = build("libwork.so", &[]);
    let a = addresses(&lib);
    let (_dir, store) = bucket_with_profiles(&lib, &a);
    for key in [TRACE_KEY, OTLP_KEY] {
        let m = convert(&store, key);
        let image = &m.symbols[0];
        assert_eq!(image.build_id, lib.build_id);
        assert_eq!(image.debug_file_key, None, "no debug file yet");
        assert_eq!(image.symbolicated, 0);
        assert!(image.frames > 10, "{key}: {image:?}");
    }
    let before = outputs(&store);

    let key = debug_key(&lib, "libwork.so");
    store.put(&key, &lib.bytes()).unwrap();
    let stored = add_debug_file(&store, &key, u64::MAX).unwrap();
    let DebugFileOutcome::Stored { meta, replaced, .. } = stored else {
        panic!("{stored:?}")
    };
    assert_eq!(replaced, None);
    assert_eq!(meta.quality, Quality::Inlines);
    assert_eq!(meta.load_address, LINKED_AT, "the load bias is not zero");
    assert_eq!(meta.code_id.as_deref(), Some(lib.build_id.as_str()));

    let page = rehydrate(
        &store,
        &store,
        RehydrateScope::BuildId(&lib.build_id),
        None,
        &RehydrateOptions::default(),
    )
    .unwrap();
    assert_eq!((page.looked_at, page.reconverted), (2, 2), "{page:?}");
    assert_eq!(page.next, None);
    let frames = a.leaves.len() as u64 + 1;
    assert_eq!(page.frames_symbolized, 2 * frames);
    for key in [TRACE_KEY, OTLP_KEY] {
        let image = &manifest(&store, key).symbols[0];
        assert_eq!(
            image.debug_file_key.as_deref(),
            Some(meta.debug_file_key.as_str())
        );
        assert_eq!(
            (image.symbolicated, image.frames),
            (frames, frames),
            "{key}"
        );
    }
    assert_matches_addr2line(&lib, &a, &store);
    let after = outputs(&store);
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>(),
        "rehydration rewrites the same keys"
    );

    // Again: every upload already used this file; nothing is written.
    let again = rehydrate(
        &store,
        &store,
        RehydrateScope::BuildId(&lib.build_id),
        None,
        &RehydrateOptions::default(),
    )
    .unwrap();
    assert_eq!((again.reconverted, again.up_to_date), (0, 2));
    assert_eq!(
        outputs(&store),
        after,
        "a second run leaves the bucket as it was"
    );

    // Converting the uploads after the symbols arrived gives the very same bytes.
    let (_fresh_dir, fresh) = bucket_with_profiles(&lib, &a);
    fresh.put(&key, &lib.bytes()).unwrap();
    add_debug_file(&fresh, &key, u64::MAX).unwrap();
    convert(&fresh, TRACE_KEY);
    convert(&fresh, OTLP_KEY);
    assert_eq!(
        outputs(&fresh),
        after,
        "rehydrated = converted with the symbols present"
    );
}

#[test]
fn a_separate_debug_file_replaces_the_stripped_library_and_never_the_reverse() {
    let lib = build("libwork.so", &[]);
    let a = addresses(&lib);
    let (_dir, store) = bucket_with_profiles(&lib, &a);
    let (stripped, debug) = lib.split_debug();

    let exe_key = debug_key(&lib, "libwork.so");
    store.put(&exe_key, &stripped).unwrap();
    let DebugFileOutcome::Stored { meta, .. } = add_debug_file(&store, &exe_key, u64::MAX).unwrap()
    else {
        panic!("the stripped library has a symbol table")
    };
    assert_eq!(meta.quality, Quality::Symbols);
    // Symbols before the profiles: conversion uses them at once.
    let m = convert(&store, TRACE_KEY);
    assert_eq!(m.symbols[0].quality, Some(Quality::Symbols));
    assert!(m.symbols[0].symbolicated > 0);

    let debug_key_ = debug_key(&lib, "libwork.debug");
    store.put(&debug_key_, &debug).unwrap();
    let outcome = add_debug_file(&store, &debug_key_, u64::MAX).unwrap();
    let DebugFileOutcome::Stored { meta, replaced, .. } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(meta.quality, Quality::Inlines);
    assert_eq!(replaced.map(|r| r.quality), Some(Quality::Symbols));
    convert(&store, OTLP_KEY);
    let page = rehydrate(
        &store,
        &store,
        RehydrateScope::Sweep,
        None,
        &RehydrateOptions::default(),
    )
    .unwrap();
    assert_eq!(
        page.reconverted, 1,
        "only the trace used the worse file: {page:?}"
    );
    assert_matches_addr2line(&lib, &a, &store);

    // The stripped library again: valid, but worse than what is in use.
    let outcome = add_debug_file(&store, &exe_key, u64::MAX).unwrap();
    assert!(
        matches!(&outcome, DebugFileOutcome::Kept { in_use, .. } if in_use.quality == Quality::Inlines),
        "{outcome:?}"
    );
}

#[test]
fn compressed_debug_sections_symbolize_like_plain_ones() {
    let lib = build("libwork.so", &[]);
    let a = addresses(&lib);
    let (_dir, store) = bucket_with_profiles(&lib, &a);
    let key = debug_key(&lib, "libwork.so.zdebug");
    store.put(&key, &lib.compressed_debug()).unwrap();
    let outcome = add_debug_file(&store, &key, u64::MAX).unwrap();
    assert!(
        matches!(&outcome, DebugFileOutcome::Stored { meta, .. } if meta.quality == Quality::Inlines),
        "{outcome:?}"
    );
    convert(&store, TRACE_KEY);
    convert(&store, OTLP_KEY);
    assert_matches_addr2line(&lib, &a, &store);
}

#[test]
fn bad_debug_files_are_refused_with_reports_and_touch_no_profile() {
    let lib = build("libwork.so", &[]);
    let other = build("libother.so", &["-DUNUSED=1", "-Wl,--build-id=md5"]);
    let a = addresses(&lib);
    let (_dir, store) = bucket_with_profiles(&lib, &a);
    convert(&store, TRACE_KEY);
    let before = outputs(&store);
    let bytes = lib.bytes();
    let cases: Vec<(String, Vec<u8>, &str)> = vec![
        (
            debug_key(&lib, "other.so"),
            other.bytes(),
            "build_id_mismatch",
        ),
        (
            debug_key(&lib, "truncated.so"),
            bytes[..bytes.len() / 3].to_vec(),
            "bad_debug_file",
        ),
        (
            debug_key(&lib, "random.bin"),
            (0..4096u32)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
                .collect(),
            "bad_debug_file",
        ),
        (
            "debuginfo/libwork.so".into(),
            bytes.clone(),
            "debug_file_key",
        ),
    ];
    for (key, content, reason) in cases {
        store.put(&key, &content).unwrap();
        let outcome = add_debug_file(&store, &key, u64::MAX).unwrap();
        let DebugFileOutcome::Refused {
            report_key,
            reason: got,
            message,
            ..
        } = &outcome
        else {
            panic!("{key}: {outcome:?}")
        };
        assert_eq!(*got, reason, "{key}: {message}");
        assert!(
            message.contains(&key),
            "the report names the file: {message}"
        );
        let report: serde_json::Value =
            serde_json::from_slice(&store.get(report_key).unwrap().unwrap()).unwrap();
        assert_eq!(report["reason"], reason);
    }
    // Without a build ID.
    let no_id = build("libnoid.so", &["-Wl,--build-id=none"]);
    let key = debug_key(&lib, "noid.so");
    store.put(&key, &no_id.bytes()).unwrap();
    let outcome = add_debug_file(&store, &key, u64::MAX).unwrap();
    assert!(
        matches!(
            &outcome,
            DebugFileOutcome::Refused {
                reason: "no_build_id",
                ..
            }
        ),
        "{outcome:?}"
    );
    assert!(store
        .list(&format!("debuginfo/{}/", lib.build_id))
        .unwrap()
        .iter()
        .all(|k| !k.ends_with("meta.json")));
    let page = rehydrate(
        &store,
        &store,
        RehydrateScope::Sweep,
        None,
        &RehydrateOptions::default(),
    )
    .unwrap();
    assert_eq!(page.reconverted, 0);
    assert_eq!(outputs(&store), before, "no profile changed");
}

#[test]
fn a_breakpad_file_symbolizes_the_addresses_as_the_elf_it_was_dumped_from() {
    let lib = build("libwork.so", &[]);
    let a = addresses(&lib);
    let (_dir, store) = bucket_with_profiles(&lib, &a);
    let sym = lib.breakpad();
    assert!(
        String::from_utf8_lossy(&sym).contains("INLINE "),
        "dump_syms recorded the inlined calls"
    );
    let key = debug_key(&lib, "libwork.so.sym");
    store.put(&key, &sym).unwrap();
    let outcome = add_debug_file(&store, &key, u64::MAX).unwrap();
    let DebugFileOutcome::Stored { meta, .. } = &outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(meta.file_format, "breakpad");
    assert_eq!(meta.quality, Quality::Inlines);
    convert(&store, TRACE_KEY);
    convert(&store, OTLP_KEY);
    // The same answers addr2line gives from the ELF itself.
    assert_matches_addr2line(&lib, &a, &store);
}

/// A store that runs `hook` once, after the `at`-th read of a debug-file meta: for a
/// conversion, the moment it has decided which symbols it uses.
struct RaceStore<'a> {
    inner: &'a LocalDirStore,
    at: usize,
    reads: std::sync::atomic::AtomicUsize,
    hook: std::sync::Mutex<Option<Box<dyn FnOnce() + Send + 'a>>>,
}

impl<'a> RaceStore<'a> {
    fn new(inner: &'a LocalDirStore, at: usize, hook: impl FnOnce() + Send + 'a) -> Self {
        RaceStore {
            inner,
            at,
            reads: std::sync::atomic::AtomicUsize::new(0),
            hook: std::sync::Mutex::new(Some(Box::new(hook))),
        }
    }
}

impl ObjectStore for RaceStore<'_> {
    fn get(&self, key: &str) -> crate::Result<Option<Vec<u8>>> {
        let got = self.inner.get(key)?;
        let meta = key.starts_with("debuginfo/") && key.ends_with("/meta.json");
        if meta && self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1 == self.at {
            let hook = self.hook.lock().unwrap().take();
            if let Some(hook) = hook {
                hook();
            }
        }
        Ok(got)
    }
    fn get_object(
        &self,
        key: &str,
        max: u64,
    ) -> crate::Result<Option<(Vec<u8>, crate::store::ObjectInfo)>> {
        self.inner.get_object(key, max)
    }
    fn exists(&self, key: &str) -> crate::Result<bool> {
        self.inner.exists(key)
    }
    fn head(&self, key: &str) -> crate::Result<Option<crate::store::ObjectInfo>> {
        self.inner.head(key)
    }
    fn put(&self, key: &str, bytes: &[u8]) -> crate::Result<()> {
        self.inner.put(key, bytes)
    }
    fn delete(&self, key: &str) -> crate::Result<()> {
        self.inner.delete(key)
    }
    fn list(&self, prefix: &str) -> crate::Result<Vec<String>> {
        self.inner.list(prefix)
    }
}

#[test]
fn a_debug_file_arriving_while_an_upload_converts_is_not_lost() {
    let lib = build("libwork.so", &[]);
    let a = addresses(&lib);
    let (_dir, store) = bucket_with_profiles(&lib, &a);
    let key = debug_key(&lib, "libwork.so");
    let arrived = std::sync::atomic::AtomicU64::new(u64::MAX);
    // The conversion has looked for symbols and found none; now the debug file arrives and
    // its rehydration runs, before the conversion has published anything to find.
    let racing = RaceStore::new(&store, 1, || {
        store.put(&key, &lib.bytes()).unwrap();
        add_debug_file(&store, &key, u64::MAX).unwrap();
        let page = rehydrate(
            &store,
            &store,
            RehydrateScope::BuildId(&lib.build_id),
            None,
            &RehydrateOptions::default(),
        )
        .unwrap();
        arrived.store(page.reconverted, std::sync::atomic::Ordering::SeqCst);
    });
    let outcome = process_upload(&store, &racing, OTLP_KEY, &ProcessOptions::default()).unwrap();
    assert_eq!(
        arrived.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the rehydration found nothing yet"
    );
    let Outcome::Converted(c) = outcome else {
        panic!("{outcome:?}")
    };
    let frames = a.leaves.len() as u64 + 1;
    assert_eq!(
        c.frames_symbolized, frames,
        "the check after publishing converted again"
    );
    let image = &manifest(&store, OTLP_KEY).symbols[0];
    assert_eq!(image.symbolicated, frames);

    // The same bytes as a conversion that started after the symbols arrived.
    let (_fresh_dir, fresh) = bucket_with_profiles(&lib, &a);
    fresh.put(&key, &lib.bytes()).unwrap();
    add_debug_file(&fresh, &key, u64::MAX).unwrap();
    convert(&fresh, OTLP_KEY);
    assert_eq!(outputs(&store), outputs(&fresh));
}

#[test]
fn a_rehydration_racing_a_replaced_upload_brings_no_old_outputs_back() {
    let lib = build("libwork.so", &[]);
    let a = addresses(&lib);
    let (_dir, store) = bucket_with_profiles(&lib, &a);
    let old = convert(&store, OTLP_KEY);
    let key = debug_key(&lib, "libwork.so");
    store.put(&key, &lib.bytes()).unwrap();
    add_debug_file(&store, &key, u64::MAX).unwrap();
    // While the rehydration converts the old content, the key gets new content (only the
    // leaves of `work`), which converts at once.
    let mut fewer = addresses(&lib);
    fewer.leaves.truncate(3);
    let replacement = otlp_request(&lib, &fewer);
    // Read 1 is the rehydration's own look at the meta, read 2 the conversion's.
    let racing = RaceStore::new(&store, 2, || {
        store.put(OTLP_KEY, &replacement).unwrap();
        convert(&store, OTLP_KEY);
    });
    let page = rehydrate(
        &store,
        &racing,
        RehydrateScope::BuildId(&lib.build_id),
        None,
        &RehydrateOptions::default(),
    )
    .unwrap();
    assert!(
        page.outcomes.iter().any(|o| matches!(
            o,
            Outcome::Skipped {
                why: crate::pipeline::SkipReason::Overwritten,
                ..
            }
        )),
        "{page:?}"
    );
    let new = manifest(&store, OTLP_KEY);
    assert_ne!(new.source.source_id, old.source.source_id);
    let old_prefix = format!("converted/{}/", old.source.source_id);
    let left: Vec<String> = outputs(&store)
        .into_keys()
        .filter(|k| k.contains(&old.source.source_id))
        .collect();
    assert!(
        left.is_empty(),
        "outputs of the replaced content: {left:?} ({old_prefix})"
    );
    assert_eq!(
        new.symbols[0].symbolicated, 4,
        "the new content used the symbols"
    );
}

/// A Sample v2 chunk as an SDK sends it: native frames of the library by absolute address,
/// its debug image with code id and load address, a named frame and a key of the SDK's own.
fn sample_v2_chunk(lib: &NativeLib, a: &Addresses) -> Vec<u8> {
    let (_, debug_id) = crate::model::ids_from_build_id(&hex::decode(&lib.build_id).unwrap());
    let mut frames: Vec<serde_json::Value> = a
        .leaves
        .iter()
        .map(|va| {
            json!({"instruction_addr": format!("{:#x}", BASE + va),
                   "package": "/data/app/libwork.so", "platform": "native"})
        })
        .collect();
    frames
        .push(json!({"function": "main", "filename": "main.c", "lineno": 3, "platform": "native"}));
    let root = frames.len() - 1;
    let stacks: Vec<serde_json::Value> = (0..a.leaves.len()).map(|i| json!([i, root])).collect();
    let samples: Vec<serde_json::Value> = (0..a.leaves.len())
        .map(|i| {
            json!({"timestamp": START_S as f64 + i as f64 * 0.01, "stack_id": i, "thread_id": "7"})
        })
        .collect();
    let rest = serde_json::to_string(&json!({
        "chunk_id": "0123456789abcdef0123456789abcdef",
        "profiler_id": "fedcba9876543210fedcba9876543210",
        "platform": "native",
        "release": "work@1.0",
        "client_sdk": {"name": "sentry.native", "version": "0.7.0"},
        "sdk_extra": {"kept": true},
        "debug_meta": {"images": [{
            "type": "symbolic",
            "code_file": "/data/app/libwork.so",
            "code_id": lib.build_id,
            "debug_id": debug_id.unwrap().to_string(),
            "image_addr": format!("{:#x}", BASE + LINKED_AT),
            "image_vmaddr": format!("{LINKED_AT:#x}"),
        }]},
        "profile": {"samples": samples, "stacks": stacks, "frames": frames,
                    "thread_metadata": {"7": {"name": "main"}}}
    }))
    .unwrap();
    // SDKs write `version` first; the format is told by its first bytes.
    format!("{{\"version\":\"2\",{}", &rest[1..]).into_bytes()
}

#[test]
fn a_sample_v2_upload_is_rewritten_with_the_names_when_its_symbols_arrive() {
    let lib = build("libwork.so", &[]);
    let a = addresses(&lib);
    let dir = tempfile::tempdir().unwrap();
    let store = LocalDirStore::new(dir.path());
    let key = "uploads/work.chunk.json";
    let sent = sample_v2_chunk(&lib, &a);
    store.put(key, &sent).unwrap();
    let m = convert(&store, key);
    let chunk_key = &m
        .outputs
        .iter()
        .find(|o| o.kind == "sample_v2")
        .unwrap()
        .key;
    assert_eq!(
        store.get(chunk_key).unwrap().unwrap(),
        sent,
        "stored unchanged before symbols"
    );

    let debug = debug_key(&lib, "libwork.so");
    store.put(&debug, &lib.bytes()).unwrap();
    add_debug_file(&store, &debug, u64::MAX).unwrap();
    let page = rehydrate(
        &store,
        &store,
        RehydrateScope::BuildId(&lib.build_id),
        None,
        &RehydrateOptions::default(),
    )
    .unwrap();
    assert_eq!(page.reconverted, 1, "{page:?}");
    let doc: serde_json::Value =
        serde_json::from_slice(&store.get(chunk_key).unwrap().unwrap()).unwrap();
    assert_eq!(doc["sdk_extra"], json!({"kept": true}), "other keys kept");
    assert_eq!(
        crate::writers::sample_v2::check_sample_v2(&serde_json::to_vec(&doc).unwrap()),
        vec![]
    );
    let frames = doc["profile"]["frames"].as_array().unwrap();
    let stacks = doc["profile"]["stacks"].as_array().unwrap();
    let expected = lib.addr2line(&a.leaves);
    for (i, want) in expected.iter().enumerate() {
        // Each stack: the inline levels of the leaf, innermost first, then `main`.
        let rows: Vec<&serde_json::Value> = stacks[i]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| &frames[f.as_u64().unwrap() as usize])
            .collect();
        assert_eq!(rows.len(), want.len() + 1, "stack {i}");
        for (row, level) in rows.iter().zip(want) {
            assert_eq!(row["function"], level.function.as_str());
            assert_eq!(row["abs_path"].as_str(), level.file.as_deref());
            assert_eq!(row["lineno"].as_u64(), level.line.map(u64::from));
            assert_eq!(row["status"], "symbolicated");
            assert_eq!(
                row["instruction_addr"],
                format!("{:#x}", BASE + a.leaves[i])
            );
        }
        let outermost = rows[want.len() - 1];
        assert!(
            outermost["sym_addr"].is_string(),
            "sym_addr on the outermost level"
        );
        assert!(rows[..want.len() - 1]
            .iter()
            .all(|r| r.get("sym_addr").is_none()));
        assert_eq!(
            rows[want.len()]["function"],
            "main",
            "the named frame is unchanged"
        );
    }
}
