//! Object notifications as they arrive on the queue: S3 event notifications (from S3 or moto,
//! possibly several records per message, possibly the `s3:TestEvent` sent when a notification
//! is configured) and EventBridge-shaped S3 events. Parsed leniently by hand-written structs:
//! producers leave out fields that `aws_lambda_events` requires (moto has no `userIdentity`),
//! and one odd message must not fail a whole batch.

mod object_key;

use serde::Deserialize;

pub(crate) use object_key::decode_object_key;

use crate::error::{ErrorKind, Result};

/// What happened to an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectChange {
    /// Created or overwritten (`ObjectCreated:*`, `Object Created`).
    Created,
    /// Deleted (`ObjectRemoved:*`, `Object Deleted`).
    Removed,
    /// Anything else (restores, tagging, lifecycle transitions).
    Other,
}

/// One object an event names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectEvent {
    /// The event's own name (`ObjectCreated:Put`, `Object Created`).
    pub event_name: String,
    /// What happened.
    pub change: ObjectChange,
    /// The bucket.
    pub bucket: String,
    /// The object key, decoded (events carry it form-urlencoded).
    pub key: String,
    /// Size in bytes, when given.
    pub size: Option<u64>,
    /// ETag without quotes, when given.
    pub etag: Option<String>,
    /// Version id, when the bucket is versioned.
    pub version_id: Option<String>,
    /// Orders events of one key (hex, compare after padding); when given.
    pub sequencer: Option<String>,
}

/// One queue message's content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notification {
    /// `s3:TestEvent`: S3 checking the notification works. Nothing to do.
    Test,
    /// The objects the message names, in message order.
    Objects(Vec<ObjectEvent>),
}

#[derive(Deserialize)]
struct S3Message {
    #[serde(rename = "Records")]
    records: Option<Vec<S3Record>>,
    #[serde(rename = "Event")]
    event: Option<String>,
    // EventBridge.
    #[serde(rename = "detail-type")]
    detail_type: Option<String>,
    source: Option<String>,
    detail: Option<BridgeDetail>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct S3Record {
    event_name: Option<String>,
    s3: Option<S3Entity>,
}

#[derive(Deserialize)]
struct S3Entity {
    bucket: Named,
    object: S3Object,
}

#[derive(Deserialize)]
struct Named {
    name: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct S3Object {
    key: String,
    size: Option<u64>,
    e_tag: Option<String>,
    version_id: Option<String>,
    sequencer: Option<String>,
}

#[derive(Deserialize)]
struct BridgeDetail {
    bucket: Named,
    object: BridgeObject,
}

#[derive(Deserialize)]
struct BridgeObject {
    key: String,
    size: Option<u64>,
    etag: Option<String>,
    #[serde(rename = "version-id")]
    version_id: Option<String>,
    sequencer: Option<String>,
}

fn invalid(what: impl Into<String>) -> crate::error::Error {
    ErrorKind::InvalidEvent { what: what.into() }.into()
}

fn change_of(event_name: &str) -> ObjectChange {
    if event_name.starts_with("ObjectCreated") || event_name == "Object Created" {
        ObjectChange::Created
    } else if event_name.starts_with("ObjectRemoved") || event_name == "Object Deleted" {
        ObjectChange::Removed
    } else {
        ObjectChange::Other
    }
}

fn unquoted(etag: Option<String>) -> Option<String> {
    etag.map(|e| e.trim_matches('"').to_owned())
        .filter(|e| !e.is_empty())
}

/// An object's fields as both notification shapes carry them: key (encoded), size, ETag,
/// version id, sequencer.
type RawObject = (
    String,
    Option<u64>,
    Option<String>,
    Option<String>,
    Option<String>,
);

fn object_event(
    event_name: Option<String>,
    bucket: String,
    (key, size, etag, version_id, sequencer): RawObject,
) -> std::result::Result<ObjectEvent, String> {
    let event_name = event_name.unwrap_or_default();
    Ok(ObjectEvent {
        change: change_of(&event_name),
        event_name,
        bucket,
        key: decode_object_key(&key)?,
        size,
        etag: unquoted(etag),
        version_id,
        sequencer,
    })
}

/// Parses one message body. A body that is not an object notification is an
/// [`ErrorKind::InvalidEvent`] naming what is wrong: retrying it cannot help.
pub fn parse_notification(body: &str) -> Result<Notification> {
    let message: S3Message =
        serde_json::from_str(body).map_err(|e| invalid(format!("not an S3 notification: {e}")))?;
    if message.event.as_deref() == Some("s3:TestEvent") {
        return Ok(Notification::Test);
    }
    if let Some(records) = message.records {
        let mut out = Vec::with_capacity(records.len());
        for (i, record) in records.into_iter().enumerate() {
            let s3 = record
                .s3
                .ok_or_else(|| invalid(format!("Records[{i}] has no s3 object")))?;
            let o = s3.object;
            let object = (o.key, o.size, o.e_tag, o.version_id, o.sequencer);
            let event = object_event(record.event_name, s3.bucket.name, object)
                .map_err(|e| invalid(format!("Records[{i}]: {e}")))?;
            out.push(event);
        }
        return Ok(Notification::Objects(out));
    }
    if let (Some("aws.s3"), Some(detail)) = (message.source.as_deref(), message.detail) {
        let o = detail.object;
        let object = (o.key, o.size, o.etag, o.version_id, o.sequencer);
        let event = object_event(message.detail_type, detail.bucket.name, object)
            .map_err(|e| invalid(format!("detail: {e}")))?;
        return Ok(Notification::Objects(vec![event]));
    }
    Err(invalid(
        "neither S3 Records, an s3:TestEvent nor an EventBridge aws.s3 event",
    ))
}

#[cfg(test)]
mod tests;
