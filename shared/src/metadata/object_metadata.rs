//! Upload metadata from S3 user metadata (`x-amz-meta-*` headers), for SDKs that upload
//! straight to the bucket and cannot send a sidecar JSON. S3 lower-cases the names; the SDKs
//! hand them over with or without the `x-amz-meta-` prefix, so both are accepted, with `-` or
//! `_` between words.

use super::{ClientSdk, UploadMetadata};
use crate::error::{ErrorKind, Result};

const PREFIX: &str = "x-amz-meta-";

impl UploadMetadata {
    /// Reads the metadata fields `docs/inputs.md` lists for SDK authors (`platform`, `release`,
    /// `sdk-name`, …) from `(name, value)` pairs; other names are ignored. A malformed value is an [`ErrorKind::InvalidMetadata`] naming the header.
    pub fn from_object_metadata<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self> {
        let mut meta = UploadMetadata::default();
        let (mut sdk_name, mut sdk_version) = (None, None);
        for (name, value) in pairs {
            let name = name.to_ascii_lowercase().replace('_', "-");
            let name = name.strip_prefix(PREFIX).unwrap_or(&name);
            let value = value.trim();
            if value.is_empty() {
                continue;
            }
            let text = Some(value.to_owned());
            match name {
                "platform" => meta.platform = text,
                "release" => meta.release = text,
                "environment" => meta.environment = text,
                "service" => meta.service = text,
                "profiler-id" => meta.profiler_id = text,
                "chunk-id" => meta.chunk_id = text,
                "content-type" => meta.content_type = text,
                "sdk-name" => sdk_name = text,
                "sdk-version" => sdk_version = text,
                "timestamp" => {
                    let t = value
                        .parse::<f64>()
                        .map_err(|_| ErrorKind::InvalidMetadata {
                            what: format!("{PREFIX}timestamp {value:?} is not Unix seconds"),
                        })?;
                    meta.timestamp = Some(t);
                }
                "span-interval-ms" => {
                    let ms = value
                        .parse::<u64>()
                        .map_err(|_| ErrorKind::InvalidMetadata {
                            what: format!(
                                "{PREFIX}span-interval-ms {value:?} is not whole milliseconds"
                            ),
                        })?;
                    meta.span_interval_ms = Some(ms);
                }
                _ => {}
            }
        }
        meta.client_sdk = match (sdk_name, sdk_version) {
            (Some(name), Some(version)) => Some(ClientSdk { name, version }),
            (None, None) => None,
            _ => {
                return Err(ErrorKind::InvalidMetadata {
                    what: format!("{PREFIX}sdk-name and {PREFIX}sdk-version go together"),
                }
                .into())
            }
        };
        meta.validate()?;
        Ok(meta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_headers_with_or_without_prefix() {
        let m = UploadMetadata::from_object_metadata([
            ("x-amz-meta-release", "app@1.2.3"),
            ("Environment", "production"),
            ("x-amz-meta-service", "checkout"),
            ("sdk_name", "sentry.python"),
            ("x-amz-meta-sdk-version", "2.0.0"),
            ("x-amz-meta-timestamp", "1763800000.5"),
            ("x-amz-meta-span-interval-ms", "5"),
            (
                "x-amz-meta-profiler-id",
                "6F3A0C1E-9B2D-4E7F-8A5B-1C2D3E4F5A6B",
            ),
            ("x-amz-meta-unrelated", "ignored"),
        ])
        .unwrap();
        assert_eq!(m.release.as_deref(), Some("app@1.2.3"));
        assert_eq!(m.environment.as_deref(), Some("production"));
        assert_eq!(m.service.as_deref(), Some("checkout"));
        assert_eq!(m.timestamp, Some(1_763_800_000.5));
        assert_eq!(m.span_interval_ms, Some(5));
        let sdk = m.client_sdk.unwrap();
        assert_eq!(
            (sdk.name.as_str(), sdk.version.as_str()),
            ("sentry.python", "2.0.0")
        );
        assert!(m.profiler_id.is_some());
        assert_eq!(m.platform, None);
    }

    #[test]
    fn bad_values_name_the_header() {
        for pairs in [
            vec![("x-amz-meta-timestamp", "yesterday")],
            vec![("x-amz-meta-sdk-name", "only-a-name")],
            vec![("x-amz-meta-chunk-id", "not-a-uuid")],
        ] {
            let err = UploadMetadata::from_object_metadata(pairs.clone()).unwrap_err();
            assert!(
                matches!(err.kind(), ErrorKind::InvalidMetadata { .. }),
                "{pairs:?}: {err}"
            );
        }
    }
}
