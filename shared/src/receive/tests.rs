//! The receiver against a local store: every route, every refusal with nothing stored, retries
//! stored once, and the uploads it writes converted with their metadata.

use std::io::Write;

use base64::Engine;
use http::header::{CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use http::StatusCode;
use proflake_proto::otlp::collector::ExportProfilesServiceResponse;
use proflake_proto::pyroscope::push::v1::{PushRequest, RawProfileSeries, RawSample};
use proflake_proto::pyroscope::types::v1::LabelPair;
use proflake_proto::rpc::Status;
use prost::Message;

use super::*;
use crate::error::{ErrorKind, Result};
use crate::store::{LocalDirStore, ObjectInfo};

const OTLP: &[u8] = include_bytes!("../../../samples/otlp/sig-profiling_profile.v1_10.pb");
const OTLP_JSON: &[u8] =
    include_bytes!("../../../tests/fixtures/otlp/sig-profiling_profile.v1_10.json");
const PPROF_GZ: &[u8] =
    include_bytes!("../../../samples/pprof/google-pprof_report_sample.cpu.pb.gz");
const TOKEN: &str = "s3cret-token";

fn head(path: &str, headers: &[(&str, &str)]) -> Parts {
    let mut request = http::Request::builder().method("POST").uri(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.body(()).unwrap().into_parts().0
}

fn receiver() -> Receiver {
    Receiver::new(Some(TOKEN), Limits::default())
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(bytes), &mut out).unwrap();
    out
}

fn bearer() -> String {
    format!("Bearer {TOKEN}")
}

/// Reads and stores a request, giving the answer and the keys it wrote.
fn post(store: &dyn ObjectStore, head: &Parts, body: &[u8]) -> (Response, Vec<String>) {
    let receiver = receiver();
    match receiver.read(head, body) {
        Ok(accepted) => {
            let stored = receiver.store(store, head, &accepted);
            (stored.response, stored.keys)
        }
        Err(response) => (*response, Vec::new()),
    }
}

fn local() -> (tempfile::TempDir, LocalDirStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalDirStore::new(dir.path());
    (dir, store)
}

fn sidecar(store: &LocalDirStore, key: &str) -> serde_json::Value {
    serde_json::from_slice(&store.get(&sidecar_key(key)).unwrap().unwrap()).unwrap()
}

#[test]
fn an_otlp_request_is_stored_as_received_once_whatever_its_encoding() {
    let (_dir, store) = local();
    let auth = bearer();
    let plain = head(
        "/v1development/profiles",
        &[
            (CONTENT_TYPE.as_str(), "application/x-protobuf"),
            ("authorization", &auth),
        ],
    );
    let (response, keys) = post(&store, &plain, OTLP);
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()[CONTENT_TYPE], "application/x-protobuf");
    let answer = ExportProfilesServiceResponse::decode(&response.body()[..]).unwrap();
    assert_eq!(
        answer.partial_success, None,
        "a full success leaves it unset"
    );
    assert_eq!(keys.len(), 1);
    let key = &keys[0];
    assert!(
        key.starts_with("uploads/otlp/") && key.ends_with(".otlp"),
        "{key}"
    );
    assert_eq!(store.get(key).unwrap().unwrap(), OTLP, "stored as received");

    // The retry, and the same content gzipped on the stable path: the same key.
    let (response, again) = post(&store, &plain, OTLP);
    assert_eq!((response.status(), &again), (StatusCode::OK, &keys));
    let zipped = head(
        "/v1/profiles",
        &[
            ("content-type", "application/x-protobuf"),
            ("content-encoding", "gzip"),
            ("authorization", &auth),
        ],
    );
    let (response, zipped_keys) = post(&store, &zipped, &gzip(OTLP));
    assert_eq!((response.status(), &zipped_keys), (StatusCode::OK, &keys));
    assert_eq!(
        store.list("uploads/").unwrap().len(),
        1 + usize::from(store.exists(&sidecar_key(key)).unwrap())
    );
}

#[test]
fn otlp_json_is_answered_in_json_and_its_resource_names_the_service() {
    let (_dir, store) = local();
    let auth = bearer();
    let json = head(
        "/v1development/profiles",
        &[
            ("content-type", "application/json; charset=utf-8"),
            ("authorization", &auth),
        ],
    );
    let (response, keys) = post(&store, &json, OTLP_JSON);
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()[CONTENT_TYPE], "application/json");
    assert_eq!(response.body(), b"{}");
    assert!(keys[0].ends_with(".otlp.json"), "{keys:?}");

    // A request naming its service, release and environment on its resource: the sidecar says
    // them, and the key's folder is the service.
    let request = serde_json::json!({"resourceProfiles": [{
        "resource": {"attributes": [
            {"key": "service.name", "value": {"stringValue": "../checkout"}},
            {"key": "service.version", "value": {"stringValue": "2.4.1"}},
            {"key": "deployment.environment.name", "value": {"stringValue": "prod"}}]},
        "scopeProfiles": [{"profiles": [{
            "sampleType": {"typeStrindex": 1, "unitStrindex": 2},
            "timeUnixNano": "1700000000000000000",
            "samples": [{"stackIndex": 1, "values": ["7"]}]}]}]}],
        "dictionary": {
            "stringTable": ["", "samples", "count", "main"],
            "functionTable": [{}, {"nameStrindex": 3}],
            "locationTable": [{}, {"lines": [{"functionIndex": 1}]}],
            "stackTable": [{}, {"locationIndices": [1]}],
            "mappingTable": [{}], "linkTable": [{}], "attributeTable": [{}]}
    });
    let body = serde_json::to_vec(&request).unwrap();
    let (response, keys) = post(&store, &json, &body);
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "{:?}",
        String::from_utf8_lossy(response.body())
    );
    assert!(
        keys[0].starts_with("uploads/otlp/..%2Fcheckout/"),
        "{keys:?}"
    );
    let meta = sidecar(&store, &keys[0]);
    assert_eq!(meta["service"], "../checkout");
    assert_eq!(meta["release"], "2.4.1");
    assert_eq!(meta["environment"], "prod");
}

#[test]
fn an_empty_otlp_request_succeeds_and_stores_nothing() {
    let (_dir, store) = local();
    let auth = bearer();
    for (content_type, body) in [
        ("application/x-protobuf", &b""[..]),
        ("application/json", b"{}"),
    ] {
        let h = head(
            "/v1development/profiles",
            &[("content-type", content_type), ("authorization", &auth)],
        );
        let (response, keys) = post(&store, &h, body);
        assert_eq!(response.status(), StatusCode::OK, "{content_type}");
        assert!(keys.is_empty());
    }
    assert!(store.list("").unwrap().is_empty());
}

#[test]
fn refusals_carry_a_status_body_and_store_nothing() {
    let (_dir, store) = local();
    let auth = bearer();
    let protobuf = [
        ("content-type", "application/x-protobuf"),
        ("authorization", auth.as_str()),
    ];
    let cases: Vec<(Parts, Vec<u8>, StatusCode)> = vec![
        // Not the declared message.
        (
            head("/v1development/profiles", &protobuf),
            b"\xff\xff\xff not protobuf".to_vec(),
            StatusCode::BAD_REQUEST,
        ),
        // Declared gzip, but not gzip.
        (
            head(
                "/v1development/profiles",
                &[protobuf[0], protobuf[1], ("content-encoding", "gzip")],
            ),
            OTLP.to_vec(),
            StatusCode::BAD_REQUEST,
        ),
        // Another content type, and an encoding the receiver does not undo.
        (
            head(
                "/v1development/profiles",
                &[("content-type", "text/plain"), protobuf[1]],
            ),
            OTLP.to_vec(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        (
            head(
                "/v1development/profiles",
                &[protobuf[0], protobuf[1], ("content-encoding", "br")],
            ),
            OTLP.to_vec(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        // No token, a wrong one.
        (
            head("/v1development/profiles", &protobuf[..1]),
            OTLP.to_vec(),
            StatusCode::UNAUTHORIZED,
        ),
        (
            head(
                "/v1development/profiles",
                &[protobuf[0], ("authorization", "Bearer wrong")],
            ),
            OTLP.to_vec(),
            StatusCode::UNAUTHORIZED,
        ),
    ];
    for (h, body, status) in cases {
        let (response, keys) = post(&store, &h, &body);
        assert_eq!(response.status(), status, "{:?}", h.headers);
        assert!(keys.is_empty());
        let message = Status::decode(&response.body()[..]).unwrap().message;
        assert!(!message.is_empty(), "{status}: the Status says why");
        if status == StatusCode::UNAUTHORIZED {
            assert_eq!(
                response.headers().get_all(WWW_AUTHENTICATE).iter().count(),
                2
            );
        }
    }
    let mut get = head("/v1development/profiles", &protobuf);
    get.method = http::Method::GET;
    let (response, _) = post(&store, &get, b"");
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(response.headers()["allow"], "POST");
    let (response, _) = post(&store, &head("/v1/traces", &protobuf), OTLP);
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert!(store.list("").unwrap().is_empty(), "nothing stored");
}

#[test]
fn the_token_is_taken_as_bearer_bare_or_basic_password() {
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("demo.app:{TOKEN}"))
    );
    let wrong_basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{TOKEN}:nope"))
    );
    let receiver = receiver();
    for (authorization, accepted) in [
        (format!("Bearer {TOKEN}"), true),
        (format!("bearer   {TOKEN}"), true),
        (TOKEN.to_string(), true),
        (basic, true),
        (wrong_basic, false),
        (format!("Bearer {TOKEN}x"), false),
        (String::new(), false),
    ] {
        let h = head(
            "/v1development/profiles",
            &[
                ("content-type", "application/x-protobuf"),
                ("authorization", &authorization),
            ],
        );
        let status = match receiver.read(&h, b"") {
            Ok(_) => StatusCode::OK,
            Err(response) => response.status(),
        };
        let expected = if accepted {
            StatusCode::OK
        } else {
            StatusCode::UNAUTHORIZED
        };
        assert_eq!(status, expected, "{authorization:?}");
    }
    // Without a token configured, none is asked for.
    let open = Receiver::new(None, Limits::default());
    let h = head(
        "/v1development/profiles",
        &[("content-type", "application/x-protobuf")],
    );
    assert!(open.read(&h, b"").is_ok());
}

#[test]
fn bodies_past_max_request_bytes_are_refused_413_sent_or_inflated() {
    let h = head(
        "/v1development/profiles",
        &[
            ("content-type", "application/x-protobuf"),
            ("content-encoding", "gzip"),
        ],
    );
    let refused = |limits: Limits, body: &[u8]| {
        let response = *Receiver::new(None, limits).read(&h, body).unwrap_err();
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
        Status::decode(&response.body()[..]).unwrap().message
    };
    // 64 MiB of zeros, about 64 KiB gzipped: a bomb stopped by the ratio limit, and by the
    // size limit where the ratio would let it through; either way while it inflates.
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..64 {
        encoder.write_all(&zeros).unwrap();
    }
    let bomb = encoder.finish().unwrap();
    assert!(refused(Limits::default(), &bomb).contains("max_decompression_ratio"));
    let ratio_off = Limits {
        max_decompression_ratio: u64::MAX,
        max_request_bytes: 4 << 20,
        ..Limits::default()
    };
    assert!(refused(ratio_off, &bomb).contains("max_request_bytes"));
    // A body larger than the limit as sent, and the answer a front end gives before reading.
    let tiny = Limits {
        max_request_bytes: 1000,
        ..Limits::default()
    };
    assert!(refused(tiny.clone(), &gzip(OTLP)).contains("max_request_bytes"));
    let front = Receiver::new(None, tiny);
    assert_eq!(front.max_body_bytes(), 1000);
    assert_eq!(front.too_large(&h).status(), StatusCode::PAYLOAD_TOO_LARGE);
}

/// A store that fails every write.
struct Down;

impl ObjectStore for Down {
    fn get(&self, _: &str) -> Result<Option<Vec<u8>>> {
        Ok(None)
    }
    fn get_object(&self, _: &str, _: u64) -> Result<Option<(Vec<u8>, ObjectInfo)>> {
        Ok(None)
    }
    fn exists(&self, _: &str) -> Result<bool> {
        Ok(false)
    }
    fn put(&self, key: &str, _: &[u8]) -> Result<()> {
        Err(ErrorKind::Storage { key: key.into() }.into())
    }
    fn delete(&self, _: &str) -> Result<()> {
        Ok(())
    }
    fn list(&self, _: &str) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
}

#[test]
fn a_failing_store_is_answered_503_with_retry_after() {
    let auth = bearer();
    let h = head(
        "/v1development/profiles",
        &[
            ("content-type", "application/x-protobuf"),
            ("authorization", &auth),
        ],
    );
    let (response, keys) = post(&Down, &h, OTLP);
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(response.headers()[RETRY_AFTER], "1");
    assert!(keys.is_empty());
    let busy = receiver().busy(&h, 5);
    assert_eq!(
        (busy.status(), &busy.headers()[RETRY_AFTER]),
        (StatusCode::SERVICE_UNAVAILABLE, &http::HeaderValue::from(5))
    );
}

fn push_request(raw: &[u8]) -> PushRequest {
    let label = |name: &str, value: &str| LabelPair {
        name: name.into(),
        value: value.into(),
    };
    PushRequest {
        series: vec![RawProfileSeries {
            labels: vec![
                label("__name__", "process_cpu"),
                label("service_name", "demo.app"),
                label("region", "eu"),
            ],
            samples: vec![
                RawSample {
                    raw_profile: raw.to_vec(),
                    id: String::new(),
                },
                RawSample {
                    raw_profile: gzip(&gunzip(raw)),
                    id: String::new(),
                },
            ],
        }],
    }
}

#[test]
fn a_pyroscope_push_stores_each_profile_with_the_series_labels() {
    let (_dir, store) = local();
    let auth = bearer();
    let h = head(
        "/push.v1.PusherService/Push",
        &[
            ("content-type", "application/proto"),
            ("content-encoding", "gzip"),
            ("authorization", &auth),
        ],
    );
    let body = gzip(&push_request(PPROF_GZ).encode_to_vec());
    let (response, keys) = post(&store, &h, &body);
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()[CONTENT_TYPE], "application/proto");
    assert!(response.body().is_empty(), "an empty PushResponse");
    assert_eq!(keys.len(), 2, "{keys:?}");
    for key in &keys {
        assert!(key.starts_with("uploads/pyroscope/demo.app/") && key.ends_with(".pprof"));
        let meta = sidecar(&store, key);
        assert_eq!(meta["service"], "demo.app");
        assert_eq!(
            meta["labels"],
            serde_json::json!({"profile_type": "process_cpu", "region": "eu"})
        );
    }
    let (_, again) = post(&store, &h, &body);
    assert_eq!(again, keys, "a retry writes the same keys");

    // The same push in Connect's JSON.
    let json = serde_json::json!({"series": [{
        "labels": [{"name": "service_name", "value": "demo.app"}, {"name": "region", "value": "us"}],
        "samples": [{"rawProfile": base64::engine::general_purpose::STANDARD.encode(PPROF_GZ), "ID": "x"}]}]});
    let h = head(
        "/push.v1.PusherService/Push",
        &[
            ("content-type", "application/json"),
            ("authorization", &auth),
        ],
    );
    let (response, keys) = post(&store, &h, &serde_json::to_vec(&json).unwrap());
    assert_eq!(
        (response.status(), response.body().as_slice()),
        (StatusCode::OK, &b"{}"[..])
    );
    assert_eq!(keys.len(), 1);

    // One profile that is no pprof refuses the push whole, in Connect's error JSON.
    let mut bad = push_request(PPROF_GZ);
    bad.series[0].samples[1].raw_profile = b"not a profile".to_vec();
    let h = head(
        "/push.v1.PusherService/Push",
        &[
            ("content-type", "application/proto"),
            ("authorization", &auth),
        ],
    );
    let (response, keys) = post(&store, &h, &bad.encode_to_vec());
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let error: serde_json::Value = serde_json::from_slice(response.body()).unwrap();
    assert_eq!(error["code"], "invalid_argument");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("series 0 profile 1"),
        "{error}"
    );
    assert!(keys.is_empty());
}

#[test]
fn the_ingest_api_takes_folded_lines_pprof_and_jfr() {
    let (_dir, store) = local();
    let auth = bearer();
    let query = "/ingest?name=shop.cpu%7Benv%3Dstaging%2Cregion%3Dus%7D&from=1700000000&until=1700000010&sampleRate=100&spyName=pyspy";
    let h = head(query, &[("authorization", &auth)]);
    let (response, keys) = post(&store, &h, b"main;work;hot 3\nmain;idle 1\n");
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "{:?}",
        String::from_utf8_lossy(response.body())
    );
    assert!(keys[0].starts_with("uploads/pyroscope/shop.cpu/") && keys[0].ends_with(".folded"));
    let meta = sidecar(&store, &keys[0]);
    assert_eq!(meta["service"], "shop.cpu");
    assert_eq!(meta["timestamp"], 1_700_000_000.0);
    assert_eq!(meta["sample_rate_hz"], 100);
    let labels = serde_json::json!({"env": "staging", "region": "us", "spy_name": "pyspy"});
    assert_eq!(meta["labels"], labels);

    let lines = head(
        "/ingest?name=shop&format=lines",
        &[("authorization", &auth)],
    );
    let (response, keys) = post(&store, &lines, b"main;work\nmain;work\n\n");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        store.get(&keys[0]).unwrap().unwrap(),
        b"main;work 1\nmain;work 1\n"
    );

    // pprof and JFR as multipart form parts, as the Java agent sends them.
    let multipart = |part: &str, bytes: &[u8]| {
        let mut body = Vec::new();
        for (name, content) in [(part, bytes), ("labels", &b""[..])] {
            body.extend_from_slice(b"--XyZ\r\nContent-Disposition: form-data; name=\"");
            body.extend_from_slice(name.as_bytes());
            body.extend_from_slice(b"\"; filename=\"");
            body.extend_from_slice(name.as_bytes());
            body.extend_from_slice(b"\"\r\nContent-Type: application/octet-stream\r\n\r\n");
            body.extend_from_slice(content);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(b"--XyZ--\r\n");
        body
    };
    let form = [
        ("content-type", "multipart/form-data; boundary=XyZ"),
        ("authorization", auth.as_str()),
    ];
    let (response, keys) = post(
        &store,
        &head("/ingest?name=shop&format=pprof", &form),
        &multipart("profile", PPROF_GZ),
    );
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "{:?}",
        String::from_utf8_lossy(response.body())
    );
    assert_eq!(store.get(&keys[0]).unwrap().unwrap(), PPROF_GZ);
    let jfr = include_bytes!("../../../tests/fixtures/jfr/jdk17.jfr");
    let (response, keys) = post(
        &store,
        &head("/ingest?name=shop&format=jfr", &form),
        &multipart("jfr", jfr),
    );
    assert_eq!(response.status(), StatusCode::OK);
    assert!(keys[0].ends_with(".jfr"));
    assert_eq!(store.get(&keys[0]).unwrap().unwrap(), jfr);
    let (response, _) = post(
        &store,
        &head("/ingest?name=shop&format=jfr", &form),
        &multipart("jfr", b"FLR\0\x00\x02\x00\x01 cut short"),
    );
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);

    for (path, body, status) in [
        (
            "/ingest?format=folded",
            &b"a 1\n"[..],
            StatusCode::BAD_REQUEST,
        ),
        ("/ingest?name=shop{env=x", b"a 1\n", StatusCode::BAD_REQUEST),
        (
            "/ingest?name=shop&format=trie",
            b"a 1\n",
            StatusCode::BAD_REQUEST,
        ),
        (
            "/ingest?name=shop&format=pprof",
            b"not pprof",
            StatusCode::BAD_REQUEST,
        ),
        (
            "/ingest?name=shop&from=soon",
            b"a 1\n",
            StatusCode::BAD_REQUEST,
        ),
        (
            "/ingest?name=shop&sampleRate=0",
            b"a 1\n",
            StatusCode::BAD_REQUEST,
        ),
    ] {
        let (response, keys) = post(&store, &head(path, &[("authorization", &auth)]), body);
        assert_eq!(response.status(), status, "{path}");
        assert!(keys.is_empty() && !response.body().is_empty(), "{path}");
    }
}

#[test]
fn an_upload_request_names_a_key_and_metadata_for_a_presigned_put() {
    let auth = bearer();
    let h = head(
        "/v1/uploads",
        &[
            ("content-type", "application/json"),
            ("authorization", &auth),
        ],
    );
    let body = br#"{"name":"../big trace.pftrace","service":"checkout","release":"1.2"}"#;
    let receiver = receiver();
    let first = receiver.read(&h, body).unwrap();
    let second = receiver.read(&h, body).unwrap();
    let (a, b) = (
        first.direct_upload().unwrap(),
        second.direct_upload().unwrap(),
    );
    assert!(a.key.starts_with("uploads/direct/checkout/"), "{}", a.key);
    assert!(a.key.ends_with("/..%2Fbig%20trace.pftrace"), "{}", a.key);
    assert_ne!(a.key, b.key, "each request gets a key of its own");
    let metadata = vec![
        ("service".to_string(), "checkout".to_string()),
        ("release".to_string(), "1.2".to_string()),
    ];
    assert_eq!(a.metadata, metadata);
    let reply = direct_upload_reply(a, "https://bucket/presigned", 900);
    let json: serde_json::Value = serde_json::from_slice(reply.body()).unwrap();
    assert_eq!(json["headers"]["x-amz-meta-release"], "1.2");
    assert_eq!(
        (json["method"].as_str(), json["expires_in"].as_u64()),
        (Some("PUT"), Some(900))
    );

    // A local store hands out no URLs; bad requests are refused in JSON.
    let (_dir, store) = local();
    let stored = receiver.store(&store, &h, &first);
    assert_eq!(stored.response.status(), StatusCode::NOT_IMPLEMENTED);
    for bad in [
        &br#"{"name":""}"#[..],
        br#"{"nam":"x"}"#,
        br#"{"name":"x","release":"caf\u00e9"}"#,
    ] {
        let refused = receiver.read(&h, bad).unwrap_err();
        assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
        let json: serde_json::Value = serde_json::from_slice(refused.body()).unwrap();
        assert!(json["error"].as_str().is_some());
    }
    assert!(store.list("").unwrap().is_empty());
}

/// The Java agent's `labels` part beside a JFR recording: a `LabelsSnapshot` (here gzipped)
/// whose contexts land in the sidecar by context id.
#[test]
fn a_jfr_uploads_labels_snapshot_goes_into_its_sidecar() {
    let (_dir, store) = local();
    let auth = bearer();
    // LabelsSnapshot{contexts: {7: {labels: {1: 2}}}, strings: {1: "span", 2: "checkout"}},
    // written field by field.
    let context = [0x0a, 0x04, 0x08, 0x01, 0x10, 0x02]; // labels entry {1: 2}
    let mut contexts_entry = vec![0x08, 0x07, 0x12, context.len() as u8];
    contexts_entry.extend_from_slice(&context);
    let mut snapshot = vec![0x0a, contexts_entry.len() as u8];
    snapshot.extend_from_slice(&contexts_entry);
    for (id, text) in [(1u8, "span"), (2, "checkout")] {
        snapshot.extend_from_slice(&[0x12, 4 + text.len() as u8, 0x08, id, 0x12, text.len() as u8]);
        snapshot.extend_from_slice(text.as_bytes());
    }
    let labels = crate::formats::read_labels_snapshot(&snapshot, &Limits::default()).unwrap();
    assert_eq!(labels["7"]["span"], "checkout");
    let jfr = include_bytes!("../../../tests/fixtures/jfr/jdk17.jfr");
    let mut body = Vec::new();
    for (name, content) in [("jfr", jfr.to_vec()), ("labels", gzip(&snapshot))] {
        body.extend_from_slice(b"--XyZ\r\nContent-Disposition: form-data; name=\"");
        body.extend_from_slice(name.as_bytes());
        body.extend_from_slice(b"\"\r\nContent-Type: application/octet-stream\r\n\r\n");
        body.extend_from_slice(&content);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(b"--XyZ--\r\n");
    let form = [
        ("content-type", "multipart/form-data; boundary=XyZ"),
        ("authorization", auth.as_str()),
    ];
    let (response, keys) = post(&store, &head("/ingest?name=shop&format=jfr", &form), &body);
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "{:?}",
        String::from_utf8_lossy(response.body())
    );
    let meta = sidecar(&store, &keys[0]);
    assert_eq!(
        meta["context_labels"],
        serde_json::json!({"7": {"span": "checkout"}})
    );
}
