//! Aggregated inputs (weights without per-sample times) written as Sample v2: weights expand
//! into evenly spaced samples, cut into 60 s chunks, and the chunks say so.

use super::{
    left_out, plan_sample_v2, Timing, DEFAULT_INTERVAL_NS, MAX_CHUNK_DURATION_NS,
    MAX_EXPANDED_SAMPLES, MIN_INTERVAL_NS,
};
use crate::model::{Frame, FrameKind, Profile, Sample, Series, SeriesKind};
use crate::relay::check_sample_v2;
use crate::writers::sample_v2::write_sample_v2;
use crate::{convert_upload, ConvertOptions, ErrorKind, UploadMetadata};
use serde_json::Value;

const START: i64 = 1_700_000_000_000_000_000;

/// A profile with one thread and the given (stack name, weight) samples of one series.
fn aggregated(
    unit: &str,
    period: Option<u64>,
    hz: Option<u64>,
    weights: &[(&str, i64)],
) -> Profile {
    let mut p = Profile::new("test");
    let process = p.add_process(Some(7));
    let thread = p.add_thread(process, Some(7));
    let (name, unit) = (p.intern("cpu"), p.intern(unit));
    let series = p.add_series(Series {
        kind: SeriesKind::CpuTime,
        name,
        unit,
        source: None,
        frequency_hz: hz,
        period,
        spans: false,
    });
    let main = {
        let mut f = Frame::new(FrameKind::Native);
        f.function = Some(p.intern("main"));
        p.add_frame(f)
    };
    for (leaf, weight) in weights {
        let mut f = Frame::new(FrameKind::Native);
        f.function = Some(p.intern(leaf));
        let leaf = p.add_frame(f);
        let stack = p.add_stack_from_root([main, leaf]);
        p.add_sample(Sample::new(thread, stack, *weight, series));
    }
    p.start_time = Some(START);
    p
}

fn samples_of(json: &[u8]) -> Vec<(f64, Vec<String>)> {
    let doc: Value = serde_json::from_slice(json).unwrap();
    let frames = doc["profile"]["frames"].as_array().unwrap();
    let stacks = doc["profile"]["stacks"].as_array().unwrap();
    doc["profile"]["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let stack = &stacks[s["stack_id"].as_u64().unwrap() as usize];
            let names = stack
                .as_array()
                .unwrap()
                .iter()
                .map(|i| {
                    frames[i.as_u64().unwrap() as usize]["function"]
                        .as_str()
                        .unwrap()
                        .to_owned()
                })
                .collect();
            (s["timestamp"].as_f64().unwrap(), names)
        })
        .collect()
}

#[test]
fn time_weights_expand_at_the_period_in_input_order() {
    // 30 ms and 20 ms of CPU at a 10 ms period: 3 + 2 samples, 10 ms apart.
    let p = aggregated(
        "nanoseconds",
        Some(10_000_000),
        None,
        &[("a", 30_000_000), ("b", 20_000_000)],
    );
    let chunks = write_sample_v2(&p, &UploadMetadata::default(), "id").unwrap();
    assert_eq!(chunks.len(), 1);
    assert_eq!(
        chunks[0].timing,
        Timing::Expanded {
            interval_ns: 10_000_000,
            scaled_from: None,
        }
    );
    assert_eq!(check_sample_v2(&chunks[0].json), vec![]);
    let samples = samples_of(&chunks[0].json);
    let leaves: Vec<&str> = samples.iter().map(|(_, s)| s[0].as_str()).collect();
    assert_eq!(leaves, ["a", "a", "a", "b", "b"]);
    for (i, (t, _)) in samples.iter().enumerate() {
        let expected = (START + i as i64 * 10_000_000) as f64 / 1e9;
        assert!((t - expected).abs() < 1e-6, "sample {i}: {t} vs {expected}");
    }
    let doc: Value = serde_json::from_slice(&chunks[0].json).unwrap();
    assert_eq!(doc["synthetic_timestamps"]["interval_ns"], 10_000_000);
}

#[test]
fn fractional_counts_expand_one_per_whole_count() {
    // count*1e-2: 3.5 samples round to 4, 0.25 still counts once, 2.00 is 2.
    let p = aggregated(
        "count*1e-2",
        None,
        None,
        &[("a", 350), ("b", 25), ("c", 200)],
    );
    let chunks = write_sample_v2(&p, &UploadMetadata::default(), "id").unwrap();
    let samples = samples_of(&chunks[0].json);
    let leaves: Vec<&str> = samples.iter().map(|(_, s)| s[0].as_str()).collect();
    assert_eq!(leaves, ["a", "a", "a", "a", "b", "c", "c"]);
    assert_eq!(check_sample_v2(&chunks[0].json), vec![]);
}

#[test]
fn counts_expand_one_per_count_at_the_frequency_or_default() {
    let p = aggregated("count", None, Some(20), &[("a", 4)]);
    let chunks = write_sample_v2(&p, &UploadMetadata::default(), "id").unwrap();
    let samples = samples_of(&chunks[0].json);
    assert_eq!(samples.len(), 4);
    assert!(
        (samples[1].0 - samples[0].0 - 0.05).abs() < 1e-6,
        "20 Hz = 50 ms apart"
    );

    let p = aggregated("count", None, None, &[("a", 3)]);
    let chunks = write_sample_v2(&p, &UploadMetadata::default(), "id").unwrap();
    assert_eq!(
        chunks[0].timing,
        Timing::Expanded {
            interval_ns: DEFAULT_INTERVAL_NS,
            scaled_from: None,
        }
    );
}

#[test]
fn long_aggregates_are_cut_into_60_second_chunks() {
    // 150 s of samples at 100 Hz: three windows.
    let p = aggregated("count", None, Some(100), &[("a", 10_000), ("b", 5_000)]);
    let chunks = write_sample_v2(&p, &UploadMetadata::default(), "id").unwrap();
    assert_eq!(chunks.len(), 3);
    assert_eq!(chunks.iter().map(|c| c.samples).sum::<usize>(), 15_000);
    for c in &chunks {
        assert_eq!(check_sample_v2(&c.json), vec![], "chunk {}", c.chunk_id);
        assert!(c.end_ns - c.start_ns < MAX_CHUNK_DURATION_NS);
    }
}

#[test]
fn a_tiny_weight_still_shows_up_once() {
    let p = aggregated("nanoseconds", Some(10_000_000), None, &[("a", 1), ("b", 1)]);
    let chunks = write_sample_v2(&p, &UploadMetadata::default(), "id").unwrap();
    assert_eq!(chunks[0].samples, 2);
}

#[test]
fn huge_counts_are_scaled_into_the_bound_in_proportion() {
    // 3:1 over i64-sized counts: the chunks keep the proportion within the bound.
    let big = i64::MAX / 4;
    let p = aggregated("count", None, None, &[("a", 3 * big), ("b", big)]);
    let chunks = write_sample_v2(&p, &UploadMetadata::default(), "id").unwrap();
    let written: usize = chunks.iter().map(|c| c.samples).sum();
    assert!(written as u64 <= MAX_EXPANDED_SAMPLES + 2, "{written}");
    assert!(written as u64 >= MAX_EXPANDED_SAMPLES - 2, "{written}");
    let Timing::Expanded {
        interval_ns,
        scaled_from: Some(from),
    } = chunks[0].timing
    else {
        panic!("scaled expansion: {:?}", chunks[0].timing);
    };
    assert_eq!(from, 4 * (big as u64));
    assert_eq!(interval_ns, DEFAULT_INTERVAL_NS);
    let leaves: Vec<String> = chunks
        .iter()
        .flat_map(|c| samples_of(&c.json))
        .map(|(_, names)| names[0].clone())
        .collect();
    let a = leaves.iter().filter(|l| *l == "a").count();
    let b = leaves.iter().filter(|l| *l == "b").count();
    assert_eq!((a + 1) / (b + 1), 2, "a={a} b={b}");
    assert!(a.abs_diff(3 * b) <= 3, "a={a} b={b}");
    for c in &chunks {
        assert_eq!(check_sample_v2(&c.json), vec![], "chunk {}", c.chunk_id);
        let doc: Value = serde_json::from_slice(&c.json).unwrap();
        assert_eq!(doc["synthetic_timestamps"]["scaled_from"], from);
    }
}

#[test]
fn samples_of_one_stack_are_laid_out_as_one() {
    // Thirty 1 ms samples of `a` among ten of `b` (as a pprof whose samples differ only by
    // labels), at a 10 ms period: 30 ms and 10 ms of CPU, so 3 + 1 samples, `a` first.
    let weights: Vec<(&str, i64)> = (0..40)
        .map(|i| (if i % 4 == 3 { "b" } else { "a" }, 1_000_000))
        .collect();
    let p = aggregated("nanoseconds", Some(10_000_000), None, &weights);
    let chunks = write_sample_v2(&p, &UploadMetadata::default(), "id").unwrap();
    let leaves: Vec<String> = samples_of(&chunks[0].json)
        .into_iter()
        .map(|(_, names)| names[0].clone())
        .collect();
    assert_eq!(leaves, ["a", "a", "a", "b"]);
    assert_eq!(check_sample_v2(&chunks[0].json), vec![]);
}

#[test]
fn many_samples_of_few_stacks_expand_within_the_bound_and_all_count_as_carried() {
    // 300,000 samples of 20 stacks, weight 2 each, plus two without weight: before stacks
    // were merged, each sample kept at least one observation, so 300,000 were written.
    let names: Vec<String> = (0..20).map(|i| format!("f{i}")).collect();
    let mut weights: Vec<(&str, i64)> = (0..300_000).map(|i| (names[i % 20].as_str(), 2)).collect();
    weights.extend([("f0", 0), ("f1", -5)]);
    let p = aggregated("count", None, None, &weights);
    let plan = plan_sample_v2(&p, &UploadMetadata::default(), "id").unwrap();
    let written: usize = plan.chunks.iter().map(|c| c.samples.len()).sum();
    assert!(
        (MAX_EXPANDED_SAMPLES - 20..=MAX_EXPANDED_SAMPLES + 20).contains(&(written as u64)),
        "{written}"
    );
    let Timing::Expanded {
        scaled_from: Some(from),
        ..
    } = plan.chunks[0].timing
    else {
        panic!("scaled expansion: {:?}", plan.chunks[0].timing);
    };
    assert_eq!(from, 600_000);
    let coverage = &plan.series[0];
    assert_eq!(coverage.observations_in_chunks, 300_000);
    assert_eq!(coverage.chunk_samples, written as u64);
    assert_eq!(
        coverage.left_out.iter().collect::<Vec<_>>(),
        [(&left_out::NO_WEIGHT, &2)]
    );
    // Each stack's share is in proportion: 5,000 observations apiece, in 20 runs.
    let leaves: Vec<usize> = plan
        .chunks
        .iter()
        .flat_map(|c| c.samples.iter(&p))
        .map(|s| s.index % 20)
        .collect();
    let runs = leaves.windows(2).filter(|w| w[0] != w[1]).count() + 1;
    assert_eq!(runs, 20);
    for stack in 0..20 {
        let n = leaves.iter().filter(|&&l| l == stack).count();
        assert!(n.abs_diff(5_000) <= 1, "stack {stack}: {n}");
    }
}

#[test]
fn a_tiny_period_is_floored() {
    // 1 s of CPU at a 1 ns period would be 10^9 samples; the floor makes it 1 kHz.
    let p = aggregated("nanoseconds", Some(1), None, &[("a", 1_000_000_000)]);
    let chunks = write_sample_v2(&p, &UploadMetadata::default(), "id").unwrap();
    assert_eq!(chunks[0].samples, 1_000);
    assert_eq!(
        chunks[0].timing,
        Timing::Expanded {
            interval_ns: MIN_INTERVAL_NS,
            scaled_from: None,
        }
    );
}

#[test]
fn folded_counts_of_a_billion_convert_in_bounded_outputs() {
    let mut folded = String::new();
    for i in 0..50 {
        folded.push_str(&format!("main;f{i} 1000000000\n"));
    }
    let options = ConvertOptions {
        received_at_ns: Some(START),
        ..ConvertOptions::default()
    };
    let converted = convert_upload("uploads/f", "e", folded.as_bytes(), &options).unwrap();
    let series = &converted.manifest.series;
    assert_eq!(series.len(), 1);
    assert_eq!(series[0].observations, 50);
    assert_eq!(series[0].table_rows, 50);
    assert_eq!(series[0].total_value, 50_000_000_000);
    let chunk_samples = converted.manifest.sample_v2.samples;
    assert!(
        chunk_samples <= MAX_EXPANDED_SAMPLES + 50,
        "{chunk_samples}"
    );
    assert_eq!(
        converted
            .manifest
            .sample_v2
            .expansion
            .as_ref()
            .unwrap()
            .scaled_from,
        Some(50_000_000_000)
    );
}

#[test]
fn no_start_time_is_a_typed_error() {
    let mut p = aggregated("count", None, None, &[("a", 3)]);
    p.start_time = None;
    let err = write_sample_v2(&p, &UploadMetadata::default(), "id").unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NoStartTime), "{err}");
}

#[test]
fn recorded_times_win_over_aggregates_in_the_same_series() {
    let mut p = aggregated("count", None, None, &[("a", 3)]);
    let s = p.samples().get(0);
    for i in 0..2 {
        let mut timed = s;
        timed.time = Some(START + 5_000_000_000 + i);
        p.add_sample(timed);
    }
    let chunks = write_sample_v2(&p, &UploadMetadata::default(), "id").unwrap();
    assert_eq!(chunks[0].timing, Timing::Recorded);
    assert_eq!(chunks[0].samples, 2);
}

#[test]
fn the_pipeline_starts_aggregates_at_the_metadata_time_then_the_arrival_time() {
    // A folded-stack upload has no time of its own.
    let folded = b"main;a 3\nmain;b 2\n";
    let options = ConvertOptions {
        metadata: UploadMetadata {
            timestamp: Some(1_700_000_100.0),
            ..UploadMetadata::default()
        },
        received_at_ns: Some(START),
        ..ConvertOptions::default()
    };
    let Ok(converted) = convert_upload("uploads/f", "e", folded, &options) else {
        panic!("folded input converts");
    };
    let samples = samples_of(&converted.sample_v2()[0].1);
    assert_eq!(samples.len(), 5);
    assert!(
        (samples[0].0 - 1_700_000_100.0).abs() < 1e-6,
        "{}",
        samples[0].0
    );
    assert!(
        converted
            .manifest
            .profile
            .timestamps
            .contains("metadata timestamp"),
        "{}",
        converted.manifest.profile.timestamps
    );

    let options = ConvertOptions {
        received_at_ns: Some(START),
        ..ConvertOptions::default()
    };
    let converted = convert_upload("uploads/f", "e", folded, &options).unwrap();
    let samples = samples_of(&converted.sample_v2()[0].1);
    assert!((samples[0].0 - START as f64 / 1e9).abs() < 1e-6);
    assert!(converted.manifest.profile.timestamps.contains("arrival"));

    let err = convert_upload("uploads/f", "e", folded, &ConvertOptions::default()).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NoStartTime), "{err}");
}
