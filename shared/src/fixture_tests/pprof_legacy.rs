//! gperftools' legacy binary CPU profiles: what the decoder makes of two Go recordings and a
//! gperftools one, checked against the test's own walk of their words and against
//! `go tool pprof`'s decoding of the Go ones (the `.string` goldens); every word layout;
//! detection both ways; malformed files. Provenance: tests/fixtures/pprof-legacy/SOURCES.md.

use std::collections::HashMap;

use super::decode;
use crate::{
    convert_upload, formats::sniff, model::FrameAddress, model::SeriesKind,
    writers::sample_v2::check_sample_v2, ConvertOptions, ErrorKind, InputFormat, Limits,
    UploadMetadata,
};

use super::util::{files_under, fixture, fixture_path, plain, repo_path, samples, stat};

const CRC32: &str = "pprof-legacy/google-pprof_go.crc32.cpu";
const GOBENCH: &str = "pprof-legacy/google-pprof_gobench.cpu";
const SAMPLE: &str = "samples/pprof-legacy/gperftools.prof";

fn sample_bytes() -> Vec<u8> {
    std::fs::read(repo_path(SAMPLE)).unwrap()
}

/// A profile as the test reads it from its words (64-bit little-endian, as all three are).
struct Walked {
    period_us: u64,
    /// `(count, program counters leaf first)` per record.
    records: Vec<(u64, Vec<u64>)>,
    /// The text after the trailer.
    maps: String,
}

impl Walked {
    fn read(bytes: &[u8]) -> Walked {
        let word = |i: usize| u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap());
        assert_eq!([word(0), word(1), word(2), word(4)], [0, 3, 0, 0]);
        let mut at = 5;
        let mut records = Vec::new();
        loop {
            let (count, depth) = (word(at), word(at + 1) as usize);
            let pcs: Vec<u64> = (0..depth).map(|i| word(at + 2 + i)).collect();
            at += 2 + depth;
            if (count, pcs.as_slice()) == (0, &[0][..]) {
                break;
            }
            records.push((count, pcs));
        }
        Walked {
            period_us: word(3),
            records,
            maps: String::from_utf8(bytes[at * 8..].to_vec()).unwrap(),
        }
    }

    fn total(&self) -> u64 {
        self.records.iter().map(|r| r.0).sum()
    }

    fn max_depth(&self) -> usize {
        self.records.iter().map(|r| r.1.len()).max().unwrap()
    }

    /// The executable mappings the maps text lists: `(start, end, file offset, path)`.
    fn executable_maps(&self) -> Vec<(u64, u64, u64, String)> {
        (self.maps.lines())
            .filter_map(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                let (start, end) = fields.first()?.split_once('-')?;
                fields.get(1)?.contains('x').then(|| {
                    let hex = |s| u64::from_str_radix(s, 16).unwrap();
                    (hex(start), hex(end), hex(fields[2]), fields[5..].join(" "))
                })
            })
            .collect()
    }
}

/// Each model sample's weight and leaf-first frame addresses, in order.
fn decoded_records(bytes: &[u8]) -> Vec<(String, i64, Vec<u64>)> {
    let decoded = decode(bytes, None).unwrap();
    assert_eq!(decoded.format, InputFormat::PprofLegacy);
    samples(&decoded.profile)
        .iter()
        .map(|s| {
            let pcs = (s.frames().iter().rev())
                .map(|f| match f.address {
                    Some(FrameAddress::Absolute(pc)) => pc,
                    other => panic!("frame address {other:?}"),
                })
                .collect();
            (s.series.name.clone(), s.weight, pcs)
        })
        .collect()
}

#[test]
fn recordings_decode_to_the_walked_counts_in_two_series() {
    // (input, records, samples, deepest record), as SOURCES.md gives them.
    let inputs = [
        (fixture(CRC32), 69, 211, 7),
        (fixture(GOBENCH), 206, 305, 17),
        (sample_bytes(), 11, 44, 7),
    ];
    for (bytes, records, total, depth) in inputs {
        let walked = Walked::read(&bytes);
        assert_eq!(
            (walked.records.len(), walked.total(), walked.max_depth()),
            (records, total, depth)
        );
        assert!(walked.records.iter().all(|r| r.0 > 0));
        let period_ns = walked.period_us as i64 * 1000;
        let profile = decode(&bytes, None).unwrap().profile;
        let rows = samples(&profile);
        assert_eq!(rows.len(), 2 * records, "two samples per record");
        let sum = |name: &str| -> i64 {
            let rows = rows.iter().filter(|s| s.series.name == name);
            rows.map(|s| s.weight).sum()
        };
        assert_eq!(sum("samples"), total as i64);
        assert_eq!(sum("cpu"), total as i64 * period_ns);
        let series: Vec<_> = (profile.all_series())
            .map(|(_, s)| (profile.str(s.name), s.kind, s.frequency_hz, s.period))
            .collect();
        assert_eq!(
            series,
            [
                ("samples", SeriesKind::Other, Some(100), None),
                ("cpu", SeriesKind::CpuTime, None, Some(10_000_000)),
            ]
        );
        assert!(rows.iter().all(|s| s.time.is_none() && s.tid.is_none()));
    }
}

/// `go tool pprof`'s decoding of a profile (`Profile.String()`): per sample line its values
/// and addresses, leaf first, as it shows them.
fn pprof_string(text: &str) -> Vec<(i64, i64, Vec<u64>)> {
    let (samples, rest) = text.split_once("Locations\n").unwrap();
    let locations: HashMap<&str, u64> = (rest.lines())
        .take_while(|l| !l.starts_with("Mappings"))
        .map(|l| {
            let (id, rest) = l.trim().split_once(": ").unwrap();
            let hex = rest.split_whitespace().next().unwrap();
            (id, u64::from_str_radix(&hex[2..], 16).unwrap())
        })
        .collect();
    (samples.lines())
        .filter_map(|l| l.split_once(':'))
        .filter_map(|(values, ids)| {
            let v: Vec<i64> = values
                .split_whitespace()
                .map(|v| v.parse().ok())
                .collect::<Option<_>>()?;
            let pcs = ids.split_whitespace().map(|id| locations[id]).collect();
            Some((v[0], v[1], pcs))
        })
        .collect()
}

#[test]
fn stacks_are_those_go_tool_pprof_shows() {
    for (rel, signal_frames) in [(CRC32, 2 * 69), (GOBENCH, 0)] {
        let expected = pprof_string(&String::from_utf8(fixture(&format!("{rel}.string"))).unwrap());
        let decoded = decoded_records(&fixture(rel));
        assert_eq!(decoded.len(), 2 * expected.len(), "{rel}");
        for (i, (count, cpu, pprof_pcs)) in expected.iter().enumerate() {
            let (samples, cpu_row) = (&decoded[2 * i], &decoded[2 * i + 1]);
            assert_eq!((samples.1, cpu_row.1), (*count, *cpu), "{rel} sample {i}");
            // pprof moves callers back by one; the model keeps them as recorded.
            let moved: Vec<u64> = (samples.2.iter().enumerate())
                .map(|(depth, &pc)| if depth == 0 { pc } else { pc - 1 })
                .collect();
            assert_eq!(&moved, pprof_pcs, "{rel} sample {i}");
            assert_eq!(samples.2, cpu_row.2);
        }
        let profile = decode(&fixture(rel), None).unwrap().profile;
        assert_eq!(
            stat(&profile, "pprof_legacy_signal_frames"),
            signal_frames,
            "{rel}"
        );
    }
    let crc32: i64 = pprof_string(&String::from_utf8(fixture(&format!("{CRC32}.string"))).unwrap())
        .iter()
        .map(|s| s.1)
        .sum();
    assert_eq!(crc32, 2_110_000_000);
}

#[test]
fn the_maps_text_gives_frames_their_images() {
    let bytes = sample_bytes();
    let walked = Walked::read(&bytes);
    let maps = walked.executable_maps();
    assert_eq!(maps.len(), 11);
    let profile = decode(&bytes, None).unwrap().profile;
    assert_eq!(
        profile.images().len(),
        maps.len(),
        "one image per executable mapping"
    );
    let mut leaves = 0;
    for s in samples(&profile) {
        for f in s.frames() {
            let Some(FrameAddress::Absolute(pc)) = f.address else {
                panic!("address {:?}", f.address);
            };
            let holder = maps.iter().find(|m| m.0 <= pc && pc < m.1);
            assert_eq!(
                f.image_path.as_deref(),
                holder.map(|m| m.3.as_str()),
                "{pc:#x}"
            );
            assert_eq!(f.kind, "native");
            assert_eq!(f.function, None, "unsymbolized");
        }
        leaves += 1;
        assert_eq!(
            s.leaf().unwrap().image_path.as_deref(),
            Some("/tmp/workload/workload"),
            "every leaf is in the program"
        );
    }
    assert_eq!(leaves, 2 * walked.records.len());
    let program = &maps[0];
    let image = (profile.images())
        .map(|(_, i)| i)
        .find(|i| profile.opt_str(i.path) == Some(program.3.as_str()))
        .unwrap();
    assert_eq!(
        (image.start, image.end, image.file_offset),
        (program.0, program.1, program.2)
    );
    // The Go recordings have no maps text: frames without images.
    let go = decode(&fixture(CRC32), None).unwrap().profile;
    assert_eq!(go.images().len(), 0);
}

fn metadata() -> ConvertOptions {
    ConvertOptions {
        metadata: UploadMetadata {
            timestamp: Some(1_763_800_000.0),
            ..UploadMetadata::default()
        },
        ..ConvertOptions::default()
    }
}

#[test]
fn conversion_places_the_records_and_writes_cpu_chunks() {
    let bytes = sample_bytes();
    let err = convert_upload("uploads/w.prof", "e", &bytes, &ConvertOptions::default());
    assert!(matches!(err.unwrap_err().kind(), ErrorKind::NoStartTime));
    let converted = convert_upload("uploads/w.prof", "e", &bytes, &metadata()).unwrap();
    assert_eq!(converted.manifest.source.format, "pprof-legacy");
    let chunks = converted.sample_v2();
    assert!(!chunks.is_empty());
    for (key, json) in chunks {
        assert_eq!(check_sample_v2(json), vec![], "{key}");
    }
    let walked = Walked::read(&bytes);
    // One chunk sample per recorded sample: CPU time in 10 ms periods.
    let v2 = &converted.manifest.sample_v2;
    assert_eq!(v2.samples, walked.total());
    assert_eq!(
        v2.expansion.as_ref().map(|e| e.interval_ns),
        Some(10_000_000)
    );
    let cpu = (converted.manifest.series.iter())
        .find(|s| s.sample_type == "cpu")
        .unwrap();
    assert_eq!(cpu.kind, "cpu_time");
    assert_eq!(cpu.total_value, i128::from(walked.total()) * 10_000_000);
}

// ---- word layouts ------------------------------------------------------------------------

/// The words of `walked` (and its maps text) in another layout.
fn encode(walked: &Walked, width: usize, big_endian: bool) -> Vec<u8> {
    let mut words = vec![0, 3, 0, walked.period_us, 0];
    for (count, pcs) in &walked.records {
        words.extend([*count, pcs.len() as u64]);
        words.extend(pcs);
    }
    words.extend([0, 1, 0]);
    let mut out = Vec::new();
    for w in words {
        match (width, big_endian) {
            (8, false) => out.extend(w.to_le_bytes()),
            (8, true) => out.extend(w.to_be_bytes()),
            (_, false) => out.extend(u32::try_from(w).unwrap().to_le_bytes()),
            (_, true) => out.extend(u32::try_from(w).unwrap().to_be_bytes()),
        }
    }
    out.extend(walked.maps.as_bytes());
    out
}

#[test]
fn every_word_layout_decodes_alike() {
    // The Go addresses fit 32 bits; the test's own maps text gives them images too.
    let mut walked = Walked::read(&fixture(CRC32));
    walked.maps = "400000-500000 r-xp 00000000 08:01 42 /bin/crc32\n".into();
    let expected = decoded_records(&encode(&walked, 8, false));
    for (width, big_endian) in [(8, true), (4, false), (4, true)] {
        let bytes = encode(&walked, width, big_endian);
        assert_eq!(sniff(&bytes), Some(InputFormat::PprofLegacy));
        assert_eq!(
            decoded_records(&bytes),
            expected,
            "{width} bytes, big endian {big_endian}"
        );
        let profile = decode(&bytes, None).unwrap().profile;
        let paths: Vec<_> = samples(&profile)
            .iter()
            .map(|s| s.leaf().unwrap().image_path.clone())
            .collect();
        assert!(paths.iter().all(|p| p.as_deref() == Some("/bin/crc32")));
    }
}

// ---- detection -----------------------------------------------------------------------------

fn prefix(bytes: &[u8]) -> &[u8] {
    &bytes[..bytes.len().min(4096)]
}

#[test]
fn only_the_legacy_sniffer_claims_the_recordings() {
    for bytes in [fixture(CRC32), fixture(GOBENCH), sample_bytes()] {
        assert_eq!(sniff(prefix(&bytes)), Some(InputFormat::PprofLegacy));
        for &other in InputFormat::ALL {
            if other != InputFormat::PprofLegacy {
                assert!(!other.sniffs(prefix(&bytes)), "sniffs as {other:?}");
            }
        }
    }
}

#[test]
fn the_legacy_sniffer_claims_no_other_input() {
    let mut inputs = Vec::new();
    for root in [fixture_path(""), repo_path("samples")] {
        for entry in std::fs::read_dir(root).unwrap() {
            let dir = entry.unwrap().path();
            if dir.file_name().is_some_and(|n| n != "pprof-legacy") {
                files_under(&dir, "", &mut inputs);
            }
        }
    }
    // go tool pprof's text renderings beside the fixtures are not profiles.
    files_under(&fixture_path("pprof-legacy"), ".string", &mut inputs);
    assert!(inputs.len() >= 40, "only {} inputs found", inputs.len());
    for path in inputs {
        let bytes = plain(std::fs::read(&path).unwrap(), &path.display().to_string());
        assert!(
            !InputFormat::PprofLegacy.sniffs(prefix(&bytes)),
            "{} must not sniff as pprof-legacy",
            path.display()
        );
        assert_ne!(sniff(prefix(&bytes)), Some(InputFormat::PprofLegacy));
    }
}

// ---- malformed input -----------------------------------------------------------------------

/// A 64-bit little-endian profile of the given words after the header (10 ms period).
fn words(body: &[u64]) -> Vec<u8> {
    [0, 3, 0, 10_000, 0]
        .iter()
        .chain(body)
        .flat_map(|w| w.to_le_bytes())
        .collect()
}

#[test]
fn cut_records_are_truncated_and_other_bytes_malformed() {
    let whole = fixture(CRC32);
    let walked = Walked::read(&whole);
    let first = 16 + 8 * walked.records[0].1.len();
    for cut in [48, 56, 40 + first - 1] {
        let err = decode(&whole[..cut], None).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::Truncated { offset: 40, .. }),
            "cut at {cut}: {err}"
        );
    }
    // Cut after a whole record: read as pprof reads it, and counted.
    let profile = decode(&whole[..40 + first], None).unwrap().profile;
    assert_eq!(samples(&profile).len(), 2);
    assert_eq!(stat(&profile, "pprof_legacy_no_trailer"), 1);

    let err = decode(
        b"not a profile at all, in any layout",
        Some(InputFormat::PprofLegacy),
    );
    match err.unwrap_err().kind() {
        ErrorKind::Malformed {
            format,
            offset,
            what,
        } => {
            assert_eq!((*format, *offset), ("pprof-legacy", 0));
            assert!(what.contains("0, 3, 0, period, 0"), "{what}");
        }
        other => panic!("{other:?}"),
    }
    let err = decode(&words(&[u64::MAX, 1, 0x1234, 0, 1, 0]), None).unwrap_err();
    match err.kind() {
        ErrorKind::Malformed { offset, what, .. } => {
            assert_eq!(*offset, 40);
            assert!(what.contains("overflows"), "{what}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn odd_records_are_kept_or_counted_and_limits_hold() {
    // A zero count, a record without frames, and one deeper than max_stack_depth.
    let mut body = vec![0, 1, 0x10, 3, 0, 2, 9000];
    body.extend((0..9000).map(|i| 0x1000 + i));
    body.extend([0, 1, 0]);
    let profile = decode(&words(&body), None).unwrap().profile;
    assert_eq!(stat(&profile, "pprof_legacy_zero_count"), 1);
    assert_eq!(stat(&profile, "pprof_legacy_stack_too_deep"), 1);
    let rows = samples(&profile);
    assert_eq!(rows.len(), 4);
    assert!(rows.iter().all(|s| s.stack.is_none()));
    assert_eq!(
        rows.iter().map(|s| s.weight).collect::<Vec<_>>(),
        [3, 30_000_000, 2, 20_000_000]
    );

    // 11 records are 22 samples; the maps text has 59 lines of more than 40 bytes.
    let bytes = sample_bytes();
    let base = Limits::default();
    let tight = [
        (
            "max_samples",
            Limits {
                max_samples: 21,
                ..base.clone()
            },
        ),
        (
            "max_table_entries",
            Limits {
                max_table_entries: 10,
                ..base.clone()
            },
        ),
        (
            "max_line_bytes",
            Limits {
                max_line_bytes: 40,
                ..base
            },
        ),
    ];
    for (name, limits) in tight {
        let options = ConvertOptions {
            limits,
            ..metadata()
        };
        let err = convert_upload("uploads/w", "e", &bytes, &options).unwrap_err();
        match err.kind() {
            ErrorKind::LimitExceeded { limit, .. } => assert_eq!(*limit, name),
            other => panic!("{name}: {other:?}"),
        }
    }
}
