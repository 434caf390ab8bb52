//! An S3 bucket as an object store (a prefix of one is a [`PrefixedStore`](super::PrefixedStore)
//! over it).

use std::fmt;
use std::io::{self, Read, Write};

use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use aws_sdk_s3::Client;
use aws_smithy_types::DateTime;
use bytes::Bytes;
use tokio::runtime::Handle;

use super::writer::to_io;
use super::{too_large, ObjectInfo, ObjectStore, ObjectWriter};
use crate::error::{Error, ErrorKind, Result};

/// The objects in `bucket`, by key.
///
/// [`ObjectStore`] is synchronous (the pipeline is CPU-bound), so every method drives the SDK
/// with [`Handle::block_on`]. Call them from a thread outside the async runtime, such as one of
/// [`tokio::task::spawn_blocking`]; on a runtime worker thread `block_on` panics.
#[derive(Clone, Debug)]
pub struct S3Store {
    client: Client,
    bucket: String,
    runtime: Handle,
}

impl S3Store {
    /// A store of the objects in `bucket`, reached through `client` on `runtime`.
    pub fn new(client: Client, bucket: impl Into<String>, runtime: Handle) -> Self {
        S3Store {
            client,
            bucket: bucket.into(),
            runtime,
        }
    }

    /// A transient failure on `key`, named as an `s3://` URL so logs say which bucket.
    fn storage_error(&self, key: &str, cause: impl Into<SdkFailure>) -> Error {
        Error::new(ErrorKind::Storage {
            key: format!("s3://{}/{key}", self.bucket),
        })
        .with_source(cause.into())
    }
}

/// An SDK error whose `Display` is its whole chain and the HTTP status: the SDK's own `Display`
/// says little more than "service error", which would leave logs and error reports without the
/// cause. (`DisplayErrorContext` also appends the `Debug` form, raw response included: too much
/// for a log field.)
#[derive(Debug)]
struct SdkFailure(String);

impl fmt::Display for SdkFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SdkFailure {}

impl SdkFailure {
    fn from_chain(error: &(dyn std::error::Error + 'static), status: Option<u16>) -> Self {
        let mut text = crate::error::error_chain(error);
        if let Some(status) = status {
            text.push_str(&format!(" (HTTP {status})"));
        }
        SdkFailure(text)
    }
}

impl<E> From<SdkError<E, HttpResponse>> for SdkFailure
where
    E: std::error::Error + 'static,
{
    fn from(e: SdkError<E, HttpResponse>) -> Self {
        let status = e.raw_response().map(|r| r.status().as_u16());
        SdkFailure::from_chain(&e, status)
    }
}

impl From<aws_smithy_types::byte_stream::error::Error> for SdkFailure {
    fn from(e: aws_smithy_types::byte_stream::error::Error) -> Self {
        SdkFailure::from_chain(&e, None)
    }
}

/// Whether an SDK error says the key does not exist. Besides the typed `NoSuchKey` / `NotFound`,
/// a bare 404 counts (S3 answers HEAD of a missing key without a body, and some lookalikes do
/// the same for GET), except `NoSuchBucket`: a missing bucket is a deployment fault to retry
/// and surface, not an object to skip.
fn is_missing_key<E>(e: &SdkError<E, HttpResponse>, typed: impl Fn(&E) -> bool) -> bool
where
    E: ProvideErrorMetadata,
{
    if let Some(service) = e.as_service_error() {
        if typed(service) {
            return true;
        }
        if service.code() == Some("NoSuchBucket") {
            return false;
        }
    }
    e.raw_response().map(|r| r.status().as_u16()) == Some(404)
}

/// The `Content-Type` stored with an output: what readers (browsers, query engines, the S3
/// console) go by.
pub(crate) fn content_type(key: &str) -> &'static str {
    if key.ends_with(".json") {
        "application/json"
    } else if key.ends_with(".parquet") {
        "application/vnd.apache.parquet"
    } else {
        "application/octet-stream"
    }
}

/// ns since the Unix epoch; `None` past the year 2262, where i64 nanoseconds end.
pub(crate) fn unix_nanos(t: &DateTime) -> Option<i64> {
    i64::try_from(t.as_nanos()).ok()
}

/// User metadata as [`ObjectInfo`] holds it: names lowercased (S3 keeps them case-insensitive),
/// sorted so the same object always reads the same.
pub(crate) fn user_metadata<'a>(
    metadata: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> Vec<(String, String)> {
    let mut pairs: Vec<_> = metadata
        .into_iter()
        .map(|(name, value)| (name.to_lowercase(), value.clone()))
        .collect();
    pairs.sort();
    pairs
}

impl S3Store {
    fn put_whole(&self, key: &str, bytes: Vec<u8>, metadata: &[(&str, &str)]) -> Result<()> {
        self.runtime.block_on(async {
            let mut request = self
                .client
                .put_object()
                .bucket(&self.bucket)
                .key(key)
                .content_type(content_type(key))
                .body(ByteStream::from(bytes));
            for (name, value) in metadata {
                request = request.metadata(*name, *value);
            }
            match request.send().await {
                Ok(_) => Ok(()),
                Err(e) => Err(self.storage_error(key, e)),
            }
        })
    }
}

impl S3Store {
    /// The size of each part of a multipart upload: what a writer holds at most. S3 wants at
    /// least 5 MiB for every part but the last, and at most 10,000 parts (80 GB at this size).
    pub const PART_BYTES: usize = 8 << 20;
}

const PART_BYTES: usize = S3Store::PART_BYTES;

/// An object written to S3 as it is produced. An object smaller than one part is one
/// `PutObject` at `finish`, so its ETag stays the MD5 of its bytes. A larger one becomes a
/// multipart upload: a part goes out each time [`S3Store::PART_BYTES`] have been written, and `finish`
/// completes the upload. Dropped unfinished, the upload is aborted, so no parts are left
/// billed and nothing appears.
struct MultipartWriter<'s> {
    store: &'s S3Store,
    key: String,
    part: Vec<u8>,
    upload_id: Option<String>,
    parts: Vec<CompletedPart>,
}

impl MultipartWriter<'_> {
    /// Sends the bytes held as the next part, starting the upload first if need be.
    fn send_part(&mut self) -> Result<()> {
        let store = self.store;
        let key = self.key.as_str();
        let bytes = std::mem::replace(&mut self.part, Vec::with_capacity(PART_BYTES));
        let number = i32::try_from(self.parts.len() + 1).expect("at most 10,000 parts");
        let upload_id = match &self.upload_id {
            Some(id) => id.clone(),
            None => {
                let started = store.runtime.block_on(
                    store
                        .client
                        .create_multipart_upload()
                        .bucket(&store.bucket)
                        .key(key)
                        .content_type(content_type(key))
                        .send(),
                );
                let started = started.map_err(|e| store.storage_error(key, e))?;
                let id = started.upload_id().unwrap_or_default().to_owned();
                self.upload_id = Some(id.clone());
                id
            }
        };
        let sent = store.runtime.block_on(
            store
                .client
                .upload_part()
                .bucket(&store.bucket)
                .key(key)
                .upload_id(&upload_id)
                .part_number(number)
                .body(ByteStream::from(bytes))
                .send(),
        );
        let sent = sent.map_err(|e| store.storage_error(key, e))?;
        self.parts.push(
            CompletedPart::builder()
                .part_number(number)
                .set_e_tag(sent.e_tag().map(str::to_owned))
                .build(),
        );
        Ok(())
    }
}

impl Write for MultipartWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.part.capacity() == 0 {
            self.part
                .reserve_exact(PART_BYTES.min(buf.len().max(64 * 1024)));
        }
        let room = PART_BYTES - self.part.len();
        let n = room.min(buf.len());
        self.part.extend_from_slice(&buf[..n]);
        if self.part.len() == PART_BYTES {
            self.send_part().map_err(to_io)?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl ObjectWriter for MultipartWriter<'_> {
    fn finish(mut self: Box<Self>) -> Result<()> {
        let store = self.store;
        let Some(upload_id) = self.upload_id.clone() else {
            let bytes = std::mem::take(&mut self.part);
            return store.put_whole(&self.key, bytes, &[]);
        };
        if !self.part.is_empty() {
            self.send_part()?;
        }
        let parts = std::mem::take(&mut self.parts);
        let done = store.runtime.block_on(
            store
                .client
                .complete_multipart_upload()
                .bucket(&store.bucket)
                .key(&self.key)
                .upload_id(&upload_id)
                .multipart_upload(
                    CompletedMultipartUpload::builder()
                        .set_parts(Some(parts))
                        .build(),
                )
                .send(),
        );
        done.map_err(|e| store.storage_error(&self.key, e))?;
        self.upload_id = None;
        Ok(())
    }
}

impl Drop for MultipartWriter<'_> {
    fn drop(&mut self) {
        let Some(upload_id) = self.upload_id.take() else {
            return;
        };
        let store = self.store;
        // Best effort: a bucket lifecycle rule for incomplete multipart uploads is the backstop
        // (infra/template.yaml).
        let _ = store.runtime.block_on(
            store
                .client
                .abort_multipart_upload()
                .bucket(&store.bucket)
                .key(&self.key)
                .upload_id(upload_id)
                .send(),
        );
    }
}

/// An object's body read as it arrives, one network chunk held at a time.
struct Body<'s> {
    store: &'s S3Store,
    key: String,
    stream: ByteStream,
    chunk: Bytes,
    /// What may still arrive within the size limit (`max`): the announced length is only a
    /// hint.
    left: u64,
    max: u64,
}

impl Read for Body<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.chunk.is_empty() {
            match self.store.runtime.block_on(self.stream.try_next()) {
                Ok(Some(chunk)) => {
                    if chunk.len() as u64 > self.left {
                        return Err(to_io(too_large(self.max)));
                    }
                    self.left -= chunk.len() as u64;
                    self.chunk = chunk;
                }
                Ok(None) => return Ok(0),
                Err(e) => return Err(to_io(self.store.storage_error(&self.key, e))),
            }
        }
        let n = buf.len().min(self.chunk.len());
        buf[..n].copy_from_slice(&self.chunk.split_to(n));
        Ok(n)
    }
}

impl ObjectStore for S3Store {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        Ok(self.get_object(key, u64::MAX)?.map(|(bytes, _)| bytes))
    }

    fn get_object(&self, key: &str, max_bytes: u64) -> Result<Option<(Vec<u8>, ObjectInfo)>> {
        let Some((mut body, mut info)) = self.get_reader(key, max_bytes)? else {
            return Ok(None);
        };
        // The announced length is only a hint for the allocation: the limit is enforced on what
        // actually arrives.
        let capacity = info.size.min(max_bytes).min(64 << 20);
        let mut bytes = Vec::with_capacity(capacity as usize);
        body.read_to_end(&mut bytes)
            .map_err(|e| crate::error::from_io(key, e))?;
        info.size = bytes.len() as u64;
        Ok(Some((bytes, info)))
    }

    fn get_reader<'s>(
        &'s self,
        key: &str,
        max_bytes: u64,
    ) -> Result<Option<(Box<dyn Read + Send + 's>, ObjectInfo)>> {
        self.runtime.block_on(async {
            let request = self.client.get_object().bucket(&self.bucket).key(key);
            let output = match request.send().await {
                Ok(output) => output,
                Err(e) if is_missing_key(&e, |s| s.is_no_such_key()) => return Ok(None),
                Err(e) => return Err(self.storage_error(key, e)),
            };
            let announced = output.content_length().and_then(|n| u64::try_from(n).ok());
            if announced.is_some_and(|n| n > max_bytes) {
                return Err(too_large(max_bytes));
            }
            let info = ObjectInfo {
                etag: output.e_tag().unwrap_or("").trim_matches('"').to_owned(),
                size: announced.unwrap_or(0),
                last_modified_ns: output.last_modified().and_then(unix_nanos),
                user_metadata: output.metadata().map(user_metadata).unwrap_or_default(),
            };
            let body = Body {
                store: self,
                key: key.to_owned(),
                stream: output.body,
                chunk: Bytes::new(),
                left: max_bytes,
                max: max_bytes,
            };
            Ok(Some((Box::new(body) as Box<dyn Read + Send>, info)))
        })
    }

    fn exists(&self, key: &str) -> Result<bool> {
        Ok(self.head(key)?.is_some())
    }

    fn head(&self, key: &str) -> Result<Option<ObjectInfo>> {
        self.runtime.block_on(async {
            let request = self.client.head_object().bucket(&self.bucket).key(key);
            let output = match request.send().await {
                Ok(output) => output,
                Err(e) if is_missing_key(&e, |s| s.is_not_found()) => return Ok(None),
                Err(e) => return Err(self.storage_error(key, e)),
            };
            Ok(Some(ObjectInfo {
                etag: output.e_tag().unwrap_or("").trim_matches('"').to_owned(),
                size: output
                    .content_length()
                    .and_then(|n| u64::try_from(n).ok())
                    .unwrap_or(0),
                last_modified_ns: output.last_modified().and_then(unix_nanos),
                user_metadata: output.metadata().map(user_metadata).unwrap_or_default(),
            }))
        })
    }

    fn put(&self, key: &str, bytes: &[u8]) -> Result<()> {
        self.put_whole(key, bytes.to_vec(), &[])
    }

    fn put_with_metadata(&self, key: &str, bytes: &[u8], metadata: &[(&str, &str)]) -> Result<()> {
        self.put_whole(key, bytes.to_vec(), metadata)
    }

    fn put_writer<'s>(&'s self, key: &str) -> Result<Box<dyn ObjectWriter + 's>> {
        Ok(Box::new(MultipartWriter {
            store: self,
            key: key.to_owned(),
            part: Vec::new(),
            upload_id: None,
            parts: Vec::new(),
        }))
    }

    fn delete(&self, key: &str) -> Result<()> {
        self.runtime.block_on(async {
            let request = self.client.delete_object().bucket(&self.bucket).key(key);
            match request.send().await {
                Ok(_) => Ok(()),
                // S3 deletes missing keys happily; lookalikes may answer 404 instead.
                Err(e) if is_missing_key(&e, |_| false) => Ok(()),
                Err(e) => Err(self.storage_error(key, e)),
            }
        })
    }

    fn list(&self, prefix: &str) -> Result<Vec<String>> {
        self.runtime.block_on(async {
            let mut keys = Vec::new();
            let mut token: Option<String> = None;
            loop {
                let request = self
                    .client
                    .list_objects_v2()
                    .bucket(&self.bucket)
                    .prefix(prefix)
                    .set_continuation_token(token.take());
                let page = match request.send().await {
                    Ok(page) => page,
                    Err(e) => return Err(self.storage_error(prefix, e)),
                };
                let page_keys = page.contents().iter().filter_map(|o| o.key());
                keys.extend(page_keys.map(str::to_owned));
                match page.next_continuation_token() {
                    Some(next) if page.is_truncated() == Some(true) => token = Some(next.into()),
                    _ => break,
                }
            }
            keys.sort();
            Ok(keys)
        })
    }

    fn list_page(&self, prefix: &str, after: Option<&str>, limit: usize) -> Result<Vec<String>> {
        self.runtime.block_on(async {
            let mut keys = Vec::new();
            let mut token: Option<String> = None;
            // S3 lists in UTF-8 binary order, which is the order of Rust's `str`.
            while keys.len() < limit {
                let want = i32::try_from(limit - keys.len()).unwrap_or(1000).min(1000);
                let request = self
                    .client
                    .list_objects_v2()
                    .bucket(&self.bucket)
                    .prefix(prefix)
                    .max_keys(want)
                    .set_start_after(after.map(str::to_owned))
                    .set_continuation_token(token.take());
                let page = match request.send().await {
                    Ok(page) => page,
                    Err(e) => return Err(self.storage_error(prefix, e)),
                };
                let page_keys = page.contents().iter().filter_map(|o| o.key());
                keys.extend(page_keys.map(str::to_owned));
                match page.next_continuation_token() {
                    Some(next) if page.is_truncated() == Some(true) => token = Some(next.into()),
                    _ => break,
                }
            }
            keys.truncate(limit);
            Ok(keys)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn store() -> (tokio::runtime::Runtime, S3Store) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let config = aws_sdk_s3::Config::builder()
            .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
            .build();
        let store = S3Store::new(Client::from_conf(config), "bkt", runtime.handle().clone());
        (runtime, store)
    }

    #[test]
    fn errors_name_the_object() {
        let (_runtime, store) = store();

        let timeout = std::io::Error::new(std::io::ErrorKind::TimedOut, "timed out");
        let cause = SdkFailure::from_chain(&timeout, Some(503));
        let err = store.storage_error("env/prod/uploads/a.pb", cause);
        assert_eq!(
            err.kind(),
            &ErrorKind::Storage {
                key: "s3://bkt/env/prod/uploads/a.pb".into()
            }
        );
        assert!(err.kind().is_transient());
        let source = std::error::Error::source(&err).unwrap();
        assert_eq!(source.to_string(), "timed out (HTTP 503)");
    }

    #[test]
    fn content_types_follow_the_suffix() {
        assert_eq!(
            content_type("converted/x/manifest.json"),
            "application/json"
        );
        assert_eq!(
            content_type("tables/v1/frames/x.parquet"),
            "application/vnd.apache.parquet"
        );
        assert_eq!(content_type("uploads/a.pb.gz"), "application/octet-stream");
        assert_eq!(content_type("json"), "application/octet-stream");
    }

    #[test]
    fn times_become_unix_nanoseconds() {
        let t = DateTime::from_secs_and_nanos(1_700_000_000, 123_456_789);
        assert_eq!(unix_nanos(&t), Some(1_700_000_000_123_456_789));
        assert_eq!(unix_nanos(&DateTime::from_secs(0)), Some(0));
        let before_epoch = DateTime::from_secs_and_nanos(-1, 500_000_000);
        assert_eq!(unix_nanos(&before_epoch), Some(-500_000_000));
        assert_eq!(unix_nanos(&DateTime::from_secs(i64::MAX / 2)), None);
    }

    #[test]
    fn metadata_names_are_lowercased_and_sorted() {
        let metadata: HashMap<String, String> = [
            ("Release", "app@1.0"),
            ("environment", "prod"),
            ("Platform", "Android"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        assert_eq!(
            user_metadata(&metadata),
            [
                ("environment".to_owned(), "prod".to_owned()),
                ("platform".to_owned(), "Android".to_owned()),
                ("release".to_owned(), "app@1.0".to_owned()),
            ]
        );
    }
}
