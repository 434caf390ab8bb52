//! The profile's string table and its id-keyed tables, with every reference checked before
//! the importer follows it.
//!
//! pprof refers to mappings, locations and functions by 1-based `id`, not by position, and to
//! strings by position. Checking every reference up front means the importer never meets a
//! dangling one, and a bad file fails the same way whether or not a sample reaches the bad
//! entry.

use std::collections::hash_map::Entry;

use proflake_proto::pprof;
use rustc_hash::FxHashMap;

use super::malformed;
use super::offsets::Offsets;
use crate::error::Result;

/// Stat: string table entries that were not UTF-8 and were repaired.
const INVALID_UTF8: &str = "pprof_string_invalid_utf8";
/// Stat: mappings, locations or functions with id 0, which nothing can refer to.
const ZERO_ID: &str = "pprof_zero_id";
/// Stat: mappings, locations or functions whose id an earlier entry already has; the first
/// one wins, as in Go's pprof.
const DUPLICATE_ID: &str = "pprof_duplicate_id";
/// Stat: `string_table[0]` was not the empty string; index 0 still means "unset".
const STRING_ZERO_NOT_EMPTY: &str = "pprof_string_table_0_not_empty";

/// Lookup tables over a decoded `Profile`.
pub(super) struct Tables {
    strings: Vec<String>,
    mappings: FxHashMap<u64, usize>,
    locations: FxHashMap<u64, usize>,
    functions: FxHashMap<u64, usize>,
    /// Counters for the profile's stats.
    pub stats: Vec<&'static str>,
}

impl Tables {
    /// Builds the tables and checks every string, mapping and function reference of
    /// `profile`; samples' references are checked as samples are imported.
    pub(super) fn new(profile: &mut pprof::Profile, offsets: &Offsets) -> Result<Tables> {
        let mut stats = Vec::new();
        let strings = std::mem::take(&mut profile.string_table)
            .into_iter()
            .map(|raw| {
                String::from_utf8(raw).unwrap_or_else(|e| {
                    stats.push(INVALID_UTF8);
                    String::from_utf8_lossy(e.as_bytes()).into_owned()
                })
            })
            .collect::<Vec<_>>();
        if strings.first().is_some_and(|s| !s.is_empty()) {
            stats.push(STRING_ZERO_NOT_EMPTY);
        }
        let mappings = index_ids(profile.mapping.iter().map(|m| m.id), &mut stats);
        let locations = index_ids(profile.location.iter().map(|l| l.id), &mut stats);
        let functions = index_ids(profile.function.iter().map(|f| f.id), &mut stats);
        let tables = Tables {
            strings,
            mappings,
            locations,
            functions,
            stats,
        };
        tables.check(profile, offsets)?;
        Ok(tables)
    }

    fn check(&self, p: &pprof::Profile, offsets: &Offsets) -> Result<()> {
        for (i, t) in p.sample_type.iter().enumerate() {
            let at = offsets.sample_type(i);
            self.check_string(t.r#type, at, || format!("sample_type[{i}].type"))?;
            self.check_string(t.unit, at, || format!("sample_type[{i}].unit"))?;
        }
        if let Some(t) = &p.period_type {
            self.check_string(t.r#type, 0, || "period_type.type".into())?;
            self.check_string(t.unit, 0, || "period_type.unit".into())?;
        }
        self.check_string(p.drop_frames, 0, || "drop_frames".into())?;
        self.check_string(p.keep_frames, 0, || "keep_frames".into())?;
        self.check_string(p.default_sample_type, 0, || "default_sample_type".into())?;
        self.check_string(p.doc_url, 0, || "doc_url".into())?;
        for (i, &c) in p.comment.iter().enumerate() {
            self.check_string(c, 0, || format!("comment[{i}]"))?;
        }
        for (i, m) in p.mapping.iter().enumerate() {
            let at = offsets.mapping(i);
            self.check_string(m.filename, at, || format!("mapping[{i}].filename"))?;
            self.check_string(m.build_id, at, || format!("mapping[{i}].build_id"))?;
        }
        for (i, f) in p.function.iter().enumerate() {
            let at = offsets.function(i);
            self.check_string(f.name, at, || format!("function[{i}].name"))?;
            self.check_string(f.system_name, at, || format!("function[{i}].system_name"))?;
            self.check_string(f.filename, at, || format!("function[{i}].filename"))?;
        }
        for (i, l) in p.location.iter().enumerate() {
            let at = offsets.location(i);
            if l.mapping_id != 0 && self.mapping(l.mapping_id).is_none() {
                return Err(malformed(
                    at,
                    format!(
                        "location[{i}].mapping_id {} not in mapping table",
                        l.mapping_id
                    ),
                ));
            }
            for (j, line) in l.line.iter().enumerate() {
                if line.function_id != 0 && self.function(line.function_id).is_none() {
                    return Err(malformed(
                        at,
                        format!(
                            "location[{i}].line[{j}].function_id {} not in function table",
                            line.function_id
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Checks the string references of sample `i`, found at byte `at`.
    pub(super) fn check_sample(&self, s: &pprof::Sample, i: usize, at: u64) -> Result<()> {
        for label in &s.label {
            self.check_string(label.key, at, || format!("sample[{i}].label.key"))?;
            self.check_string(label.str, at, || format!("sample[{i}].label.str"))?;
            self.check_string(label.num_unit, at, || format!("sample[{i}].label.num_unit"))?;
        }
        Ok(())
    }

    fn check_string(&self, index: i64, at: u64, what: impl FnOnce() -> String) -> Result<()> {
        let fits = usize::try_from(index).is_ok_and(|i| i == 0 || i < self.strings.len());
        if fits {
            return Ok(());
        }
        Err(malformed(
            at,
            format!(
                "{} {index} not in string table of {} entries",
                what(),
                self.strings.len()
            ),
        ))
    }

    /// The string at a checked index; index 0 (unset) is always "".
    pub(super) fn str(&self, index: i64) -> &str {
        match usize::try_from(index) {
            Ok(0) | Err(_) => "",
            Ok(i) => self.strings.get(i).map_or("", String::as_str),
        }
    }

    /// The string at a checked index, `None` when it is unset or empty.
    pub(super) fn opt_str(&self, index: i64) -> Option<&str> {
        Some(self.str(index)).filter(|s| !s.is_empty())
    }

    /// Position of the mapping with this id.
    pub(super) fn mapping(&self, id: u64) -> Option<usize> {
        self.mappings.get(&id).copied()
    }

    /// Position of the location with this id.
    pub(super) fn location(&self, id: u64) -> Option<usize> {
        self.locations.get(&id).copied()
    }

    /// Position of the function with this id.
    pub(super) fn function(&self, id: u64) -> Option<usize> {
        self.functions.get(&id).copied()
    }
}

fn index_ids(
    ids: impl Iterator<Item = u64>,
    stats: &mut Vec<&'static str>,
) -> FxHashMap<u64, usize> {
    let mut index = FxHashMap::default();
    for (i, id) in ids.enumerate() {
        if id == 0 {
            stats.push(ZERO_ID);
            continue;
        }
        match index.entry(id) {
            Entry::Occupied(_) => stats.push(DUPLICATE_ID),
            Entry::Vacant(slot) => {
                slot.insert(i);
            }
        }
    }
    index
}
