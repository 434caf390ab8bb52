//! The object job both runners share (the convert Lambda on a bucket, `proflake process` on a
//! local directory): fetch one upload, gather its metadata, convert it, store the outputs with
//! the manifest last, or quarantine it with an error report next to it.
//!
//! Only transient failures (the store failing) come back as `Err`, so the caller retries them;
//! everything about the input itself ends in [`Outcome::Quarantined`], written down once and
//! never retried.

use std::io::Read;

use serde::{Deserialize, Serialize};

use super::convert::{convert_into, ConvertOptions, UploadInput};
use super::manifest::Manifest;
use super::outputs::{PendingConversion, StoreOutputs};
use super::supersede::{settle, Settled};
use super::symbols::{current_debug_meta, StoreSymbols};
use crate::error::{error_chain, Error, ErrorKind, Result};
use crate::formats::InputFormat;
use crate::limits::Limits;
use crate::metadata::UploadMetadata;
use crate::store::{
    error_report_key, manifest_key, profile_key_of_sidecar, sidecar_key, source_id, ObjectInfo,
    ObjectStore, ERROR_REPORT_SUFFIX,
};

/// Conversions of one upload in one job: the first, and reruns when debug files for its images
/// arrived meanwhile.
const MAX_SYMBOL_ROUNDS: usize = 3;

/// Version of the error report layout.
pub const ERROR_REPORT_VERSION: u32 = 1;

/// How to process uploads.
#[derive(Clone, Debug, Default)]
pub struct ProcessOptions {
    /// Decode as this format instead of detecting it.
    pub format: Option<InputFormat>,
    /// Metadata that overrides the sidecar's and the object's own (command-line flags).
    pub metadata: UploadMetadata,
    /// What an upload may make the job do; one larger than `limits.max_object_bytes` is
    /// quarantined unread.
    pub limits: Limits,
    /// Convert again even when the upload's manifest already exists.
    pub reconvert: bool,
    /// Perfetto uploads larger than this are converted a window at a time
    /// ([`STREAM_ABOVE_BYTES`](crate::pipeline::STREAM_ABOVE_BYTES) when `None`).
    pub stream_above_bytes: Option<u64>,
}

/// What processing one key did.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Converted and stored; the manifest was written last.
    Converted(ConvertedUpload),
    /// The manifest of this exact upload (key and ETag) already exists: nothing was written.
    AlreadyConverted {
        /// The upload's key.
        key: String,
        /// Its manifest.
        manifest_key: String,
    },
    /// The upload cannot be converted; an error report was written next to it.
    Quarantined(Quarantine),
    /// Nothing to do for this key.
    Skipped {
        /// The key.
        key: String,
        /// Why.
        why: SkipReason,
    },
}

/// A stored conversion, summed up for logs and metrics.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvertedUpload {
    /// The upload's key.
    pub key: String,
    /// Its identity ([`source_id`]).
    pub source_id: String,
    /// Its manifest.
    pub manifest_key: String,
    /// Detected format.
    pub format: String,
    /// Bytes read.
    pub bytes: u64,
    /// Samples written to Sample v2.
    pub samples: u64,
    /// Objects written, the manifest included.
    pub objects: u64,
    /// Frames a debug file named.
    pub frames_symbolized: u64,
    /// The earlier conversion of the same key (other content) this one replaced and removed.
    pub replaced: Option<String>,
    /// How many pieces the samples were written in: one, or one per few windows for a long
    /// Perfetto trace converted a window at a time.
    pub pieces: u64,
}

/// An upload that cannot be converted.
#[derive(Clone, Debug, PartialEq)]
pub struct Quarantine {
    /// The upload's key.
    pub key: String,
    /// Where its error report is.
    pub report_key: String,
    /// [`ErrorKind::reason`](crate::ErrorKind::reason) of the failure.
    pub reason: &'static str,
    /// The error, readable.
    pub message: String,
    /// Bytes of the upload (0 when it was refused unread).
    pub bytes: u64,
}

/// Why a key needs no work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SkipReason {
    /// The object no longer exists (deleted or overwritten before it was read).
    Missing,
    /// The key is one of proflake's own error reports.
    ErrorReport,
    /// The key is a metadata sidecar whose upload has not arrived (it is converted with the
    /// sidecar when it does).
    SidecarWithoutUpload,
    /// The key was overwritten while this content was converted; the newer content's own event
    /// converts it, and this conversion was removed.
    Overwritten,
}

impl SkipReason {
    /// A short, stable name for logs and metrics.
    pub fn name(self) -> &'static str {
        match self {
            SkipReason::Missing => "missing",
            SkipReason::ErrorReport => "error_report",
            SkipReason::SidecarWithoutUpload => "sidecar_without_upload",
            SkipReason::Overwritten => "overwritten",
        }
    }
}

/// The error report written next to a quarantined upload (`<key>.error.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorReport {
    /// Layout version ([`ERROR_REPORT_VERSION`]).
    pub report_version: u32,
    /// The converter and its version.
    pub converter: String,
    /// The upload's key.
    pub key: String,
    /// The upload's ETag, so a report can be matched to the content it is about.
    pub etag: String,
    /// Bytes of the upload (0 when refused unread).
    pub bytes: u64,
    /// [`ErrorKind::reason`](crate::ErrorKind::reason).
    pub reason: String,
    /// The error and its causes, readable.
    pub error: String,
}

/// Processes the object at `key` in `uploads`, writing outputs to `outputs` (the same store
/// for a local directory; another bucket in the cloud). Safe to repeat: the same upload always
/// gives the same keys and bytes.
///
/// A metadata sidecar key processes its upload again with the sidecar's metadata (sidecars may
/// arrive after the upload they describe).
pub fn process_upload(
    uploads: &dyn ObjectStore,
    outputs: &dyn ObjectStore,
    key: &str,
    options: &ProcessOptions,
) -> Result<Outcome> {
    if key.ends_with(ERROR_REPORT_SUFFIX) {
        return Ok(skipped(key, SkipReason::ErrorReport));
    }
    if let Some(profile_key) = profile_key_of_sidecar(key) {
        let options = ProcessOptions {
            reconvert: true,
            ..options.clone()
        };
        return Ok(
            match process_profile(uploads, outputs, profile_key, &options)? {
                Outcome::Skipped {
                    why: SkipReason::Missing,
                    ..
                } => skipped(key, SkipReason::SidecarWithoutUpload),
                outcome => outcome,
            },
        );
    }
    process_profile(uploads, outputs, key, options)
}

fn skipped(key: &str, why: SkipReason) -> Outcome {
    Outcome::Skipped {
        key: key.into(),
        why,
    }
}

fn process_profile(
    uploads: &dyn ObjectStore,
    outputs: &dyn ObjectStore,
    key: &str,
    options: &ProcessOptions,
) -> Result<Outcome> {
    let max_bytes = options.limits.max_object_bytes;
    let (reader, info) = match uploads.get_reader(key, max_bytes) {
        Ok(Some(object)) => object,
        Ok(None) => return Ok(skipped(key, SkipReason::Missing)),
        Err(e) if e.kind().is_transient() => return Err(e),
        Err(e) => {
            let e = e.name_limit("max_object_bytes").for_input(key);
            return quarantine(uploads, outputs, key, None, e);
        }
    };
    let mine = source_id(key, &info.etag);
    let manifest = manifest_key(&mine);
    if !options.reconvert && outputs.exists(&manifest)? {
        // Settled again: a clean-up cut short by a failure finishes on redelivery, the removal
        // of an earlier content's error report included.
        return Ok(match settle(uploads, outputs, key, &info.etag, true)? {
            Settled::Current { .. } => {
                remove_outdated_report(uploads, key, &info.etag)?;
                Outcome::AlreadyConverted {
                    key: key.into(),
                    manifest_key: manifest,
                }
            }
            Settled::Outdated => skipped(key, SkipReason::Overwritten),
        });
    }
    let metadata = match upload_metadata(uploads, key, &info, options) {
        Ok(metadata) => metadata,
        Err(e) if e.kind().is_transient() => return Err(e),
        Err(e) => return quarantine(uploads, outputs, key, Some(&info), e),
    };
    let mut objects = 0;
    let convert_options = ConvertOptions {
        format: options.format,
        metadata,
        received_at_ns: info.last_modified_ns,
        limits: options.limits.clone(),
        stream_above_bytes: options.stream_above_bytes,
    };
    // What a reconversion must take back: outputs of the previous run it does not write again.
    let previous_outputs = previous_outputs(outputs, &manifest)?;
    let symbols = StoreSymbols::new(outputs);
    // Recorded before any output is written: if this job is cut short and the key's content
    // replaced, whoever settles the new content removes what this one wrote.
    PendingConversion::start(outputs, key, &mine)?;
    let mut converted = None;
    let mut input = Some(reader);
    // A debug file stored while the conversion ran is seen by the check after publishing; the
    // conversion then runs again with it (at most a few times: each run sees newer symbols).
    for _ in 0..MAX_SYMBOL_ROUNDS {
        // The upload is read as a stream, so a later round reads it again; if it changed
        // meanwhile, the settling below finds it outdated.
        let reader = match input.take() {
            Some(reader) => reader,
            None => match uploads.get_reader(key, max_bytes)? {
                Some((reader, again)) if again.etag == info.etag => reader,
                _ => break,
            },
        };
        // Objects go to the store as they are produced, the manifest last.
        let mut written = StoreOutputs::pending(outputs, key, &mine);
        let report = match convert_into(
            key,
            &info.etag,
            UploadInput::Stream {
                reader,
                len: info.size,
                reopen: Some(Box::new(|| reread(uploads, key, max_bytes, &info.etag))),
            },
            &convert_options,
            &symbols,
            &mut written,
        ) {
            Ok(report) => report,
            Err(e) if e.kind().is_transient() => return Err(e),
            Err(e) => {
                // A conversion that failed half-way takes back what it wrote: no manifest lists it.
                written.discard()?;
                return quarantine(uploads, outputs, key, Some(&info), e);
            }
        };
        objects = written.written() as u64;
        let stale = symbols_changed(outputs, &report.manifest)?;
        converted = Some(report);
        if !stale {
            break;
        }
    }
    let converted = converted.expect("at least one round ran");
    let now: std::collections::BTreeSet<&str> = converted
        .manifest
        .outputs
        .iter()
        .map(|o| o.key.as_str())
        .collect();
    for old in previous_outputs
        .iter()
        .filter(|k| !now.contains(k.as_str()))
    {
        outputs.delete(old)?;
    }
    let replaced = match settle(uploads, outputs, key, &info.etag, true)? {
        Settled::Current { replaced } => replaced,
        Settled::Outdated => return Ok(skipped(key, SkipReason::Overwritten)),
    };
    // A report about earlier content under this key no longer applies. Checked first: in a
    // versioned bucket every delete, even of nothing, leaves a delete marker.
    let report_key = error_report_key(key);
    if uploads.exists(&report_key)? {
        uploads.delete(&report_key)?;
    }
    let m = &converted.manifest;
    Ok(Outcome::Converted(ConvertedUpload {
        key: key.into(),
        source_id: m.source.source_id.clone(),
        manifest_key: converted.manifest_key.clone(),
        format: m.source.format.clone(),
        bytes: m.source.bytes,
        samples: m.profile.samples_written,
        objects,
        frames_symbolized: m.symbols.iter().map(|i| i.symbolicated).sum(),
        replaced,
        pieces: converted.pieces,
    }))
}

/// Writes the error report of the object at `key` (an upload, or a debug file) next to it;
/// returns where it went, the reason and the readable error.
pub(crate) fn write_error_report(
    store: &dyn ObjectStore,
    key: &str,
    etag: &str,
    bytes: u64,
    error: Error,
) -> Result<(String, &'static str, String)> {
    let error = error.for_input(key);
    let reason = error.kind().reason();
    let message = error_chain(&error);
    let report = ErrorReport {
        report_version: ERROR_REPORT_VERSION,
        converter: format!("proflake {}", env!("CARGO_PKG_VERSION")),
        key: key.into(),
        etag: etag.into(),
        bytes,
        reason: reason.into(),
        error: message.clone(),
    };
    let report_key = error_report_key(key);
    let json = serde_json::to_vec_pretty(&report).expect("error report serializes");
    store.put(&report_key, &json)?;
    Ok((report_key, reason, message))
}

/// Removes the key's error report if it is about other content than `etag` (an earlier upload
/// the converted one replaced). A report about this very content stays: it says why the content
/// was last refused (its sidecar, say), which a conversion that already existed does not undo.
fn remove_outdated_report(uploads: &dyn ObjectStore, key: &str, etag: &str) -> Result<()> {
    let report_key = error_report_key(key);
    let Some(json) = uploads.get(&report_key)? else {
        return Ok(());
    };
    let about_this = serde_json::from_slice::<ErrorReport>(&json).is_ok_and(|r| r.etag == etag);
    if !about_this {
        uploads.delete(&report_key)?;
    }
    Ok(())
}

/// The outputs the conversion at `manifest_key` lists now (none without a manifest).
fn previous_outputs(outputs: &dyn ObjectStore, manifest_key: &str) -> Result<Vec<String>> {
    let Some(json) = outputs.get(manifest_key)? else {
        return Ok(Vec::new());
    };
    Ok(serde_json::from_slice::<Manifest>(&json)
        .map(|m| m.outputs.into_iter().map(|o| o.key).collect())
        .unwrap_or_default())
}

/// Whether an image of a published conversion has symbols now other than those it used.
fn symbols_changed(outputs: &dyn ObjectStore, manifest: &Manifest) -> Result<bool> {
    for image in &manifest.symbols {
        let now = current_debug_meta(outputs, &image.build_id)?.map(|m| m.debug_file_sha256);
        if now != image.debug_file_sha256 {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The upload's metadata: its sidecar, overridden by the object's user metadata, overridden by
/// the caller's. Errors name the source they come from.
fn upload_metadata(
    uploads: &dyn ObjectStore,
    key: &str,
    info: &ObjectInfo,
    options: &ProcessOptions,
) -> Result<UploadMetadata> {
    let sidecar_key = sidecar_key(key);
    // The sidecar comes from outside like the upload: held to the same size.
    let sidecar = uploads
        .get_object(&sidecar_key, options.limits.max_object_bytes)
        .map_err(|e| e.name_limit("max_object_bytes").for_input(&sidecar_key))?;
    let sidecar = match sidecar {
        Some((json, _)) => options
            .limits
            .check_json_depth(&json)
            .and_then(|()| UploadMetadata::from_json(&json))
            .map_err(|e| e.for_input(&sidecar_key))?,
        None => UploadMetadata::default(),
    };
    let object = UploadMetadata::from_object_metadata(
        info.user_metadata
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str())),
    )
    .map_err(|e| e.for_input(&format!("{key} (object metadata)")))?;
    let metadata = sidecar.merge(object).merge(options.metadata.clone());
    metadata.validate().map_err(|e| e.for_input(key))?;
    Ok(metadata)
}

/// Writes the error report next to the upload (`info` is `None` when it was refused unread),
/// and removes the conversion of content the key held before, which the bad content replaced.
/// Only a failure to write is an error (transient), so the message is retried rather than the
/// upload lost.
fn quarantine(
    uploads: &dyn ObjectStore,
    outputs: &dyn ObjectStore,
    key: &str,
    info: Option<&ObjectInfo>,
    error: Error,
) -> Result<Outcome> {
    let (etag, bytes) = info.map_or(("", 0), |i| (i.etag.as_str(), i.size));
    let (report_key, reason, message) = write_error_report(uploads, key, etag, bytes, error)?;
    if info.is_some() {
        settle(uploads, outputs, key, etag, false)?;
    }
    Ok(Outcome::Quarantined(Quarantine {
        key: key.into(),
        report_key,
        reason,
        message,
        bytes,
    }))
}

#[cfg(test)]
#[path = "process_tests.rs"]
mod tests;

/// The upload at `key` read again from its first byte, for a second pass: a storage error
/// (transient) when it is gone or its content is no longer the one with `etag`, as the job
/// that converts the new content settles the key.
fn reread<'s>(
    uploads: &'s dyn ObjectStore,
    key: &str,
    max_bytes: u64,
    etag: &str,
) -> Result<Box<dyn Read + Send + 's>> {
    match uploads.get_reader(key, max_bytes)? {
        Some((reader, again)) if again.etag == etag => Ok(reader),
        _ => Err(
            Error::new(ErrorKind::Storage { key: key.into() }).with_source(std::io::Error::other(
                "the upload changed between the two passes of its conversion",
            )),
        ),
    }
}
