//! A perf.data recording of a stripped program, converted, then named by `proflake symbols add`
//! of the unstripped build and `proflake rehydrate`: the absolute addresses and mappings the
//! decoder keeps are all rehydration needs.

use std::fs;
use std::path::PathBuf;

mod common;

use common::{proflake, text};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/perf_data")
        .join(name)
}

/// Every `"function":"…"` in the Sample v2 chunks under `converted/`.
fn chunk_functions(store: &std::path::Path) -> String {
    let mut all = String::new();
    for upload in fs::read_dir(store.join("converted")).unwrap() {
        let dir = upload.unwrap().path().join("sample-v2");
        for chunk in fs::read_dir(dir).into_iter().flatten() {
            all.push_str(&fs::read_to_string(chunk.unwrap().path()).unwrap());
        }
    }
    all
}

#[test]
fn a_stripped_program_recording_is_named_by_symbols_add_and_rehydrate() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("bucket");
    let store_arg = store.to_str().unwrap();
    let out = proflake(&[
        "convert",
        fixture("stripped.data").to_str().unwrap(),
        "--store",
        store_arg,
        "--start-time",
        "1767225600",
        "--no-publish",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let functions = ["leaf_work", "middle_b", "worker_main", "outer_work", "main"];
    let before = chunk_functions(&store);
    assert!(!before.is_empty());
    for f in functions {
        assert!(
            !before.contains(&format!("\"function\":\"{f}\"")),
            "{f} before symbols"
        );
    }

    let out = proflake(&[
        "symbols",
        "add",
        fixture("spin.debug").to_str().unwrap(),
        "--store",
        store_arg,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("1 upload(s) looked at, 1 reconverted"),
        "{}",
        text(&out.stdout)
    );
    let after = chunk_functions(&store);
    for f in functions {
        assert!(
            after.contains(&format!("\"function\":\"{f}\"")),
            "{f} after rehydration"
        );
    }
}
