//! austin's header: the `# key: value` comment lines it writes before the stacks
//! (`# austin: 3.7.0`, `# interval: 10000`, `# mode: wall`). They say what the counts measure,
//! which a folded file otherwise leaves to guesswork.

use super::lines::is_comment;

/// How many leading lines may hold the header; austin writes a handful.
const HEADER_LINES: usize = 64;

/// What austin's header says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Header<'a> {
    /// `# mode:` (`wall`, `cpu`, `memory`, `full`), with its 1-based line number and byte
    /// offset for errors.
    pub mode: Option<(&'a str, u64, u64)>,
    /// `# interval:`, the sampling interval in microseconds.
    pub interval_us: Option<u64>,
}

/// The header of an austin file: the comment lines before the first stack, if one of them
/// is `# austin: VERSION`.
pub(super) fn header(input: &[u8]) -> Option<Header<'_>> {
    let bom = b"\xEF\xBB\xBF";
    let (text, mut offset) = match input.strip_prefix(bom) {
        Some(rest) => (rest, bom.len() as u64),
        None => (input, 0),
    };
    let mut header = Header::default();
    let mut austin = false;
    for (i, raw) in text.split(|&b| b == b'\n').take(HEADER_LINES).enumerate() {
        let line_offset = offset;
        offset += raw.len() as u64 + 1;
        let Ok(line) = std::str::from_utf8(raw) else {
            break;
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if !is_comment(line) {
            break;
        }
        let Some((key, value)) = line[1..].split_once(':') else {
            continue;
        };
        match (key.trim(), value.trim()) {
            ("austin", _) => austin = true,
            ("mode", mode) => header.mode = Some((mode, i as u64 + 1, line_offset)),
            ("interval", us) => header.interval_us = us.parse().ok().filter(|&us| us > 0),
            _ => {}
        }
    }
    austin.then_some(header)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_leading_comments() {
        let file = b"# austin: 3.7.0\n# interval: 10000\n# mode: cpu\n\nP1;T0:1 5\n# mode: x\n";
        assert_eq!(
            header(file),
            Some(Header {
                mode: Some(("cpu", 3, 34)),
                interval_us: Some(10_000),
            })
        );
        assert_eq!(header(b"# mode: wall\nP1;T0:1 5\n"), None, "not austin's");
        assert_eq!(
            header(b"a;b 1\n# austin: 3.7.0\n"),
            None,
            "after the stacks"
        );
        assert_eq!(
            header(b"\xEF\xBB\xBF# austin: 3.3.0\r\n"),
            Some(Header::default())
        );
    }
}
