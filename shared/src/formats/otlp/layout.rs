//! Which opentelemetry-proto numbering a binary payload uses, read from the raw bytes.
//!
//! v1.10 renumbered `Sample` (attribute_indices 3→2, link_index 4→3, values 2→4) and v1.9
//! moved `Profile` fields 8–12 down by one. Decoding with the wrong numbering either fails or,
//! worse, silently puts values into attribute indices, so the layout is decided from wire
//! evidence before prost sees the bytes:
//!
//! - `Sample` field 4 length-delimited (packed `values`) is v1.10; field 3 length-delimited
//!   (packed `attribute_indices`) is v1.8/v1.9; field 2 without fields 4 and 5 is an old
//!   `values` (as v1.10 it would leave the sample empty, which is invalid); field 2 with as
//!   many entries as the sample has timestamps, some of which cannot be attribute indices (out
//!   of the attribute table's range), is too.
//!   Unpacked single elements (field 3 or 4 as a varint) are weak evidence, used only when
//!   nothing stronger is present.
//! - `Profile` field 8 length-delimited (`profile_id`) or field 9 as a varint
//!   (`dropped_attributes_count`) is v1.8; the opposite wire types are v1.9 or later.
//! - A `Sample` field 6, a length-delimited `Profile` field 3 (v1.4–v1.7 tables or location
//!   indices), repeated `sample_type`, a `KeyValue`-shaped attribute table entry, or
//!   top-level tables are layouts up to v1.7, which are rejected by name. Unknown field
//!   numbers are otherwise left to prost, which skips them: newer layouts may add fields.
//!
//! Samples that use only `stack_index` and timestamps read the same in every layout, so a
//! payload without evidence decodes as v1.10.

use crate::error::{Error, ErrorKind, Result};
use crate::formats::protowire::{Field, Fields, Value, WireError};
use crate::limits::{exceeded, Limits};

/// A supported numbering.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Layout {
    /// opentelemetry-proto v1.8.0.
    V1_8,
    /// opentelemetry-proto v1.9.0.
    V1_9,
    /// opentelemetry-proto v1.10.0 and v1.11.0 (same numbers).
    V1_10,
}

impl Layout {
    pub(super) fn name(self) -> &'static str {
        match self {
            Layout::V1_8 => "v1.8",
            Layout::V1_9 => "v1.9",
            Layout::V1_10 => "v1.10/v1.11",
        }
    }
}

/// Offsets of the first field seen for each kind of evidence.
#[derive(Default, Debug)]
struct Evidence {
    sample_new: Option<u64>,
    sample_old: Option<u64>,
    sample_new_weak: Option<u64>,
    sample_old_weak: Option<u64>,
    profile_v1_8: Option<u64>,
    profile_v1_9: Option<u64>,
    /// Sample records seen: checked against `max_samples` before prost decodes them.
    samples: u64,
}

fn note(slot: &mut Option<u64>, offset: u64) {
    slot.get_or_insert(offset);
}

fn malformed(offset: u64, what: String) -> Error {
    ErrorKind::Malformed {
        format: "otlp",
        offset,
        what,
    }
    .into()
}

fn too_old(offset: u64, layout: &str, why: &str) -> Error {
    malformed(
        offset,
        format!(
            "OTLP profiles layout {layout} (opentelemetry-proto {layout}.0 or older) is not \
             supported: {why}; re-export with opentelemetry-proto v1.8.0 or newer"
        ),
    )
}

fn nested(e: WireError, message: &str) -> Error {
    match e {
        WireError::Truncated { offset } => malformed(
            offset,
            format!("{message}: a field runs past the end of its message"),
        ),
        WireError::Invalid { offset, what } => malformed(offset, format!("{message}: {what}")),
    }
}

/// The length-delimited payload of `field`, or an error naming `message`.
fn payload<'a>(field: &Field<'a>, message: &str) -> Result<&'a [u8]> {
    match field.value {
        Value::Len(bytes) => Ok(bytes),
        _ => Err(malformed(
            field.offset,
            format!(
                "{message} field {} has wire type {}, expected length-delimited",
                field.number,
                field.value.wire_type()
            ),
        )),
    }
}

/// Decides the layout of one request (`bytes`, starting at `base` in the input). Also
/// reports a request cut short as `Truncated`, and one whose dictionary tables or samples
/// exceed `limits` before prost turns each few bytes into a struct.
pub(super) fn detect(bytes: &[u8], base: u64, limits: &Limits) -> Result<Layout> {
    let mut resources = Vec::new();
    let mut attribute_entries = 0usize;
    // Entries by table (field number, 1 to 7) over every `dictionary` field: prost merges
    // repeated ones into one dictionary.
    let mut tables = [0u64; 8];
    let mut top = Fields::new(bytes, base);
    while let Some(field) = top.next() {
        let field = field.map_err(|e| match e {
            WireError::Truncated { offset } => Error::new(ErrorKind::Truncated {
                offset,
                what: "OTLP profiles request",
            }),
            other => nested(other, "ExportProfilesServiceRequest"),
        })?;
        match field.number {
            1 => {
                let body = payload(&field, "ExportProfilesServiceRequest")?;
                resources.push((body, top.base_of(body)));
            }
            2 => {
                let body = payload(&field, "ExportProfilesServiceRequest")?;
                attribute_entries += dictionary(body, top.base_of(body), &mut tables, limits)?;
            }
            3..=8 => {
                return Err(too_old(
                    field.offset,
                    "v1.6",
                    "dictionary tables are fields of ProfilesData",
                ))
            }
            _ => {}
        }
    }
    let mut ev = Evidence::default();
    for (body, at) in resources {
        walk_resource(body, at, attribute_entries, &mut ev)?;
    }
    if ev.samples > limits.max_samples {
        return Err(exceeded("max_samples", limits.max_samples));
    }
    decide(&ev)
}

/// Counts the attribute table entries of a dictionary, counts every table's entries into
/// `tables` (by field number) and holds them to `max_table_entries`, and rejects the pre-v1.8
/// `KeyValue` shape (a string key in field 1 instead of `key_strindex`).
fn dictionary(body: &[u8], base: u64, tables: &mut [u64; 8], limits: &Limits) -> Result<usize> {
    let mut entries = 0;
    let mut fields = Fields::new(body, base);
    while let Some(f) = fields.next() {
        let f = f.map_err(|e| nested(e, "ProfilesDictionary"))?;
        if let Some(count) = usize::try_from(f.number)
            .ok()
            .and_then(|n| tables.get_mut(n))
        {
            *count += 1;
            if *count > limits.max_table_entries {
                return Err(exceeded("max_table_entries", limits.max_table_entries));
            }
        }
        if f.number != 6 {
            continue;
        }
        entries += 1;
        let entry = payload(&f, "ProfilesDictionary")?;
        let first = Fields::new(entry, fields.base_of(entry)).next();
        if let Some(Ok(first)) = first {
            if first.number == 1 && first.value.wire_type() == 2 {
                return Err(too_old(
                    first.offset,
                    "v1.7",
                    "attribute_table holds KeyValue entries with string keys",
                ));
            }
        }
    }
    Ok(entries)
}

fn walk_resource(body: &[u8], base: u64, attrs: usize, ev: &mut Evidence) -> Result<()> {
    let mut fields = Fields::new(body, base);
    while let Some(f) = fields.next() {
        let f = f.map_err(|e| nested(e, "ResourceProfiles"))?;
        if f.number == 2 {
            let scope = payload(&f, "ResourceProfiles")?;
            let mut inner = Fields::new(scope, fields.base_of(scope));
            while let Some(g) = inner.next() {
                let g = g.map_err(|e| nested(e, "ScopeProfiles"))?;
                if g.number == 2 {
                    let profile = payload(&g, "ScopeProfiles")?;
                    walk_profile(profile, inner.base_of(profile), attrs, ev)?;
                }
            }
        }
    }
    Ok(())
}

fn walk_profile(body: &[u8], base: u64, attrs: usize, ev: &mut Evidence) -> Result<()> {
    let mut sample_types = 0;
    let mut fields = Fields::new(body, base);
    while let Some(f) = fields.next() {
        let f = f.map_err(|e| nested(e, "Profile"))?;
        let wire = f.value.wire_type();
        match (f.number, wire) {
            (1, _) => {
                sample_types += 1;
                if sample_types > 1 {
                    return Err(too_old(
                        f.offset,
                        "v1.7",
                        "a Profile has several sample_type",
                    ));
                }
            }
            (2, 2) => {
                ev.samples += 1;
                let sample = payload(&f, "Profile")?;
                walk_sample(sample, fields.base_of(sample), attrs, ev)?;
            }
            (3, 2) => {
                return Err(too_old(
                    f.offset,
                    "v1.7",
                    "Profile field 3 is location_indices, not time_unix_nano",
                ))
            }
            (8, 2) | (9, 0) => note(&mut ev.profile_v1_8, f.offset),
            (8, 0) | (9, 2) => note(&mut ev.profile_v1_9, f.offset),
            _ => {}
        }
    }
    Ok(())
}

fn walk_sample(body: &[u8], base: u64, attrs: usize, ev: &mut Evidence) -> Result<()> {
    let mut field2: Option<(u64, &[u8])> = None;
    let (mut has4, mut timestamps) = (false, None::<usize>);
    for f in Fields::new(body, base) {
        let f = f.map_err(|e| nested(e, "Sample"))?;
        match (f.number, f.value) {
            (2, Value::Len(bytes)) => field2 = Some((f.offset, bytes)),
            (3, Value::Len(_)) => note(&mut ev.sample_old, f.offset),
            (3, Value::Varint) => note(&mut ev.sample_new_weak, f.offset),
            (4, Value::Len(_)) => {
                has4 = true;
                note(&mut ev.sample_new, f.offset);
            }
            (4, Value::Varint) => {
                has4 = true;
                note(&mut ev.sample_old_weak, f.offset);
            }
            (5, Value::Len(packed)) => *timestamps.get_or_insert(0) += packed.len() / 8,
            (5, _) => *timestamps.get_or_insert(0) += 1,
            (6, _) => {
                return Err(too_old(
                    f.offset,
                    "v1.7",
                    "a Sample has field 6 (timestamps_unix_nano of the v1.4–v1.7 numbering)",
                ))
            }
            _ => {}
        }
    }
    let Some((offset, packed)) = field2 else {
        return Ok(());
    };
    match (has4, timestamps) {
        (false, None) => note(&mut ev.sample_old, offset),
        // Old values pair up with the timestamps; v1.10 attribute indices stay in the table.
        (false, Some(n))
            if varint_count(packed) == Some(n) && !fits_attribute_indices(packed, attrs) =>
        {
            note(&mut ev.sample_old, offset);
        }
        _ => {}
    }
    Ok(())
}

/// How many varints a packed field holds; `None` if one is cut.
fn varint_count(packed: &[u8]) -> Option<usize> {
    let ends = packed.iter().filter(|&&b| b & 0x80 == 0).count();
    (packed.last().is_some_and(|&b| b & 0x80 == 0) || packed.is_empty()).then_some(ends)
}

/// Whether packed varints could be v1.10 `attribute_indices` into a table of `attrs` entries.
fn fits_attribute_indices(packed: &[u8], attrs: usize) -> bool {
    let mut at = 0;
    while at < packed.len() {
        let mut value = 0u64;
        let mut done = false;
        for i in 0..10 {
            let Some(&b) = packed.get(at) else { break };
            at += 1;
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                done = true;
                break;
            }
        }
        if !done || value >= attrs as u64 {
            return false;
        }
    }
    true
}

fn decide(ev: &Evidence) -> Result<Layout> {
    let conflict = |a: u64, b: u64, what: &str| {
        malformed(
            a.min(b),
            format!(
                "OTLP profiles layout is ambiguous: {what} (bytes {a} and {b}); refusing to \
                 guess which fields the values belong to"
            ),
        )
    };
    if let (Some(a), Some(b)) = (ev.profile_v1_8, ev.profile_v1_9) {
        return Err(conflict(
            a,
            b,
            "some Profiles use the v1.8 numbering and others v1.9 or later",
        ));
    }
    let old_samples = match (ev.sample_new, ev.sample_old) {
        (Some(a), Some(b)) => {
            return Err(conflict(
                a,
                b,
                "some Samples use the v1.10 numbering and others v1.8/v1.9",
            ))
        }
        (Some(_), None) => Some(false),
        (None, Some(_)) => Some(true),
        (None, None) => match (ev.sample_new_weak, ev.sample_old_weak) {
            (Some(a), Some(b)) => {
                return Err(conflict(
                    a,
                    b,
                    "unpacked Sample fields 3 and 4 fit neither numbering consistently",
                ))
            }
            (Some(_), None) => Some(false),
            (None, Some(_)) => Some(true),
            (None, None) => None,
        },
    };
    match (old_samples, ev.profile_v1_8) {
        (Some(false), Some(at)) => Err(malformed(
            at,
            "OTLP profiles layout is inconsistent: Profile uses the v1.8 numbering but \
             Sample the v1.10 one"
                .into(),
        )),
        (Some(false), None) | (None, None) => Ok(Layout::V1_10),
        (Some(true), None) => Ok(Layout::V1_9),
        (_, Some(_)) => Ok(Layout::V1_8),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions() {
        let ev = |f: fn(&mut Evidence)| {
            let mut e = Evidence::default();
            f(&mut e);
            decide(&e)
        };
        assert_eq!(ev(|_| {}).unwrap(), Layout::V1_10);
        assert_eq!(ev(|e| e.sample_old = Some(1)).unwrap(), Layout::V1_9);
        assert_eq!(
            ev(|e| {
                e.sample_old = Some(1);
                e.profile_v1_8 = Some(2);
            })
            .unwrap(),
            Layout::V1_8
        );
        assert_eq!(ev(|e| e.profile_v1_8 = Some(2)).unwrap(), Layout::V1_8);
        assert!(ev(|e| {
            e.sample_new = Some(1);
            e.sample_old = Some(2);
        })
        .is_err());
        assert!(ev(|e| {
            e.sample_new = Some(1);
            e.profile_v1_8 = Some(2);
        })
        .is_err());
        assert_eq!(
            ev(|e| {
                e.sample_new = Some(1);
                e.sample_old_weak = Some(2);
            })
            .unwrap(),
            Layout::V1_10
        );
    }

    #[test]
    fn packed_counts() {
        assert_eq!(varint_count(&[1, 0x80, 0x01, 3]), Some(3));
        assert_eq!(varint_count(&[1, 0x80]), None);
        assert_eq!(varint_count(&[]), Some(0));
    }

    #[test]
    fn attribute_index_ranges() {
        assert!(fits_attribute_indices(&[1, 2, 3], 4));
        assert!(!fits_attribute_indices(&[1, 4], 4));
        assert!(
            !fits_attribute_indices(&[0xe0, 0xc6, 0x5b], 100),
            "1 500 000"
        );
    }
}
