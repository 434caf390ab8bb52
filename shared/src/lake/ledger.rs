//! The publisher's record of what the lake holds of each upload key:
//! `lake/_published/<key_id>.json`, beside the tables.
//!
//! The record is what lets a repeated publish change nothing: a key whose record names the
//! conversion (source id and manifest digest) that is current in the landing tier is skipped
//! without touching a table. It is written `pending` before a batch touches any table and
//! `published` after every table committed, so a batch cut short leaves `pending` records,
//! and the next publish replaces those uploads' rows whatever the tables hold (it never trusts
//! a pending record to say what is there). The tables' commits themselves are what keep rows
//! from being counted twice: each removes whatever rows of the batch's uploads it finds before
//! adding theirs, and concurrent publishers conflict on the commit (see `delta.rs`).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::store::{publish_batch_key, published_key, ObjectStore, PUBLISH_BATCHES_PREFIX};

/// What a batch may put in, or leave in, the lake, per key id: written once before the batch
/// touches any table, removed after every key's record says what it published. A batch cut
/// short leaves it, and the next publish replaces the rows of every key it names.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct BatchRecord {
    /// Key id, and the conversions whose rows the lake may hold for it.
    pub keys: Vec<(String, Vec<Held>)>,
}

/// Writes the record of the batch `name`; its key.
pub(super) fn write_batch(
    store: &dyn ObjectStore,
    name: &str,
    record: &BatchRecord,
) -> Result<String> {
    let key = publish_batch_key(name);
    let json = serde_json::to_vec(record).expect("a batch record serializes");
    store.put(&key, &json)?;
    Ok(key)
}

/// The records of batches that have not completed (cut short, or still running), by key.
/// An unreadable one names nothing.
pub(super) fn read_batches(store: &dyn ObjectStore) -> Result<Vec<(String, BatchRecord)>> {
    let mut out = Vec::new();
    for key in store.list(PUBLISH_BATCHES_PREFIX)? {
        if let Some(json) = store.get(&key)? {
            let record = serde_json::from_slice(&json).unwrap_or_else(|e| {
                tracing::warn!(key, error = %e, "unreadable batch record");
                BatchRecord::default()
            });
            out.push((key, record));
        }
    }
    Ok(out)
}

/// One conversion as the lake holds it: its identity and the partitions its rows are in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Held {
    /// The upload's source id.
    pub source_id: String,
    /// Hex SHA-256 of the manifest the rows came from: a rehydrated conversion keeps its
    /// source id and gets a new manifest.
    pub manifest_sha256: String,
    /// Per table, the `dt` partitions holding its rows.
    pub partitions: BTreeMap<String, BTreeSet<String>>,
}

/// The record of one upload key.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Record {
    /// The upload key.
    pub key: String,
    /// What the last completed publish put in the lake, if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published: Option<Held>,
    /// Conversions a batch that has not completed may have put in, or left in, the lake: the
    /// next publish removes their rows wherever it finds them. (Batches now keep these in
    /// their own record, [`BatchRecord`]; records of earlier writers may still hold some.)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<Held>,
}

impl Record {
    /// Every conversion whose rows the lake may hold for this key.
    pub fn possibly_held(&self) -> impl Iterator<Item = &Held> {
        self.published.iter().chain(&self.pending)
    }
}

/// The record of `key_id`; an unreadable one counts as pending for nothing known, which makes
/// the next publish of the key replace its rows.
pub(super) fn read(store: &dyn ObjectStore, key_id: &str) -> Result<Option<Record>> {
    let Some(json) = store.get(&published_key(key_id))? else {
        return Ok(None);
    };
    Ok(Some(serde_json::from_slice(&json).unwrap_or_else(|e| {
        tracing::warn!(key_id, error = %e, "unreadable lake record; the key is published again");
        Record::default()
    })))
}

/// Writes the record of `key_id`.
pub(super) fn write(store: &dyn ObjectStore, key_id: &str, record: &Record) -> Result<()> {
    let json = serde_json::to_vec_pretty(record).expect("a record serializes");
    store.put(&published_key(key_id), &json)
}

/// Removes the record of `key_id`: the lake holds nothing of the key.
pub(super) fn remove(store: &dyn ObjectStore, key_id: &str) -> Result<()> {
    store.delete(&published_key(key_id))
}
