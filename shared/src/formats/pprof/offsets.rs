//! Where each top-level record of the profile starts, so that errors about a sample or a
//! location can point at its bytes; the same walk tells a cut-off file from a corrupt one
//! before prost gives its less specific verdict.

use super::malformed;
use crate::error::{ErrorKind, Result};
use crate::formats::protowire::{Step, Steps};
use crate::limits::{exceeded, Limits};

/// Byte offsets of the repeated top-level records, by position.
#[derive(Debug, Default)]
pub(super) struct Offsets {
    sample_types: Vec<u64>,
    samples: Vec<u64>,
    mappings: Vec<u64>,
    locations: Vec<u64>,
    functions: Vec<u64>,
}

fn at(offsets: &[u64], i: usize) -> u64 {
    offsets.get(i).copied().unwrap_or(0)
}

impl Offsets {
    /// Walks the top-level fields of `bytes`: a field running past the end is a truncated
    /// file, bytes no encoder writes are a malformed one. The tables and samples are held to
    /// `limits` here, before prost turns each few bytes of them into a struct.
    pub(super) fn scan(bytes: &[u8], limits: &Limits) -> Result<Offsets> {
        let mut offsets = Offsets::default();
        let mut strings = 0u64;
        let tables = ("max_table_entries", limits.max_table_entries);
        for step in Steps::new(bytes) {
            match step {
                Step::Field { number, offset, .. } => {
                    let (table, (limit, max)) = match number {
                        1 => (&mut offsets.sample_types, tables),
                        2 => (&mut offsets.samples, ("max_samples", limits.max_samples)),
                        3 => (&mut offsets.mappings, tables),
                        4 => (&mut offsets.locations, tables),
                        5 => (&mut offsets.functions, tables),
                        6 => {
                            strings += 1;
                            if strings > limits.max_table_entries {
                                return Err(exceeded(tables.0, tables.1));
                            }
                            continue;
                        }
                        _ => continue,
                    };
                    if table.len() as u64 >= max {
                        return Err(exceeded(limit, max));
                    }
                    table.push(offset as u64);
                }
                Step::End => {}
                Step::Cut { offset } | Step::CutBody { offset, .. } => {
                    return Err(ErrorKind::Truncated {
                        offset: offset as u64,
                        what: "pprof Profile field",
                    }
                    .into())
                }
                Step::Invalid { offset, .. } => {
                    return Err(malformed(offset as u64, "not a protobuf field".into()))
                }
            }
        }
        Ok(offsets)
    }

    pub(super) fn sample_type(&self, i: usize) -> u64 {
        at(&self.sample_types, i)
    }

    pub(super) fn sample(&self, i: usize) -> u64 {
        at(&self.samples, i)
    }

    pub(super) fn mapping(&self, i: usize) -> u64 {
        at(&self.mappings, i)
    }

    pub(super) fn location(&self, i: usize) -> u64 {
        at(&self.locations, i)
    }

    pub(super) fn function(&self, i: usize) -> u64 {
        at(&self.functions, i)
    }
}
