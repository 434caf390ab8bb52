//! `perf script` text: Linux perf's samples as `perf script` prints them. Each record is a
//! header line (`comm pid/tid [cpu] time: period event:`), the callchain's lines leaf first
//! (`address symbol+offset (dso)`, indented by a tab), and a blank line; without `-g` there is
//! no callchain and the sampled frame ends the header line. `perf script --header` first
//! prints `#` lines about the recording.
//!
//! The times are seconds on perf's clock (since boot), with no known relation to the wall
//! clock, so the profile is on the `perf` trace clock and a conversion needs the upload's
//! start time. The text is read a block at a time; only the model and the record being read
//! are held.

mod frames;
mod header;
mod record;

use std::borrow::Cow;
use std::io::Read;

use self::record::Importer;
use crate::error::{Error, ErrorKind, Result};
use crate::formats::text_blocks::TextBlocks;
use crate::limits::{exceeded, Limits};
use crate::model::Profile;

const FORMAT: &str = "perf-script";

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Where a line is: its 1-based number and the offset of its first byte.
#[derive(Clone, Copy)]
struct At {
    line: u64,
    offset: u64,
}

fn malformed(at: At, what: String) -> Error {
    ErrorKind::Malformed {
        format: FORMAT,
        offset: at.offset,
        what: format!("line {}: {what}", at.line),
    }
    .into()
}

/// Whether `prefix` (the first bytes of decompressed content) starts `perf script` text: UTF-8
/// (a character cut at the end is fine) whose first line that is not blank or `#` is a record
/// header with an event. A prefix of `#` lines alone is claimed when they are perf's
/// (`# perf version :`, `# cmdline :`), as `perf script --header` starts.
pub(crate) fn test(prefix: &[u8]) -> bool {
    let whole = prefix.len() < super::SNIFF_LEN;
    let prefix = prefix.strip_prefix(BOM).unwrap_or(prefix);
    let text = match std::str::from_utf8(prefix) {
        Ok(text) => text,
        Err(e) if !whole && e.error_len().is_none() => {
            std::str::from_utf8(&prefix[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(_) => return false,
    };
    // JSON is some other format's, whatever its strings hold.
    if text.contains('\0') || text.trim_start().starts_with(['{', '[']) {
        return false;
    }
    let mut perf_comments = false;
    let mut lines = text.split('\n').peekable();
    while let Some(line) = lines.next() {
        let complete = whole || lines.peek().is_some();
        let line = line.trim_end_matches('\r');
        if line.starts_with('#') {
            perf_comments |=
                line.starts_with("# perf version :") || line.starts_with("# cmdline :");
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        if !complete {
            break;
        }
        // perf prints the event unless told not to; requiring it keeps log lines with a
        // time in them out.
        return !line.starts_with('\t') && header::parse(line).is_some_and(|h| h.event.is_some());
    }
    perf_comments
}

/// Decodes (decompressed) `perf script` text within `limits`, a block at a time. `codec` names
/// the whole-file compression, for error messages.
pub(crate) fn decode(input: impl Read, codec: &'static str, limits: &Limits) -> Result<Profile> {
    let text = TextBlocks::new(input, codec, "perf script text", limits.max_line_bytes);
    decode_blocks(text, limits)
}

fn decode_blocks<R: Read>(mut text: TextBlocks<R>, limits: &Limits) -> Result<Profile> {
    let mut importer = Importer::new(limits);
    let mut line = 0u64;
    while let Some((block, offset)) = text.next_block()? {
        let mut at = 0;
        while at < block.len() {
            let (len, next) = match block[at..].iter().position(|&b| b == b'\n') {
                Some(i) => (i, at + i + 1),
                None => (block.len() - at, block.len()),
            };
            line += 1;
            if len as u64 > limits.max_line_bytes {
                return Err(exceeded("max_line_bytes", limits.max_line_bytes));
            }
            let mut raw = &block[at..at + len];
            if offset == 0 && at == 0 {
                raw = raw.strip_prefix(BOM).unwrap_or(raw);
            }
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
            let here = At {
                line,
                offset: offset + at as u64,
            };
            read_line(&mut importer, raw, here)?;
            at = next;
        }
        text.consume();
    }
    importer.finish()
}

/// One line: a record's header, a callchain line, a blank line ending the record, or a `#`
/// comment.
fn read_line(importer: &mut Importer, raw: &[u8], at: At) -> Result<()> {
    let text = match std::str::from_utf8(raw) {
        Ok(text) => Cow::Borrowed(text),
        // A comm is the kernel's bytes; one that is not UTF-8 is repaired, not refused.
        Err(_) => {
            importer.count("perf_invalid_utf8_line");
            String::from_utf8_lossy(raw)
        }
    };
    let text = text.as_ref();
    if text.trim().is_empty() {
        return importer.end_record();
    }
    if text.starts_with('#') {
        importer.comment(text);
        return Ok(());
    }
    // perf indents callchain lines with a tab, and right-aligns a comm with spaces when it
    // prints no callchain: a line that starts with a space may be either.
    if !text.starts_with('\t') {
        if let Some(header) = header::parse(text) {
            return importer.header(&header, at);
        }
    }
    if !text.starts_with([' ', '\t']) {
        return Err(malformed(
            at,
            "neither a record's first line (`comm pid/tid [cpu] time: period event:`) nor an \
             indented callchain line"
                .into(),
        ));
    }
    let trimmed = text.trim_matches([' ', '\t']);
    match frames::parse(trimmed) {
        Some(frame) => importer.frame(trimmed, &frame),
        None => importer.count("perf_unreadable_line"),
    }
    Ok(())
}

#[cfg(test)]
mod tests;
