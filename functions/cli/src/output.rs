//! Standard output that a reader may close early (`proflake inspect FILE | head -1`).
//!
//! Rust ignores SIGPIPE, so a write to a closed pipe fails with `BrokenPipe`, and `print!`
//! turns that into a panic. A reader that stopped reading wanted no more: that is no error,
//! so the rest of the output is dropped quietly and the command ends as it would have.

use std::io::{self, Write};

use anyhow::Context;

/// Standard output, closed or not.
#[derive(Default)]
pub(crate) struct Stdout {
    closed: bool,
}

impl Stdout {
    /// Writes `text` unless the reader has gone; other write errors (a full disk behind a
    /// redirect) are errors.
    pub(crate) fn write(&mut self, text: &str) -> anyhow::Result<()> {
        if self.closed {
            return Ok(());
        }
        let mut out = io::stdout().lock();
        match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            result => result.context("cannot write to standard output"),
        }
    }

    /// Writes `line` and a newline.
    pub(crate) fn line(&mut self, line: &str) -> anyhow::Result<()> {
        self.write(&format!("{line}\n"))
    }
}
