//! Profiles on a clock of their own convert without being told when they started: nothing
//! else saying so, they are placed at the upload's arrival, and the manifest and the
//! `profiles` table say so; a caller that requires a start time is refused as before.

use crate::{convert_upload, model::Timestamps, ConvertOptions, ErrorKind};

use super::util::{decode_ok, files_under, fixture_path, plain};

/// When the uploads arrived: 2023-11-14T23:13:20Z.
const ARRIVAL_NS: i64 = 1_700_003_600_000_000_000;

/// Every real Chrome trace, V8 CPU profile, Firefox profile, `perf script` text and speedscope
/// file among the fixtures.
fn real_files() -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for dir in [
        "chrome",
        "cpuprofile",
        "firefox",
        "perf_script",
        "speedscope",
    ] {
        files_under(&fixture_path(dir), "", &mut files);
    }
    // Project-made inputs and their generator are not real files.
    files.retain(|p| {
        let name = p.file_name().unwrap().to_string_lossy();
        !name.starts_with("synthetic_") && !name.starts_with("proflake_") && !name.ends_with(".py")
    });
    files.sort();
    files
}

#[test]
fn every_real_profile_converts_without_a_start_time() {
    let files = real_files();
    assert!(files.len() >= 24, "only {} files", files.len());
    let mut at_arrival = 0;
    for path in &files {
        let what = path.display().to_string();
        let bytes = std::fs::read(path).unwrap();
        // What the input itself says of the wall clock, read from the decoded model.
        let decoded = decode_ok(&plain(bytes.clone(), &what), &what);
        let own_clock = matches!(decoded.profile.timestamps, Timestamps::TraceClock(_))
            && decoded.profile.start_time.is_none();
        let options = ConvertOptions {
            received_at_ns: Some(ARRIVAL_NS),
            ..ConvertOptions::default()
        };
        let converted = convert_upload("uploads/p", "etag", &bytes, &options)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let manifest = &converted.manifest;
        // Spans cut at the window boundaries may add a few.
        assert!(
            manifest.profile.samples >= decoded.profile.samples().len() as u64,
            "{what}"
        );
        if own_clock {
            at_arrival += 1;
            assert_eq!(manifest.profile.clock_source, "arrival", "{what}");
            // The earliest sample or mark is placed at the arrival: no chunk starts before,
            // and every table file lies on the arrival's day.
            let starts = manifest.outputs.iter().filter_map(|o| o.start_ns);
            assert!(starts.clone().all(|t| t >= ARRIVAL_NS), "{what}");
            let tables = manifest
                .outputs
                .iter()
                .filter(|o| o.kind.starts_with("table:"));
            assert!(tables.clone().count() > 0, "{what}");
            assert!(
                tables.clone().all(|o| o.key.contains("/dt=2023-11-14/")),
                "{what}"
            );
            let required = ConvertOptions {
                require_start_time: true,
                ..options
            };
            let err = convert_upload("uploads/p", "etag", &bytes, &required).unwrap_err();
            assert!(
                matches!(err.kind(), ErrorKind::NoWallClock { .. }),
                "{what}: {err}"
            );
        } else {
            assert_ne!(manifest.profile.clock_source, "metadata", "{what}");
        }
    }
    // The traces, cpuprofiles, perf script text and speedscope files on their own clocks.
    assert!(at_arrival >= 15, "only {at_arrival} on their own clock");
}
