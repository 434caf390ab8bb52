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

use self::dialect::Dialect;
use self::importer::{Importer, SeriesSpec};
use self::lines::{looks_folded, Lines};
use crate::error::{ErrorKind, Result};
use crate::limits::Limits;
use crate::model::{scaled_count_unit, Profile, SeriesKind};

/// Whether decompressed content looks like folded stacks (see `lines::looks_folded`).
/// Runs last among the sniffers, so anything binary or JSON has been claimed already.
pub(crate) fn test(prefix: &[u8]) -> bool {
    looks_folded(prefix, prefix.len() < super::SNIFF_LEN)
}

/// Decodes a whole (decompressed) folded file within `limits`.
pub(crate) fn decode(bytes: &[u8], limits: &Limits) -> Result<Profile> {
    let lines = || Lines::new(bytes, limits.max_line_bytes);
    let header = austin::header(bytes);
    // These passes may stop at a malformed line; the decoding pass below reports it.
    let dialect = match header {
        Some(_) => Dialect::Austin,
        None => Dialect::detect(lines().map_while(|l| l.ok()).map(|l| l.stack)),
    };
    // Weights are integers: a file with fractional counts keeps them exact by scaling all of
    // them alike.
    let decimals = lines()
        .map_while(|l| l.ok())
        .map(|l| l.count.decimals())
        .max()
        .unwrap_or(0);
    let series = series(lines, dialect, header.unwrap_or_default(), decimals)?;
    let mut importer = Importer::new(dialect, series, limits);
    for line in lines() {
        let line = line?;
        importer.line(line.stack, line.weight(decimals)?)?;
    }
    Ok(importer.finish())
}

/// What the counts measure. austin's are microseconds of wall or CPU time, as its header
/// says; everyone else's count samples.
fn series<'a>(
    lines: impl Fn() -> Lines<'a>,
    dialect: Dialect,
    header: austin::Header,
    decimals: usize,
) -> Result<SeriesSpec> {
    if dialect != Dialect::Austin {
        return Ok(SeriesSpec {
            kind: dialect.series_kind(),
            name: "samples",
            unit: scaled_count_unit(decimals),
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
    let fractional = lines()
        .map_while(|l| l.ok())
        .find(|l| l.count.decimals() > 0);
    if let Some(line) = fractional {
        return Err(line.error(format!(
            "austin counts are whole microseconds, not {}",
            line.count.text()
        )));
    }
    Ok(SeriesSpec {
        kind,
        name,
        unit: "microseconds".to_owned(),
        period: header.interval_us,
    })
}
