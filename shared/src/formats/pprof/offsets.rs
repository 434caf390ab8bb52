//! Where each top-level record of the profile starts, so that errors about a sample or a
//! location can point at its bytes; the same walk tells a cut-off file from a corrupt one
//! before prost gives its less specific verdict. It also splits the samples, the bulk of a
//! profile, from the rest, so that they are decoded one at a time rather than all at once.

use std::ops::Range;

use super::malformed;
use crate::error::{ErrorKind, Result};
use crate::formats::protowire::{Step, Steps, Value};
use crate::limits::{exceeded, Limits};

/// Byte offsets of the repeated top-level records, by position.
#[derive(Debug, Default)]
pub(super) struct Offsets {
    sample_types: Vec<u64>,
    samples: Vec<u64>,
    mappings: Vec<u64>,
    locations: Vec<u64>,
    functions: Vec<u64>,
    /// Each sample's message body.
    sample_bodies: Vec<Range<usize>>,
    /// Runs of consecutive records that are not samples.
    rest: Vec<Range<usize>>,
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
        let mut runs = Runs::default();
        for step in Steps::new(bytes) {
            match step {
                Step::Field {
                    number,
                    offset,
                    value,
                } => {
                    let body = match value {
                        Value::Len(body) => Some(body_range(bytes, body)),
                        _ => None,
                    };
                    // A sample that is not a message stays with the rest, whose decoding
                    // rejects it.
                    let sample = body.filter(|_| number == 2);
                    runs.record(offset, sample.is_some());
                    offsets.sample_bodies.extend(sample);
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
        offsets.rest = runs.finish(bytes.len());
        Ok(offsets)
    }

    /// Each sample's message body, in order.
    pub(super) fn sample_bodies(&self) -> &[Range<usize>] {
        &self.sample_bodies
    }

    /// The byte ranges holding everything but the samples, in order.
    pub(super) fn rest(&self) -> &[Range<usize>] {
        &self.rest
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

/// Where `body`, a slice of `bytes`, lies in it.
fn body_range(bytes: &[u8], body: &[u8]) -> Range<usize> {
    let start = body.as_ptr() as usize - bytes.as_ptr() as usize;
    start..start + body.len()
}

/// Runs of consecutive records that are not samples, built record by record: a record ends
/// where the next one starts.
#[derive(Default)]
struct Runs {
    runs: Vec<Range<usize>>,
    /// Start of the run being built.
    open: Option<usize>,
}

impl Runs {
    fn record(&mut self, offset: usize, is_sample: bool) {
        match (is_sample, self.open) {
            (true, Some(start)) => {
                self.runs.push(start..offset);
                self.open = None;
            }
            (false, None) => self.open = Some(offset),
            _ => {}
        }
    }

    fn finish(mut self, end: usize) -> Vec<Range<usize>> {
        if let Some(start) = self.open {
            self.runs.push(start..end);
        }
        self.runs
    }
}
