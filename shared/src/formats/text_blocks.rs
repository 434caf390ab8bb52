//! Reading line-oriented text a block at a time: only the block being decoded and the start
//! of the next line are held, never the whole input. Shared by the text formats (folded
//! stacks, `perf script`), which each split the block into lines their own way.

use std::io::Read;

use crate::error::Result;
use crate::formats::io_error;

/// Bytes read at a time.
const BLOCK_BYTES: usize = 1 << 20;

/// The input, read into a buffer whose front is always the start of a line.
pub(crate) struct TextBlocks<R> {
    input: R,
    codec: &'static str,
    /// What the text is, for I/O errors (`folded text`).
    what: &'static str,
    max_line_bytes: u64,
    /// Bytes read and not yet consumed; they start a line.
    buf: Vec<u8>,
    /// Where `buf` starts in the input.
    offset: u64,
    eof: bool,
    block_bytes: usize,
}

impl<R: Read> TextBlocks<R> {
    pub(crate) fn new(
        input: R,
        codec: &'static str,
        what: &'static str,
        max_line_bytes: u64,
    ) -> Self {
        TextBlocks {
            input,
            codec,
            what,
            max_line_bytes,
            buf: Vec::new(),
            offset: 0,
            eof: false,
            block_bytes: BLOCK_BYTES,
        }
    }

    /// Reads at most `block_bytes` at a time (tests make blocks small to cut lines).
    #[cfg(test)]
    pub(crate) fn with_block_bytes(mut self, block_bytes: usize) -> Self {
        self.block_bytes = block_bytes;
        self
    }

    /// Reads the next block of bytes; `false` at the end of the input.
    pub(crate) fn fill(&mut self) -> Result<bool> {
        if self.eof {
            return Ok(false);
        }
        let want = self.block_bytes as u64;
        let read = (&mut self.input)
            .take(want)
            .read_to_end(&mut self.buf)
            .map_err(|e| io_error(e, self.codec, self.offset, self.what))?;
        self.eof = (read as u64) < want;
        Ok(read > 0)
    }

    /// The length of the complete lines at the start of the buffer: up to its last line
    /// break, all of it at the end of the input, or a line too long to keep (the decoder says
    /// so when it splits the line).
    pub(crate) fn complete(&self) -> usize {
        match self.buf.iter().rposition(|&b| b == b'\n') {
            _ if self.eof => self.buf.len(),
            Some(i) => i + 1,
            None if self.buf.len() as u64 > self.max_line_bytes => self.buf.len(),
            None => 0,
        }
    }

    /// Every byte read and not consumed, complete lines or not.
    pub(crate) fn buffered(&self) -> &[u8] {
        &self.buf
    }

    /// The next complete lines and where they start in the input, reading as much as that
    /// takes; `None` at the end. Call [`TextBlocks::consume`] once they are decoded.
    pub(crate) fn next_block(&mut self) -> Result<Option<(&[u8], u64)>> {
        loop {
            let end = self.complete();
            if end > 0 {
                return Ok(Some((&self.buf[..end], self.offset)));
            }
            if !self.fill()? && self.buf.is_empty() {
                return Ok(None);
            }
        }
    }

    /// The complete lines [`TextBlocks::complete`] measures are decoded: they leave the buffer.
    pub(crate) fn consume(&mut self) {
        let end = self.complete();
        self.buf.drain(..end);
        self.offset += end as u64;
    }
}
