//! perf.data inputs through the public API: detection both ways, the manifest of a DWARF-mode
//! recording (its truncated stacks counted, and unwound with the binary a `SymbolSource` hands
//! over), a CLOCK_DATA recording converting without a start
//! time, and a zstd-compressed upload of a recording. What each recording holds is checked in
//! the decoder's own tests against perf script's text. Fixture provenance:
//! tests/fixtures/perf_data/SOURCES.md.

use std::io::Read;

use crate::{convert_upload, ConvertOptions, InputFormat};

use super::util::{
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

/// The program's binary (`spin.debug` is the unstripped program) by its build ID, through the
/// public `SymbolSource`; no symbols, so the frames stay addresses.
struct ProgramBinary;

const PROGRAM_BUILD_ID: &str = "04195005c872b988189f86ee21f2b8fd80eb27c0";

impl crate::symbolize::SymbolSource for ProgramBinary {
    fn symbols(
        &self,
        _: &crate::model::BuildId,
    ) -> crate::Result<Option<crate::symbolize::Symbols>> {
        Ok(None)
    }

    fn binary(
        &self,
        build_id: &crate::model::BuildId,
        has_unwind_tables: &dyn Fn(&[u8]) -> bool,
    ) -> crate::Result<Option<Vec<u8>>> {
        let bytes = fixture("perf_data/spin.debug");
        assert!(has_unwind_tables(&bytes));
        Ok((build_id.as_str() == PROGRAM_BUILD_ID).then_some(bytes))
    }
}

/// A source whose store fails.
struct FailingStore;

impl crate::symbolize::SymbolSource for FailingStore {
    fn symbols(
        &self,
        _: &crate::model::BuildId,
    ) -> crate::Result<Option<crate::symbolize::Symbols>> {
        Ok(None)
    }

    fn binary(
        &self,
        _: &crate::model::BuildId,
        _: &dyn Fn(&[u8]) -> bool,
    ) -> crate::Result<Option<Vec<u8>>> {
        Err(crate::ErrorKind::Storage {
            key: "debuginfo/".into(),
        }
        .into())
    }
}

#[test]
fn dwarf_mode_stacks_unwind_with_the_binary_a_symbol_source_hands_over() {
    let bytes = fixture("perf_data/dwarf.data");
    let options = ConvertOptions {
        metadata: crate::UploadMetadata {
            timestamp: Some(1_700_000_000.0),
            ..Default::default()
        },
        ..ConvertOptions::default()
    };
    let convert = |symbols: &dyn crate::symbolize::SymbolSource| {
        crate::pipeline::convert_upload_with(
            "uploads/dwarf.data",
            "etag",
            &bytes,
            &options,
            symbols,
        )
    };
    let samples = perf_script_samples("dwarf");
    let without = convert(&crate::symbolize::NoSymbols).unwrap();
    let with = convert(&ProgramBinary).unwrap();
    let frames = |c: &crate::Converted| c.decoded.profile.frames().len();
    // The callers are new frames: every stack reaches libc through the program's callers.
    assert!(
        frames(&with) > frames(&without) + 4,
        "{} vs {}",
        frames(&with),
        frames(&without)
    );
    // Each stack leaves the program for libc (`__libc_start_call_main`, `start_thread`), whose
    // binary is not at hand: unwound in part, and counted so.
    let stats = &with.manifest.profile.stats;
    assert_eq!(stats.get("perf_truncated_user_stacks"), Some(&samples));
    assert_eq!(stats.get("perf_unwound_user_stacks"), None);
    // A store that fails fails the conversion (to be retried), not the stacks silently.
    let err = convert(&FailingStore).unwrap_err();
    assert!(err.kind().is_transient(), "{err}");
}
