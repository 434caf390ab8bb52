//! Folded (collapsed) stacks: one `root;...;leaf COUNT` line per distinct stack, as written by
//! Brendan Gregg's FlameGraph collapsers (stackcollapse-perf.pl and friends), py-spy
//! (`record -f raw`), CPython 3.15's `profiling.sampling --collapsed` and austin. Lines
//! starting with `#` are comments; austin's header among them says what its counts measure.
//!
//! The format has no times, so every line becomes one aggregated sample (no time, weight =
//! count) in a single series: `samples`/`count`, or austin's wall or CPU microseconds.
//! Fractional counts (`a;b 0.5`) are kept exact: every weight of such a file is its count
//! times 10^d, d being the most decimals in the file, and the unit is `count*1e-d`.
//! Producer-specific root frames that name a process or thread become the sample's process
//! and thread instead of frames.

mod austin;
mod dialect;
mod frame_syntax;
mod importer;
mod lines;
mod stream;

use std::io::Read;

use self::dialect::Dialect;
use self::importer::{Importer, SeriesSpec};
use self::lines::{looks_folded, Lines};
use self::stream::{Blocks, Scan};
use crate::error::{ErrorKind, Result};
use crate::limits::Limits;
use crate::model::{scaled_count_unit, Profile, SeriesKind};

/// Whether decompressed content looks like folded stacks (see `lines::looks_folded`).
/// Runs last among the sniffers, so anything binary or JSON has been claimed already.
pub(crate) fn test(prefix: &[u8]) -> bool {
    looks_folded(prefix, prefix.len() < super::SNIFF_LEN)
}

/// Decodes a (decompressed) folded stream within `limits`, a block of lines at a time: only
/// the lines being read and the model are held, not the text. `codec` names the whole-file
/// compression, for error messages.
pub(crate) fn decode(input: impl Read, codec: &'static str, limits: &Limits) -> Result<Profile> {
    decode_blocks(Blocks::new(input, codec, limits.max_line_bytes), limits)
}

fn decode_blocks<R: Read>(mut blocks: Blocks<R>, limits: &Limits) -> Result<Profile> {
    let head = blocks.head()?;
    let lines = || Lines::new(head, limits.max_line_bytes);
    let header = austin::header(head);
    // This pass may stop at a malformed line; the decoding pass below reports it.
    let dialect = match header {
        Some(_) => Dialect::Austin,
        None => Dialect::detect(lines().map_while(|l| l.ok()).map(|l| l.stack)),
    };
    let series = series(dialect, header.unwrap_or_default())?;
    let austin = dialect == Dialect::Austin;
    let mut scan = Scan::new(Importer::new(dialect, series, limits), austin, limits);
    while let Some(mut lines) = blocks.next_block()? {
        for line in &mut lines {
            match line {
                Ok(line) => scan.line(&line)?,
                Err(e) => return Err(scan.stopped_by(e)),
            }
        }
        let position = lines.position();
        blocks.consumed(position);
    }
    scan.finish()
}

/// What the counts measure. austin's are microseconds of wall or CPU time, as its header
/// says; everyone else's count samples (in the unit the file's most decimals give, settled
/// once every line is read).
fn series(dialect: Dialect, header: austin::Header) -> Result<SeriesSpec> {
    if dialect != Dialect::Austin {
        return Ok(SeriesSpec {
            kind: dialect.series_kind(),
            name: "samples",
            unit: scaled_count_unit(0),
            period: None,
        });
    }
    let (kind, name) = match header.mode {
        // austin samples wall time unless told otherwise.
        None | Some(("wall", ..)) => (SeriesKind::WallTime, "wall"),
        Some(("cpu", ..)) => (SeriesKind::CpuTime, "cpu"),
        // Memory deltas and `full` mode's several metrics per line are no time in one count.
        Some((mode, number, offset)) => {
            return Err(ErrorKind::Malformed {
                format: "folded",
                offset,
                what: format!(
                    "line {number}: austin mode `{}` is not supported (wall and cpu are)",
                    mode.chars().take(40).collect::<String>()
                ),
            }
            .into());
        }
    };
    Ok(SeriesSpec {
        kind,
        name,
        unit: "microseconds".to_owned(),
        period: header.interval_us,
    })
}
