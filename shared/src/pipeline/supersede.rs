//! Re-uploads under the same key. A new upload at a key replaces the old one, so the old
//! upload's outputs must go, or queries would count both. Each key has a pointer to its current
//! conversion (`converted/by-key/<key_id>.json`); the job that converts the content the key
//! holds now removes the conversion the pointer names, then moves the pointer.
//!
//! Only outputs of content the key no longer holds are ever removed: before touching anything
//! the job checks (HEAD) that its own content is still the key's. A job that finds its content
//! replaced removes its own outputs instead, since the newer content has its own event. Deletes
//! are idempotent and the pointer moves last, so an interrupted clean-up finishes on redelivery.
//!
//! A conversion that never finished has no manifest to list its outputs, so each job records
//! that it started (and, before writing them, the outputs outside its own folder) in a pending
//! record under the key; the job that settles the key's content removes what other records name.
//! A job of replaced content that writes more after that, then fails for good, leaves a record
//! no settling job sees again: the scheduled sweep removes such records once they are older
//! than any job runs ([`sweep_pending`]).

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::store::{
    conversion_prefix, current_conversion_key, manifest_key, pending_conversion_key,
    pending_conversion_of, pending_conversions_prefix, pointer_key, source_id, ObjectStore,
};
use crate::writers::manifest::Manifest;
use crate::writers::outputs::PendingConversion;

/// The pointer's content.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct CurrentConversion {
    key: String,
    etag: String,
    source_id: String,
    manifest_key: String,
}

/// What [`settle`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Settled {
    /// This conversion is the key's current one; `replaced` names the conversion it removed.
    Current {
        /// Source id of the removed conversion.
        replaced: Option<String>,
    },
    /// The key now holds other content: this conversion was removed.
    Outdated,
}

/// Makes the conversion of (`key`, `etag`) the key's current one, or removes it if the key
/// holds other content by now. Call after the conversion is published, or with `converted`
/// false after the content was quarantined (then only the previous conversion goes). Either
/// way the key's pending records are cleared after (see [`clear_pending`]).
pub(crate) fn settle(
    uploads: &dyn ObjectStore,
    outputs: &dyn ObjectStore,
    key: &str,
    etag: &str,
    converted: bool,
) -> Result<Settled> {
    let settled = settle_pointer(uploads, outputs, key, etag, converted)?;
    let current = settled != Settled::Outdated;
    clear_pending(outputs, key, &source_id(key, etag), current)?;
    Ok(settled)
}

/// [`settle`] up to the pointer: which conversion is the key's current one.
fn settle_pointer(
    uploads: &dyn ObjectStore,
    outputs: &dyn ObjectStore,
    key: &str,
    etag: &str,
    converted: bool,
) -> Result<Settled> {
    let mine = source_id(key, etag);
    match uploads.head(key)? {
        Some(info) if info.etag != etag => {
            remove_conversion(outputs, &mine)?;
            return Ok(Settled::Outdated);
        }
        // Deleted since: the raw upload is gone, but its outputs are all that is left of it.
        None => return Ok(Settled::Current { replaced: None }),
        Some(_) => {}
    }
    let pointer_key = current_conversion_key(key);
    let previous: Option<CurrentConversion> = match outputs.get(&pointer_key)? {
        // An unreadable pointer is rewritten; it only ever names outputs, never holds data.
        Some(json) => serde_json::from_slice(&json).ok(),
        None => None,
    };
    let replaced = match previous {
        Some(p) if p.source_id == mine => return Ok(Settled::Current { replaced: None }),
        Some(p) => {
            remove_conversion(outputs, &p.source_id)?;
            Some(p.source_id)
        }
        None => None,
    };
    if !converted {
        outputs.delete(&pointer_key)?;
        return Ok(Settled::Current { replaced });
    }
    let pointer = CurrentConversion {
        key: key.into(),
        etag: etag.into(),
        source_id: mine.clone(),
        manifest_key: manifest_key(&mine),
    };
    let json = serde_json::to_vec_pretty(&pointer).expect("pointer serializes");
    outputs.put(&pointer_key, &json)?;
    Ok(Settled::Current { replaced })
}

/// Clears the pending records of the upload at `key` (see [`PendingConversion`]): `mine`'s own,
/// whose conversion is published or deleted by now, and, when `current` (the key holds
/// `mine`'s content), every other one with what its conversion left behind. Those are
/// conversions of content the key no longer holds that were cut short, or that are still
/// running: such a job then finds its content outdated and removes what it wrote by its
/// manifest. Each record goes last, so an interrupted clean-up finishes on redelivery.
fn clear_pending(outputs: &dyn ObjectStore, key: &str, mine: &str, current: bool) -> Result<()> {
    let prefix = pending_conversions_prefix(key);
    for record_key in outputs.list(&prefix)? {
        let Some((_, source_id)) = pending_conversion_of(&record_key) else {
            continue;
        };
        if source_id == mine {
            outputs.delete(&record_key)?;
        } else if current {
            remove_pending(outputs, source_id, &record_key)?;
        }
    }
    Ok(())
}

/// Removes the outputs of the conversion `source_id`, published or not: those its pending
/// record lists, those its manifest lists, and its folder; then the record.
fn remove_pending(outputs: &dyn ObjectStore, source_id: &str, record_key: &str) -> Result<()> {
    let record = outputs
        .get(record_key)?
        .and_then(|json| serde_json::from_slice::<PendingConversion>(&json).ok());
    remove_recorded(outputs, source_id, record.as_ref(), record_key)
}

/// [`remove_pending`] with the record already read (`None`: gone or unreadable).
fn remove_recorded(
    outputs: &dyn ObjectStore,
    source_id: &str,
    record: Option<&PendingConversion>,
    record_key: &str,
) -> Result<()> {
    for output in record.iter().flat_map(|r| &r.outputs) {
        outputs.delete(output)?;
    }
    remove_conversion(outputs, source_id)?;
    for left in outputs.list(&conversion_prefix(source_id))? {
        outputs.delete(&left)?;
    }
    outputs.delete(record_key)
}

/// Removes every output a conversion's manifest lists, then the manifest. A conversion without
/// a manifest (never finished, or already removed) has nothing listed to remove.
fn remove_conversion(outputs: &dyn ObjectStore, source_id: &str) -> Result<()> {
    let manifest_key = manifest_key(source_id);
    let Some(json) = outputs.get(&manifest_key)? else {
        return Ok(());
    };
    let Ok(manifest) = serde_json::from_slice::<Manifest>(&json) else {
        return Ok(()); // not ours to interpret; leave it for an operator
    };
    for output in &manifest.outputs {
        outputs.delete(&output.key)?;
    }
    outputs.delete(&manifest_key)
}

/// What [`sweep_pending`] did with one record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Swept {
    /// The key holds other content now: what the conversion left, and its record, are gone.
    Removed,
    /// Kept: younger than the grace period, of the key's current content (its job's retries,
    /// or a redrive of its message, settle it), or of an upload that is gone (its outputs are
    /// all that is left of it) or unknown.
    Kept,
}

/// Sweeps the pending record at `record_key`: once it is at least `grace_ns` old at `now_ns`
/// (longer than any job runs, so its job has ended), a record of content the key no longer
/// holds is removed with what its conversion left, as a settling job would have done.
pub(crate) fn sweep_pending(
    uploads: &dyn ObjectStore,
    outputs: &dyn ObjectStore,
    record_key: &str,
    now_ns: i64,
    grace_ns: i64,
) -> Result<Swept> {
    // A record is a few keys long; its age and content come in one request.
    let Some((json, info)) = outputs.get_object(record_key, u64::MAX)? else {
        return Ok(Swept::Kept); // cleared meanwhile
    };
    if info
        .last_modified_ns
        .is_none_or(|t| now_ns.saturating_sub(t) < grace_ns)
    {
        return Ok(Swept::Kept);
    }
    let Ok(record) = serde_json::from_slice::<PendingConversion>(&json) else {
        tracing::warn!(record_key, "unreadable pending record; kept");
        return Ok(Swept::Kept);
    };
    let source_key = match record.source_key.as_str() {
        // Records of earlier writers do not name their upload: the key's pointer does.
        "" => match pending_conversion_of(record_key)
            .map(|(key_id, _)| outputs.get(&pointer_key(key_id)))
            .transpose()?
        {
            Some(Some(json)) => match serde_json::from_slice::<CurrentConversion>(&json) {
                Ok(pointer) => pointer.key,
                Err(_) => return Ok(Swept::Kept),
            },
            _ => return Ok(Swept::Kept),
        },
        key => key.to_owned(),
    };
    // A record is only ever acted on under its own key's folder.
    if pending_conversion_key(&source_key, &record.source_id) != record_key {
        return Ok(Swept::Kept);
    }
    match uploads.head(&source_key)? {
        Some(upload) if source_id(&source_key, &upload.etag) != record.source_id => {
            remove_recorded(outputs, &record.source_id, Some(&record), record_key)?;
            Ok(Swept::Removed)
        }
        _ => Ok(Swept::Kept),
    }
}

/// Whether `key` is a pending record (`converted/by-key/<key_id>/pending/<source_id>.json`).
pub(crate) fn is_pending_record(key: &str) -> bool {
    pending_conversion_of(key).is_some()
}
