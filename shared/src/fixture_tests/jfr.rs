//! Java Flight Recorder recordings: detection both ways. The recordings' contents are checked
//! against `jfr print` in the library's own tests (`shared/src/formats/jfr/tests.rs`).

use crate::InputFormat;

use super::util::{assert_claims_no_other_input, assert_only_sniffer, fixture, repo_path};

const FIXTURES: &[&str] = &["jfr/jdk17.jfr", "jfr/jdk25.jfr", "jfr/jdk17-chunks.jfr.gz"];

#[test]
fn only_the_jfr_sniffer_claims_the_recordings() {
    let mut inputs: Vec<(String, Vec<u8>)> = FIXTURES
        .iter()
        .map(|rel| (rel.to_string(), fixture(rel)))
        .collect();
    let sample = repo_path("samples/jfr/workload-jdk25.jfr.gz");
    inputs.push((
        sample.display().to_string(),
        std::fs::read(&sample).unwrap(),
    ));
    assert_only_sniffer(InputFormat::Jfr, &inputs);
}

#[test]
fn the_jfr_sniffer_claims_no_other_input() {
    assert_claims_no_other_input(InputFormat::Jfr, "jfr");
}

#[test]
fn a_recording_decodes_through_the_public_api() {
    let decoded = super::decode(&fixture("jfr/jdk17-chunks.jfr.gz"), None).unwrap();
    assert_eq!(decoded.format, InputFormat::Jfr);
    assert_eq!(decoded.profile.source_format, "jfr");
    assert_eq!(decoded.metadata.unwrap().platform.as_deref(), Some("java"));
}
