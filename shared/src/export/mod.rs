//! Exports: any profile or slice of the fleet, read back from the stack tables, in the
//! formats people's tools open: pprof, speedscope, folded stacks, the Firefox Profiler's
//! processed format and OTLP (`docs/export.md`).
//!
//! A [`Selection`] picks the profiles and samples; `slice` merges them into one table of
//! frames, one call tree and one list of threads and series; each format writes from that
//! slice, aggregating as the format does.

mod columns;
mod exported;
mod firefox;
mod folded;
mod otlp;
mod pprof;
mod select;
mod slice;
mod speedscope;
mod strings;

#[cfg(test)]
mod firefox_tests;
#[cfg(test)]
mod otlp_tests;
#[cfg(test)]
mod tests;

pub(crate) use exported::{Exported, ExportedSeries};
use folded::{flame_frame_name, NO_STACK};
pub use select::{IdOrName, Selection};

use crate::error::{ErrorKind, Result};
use arrow_array::RecordBatch;

use crate::tables::{Table, TableBatches, TablesFrom};

/// The formats an export writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    /// pprof `profile.proto`, gzipped.
    Pprof,
    /// speedscope's JSON file format.
    Speedscope,
    /// Folded stacks, `root;…;leaf weight`, one series.
    Folded,
    /// The Firefox Profiler's processed profile format (JSON).
    Firefox,
    /// OTLP v1.10 `ExportProfilesServiceRequest`, binary protobuf or JSON.
    Otlp,
}

impl ExportFormat {
    /// The one frame of samples without a stack, in folded stacks and flame graphs.
    pub const NO_STACK: &'static str = NO_STACK;

    /// A frame's name as one frame of a folded line and of a flame graph: `;` and line breaks
    /// would split it, so they are replaced, and so on (see the folded export).
    pub fn flame_frame_name(name: &str) -> String {
        flame_frame_name(name)
    }

    /// Every format, by name.
    pub const ALL: [(&'static str, ExportFormat); 5] = [
        ("pprof", ExportFormat::Pprof),
        ("speedscope", ExportFormat::Speedscope),
        ("folded", ExportFormat::Folded),
        ("firefox", ExportFormat::Firefox),
        ("otlp", ExportFormat::Otlp),
    ];

    /// The format's name, as the command line spells it.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, f)| *f == self)
            .map_or("?", |(n, _)| n)
    }

    /// How much of each sample the format keeps: pprof and folded stacks keep no time, so
    /// their slice sums the rows as it reads them.
    fn detail(self) -> slice::Detail {
        match self {
            ExportFormat::Pprof | ExportFormat::Folded => slice::Detail::Summed,
            ExportFormat::Speedscope | ExportFormat::Firefox | ExportFormat::Otlp => {
                slice::Detail::EveryRow
            }
        }
    }
}

/// What to export, and how.
#[derive(Clone, Debug)]
pub struct ExportRequest {
    /// Which profiles and samples.
    pub selection: Selection,
    /// The format written.
    pub format: ExportFormat,
    /// pprof: only what Go's profile-guided optimisation reads (CPU samples as
    /// `samples/count` and `cpu/nanoseconds`, functions and lines, no labels).
    pub pgo: bool,
    /// OTLP: protobuf's JSON encoding, as OTLP/HTTP sends it, instead of binary.
    pub json: bool,
    /// A name for the export (document and profile names, titles).
    pub name: String,
}

impl ExportRequest {
    /// The tables an export reads.
    pub const TABLES: [Table; 4] = EXPORT_TABLES;

    /// An export of `selection` in `format`, binary where there is a choice.
    pub fn new(selection: Selection, format: ExportFormat) -> Self {
        ExportRequest {
            selection,
            format,
            pgo: false,
            json: false,
            name: "proflake export".to_owned(),
        }
    }
}

/// The tables an export reads.
pub(crate) const EXPORT_TABLES: [Table; 4] = [
    Table::Profiles,
    Table::Samples,
    Table::Stacks,
    Table::Frames,
];

/// Reads what `request` selects from `tables` (the landing tables of a store, or the lake)
/// and writes it in its format. Only the days the selection's time range reaches are read.
pub fn export_profiles(tables: TablesFrom<'_>, request: &ExportRequest) -> Result<Exported> {
    let (from, to) = (request.selection.from_ns, request.selection.to_ns);
    // The samples, by far the largest table, are decoded on a thread of their own, a batch at
    // a time and only the columns a slice takes, and taken on another as they come, while
    // this one reads and merges the call trees: the three overlap, and at most a few batches
    // wait in between.
    let slice = std::thread::scope(|scope| {
        let (send, batches) = std::sync::mpsc::sync_channel::<RecordBatch>(16);
        let reader = scope.spawn(move || {
            let mut stopped = false;
            let read = tables.for_each_batch(
                Table::Samples,
                from,
                to,
                slice::SAMPLE_PROJECTION,
                &mut |b| {
                    send.send(b).map_err(|_| {
                        // The taker stopped on an error of its own, which it reports.
                        stopped = true;
                        crate::Error::from(ErrorKind::NoSamples {
                            why: "the export stopped".into(),
                        })
                    })
                },
            );
            if stopped {
                Ok(())
            } else {
                read
            }
        });
        // Moved in, so that dropping it below stops a reader still sending.
        let mut take_batches = move |take: &mut dyn FnMut(RecordBatch) -> Result<()>| {
            batches.iter().try_for_each(&mut *take)
        };
        let built = tables
            .read(&[Table::Profiles], from, to)
            .and_then(|profiles| {
                slice::build_streamed(
                    &profiles.profiles,
                    &request.selection,
                    request.format.detail(),
                    &mut || {
                        Ok((
                            tables.read_columns(
                                Table::Stacks,
                                from,
                                to,
                                slice::STACK_PROJECTION,
                            )?,
                            tables.read_columns(
                                Table::Frames,
                                from,
                                to,
                                slice::FRAME_PROJECTION,
                            )?,
                        ))
                    },
                    &mut take_batches,
                )
            });
        drop(take_batches);
        // A reader's failure first: the taker, short of batches, fails for want of them.
        reader
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
        built
    })?;
    write(slice, request)
}

/// Writes what `request` selects from `tables` in its format.
pub fn export_tables(tables: &TableBatches, request: &ExportRequest) -> Result<Exported> {
    let slice = slice::build(tables, &request.selection, request.format.detail())?;
    write(slice, request)
}

/// Writes `slice` as `request` says.
fn write(slice: slice::Slice, request: &ExportRequest) -> Result<Exported> {
    let mut exported_series: Vec<usize> = (0..slice.series.len()).collect();
    let bytes = match request.format {
        ExportFormat::Pprof => {
            if request.pgo {
                // Only the CPU-time series go into a PGO profile.
                exported_series.retain(|&i| slice.series[i].is_cpu());
            }
            pprof::write(&slice, request.pgo, &request.name)?
        }
        ExportFormat::Speedscope => speedscope::write(&slice, &request.name),
        ExportFormat::Folded => {
            let series = one_series(&slice)?;
            exported_series = vec![series];
            folded::write(&folded::fold(&slice, series))
        }
        ExportFormat::Firefox => firefox::write(&slice, &request.name)?,
        ExportFormat::Otlp => otlp::write(&slice, request.json)?,
    };
    let mut series: Vec<ExportedSeries> = slice
        .series
        .iter()
        .map(|s| ExportedSeries {
            sample_type: s.sample_type.clone(),
            unit: s.unit.clone(),
            total: 0,
            samples: s.rows,
        })
        .collect();
    let s = &slice.samples;
    for i in 0..s.len() {
        let e = &mut series[s.series[i] as usize];
        e.total = e.total.saturating_add(s.value[i]);
    }
    let series = exported_series
        .into_iter()
        .map(|i| series[i].clone())
        .collect();
    Ok(Exported {
        bytes,
        series,
        profiles: slice.profiles,
        uploads: slice.uploads,
    })
}

/// The one series a single-series format (folded stacks) writes.
fn one_series(slice: &slice::Slice) -> Result<usize> {
    slice.main_series().ok_or_else(|| {
        ErrorKind::NoSamples {
            why: format!(
                "folded stacks hold one series, and the selection holds {}: choose one with \
                 --series",
                slice
                    .series
                    .iter()
                    .map(|s| format!("{:?}", s.sample_type))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
        .into()
    })
}
