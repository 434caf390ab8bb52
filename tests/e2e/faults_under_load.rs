//! A burst of 1,000 uploads drained while everything that can go wrong around the handler
//! does: S3 answering 503 and dropping connections, invocations outliving the visibility
//! timeout, messages redelivered and duplicated, corrupt uploads, and uploads replaced before,
//! during and after their conversion. Every upload must end converted or quarantined exactly
//! once, with nothing left of replaced content, as listing the buckets shows.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use proflake::store::{content_etag, ObjectInfo, ObjectStore, ObjectWriter, S3Store};
use proflake::{ErrorKind, Result};
use proflake_convert::App;

use crate::convert::noise;
use crate::fault_proxy::{Fault, FaultProxy};
use crate::harness::{
    config, error_report_key, impatient_s3_client, put_upload, repo_file, source_id_of, Env,
    Upload, ERROR_REPORT_SUFFIX, MAX_RECEIVE_COUNT, OUTPUT_BUCKET, UPLOADS_BUCKET,
};
use crate::load::{
    assert_outcomes, corrupt, drain, feed, folded, local_samples, put_all, Busy, Fate, Final,
    Interference, Progress, INSTANCES,
};

const UPLOADS: usize = 1000;
const PPROF: usize = 15;
const OTLP: usize = 15;
const CORRUPT: usize = 60;
/// The queue's visibility timeout. Longer than a fault window plus the slowest batch, so one
/// window fails a message at most once.
const VISIBILITY_S: u32 = 10;
/// S3 faults: (messages handled before the window opens, what the proxy does in it).
const WINDOWS: [(usize, Fault); 2] = [(150, Fault::Error503), (400, Fault::Drop)];
const WINDOW: Duration = Duration::from_millis(800);
// A message fails at most once per window, once more if its job removes an error report (the
// first removal of each fails), and is received once more if interfered with: the receive
// after that, within maxReceiveCount, finds S3 healthy, so nothing is dead-lettered.
const _: () = assert!(WINDOWS.len() + 1 + 1 < MAX_RECEIVE_COUNT as usize);
/// Plain uploads queued before the replaced ones.
const REPLACED_AFTER: usize = 100;
/// Uploads put ahead of the handled messages.
const AHEAD: usize = 60;
/// Handler concurrency within one invocation.
const CONCURRENCY: usize = 4;

/// What replaces what: valid content by other valid content, by corrupt content, and corrupt
/// by valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Swap {
    ValidByValid,
    ValidByCorrupt,
    CorruptByValid,
}

/// When the second version is uploaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum When {
    /// Right after the first, before the drain: both notifications are queued.
    Queued,
    /// While the first is being converted: the job has read it, the key holds the second.
    InFlight,
    /// Once the first has its outcome (converted, or quarantined).
    Settled,
}

struct Replacement {
    first: Upload,
    second: Final,
    when: When,
    swap: Swap,
}

/// Content `n` of a replaced key: a folded profile, or noise.
fn version(key: &str, n: usize, valid: bool) -> (Upload, Option<u64>) {
    if valid {
        let (bytes, samples) = folded(10_000 + n);
        (Upload::new(key, bytes), Some(samples))
    } else {
        (Upload::new(key, noise(7_000 + n as u64, 300 + n)), None)
    }
}

fn replacements() -> Vec<Replacement> {
    let swaps = [
        (When::Queued, Swap::ValidByValid),
        (When::Queued, Swap::ValidByCorrupt),
        (When::Queued, Swap::CorruptByValid),
        (When::Settled, Swap::ValidByValid),
        (When::Settled, Swap::ValidByCorrupt),
        (When::Settled, Swap::CorruptByValid),
        // Not corrupt by valid while in flight: the job of the corrupt version writes its report
        // after reading, and the valid version's job, if it finished first, has already looked
        // for a report to remove. Which job ends first is a race the product does not settle
        // (S3 has no compare-and-delete), so the outcome is not the test's to assert.
        (When::InFlight, Swap::ValidByValid),
        (When::InFlight, Swap::ValidByCorrupt),
    ];
    let mut out = Vec::new();
    for (s, (when, swap)) in swaps.into_iter().enumerate() {
        for copy in 0..2 {
            let n = s * 10 + copy;
            let key = format!("uploads/load/replaced/{when:?}-{swap:?}-{copy}.folded");
            let (first_valid, second_valid) = match swap {
                Swap::ValidByValid => (true, true),
                Swap::ValidByCorrupt => (true, false),
                Swap::CorruptByValid => (false, true),
            };
            let (first, _) = version(&key, 2 * n, first_valid);
            let (second, samples) = version(&key, 2 * n + 1, second_valid);
            let second = match samples {
                Some(samples) => Final::converted(second, samples),
                None => Final::quarantined(second),
            };
            out.push(Replacement {
                first,
                second,
                when,
                swap,
            });
        }
    }
    out
}

/// The uploads that are not replaced: folded profiles, some pprof and OTLP profiles, and
/// corrupt ones.
fn plain(count: usize) -> Vec<Final> {
    let pprof = repo_file("samples/pprof/google-pprof_report_sample.cpu.pb.gz");
    let otlp = repo_file("samples/otlp/sig-profiling_profile.v1_10.pb");
    let pprof_samples = local_samples(&Upload::new("uploads/x.pb.gz", pprof.clone()));
    let otlp_samples = local_samples(&Upload::new("uploads/x.pb", otlp.clone()));
    let mut finals = Vec::new();
    for i in 0..count {
        let f = if i % 16 == 3 && i / 16 < PPROF {
            let key = format!("uploads/load/pprof/{i:04}.pb.gz");
            Final::converted(Upload::new(key, pprof.clone()), pprof_samples)
        } else if i % 16 == 7 && i / 16 < OTLP {
            let key = format!("uploads/load/otlp/{i:04}.pb");
            Final::converted(Upload::new(key, otlp.clone()), otlp_samples)
        } else if i % 16 == 11 && i / 16 < CORRUPT {
            let (bytes, ext) = corrupt(i);
            Final::quarantined(Upload::new(
                format!("uploads/load/corrupt/{i:04}.{ext}"),
                bytes,
            ))
        } else {
            let (bytes, samples) = folded(i);
            let upload = Upload::new(format!("uploads/load/folded/{i:04}.folded"), bytes);
            let upload = if i.is_multiple_of(2) {
                upload.with_meta("timestamp", &format!("{}", 1_763_800_000 + i * 60))
            } else {
                upload
            };
            Final::converted(upload, samples)
        };
        finals.push(f);
    }
    finals
}

/// The uploads bucket as the handler sees it, with two faults aimed at the worst moments:
/// - the first read of an armed key uploads that key's next version before returning the one it
///   read: a re-upload landing while the job that read the first version converts it;
/// - the first removal of each error report fails as S3 failing would, after the conversion
///   that makes the report obsolete is stored and settled.
struct MeddledUploads {
    inner: S3Store,
    /// Key → (ETag of the version to catch, the version that replaces it).
    armed: Arc<Mutex<HashMap<String, (String, Upload)>>>,
    /// Straight to moto: the re-upload is the user's, not the handler's.
    direct: aws_sdk_s3::Client,
    runtime: tokio::runtime::Handle,
    fired: Arc<AtomicUsize>,
    /// Error reports whose removal failed once.
    refused: Arc<Mutex<HashSet<String>>>,
}

impl ObjectStore for MeddledUploads {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        self.inner.get(key)
    }

    fn get_object(&self, key: &str, max_bytes: u64) -> Result<Option<(Vec<u8>, ObjectInfo)>> {
        let got = self.inner.get_object(key, max_bytes)?;
        if let Some((_, info)) = &got {
            let next = {
                let mut armed = self.armed.lock().unwrap();
                match armed.get(key) {
                    Some((etag, _)) if *etag == info.etag => armed.remove(key).map(|(_, u)| u),
                    _ => None,
                }
            };
            if let Some(next) = next {
                self.runtime.block_on(put_upload(&self.direct, &next));
                self.fired.fetch_add(1, Ordering::SeqCst);
            }
        }
        Ok(got)
    }

    fn exists(&self, key: &str) -> Result<bool> {
        self.inner.exists(key)
    }

    fn head(&self, key: &str) -> Result<Option<ObjectInfo>> {
        self.inner.head(key)
    }

    fn put(&self, key: &str, bytes: &[u8]) -> Result<()> {
        self.inner.put(key, bytes)
    }

    fn delete(&self, key: &str) -> Result<()> {
        if key.ends_with(ERROR_REPORT_SUFFIX) && self.refused.lock().unwrap().insert(key.into()) {
            return Err(ErrorKind::Storage {
                key: format!("s3://{UPLOADS_BUCKET}/{key}"),
            }
            .into());
        }
        self.inner.delete(key)
    }

    fn list(&self, prefix: &str) -> Result<Vec<String>> {
        self.inner.list(prefix)
    }

    fn list_page(&self, prefix: &str, after: Option<&str>, limit: usize) -> Result<Vec<String>> {
        self.inner.list_page(prefix, after, limit)
    }
}

/// The output bucket as the handler sees it, failing the first table file of each conversion
/// in `cut` as S3 failing would: the job has written its chunks and is cut short, and its
/// message comes back after the visibility timeout.
struct CutShortOutputs {
    inner: S3Store,
    /// Source ids of the conversions to cut short, each once.
    cut: Arc<Mutex<HashSet<String>>>,
    /// How many were.
    done: Arc<AtomicUsize>,
}

impl CutShortOutputs {
    fn check(&self, key: &str) -> Result<()> {
        let Some(stem) = key
            .strip_prefix("tables/")
            .and_then(|k| k.rsplit('/').next())
            .and_then(|f| f.strip_suffix(".parquet"))
        else {
            return Ok(());
        };
        if self.cut.lock().unwrap().remove(stem) {
            self.done.fetch_add(1, Ordering::SeqCst);
            return Err(ErrorKind::Storage {
                key: format!("s3://{OUTPUT_BUCKET}/{key}"),
            }
            .into());
        }
        Ok(())
    }
}

impl ObjectStore for CutShortOutputs {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        self.inner.get(key)
    }

    fn get_object(&self, key: &str, max_bytes: u64) -> Result<Option<(Vec<u8>, ObjectInfo)>> {
        self.inner.get_object(key, max_bytes)
    }

    fn exists(&self, key: &str) -> Result<bool> {
        self.inner.exists(key)
    }

    fn head(&self, key: &str) -> Result<Option<ObjectInfo>> {
        self.inner.head(key)
    }

    fn put(&self, key: &str, bytes: &[u8]) -> Result<()> {
        self.check(key)?;
        self.inner.put(key, bytes)
    }

    fn put_writer<'s>(&'s self, key: &str) -> Result<Box<dyn ObjectWriter + 's>> {
        self.check(key)?;
        self.inner.put_writer(key)
    }

    fn delete(&self, key: &str) -> Result<()> {
        self.inner.delete(key)
    }

    fn list(&self, prefix: &str) -> Result<Vec<String>> {
        self.inner.list(prefix)
    }

    fn list_page(&self, prefix: &str, after: Option<&str>, limit: usize) -> Result<Vec<String>> {
        self.inner.list_page(prefix, after, limit)
    }
}

/// CPU time of process `pid` so far (moto's), from /proc.
fn cpu_of(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc stat");
    // Fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // SAFETY: sysconf has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    Duration::from_secs_f64(ticks as f64 / per_second as f64)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_uploads_survive_s3_faults_redeliveries_and_replacements() {
    let test_start = Instant::now();
    let env = Arc::new(Env::start(VISIBILITY_S).await);
    env.consume_test_event().await;
    let replaced = replacements();
    let mut finals = plain(UPLOADS - replaced.len());
    finals.extend(replaced.iter().map(|r| r.second.clone()));
    assert_eq!(finals.len(), UPLOADS);
    let quarantined = finals
        .iter()
        .filter(|f| matches!(f.fate, Fate::Quarantined { .. }))
        .count();

    let proxy = Arc::new(FaultProxy::start(env.moto.port, Fault::Pass));
    let armed = Arc::new(Mutex::new(HashMap::new()));
    let fired = Arc::new(AtomicUsize::new(0));
    let refused = Arc::new(Mutex::new(HashSet::new()));
    // The conversions of content replaced in flight are cut short after their chunks: what
    // they wrote is named by no manifest, and the job that settles the new content removes it.
    let cut: HashSet<String> = replaced
        .iter()
        .filter(|r| r.when == When::InFlight)
        .map(|r| source_id_of(&r.first.key, &r.first.bytes))
        .collect();
    let cut_count = cut.len();
    let cut = Arc::new(Mutex::new(cut));
    let cut_done = Arc::new(AtomicUsize::new(0));
    let app = {
        let (armed, fired, refused, direct) = (
            armed.clone(),
            fired.clone(),
            refused.clone(),
            env.s3.clone(),
        );
        let (cut, cut_done) = (cut.clone(), cut_done.clone());
        let client = impatient_s3_client(&proxy.endpoint);
        Arc::new(App::with_stores(config(CONCURRENCY), move |bucket| {
            let runtime = tokio::runtime::Handle::current();
            let inner = S3Store::new(client.clone(), bucket, runtime.clone());
            if bucket != UPLOADS_BUCKET {
                return Arc::new(CutShortOutputs {
                    inner,
                    cut: cut.clone(),
                    done: cut_done.clone(),
                }) as Arc<dyn ObjectStore>;
            }
            Arc::new(MeddledUploads {
                inner,
                armed: armed.clone(),
                direct: direct.clone(),
                runtime,
                fired: fired.clone(),
                refused: refused.clone(),
            })
        }))
    };
    let progress = Arc::new(Progress::default());
    let interference = Arc::new(Interference::new(
        40,
        Duration::from_secs(u64::from(VISIBILITY_S) + 1),
        45,
        20,
        UPLOADS * 4 / 5,
    ));

    // S3 fails in windows as the drain progresses. The keys replaced in flight are uploaded
    // once the last window has closed, so that their jobs fail exactly where `CutShortOutputs`
    // makes them: after their chunks, with the key's content replaced.
    let in_flight: Vec<&Replacement> = replaced
        .iter()
        .filter(|r| r.when == When::InFlight)
        .collect();
    let faults = {
        let busy = Busy::new(&progress);
        let (env, proxy, progress, armed) =
            (env.clone(), proxy.clone(), progress.clone(), armed.clone());
        let in_flight: Vec<(Upload, Upload)> = in_flight
            .iter()
            .map(|r| (r.first.clone(), r.second.upload.clone()))
            .collect();
        tokio::spawn(async move {
            for (after, fault) in WINDOWS {
                while progress.handled.load(Ordering::SeqCst) < after {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                proxy.set_mode(fault);
                tokio::time::sleep(WINDOW).await;
                proxy.set_mode(Fault::Pass);
            }
            for (first, second) in &in_flight {
                armed.lock().unwrap().insert(
                    first.key.clone(),
                    (content_etag(&first.bytes), second.clone()),
                );
                put_upload(&env.s3, first).await;
            }
            drop(busy);
        })
    };
    // Keys replaced once their first version is settled: converted (the key's pointer names
    // it) or quarantined (its report is about it).
    let settle_then_replace = {
        let busy = Busy::new(&progress);
        let env = env.clone();
        let mut pending: Vec<(Upload, Upload)> = replaced
            .iter()
            .filter(|r| r.when == When::Settled)
            .map(|r| (r.first.clone(), r.second.upload.clone()))
            .collect();
        tokio::spawn(async move {
            let mut pointer_keys = HashMap::new();
            while !pending.is_empty() {
                tokio::time::sleep(Duration::from_millis(500)).await;
                let mut waiting = Vec::new();
                for (first, second) in pending {
                    let etag = content_etag(&first.bytes);
                    let pointer = env.pointer(&mut pointer_keys, &first.key).await;
                    let report = env
                        .get(UPLOADS_BUCKET, &error_report_key(&first.key))
                        .await
                        .map(|b| serde_json::from_slice::<serde_json::Value>(&b).unwrap());
                    let settled = pointer.is_some_and(|p| p["etag"] == etag.as_str())
                        || report.is_some_and(|r| r["etag"] == etag.as_str());
                    if settled {
                        put_upload(&env.s3, &second).await;
                    } else {
                        waiting.push((first, second));
                    }
                }
                pending = waiting;
            }
            drop(busy);
        })
    };

    // The first uploads are there before the drain starts, the replaced keys among them, so
    // that the second versions of those replaced once settled are handled while S3 fails, and
    // those replaced once queued have both versions queued before any is handled. The rest
    // arrive while the drain runs.
    let (early, rest) = finals[..UPLOADS - replaced.len()].split_at(REPLACED_AFTER);
    let versions = |when: fn(&When) -> bool, first: bool| {
        replaced
            .iter()
            .filter(move |r| when(&r.when))
            .map(move |r| if first { &r.first } else { &r.second.upload })
    };
    let upload_start = Instant::now();
    put_all(&env, early.iter().map(|f| &f.upload)).await;
    put_all(&env, versions(|w| *w != When::InFlight, true)).await;
    put_all(&env, versions(|w| *w == When::Queued, false)).await;
    let upload_time = upload_start.elapsed();
    let stages = vec![rest.iter().map(|f| f.upload.clone()).collect()];
    let moto_cpu_start = cpu_of(env.moto.pid());
    let feeding = feed(&env, stages, AHEAD, &progress);
    let stats = drain(
        &env,
        &app,
        UPLOADS,
        Duration::from_secs(600),
        Some(interference.clone()),
        progress.clone(),
    )
    .await;
    let moto_cpu = cpu_of(env.moto.pid()) - moto_cpu_start;
    let feed_time = feeding.await.expect("uploads");
    faults.await.expect("fault schedule");
    settle_then_replace.await.expect("replacements");

    let per_second = UPLOADS as f64 / stats.handling.as_secs_f64();
    eprintln!(
        "faults under load: {UPLOADS} uploads ({} replaced, {quarantined} quarantined) in \
         {:.2} s = {per_second:.1} objects/s; {INSTANCES} concurrent invocations, \
         PROFLAKE_CONCURRENCY={CONCURRENCY}, debug build unless built --release\n  \
         CPU per object: {:.1} ms in this process (the handler, plus the fault proxy and the \
         test's own SQS calls, which are small), {:.1} ms in moto (its own process)\n  \
         faults: {} S3 requests answered 503, {} connections dropped, {} batch item failures \
         retried, {} invocations held past the visibility timeout, {} messages not deleted \
         after success, {} notifications duplicated; at most {} receives of one message, {} \
         deletes with a receipt handle gone stale; {} batches, the slowest {:.2} s; {} uploads \
         put in {:.2} s before the drain, the rest fed over {:.2} s",
        replaced.len(),
        stats.handling.as_secs_f64(),
        stats.cpu.as_secs_f64() * 1000.0 / UPLOADS as f64,
        moto_cpu.as_secs_f64() * 1000.0 / UPLOADS as f64,
        proxy.errors_served(),
        proxy.dropped(),
        stats.item_failures,
        interference.stalled.load(Ordering::SeqCst),
        interference.forgotten.load(Ordering::SeqCst),
        interference.duplicated.load(Ordering::SeqCst),
        progress.max_receives.load(Ordering::SeqCst),
        progress.stale_deletes.load(Ordering::SeqCst),
        stats.batches,
        stats.slowest_batch.as_secs_f64(),
        UPLOADS - rest.len() - in_flight.len(),
        upload_time.as_secs_f64(),
        feed_time.as_secs_f64(),
    );

    // The faults happened, and failed messages.
    assert!(proxy.errors_served() > 0, "no 503 served");
    assert!(proxy.dropped() > 0, "no connection dropped");
    assert!(stats.item_failures > 0, "no message failed");
    for (what, n) in [
        ("held", &interference.stalled),
        ("forgotten", &interference.forgotten),
        ("duplicated", &interference.duplicated),
    ] {
        assert!(n.load(Ordering::SeqCst) > 0, "no message {what}");
    }
    assert_eq!(
        fired.load(Ordering::SeqCst),
        in_flight.len(),
        "replacements in flight not made: {:?}",
        armed.lock().unwrap().keys().collect::<Vec<_>>()
    );
    assert_eq!(
        cut_done.load(Ordering::SeqCst),
        cut_count,
        "conversions not cut short: {:?}",
        cut.lock().unwrap()
    );
    // The reports that became obsolete, and only those, were to be removed.
    let obsolete: HashSet<String> = replaced
        .iter()
        .filter(|r| r.when == When::Settled && r.swap == Swap::CorruptByValid)
        .map(|r| error_report_key(&r.first.key))
        .collect();
    assert_eq!(*refused.lock().unwrap(), obsolete);

    let totals = assert_outcomes(&env, &finals).await;
    assert_eq!(totals.manifests + totals.reports, UPLOADS);
    assert_eq!(totals.reports, quarantined);
    // A replaced key that converted points at its final content, so the next re-upload
    // removes that conversion and no other.
    let mut pointer_keys = HashMap::new();
    for r in replaced
        .iter()
        .filter(|r| matches!(r.second.fate, Fate::Converted { .. }))
    {
        let upload = &r.second.upload;
        let pointer = env
            .pointer(&mut pointer_keys, &upload.key)
            .await
            .expect("pointer");
        assert_eq!(
            pointer["etag"],
            content_etag(&upload.bytes).as_str(),
            "{}",
            upload.key
        );
    }
    // Bounded faults: every message succeeded within maxReceiveCount, none was dead-lettered.
    env.assert_queues_empty().await;
    eprintln!(
        "faults under load: {} manifests, {} error reports, {} output objects (each listed by a \
         manifest), {} samples; test wall time {:.1} s",
        totals.manifests,
        totals.reports,
        totals.output_objects,
        totals.samples,
        test_start.elapsed().as_secs_f64()
    );
}
