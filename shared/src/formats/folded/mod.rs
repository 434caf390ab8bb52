//! Folded (collapsed) stacks: one `root;...;leaf COUNT` line per distinct stack, as written by
//! Brendan Gregg's FlameGraph collapsers (stackcollapse-perf.pl and friends), py-spy
//! (`record -f raw`) and CPython 3.15's `profiling.sampling --collapsed`.
//!
//! The format has no times, so every line becomes one aggregated sample (no time, weight =
//! count) in a single `samples`/`count` series. Fractional counts (`a;b 0.5`) are kept exact:
//! every weight of such a file is its count times 10^d, d being the most decimals in the file,
//! and the unit is `count*1e-d`. Producer-specific root frames that name a
//! process or thread become the sample's process and thread instead of frames.

mod dialect;
mod frame_syntax;
mod importer;
mod limits;
mod lines;

use self::dialect::Dialect;
use self::importer::Importer;
use self::lines::{looks_folded, Lines};
use crate::error::Result;
use crate::model::Profile;

/// Whether decompressed content looks like folded stacks (see `lines::looks_folded`).
/// Runs last among the sniffers, so anything binary or JSON has been claimed already.
pub(crate) fn test(prefix: &[u8]) -> bool {
    looks_folded(prefix, prefix.len() < super::SNIFF_LEN)
}

/// Decodes a whole (decompressed) folded file.
pub(crate) fn decode(bytes: &[u8]) -> Result<Profile> {
    // These passes may stop at a malformed line; the decoding pass below reports it.
    let dialect = Dialect::detect(Lines::new(bytes).map_while(|l| l.ok()).map(|l| l.stack));
    // Weights are integers: a file with fractional counts keeps them exact by scaling all of
    // them alike.
    let decimals = Lines::new(bytes)
        .map_while(|l| l.ok())
        .map(|l| l.count.decimals())
        .max()
        .unwrap_or(0);
    let mut importer = Importer::new(dialect, decimals);
    for line in Lines::new(bytes) {
        let line = line?;
        importer.line(line.stack, line.weight(decimals)?)?;
    }
    Ok(importer.finish())
}
