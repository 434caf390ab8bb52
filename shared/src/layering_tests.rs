//! The data flows one way: the format decoders build the model and know nothing downstream of
//! it (planning, Sample v2, tables, the jobs, the store). Symbolization is handed bytes and
//! never sees the store or its keys.

use std::path::Path;

/// Modules downstream of the decoders.
const DOWNSTREAM: [&str; 5] = ["plan", "writers", "tables", "pipeline", "store"];

/// The top-level module names a source text reaches through `crate::`, including those in a
/// `crate::{...}` group.
fn crate_paths(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    for (at, _) in text.match_indices("crate::") {
        let rest = &text[at + "crate::".len()..];
        match rest.strip_prefix('{') {
            Some(group) => {
                let group = &group[..group.find('}').unwrap_or(group.len())];
                names.extend(group.split(',').map(|item| ident(item.trim())));
            }
            None => names.push(ident(rest)),
        }
    }
    names
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Fails when a source file under `src/<dir>` (at least `min_files` of them) reaches one of
/// `forbidden` through `crate::`.
fn assert_reaches_none(dir: &str, min_files: usize, forbidden: &[&str]) {
    assert_code_reaches_none(dir, min_files, forbidden, true);
}

/// [`assert_reaches_none`], with test files (`*tests.rs`) left out unless `with_tests`: a
/// test may build its input with any module, a decoder reading a real fixture among them.
fn assert_code_reaches_none(dir: &str, min_files: usize, forbidden: &[&str], with_tests: bool) {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(dir),
        &mut files,
    );
    if !with_tests {
        files.retain(|f| !f.to_string_lossy().ends_with("tests.rs"));
    }
    assert!(files.len() >= min_files, "{files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for name in crate_paths(&text) {
            assert!(
                !forbidden.contains(&name.as_str()),
                "{} reaches crate::{name}",
                file.display()
            );
        }
    }
}

#[test]
fn the_formats_reach_nothing_downstream() {
    assert_reaches_none("formats", 11, &DOWNSTREAM);
}

#[test]
fn relays_chunk_shape_and_rules_reach_neither_the_formats_nor_the_writers() {
    let mut forbidden = DOWNSTREAM.to_vec();
    forbidden.push("formats");
    assert_reaches_none("relay", 3, &forbidden);
}

#[test]
fn symbolization_never_sees_the_store() {
    assert_reaches_none("symbolize", 5, &["store", "pipeline"]);
}

#[test]
fn grouped_paths_count_too() {
    let text = "use crate::{model::Profile, sample_v2::read};\nuse crate::plan::Timing;";
    assert_eq!(crate_paths(text), ["model", "sample_v2", "plan"]);
}

#[test]
fn the_writers_reach_no_format_and_no_job() {
    for writers in ["writers", "tables"] {
        assert_code_reaches_none(writers, 5, &["formats", "pipeline"], false);
    }
}
