//! `--store s3://BUCKET[/PREFIX]` of the reading commands against a real S3 API: a moto server
//! started as the end-to-end tests start theirs. Two samples are converted into a directory,
//! its landing tables copied under a prefix of a bucket and published into the bucket's lake
//! there; `export`, `flamegraph` and `compare` then give the same bytes from the bucket as from
//! the directory, from either tier. Another directory's tables at the bucket's root show that
//! the prefix is what selects the tables.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use aws_sdk_s3::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_s3::primitives::ByteStream;
use proflake::lake::{Lake, LakeSettings, PublishScope};
use proflake::{store::PrefixedStore, store::S3Store};
use proflake_tests::moto::Moto;

mod common;

use common::{proflake, repo, text};

const REGION: &str = "us-east-1";
const BUCKET: &str = "proflake-outputs";
/// The functions' `PROFLAKE_OUTPUT_PREFIX` for `s3://proflake-outputs/env/dev`.
const PREFIX: &str = "env/dev/";
const URL: &str = "s3://proflake-outputs/env/dev";

/// The binary with the standard AWS environment pointed at moto, and nothing of the user's
/// own AWS set-up.
fn proflake_command(moto: &Moto) -> Command {
    // Empty, so that no profile or credentials of the user's own apply.
    let none = Path::new("/dev/null");
    let mut command = Command::new(env!("CARGO_BIN_EXE_proflake"));
    command
        .env("AWS_ENDPOINT_URL", &moto.endpoint)
        .env("AWS_REGION", REGION)
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_CONFIG_FILE", none)
        .env("AWS_SHARED_CREDENTIALS_FILE", none)
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_SESSION_TOKEN")
        .env_remove("AWS_ENDPOINT_URL_S3");
    command
}

/// Runs the binary with `args` against moto.
fn proflake_on(moto: &Moto, args: &[&str]) -> Output {
    proflake_command(moto)
        .args(args)
        .output()
        .expect("proflake runs")
}

fn succeeded(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what}: {:?}\n{}",
        out.status,
        text(&out.stderr)
    );
}

/// Converts `file` into `dir` as release `release` of service `shop`, without a lake.
fn convert(dir: &Path, file: &str, release: &str) {
    let (file, dir) = (repo(file), dir.to_str().unwrap().to_owned());
    let out = proflake(&[
        "convert",
        file.to_str().unwrap(),
        "--out",
        &dir,
        "--service",
        "shop",
        "--release",
        release,
        "--no-publish",
    ]);
    succeeded("convert", &out);
}

/// Every file under `dir`, as (key relative to `dir`, path).
fn files(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(next) = todo.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                let key = path.strip_prefix(dir).unwrap().to_str().unwrap();
                out.push((key.to_owned(), path.clone()));
            }
        }
    }
    out
}

/// A client of moto with the test's credentials.
fn s3_client(moto: &Moto) -> aws_sdk_s3::Client {
    let config = aws_sdk_s3::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(REGION))
        .credentials_provider(Credentials::new("test", "test", None, None, "test"))
        .endpoint_url(&moto.endpoint)
        .force_path_style(true)
        .build();
    aws_sdk_s3::Client::from_conf(config)
}

/// Copies `dir`'s objects into the bucket under `prefix`, its lake left behind.
async fn upload_tree(s3: &aws_sdk_s3::Client, dir: &Path, prefix: &str) {
    for (key, path) in files(dir) {
        if key.starts_with("lake/") {
            continue;
        }
        s3.put_object()
            .bucket(BUCKET)
            .key(format!("{prefix}{key}"))
            .body(ByteStream::from(std::fs::read(&path).unwrap()))
            .send()
            .await
            .unwrap_or_else(|e| panic!("put {key}: {e:?}"));
    }
}

/// Publishes the landing tables under [`PREFIX`] into the bucket's lake there, as the publish
/// function does.
fn publish_in_bucket(moto: &Moto, s3: aws_sdk_s3::Client, runtime: &tokio::runtime::Runtime) {
    let handle = runtime.handle().clone();
    let store = PrefixedStore::wrap(Arc::new(S3Store::new(s3, BUCKET, handle.clone())), PREFIX);
    let mut options = Lake::s3_options(Some(&moto.endpoint));
    options.insert("AWS_ACCESS_KEY_ID".into(), "test".into());
    options.insert("AWS_SECRET_ACCESS_KEY".into(), "test".into());
    options.insert("AWS_REGION".into(), REGION.into());
    let lake = Lake::s3(BUCKET, PREFIX, options, handle, LakeSettings::default()).unwrap();
    let report = lake
        .publish(store.as_ref(), store.as_ref(), &PublishScope::All)
        .unwrap();
    assert_eq!((report.published, report.quarantined.len()), (2, 0));
}

/// The bytes a command writes to `out` from `store`, and the last line it says on stderr up
/// to the name of the file written.
fn written(moto: &Moto, store: &str, out: &Path, args: &[&str]) -> (Vec<u8>, String) {
    let mut all = args.to_vec();
    all.extend(["--store", store, "-o", out.to_str().unwrap()]);
    let run = proflake_on(moto, &all);
    succeeded(&format!("{all:?}"), &run);
    let said = text(&run.stderr);
    let last = said.lines().last().unwrap_or_default();
    let said = last.split(" -> ").next().unwrap().to_owned();
    (std::fs::read(out).unwrap(), said)
}

/// `export`, `flamegraph` and `compare` of `tier` give the same from [`URL`] as from the
/// directory `local`.
fn same_as_directory(moto: &Moto, tmp: &Path, local: &str, tier: &str) {
    let out = |name: &str| tmp.join(format!("{tier}-{name}"));
    let pprof = ["export", "--format", "pprof", "--tier", tier];
    let (from_dir, said_dir) = written(moto, local, &out("dir.pb.gz"), &pprof);
    let (from_s3, said_s3) = written(moto, URL, &out("s3.pb.gz"), &pprof);
    assert!(said_dir.contains("of 2 upload(s)"), "{said_dir}");
    assert_eq!(said_s3, said_dir, "{tier}: the totals differ");
    assert!(from_s3 == from_dir, "{tier}: the pprof bytes differ");

    let flame = ["flamegraph", "--title", "t", "--tier", tier];
    let (svg_dir, said_dir) = written(moto, local, &out("dir.svg"), &flame);
    let (svg_s3, said_s3) = written(moto, URL, &out("s3.svg"), &flame);
    assert_eq!(said_s3, said_dir);
    assert!(svg_s3 == svg_dir, "{tier}: the flame graphs differ");

    let compare = |store: &str| {
        let run = proflake_on(
            moto,
            &[
                "compare",
                "--store",
                store,
                "--tier",
                tier,
                "--service",
                "shop",
                "--base",
                "1.0",
                "--head",
                "1.1",
                "--json",
            ],
        );
        succeeded("compare", &run);
        serde_json::from_slice::<serde_json::Value>(&run.stdout).unwrap()
    };
    let report = compare(local);
    assert!(
        report["series"].as_array().is_some_and(|s| !s.is_empty()),
        "{report}"
    );
    assert_eq!(compare(URL), report, "{tier}: the comparisons differ");
}

/// Deletes every object under `prefix` of the bucket.
async fn delete_under(s3: &aws_sdk_s3::Client, prefix: &str) {
    let listed = s3
        .list_objects_v2()
        .bucket(BUCKET)
        .prefix(prefix)
        .send()
        .await
        .unwrap();
    assert!(!listed.contents().is_empty(), "nothing under {prefix}");
    for object in listed.contents() {
        let key = object.key().unwrap();
        s3.delete_object()
            .bucket(BUCKET)
            .key(key)
            .send()
            .await
            .unwrap();
    }
}

#[test]
fn a_bucket_reads_as_the_directory_it_was_copied_from() {
    let tmp = tempfile::tempdir().unwrap();
    let (local, other) = (tmp.path().join("local"), tmp.path().join("other"));
    convert(
        &local,
        "samples/pprof/google-pprof_report_sample.cpu.pb.gz",
        "1.0",
    );
    convert(&local, "samples/folded/pyspy.folded", "1.1");
    succeeded(
        "publish",
        &proflake(&["publish", "--store", local.to_str().unwrap()]),
    );
    convert(&other, "samples/cpuprofile/node.cpuprofile", "2.0");

    let moto = Moto::start();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let s3 = s3_client(&moto);
    runtime.block_on(async {
        s3.create_bucket().bucket(BUCKET).send().await.unwrap();
        upload_tree(&s3, &local, PREFIX).await;
        upload_tree(&s3, &other, "").await;
    });
    publish_in_bucket(&moto, s3.clone(), &runtime);

    let local = local.to_str().unwrap();
    same_as_directory(&moto, tmp.path(), local, "landing");
    // Without its landing tables, the bucket can only answer from its lake.
    runtime.block_on(delete_under(&s3, &format!("{PREFIX}tables/")));
    let out = tmp.path().join("gone");
    let pprof = ["export", "--format", "pprof", "--store", URL, "-o"];
    let run = proflake_on(&moto, &[&pprof[..], &[out.to_str().unwrap()]].concat());
    let said = text(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{said}");
    assert!(said.contains("no stack tables at tables/v2/"), "{said}");
    same_as_directory(&moto, tmp.path(), local, "lake");

    // The bucket's root holds the other directory's tables, and no lake.
    let pprof = ["export", "--format", "pprof"];
    let (from_other, _) = written(
        &moto,
        other.to_str().unwrap(),
        &tmp.path().join("o"),
        &pprof,
    );
    let (from_root, said) = written(
        &moto,
        "s3://proflake-outputs",
        &tmp.path().join("r"),
        &pprof,
    );
    assert!(said.contains("of 1 upload(s)"), "{said}");
    assert!(
        from_root == from_other,
        "the bucket's root is not the other directory"
    );
    let run = proflake_on(
        &moto,
        &[
            "export",
            "--store",
            "s3://proflake-outputs",
            "--tier",
            "lake",
            "--format",
            "pprof",
            "-o",
            tmp.path().join("none").to_str().unwrap(),
        ],
    );
    let said = text(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{said}");
    assert!(
        said.contains("s3://proflake-outputs has no lake")
            && said.contains("s3://proflake-outputs/lake/samples/_delta_log/"),
        "{said}"
    );
}

#[test]
fn bad_urls_and_missing_buckets_are_errors() {
    let moto = Moto::start();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out.pb.gz");
    let export = |store: &str| {
        proflake_on(
            &moto,
            &[
                "export",
                "--store",
                store,
                "--format",
                "pprof",
                "-o",
                out.to_str().unwrap(),
            ],
        )
    };
    for (store, says) in [
        ("s3://Not_A_Bucket/x", "is not a bucket name"),
        ("s3://", "is not a bucket name"),
        ("s3://bucket//x", "empty path segment"),
        (
            "gs://bucket/x",
            "only s3://BUCKET[/PREFIX] URLs and directories",
        ),
        ("s3://no-such-bucket/x", "NoSuchBucket"),
    ] {
        let run = export(store);
        let said = text(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{store}: {said}");
        assert!(said.contains(says), "{store}: {said}");
        assert!(!said.contains("panicked"), "{store}: {said}");
    }
    let run = proflake_command(&moto)
        .env_remove("AWS_REGION")
        .env_remove("AWS_DEFAULT_REGION")
        .args([
            "export",
            "--store",
            "s3://bucket",
            "--format",
            "pprof",
            "-o",
        ])
        .arg(&out)
        .output()
        .expect("proflake runs");
    let said = text(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{said}");
    assert!(said.contains("no AWS region"), "{said}");
    assert!(!out.exists());
}
