//! The HTTP receiver: any route, content type and encoding (chosen by the first byte) with any
//! body, read within a small request limit. Nothing is stored: reading is where requests are
//! checked.
#![no_main]

use libfuzzer_sys::fuzz_target;
use proflake::receive::Receiver;
use proflake::Limits;

const ROUTES: [(&str, &str); 7] = [
    ("/v1development/profiles", "application/x-protobuf"),
    ("/v1development/profiles", "application/json"),
    ("/push.v1.PusherService/Push", "application/proto"),
    ("/push.v1.PusherService/Push", "application/json"),
    (
        "/ingest?name=app%7Bk%3Dv%7D&format=pprof&from=1700000000",
        "application/octet-stream",
    ),
    (
        "/ingest?name=app&format=jfr",
        "multipart/form-data; boundary=X",
    ),
    ("/v1/uploads", "application/json"),
];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let (path, content_type) = ROUTES[usize::from(selector & 0x7f) % ROUTES.len()];
    let mut request = http::Request::builder()
        .method("POST")
        .uri(path)
        .header("content-type", content_type);
    if selector & 0x80 != 0 {
        request = request.header("content-encoding", "gzip");
    }
    let (head, ()) = request.body(()).expect("a valid request").into_parts();
    let limits = Limits {
        max_request_bytes: 1 << 20,
        ..Limits::default()
    };
    let _ = Receiver::new(None, limits).read(&head, body);
});
