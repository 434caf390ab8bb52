//! Many uploads at once, drained in batches of ten by concurrent handler invocations.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::harness::{Env, Upload};
use crate::load::{assert_outcomes, corrupt, drain, folded, put_all, Final, Progress, INSTANCES};

const VALID: usize = 180;
const CORRUPT: usize = 20;

fn uploads() -> Vec<Final> {
    let mut finals = Vec::new();
    for i in 0..VALID {
        let (bytes, samples) = folded(i);
        let upload = Upload::new(format!("uploads/burst/valid {i:03}.folded"), bytes);
        // Half say when they were recorded; the others start at their arrival.
        let upload = if i.is_multiple_of(2) {
            upload.with_meta("timestamp", &format!("{}", 1_763_800_000 + i * 60))
        } else {
            upload
        };
        finals.push(Final::converted(upload, samples));
    }
    for i in 0..CORRUPT {
        let (bytes, ext) = corrupt(i);
        finals.push(Final::quarantined(Upload::new(
            format!("uploads/burst/corrupt+{i:02}.{ext}"),
            bytes,
        )));
    }
    finals
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn burst_of_uploads_all_convert_or_quarantine() {
    let env = Arc::new(Env::start(60).await);
    env.consume_test_event().await;
    let finals = uploads();
    let total = finals.len();
    assert!(total >= 200);

    let upload_time = put_all(&env, finals.iter().map(|f| &f.upload)).await;
    let app = Arc::new(env.app(4));
    let progress = Arc::new(Progress::default());
    let stats = drain(
        &env,
        &app,
        total,
        Duration::from_secs(600),
        None,
        progress.clone(),
    )
    .await;
    // Nothing held a message past its visibility timeout, so every delete was of a message
    // still there.
    assert_eq!(progress.stale_deletes.load(Ordering::SeqCst), 0);
    eprintln!(
        "burst: {total} uploads in {:.2} s = {:.1} objects/s ({} batches, {} batch item \
         failures retried; {INSTANCES} concurrent invocations, PROFLAKE_CONCURRENCY=4); \
         upload time {:.2} s",
        stats.handling.as_secs_f64(),
        total as f64 / stats.handling.as_secs_f64(),
        stats.batches,
        stats.item_failures,
        upload_time.as_secs_f64(),
    );

    let totals = assert_outcomes(&env, &finals).await;
    assert_eq!(totals.manifests, VALID);
    assert_eq!(totals.reports, CORRUPT);
    env.assert_queues_empty().await;
}
