//! S3 failing under the handler: the message fails, stays on the queue, and converts when it
//! comes back with S3 healthy.

use std::time::{Duration, Instant};

use proflake_convert::App;

use crate::fault_proxy::{Fault, FaultProxy};
use crate::harness::{
    config, conversion_keys, failed_ids, impatient_s3_client, manifest_of, notified_keys,
    repo_file, Env, Upload, OUTPUT_BUCKET, UPLOADS_BUCKET,
};

/// The queue's visibility timeout: how soon a failed message comes back.
const VISIBILITY_S: u32 = 2;

async fn fails_then_converts(fault: Fault) {
    let env = Env::start(VISIBILITY_S).await;
    env.consume_test_event().await;
    let upload = Upload::new(
        "uploads/faults/google-pprof_report_sample.cpu.pb.gz",
        repo_file("samples/pprof/google-pprof_report_sample.cpu.pb.gz"),
    );
    env.put(&upload).await;

    let proxy = FaultProxy::start(env.moto.port, fault);
    let app = App::new(config(2), impatient_s3_client(&proxy.endpoint));

    let (response, messages) = env.drain(&app, 5).await;
    assert_eq!(messages.len(), 1);
    assert_eq!(notified_keys(&messages[0]), vec![upload.key.clone()]);
    let id = messages[0].message_id().unwrap().to_owned();
    assert_eq!(failed_ids(&response), vec![id.clone()], "{fault:?}");
    match fault {
        Fault::Error503 => assert!(proxy.errors_served() > 0, "no request reached the proxy"),
        Fault::Drop => assert!(proxy.dropped() > 0, "no connection reached the proxy"),
        Fault::Pass => unreachable!(),
    }
    assert_eq!(proxy.passed(), 0);
    assert_eq!(env.keys(OUTPUT_BUCKET, "").await, Vec::<String>::new());
    assert_eq!(
        env.keys(UPLOADS_BUCKET, "").await,
        vec![upload.key.clone()],
        "a transient failure must not quarantine the upload"
    );

    // Not deleted: it comes back once the visibility timeout has passed.
    let deadline = Instant::now() + Duration::from_secs(30);
    let again = loop {
        let got = env.receive(10, 2).await;
        if !got.is_empty() {
            break got;
        }
        assert!(
            Instant::now() < deadline,
            "the failed message never came back"
        );
    };
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].message_id(), Some(id.as_str()));
    let receive_count = again[0]
        .attributes()
        .and_then(|a| {
            a.get(&aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateReceiveCount)
        })
        .cloned();
    assert_eq!(receive_count.as_deref(), Some("2"));

    // S3 is back (the same instance, its pooled connections cut by the switch).
    proxy.set_mode(Fault::Pass);
    let response = env.handle_and_settle(&app, &again).await;
    assert_eq!(failed_ids(&response), Vec::<String>::new());
    assert!(proxy.passed() > 0);
    let outputs = env.snapshot(OUTPUT_BUCKET).await;
    let manifest = manifest_of(&outputs, &upload.key, &upload.bytes).expect("converted");
    assert_eq!(
        outputs
            .keys()
            .cloned()
            .collect::<std::collections::BTreeSet<_>>(),
        conversion_keys(&outputs, &manifest)
    );
    env.assert_queues_empty().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn failing_s3_fails_the_message_and_redelivery_converts() {
    fails_then_converts(Fault::Error503).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dropped_s3_connections_fail_the_message_and_redelivery_converts() {
    fails_then_converts(Fault::Drop).await;
}
