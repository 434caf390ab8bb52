//! The object job both runners share (the convert Lambda on a bucket, `proflake process` on a
//! local directory): fetch one upload, gather its metadata, convert it, store the outputs with
//! the manifest last, or quarantine it with an error report next to it.
//!
//! Only transient failures (the store failing) come back as `Err`, so the caller retries them;
//! everything about the input itself ends in [`Outcome::Quarantined`], written down once and
//! never retried.

use std::io::Read;

use std::collections::BTreeSet;

use super::convert::{convert_into, ConvertOptions, ConvertReport};
use super::decode::UploadInput;
use super::error_report::{write_error_report, ErrorReport};
use super::outcome::{skipped, ConvertedUpload, Outcome, Quarantine, SkipReason};
use super::supersede::{settle, Settled};
use crate::error::{Error, ErrorKind, Result};
use crate::formats::InputFormat;
use crate::limits::Limits;
use crate::metadata::UploadMetadata;
use crate::store::{
    error_report_key, manifest_key, profile_key_of_sidecar, sidecar_key, source_id, ObjectInfo,
    ObjectStore, ERROR_REPORT_SUFFIX, SIDECAR_ETAG_METADATA,
};
use crate::writers::manifest::Manifest;
use crate::writers::outputs::{PendingConversion, StoreOutputs};
use crate::{symbols::current_debug_meta, symbols::StoreSymbols};

/// Conversions of one upload in one job: the first, and reruns when debug files for its images
/// arrived meanwhile.
const MAX_SYMBOL_ROUNDS: usize = 3;

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
    /// ([`ProcessOptions::STREAM_ABOVE_BYTES`] when `None`).
    pub stream_above_bytes: Option<u64>,
    /// Refuse an upload on a clock of its own that neither it nor its metadata places on the
    /// wall clock, instead of placing it at its arrival (`ConvertOptions::require_start_time`).
    pub require_start_time: bool,
    /// Threads a conversion may use (`ConvertOptions::threads`; `None`: as many as the machine
    /// has).
    pub threads: Option<usize>,
}

impl ProcessOptions {
    /// Perfetto uploads larger than this are converted a window at a time, with a second pass,
    /// when they can be read again (the default of `stream_above_bytes`).
    pub const STREAM_ABOVE_BYTES: u64 = super::convert::STREAM_ABOVE_BYTES;

    /// `stream_above_bytes` as the functions and the command line read it from
    /// `PROFLAKE_STREAM_ABOVE_BYTES` (`get` gives a variable's value); `None` when it is unset.
    pub fn stream_above_bytes_from(
        get: impl Fn(&str) -> Option<String>,
    ) -> std::result::Result<Option<u64>, crate::limits::LimitsError> {
        super::convert::stream_above_bytes_from(get)
    }
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
        if sidecar_already_read(uploads, outputs, key, profile_key)? {
            return Ok(skipped(key, SkipReason::SidecarAlreadyRead));
        }
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

fn process_profile(
    uploads: &dyn ObjectStore,
    outputs: &dyn ObjectStore,
    key: &str,
    options: &ProcessOptions,
) -> Result<Outcome> {
    let (reader, info) = match uploads.get_reader(key, options.limits.max_object_bytes) {
        Ok(Some(object)) => object,
        Ok(None) => return Ok(skipped(key, SkipReason::Missing)),
        Err(e) if e.kind().is_transient() => return Err(e),
        Err(e) => {
            let e = e.name_limit("max_object_bytes").for_input(key);
            return quarantine(uploads, outputs, key, None, e);
        }
    };
    let job = Job {
        uploads,
        outputs,
        key,
        info: &info,
        source_id: source_id(key, &info.etag),
    };
    let manifest = manifest_key(&job.source_id);
    if !options.reconvert && outputs.exists(&manifest)? {
        return job.already_converted(manifest);
    }
    let (metadata, metadata_etag) = match upload_metadata(uploads, key, &info, options) {
        Ok(read) => read,
        Err(e) if e.kind().is_transient() => return Err(e),
        Err(e) => return quarantine(uploads, outputs, key, Some(&info), e),
    };
    let convert_options = ConvertOptions {
        format: options.format,
        metadata,
        received_at_ns: info.last_modified_ns,
        limits: options.limits.clone(),
        stream_above_bytes: options.stream_above_bytes,
        metadata_etag,
        require_start_time: options.require_start_time,
        threads: options.threads,
    };
    // What a reconversion must delete: outputs of the previous run it does not write again.
    let previous_outputs = previous_outputs(outputs, &manifest)?;
    // Recorded before any output is written: if this job is cut short and the key's content
    // replaced, whoever settles the new content removes what this one wrote.
    PendingConversion::start(outputs, key, &job.source_id)?;
    let (converted, objects) = match job.convert(reader, &convert_options)? {
        Ok(converted) => converted,
        Err(quarantined) => return Ok(quarantined),
    };
    job.delete_stale_outputs(&previous_outputs, &converted.manifest)?;
    job.settle_converted(&converted, objects)
}

/// One upload being processed.
struct Job<'a> {
    uploads: &'a dyn ObjectStore,
    outputs: &'a dyn ObjectStore,
    key: &'a str,
    info: &'a ObjectInfo,
    source_id: String,
}

impl Job<'_> {
    /// The upload's manifest, `manifest`, exists: settled again, so a clean-up cut short by a
    /// failure finishes on redelivery, the removal of an earlier content's error report
    /// included.
    fn already_converted(&self, manifest: String) -> Result<Outcome> {
        let (uploads, key, etag) = (self.uploads, self.key, &self.info.etag);
        Ok(match settle(uploads, self.outputs, key, etag, true)? {
            Settled::Current { .. } => {
                remove_outdated_report(uploads, key, etag)?;
                Outcome::AlreadyConverted {
                    key: key.into(),
                    manifest_key: manifest,
                }
            }
            Settled::Outdated => skipped(key, SkipReason::Overwritten),
        })
    }

    /// Converts the upload `reader` reads, storing each output as it is produced and the
    /// manifest last; gives the conversion and how many objects it wrote, or the outcome of
    /// quarantining the upload.
    ///
    /// A debug file stored while the conversion ran is seen by the check after publishing; the
    /// conversion then runs again with it (at most a few times: each run sees newer symbols).
    fn convert(
        &self,
        reader: Box<dyn Read + Send + '_>,
        options: &ConvertOptions,
    ) -> Result<std::result::Result<(ConvertReport, u64), Outcome>> {
        let (uploads, key, info) = (self.uploads, self.key, self.info);
        let max_bytes = options.limits.max_object_bytes;
        let symbols = StoreSymbols::new(self.outputs)
            .with_max_binary_bytes(options.limits.max_debug_file_bytes);
        let mut converted = None;
        let mut input = Some(reader);
        for _ in 0..MAX_SYMBOL_ROUNDS {
            // The upload is read as a stream, so a later round reads it again; if it changed
            // meanwhile, the settling after finds it outdated.
            let reader = match input.take() {
                Some(reader) => reader,
                None => match uploads.get_reader(key, max_bytes)? {
                    Some((reader, again)) if again.etag == info.etag => reader,
                    _ => break,
                },
            };
            let upload = UploadInput::Stream {
                reader,
                len: info.size,
                reopen: Some(Box::new(|| reread(uploads, key, max_bytes, &info.etag))),
            };
            let mut written = StoreOutputs::pending(self.outputs, key, &self.source_id);
            let report =
                match convert_into(key, &info.etag, upload, options, &symbols, &mut written) {
                    Ok(report) => report,
                    Err(e) if e.kind().is_transient() => return Err(e),
                    Err(e) => {
                        // A conversion that failed half-way deletes what it wrote: no manifest
                        // lists it.
                        written.discard()?;
                        let quarantined = quarantine(uploads, self.outputs, key, Some(info), e)?;
                        return Ok(Err(quarantined));
                    }
                };
            let stale = symbols_changed(self.outputs, &report.manifest)?;
            converted = Some((report, written.written() as u64));
            if !stale {
                break;
            }
        }
        Ok(Ok(converted.expect("at least one round ran")))
    }

    /// Removes the outputs of the previous conversion that `manifest` does not list.
    fn delete_stale_outputs(&self, previous_outputs: &[String], manifest: &Manifest) -> Result<()> {
        let now: BTreeSet<&str> = manifest.outputs.iter().map(|o| o.key.as_str()).collect();
        for old in previous_outputs
            .iter()
            .filter(|k| !now.contains(k.as_str()))
        {
            self.outputs.delete(old)?;
        }
        Ok(())
    }

    /// Settles the key on the stored conversion and sums it up.
    fn settle_converted(&self, converted: &ConvertReport, objects: u64) -> Result<Outcome> {
        let (uploads, key) = (self.uploads, self.key);
        let replaced = match settle(uploads, self.outputs, key, &self.info.etag, true)? {
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

/// Whether the sidecar at `sidecar_key` is one every conversion of its upload reads, or the
/// current one read: then its notification has nothing to add. A sidecar is written before its
/// upload where it can be (the HTTP receiver does), so that the upload's own conversion reads
/// it; the upload then names the sidecar's ETag in its object metadata
/// ([`SIDECAR_ETAG_METADATA`]), which settles it even while that conversion runs.
fn sidecar_already_read(
    uploads: &dyn ObjectStore,
    outputs: &dyn ObjectStore,
    sidecar_key: &str,
    profile_key: &str,
) -> Result<bool> {
    let (Some(sidecar), Some(upload)) = (uploads.head(sidecar_key)?, uploads.head(profile_key)?)
    else {
        return Ok(false);
    };
    let sidecar_etag = sidecar.etag.trim_matches('"');
    let written_before = upload
        .user_metadata
        .iter()
        .any(|(name, value)| name == SIDECAR_ETAG_METADATA && value == sidecar_etag);
    if written_before {
        return Ok(true);
    }
    let manifest_key = manifest_key(&source_id(profile_key, &upload.etag));
    let Some(manifest) = outputs.get(&manifest_key)? else {
        return Ok(false);
    };
    // A manifest that does not read is no proof: convert again.
    let read = serde_json::from_slice::<Manifest>(&manifest)
        .ok()
        .and_then(|m| m.source.metadata_etag);
    Ok(read.as_deref() == Some(sidecar_etag))
}

/// The upload's metadata: its sidecar, overridden by the object's user metadata, overridden by
/// the caller's, and the ETag of the sidecar it read. Errors name the source they come from.
fn upload_metadata(
    uploads: &dyn ObjectStore,
    key: &str,
    info: &ObjectInfo,
    options: &ProcessOptions,
) -> Result<(UploadMetadata, Option<String>)> {
    let sidecar_key = sidecar_key(key);
    // The sidecar comes from outside like the upload: held to the same size.
    let sidecar = uploads
        .get_object(&sidecar_key, options.limits.max_object_bytes)
        .map_err(|e| e.name_limit("max_object_bytes").for_input(&sidecar_key))?;
    let sidecar_etag = sidecar
        .as_ref()
        .map(|(_, info)| info.etag.trim_matches('"').to_owned());
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
    Ok((metadata, sidecar_etag))
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
                "the upload changed between the first and the second pass of its conversion",
            )),
        ),
    }
}
