//! `proflake serve`'s start-up rules: without a token it serves loopback only, and it refuses
//! any other address; a token file that holds none is refused. (The protocol itself is tested
//! against real clients in tests/ingest/.)

use std::process::Command;

fn serve(args: &[&str], token: Option<&str>) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_proflake"));
    command
        .arg("serve")
        .arg("--store")
        .arg(dir.path())
        .args(args)
        .env_remove("PROFLAKE_INGEST_TOKEN");
    if let Some(token) = token {
        command.env("PROFLAKE_INGEST_TOKEN", token);
    }
    command.output().unwrap()
}

#[test]
fn without_a_token_only_loopback_is_served() {
    for address in ["0.0.0.0:0", "[::]:0", "192.0.2.1:4318"] {
        let out = serve(&["--listen", address], None);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{address}: {stderr}");
        assert!(
            stderr.contains("no token") && stderr.contains("not a loopback address"),
            "{address}: {stderr}"
        );
    }
}

#[test]
fn a_token_file_without_a_token_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("token");
    std::fs::write(&empty, "\n").unwrap();
    let out = serve(
        &[
            "--listen",
            "127.0.0.1:0",
            "--token-file",
            empty.to_str().unwrap(),
        ],
        None,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("holds no token"), "{stderr}");
    // A port already taken is an error naming the address, not a panic.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let out = serve(&["--listen", &address], Some("t"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("cannot listen on {address}")),
        "{stderr}"
    );
}
