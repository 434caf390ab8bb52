//! Converting a long Perfetto trace in two passes, a window at a time.
//!
//! The first pass builds the whole model but its samples, and learns where their times lie;
//! the second reads the upload again and hands each sample on as it is decoded. Samples wait
//! in a [`WindowBuffer`] until no later one can fall into their window, then go to
//! [`Windows`], which writes them exactly as a conversion of the whole trace would. Memory
//! then holds about one window of samples however long the trace is.

use std::io::Read;

use super::window_buffer::{Anchor, WindowBuffer};
use super::windows::{index_keys, IndexOf, Windows};
use crate::error::{ErrorKind, Result};
use crate::formats::perfetto::{second_pass, FirstPass};
use crate::formats::{open_stream, Container, InputFormat};
use crate::limits::Limits;
use crate::metadata::UploadMetadata;
use crate::model::{seconds_to_ns, Profile, SampleTable, Timestamps};
use crate::tables::TableSource;

use super::manifest::{ManifestSampleV2, ManifestSeries};
use super::outputs::Outputs;

/// Reads an upload again from its first byte.
pub type Reopen<'a> = dyn FnMut() -> Result<Box<dyn Read + Send + 'a>> + 'a;

/// Whether an upload with this metadata may be converted window by window: the metadata
/// names no chunk id (kept only when the whole upload is one chunk, which only the end can
/// tell) and no measurements (each chunk takes those of its window, its process's first and
/// last also what lies before and after, which only the end can tell either).
pub(crate) fn streamable(metadata: &UploadMetadata) -> bool {
    metadata.chunk_id.is_none() && metadata.measurements.is_empty()
}

/// What a streamed conversion gives the manifest.
pub(crate) struct Streamed {
    pub samples: u64,
    /// How many pieces the samples were written in.
    pub pieces: u64,
    pub series: Vec<ManifestSeries>,
    pub sample_v2: ManifestSampleV2,
    pub timestamps: String,
}

/// The parts of a streamed conversion that stay put while it runs.
pub(crate) struct StreamedInput<'c, 'a> {
    /// The first pass; its profile holds no samples.
    pub first: &'c mut FirstPass,
    pub container: Container,
    pub len: u64,
    pub reopen: &'c mut Reopen<'a>,
    pub limits: &'c Limits,
}

/// Writes the outputs of a trace whose first pass is done and whose model is symbolized (once,
/// so every window names its frames alike): reads the trace again and writes its windows as
/// they complete.
pub(crate) fn write_streamed(
    input: &mut StreamedInput<'_, '_>,
    source: &TableSource<'_>,
    metadata: &UploadMetadata,
    index: IndexOf<'_>,
    out: &mut Outputs,
) -> Result<Streamed> {
    let StreamedInput {
        first,
        container,
        len,
        reopen,
        limits,
    } = input;
    let (container, len, limits) = (*container, *len, *limits);
    let times = first
        .times
        .as_ref()
        .expect("streamed only with the samples' times");
    let (anchor, timestamps) = match first.profile.timestamps.clone() {
        Timestamps::TraceClock(clock) => {
            let Some(start) = metadata.timestamp else {
                return Err(ErrorKind::NoWallClock { clock }.into());
            };
            first.profile.timestamps = Timestamps::UnixEpoch;
            let text = format!("{clock} clock, anchored at metadata timestamp {start}");
            (Anchor::FirstAt(seconds_to_ns(start)), text)
        }
        _ => (Anchor::Keep, "unix".to_owned()),
    };
    let mut profile = std::mem::take(&mut first.profile);
    let mut windows = Windows::new(source, metadata);
    // The days the tables can fall on, from bounds on the earliest and latest times: the
    // exact ones are only known as the second pass goes.
    if let (Some(a), Some(b)) = (times.first_ns(), times.last_ns()) {
        let (a, b) = match anchor {
            Anchor::Keep => (a, b),
            Anchor::FirstAt(start) => (start, start.saturating_add(b.saturating_sub(a))),
        };
        let day = |ns: i64| ns.div_euclid(1000).div_euclid(86_400_000_000);
        let mut keys = windows.table_keys(day(a)..=day(b));
        keys.extend(index_keys(&profile, source.source_id));
        out.intend(&keys)?;
    }
    let (mut samples, mut pieces) = (0u64, 0u64);
    let mut buffer = WindowBuffer::new(anchor);
    let mut write = |buffer: &mut WindowBuffer,
                     mark: Option<i64>,
                     profile: &mut Profile,
                     windows: &mut Windows,
                     out: &mut Outputs| {
        if buffer.ready(mark) && buffer.take(mark, profile).is_some() {
            pieces += 1;
            windows.add(profile, buffer.grid(), out)?;
            profile.replace_samples(SampleTable::default());
        }
        Ok::<(), crate::Error>(())
    };
    let reader = reopen()?;
    let opened = open_stream(reader, len, Some(InputFormat::Perfetto), limits)?;
    let dropped = second_pass(
        opened.stream,
        container.name(),
        limits,
        first,
        &mut |position, sample| {
            let time = sample.time.unwrap_or_default();
            if buffer.is_late(time) {
                return Err(ErrorKind::Malformed {
                    format: "perfetto",
                    offset: 0,
                    what: format!(
                        "sample {position} at {time} ns came after the first pass said no \
                         sample that early was left"
                    ),
                }
                .into());
            }
            buffer.push(sample);
            samples += 1;
            // The last windows wait for the pass to end, its decoder's state freed.
            match times.watermark(position + 1) {
                Some(mark) => write(&mut buffer, Some(mark), &mut profile, &mut windows, out),
                None => Ok(()),
            }
        },
    )?;
    write(&mut buffer, None, &mut profile, &mut windows, out)?;
    if dropped > 0 {
        *profile.stats.entry("clock_conversion_failed").or_default() += dropped;
    }
    let (series, sample_v2) = windows.finish(&profile, index, out)?;
    first.profile = profile;
    Ok(Streamed {
        samples,
        pieces,
        series,
        sample_v2,
        timestamps,
    })
}
