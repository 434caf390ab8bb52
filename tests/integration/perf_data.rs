//! perf.data inputs through the public API: detection both ways, the manifest of a DWARF-mode
//! recording (its truncated stacks counted), a CLOCK_DATA recording converting without a start
//! time, and a zstd-compressed upload of a recording. What each recording holds is checked in
//! the decoder's own tests against perf script's text. Fixture provenance:
//! tests/fixtures/perf_data/SOURCES.md.

use std::io::Read;

use proflake::{convert_upload, ConvertOptions, InputFormat};

use crate::util::{
    assert_only_sniffer, convert_on_a_trace_clock, files_under, fixture, fixture_path, plain,
    repo_path, sniff_prefix, zstd_compress,
};

const RECORDINGS: [&str; 7] = [
    "perf_data/g.data",
    "perf_data/plain.data",
    "perf_data/pipe.data",
    "perf_data/zstd.data",
    "perf_data/clock.data",
    "perf_data/dwarf.data",
    "perf_data/stripped.data",
];

/// How many samples perf script printed of a recording: its header lines.
fn perf_script_samples(name: &str) -> u64 {
    let mut text = String::new();
    flate2::read::GzDecoder::new(&fixture(&format!("perf_data/{name}.perf-script.txt.gz"))[..])
        .read_to_string(&mut text)
        .unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('\t'))
        .count() as u64
}

#[test]
fn only_the_perf_data_sniffer_claims_the_recordings() {
    let mut inputs: Vec<(String, Vec<u8>)> = RECORDINGS
        .iter()
        .map(|rel| (rel.to_string(), fixture(rel)))
        .collect();
    let sample = repo_path("samples/perf-data/spin.data");
    inputs.push((
        "samples/perf-data/spin.data".into(),
        std::fs::read(sample).unwrap(),
    ));
    assert_only_sniffer(InputFormat::PerfData, &inputs);
}

#[test]
fn the_perf_data_sniffer_claims_no_other_input() {
    let mut inputs = Vec::new();
    for root in [fixture_path(""), repo_path("samples")] {
        for entry in std::fs::read_dir(root).unwrap() {
            let dir = entry.unwrap().path();
            if dir
                .file_name()
                .is_some_and(|n| n != "perf_data" && n != "perf-data")
            {
                files_under(&dir, "", &mut inputs);
            }
        }
    }
    assert!(inputs.len() >= 40, "only {} inputs found", inputs.len());
    for path in inputs {
        let bytes = plain(std::fs::read(&path).unwrap(), &path.display().to_string());
        assert!(
            !InputFormat::PerfData.sniffs(sniff_prefix(&bytes)),
            "{} must not sniff as perf-data",
            path.display()
        );
    }
}

#[test]
fn dwarf_mode_truncated_stacks_are_counted_in_the_manifest() {
    let bytes = fixture("perf_data/dwarf.data");
    let converted = convert_on_a_trace_clock("uploads/dwarf.data", &bytes, "dwarf.data");
    let manifest = &converted.manifest;
    assert_eq!(manifest.source.format, "perf-data");
    let samples = perf_script_samples("dwarf");
    assert_eq!(manifest.profile.samples, samples);
    assert_eq!(
        manifest.profile.stats.get("perf_truncated_user_stacks"),
        Some(&samples)
    );
}

#[test]
fn a_clock_data_recording_needs_no_start_time_and_a_zstd_upload_converts_the_same() {
    let bytes = fixture("perf_data/clock.data");
    let plain = convert_upload(
        "uploads/clock.data",
        "etag",
        &bytes,
        &ConvertOptions::default(),
    )
    .unwrap();
    assert_eq!(plain.manifest.profile.samples, perf_script_samples("clock"));
    let packed = zstd_compress(&bytes);
    let zstd = convert_upload(
        "uploads/clock.data.zst",
        "etag",
        &packed,
        &ConvertOptions::default(),
    )
    .unwrap();
    assert_eq!(zstd.manifest.source.container, "zstd");
    assert_eq!(
        zstd.manifest.profile.samples,
        plain.manifest.profile.samples
    );
    assert_eq!(zstd.manifest.series.len(), plain.manifest.series.len());
}
