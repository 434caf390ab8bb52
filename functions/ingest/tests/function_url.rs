//! The function as a function URL invokes it: events in the URL's payload format 2.0 (bodies
//! base64-encoded), through `App::handle`, into a local directory standing for the bucket.

use std::sync::Arc;

use base64::Engine;
use lambda_http::Body;
use proflake::{store::LocalDirStore, store::ObjectStore};
use proflake_ingest::{App, Config};

const OTLP: &[u8] = include_bytes!("../../../samples/otlp/sig-profiling_profile.v1_10.pb");
const TOKEN: &str = "t0ken";

fn app(store: Arc<dyn ObjectStore>) -> Arc<App> {
    let config = Config::from_lookup(|name| match name {
        "PROFLAKE_UPLOAD_BUCKET" => Some("proflake-uploads".into()),
        "PROFLAKE_INGEST_TOKEN" => Some(TOKEN.into()),
        _ => None,
    })
    .unwrap();
    let s3_config = aws_sdk_s3::Config::builder()
        .region(aws_sdk_s3::config::Region::new("eu-west-1"))
        .credentials_provider(aws_sdk_s3::config::Credentials::new(
            "AKIDEXAMPLE",
            "secret",
            None,
            None,
            "test",
        ))
        .behavior_version_latest()
        .build();
    let s3 = aws_sdk_s3::Client::from_conf(s3_config);
    Arc::new(App::new(&config, s3, Some(TOKEN), store))
}

/// A function URL event (payload format 2.0) for `POST path` with `headers` and `body`.
fn event(path: &str, query: &str, headers: &[(&str, &str)], body: &[u8]) -> lambda_http::Request {
    let headers: serde_json::Map<String, serde_json::Value> = headers
        .iter()
        .map(|(k, v)| (k.to_string(), serde_json::Value::from(*v)))
        .collect();
    let event = serde_json::json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": query,
        "headers": headers,
        "requestContext": {
            "accountId": "anonymous",
            "apiId": "abcdefgh",
            "domainName": "abcdefgh.lambda-url.eu-west-1.on.aws",
            "domainPrefix": "abcdefgh",
            "http": {"method": "POST", "path": path, "protocol": "HTTP/1.1",
                     "sourceIp": "127.0.0.1", "userAgent": "test"},
            "requestId": "id", "routeKey": "$default", "stage": "$default",
            "time": "28/Nov/2026:10:00:00 +0000", "timeEpoch": 1795860000000i64
        },
        "body": base64::engine::general_purpose::STANDARD.encode(body),
        "isBase64Encoded": true
    });
    lambda_http::request::from_str(&event.to_string()).unwrap()
}

fn body(response: &lambda_http::Response<Body>) -> Vec<u8> {
    response.body().to_vec()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_otlp_request_through_a_function_url_is_stored_with_its_sidecar() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn ObjectStore> = Arc::new(LocalDirStore::new(dir.path()));
    let app = app(Arc::clone(&store));
    let bearer = format!("Bearer {TOKEN}");
    let request = event(
        "/v1development/profiles",
        "",
        &[
            ("content-type", "application/x-protobuf"),
            ("authorization", &bearer),
        ],
        OTLP,
    );
    let response = app.handle(request).await;
    assert_eq!(
        response.status(),
        200,
        "{:?}",
        String::from_utf8_lossy(&body(&response))
    );
    assert!(
        body(&response).is_empty(),
        "an empty ExportProfilesServiceResponse"
    );
    let uploads = store.list("uploads/otlp/").unwrap();
    assert_eq!(uploads.len(), 1, "{uploads:?}");
    assert_eq!(
        store.get(&uploads[0]).unwrap().unwrap(),
        OTLP,
        "base64 undone, stored as sent"
    );

    let request = event(
        "/v1development/profiles",
        "",
        &[("content-type", "application/x-protobuf")],
        OTLP,
    );
    let response = app.handle(request).await;
    assert_eq!(response.status(), 401);
    assert!(response.headers().contains_key("www-authenticate"));

    let request = event(
        "/ingest",
        "name=shop%7Bregion%3Deu%7D&format=folded",
        &[("authorization", TOKEN)],
        b"main;hot 3\n",
    );
    let response = app.handle(request).await;
    assert_eq!(response.status(), 200);
    let folded = store.list("uploads/pyroscope/shop/").unwrap();
    assert_eq!(folded.len(), 2, "the upload and its sidecar: {folded:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_upload_request_is_answered_with_a_presigned_put() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn ObjectStore> = Arc::new(LocalDirStore::new(dir.path()));
    let app = app(Arc::clone(&store));
    let bearer = format!("Bearer {TOKEN}");
    let request = event(
        "/v1/uploads",
        "",
        &[
            ("content-type", "application/json"),
            ("authorization", &bearer),
        ],
        br#"{"name":"trace.pftrace","service":"checkout","environment":"prod"}"#,
    );
    let response = app.handle(request).await;
    assert_eq!(response.status(), 200);
    let json: serde_json::Value = serde_json::from_slice(&body(&response)).unwrap();
    let key = json["key"].as_str().unwrap();
    assert!(key.starts_with("uploads/direct/checkout/") && key.ends_with("/trace.pftrace"));
    let url = json["url"].as_str().unwrap();
    assert!(
        url.starts_with(
            "https://proflake-uploads.s3.eu-west-1.amazonaws.com/uploads/direct/checkout/"
        ),
        "{url}"
    );
    assert!(
        url.contains("X-Amz-Signature=") && url.contains("X-Amz-Expires=900"),
        "{url}"
    );
    assert!(
        url.contains("x-amz-meta-environment"),
        "the metadata is signed: {url}"
    );
    assert_eq!(json["headers"]["x-amz-meta-service"], "checkout");
    assert!(
        store.list("").unwrap().is_empty(),
        "nothing is written for it"
    );
}
