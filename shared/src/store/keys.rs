//! The key layout of the bucket (and of a local directory that mirrors it).
//!
//! ```text
//! uploads/<name>                                     raw profiles as uploaded, kept unchanged
//! converted/<source_id>/sample-v2/<chunk_id>.json    Sample v2 chunks of one upload
//! tables/v2/<table>/dt=YYYY-MM-DD/<source_id>.parquet stack tables (docs/tables.md)
//! index/build-id/<build_id>/<source_id>.json        an upload has unsymbolized frames of an image
//! converted/<source_id>/manifest.json                written last: the upload is converted
//! converted/by-key/<key_id>.json                     which conversion is current for an upload key
//! converted/by-key/<key_id>/pending/<source_id>.json a conversion started, its clean-up not done
//! uploads/<name>.metadata.json                       optional metadata sidecar of uploads/<name>
//! uploads/<name>.error.json                          error report of an upload that cannot convert
//! debuginfo/<build-id>/<file name>                   debug files as uploaded (any name but below)
//! debuginfo/<build-id>/<sha>.symcache               lookup cache built from one debug file
//! debuginfo/<build-id>/meta.json                     the file in use and its cache; written last
//! debuginfo/<build-id>/<file name>.error.json        report of a refused debug file
//! lake/<table>/                                      the lake's Delta tables (docs/lake.md)
//! lake/_published/<key_id>.json                      what the lake holds of an upload key
//! lake/_published/_batches/<name>.json               a publish batch that has not completed
//! lake/_quarantine/<key_id>.json                     why a conversion cannot be published
//! ```
//!
//! `source_id` is derived from the upload's key and ETag, so a redelivered notification for the
//! same object rewrites the same keys with the same bytes, and a re-upload under the same key
//! with new content gets new keys.

use md5::{Digest, Md5};

use crate::ids::derived_id;
use crate::model::BuildId;

/// Where SDKs upload raw profiles.
pub const UPLOADS_PREFIX: &str = "uploads/";
/// Where conversion results go.
pub const CONVERTED_PREFIX: &str = "converted/";

/// The ETag S3 gives an object uploaded in one part: the hex MD5 of its bytes. Local stores use
/// it so local and cloud runs derive the same keys.
pub fn content_etag(bytes: &[u8]) -> String {
    hex::encode(Md5::digest(bytes))
}

/// The identity of one upload.
pub fn source_id(source_key: &str, etag: &str) -> String {
    derived_id(&["source", source_key, etag.trim_matches('"')])
}

/// The upload key of a file given by name.
pub fn upload_key(file_name: &str) -> String {
    format!("{UPLOADS_PREFIX}{file_name}")
}

/// Where the HTTP receiver files a profile it was sent:
/// `uploads/<protocol>/<service>/<id>.<extension>`. `id` is derived from the content, so a
/// client's retry finds its upload already there; the service, which comes from the client, is
/// one bounded key segment (ASCII letters, digits, `-`, `_` and `.`, the rest `%XX`, at most 64
/// bytes).
pub fn received_upload_key(protocol: &str, service: &str, id: &str, extension: &str) -> String {
    format!(
        "{UPLOADS_PREFIX}{protocol}/{}/{id}.{extension}",
        key_segment(service)
    )
}

/// Where a client uploads a file itself, through a presigned URL the ingest function handed
/// out: `uploads/direct/<service>/<id>/<name>`, the service and the name each one bounded key
/// segment (as in [`received_upload_key`]) and `id` unique to the request.
pub fn direct_upload_key(service: &str, id: &str, name: &str) -> String {
    format!(
        "{UPLOADS_PREFIX}direct/{}/{}/{}",
        key_segment(service),
        key_segment(id),
        key_segment(name)
    )
}

/// The user metadata name (`x-amz-meta-sidecar-etag`) under which an upload written after its
/// metadata sidecar names that sidecar's ETag: any conversion of the upload reads that very
/// sidecar, so the sidecar's own notification has nothing to add.
pub const SIDECAR_ETAG_METADATA: &str = "sidecar-etag";

/// Longest key segment made from a client's text, in bytes.
const MAX_SEGMENT_BYTES: usize = 64;

/// `text` as one key segment that cannot leave its folder: ASCII letters, digits, `-`, `_` and
/// `.` are kept and every other byte is `%XX`; an empty segment, or one of dots alone, gets a
/// leading `_`. A segment longer than 64 bytes is cut and ends in `~` and a hash of the whole,
/// so two long names that share a beginning stay apart.
pub(crate) fn key_segment(text: &str) -> String {
    let mut segment = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.') {
            segment.push(char::from(b));
        } else {
            segment.push_str(&format!("%{b:02X}"));
        }
    }
    if segment.bytes().all(|b| b == b'.') {
        segment.insert(0, '_');
    }
    if segment.len() > MAX_SEGMENT_BYTES {
        let hash = derived_id(&["key segment", text]);
        // Only ASCII was written, so any byte offset is a char boundary.
        segment.truncate(MAX_SEGMENT_BYTES - 17);
        segment.push('~');
        segment.push_str(&hash[..16]);
    }
    segment
}

/// Key of one Sample v2 chunk.
pub fn chunk_key(source_id: &str, chunk_id: &str) -> String {
    format!("{CONVERTED_PREFIX}{source_id}/sample-v2/{chunk_id}.json")
}

/// Where the stack tables go.
pub const TABLES_PREFIX: &str = "tables/";

/// The key prefix of one table's files in the table layout `version`:
/// `tables/v<version>/<table>/`.
pub fn table_prefix(version: u32, table: &str) -> String {
    format!("{TABLES_PREFIX}v{version}/{table}/")
}

/// Key of one upload's rows of one table for one UTC day (`dt` is `YYYY-MM-DD`).
pub fn table_key(version: u32, table: &str, dt: &str, source_id: &str) -> String {
    format!(
        "{}dt={dt}/{source_id}.parquet",
        table_prefix(version, table)
    )
}

/// The partition of a table key ([`table_key`]): its `dt` (`YYYY-MM-DD`); `None` without one.
#[cfg(feature = "lake")]
pub(crate) fn table_key_dt(key: &str) -> Option<&str> {
    key.split('/').find_map(|part| part.strip_prefix("dt="))
}

/// Day number (days since 1970-01-01) of a key below a table's prefix,
/// `dt=YYYY-MM-DD/<file>.parquet`; `None` for anything else.
pub(crate) fn partition_day(rest: &str) -> Option<i64> {
    let (dir, file) = rest.split_once('/')?;
    if file.is_empty() || file.contains('/') {
        return None;
    }
    let date = dir.strip_prefix("dt=")?;
    let mut parts = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (y, m, d) = (parts.next()??, parts.next()??, parts.next()??);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    Some(crate::calendar::days_from_civil(y, m, d))
}

/// Key of the completion manifest of one upload.
pub fn manifest_key(source_id: &str) -> String {
    format!("{CONVERTED_PREFIX}{source_id}/manifest.json")
}

/// Whether `key` is where a conversion's manifest goes ([`manifest_key`]): a manifest under
/// the conversions' prefix.
pub fn is_manifest_key(key: &str) -> bool {
    key.starts_with(CONVERTED_PREFIX) && key.ends_with("/manifest.json")
}

/// Where the build-ID index goes: one entry per (image, upload) with unsymbolized frames.
pub const BUILD_ID_INDEX_PREFIX: &str = "index/build-id/";

/// Key of the build-ID index entry of one image in one upload. `build_id` is the image's code
/// id (lowercase hex GNU build id) or, without one, its debug id.
pub fn build_id_index_key(build_id: &BuildId, source_id: &str) -> String {
    format!("{}{source_id}.json", build_id_index_prefix(build_id))
}

/// Where the build-ID index entries of one image are, one per upload.
pub fn build_id_index_prefix(build_id: &BuildId) -> String {
    format!("{BUILD_ID_INDEX_PREFIX}{build_id}/")
}

/// Where each upload key's pointer and pending records are (the sweep lists them).
pub fn by_key_prefix() -> String {
    format!("{CONVERTED_PREFIX}by-key/")
}

/// The id an upload key goes by under `converted/by-key/` and in the lake's records.
pub fn key_id(source_key: &str) -> String {
    derived_id(&["key", source_key])
}

/// Key of the pointer to the current conversion of the upload at `source_key`: which
/// conversion a re-upload under the same key replaces.
pub fn current_conversion_key(source_key: &str) -> String {
    pointer_key(&key_id(source_key))
}

/// Key of the pointer of the upload key whose id is `key_id` (see [`current_conversion_key`]).
pub fn pointer_key(key_id: &str) -> String {
    format!("{}{key_id}.json", by_key_prefix())
}

#[cfg(feature = "lake")]
/// The key id a pointer's key names; `None` for any other key.
pub fn key_id_of_pointer(key: &str) -> Option<&str> {
    key.strip_prefix(by_key_prefix().as_str())?
        .strip_suffix(".json")
        .filter(|id| !id.contains('/'))
}

/// Where the records of conversions of the upload at `source_key` that have started but
/// whose clean-up is not done are kept, one per conversion.
pub fn pending_conversions_prefix(source_key: &str) -> String {
    format!("{}{}/pending/", by_key_prefix(), key_id(source_key))
}

/// Key of the record of the conversion `source_id` of the upload at `source_key`, written
/// before any of its outputs (see [`pending_conversions_prefix`]).
pub fn pending_conversion_key(source_key: &str, source_id: &str) -> String {
    format!("{}{source_id}.json", pending_conversions_prefix(source_key))
}

/// The key id and the source id a pending record's key names
/// (`converted/by-key/<key_id>/pending/<source_id>.json`); `None` for any other key.
pub fn pending_conversion_of(key: &str) -> Option<(&str, &str)> {
    let (folder, file) = key.rsplit_once("/pending/")?;
    let key_id = folder.strip_prefix(by_key_prefix().as_str())?;
    let source_id = file.strip_suffix(".json")?;
    let plain = |s: &str| !s.is_empty() && !s.contains('/');
    (plain(key_id) && plain(source_id)).then_some((key_id, source_id))
}

/// The folder of a conversion's manifest and Sample v2 chunks.
pub fn conversion_prefix(source_id: &str) -> String {
    format!("{CONVERTED_PREFIX}{source_id}/")
}

/// Where debug files go, one folder per build ID (lowercase code id, else debug id).
pub const DEBUGINFO_PREFIX: &str = "debuginfo/";

/// Key of the lookup cache built from the debug file with SHA-256 `sha256` (hex). Each file's
/// cache has its own key, so the meta, written last, always names a complete cache of its own
/// file, whatever other uploads of the build ID do meanwhile.
pub fn symcache_key(build_id: &BuildId, sha256: &str) -> String {
    let short = &sha256[..sha256.len().min(16)];
    format!("{DEBUGINFO_PREFIX}{build_id}/{short}{SYMCACHE_SUFFIX}")
}

/// Suffix of a lookup cache's key.
const SYMCACHE_SUFFIX: &str = ".symcache";

/// Name of a build ID's meta in its folder.
const DEBUG_META_NAME: &str = "meta.json";

/// Key of the meta of a build ID's debug file, written after its cache.
pub fn debug_meta_key(build_id: &BuildId) -> String {
    format!("{DEBUGINFO_PREFIX}{build_id}/{DEBUG_META_NAME}")
}

/// Whether `key`, listed under `debuginfo/`, is a build ID's meta.
pub fn is_debug_meta_key(key: &str) -> bool {
    key.strip_suffix(DEBUG_META_NAME)
        .is_some_and(|folder| folder.ends_with('/'))
}

/// Key of a debug file named `file_name` uploaded for `build_id`.
pub fn debug_file_key(build_id: &BuildId, file_name: &str) -> String {
    format!("{DEBUGINFO_PREFIX}{build_id}/{file_name}")
}

/// What a key under `debuginfo/` holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DebugInfoKey {
    /// An uploaded debug file, with the build ID its key names.
    DebugFile {
        /// The build ID, as the key names it but in lowercase (ids are matched without regard
        /// to case).
        build_id: BuildId,
    },
    /// A file proflake derives (cache, meta, error report): no work.
    Derived,
    /// Under `debuginfo/` but not `debuginfo/<build-id>/<name>`.
    Invalid,
    /// Not under `debuginfo/` at all.
    Other,
}

/// Classifies a key of the symbol store.
pub fn debug_info_key(key: &str) -> DebugInfoKey {
    let Some(rest) = key.strip_prefix(DEBUGINFO_PREFIX) else {
        return DebugInfoKey::Other;
    };
    let Some((folder, name)) = rest.split_once('/') else {
        return DebugInfoKey::Invalid;
    };
    if name.ends_with(SYMCACHE_SUFFIX)
        || name == DEBUG_META_NAME
        || name.ends_with(ERROR_REPORT_SUFFIX)
    {
        return DebugInfoKey::Derived;
    }
    let build_id = (folder.parse::<BuildId>().ok()).filter(|_| (8..=80).contains(&folder.len()));
    match build_id {
        Some(id) if !name.is_empty() && !name.contains('/') => DebugInfoKey::DebugFile {
            build_id: id.to_ascii_lowercase(),
        },
        _ => DebugInfoKey::Invalid,
    }
}

/// Suffix of an upload's error report, written next to it when it cannot be converted.
pub const ERROR_REPORT_SUFFIX: &str = ".error.json";

/// Suffix of an upload's metadata sidecar.
pub const METADATA_SIDECAR_SUFFIX: &str = ".metadata.json";

/// Key of the error report of the upload at `upload_key`.
pub fn error_report_key(upload_key: &str) -> String {
    format!("{upload_key}{ERROR_REPORT_SUFFIX}")
}

/// Key of the metadata sidecar of the upload at `upload_key`.
pub fn sidecar_key(upload_key: &str) -> String {
    format!("{upload_key}{METADATA_SIDECAR_SUFFIX}")
}

/// The upload a sidecar key belongs to, if `key` is a sidecar key.
pub fn profile_key_of_sidecar(key: &str) -> Option<&str> {
    key.strip_suffix(METADATA_SIDECAR_SUFFIX)
        .filter(|profile| !profile.is_empty() && !profile.ends_with('/'))
}

#[cfg(feature = "lake")]
/// Where the lake's tables and records are.
pub const LAKE_PREFIX: &str = "lake/";

#[cfg(feature = "lake")]
/// Where the lake's record of each upload key is (below it, the records of batches).
pub const PUBLISHED_PREFIX: &str = "lake/_published/";

#[cfg(feature = "lake")]
/// Key of the lake's record of the upload key whose id is `key_id`.
pub fn published_key(key_id: &str) -> String {
    format!("{PUBLISHED_PREFIX}{key_id}.json")
}

#[cfg(feature = "lake")]
/// The key id the key of a lake's record names; `None` for any other key (a batch's record
/// among them).
pub fn key_id_of_published(key: &str) -> Option<&str> {
    key.strip_prefix(PUBLISHED_PREFIX)?
        .strip_suffix(".json")
        .filter(|id| !id.is_empty() && !id.contains('/'))
}

#[cfg(feature = "lake")]
/// Where a publish batch's record of the conversions it is about to touch is kept while it
/// runs.
pub const PUBLISH_BATCHES_PREFIX: &str = "lake/_published/_batches/";

#[cfg(feature = "lake")]
/// Key of the record of the publish batch `name`.
pub fn publish_batch_key(name: &str) -> String {
    format!("{PUBLISH_BATCHES_PREFIX}{name}.json")
}

#[cfg(feature = "lake")]
/// Key of the report of a conversion of the upload key `key_id` that cannot be published.
pub fn unpublishable_report_key(key_id: &str) -> String {
    format!("lake/_quarantine/{key_id}.json")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clients_service_name_is_one_bounded_segment() {
        let key = |service| received_upload_key("otlp", service, "0a1b", "otlp");
        assert_eq!(
            key("checkout-api_v2.1"),
            "uploads/otlp/checkout-api_v2.1/0a1b.otlp"
        );
        assert_eq!(
            key("../../debuginfo"),
            "uploads/otlp/..%2F..%2Fdebuginfo/0a1b.otlp"
        );
        assert_eq!(key(".."), "uploads/otlp/_../0a1b.otlp");
        assert_eq!(key(""), "uploads/otlp/_/0a1b.otlp");
        assert_eq!(key("a b/ü"), "uploads/otlp/a%20b%2F%C3%BC/0a1b.otlp");
        let long_a = "a".repeat(300);
        let long_b = format!("{}b", "a".repeat(299));
        let (a, b) = (key_segment(&long_a), key_segment(&long_b));
        assert_eq!((a.len(), b.len()), (MAX_SEGMENT_BYTES, MAX_SEGMENT_BYTES));
        assert_ne!(a, b, "names that share a beginning stay apart");
        assert!(!a.contains('/') && !b.contains('/'));
    }

    #[test]
    fn etag_is_s3_single_part_md5() {
        assert_eq!(content_etag(b""), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(
            source_id("uploads/a", "\"d41d8cd98f00b204e9800998ecf8427e\""),
            source_id("uploads/a", "d41d8cd98f00b204e9800998ecf8427e")
        );
        assert_ne!(source_id("uploads/a", "x"), source_id("uploads/b", "x"));
    }

    #[test]
    fn manifests_are_told_from_the_other_outputs() {
        assert!(is_manifest_key(&manifest_key("0123abcd")));
        assert!(!is_manifest_key(&chunk_key("0123abcd", "c1")));
        assert!(!is_manifest_key("uploads/converted/x/manifest.json"));
        assert!(!is_manifest_key("converted/x/manifest.json.tmp"));
    }
}
