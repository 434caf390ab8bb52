//! `proflake symbols add|list` and `proflake rehydrate` on a bucket directory, with a library
//! gcc builds inside the test.

use std::fs;

use proflake_tests::native::build;
use proflake_tests::native_profiles::{addresses, otlp_request};

mod common;

use common::{proflake, text};

#[test]
fn symbols_add_names_the_frames_of_converted_uploads_and_rehydrate_is_idempotent() {
    let lib = build("libwork.so", &[]);
    let a = addresses(&lib);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("bucket");
    let profile = dir.path().join("work.otlp.json");
    fs::write(&profile, otlp_request(&lib, &a)).unwrap();
    let store_arg = store.to_str().unwrap();

    // `--store` and `--out` name the same directory for convert.
    let out = proflake(&[
        "convert",
        profile.to_str().unwrap(),
        "--store",
        store_arg,
        "--release",
        "work@1.0",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let svg_before = dir.path().join("before.svg");
    let out = proflake(&[
        "flamegraph",
        "--store",
        store_arg,
        "-o",
        svg_before.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let before = fs::read_to_string(&svg_before).unwrap();
    assert!(!before.contains(">fold"), "no names before symbols");

    let out = proflake(&[
        "symbols",
        "add",
        lib.path.to_str().unwrap(),
        "--store",
        store_arg,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains(&lib.build_id), "{stdout}");
    assert!(stdout.contains("Inlines"), "{stdout}");
    let frames = a.leaves.len() + 1;
    assert!(
        stdout.contains(&format!(
            "1 upload(s) looked at, 1 reconverted, 0 up to date, {frames} frame(s) symbolized"
        )),
        "{stdout}"
    );
    assert!(store
        .join(format!("debuginfo/{}/libwork.so", lib.build_id))
        .is_file());

    // The rehydration kept the metadata given to convert (it is the upload's sidecar now).
    let chunks = fs::read_dir(store.join("converted"))
        .unwrap()
        .flat_map(|d| {
            fs::read_dir(d.unwrap().path().join("sample-v2"))
                .into_iter()
                .flatten()
        })
        .map(|f| fs::read(f.unwrap().path()).unwrap())
        .collect::<Vec<_>>();
    assert!(!chunks.is_empty());
    for chunk in chunks {
        let doc: serde_json::Value = serde_json::from_slice(&chunk).unwrap();
        assert_eq!(doc["release"], "work@1.0");
        assert!(
            doc.to_string().contains("\"function\":\"fold\""),
            "named frames"
        );
    }

    let out = proflake(&["symbols", "list", "--store", store_arg]);
    assert!(out.status.success());
    let listed = text(&out.stdout);
    assert_eq!(listed.lines().count(), 1, "{listed}");
    assert!(listed.starts_with(&lib.build_id), "{listed}");

    // The flame graph drawn from the tables now has the functions, the inlined one too.
    let svg = dir.path().join("after.svg");
    let out = proflake(&[
        "flamegraph",
        "--store",
        store_arg,
        "-o",
        svg.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let after = fs::read_to_string(&svg).unwrap();
    for name in ["fold", "work", "outer"] {
        assert!(after.contains(name), "{name} in the flame graph");
    }

    let out = proflake(&["rehydrate", "--store", store_arg]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("1 upload(s) looked at, 0 reconverted, 1 up to date"),
        "{}",
        text(&out.stdout)
    );
    let out = proflake(&["rehydrate", "--store", store_arg, "--all"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains(&format!("1 reconverted, 0 up to date, {frames} frame(s)")),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn symbols_add_refuses_what_is_no_debug_file_and_says_which() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.bin");
    fs::write(&junk, b"not an object file at all").unwrap();
    let store = dir.path().join("bucket");
    let out = proflake(&[
        "symbols",
        "add",
        junk.to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("junk.bin"), "{stderr}");
    assert!(stderr.contains("not a debug file"), "{stderr}");
}
