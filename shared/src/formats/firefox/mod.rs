//! Firefox Profiler profiles: the gecko format Firefox writes itself (tables as
//! `{schema, data}` rows, a `stringTable` per thread, sub-processes nested in `processes`),
//! and the processed format profiler.firefox.com saves and samply writes (column tables,
//! profile-wide `libs`, strings in `stringArray` or `shared.stringArray`).

mod cells;
mod gecko;
mod meta;
mod processed;
mod sniff;
mod threads;

use std::ops::RangeInclusive;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::error::{Error, ErrorKind, Result};
use crate::limits::Limits;
use crate::model::Profile;

pub(crate) use sniff::test;

const FORMAT: &str = "firefox";

/// The processed versions read: 41 made `libs` profile-wide with `codeId` and frame addresses
/// library-relative; 58 (`shared.sources`) is the newest one published.
pub(crate) const PROCESSED_VERSIONS: RangeInclusive<u64> = 41..=58;

/// The gecko versions read: 9 is the oldest with every table as `{schema, data}`; 32 is what
/// Firefox 147 writes.
pub(crate) const GECKO_VERSIONS: RangeInclusive<u64> = 9..=32;

/// What tells the layouts apart, read before the rest: only `meta`, and the gecko profile a
/// DevTools Performance panel recording holds under `profile`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Head<'a> {
    meta: Option<Versions>,
    #[serde(borrow)]
    profile: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Versions {
    version: Option<u64>,
    preprocessed_profile_version: Option<u64>,
}

fn malformed(what: String) -> Error {
    super::json_document::malformed(FORMAT, what)
}

/// `e` with `place` before what it says is wrong, when it is this format's own error.
fn within(e: Error, place: std::fmt::Arguments<'_>) -> Error {
    match e.kind() {
        ErrorKind::Malformed {
            format: FORMAT,
            what,
            ..
        } => malformed(format!("{place}: {what}")),
        _ => e,
    }
}

/// Refuses a table longer than `max_table_entries` before its rows are turned into the model.
fn bounded(table: &str, len: usize, limits: &Limits) -> Result<()> {
    if len as u64 > limits.max_table_entries {
        let _ = table;
        return Err(crate::limits::exceeded(
            "max_table_entries",
            limits.max_table_entries,
        ));
    }
    Ok(())
}

/// Parses `json` as `T`, naming the path of what does not fit.
fn parse<'a, T: Deserialize<'a>>(json: &'a str) -> Result<T> {
    super::json_document::parse(FORMAT, json.as_bytes())
}

/// Decodes a whole Firefox Profiler document: processed when `meta` has a
/// `preprocessedProfileVersion`, gecko otherwise.
pub(crate) fn decode(json: &[u8], limits: &Limits) -> Result<Profile> {
    limits.check_json_depth(json)?;
    let json = std::str::from_utf8(json)
        .map_err(|e| malformed(format!("the document is not UTF-8: {e}")))?;
    let head: Head<'_> = parse(json)?;
    let (json, versions) = match (head.meta, head.profile) {
        (Some(versions), _) => (json, versions),
        (None, Some(wrapped)) => {
            let inner: Head<'_> = parse(wrapped.get())?;
            let versions = inner
                .meta
                .ok_or_else(|| malformed("profile: the recording's profile has no meta".into()))?;
            (wrapped.get(), versions)
        }
        (None, None) => return Err(malformed("the document has no meta".into())),
    };
    let mut profile = Profile::new(FORMAT);
    match versions {
        Versions {
            preprocessed_profile_version: Some(v),
            ..
        } => {
            check_version(&mut profile, "processed", v, &PROCESSED_VERSIONS)?;
            processed::decode(json, &mut profile, limits)?;
        }
        Versions {
            version: Some(v), ..
        } => {
            check_version(&mut profile, "gecko", v, &GECKO_VERSIONS)?;
            gecko::decode(json, &mut profile, limits)?;
        }
        _ => {
            return Err(malformed(
                "meta has neither version nor preprocessedProfileVersion".into(),
            ))
        }
    }
    profile.sort_samples_by_time();
    Ok(profile)
}

/// Refuses a version older than `known`; a newer one is read as the newest known, with a
/// finding, since the formats mostly grow by optional fields.
fn check_version(
    profile: &mut Profile,
    layout: &str,
    version: u64,
    known: &RangeInclusive<u64>,
) -> Result<()> {
    if version < *known.start() {
        return Err(malformed(format!(
            "Firefox {layout} profile version {version} is not supported ({} to {} are)",
            known.start(),
            known.end()
        )));
    }
    if version > *known.end() {
        profile.findings.push(format!(
            "Firefox {layout} profile version {version} is newer than {}, the newest known; read as that",
            known.end()
        ));
    }
    Ok(())
}
