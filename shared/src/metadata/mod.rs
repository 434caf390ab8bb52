//! Upload metadata: what an SDK or the command line says about a profile that the profile
//! itself does not (release, environment, platform, ids).
//!
//! The JSON form is the metadata object of a Sentry profile chunk (the part an Android SDK
//! sends in front of a Perfetto trace), so SDKs can upload the same object they already build.
//! Unknown keys are ignored.

mod measurements;
mod object_metadata;

use std::collections::BTreeMap;

use serde::Deserialize;

pub use measurements::Measurement;
#[cfg(test)]
pub(crate) use measurements::MeasurementUnit;

use crate::error::{ErrorKind, Result};
use crate::model::checked_seconds_to_ns;

/// The SDK that produced a profile.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct ClientSdk {
    /// SDK name (`sentry.java.android`).
    pub name: String,
    /// SDK version.
    pub version: String,
}

impl Default for ClientSdk {
    fn default() -> Self {
        ClientSdk {
            name: "proflake".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// Metadata accompanying an upload. Every field is optional; [`UploadMetadata::merge`] layers
/// sources (defaults < metadata file < command-line flags).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct UploadMetadata {
    /// Sentry platform of the chunks (`android`, `native`, `python`, ...). Derived from the
    /// profile when absent.
    pub platform: Option<String>,
    /// Release the profiled program belongs to.
    pub release: Option<String>,
    /// Deployment environment.
    pub environment: Option<String>,
    /// The SDK that recorded the profile.
    pub client_sdk: Option<ClientSdk>,
    /// Profiler session id (32 hex digits), stable across a session's chunks. Derived from the
    /// input when absent.
    pub profiler_id: Option<String>,
    /// Chunk id (32 hex digits) for an input that yields a single chunk.
    pub chunk_id: Option<String>,
    /// Wall-clock start of the profile in Unix seconds; anchors traces whose clocks have no
    /// wall-clock reference.
    pub timestamp: Option<f64>,
    /// Debug images the SDK already knows (e.g. ProGuard mappings), kept ahead of the ones the
    /// converter derives.
    #[serde(skip)]
    pub debug_images: Vec<serde_json::Value>,
    /// Measurements recorded beside the profile, by name; written into the chunks whose time
    /// range holds them.
    pub measurements: BTreeMap<String, Measurement>,
    /// What the SDK said the profile's content is (`perfetto`); echoed into the chunks as
    /// Relay does.
    pub content_type: Option<String>,
    /// The service the profiled program belongs to (not part of Sentry's metadata; the
    /// tables' `service` column). Derived from the profile when absent.
    pub service: Option<String>,
    /// Spacing, in ms, of the samples Sample v2 takes of span series (agent traces, evented
    /// profiles): 10 when absent.
    pub span_interval_ms: Option<u64>,
    /// Labels the producer attached to the whole upload (a Pyroscope series' labels, say): kept
    /// in the `profiles` table's `attributes`, over what the input itself says.
    pub labels: BTreeMap<String, String>,
    /// Labels of async-profiler's contexts, by context id (decimal): Pyroscope's
    /// `LabelsSnapshot` sent beside a JFR recording. A sample with a `contextId` label that
    /// names one gets that context's labels too.
    pub context_labels: BTreeMap<String, BTreeMap<String, String>>,
    /// The rate, in Hz, at which the profile's counted samples were taken when the profile does
    /// not say (Pyroscope's `sampleRate`): each sample of a series of counts with no period and
    /// no frequency of its own then weighs 1/rate s.
    pub sample_rate_hz: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct DebugMeta {
    images: Vec<serde_json::Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct WithDebugMeta {
    debug_meta: DebugMeta,
}

impl UploadMetadata {
    /// This metadata with `client_sdk` set to the SDK `name` at `version` (what
    /// `client_sdk.name` and `client_sdk.version` say in a sidecar).
    pub fn with_client_sdk(mut self, name: String, version: String) -> Self {
        self.client_sdk = Some(ClientSdk { name, version });
        self
    }

    /// [`UploadMetadata::span_interval_ms`] in ns, or the default.
    pub fn span_interval_ns(&self) -> i64 {
        self.span_interval_ms
            .and_then(|ms| i64::try_from(ms).ok())
            .map_or(crate::plan::DEFAULT_SPAN_INTERVAL_NS, |ms| {
                ms.saturating_mul(1_000_000)
            })
    }

    /// Parses a metadata JSON object.
    pub fn from_json(bytes: &[u8]) -> Result<Self> {
        let invalid = |e: serde_json::Error| ErrorKind::InvalidMetadata {
            what: e.to_string(),
        };
        let mut meta: UploadMetadata = serde_json::from_slice(bytes).map_err(invalid)?;
        let extra: WithDebugMeta = serde_json::from_slice(bytes).map_err(invalid)?;
        meta.debug_images = extra.debug_meta.images;
        meta.validate()?;
        Ok(meta)
    }

    /// Checks ids and times.
    pub fn validate(&self) -> Result<()> {
        for (field, id) in [
            ("profiler_id", &self.profiler_id),
            ("chunk_id", &self.chunk_id),
        ] {
            if let Some(id) = id {
                if normalize_id(id).is_none() {
                    return Err(ErrorKind::InvalidMetadata {
                        what: format!("{field} {id:?} is not a UUID (32 hex digits)"),
                    }
                    .into());
                }
            }
        }
        if let Some(t) = self.timestamp {
            // Times become i64 ns since the epoch; a later one would overflow.
            if !t.is_finite() || t < 0.0 || checked_seconds_to_ns(t).is_none() {
                return Err(ErrorKind::InvalidMetadata {
                    what: format!("timestamp {t:?} is not a Unix time in seconds before 2262"),
                }
                .into());
            }
        }
        if let Some(hz) = self.sample_rate_hz {
            if !(1..=1_000_000_000).contains(&hz) {
                return Err(ErrorKind::InvalidMetadata {
                    what: format!("sample_rate_hz {hz} is not a rate from 1 Hz to 1 GHz"),
                }
                .into());
            }
        }
        if self.span_interval_ms == Some(0) {
            return Err(ErrorKind::InvalidMetadata {
                what: "span_interval_ms is 0; a sampling interval is at least 1 ms".into(),
            }
            .into());
        }
        Ok(())
    }

    /// Fields set in `over` replace those set here.
    pub fn merge(mut self, over: UploadMetadata) -> Self {
        self.platform = over.platform.or(self.platform);
        self.release = over.release.or(self.release);
        self.environment = over.environment.or(self.environment);
        self.client_sdk = over.client_sdk.or(self.client_sdk);
        self.profiler_id = over.profiler_id.or(self.profiler_id);
        self.chunk_id = over.chunk_id.or(self.chunk_id);
        self.timestamp = over.timestamp.or(self.timestamp);
        if !over.debug_images.is_empty() {
            self.debug_images = over.debug_images;
        }
        if !over.measurements.is_empty() {
            self.measurements = over.measurements;
        }
        self.content_type = over.content_type.or(self.content_type);
        self.service = over.service.or(self.service);
        self.span_interval_ms = over.span_interval_ms.or(self.span_interval_ms);
        self.labels.extend(over.labels);
        self.context_labels.extend(over.context_labels);
        self.sample_rate_hz = over.sample_rate_hz.or(self.sample_rate_hz);
        self
    }
}

/// A UUID in any of its usual spellings as 32 lowercase hex digits, Sentry's id form.
pub(crate) fn normalize_id(id: &str) -> Option<String> {
    let hex: String = id.chars().filter(|&c| c != '-').collect();
    (hex.len() == 32 && hex.chars().all(|c| c.is_ascii_hexdigit()))
        .then(|| hex.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_sentry_chunk_metadata() {
        let json = br#"{"profiler_id":"814B081C-638B-4AD9-82AE-351547BFE499","chunk_id":"c3b09c0608844f558eaf6e65df6b9cdf",
            "client_sdk":{"name":"sentry.java.android","version":"8.38.0","packages":[]},
            "platform":"android","release":"app@1.0","environment":"debug","version":"2",
            "content_type":"perfetto","timestamp":1777358020.855,
            "debug_meta":{"images":[{"type":"proguard","uuid":"00000000-0000-0000-0000-000000000001"}]}}"#;
        let m = UploadMetadata::from_json(json).unwrap();
        assert_eq!(m.platform.as_deref(), Some("android"));
        assert_eq!(m.client_sdk.unwrap().name, "sentry.java.android");
        assert_eq!(m.timestamp, Some(1777358020.855));
        assert_eq!(m.debug_images.len(), 1);
        assert_eq!(m.content_type.as_deref(), Some("perfetto"));
        assert_eq!(
            normalize_id(m.profiler_id.as_deref().unwrap()).unwrap(),
            "814b081c638b4ad982ae351547bfe499"
        );
    }

    #[test]
    fn rejects_bad_ids_and_merges_in_order() {
        let err = UploadMetadata::from_json(br#"{"profiler_id":"nope"}"#).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::InvalidMetadata { .. }));
        assert!(UploadMetadata::from_json(b"[1]").is_err());
        let base = UploadMetadata {
            release: Some("a".into()),
            platform: Some("native".into()),
            ..Default::default()
        };
        let over = UploadMetadata {
            release: Some("b".into()),
            ..Default::default()
        };
        let m = base.merge(over);
        assert_eq!(m.release.as_deref(), Some("b"));
        assert_eq!(m.platform.as_deref(), Some("native"));
    }

    /// A start time past 2262 overflowed the conversion to ns (an envelope's chunk metadata).
    #[test]
    fn rejects_timestamps_past_what_ns_hold() {
        for json in [
            &br#"{"timestamp":1e300}"#[..],
            br#"{"timestamp":9300000000}"#,
        ] {
            let err = UploadMetadata::from_json(json).unwrap_err();
            assert!(
                matches!(err.kind(), ErrorKind::InvalidMetadata { what } if what.contains("2262")),
                "{err}"
            );
        }
        let latest = UploadMetadata::from_json(br#"{"timestamp":9200000000}"#).unwrap();
        assert_eq!(latest.timestamp, Some(9.2e9));
    }
}

#[cfg(test)]
mod measurement_tests {
    use super::*;

    #[test]
    fn measurements_take_relay_units_and_drop_extra_keys() {
        let json = br#"{"measurements":{"cpu":{"unit":"hz","values":[
            {"value":2.5,"elapsed_since_start_ns":"1","timestamp":1777358020.895}]}}}"#;
        let m = UploadMetadata::from_json(json).unwrap();
        let cpu = &m.measurements["cpu"];
        assert_eq!(cpu.unit, MeasurementUnit::Hertz);
        assert_eq!(
            serde_json::to_string(cpu).unwrap(),
            r#"{"unit":"hertz","values":[{"timestamp":1777358020.895,"value":2.5}]}"#
        );
        let bad = br#"{"measurements":{"x":{"unit":"furlong","values":[]}}}"#;
        assert!(matches!(
            UploadMetadata::from_json(bad).unwrap_err().kind(),
            ErrorKind::InvalidMetadata { .. }
        ));
    }

    #[test]
    fn unit_names_are_the_serialized_names() {
        for unit in [
            MeasurementUnit::Nanosecond,
            MeasurementUnit::Hertz,
            MeasurementUnit::Byte,
            MeasurementUnit::Percent,
            MeasurementUnit::Nanojoule,
        ] {
            assert_eq!(serde_json::to_value(unit).unwrap(), unit.name());
        }
    }

    #[test]
    fn the_android_sdk_metadata_example_parses() {
        let json =
            include_bytes!("../../../tests/fixtures/sentry/relay_perfetto_chunk_metadata.json");
        let m = UploadMetadata::from_json(json).unwrap();
        assert_eq!(m.content_type.as_deref(), Some("perfetto"));
        assert!(!m.measurements.is_empty());
        assert!(m.measurements.values().all(|v| !v.values.is_empty()));
    }
}
