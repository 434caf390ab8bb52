//! The bucket as the pipeline writes to it: outputs streamed as multipart uploads.

use std::io::Write;

use proflake::{store::ObjectStore, store::S3Store};

use crate::convert::noise;
use crate::harness::{Env, OUTPUT_BUCKET};

/// Writes `bytes` through the store's streaming writer in pieces of `piece` bytes, as the
/// serializers do; finishes unless `abandon`.
fn stream(store: &S3Store, key: &str, bytes: &[u8], piece: usize, abandon: bool) {
    let mut writer = store.put_writer(key).expect("the writer starts");
    for part in bytes.chunks(piece) {
        writer.write_all(part).expect("a piece is written");
    }
    if !abandon {
        writer.finish().expect("the object is completed");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outputs_larger_than_a_part_go_up_as_multipart_uploads() {
    let env = Env::start(30).await;
    let part = S3Store::PART_BYTES;
    let large = noise(7, part * 2 + 12_345);
    let small = noise(8, 100_000);
    let (s3, runtime) = (env.s3.clone(), tokio::runtime::Handle::current());
    let (large_c, small_c) = (large.clone(), small.clone());
    tokio::task::spawn_blocking(move || {
        let store = S3Store::new(s3, OUTPUT_BUCKET, runtime);
        stream(
            &store,
            "converted/large.json",
            &large_c,
            64 * 1024 + 7,
            false,
        );
        stream(&store, "converted/small.json", &small_c, 4096, false);
        // More than a part written, then dropped: the upload is aborted.
        stream(&store, "converted/abandoned.json", &large_c, 1 << 20, true);
        // Less than a part, dropped: nothing was ever sent.
        stream(
            &store,
            "converted/abandoned-small.json",
            &small_c,
            4096,
            true,
        );
    })
    .await
    .unwrap();

    assert_eq!(
        env.get(OUTPUT_BUCKET, "converted/large.json").await,
        Some(large)
    );
    assert_eq!(
        env.get(OUTPUT_BUCKET, "converted/small.json").await,
        Some(small.clone())
    );
    let etag = |key: &'static str| {
        let s3 = env.s3.clone();
        async move {
            let head = s3
                .head_object()
                .bucket(OUTPUT_BUCKET)
                .key(key)
                .send()
                .await
                .unwrap();
            head.e_tag().unwrap().trim_matches('"').to_owned()
        }
    };
    // S3's multipart ETag: the MD5 of the parts' MD5s, then the number of parts.
    assert!(etag("converted/large.json").await.ends_with("-3"));
    // A small object is one PutObject, so its ETag stays the MD5 of its bytes, as the
    // pipeline's own ETags (content_etag) expect.
    assert_eq!(
        etag("converted/small.json").await,
        proflake::store::content_etag(&small)
    );
    assert_eq!(
        env.get(OUTPUT_BUCKET, "converted/abandoned.json").await,
        None
    );
    assert_eq!(
        env.get(OUTPUT_BUCKET, "converted/abandoned-small.json")
            .await,
        None
    );
    let pending = env
        .s3
        .list_multipart_uploads()
        .bucket(OUTPUT_BUCKET)
        .send()
        .await
        .unwrap();
    assert!(
        pending.uploads().is_empty(),
        "unfinished multipart uploads left: {:?}",
        pending.uploads()
    );
}
