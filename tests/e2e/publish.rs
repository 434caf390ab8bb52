//! The publish Lambda's handler end to end on moto: uploads converted by the convert handler,
//! the output bucket's manifest notifications delivered to the publish queue as in production,
//! the publish handler on each batch, and the lake in the bucket (delta-rs on moto's S3).
//!
//! The lake is checked from its Delta log read here as plain JSON (active files are the adds
//! not removed since; their `numRecords` add up), against the rows the manifests record for
//! the landing files.

use std::collections::{BTreeMap, HashMap};

use aws_sdk_s3::types::{
    FilterRule, FilterRuleName, NotificationConfiguration, NotificationConfigurationFilter,
    QueueConfiguration, S3KeyFilter,
};
use aws_sdk_sqs::types::Message;

use crate::harness::*;

const PUBLISH_QUEUE: &str = "proflake-publish";
const PUBLISH_DLQ: &str = "proflake-publish-dlq";
const TABLES: [&str; 6] = [
    "profiles",
    "samples",
    "stacks",
    "frames",
    "function_rollup",
    "counters",
];

/// A filter rule.
fn rule(name: FilterRuleName, value: &str) -> FilterRule {
    FilterRule::builder().name(name).value(value).build()
}

/// The output bucket's notifications as the template sets them: debug files to the rehydrate
/// queue, manifests to the publish queue.
async fn notify_manifests(env: &Env, publish_arn: &str) {
    let queue = |id: &str, arn: &str, rules: Vec<FilterRule>| {
        QueueConfiguration::builder()
            .id(id)
            .queue_arn(arn)
            .events("s3:ObjectCreated:*".into())
            .filter(
                NotificationConfigurationFilter::builder()
                    .key(S3KeyFilter::builder().set_filter_rules(Some(rules)).build())
                    .build(),
            )
            .build()
            .unwrap()
    };
    let configuration = NotificationConfiguration::builder()
        .queue_configurations(queue(
            "rehydrate",
            &env.rehydrate_arn,
            vec![rule(FilterRuleName::Prefix, "debuginfo/")],
        ))
        .queue_configurations(queue(
            "publish",
            publish_arn,
            vec![
                rule(FilterRuleName::Prefix, "converted/"),
                rule(FilterRuleName::Suffix, "manifest.json"),
            ],
        ))
        .build();
    env.s3
        .put_bucket_notification_configuration()
        .bucket(OUTPUT_BUCKET)
        .notification_configuration(configuration)
        .send()
        .await
        .expect("output bucket notifications");
}

fn publish_app(env: &Env) -> proflake_publish::App {
    let vars: HashMap<&str, &str> = HashMap::from([
        ("PROFLAKE_OUTPUT_BUCKET", OUTPUT_BUCKET),
        ("PROFLAKE_UPLOAD_BUCKET", UPLOADS_BUCKET),
        ("PROFLAKE_LOG", "warn"),
    ]);
    let config = proflake_publish::Config::from_lookup(|n| vars.get(n).map(|v| (*v).to_owned()))
        .expect("publish config");
    let mut options = proflake::lake::Lake::s3_options(Some(&env.moto.endpoint));
    options.insert("AWS_ACCESS_KEY_ID".into(), "test".into());
    options.insert("AWS_SECRET_ACCESS_KEY".into(), "test".into());
    options.insert("AWS_REGION".into(), REGION.into());
    proflake_publish::App::new(config, s3_client(&env.moto.endpoint), options)
}

/// Every message the publish queue gives until it is empty, `s3:TestEvent`s dropped.
async fn receive_all(env: &Env, url: &str) -> Vec<Message> {
    let mut all = Vec::new();
    loop {
        let messages = receive_from(&env.sqs, url, 10, 1).await;
        if messages.is_empty() {
            return all;
        }
        // Bodies that are not JSON (sent on purpose below) are no test event either.
        let test_event = |m: &Message| {
            serde_json::from_str::<serde_json::Value>(m.body().unwrap_or(""))
                .is_ok_and(|b| b["Event"] == "s3:TestEvent")
        };
        let (tests, real): (Vec<_>, Vec<_>) = messages.into_iter().partition(test_event);
        delete_messages(&env.sqs, url, &tests).await;
        all.extend(real);
    }
}

/// Active files' row counts per table, from the Delta log in the bucket.
async fn lake_rows(env: &Env) -> BTreeMap<String, u64> {
    let mut rows = BTreeMap::new();
    for table in TABLES {
        let prefix = format!("lake/{table}/_delta_log/");
        let mut logs: Vec<String> = env
            .keys(OUTPUT_BUCKET, &prefix)
            .await
            .into_iter()
            .filter(|k| k.ends_with(".json"))
            .collect();
        logs.sort();
        let mut active: BTreeMap<String, u64> = BTreeMap::new();
        for key in logs {
            let log = env.get(OUTPUT_BUCKET, &key).await.expect("log entry");
            for line in String::from_utf8(log).unwrap().lines() {
                let action: serde_json::Value = serde_json::from_str(line).unwrap();
                if let Some(add) = action.get("add") {
                    let stats: serde_json::Value =
                        serde_json::from_str(add["stats"].as_str().expect("add stats")).unwrap();
                    let path = add["path"].as_str().unwrap().to_owned();
                    active.insert(path, stats["numRecords"].as_u64().unwrap());
                }
                if let Some(remove) = action.get("remove") {
                    active.remove(remove["path"].as_str().unwrap());
                }
            }
        }
        rows.insert(table.to_owned(), active.values().sum());
    }
    rows
}

/// Rows of the landing files the current manifests list, per table.
async fn landing_rows(env: &Env) -> BTreeMap<String, u64> {
    let mut rows: BTreeMap<String, u64> = TABLES.iter().map(|t| ((*t).to_owned(), 0)).collect();
    for key in env.keys(OUTPUT_BUCKET, "converted/").await {
        if !key.ends_with("/manifest.json") {
            continue;
        }
        let manifest: serde_json::Value =
            serde_json::from_slice(&env.get(OUTPUT_BUCKET, &key).await.unwrap()).unwrap();
        for output in manifest["outputs"].as_array().unwrap() {
            if let Some(table) = output["kind"].as_str().unwrap().strip_prefix("table:") {
                *rows.get_mut(table).unwrap() += output["rows"].as_u64().unwrap();
            }
        }
    }
    rows
}

async fn log_versions(env: &Env) -> usize {
    env.keys(OUTPUT_BUCKET, "lake/")
        .await
        .iter()
        .filter(|k| k.contains("/_delta_log/") && k.ends_with(".json"))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manifests_are_published_in_one_commit_per_table_and_replaced() {
    let env = Env::start(30).await;
    let (url, arn, _dlq) = create_queue_pair(&env.sqs, PUBLISH_QUEUE, PUBLISH_DLQ, 30).await;
    notify_manifests(&env, &arn).await;
    let convert = env.app(2);
    let publish = publish_app(&env);
    for (key, file) in [
        (
            "uploads/android_app.pftrace",
            "samples/perfetto/android_app.pftrace",
        ),
        (
            "uploads/report.cpu.pb.gz",
            "samples/pprof/google-pprof_report_sample.cpu.pb.gz",
        ),
        ("uploads/pyspy.folded", "samples/folded/pyspy.folded"),
    ] {
        env.put(&Upload::new(key, repo_file(file))).await;
    }
    env.drain_all(&convert).await;

    // One batch of three manifests: every upload published, one commit per table.
    let messages = receive_all(&env, &url).await;
    assert_eq!(messages.len(), 3, "{:?}", bodies(&messages));
    let (response, tally) =
        proflake_publish::handle_batch_tallied(&publish, sqs_event(&arn, &messages)).await;
    assert_eq!(failed_ids(&response), Vec::<String>::new());
    assert_eq!(
        (tally.manifests, tally.uploads_published, tally.commits),
        (3, 3, 5)
    );
    let landing = landing_rows(&env).await;
    assert_eq!(lake_rows(&env).await, landing);
    // None of these uploads has instants or counter values.
    let empty = |(table, &n): (&String, &u64)| (n == 0) == (table == "counters");
    assert!(landing.iter().all(empty), "{landing:?}");

    // The same batch delivered again changes nothing.
    let versions = log_versions(&env).await;
    let (response, tally) =
        proflake_publish::handle_batch_tallied(&publish, sqs_event(&arn, &messages)).await;
    assert_eq!(failed_ids(&response), Vec::<String>::new());
    assert_eq!((tally.uploads_up_to_date, tally.commits), (3, 0));
    assert_eq!(log_versions(&env).await, versions);
    delete_messages(&env.sqs, &url, &messages).await;

    // New content under a key: the old conversion's rows leave the lake in the same commit
    // the new one's come in.
    env.put(&Upload::new(
        "uploads/report.cpu.pb.gz",
        repo_file("samples/folded/pyspy.folded"),
    ))
    .await;
    env.drain_all(&convert).await;
    let messages = receive_all(&env, &url).await;
    let (response, tally) =
        proflake_publish::handle_batch_tallied(&publish, sqs_event(&arn, &messages)).await;
    assert_eq!(failed_ids(&response), Vec::<String>::new());
    assert_eq!((tally.uploads_published, tally.uploads_replaced), (1, 1));
    assert_eq!(lake_rows(&env).await, landing_rows(&env).await);
    delete_messages(&env.sqs, &url, &messages).await;

    // The sweep finds nothing missed; maintenance leaves every row where it was.
    let sweep = r#"{"source":"proflake.schedule","action":"publish-sweep"}"#;
    let compact = r#"{"source":"proflake.schedule","action":"compact"}"#;
    for body in [sweep, compact] {
        env.sqs
            .send_message()
            .queue_url(&url)
            .message_body(body)
            .send()
            .await
            .unwrap();
    }
    let messages = receive_all(&env, &url).await;
    assert_eq!(messages.len(), 2);
    let (response, tally) =
        proflake_publish::handle_batch_tallied(&publish, sqs_event(&arn, &messages)).await;
    assert_eq!(failed_ids(&response), Vec::<String>::new());
    assert_eq!((tally.uploads_up_to_date, tally.uploads_published), (3, 0));
    assert_eq!(lake_rows(&env).await, landing_rows(&env).await);
    let checkpoints = env
        .keys(OUTPUT_BUCKET, "lake/samples/_delta_log/")
        .await
        .into_iter()
        .filter(|k| k.ends_with(".checkpoint.parquet"))
        .count();
    assert_eq!(checkpoints, 1);

    // A message that is no request fails alone.
    env.sqs
        .send_message()
        .queue_url(&url)
        .message_body("not json")
        .send()
        .await
        .unwrap();
    let messages = receive_all(&env, &url).await;
    let (response, tally) =
        proflake_publish::handle_batch_tallied(&publish, sqs_event(&arn, &messages)).await;
    assert_eq!(failed_ids(&response).len(), 1);
    assert_eq!(tally.failures.get("invalid_event"), Some(&1));
}
