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

/// Each stack of the Sample v2 chunks under `converted/`, as the frames' (function, whether the
/// address is the kernel's), leaf first.
fn chunk_stacks(store: &std::path::Path) -> Vec<Vec<(Option<String>, bool)>> {
    let mut stacks = Vec::new();
    for upload in fs::read_dir(store.join("converted")).unwrap() {
        let dir = upload.unwrap().path().join("sample-v2");
        for chunk in fs::read_dir(dir).into_iter().flatten() {
            let text = fs::read_to_string(chunk.unwrap().path()).unwrap();
            let chunk: serde_json::Value = serde_json::from_str(&text).unwrap();
            let profile = &chunk["profile"];
            let frames: Vec<(Option<String>, bool)> = (profile["frames"].as_array().unwrap())
                .iter()
                .map(|f| {
                    let address = f["instruction_addr"].as_str().unwrap_or("");
                    let function = f["function"].as_str().map(str::to_owned);
                    (function, address.starts_with("0xffff"))
                })
                .collect();
            for stack in profile["stacks"].as_array().unwrap() {
                let stack = stack.as_array().unwrap();
                stacks.push(
                    (stack.iter())
                        .map(|i| frames[i.as_u64().unwrap() as usize].clone())
                        .collect(),
                );
            }
        }
    }
    stacks
}

#[test]
fn a_dwarf_recording_is_unwound_once_its_program_is_in_the_symbol_store() {
    // spin.debug is the unstripped program itself: names and `.eh_frame` in one file.
    dwarf_recording_unwound_with(&["spin.debug"]);
}

#[test]
fn a_stripped_binary_beside_a_separate_debug_file_unwinds_and_the_debug_file_names() {
    // The debug file is the one in use for names (its `.eh_frame` holds no bytes); the
    // stripped binary stored beside it is what the unwinder reads.
    dwarf_recording_unwound_with(&["spin.stripped", "spin.only-debug"]);
}

#[test]
fn a_stripped_binary_added_after_the_debug_file_in_use_converts_the_recording_again() {
    // The binary does not take over from the better debug file, but unwinds all the same.
    dwarf_recording_unwound_with(&["spin.only-debug", "spin.stripped"]);
}

fn dwarf_recording_unwound_with(files: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("bucket");
    let store_arg = store.to_str().unwrap();
    let out = proflake(&[
        "convert",
        fixture("dwarf.data").to_str().unwrap(),
        "--store",
        store_arg,
        "--start-time",
        "1767225600",
        "--no-publish",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Without the program: the kernel frames and the user leaf alone.
    let before = chunk_stacks(&store);
    assert!(!before.is_empty());
    for stack in &before {
        assert!(stack.iter().filter(|f| !f.1).count() <= 1, "{stack:?}");
    }

    // One at a time: each file converts the recording again.
    for file in files {
        let out = proflake(&[
            "symbols",
            "add",
            fixture(file).to_str().unwrap(),
            "--store",
            store_arg,
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(
            text(&out.stdout).contains("1 reconverted"),
            "{file}: {}",
            text(&out.stdout)
        );
    }
    let after = chunk_stacks(&store);
    let names = |stack: &Vec<(Option<String>, bool)>| -> Vec<String> {
        stack.iter().filter_map(|f| f.0.clone()).collect()
    };
    // `main` and `worker_main` never burn CPU themselves: they are there only as callers.
    let main = ["leaf_work", "outer_work", "main"];
    let worker = ["leaf_work", "middle_b", "worker_main"];
    let has = |stack: &Vec<(Option<String>, bool)>, path: &[&str]| {
        let names = names(stack);
        // Leaf first, in this order, others between.
        let mut at = 0;
        for name in &names {
            if at < path.len() && name == path[at] {
                at += 1;
            }
        }
        at == path.len()
    };
    assert!(after.iter().any(|s| has(s, &main)), "{after:?}");
    assert!(after.iter().any(|s| has(s, &worker)), "{after:?}");
    // Every user stack now reaches main or worker_main.
    for stack in &after {
        let names = names(stack);
        assert!(
            names.iter().any(|n| n == "main" || n == "worker_main"),
            "{stack:?}"
        );
    }
}
