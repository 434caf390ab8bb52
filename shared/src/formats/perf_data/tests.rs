//! The decoder against `perf script` text of the same recordings (made by
//! `scripts/make_perf_data_fixtures.sh`): samples per thread, per event and per stack path
//! are counted from perf's own text, never through this decoder.

use std::collections::BTreeMap;
use std::io::Read;

use super::*;
use crate::model::{FrameAddress, FrameKind};

/// The decoder with no binaries to unwind with.
fn decode(input: &[u8], codec: &'static str, limits: &Limits) -> Result<Profile> {
    super::decode(input, codec, limits, &crate::formats::binaries::NoBinaries)
}

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../tests/fixtures/perf_data/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn perf_script(name: &str) -> String {
    let mut text = String::new();
    flate2::read::GzDecoder::new(&fixture(&format!("{name}.perf-script.txt.gz"))[..])
        .read_to_string(&mut text)
        .unwrap();
    text
}

fn decode_fixture(name: &str) -> Profile {
    decode(
        &fixture(&format!("{name}.data"))[..],
        "plain",
        &Limits::default(),
    )
    .unwrap()
}

/// One frame as perf script prints it: the address (relative to its file for a mapped user
/// file, absolute for the kernel and unknown code) and the DSO.
type Frame = (u64, String);

/// What perf script says of each sample: (tid, event, period, frames leaf first).
fn script_samples(text: &str) -> Vec<(i64, String, i64, Vec<Frame>)> {
    // A record is a header line and its callchain's tab-indented lines (none without `-g`).
    let mut records: Vec<Vec<&str>> = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match records.last_mut() {
            Some(record) if line.starts_with('\t') => record.push(line),
            _ => records.push(vec![line]),
        }
    }
    let mut out = Vec::new();
    for record in records {
        let mut lines = record.into_iter();
        let header = lines.next().unwrap();
        // `spin  9105/9107   9728.078243:    3344481 cpu-clock: [ip sym (dso)]`
        let (before, after) = header.split_once(": ").unwrap();
        let tid: i64 = before
            .split_whitespace()
            .nth(1)
            .unwrap()
            .split('/')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let mut rest = after.split_whitespace();
        let period: i64 = rest.next().unwrap().parse().unwrap();
        let event = rest.next().unwrap().trim_end_matches(':').to_owned();
        let tail: Vec<&str> = rest.collect();
        let mut frames = Vec::new();
        let mut frame_line = |line: &str| {
            let line = line.trim();
            let (address, rest) = line.split_once(' ').unwrap();
            let dso = rest
                .rsplit_once(" (")
                .map(|(_, d)| d.trim_end_matches(')'))
                .unwrap_or("");
            frames.push((u64::from_str_radix(address, 16).unwrap(), dso.to_owned()));
        };
        if !tail.is_empty() {
            frame_line(&tail.join(" "));
        }
        for line in lines {
            frame_line(line);
        }
        out.push((tid, event, period, frames));
    }
    out
}

/// The same of each sample in the model.
/// perf script prints a callchain's user addresses relative to their file, but the sampled
/// address of a recording without callchains as it was (`absolute`).
fn model_samples(profile: &Profile, absolute: bool) -> Vec<(i64, String, i64, Vec<Frame>)> {
    let mut out = Vec::new();
    for sample in profile.samples().iter() {
        let tid = profile.thread(sample.thread).tid.unwrap();
        let event = profile.str(profile.series(sample.series).name).to_owned();
        let mut frames: Vec<Frame> = match sample.stack {
            Some(leaf) => profile
                .stack_frames(leaf)
                .map(|f| {
                    let frame = profile.frame(f);
                    let Some(FrameAddress::Absolute(address)) = frame.address else {
                        panic!("perf.data frames are absolute");
                    };
                    let Some(image) = frame.image.map(|i| profile.image(i)) else {
                        return (address, "[unknown]".to_owned());
                    };
                    let path = profile.opt_str(image.path).unwrap().to_owned();
                    let relative = if absolute || frame.kind == FrameKind::Kernel {
                        address
                    } else {
                        address - image.start + image.file_offset
                    };
                    (relative, path)
                })
                .collect(),
            None => Vec::new(),
        };
        // stack_frames goes leaf first, as perf script prints.
        frames.shrink_to_fit();
        out.push((tid, event, sample.weight, frames));
    }
    out
}

fn histogram<K: Ord, V>(
    items: impl IntoIterator<Item = V>,
    key: impl Fn(V) -> K,
) -> BTreeMap<K, usize> {
    let mut map = BTreeMap::new();
    for item in items {
        *map.entry(key(item)).or_default() += 1;
    }
    map
}

fn compare(name: &str, absolute: bool, keep: impl Fn(Vec<Frame>) -> Vec<Frame>) {
    let script = script_samples(&perf_script(name));
    let profile = decode_fixture(name);
    let model = model_samples(&profile, absolute);
    assert!(!script.is_empty(), "{name}");
    assert_eq!(model.len(), script.len(), "{name}: samples");
    assert_eq!(
        histogram(model.iter(), |s| s.0),
        histogram(script.iter(), |s| s.0),
        "{name}: samples per tid"
    );
    let per_event = |v: &[(i64, String, i64, Vec<Frame>)]| {
        let mut m: BTreeMap<String, (usize, i64)> = BTreeMap::new();
        for s in v {
            let e = m.entry(s.1.clone()).or_default();
            e.0 += 1;
            e.1 += s.2;
        }
        m
    };
    assert_eq!(
        per_event(&model),
        per_event(&script),
        "{name}: samples and periods per event"
    );
    assert_eq!(
        histogram(model.into_iter(), |s| (s.0, s.3)),
        histogram(script.into_iter(), |s| (s.0, keep(s.3))),
        "{name}: samples per thread and stack path"
    );
}

#[test]
fn frame_pointer_file_matches_perf_script() {
    compare("g", false, |f| f);
}

#[test]
fn recording_without_callchains_matches_perf_script() {
    compare("plain", true, |f| f);
}

#[test]
fn pipe_mode_matches_perf_script() {
    compare("pipe", false, |f| f);
}

#[test]
fn zstd_compressed_records_match_perf_script() {
    compare("zstd", false, |f| f);
}

#[test]
fn stripped_program_recording_matches_perf_script() {
    compare("stripped", false, |f| f);
}

#[test]
fn dwarf_mode_keeps_kernel_frames_and_the_user_leaf() {
    // perf script unwinds the user stack; the decoder keeps what precedes it and its leaf.
    compare("dwarf", false, |frames| {
        let user = frames.iter().position(|(_, dso)| !dso.starts_with('['));
        let kernel = frames
            .iter()
            .take_while(|(_, dso)| dso.starts_with("[kernel"))
            .count();
        frames
            .into_iter()
            .take(user.map_or(kernel, |u| u.max(kernel) + 1))
            .collect()
    });
    let profile = decode_fixture("dwarf");
    let samples = script_samples(&perf_script("dwarf")).len();
    assert_eq!(
        profile.stats.get("perf_truncated_user_stacks"),
        Some(&(samples as u64))
    );
    assert!(profile.samples().iter().all(|s| s.unwind_error.is_some()));
}

/// The recorded program's binary (`spin.debug` is the unstripped program itself, with its
/// `.eh_frame`), served by its build ID; no other binary is at hand.
struct ProgramBinary;

impl crate::formats::binaries::UnwindBinaries for ProgramBinary {
    fn binary(&self, build_id: &crate::model::BuildId) -> Option<std::sync::Arc<[u8]>> {
        (build_id.as_str() == program_build_id()).then(|| fixture("spin.debug").into())
    }
}

#[test]
fn dwarf_mode_is_unwound_through_the_program_as_perf_unwinds_it() {
    let program = "/tmp/proflake-perf-fixtures/spin";
    // perf unwound every user stack with all binaries at hand. With the program's alone, a
    // stack follows perf's through the program and stops at the first frame elsewhere (libc's
    // `__libc_start_call_main`, `start_thread`), which it keeps.
    let cut = |frames: Vec<Frame>| -> (Vec<Frame>, bool) {
        let mut kept = Vec::new();
        let mut whole = true;
        let mut users = 0;
        for (address, dso) in frames {
            let user = !dso.starts_with("[kernel");
            let elsewhere = user && dso != program;
            // perf's DWARF unwinding prints a caller as its return address less one (in the
            // call instruction); the model keeps return addresses, as call chains give them.
            let address = if user && users > 0 {
                address + 1
            } else {
                address
            };
            users += usize::from(user);
            kept.push((address, dso));
            if elsewhere {
                whole = false;
                break;
            }
        }
        (kept, whole)
    };
    let script = script_samples(&perf_script("dwarf"));
    let profile = super::decode(
        &fixture("dwarf.data")[..],
        "plain",
        &Limits::default(),
        &ProgramBinary,
    )
    .unwrap();
    let model = model_samples(&profile, false);
    assert_eq!(model.len(), script.len());
    let expected: Vec<(i64, Vec<Frame>)> =
        script.iter().map(|s| (s.0, cut(s.3.clone()).0)).collect();
    assert_eq!(
        histogram(model.iter(), |s| (s.0, s.3.clone())),
        histogram(expected.iter(), |s| s.clone()),
        "samples per thread and stack path"
    );
    // The program's callers are there: more than the leaf of each user stack.
    let deep = model
        .iter()
        .filter(|s| s.3.iter().filter(|f| f.1 == program).count() >= 3)
        .count();
    assert!(deep * 2 > model.len(), "{deep} of {}", model.len());
    // Counted: unwound to the root, or not (perf's stack leaves the program).
    let whole = script.iter().filter(|s| cut(s.3.clone()).1).count() as u64;
    let stat = |name| profile.stats.get(name).copied().unwrap_or(0);
    assert_eq!(stat("perf_unwound_user_stacks"), whole);
    assert_eq!(
        stat("perf_truncated_user_stacks"),
        script.len() as u64 - whole
    );
    assert_eq!(
        profile
            .samples()
            .iter()
            .filter(|s| s.unwind_error.is_some())
            .count() as u64,
        script.len() as u64 - whole
    );
}

#[test]
fn threads_are_named_from_comm_and_images_carry_build_ids() {
    let profile = decode_fixture("g");
    let names: Vec<_> = profile
        .threads()
        .map(|(_, t)| profile.opt_str(t.name))
        .collect();
    assert!(names.iter().all(|n| *n == Some("spin")), "{names:?}");
    let spin = profile
        .images()
        .find(|(_, i)| {
            profile
                .opt_str(i.path)
                .is_some_and(|p| p.ends_with("/spin"))
        })
        .unwrap()
        .1;
    assert_eq!(
        spin.code_id.as_ref().map(|c| c.as_str().to_owned()),
        Some(program_build_id())
    );
    assert!(matches!(
        profile.timestamps,
        crate::model::Timestamps::TraceClock(_)
    ));
    // The command line scripts/make_perf_data_fixtures.sh ran.
    let cmdline = &profile.attributes["perf.cmdline"];
    assert!(
        cmdline.ends_with("-F 999 -e cpu-clock -g -o g.data -- ./spin 300"),
        "{cmdline}"
    );
}

/// The build ID of the recorded program, read from its ELF note.
fn program_build_id() -> String {
    let elf = fixture("spin.debug");
    // The NT_GNU_BUILD_ID note: name size 4, descriptor size 20, type 3, "GNU\0".
    let header = b"\x04\0\0\0\x14\0\0\0\x03\0\0\0GNU\0";
    let note = elf.windows(16).position(|w| w == header).unwrap() + 16;
    elf[note..note + 20]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn build_ids_inside_mmap2_records_go_to_their_images() {
    // pipe.data was recorded with --buildid-mmap: perf wrote no build-ID list in pipe mode.
    let profile = decode_fixture("pipe");
    let ids: BTreeMap<&str, Option<String>> = profile
        .images()
        .map(|(_, i)| {
            let id = i.code_id.as_ref().map(|c| c.as_str().to_owned());
            (profile.opt_str(i.path).unwrap(), id)
        })
        .collect();
    assert_eq!(
        ids["/tmp/proflake-perf-fixtures/spin"],
        Some(program_build_id())
    );
    let libc = ids.iter().find(|(p, _)| p.contains("/libc.so")).unwrap();
    assert!(libc.1.as_ref().is_some_and(|id| id.len() == 40), "{libc:?}");
}

#[test]
fn sniffs_the_magic_in_both_modes_only() {
    for name in ["g.data", "pipe.data", "zstd.data"] {
        assert!(test(&fixture(name)[..64]), "{name}");
    }
    assert!(!test(b"PERFILE2\x05\0\0\0\0\0\0\0"));
    assert!(!test(b"perf script text"));
    // Every other format's fixtures are someone else's.
    let root = format!("{}/../tests/fixtures", env!("CARGO_MANIFEST_DIR"));
    let mut seen = 0;
    for dir in std::fs::read_dir(&root).unwrap() {
        let dir = dir.unwrap().path();
        if dir.ends_with("perf_data") || !dir.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&dir).unwrap() {
            let path = file.unwrap().path();
            if !path.is_file() {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            assert!(!test(&bytes[..bytes.len().min(4096)]), "{}", path.display());
            seen += 1;
        }
    }
    assert!(seen > 20);
}

#[test]
fn cut_and_corrupt_files_are_errors() {
    let whole = fixture("g.data");
    for len in [10, 60, 104, 300, whole.len() / 2] {
        match decode(&whole[..len], "plain", &Limits::default()) {
            Err(e) => assert!(
                matches!(
                    e.kind(),
                    ErrorKind::Truncated { .. } | ErrorKind::Malformed { .. }
                ),
                "{len}: {e}"
            ),
            Ok(_) => panic!("{len} bytes decoded"),
        }
    }
    let mut bad = whole.clone();
    bad[17] = 0xff; // attr_size, now 65 408
    assert!(matches!(
        decode(&bad[..], "plain", &Limits::default())
            .unwrap_err()
            .kind(),
        ErrorKind::Malformed { .. }
    ));
    let limits = Limits {
        max_samples: 5,
        ..Limits::default()
    };
    let err = decode(&whole[..], "plain", &limits).unwrap_err();
    assert!(matches!(
        err.kind(),
        ErrorKind::LimitExceeded {
            limit: "max_samples",
            ..
        }
    ));
    // The mappings held (forks copy their parent's) count against max_table_entries.
    let limits = Limits {
        max_table_entries: 2,
        ..Limits::default()
    };
    let err = decode(&whole[..], "plain", &limits).unwrap_err();
    assert!(matches!(
        err.kind(),
        ErrorKind::LimitExceeded {
            limit: "max_table_entries",
            ..
        }
    ));
    let limits = Limits {
        max_stack_depth: 2,
        ..Limits::default()
    };
    let profile = decode(&whole[..], "plain", &limits).unwrap();
    assert!(profile
        .stats
        .get("perf_stack_too_deep")
        .is_some_and(|&n| n > 0));
}

#[test]
fn clock_data_places_samples_on_the_wall_clock_as_perf_does() {
    compare("clock", false, |f| f);
    let profile = decode_fixture("clock");
    assert_eq!(profile.timestamps, crate::model::Timestamps::UnixEpoch);
    let mut text = String::new();
    flate2::read::GzDecoder::new(&fixture("clock.tod.txt.gz")[..])
        .read_to_string(&mut text)
        .unwrap();
    // `tid 2026-11-28 11:38:02.682402635 10363.414984681:`, the time of day in UTC.
    let mut expected: Vec<(i64, i64)> = text
        .lines()
        .map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (y, mo, d) = {
                let p: Vec<i64> = f[1].split('-').map(|n| n.parse().unwrap()).collect();
                (p[0], p[1], p[2])
            };
            let (hms, nanos) = f[2].split_once('.').unwrap();
            let t: Vec<i64> = hms.split(':').map(|n| n.parse().unwrap()).collect();
            // Days from 1970-01-01 to the date (proleptic Gregorian).
            let (y2, m2) = if mo <= 2 {
                (y - 1, mo + 9)
            } else {
                (y, mo - 3)
            };
            let era = y2.div_euclid(400);
            let yoe = y2 - era * 400;
            let doy = (153 * m2 + 2) / 5 + d - 1;
            let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
            let secs = days * 86_400 + t[0] * 3600 + t[1] * 60 + t[2];
            (
                f[0].parse().unwrap(),
                secs * 1_000_000_000 + nanos.parse::<i64>().unwrap(),
            )
        })
        .collect();
    let mut got: Vec<(i64, i64)> = profile
        .samples()
        .iter()
        .map(|s| (profile.thread(s.thread).tid.unwrap(), s.time.unwrap()))
        .collect();
    expected.sort();
    got.sort();
    assert_eq!(got.len(), expected.len());
    for (g, e) in got.iter().zip(&expected) {
        // perf rounds through floating point on the way; a microsecond is plenty.
        assert_eq!(g.0, e.0);
        assert!((g.1 - e.1).abs() < 1_000, "{g:?} vs {e:?}");
    }
}

#[test]
fn no_other_sniffer_claims_perf_data() {
    for name in [
        "g.data",
        "plain.data",
        "pipe.data",
        "zstd.data",
        "dwarf.data",
    ] {
        let bytes = fixture(name);
        let prefix = &bytes[..bytes.len().min(4096)];
        assert_eq!(
            crate::formats::sniff(prefix),
            Some(crate::formats::InputFormat::PerfData)
        );
        for format in crate::formats::InputFormat::ALL {
            if *format != crate::formats::InputFormat::PerfData {
                assert!(
                    !format.sniffs(prefix),
                    "{name} claimed by {}",
                    format.name()
                );
            }
        }
    }
}

#[test]
fn damaged_files_give_errors_or_profiles_never_panics() {
    // Every 53rd byte of the header, attrs, feature sections and records set to 0xff or 0
    // in turn (a prime step, so each field is hit in some record).
    for name in ["g.data", "pipe.data", "zstd.data", "dwarf.data"] {
        let whole = fixture(name);
        for (i, at) in (0..whole.len()).step_by(53).enumerate() {
            let mut bytes = whole.clone();
            bytes[at] = if i % 2 == 0 { 0xff } else { 0 };
            let _ = decode(&bytes[..], "plain", &Limits::default());
        }
    }
}

#[test]
fn attrs_larger_than_this_reader_knows_are_read_by_their_own_size() {
    // Pipe mode's HEADER_ATTR records grown by 24 zero bytes after each attr, as a newer
    // kernel's larger perf_event_attr would be (perf 6.16 writes 152 bytes where 6.1 wrote
    // 136): the profile must not change.
    let whole = fixture("pipe.data");
    let mut grown = whole[..16].to_vec();
    let mut at = 16;
    let mut attrs = 0;
    while at + 8 <= whole.len() {
        let kind = u32::from_le_bytes(whole[at..at + 4].try_into().unwrap());
        let size = u16::from_le_bytes(whole[at + 6..at + 8].try_into().unwrap()) as usize;
        let record = &whole[at..at + size];
        if kind == 64 {
            let attr_size = u32::from_le_bytes(record[12..16].try_into().unwrap()) as usize;
            let mut out = record[..8 + attr_size].to_vec();
            out[6..8].copy_from_slice(&((size + 24) as u16).to_le_bytes());
            out[12..16].copy_from_slice(&((attr_size + 24) as u32).to_le_bytes());
            out.extend_from_slice(&[0; 24]);
            out.extend_from_slice(&record[8 + attr_size..]);
            grown.extend_from_slice(&out);
            attrs += 1;
        } else {
            grown.extend_from_slice(record);
        }
        at += size;
    }
    assert!(attrs > 0);
    let a = decode(&whole[..], "plain", &Limits::default()).unwrap();
    let b = decode(&grown[..], "plain", &Limits::default()).unwrap();
    assert_eq!(model_samples(&a, false), model_samples(&b, false));
}

/// A binary served for every build ID.
struct AnyBinary(std::sync::Arc<[u8]>);

impl crate::formats::binaries::UnwindBinaries for AnyBinary {
    fn binary(&self, _: &crate::model::BuildId) -> Option<std::sync::Arc<[u8]>> {
        Some(self.0.clone())
    }
}

#[test]
fn damaged_binaries_and_stacks_never_fail_what_decodes_without_unwinding() {
    let recording = fixture("dwarf.data");
    // The program's binary with every 31st byte set to 0xff or 0 in turn, served for every
    // image (libc and the kernel too): the recording decodes, whatever is unwound.
    let binary = fixture("spin.debug");
    for (i, at) in (0..binary.len()).step_by(31).enumerate() {
        let mut bytes = binary.clone();
        bytes[at] = if i % 2 == 0 { 0xff } else { 0 };
        let served = AnyBinary(bytes.into());
        let profile = super::decode(&recording[..], "plain", &Limits::default(), &served);
        assert!(profile.is_ok(), "byte {at}: {:?}", profile.err());
    }
    // Damaged recordings (registers, stack bytes, mappings among them) with the good binary:
    // an error exactly where decoding without it errs too.
    let served = AnyBinary(binary.into());
    for (i, at) in (0..recording.len()).step_by(53).enumerate() {
        let mut bytes = recording.clone();
        bytes[at] = if i % 2 == 0 { 0xff } else { 0 };
        let with = super::decode(&bytes[..], "plain", &Limits::default(), &served);
        let without = decode(&bytes[..], "plain", &Limits::default());
        assert_eq!(
            with.as_ref().err().map(|e| e.to_string()),
            without.as_ref().err().map(|e| e.to_string()),
            "byte {at}"
        );
    }
}

/// A sample whose call-chain length is past 2^61 (×8 overflows) is refused by our check,
/// before the crate's parser multiplies it (found by fuzzing).
#[test]
fn a_call_chain_longer_than_its_record_is_refused_before_the_crate_reads_it() {
    let mut file = fixture("g.data");
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let (data, end) = (
        u64_at(&file, 40) as usize,
        (u64_at(&file, 40) + u64_at(&file, 48)) as usize,
    );
    // The first SAMPLE record (type 9); g.data records IP|TID|TIME|CALLCHAIN|PERIOD, so the
    // call chain's length is the body's fifth word.
    let mut at = data;
    while at < end {
        let kind = u32::from_le_bytes(file[at..at + 4].try_into().unwrap());
        let size = u16::from_le_bytes(file[at + 6..at + 8].try_into().unwrap()) as usize;
        if kind == 9 {
            break;
        }
        at += size;
    }
    assert!(at < end, "g.data has a sample");
    file[at + 8 + 32..at + 8 + 40].copy_from_slice(&(1u64 << 62).to_le_bytes());
    let err = decode(&file, "plain", &Limits::default()).unwrap_err();
    assert!(
        err.to_string()
            .contains("a call chain longer than its record"),
        "{err}"
    );
}

/// A pipe-mode `EVENT_DESC` whose 64-bit feature id has high bits set is still `EVENT_DESC` to
/// the crate (it keeps the low 32), so its counts are checked too: an event count of 2^31
/// would otherwise be allocated at once (found by fuzzing).
#[test]
fn a_pipe_event_desc_is_checked_whatever_the_high_bits_of_its_id() {
    let mut file = fixture("pipe.data");
    let mut at = 16;
    let mut found = false;
    while at + 8 <= file.len() {
        let kind = u32::from_le_bytes(file[at..at + 4].try_into().unwrap());
        let size = u16::from_le_bytes(file[at + 6..at + 8].try_into().unwrap()) as usize;
        if kind == 80 && file[at + 8..at + 16] == 12u64.to_le_bytes() {
            file[at + 12..at + 16].copy_from_slice(&0x2f00_0000u32.to_le_bytes());
            file[at + 16..at + 20].copy_from_slice(&(1u32 << 31).to_le_bytes());
            found = true;
            break;
        }
        at += size.max(8);
    }
    assert!(found, "pipe.data has an EVENT_DESC record");
    let err = decode(&file, "plain", &Limits::default()).unwrap_err();
    assert!(err.to_string().contains("EVENT_DESC"), "{err}");
}

/// The crate reads an attr whose size lies between two of the kernel's versions only up to
/// the version below, then goes on from a few bytes too early: in a pipe's `EVENT_DESC` it
/// then took 4 of an attr's bytes for an id count and allocated 34 GB for the ids (found by
/// fuzzing). Such an attr is refused.
#[test]
fn an_event_desc_attr_between_two_versions_is_refused() {
    let file = include_bytes!(
        "../../../../tests/fuzz/regressions/decode_perf_data/attr-size-between-versions"
    );
    let err = decode(file, "plain", &Limits::default()).unwrap_err();
    assert!(
        err.to_string()
            .contains("EVENT_DESC: an attr of 100 bytes in slots of 128"),
        "{err}"
    );
}

/// The same in a file's `attrs` section, where the id section that follows each attr would be
/// read from the wrong place; and an id section past the end of the file is refused too.
#[test]
fn a_file_attr_between_two_versions_or_with_ids_past_the_end_is_refused() {
    let file = fixture("g.data");
    let word = |at: usize| u64::from_le_bytes(file[at..at + 8].try_into().unwrap()) as usize;
    // perf's attr_size counts the 16 bytes of each attr's id section.
    let (slot, attrs) = (word(16) - 16, word(24));
    assert_eq!(slot, 128, "attrs of version 7");

    let mut between = file.clone();
    between[attrs + 4..attrs + 8].copy_from_slice(&100u32.to_le_bytes());
    let err = decode(&between, "plain", &Limits::default()).unwrap_err();
    assert!(
        err.to_string()
            .contains("attrs: an attr of 100 bytes in slots of 128"),
        "{err}"
    );

    let mut ids_past_end = file.clone();
    let ids_size = attrs + slot + 8;
    ids_past_end[ids_size..ids_size + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let err = decode(&ids_past_end, "plain", &Limits::default()).unwrap_err();
    assert!(err.to_string().contains("an attr's ids"), "{err}");
}
