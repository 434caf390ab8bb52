use super::*;

/// A record as moto delivers it over SQS: no `userIdentity`, no `requestParameters`, `/`
/// encoded as `%2F`.
const MOTO: &str = r#"{"Records": [{"eventVersion": "2.1", "eventSource": "aws:s3",
 "awsRegion": "us-east-1", "eventTime": "2026-11-22T10:00:00.000Z",
 "eventName": "ObjectCreated:Put",
 "s3": {"s3SchemaVersion": "1.0", "configurationId": "convert",
        "bucket": {"name": "profiles", "arn": "arn:aws:s3:::profiles"},
        "object": {"key": "uploads%2Fmy+profile%2B1.pb.gz", "size": 1234,
                   "eTag": "\"d41d8cd98f00b204e9800998ecf8427e\"", "sequencer": "0055AED6DCD90281E5"}}},
 {"eventName": "ObjectRemoved:Delete",
  "s3": {"bucket": {"name": "profiles"}, "object": {"key": "uploads/old.pftrace"}}}]}"#;

#[test]
fn moto_records_with_encoded_keys() {
    let Notification::Objects(events) = parse_notification(MOTO).unwrap() else {
        panic!("objects expected");
    };
    assert_eq!(events.len(), 2);
    assert_eq!(events[0].key, "uploads/my profile+1.pb.gz");
    assert_eq!(events[0].bucket, "profiles");
    assert_eq!(events[0].change, ObjectChange::Created);
    assert_eq!(events[0].size, Some(1234));
    assert_eq!(
        events[0].etag.as_deref(),
        Some("d41d8cd98f00b204e9800998ecf8427e")
    );
    assert_eq!(events[0].sequencer.as_deref(), Some("0055AED6DCD90281E5"));
    assert_eq!(events[1].change, ObjectChange::Removed);
    assert_eq!(events[1].etag, None);
}

#[test]
fn test_event_is_recognized() {
    let body = r#"{"Service":"Amazon S3","Event":"s3:TestEvent","Time":"2026-11-22T10:00:00.000Z",
                   "Bucket":"profiles","RequestId":"X","HostId":"Y"}"#;
    assert_eq!(parse_notification(body).unwrap(), Notification::Test);
}

#[test]
fn eventbridge_object_created() {
    let body = r#"{"version":"0","id":"17793124-05d4-b198-2fde-7ededc63b103",
      "detail-type":"Object Created","source":"aws.s3","account":"111122223333",
      "time":"2026-11-22T00:00:00Z","region":"ca-central-1","resources":["arn:aws:s3:::profiles"],
      "detail":{"version":"0","bucket":{"name":"profiles"},
                "object":{"key":"uploads/trace%20one.pftrace","size":5,"etag":"b1946ac92492d2347c6235b4d2611184",
                          "version-id":"IYV3p45BT0ac8hjHg1houSdS1a.Mro8e","sequencer":"617f08299329d189"},
                "request-id":"N4N7GDK58NMKJ12R","requester":"123456789012","reason":"PutObject"}}"#;
    let Notification::Objects(events) = parse_notification(body).unwrap() else {
        panic!("objects expected");
    };
    assert_eq!(events.len(), 1);
    let e = &events[0];
    assert_eq!(e.key, "uploads/trace one.pftrace");
    assert_eq!(e.change, ObjectChange::Created);
    assert_eq!(
        e.version_id.as_deref(),
        Some("IYV3p45BT0ac8hjHg1houSdS1a.Mro8e")
    );
}

#[test]
fn what_is_not_a_notification_is_a_typed_error() {
    for body in [
        "",
        "not json",
        "{}",
        r#"{"Records": [{"eventName": "ObjectCreated:Put"}]}"#,
        r#"{"Records": [{"s3": {"bucket": {"name": "b"}, "object": {"key": "%FF"}}}]}"#,
        r#"{"Records": [{"s3": {"bucket": {"name": "b"}, "object": {"key": ""}}}]}"#,
        r#"{"source": "aws.ec2", "detail": {"bucket": {"name": "b"}, "object": {"key": "k"}}}"#,
    ] {
        let err = parse_notification(body).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::InvalidEvent { .. }),
            "{body}: {err}"
        );
        assert!(!err.kind().is_transient(), "{body}");
    }
}

#[test]
fn keys_decode_like_s3_encodes_them() {
    assert_eq!(decode_object_key("a+b%2Bc").unwrap(), "a b+c");
    assert_eq!(decode_object_key("caf%C3%A9%2Fx").unwrap(), "café/x");
    assert_eq!(decode_object_key("plain/key.pb").unwrap(), "plain/key.pb");
}
