//! The convert job: one upload in, Sample v2 chunks and a manifest out.

use sha2::{Digest, Sha256};

use super::build_id_index::build_id_index;
use super::decode::{decode, Decoded};
use super::manifest::{
    Manifest, ManifestOutput, ManifestProfile, ManifestSource, MANIFEST_VERSION,
};
use crate::error::{ErrorKind, Result};
use crate::formats::InputFormat;
use crate::metadata::UploadMetadata;
use crate::model::{seconds_to_ns, Profile, Timestamps};
use crate::plan::{plan_chunks, ChunkPlan, Timing};
use crate::sample_v2::{write_planned_chunk, PassThrough, SampleV2Chunk};
use crate::store::{chunk_key, manifest_key, source_id, ObjectStore};
use crate::tables::{write_tables, TableChunk, TableSource};

/// How to convert.
#[derive(Clone, Debug, Default)]
pub struct ConvertOptions {
    /// Decode as this format instead of detecting it.
    pub format: Option<InputFormat>,
    /// Metadata of the upload. It overrides metadata the input carries itself.
    pub metadata: UploadMetadata,
    /// When the upload arrived, ns since the Unix epoch (the object's last-modified time):
    /// the start time of last resort for aggregated inputs that record none.
    pub received_at_ns: Option<i64>,
}

/// The outputs of one conversion, not yet stored.
#[derive(Debug)]
pub struct Converted {
    /// The decoded input.
    pub decoded: Decoded,
    /// Objects to write, in order.
    pub objects: Vec<(String, Vec<u8>)>,
    /// The manifest, written after the objects.
    pub manifest: Manifest,
    /// Where the manifest goes.
    pub manifest_key: String,
}

impl Converted {
    /// The Sample v2 chunk objects, in write order (the tables follow them in `objects`).
    pub fn sample_v2(&self) -> Vec<&(String, Vec<u8>)> {
        self.objects
            .iter()
            .zip(&self.manifest.outputs)
            .filter(|(_, o)| o.kind == "sample_v2")
            .map(|(object, _)| object)
            .collect()
    }
}

/// Converts one upload. Pure: nothing is read or written, so the same input always gives the
/// same outputs. Errors name `source_key`.
pub fn convert_upload(
    source_key: &str,
    etag: &str,
    bytes: &[u8],
    options: &ConvertOptions,
) -> Result<Converted> {
    convert_inner(source_key, etag, bytes, options).map_err(|e| e.for_input(source_key))
}

fn convert_inner(
    source_key: &str,
    etag: &str,
    bytes: &[u8],
    options: &ConvertOptions,
) -> Result<Converted> {
    options.metadata.validate()?;
    let mut decoded = decode(bytes, options.format)?;
    let metadata = match decoded.metadata.take() {
        Some(embedded) => embedded.merge(options.metadata.clone()),
        None => options.metadata.clone(),
    };
    let mut timestamps = anchor(&mut decoded.profile, metadata.timestamp)?;
    let source_id = source_id(source_key, etag);
    let etag = etag.trim_matches('"');
    let converter = format!("proflake {}", env!("CARGO_PKG_VERSION"));
    let table_source = TableSource {
        source_id: &source_id,
        source_key,
        source_etag: etag,
        source_format: decoded.format.name(),
        converter: &converter,
        service: metadata.service.as_deref(),
    };
    let manifest_key = manifest_key(&source_id);
    let (chunks, tables, index) = if decoded.chunks.is_empty() {
        let start = place_aggregated(&mut decoded.profile, &metadata, options.received_at_ns);
        let plans = plan_chunks(&decoded.profile, &metadata, &source_id)?;
        let chunks: Vec<SampleV2Chunk> = plans
            .iter()
            .map(|plan| write_planned_chunk(&metadata, plan))
            .collect::<Result<_>>()?;
        if let Some(Timing::Expanded { interval_ns }) = chunks.first().map(|c| c.timing) {
            timestamps = format!(
                "expanded from aggregated weights, {interval_ns} ns apart per thread, from {start}"
            );
        }
        let tables = write_tables(&table_source, &table_chunks(&plans, &chunks))?;
        let index = build_id_index(&plans, source_key, &source_id, &manifest_key);
        (chunks, tables, index)
    } else {
        // The input already is Sample v2: validated by the decoder, stored unchanged, and
        // tabulated chunk by chunk so each table profile is exactly one stored chunk.
        let (profiles, chunks): (Vec<Profile>, Vec<SampleV2Chunk>) =
            std::mem::take(&mut decoded.chunks)
                .into_iter()
                .map(PassThrough::into_output)
                .unzip();
        let plans: Vec<ChunkPlan> = profiles
            .iter()
            .zip(&chunks)
            .map(|(p, c)| ChunkPlan::whole(p, &c.chunk_id, &c.profiler_id))
            .collect();
        let tables = write_tables(&table_source, &table_chunks(&plans, &chunks))?;
        let index = build_id_index(&plans, source_key, &source_id, &manifest_key);
        (chunks, tables, index)
    };

    let mut objects = Vec::with_capacity(chunks.len() + tables.len());
    let mut outputs = Vec::with_capacity(chunks.len() + tables.len());
    for chunk in chunks {
        let key = chunk_key(&source_id, &chunk.chunk_id);
        outputs.push(ManifestOutput {
            key: key.clone(),
            kind: "sample_v2".into(),
            bytes: chunk.json.len() as u64,
            sha256: hex::encode(Sha256::digest(&chunk.json)),
            pid: chunk.pid,
            chunk_id: Some(chunk.chunk_id),
            samples: Some(chunk.samples as u64),
            start_ns: Some(chunk.start_ns),
            end_ns: Some(chunk.end_ns),
            rows: None,
        });
        objects.push((key, chunk.json));
    }
    let samples_written = outputs.iter().filter_map(|o| o.samples).sum();
    // Tables first, then the index entries that point at them, then (in publish) the manifest.
    for table in tables {
        outputs.push(ManifestOutput {
            key: table.key.clone(),
            kind: format!("table:{}", table.table.name()),
            bytes: table.bytes.len() as u64,
            sha256: hex::encode(Sha256::digest(&table.bytes)),
            pid: None,
            chunk_id: None,
            samples: None,
            start_ns: None,
            end_ns: None,
            rows: Some(table.rows),
        });
        objects.push((table.key, table.bytes));
    }
    for (key, entry) in index {
        let json = serde_json::to_vec_pretty(&entry).expect("index entry serializes");
        outputs.push(ManifestOutput {
            key: key.clone(),
            kind: "build_id_index".into(),
            bytes: json.len() as u64,
            sha256: hex::encode(Sha256::digest(&json)),
            pid: None,
            chunk_id: None,
            samples: None,
            start_ns: None,
            end_ns: None,
            rows: None,
        });
        objects.push((key, json));
    }
    let profile = &decoded.profile;
    let manifest = Manifest {
        manifest_version: MANIFEST_VERSION,
        converter,
        source: ManifestSource {
            key: source_key.into(),
            etag: etag.into(),
            bytes: bytes.len() as u64,
            format: decoded.format.name().into(),
            container: decoded.container.name().into(),
            source_id: source_id.clone(),
        },
        profile: ManifestProfile {
            timestamps,
            samples: profile.samples().len() as u64,
            samples_written,
            processes: profile.processes().len() as u64,
            threads: profile.threads().len() as u64,
            stats: profile
                .stats
                .iter()
                .map(|(k, v)| ((*k).to_owned(), *v))
                .collect(),
        },
        outputs,
    };
    Ok(Converted {
        decoded,
        objects,
        manifest,
        manifest_key,
    })
}

/// Pairs each plan with the chunk written from it, for the tables.
fn table_chunks<'a, 'p>(
    plans: &'a [ChunkPlan<'p>],
    chunks: &'a [SampleV2Chunk],
) -> Vec<TableChunk<'a, 'p>> {
    plans
        .iter()
        .zip(chunks)
        .map(|(plan, chunk)| TableChunk {
            plan,
            platform: &chunk.platform,
            release: chunk.release.as_deref(),
            environment: chunk.environment.as_deref(),
        })
        .collect()
}

/// Puts trace-clock sample times on the wall clock when the metadata says when the profile
/// started; says how times were obtained.
fn anchor(profile: &mut Profile, start_seconds: Option<f64>) -> Result<String> {
    let Timestamps::TraceClock(clock) = profile.timestamps.clone() else {
        return Ok("unix".into());
    };
    let Some(start) = start_seconds else {
        return Err(ErrorKind::NoWallClock { clock }.into());
    };
    profile.anchor_first_sample_at(seconds_to_ns(start));
    Ok(format!(
        "{clock} clock, anchored at metadata timestamp {start}"
    ))
}

/// Gives an aggregated profile (samples without times) a start time when the input recorded
/// none: the metadata timestamp, else the upload's arrival. Says where the start came from.
fn place_aggregated(
    profile: &mut Profile,
    metadata: &UploadMetadata,
    received_at_ns: Option<i64>,
) -> &'static str {
    if profile.start_time.is_some() {
        return "the input's start time";
    }
    if let Some(start) = metadata.timestamp {
        profile.start_time = Some(seconds_to_ns(start));
        return "the metadata timestamp";
    }
    if let Some(received) = received_at_ns {
        profile.start_time = Some(received);
        return "the upload's arrival time";
    }
    "nowhere"
}

/// Stores a conversion: every output first, the manifest last, so a manifest is never seen
/// before the objects it lists.
pub fn publish(store: &dyn ObjectStore, converted: &Converted) -> Result<()> {
    for (key, bytes) in &converted.objects {
        store.put(key, bytes)?;
    }
    let manifest = serde_json::to_vec_pretty(&converted.manifest).expect("manifest serializes");
    store.put(&converted.manifest_key, &manifest)
}

/// Stores an upload at `key` unless the same bytes are already there. A different object at
/// that key is never replaced: its upload would be lost.
pub fn store_upload(store: &dyn ObjectStore, key: &str, bytes: &[u8]) -> Result<()> {
    match store.get(key)? {
        Some(existing) if existing != bytes => {
            Err(ErrorKind::KeyConflict { key: key.into() }.into())
        }
        Some(_) => Ok(()),
        None => store.put(key, bytes),
    }
}
