//! What arrives on the rehydrate queue, parsed:
//!
//! - S3 notifications of the output bucket (`debuginfo/` keys), in any shape
//!   [`proflake::events::parse_notification`] reads, `s3:TestEvent` included;
//! - the scheduled sweep: `{"source":"proflake.schedule","action":"sweep"}`, which is what
//!   EventBridge puts on the queue for the rule's `Input` (verbatim). Also accepted: a rule
//!   without `Input` (the `aws.events` "Scheduled Event" envelope), and an EventBridge event with
//!   source `proflake.schedule` whose `detail` holds `"action":"sweep"` (`aws events
//!   put-events`);
//! - continuations the function sends itself ([`Continuation`]), which an operator may send
//!   too, without `after`, to rehydrate one build ID or everything.

use proflake::{
    events::parse_notification, events::Notification, events::ObjectEvent, ErrorKind, Result,
};
use serde::{Deserialize, Serialize};

/// Source of the schedule's messages.
pub const SCHEDULE_SOURCE: &str = "proflake.schedule";
/// Source of continuation messages.
pub const CONTINUATION_SOURCE: &str = "proflake.rehydrate";

/// Which uploads one page of rehydration looks at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Those whose frames reference one build ID (lowercase).
    BuildId(String),
    /// Every indexed upload.
    Sweep,
}

impl Scope {
    /// `build_id` or `sweep`, for logs and messages.
    pub fn name(&self) -> &'static str {
        match self {
            Scope::BuildId(_) => "build_id",
            Scope::Sweep => "sweep",
        }
    }

    /// The build ID, for a build-ID scope.
    pub fn build_id(&self) -> Option<&str> {
        match self {
            Scope::BuildId(id) => Some(id),
            Scope::Sweep => None,
        }
    }
}

/// One page of rehydration to do: the scope, from the start or after an index key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    /// Which uploads.
    pub scope: Scope,
    /// The index key the previous page ended at.
    pub after: Option<String>,
}

/// One message's request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// `s3:TestEvent`: nothing to do.
    Test,
    /// Objects created (or otherwise changed) in the output bucket.
    Objects(Vec<ObjectEvent>),
    /// A page of rehydration: the sweep, or a continuation.
    Page(Page),
}

/// The continuation message: the rest of a page's scope, after the key it ended at.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Continuation {
    /// [`CONTINUATION_SOURCE`].
    pub source: String,
    /// `continue`.
    pub action: String,
    /// `build_id` or `sweep`.
    pub scope: String,
    /// The build ID, for the `build_id` scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_id: Option<String>,
    /// The index key to list after; absent = from the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

impl Continuation {
    /// The message that continues `scope` after `after`.
    pub fn new(scope: &Scope, after: &str) -> Self {
        Continuation {
            source: CONTINUATION_SOURCE.into(),
            action: "continue".into(),
            scope: scope.name().into(),
            build_id: scope.build_id().map(str::to_owned),
            after: Some(after.into()),
        }
    }

    /// The message body.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("continuation serializes")
    }
}

/// The fields that tell our own messages apart from S3's.
#[derive(Deserialize)]
struct Head {
    source: Option<String>,
    action: Option<String>,
    #[serde(rename = "detail-type")]
    detail_type: Option<String>,
    detail: Option<serde_json::Value>,
}

fn invalid(what: impl Into<String>) -> proflake::Error {
    ErrorKind::InvalidEvent { what: what.into() }.into()
}

impl proflake_lambda::Request for Request {
    const NOT_A_REQUEST: &'static str = "message is no request of the rehydrate function";
    const TEST_EVENT: Request = Request::Test;

    fn parse(body: &str) -> Result<Request> {
        parse_request(body)
    }
}

/// A build ID as keys hold it: hex digits and dashes, lowercased. Anything else (a `/` would
/// widen the listing) is refused.
fn build_id(id: &str) -> Result<String> {
    let ok = (1..=80).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
    if !ok {
        return Err(invalid(format!("{id:?} is not a build ID")));
    }
    Ok(id.to_ascii_lowercase())
}

/// Parses one message body. A body that is none of the above is an
/// [`ErrorKind::InvalidEvent`]: retrying cannot help, so it goes to the dead-letter queue.
pub fn parse_request(body: &str) -> Result<Request> {
    let head: Option<Head> = serde_json::from_str(body).ok();
    let Some(head) = head else {
        return notification(body);
    };
    match head.source.as_deref() {
        Some(SCHEDULE_SOURCE) => {
            let detail_action = head
                .detail
                .as_ref()
                .and_then(|d| d.get("action"))
                .and_then(|a| a.as_str());
            match head.action.as_deref().or(detail_action) {
                Some("sweep") => Ok(Request::Page(Page {
                    scope: Scope::Sweep,
                    after: None,
                })),
                other => Err(invalid(format!("schedule message with action {other:?}"))),
            }
        }
        Some("aws.events") if head.detail_type.as_deref() == Some("Scheduled Event") => {
            Ok(Request::Page(Page {
                scope: Scope::Sweep,
                after: None,
            }))
        }
        Some(CONTINUATION_SOURCE) => {
            let c: Continuation = serde_json::from_str(body)
                .map_err(|e| invalid(format!("not a continuation: {e}")))?;
            if c.action != "continue" {
                return Err(invalid(format!("continuation action {:?}", c.action)));
            }
            let scope = match (c.scope.as_str(), c.build_id.as_deref()) {
                ("sweep", None) => Scope::Sweep,
                ("build_id", Some(id)) => Scope::BuildId(build_id(id)?),
                (scope, id) => {
                    return Err(invalid(format!(
                        "continuation scope {scope:?} with build_id {id:?}"
                    )))
                }
            };
            Ok(Request::Page(Page {
                scope,
                after: c.after.filter(|a| !a.is_empty()),
            }))
        }
        _ => notification(body),
    }
}

fn notification(body: &str) -> Result<Request> {
    Ok(match parse_notification(body)? {
        Notification::Test => Request::Test,
        Notification::Objects(events) => Request::Objects(events),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proflake::events::ObjectChange;

    fn sweep() -> Request {
        Request::Page(Page {
            scope: Scope::Sweep,
            after: None,
        })
    }

    #[test]
    fn the_schedule_raw_or_wrapped_is_a_sweep() {
        // What the rule's Input puts on the queue, verbatim.
        let raw = r#"{"source":"proflake.schedule","action":"sweep"}"#;
        assert_eq!(parse_request(raw).unwrap(), sweep());
        // A rule without Input: EventBridge's own event.
        let scheduled = r#"{"version":"0","id":"5f1c","detail-type":"Scheduled Event",
            "source":"aws.events","account":"123456789012","time":"2026-11-01T00:00:00Z",
            "region":"us-east-1","resources":["arn:aws:events:us-east-1:123456789012:rule/r"],
            "detail":{}}"#;
        assert_eq!(parse_request(scheduled).unwrap(), sweep());
        // aws events put-events --entries Source=proflake.schedule,Detail='{"action":"sweep"}'
        let put = r#"{"version":"0","detail-type":"sweep","source":"proflake.schedule",
            "detail":{"action":"sweep"}}"#;
        assert_eq!(parse_request(put).unwrap(), sweep());
        let other = r#"{"source":"proflake.schedule","action":"purge"}"#;
        assert_eq!(
            parse_request(other).unwrap_err().kind().reason(),
            "invalid_event"
        );
    }

    #[test]
    fn continuations_round_trip() {
        for scope in [Scope::Sweep, Scope::BuildId("abcdef0123456789".into())] {
            let body = Continuation::new(&scope, "index/build-id/ab/cd.json").to_json();
            assert_eq!(
                parse_request(&body).unwrap(),
                Request::Page(Page {
                    scope,
                    after: Some("index/build-id/ab/cd.json".into())
                }),
                "{body}"
            );
        }
        let body = Continuation::new(&Scope::BuildId("ab12".into()), "k").to_json();
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"source":"proflake.rehydrate","action":"continue",
                "scope":"build_id","build_id":"ab12","after":"k"})
        );
        // An operator's request for one build ID, from the start.
        let start = r#"{"source":"proflake.rehydrate","action":"continue","scope":"build_id","build_id":"ABCD1234"}"#;
        assert_eq!(
            parse_request(start).unwrap(),
            Request::Page(Page {
                scope: Scope::BuildId("abcd1234".into()),
                after: None
            })
        );
    }

    #[test]
    fn bad_continuations_are_invalid_events() {
        for body in [
            r#"{"source":"proflake.rehydrate","action":"continue","scope":"build_id"}"#,
            r#"{"source":"proflake.rehydrate","action":"continue","scope":"build_id","build_id":"ab/../cd"}"#,
            r#"{"source":"proflake.rehydrate","action":"continue","scope":"sweep","build_id":"ab12"}"#,
            r#"{"source":"proflake.rehydrate","action":"stop","scope":"sweep"}"#,
            r#"{"source":"proflake.rehydrate","action":"continue","scope":"all"}"#,
            r#"{"source":"proflake.rehydrate","action":"continue","scope":"sweep","after":7}"#,
            r#"not json"#,
            r#"{"hello":"world"}"#,
        ] {
            let err = parse_request(body).unwrap_err();
            assert_eq!(err.kind().reason(), "invalid_event", "{body}");
        }
    }

    #[test]
    fn notifications_and_test_events_pass_through() {
        let test = r#"{"Service":"Amazon S3","Event":"s3:TestEvent","Bucket":"out"}"#;
        assert_eq!(parse_request(test).unwrap(), Request::Test);
        let created = r#"{"Records":[{"eventName":"ObjectCreated:Put","s3":{"bucket":{"name":"out"},
            "object":{"key":"debuginfo/ab12cd34/lib+x.so","size":3}}}]}"#;
        let Request::Objects(events) = parse_request(created).unwrap() else {
            panic!()
        };
        assert_eq!(events[0].key, "debuginfo/ab12cd34/lib x.so");
        assert_eq!(events[0].change, ObjectChange::Created);
    }
}
