//! What the landing tier holds for an upload key: its settled conversion (the one the key's
//! pointer names, with its manifest), or nothing.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::ledger::Held;
use crate::error::{Error, ErrorKind, Result};
use crate::pipeline::Manifest;
use crate::store::{by_key_prefix, key_id, key_id_of_pointer, pointer_key, source_id, ObjectStore};
use crate::tables::Table;

/// One landing file of a conversion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct LandingFile {
    pub table: Table,
    pub dt: String,
    pub key: String,
    /// Hex SHA-256 the manifest recorded.
    pub sha256: String,
    /// Size in bytes the manifest recorded.
    pub bytes: u64,
}

/// A settled conversion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Conversion {
    pub key: String,
    pub manifest_key: String,
    pub held: Held,
    pub files: Vec<LandingFile>,
    /// When the manifest was written, ms since the Unix epoch (for the publish lag).
    pub manifest_written_ms: Option<i64>,
}

/// What the landing tier holds for one key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Landing {
    /// The key's current conversion.
    Current(Conversion),
    /// Nothing: the key has no current conversion (removed, or quarantined).
    Gone,
}

/// The pointer's fields the lake needs.
#[derive(Deserialize)]
struct Pointer {
    source_id: String,
    manifest_key: String,
}

/// The key ids of every key that has a pointer.
pub(super) fn key_ids(store: &dyn ObjectStore) -> Result<Vec<String>> {
    Ok(store
        .list(&by_key_prefix())?
        .iter()
        .filter_map(|k| key_id_of_pointer(k))
        .map(str::to_owned)
        .collect())
}

/// The key's current conversion, by its pointer.
pub(super) fn current(store: &dyn ObjectStore, key_id: &str) -> Result<Landing> {
    let Some(json) = store.get(&pointer_key(key_id))? else {
        return Ok(Landing::Gone);
    };
    let Ok(pointer) = serde_json::from_slice::<Pointer>(&json) else {
        return Ok(Landing::Gone);
    };
    let Some((bytes, info)) = store.get_object(&pointer.manifest_key, u64::MAX)? else {
        return Ok(Landing::Gone);
    };
    let manifest = parse(&pointer.manifest_key, &bytes)?;
    if manifest.source.source_id != pointer.source_id {
        return Ok(Landing::Gone);
    }
    let mut conversion = conversion(&pointer.manifest_key, &bytes, &manifest)?;
    conversion.manifest_written_ms = info.last_modified_ns.map(|ns| ns / 1_000_000);
    Ok(Landing::Current(conversion))
}

/// The key id of the conversion whose manifest is at `manifest_key`, and whether it is still
/// settling (its content is the key's, but the pointer does not name it yet). `None` when
/// the manifest is gone (the conversion was replaced; the key's other content is published
/// by its own event).
pub(super) fn key_of_manifest(
    uploads: &dyn ObjectStore,
    outputs: &dyn ObjectStore,
    manifest_key: &str,
) -> Result<Option<(String, bool)>> {
    let Some(bytes) = outputs.get(manifest_key)? else {
        return Ok(None);
    };
    let manifest = parse(manifest_key, &bytes)?;
    let id = key_id(&manifest.source.key);
    let settling = match current(outputs, &id)? {
        Landing::Current(c) if c.held.source_id == manifest.source.source_id => false,
        _ => uploads
            .head(&manifest.source.key)?
            .is_some_and(|u| source_id(&manifest.source.key, &u.etag) == manifest.source.source_id),
    };
    Ok(Some((id, settling)))
}

fn parse(manifest_key: &str, bytes: &[u8]) -> Result<Manifest> {
    serde_json::from_slice(bytes).map_err(|e| unpublishable(manifest_key, format!("manifest: {e}")))
}

/// The conversion a manifest describes: its landing files, by table and partition.
fn conversion(manifest_key: &str, bytes: &[u8], manifest: &Manifest) -> Result<Conversion> {
    let mut files = Vec::new();
    let mut partitions: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for output in &manifest.outputs {
        let Some(name) = output.kind.strip_prefix("table:") else {
            continue;
        };
        let table = Table::ALL
            .into_iter()
            .find(|t| t.name() == name)
            .ok_or_else(|| unpublishable(manifest_key, format!("unknown table {name}")))?;
        let dt = crate::store::keys::table_key_dt(&output.key)
            .ok_or_else(|| unpublishable(manifest_key, format!("{} has no dt=", output.key)))?;
        partitions
            .entry(table.name().to_owned())
            .or_default()
            .insert(dt.to_owned());
        files.push(LandingFile {
            table,
            dt: dt.to_owned(),
            key: output.key.clone(),
            sha256: output.sha256.clone(),
            bytes: output.bytes,
        });
    }
    Ok(Conversion {
        key: manifest.source.key.clone(),
        manifest_key: manifest_key.to_owned(),
        held: Held {
            source_id: manifest.source.source_id.clone(),
            manifest_sha256: hex::encode(Sha256::digest(bytes)),
            partitions,
        },
        files,
        manifest_written_ms: None,
    })
}

/// Reads a landing file and checks it is the one its manifest recorded.
pub(super) fn read_file(
    store: &dyn ObjectStore,
    conversion: &Conversion,
    file: &LandingFile,
) -> Result<bytes::Bytes> {
    let bytes = store.get(&file.key)?.ok_or_else(|| {
        unpublishable(&conversion.manifest_key, format!("{} is missing", file.key))
    })?;
    if hex::encode(Sha256::digest(&bytes)) != file.sha256 {
        return Err(unpublishable(
            &conversion.manifest_key,
            format!(
                "{} is not the file the manifest lists (SHA-256 differs)",
                file.key
            ),
        ));
    }
    Ok(bytes.into())
}

pub(super) fn unpublishable(manifest_key: &str, what: String) -> Error {
    Error::new(ErrorKind::Unpublishable {
        manifest_key: manifest_key.to_owned(),
        what,
    })
}
