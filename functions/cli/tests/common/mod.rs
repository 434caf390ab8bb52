//! What every test of the `proflake` binary needs: repository paths and a way to run it.
// Each test binary compiles this module and uses only part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A path in the repository.
pub fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

/// Runs the binary with `args`.
pub fn proflake(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_proflake"))
        .args(args)
        .output()
        .expect("proflake runs")
}

/// Output bytes as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
