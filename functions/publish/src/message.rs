//! What arrives on the publish queue, parsed:
//!
//! - S3 notifications of the output bucket (manifests under `converted/`), in any shape
//!   [`proflake::events::parse_notification`] reads, `s3:TestEvent` included;
//! - the schedule's messages, the rule's `Input` verbatim:
//!   `{"source":"proflake.schedule","action":"publish-sweep"}` (publish every key) and
//!   `{"source":"proflake.schedule","action":"compact"}` (compact, checkpoint, vacuum). An
//!   EventBridge event with that source and the action in its `detail` is read the same way.

use proflake::{
    events::parse_notification, events::Notification, events::ObjectEvent, ErrorKind, Result,
};
use serde::Deserialize;

/// Source of the schedule's messages.
pub const SCHEDULE_SOURCE: &str = "proflake.schedule";

/// One message's request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// `s3:TestEvent`: nothing to do.
    Test,
    /// Objects changed in the output bucket.
    Objects(Vec<ObjectEvent>),
    /// Publish every key.
    Sweep,
    /// Compact, checkpoint and vacuum the lake.
    Compact,
}

impl proflake_lambda::Request for Request {
    const NOT_A_REQUEST: &'static str = "message is no request of the publish function";
    const TEST_EVENT: Request = Request::Test;

    fn parse(body: &str) -> Result<Request> {
        parse_request(body)
    }
}

#[derive(Deserialize)]
struct Head {
    source: Option<String>,
    action: Option<String>,
    detail: Option<serde_json::Value>,
}

/// Parses one message body. A body that is none of the above is an
/// [`ErrorKind::InvalidEvent`]: retrying cannot help, so it goes to the dead-letter queue.
pub fn parse_request(body: &str) -> Result<Request> {
    let head: Option<Head> = serde_json::from_str(body).ok();
    if let Some(head) = head.filter(|h| h.source.as_deref() == Some(SCHEDULE_SOURCE)) {
        let detail_action = head
            .detail
            .as_ref()
            .and_then(|d| d.get("action"))
            .and_then(|a| a.as_str());
        return match head.action.as_deref().or(detail_action) {
            Some("publish-sweep") => Ok(Request::Sweep),
            Some("compact") => Ok(Request::Compact),
            other => Err(ErrorKind::InvalidEvent {
                what: format!("schedule message with action {other:?}"),
            }
            .into()),
        };
    }
    Ok(match parse_notification(body)? {
        Notification::Test => Request::Test,
        Notification::Objects(events) => Request::Objects(events),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_messages_and_notifications() {
        assert_eq!(
            parse_request(r#"{"source":"proflake.schedule","action":"publish-sweep"}"#).unwrap(),
            Request::Sweep
        );
        assert_eq!(
            parse_request(r#"{"source":"proflake.schedule","detail":{"action":"compact"}}"#)
                .unwrap(),
            Request::Compact
        );
        let err = parse_request(r#"{"source":"proflake.schedule","action":"sweep"}"#).unwrap_err();
        assert_eq!(err.kind().reason(), "invalid_event");
        assert_eq!(
            parse_request(r#"{"Event":"s3:TestEvent"}"#).unwrap(),
            Request::Test
        );
        let body = r#"{"Records":[{"eventName":"ObjectCreated:Put","s3":{"bucket":{"name":"out"},"object":{"key":"converted/ab/manifest.json","size":10}}}]}"#;
        let Request::Objects(events) = parse_request(body).unwrap() else {
            panic!("objects");
        };
        assert_eq!(events[0].key, "converted/ab/manifest.json");
        assert!(parse_request("{}").is_err());
    }
}
