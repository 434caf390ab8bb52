//! A recording converted from its samples in file order, a few windows at a time, gives the
//! very outputs of the same recording converted whole.

use super::PendingSamples;
use crate::metadata::UploadMetadata;
use crate::model::{
    ids_from_build_id, Frame, FrameAddress, FrameKind, Image, Profile, Sample, SampleTable, Series,
    SeriesKind,
};
use crate::pipeline::clock::Anchor;
use crate::plan::Grid;
use crate::symbolize::SymbolizeReport;
use crate::tables::TableSource;
use crate::writers::manifest::{ManifestSampleV2, ManifestSeries};
use crate::writers::outputs::{MemoryOutputs, Outputs};
use crate::writers::{IndexOf, Piece, Writers};

const SOURCE: TableSource<'static> = TableSource {
    source_id: "0123456789abcdef0123456789abcdef",
    source_key: "uploads/long.pftrace",
    source_etag: "etag",
    source_format: "perfetto",
    converter: "proflake test",
    service: None,
    labels: &std::collections::BTreeMap::new(),
    timed_clock: "input",
    aggregated_clock: "input",
};

fn lcg(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *state >> 33
}

/// Four processes of three threads over 200 s on two series, with 40 stacks (some with an
/// unsymbolized native frame), samples without a stack, and a thread sampled once per minute
/// (Relay drops it). Process 4 starts 100 s in. Samples are in time order.
fn recording() -> Profile {
    let mut p = Profile::new("perfetto");
    let mut series = |kind, name: &str, unit: &str, frequency_hz| {
        let (name, unit) = (p.intern(name), p.intern(unit));
        p.add_series(Series {
            kind,
            name,
            unit,
            source: None,
            frequency_hz,
            period: None,
            spans: false,
        })
    };
    let cpu = series(SeriesKind::CpuTime, "cpu-clock", "count", Some(100));
    let wall = series(SeriesKind::WallTime, "wall", "nanoseconds", None);
    let path = Some(p.intern("/system/lib64/libart.so"));
    let (code_id, debug_id) = ids_from_build_id(&[0xb1, 0x1d, 0x1d, 0x00, 0x2a, 0x17]);
    let image = p.add_image(Image {
        code_id,
        debug_id,
        ..Image::new(path, 0x7000_0000, 0x7010_0000)
    });
    let mut stacks = Vec::new();
    for i in 0..40u64 {
        let main = p.intern("main");
        let root = p.add_frame(Frame {
            function: Some(main),
            ..Frame::new(FrameKind::Native)
        });
        let leaf = if i % 4 == 0 {
            p.add_frame(Frame {
                image: Some(image),
                address: Some(FrameAddress::ImageRelative(0x1000 + i * 16)),
                ..Frame::new(FrameKind::Native)
            })
        } else {
            let name = p.intern(&format!("work{i}"));
            p.add_frame(Frame {
                function: Some(name),
                ..Frame::new(FrameKind::Jvm)
            })
        };
        stacks.push(p.add_stack_from_root([root, leaf]));
    }
    let mut threads = Vec::new();
    for pid in 1..=4 {
        let process = p.add_process(Some(pid));
        for t in 0..3 {
            threads.push((pid, p.add_thread(process, Some(pid * 100 + t))));
        }
    }
    let t0 = 1_700_000_000_000_000_123;
    let mut state = 5;
    for i in 0..20_000i64 {
        // In pairs 400 ns apart, in one microsecond: rows of two profiles the tables order
        // by profile within it.
        let time = t0 + (i / 2) * 20_000_000 + (i % 2) * 400;
        let (pid, thread) = threads[(i % 12) as usize];
        if pid == 4 && i < 10_000 {
            continue;
        }
        // Thread 2 of process 3 is sampled once a minute only.
        if (pid, i % 12) == (3, 8) && i % 6_000 != 8 {
            continue;
        }
        let stack = stacks[(lcg(&mut state) % 40) as usize].filter(|_| i % 17 != 3);
        let series = if i % 5 == 0 { wall } else { cpu };
        let weight = if series == wall { 10_000_000 } else { 1 };
        let mut s = Sample::new(thread, stack, weight, series);
        s.time = Some(time);
        s.cpu = Some((i % 8) as u32);
        p.add_sample(s);
    }
    p
}

struct Written {
    objects: Vec<(String, Vec<u8>)>,
    series: Vec<ManifestSeries>,
    sample_v2: ManifestSampleV2,
}

fn write(
    profile: &mut Profile,
    feed: impl FnOnce(&mut Profile, &mut Writers, &mut Outputs),
) -> Written {
    let metadata = UploadMetadata::default();
    let mut sink = MemoryOutputs::default();
    let symbolization = SymbolizeReport::default();
    let (series, sample_v2) = {
        let mut out = Outputs::new(&mut sink);
        let mut writer = Writers::new(&SOURCE, &metadata, 1);
        feed(profile, &mut writer, &mut out);
        let index = IndexOf {
            source_key: SOURCE.source_key,
            manifest_key: "converted/x/manifest.json",
            symbolization: &symbolization,
        };
        writer.finish(&[profile], index, &mut out).unwrap()
    };
    Written {
        objects: sink.objects,
        series,
        sample_v2,
    }
}

#[test]
fn samples_streamed_window_by_window_give_the_outputs_of_the_whole_recording() {
    // On the wall clock already, and on a trace clock anchored at a start time.
    let start = 1_750_000_000_000_000_777;
    for anchor in [Anchor::Keep, Anchor::FirstAt(start)] {
        let mut whole = recording();
        if let Anchor::FirstAt(start) = anchor {
            whole.anchor_first_sample_at(start);
        }
        let grid = Grid::of(&whole).unwrap();
        let expected = write(&mut whole, |p, windows, out| {
            windows.add(p, Piece::Windows(Some(grid)), out).unwrap();
        });
        assert!(expected.sample_v2.chunks >= 12, "{:?}", expected.sample_v2);
        assert!(expected.objects.len() > expected.sample_v2.chunks as usize + 5);
        let index = expected
            .objects
            .iter()
            .filter(|(k, _)| k.starts_with("index/"));
        assert_eq!(index.count(), 1, "the native frames' image is indexed");

        // Each sample up to `jitter_ns` late in file order, as chunks of sequences interleave;
        // the watermark a bound `slack_ns` below the earliest sample left.
        // Windows (about 5,000 samples each) are held whole, or handed out in parts once
        // a few hundred or a thousand samples wait.
        for (seed, jitter_ns, slack_ns, part_samples) in [
            (1, 0, 0, usize::MAX),
            (2, 3_000_000_000, 0, usize::MAX),
            (3, 59_000_000, 0, usize::MAX),
            (4, 2_000_000_000, 1_500_000_000, usize::MAX),
            (5, 0, 0, 300),
            (6, 3_000_000_000, 0, 1_000),
            (7, 59_000_000, 0, 700),
            (8, 2_000_000_000, 1_500_000_000, 1_000),
        ] {
            let streamed = streamed_in_parts(anchor, seed, jitter_ns, slack_ns, part_samples);
            let what = format!("{anchor:?}, seed {seed}");
            assert!(streamed.pieces >= 3, "{what}: {} pieces", streamed.pieces);
            if part_samples < usize::MAX {
                assert!(streamed.parts >= 4, "{what}: {} parts", streamed.parts);
            }
            let streamed = streamed.written;
            assert_eq!(streamed.sample_v2, expected.sample_v2, "{what}");
            assert_eq!(streamed.series, expected.series, "{what}");
            let keys = |w: &Written| w.objects.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
            assert_eq!(keys(&streamed), keys(&expected), "{what}");
            for ((key, a), (_, b)) in streamed.objects.iter().zip(&expected.objects) {
                assert!(a == b, "{what}: {key} differs");
            }
        }
    }
}

struct Streamed {
    written: Written,
    pieces: usize,
    /// Parts of windows among the pieces.
    parts: usize,
}

/// The recording's samples fed to a [`PendingSamples`] in a jittered file order, windows
/// written as the watermark passes them, in parts once `part_samples` samples wait.
fn streamed_in_parts(
    anchor: Anchor,
    seed: u64,
    jitter_ns: i64,
    slack_ns: i64,
    part_samples: usize,
) -> Streamed {
    let mut skeleton = recording();
    let samples: SampleTable = skeleton.replace_samples(SampleTable::default());
    let mut state = seed;
    let mut order: Vec<(i64, usize)> = (0..samples.len())
        .map(|i| {
            let late = (lcg(&mut state) as i64) % (jitter_ns + 1);
            (samples.time(i).unwrap() + late, i)
        })
        .collect();
    order.sort();
    let times: Vec<i64> = order
        .iter()
        .map(|&(_, i)| samples.time(i).unwrap())
        .collect();
    // What the first pass says: no sample from position p on is earlier than this.
    let mut watermark = vec![None; times.len() + 1];
    for p in (0..times.len()).rev() {
        watermark[p] = Some(watermark[p + 1].map_or(times[p], |w: i64| w.min(times[p])));
    }
    let mut pieces = 0;
    let mut parts = 0;
    let written = write(&mut skeleton, |p, windows, out| {
        let mut buffer = PendingSamples::new(anchor).with_part_samples(part_samples);
        for (position, &(_, i)) in order.iter().enumerate() {
            let sample = samples.get(i);
            assert!(!buffer.is_late(sample.time.unwrap()));
            buffer.push(sample);
            let mark = watermark[position + 1].map(|w| w - slack_ns);
            if mark.is_some() && buffer.ready(mark) {
                if let Some(window) = buffer.take(mark) {
                    p.replace_samples(window);
                    windows.add(p, Piece::Windows(buffer.grid()), out).unwrap();
                    pieces += 1;
                }
            }
            if let Some(part) = mark.and_then(|mark| buffer.take_part(mark)) {
                p.replace_samples(part);
                windows
                    .add(p, Piece::PartOfWindow(buffer.grid()), out)
                    .unwrap();
                parts += 1;
            }
        }
        if let Some(rest) = buffer.take(None) {
            p.replace_samples(rest);
            windows.add(p, Piece::Windows(buffer.grid()), out).unwrap();
            pieces += 1;
        }
    });
    Streamed {
        written,
        pieces,
        parts,
    }
}
