//! The completion manifest: written after every other output of an upload, so its presence
//! means the conversion is complete, and it lists what was written.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Version of the manifest layout.
pub const MANIFEST_VERSION: u32 = 2;

/// What one conversion wrote. Holds nothing time- or machine-dependent, so converting the same
/// upload twice writes the same manifest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Layout version (`MANIFEST_VERSION`).
    pub manifest_version: u32,
    /// The converter and its version.
    pub converter: String,
    /// The upload.
    pub source: ManifestSource,
    /// A summary of the decoded profile.
    pub profile: ManifestProfile,
    /// Every series of the input: its observations, and where they went.
    #[serde(default)]
    pub series: Vec<ManifestSeries>,
    /// What the Sample v2 chunks hold.
    #[serde(default)]
    pub sample_v2: ManifestSampleV2,
    /// Per image with frames the input left unnamed: the debug file that named them, if any,
    /// and how many frames it named.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub symbols: Vec<crate::symbolize::ImageSymbolization>,
    /// Every object written, in write order (the manifest itself excluded).
    pub outputs: Vec<ManifestOutput>,
}

impl Manifest {
    /// Whether `key` is where a conversion's manifest goes (`converted/<source_id>/manifest.json`),
    /// the object whose arrival says a conversion is complete.
    pub fn is_key(key: &str) -> bool {
        crate::store::is_manifest_key(key)
    }
}

/// The upload a manifest describes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ManifestSource {
    /// Object key.
    pub key: String,
    /// ETag (hex MD5 for single-part uploads).
    pub etag: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Detected format.
    pub format: String,
    /// Whole-file compression.
    pub container: String,
    /// The derived source id.
    pub source_id: String,
    /// The ETag of the metadata sidecar the conversion read, if it read one: the sidecar's own
    /// notification, arriving later, finds it read and converts nothing again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata_etag: Option<String>,
}

/// Summary of the decoded profile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ManifestProfile {
    /// `unix`, or how trace-clock times were anchored.
    pub timestamps: String,
    /// What placed the samples on the wall clock: `input` (the input's own times or start),
    /// `metadata` (its `timestamp`) or `arrival` (the upload's arrival time, for lack of
    /// both). Empty in manifests written before it existed.
    #[serde(default)]
    pub clock_source: String,
    /// Samples decoded.
    pub samples: u64,
    /// Samples written to Sample v2.
    pub samples_written: u64,
    /// Processes with samples.
    pub processes: u64,
    /// Threads with samples.
    pub threads: u64,
    /// What the decoder skipped or could not resolve, by reason.
    pub stats: BTreeMap<String, u64>,
    /// What the input itself said went wrong or the decoder found odd, in words (the first
    /// 100): a producer that dropped events, conformance findings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
}

/// One written object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ManifestOutput {
    /// Object key.
    pub key: String,
    /// What it holds (`sample_v2`, `table:<name>`, `build_id_index`).
    pub kind: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Hex SHA-256 of the bytes.
    pub sha256: String,
    /// Process the chunk covers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<i64>,
    /// Chunk id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk_id: Option<String>,
    /// Samples in the chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub samples: Option<u64>,
    /// First sample, ns since the Unix epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_ns: Option<i64>,
    /// Last sample, ns since the Unix epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_ns: Option<i64>,
    /// Rows in a table file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<u64>,
}

/// One series of the input, and how much of it each output holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestSeries {
    /// The series' name, as the input names it (`samples.sample_type`).
    pub sample_type: String,
    /// Its unit, as the input names it (`samples.sample_unit`).
    pub sample_unit: String,
    /// `cpu_time`, `wall_time` or `other`.
    pub kind: String,
    /// Observations in the input.
    pub observations: u64,
    /// Sum of their values, in `sample_unit`.
    pub total_value: i128,
    /// Rows in the `samples` table: every observation.
    pub table_rows: u64,
    /// Observations that reached a Sample v2 chunk.
    pub observations_in_chunks: u64,
    /// Samples written to chunks for them. For aggregated weights, expanded per thread and
    /// stack (and scaled into the bound), this may be more or fewer than the observations.
    pub chunk_samples: u64,
    /// Observations the chunks left out, by reason (`series_not_carried`, `no_stack`,
    /// `aggregated_beside_timed`, `no_weight`, `lone_thread`).
    pub left_out: BTreeMap<String, u64>,
}

/// What the Sample v2 chunks of an upload hold.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestSampleV2 {
    /// Chunks written.
    pub chunks: u64,
    /// Samples in them.
    pub samples: u64,
    /// Why there are none, when there are none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why_none: Option<String>,
    /// How sample times were laid out from aggregated weights, when they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expansion: Option<ManifestExpansion>,
}

/// The timeline laid out from aggregated weights, or taken of span series.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestExpansion {
    /// Spacing of one thread's samples.
    pub interval_ns: i64,
    /// The observations the weights stood for, when more than the bound and so scaled down
    /// proportionally (the chunks then hold fewer samples, in the same proportions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scaled_from: Option<u64>,
    /// What was laid out: absent for aggregated weights, `spans` for span series sampled
    /// at a fixed interval (the samples are synthetic either way).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}
