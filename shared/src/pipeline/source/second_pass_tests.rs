//! A JFR recording converted with a second pass gives the outputs of its whole decode, byte for
//! byte: its samples keep their context's labels, and chunks whose times overlap wait for one
//! another.

use crate::error::Result;
use crate::formats::jfr_chunks_apart;
use crate::pipeline::{convert_into, ConvertOptions, UploadInput};
use crate::writers::outputs::MemoryOutputs;

/// Every object a conversion of `recording` hands its sink, the manifest last, and in how
/// many pieces: with a second pass when `second_pass`, else whole.
fn converted(
    recording: &[u8],
    options: &ConvertOptions,
    second_pass: bool,
) -> (Vec<(String, Vec<u8>)>, u64) {
    let mut options = options.clone();
    options.stream_above_bytes = Some(if second_pass { 0 } else { u64::MAX });
    let reopen = move || -> Result<Box<dyn std::io::Read + Send + '_>> { Ok(Box::new(recording)) };
    let input = UploadInput::Stream {
        reader: Box::new(recording),
        len: recording.len() as u64,
        reopen: Some(Box::new(reopen)),
    };
    let mut memory = MemoryOutputs::default();
    let symbols = crate::symbolize::NoSymbols;
    let report = convert_into(
        "uploads/app.jfr",
        "etag",
        input,
        &options,
        &symbols,
        &mut memory,
    )
    .unwrap();
    (memory.objects, report.pieces)
}

/// A second pass's samples get their context's labels as a whole decode's do: the
/// outputs are the same, byte for byte, and differ from those without the labels.
#[test]
fn context_labels_reach_the_samples_of_a_second_pass() {
    // 100 s apart: each chunk is a window of its own.
    let recording = jfr_chunks_apart(100_000_000_000);
    let mut options = ConvertOptions::default();
    let (unlabelled, _) = converted(&recording, &options, false);
    options.metadata.context_labels = [(
        "7".to_owned(),
        [("span_name".to_owned(), "checkout".to_owned())].into(),
    )]
    .into();
    let (whole, pieces) = converted(&recording, &options, false);
    assert_eq!(pieces, 1);
    let (second_pass, pieces) = converted(&recording, &options, true);
    assert_eq!(pieces, 3, "a piece per chunk");
    let keys = |objects: &[(String, Vec<u8>)]| -> Vec<String> {
        objects.iter().map(|(k, _)| k.clone()).collect()
    };
    assert_eq!(keys(&second_pass), keys(&whole));
    for ((key, a), (_, b)) in whole.iter().zip(&second_pass) {
        assert!(a == b, "{key} differs");
    }
    assert_eq!(keys(&unlabelled), keys(&whole));
    let tables_with_labels = whole
        .iter()
        .zip(&unlabelled)
        .filter(|((key, a), (_, b))| key.ends_with(".parquet") && a != b)
        .count();
    assert!(tables_with_labels > 0, "the labels are in the tables");
}

/// Chunks whose times overlap: a chunk's samples wait until no later chunk can hold an
/// earlier one, and come out as the whole decode's.
#[test]
fn overlapping_chunks_with_a_second_pass_are_the_whole_decode() {
    let recording = jfr_chunks_apart(0);
    let options = ConvertOptions::default();
    let (whole, _) = converted(&recording, &options, false);
    let (second_pass, pieces) = converted(&recording, &options, true);
    assert_eq!(pieces, 1, "every window waits for the last chunk");
    assert!(whole == second_pass);
}
