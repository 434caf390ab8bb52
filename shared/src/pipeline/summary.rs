//! A human-sized summary of a decoded profile: what `proflake inspect` shows.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::model::{FrameHandle, MarkKind, Profile, SeriesHandle, SeriesKind, Timestamps};

use crate::formats::Decoded;

/// A decoded profile in brief: its clock and time range, its samples by series, processes and
/// threads, the functions with the most weight, the images its frames name and what the decoder
/// skipped. It displays as text and serializes as JSON ([`Decoded::summary`]).
pub struct Summary<'a> {
    pub(super) decoded: &'a Decoded,
    pub(super) profile: ProfileSummary,
}

impl Serialize for Summary<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.profile.serialize(serializer)
    }
}

impl Decoded {
    /// The profile in brief, as `proflake inspect` shows it.
    pub fn summary(&self) -> Summary<'_> {
        Summary {
            decoded: self,
            profile: summarize(&self.profile),
        }
    }
}

/// How many functions the summary lists.
pub(crate) const TOP_FUNCTIONS: usize = 15;

/// Summary of a profile.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ProfileSummary {
    /// What sample times are measured against.
    pub timestamps: String,
    /// First sample time (ns).
    pub start_ns: Option<i64>,
    /// Last sample time (ns).
    pub end_ns: Option<i64>,
    /// Number of samples.
    pub samples: u64,
    /// Samples that have a stack.
    pub samples_with_stack: u64,
    /// Samples without a time of their own (aggregated inputs).
    pub aggregated_samples: u64,
    /// When collection started, as the input records it (ns since the Unix epoch).
    pub recorded_start_ns: Option<i64>,
    /// How long collection ran, as the input records it (ns).
    pub recorded_duration_ns: Option<i64>,
    /// Attributes of the whole profile.
    pub attributes: BTreeMap<String, String>,
    /// Conformance findings of the input's own rules that did not stop decoding.
    pub findings: Vec<String>,
    /// Sample series.
    pub series: Vec<SeriesSummary>,
    /// Instants the input recorded (the `counters` table's `instant` rows).
    pub instants: u64,
    /// Counter values the input recorded (its `counter` rows), over so many counters.
    pub counter_values: u64,
    /// Distinct counters (name and key) of those values.
    pub counters: u64,
    /// Processes, by sample count.
    pub processes: Vec<ProcessSummary>,
    /// Threads, by sample count.
    pub threads: Vec<ThreadSummary>,
    /// The series the function ranking counts: CPU time, else wall time, else the first.
    pub top_functions_series: Option<String>,
    /// Functions with the most weight in them (samples, for sampled inputs), by self weight,
    /// in the ranked series' unit.
    pub top_functions: Vec<FunctionSummary>,
    /// Images referenced by frames.
    pub images: Vec<ImageSummary>,
    /// What the decoder skipped, by reason.
    pub stats: BTreeMap<String, u64>,
}

/// One series.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct SeriesSummary {
    /// Event name.
    pub name: String,
    /// `cpu_time`, `wall_time` or `other`.
    pub kind: &'static str,
    /// Unit of weights.
    pub unit: String,
    /// Producer.
    pub source: Option<String>,
    /// Samples in it.
    pub samples: u64,
    /// Sum of their weights, in `unit`.
    pub total_weight: i64,
    /// Sampling period, in `unit`.
    pub period: Option<u64>,
    /// Sampling frequency.
    pub frequency_hz: Option<u64>,
}

/// One process.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ProcessSummary {
    /// Process id.
    pub pid: Option<i64>,
    /// Name.
    pub name: Option<String>,
    /// Threads with samples.
    pub threads: u64,
    /// Samples.
    pub samples: u64,
}

/// One thread.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ThreadSummary {
    /// Process id.
    pub pid: Option<i64>,
    /// Thread id.
    pub tid: Option<i64>,
    /// Name.
    pub name: Option<String>,
    /// Samples.
    pub samples: u64,
}

/// One function.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct FunctionSummary {
    /// Display name: the function, or `image!0xaddr` for unsymbolized code.
    pub function: String,
    /// Weight of samples with this function at the leaf.
    pub self_samples: u64,
    /// Weight of samples with this function anywhere on the stack.
    pub total_samples: u64,
}

/// One image.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ImageSummary {
    /// Path.
    pub path: Option<String>,
    /// Code id (ELF build id).
    pub code_id: Option<String>,
    /// Debug id.
    pub debug_id: Option<String>,
    /// Frames in this image.
    pub frames: u64,
    /// Of those, frames with a function name.
    pub symbolized_frames: u64,
}

/// The display name of a frame.
pub(crate) fn frame_label(profile: &Profile, handle: FrameHandle) -> String {
    let frame = profile.frame(handle);
    match (
        profile.opt_str(frame.function),
        profile.opt_str(frame.module),
    ) {
        (Some(function), Some(module)) => format!("{module}.{function}"),
        _ => profile.frame_name(frame),
    }
}

/// Summarizes a profile.
///
/// Samples are tallied by index (series, thread, leaf stack); frames are only walked once per
/// distinct stack afterwards, so the cost per sample is a few array increments.
pub(crate) fn summarize(profile: &Profile) -> ProfileSummary {
    let ranked = ranked_series(profile);
    let tally = Tally::of(profile, ranked);
    let threads = thread_summaries(profile, &tally.per_thread);
    ProfileSummary {
        timestamps: match &profile.timestamps {
            Timestamps::UnixEpoch => "unix".into(),
            Timestamps::TraceClock(c) => format!("trace clock {c} (no wall-clock reference)"),
        },
        start_ns: tally.start_ns,
        end_ns: tally.end_ns,
        samples: profile.samples().len() as u64,
        samples_with_stack: tally.with_stack,
        aggregated_samples: tally.aggregated_samples,
        recorded_start_ns: profile.start_time,
        recorded_duration_ns: profile.duration,
        attributes: profile.attributes.clone(),
        findings: profile.findings.clone(),
        series: series_summaries(profile, &tally),
        instants: marks_of(profile, MarkKind::Instant),
        counter_values: marks_of(profile, MarkKind::Counter),
        counters: distinct_counters(profile),
        processes: process_summaries(profile, &threads),
        threads,
        top_functions_series: ranked.map(|h| {
            let series = profile.series(h);
            format!(
                "{} ({})",
                profile.str(series.name),
                profile.str(series.unit)
            )
        }),
        top_functions: top_functions(profile, &tally.stack_weight),
        images: image_summaries(profile),
        stats: profile
            .stats
            .iter()
            .map(|(k, v)| ((*k).to_owned(), *v))
            .collect(),
    }
}

/// How many marks of `kind` the profile holds.
fn marks_of(profile: &Profile, kind: MarkKind) -> u64 {
    profile.marks().iter().filter(|m| m.kind == kind).count() as u64
}

/// How many distinct counters (name and key) the profile's counter values belong to.
fn distinct_counters(profile: &Profile) -> u64 {
    let counters: std::collections::BTreeSet<_> = profile
        .marks()
        .iter()
        .filter(|m| m.kind == MarkKind::Counter)
        .map(|m| (m.name, m.key))
        .collect();
    counters.len() as u64
}

/// The series the function ranking counts: CPU time, else wall time, else the first.
fn ranked_series(profile: &Profile) -> Option<SeriesHandle> {
    [SeriesKind::CpuTime, SeriesKind::WallTime]
        .iter()
        .find_map(|k| profile.all_series().find(|(_, s)| s.kind == *k))
        .or_else(|| profile.all_series().next())
        .map(|(h, _)| h)
}

/// The samples counted in one pass, by series, thread and leaf stack.
struct Tally {
    per_series: Vec<u64>,
    /// Weight per series, in its unit.
    weights: Vec<i64>,
    per_thread: Vec<u64>,
    /// Weight per leaf stack, of the ranked series only.
    stack_weight: Vec<u64>,
    with_stack: u64,
    start_ns: Option<i64>,
    end_ns: Option<i64>,
    aggregated_samples: u64,
}

impl Tally {
    fn of(profile: &Profile, ranked: Option<SeriesHandle>) -> Self {
        let samples = profile.samples();
        let series_count = profile.all_series().len();
        let mut t = Tally {
            per_series: vec![0u64; series_count],
            weights: vec![0i64; series_count],
            per_thread: vec![0u64; profile.threads().len()],
            stack_weight: vec![0u64; profile.stacks().len()],
            with_stack: 0,
            start_ns: None,
            end_ns: None,
            aggregated_samples: 0,
        };
        // Only the fields the tally needs are read from the columns.
        for i in 0..samples.len() {
            match samples.time(i) {
                Some(time) => {
                    t.start_ns = Some(t.start_ns.map_or(time, |s| s.min(time)));
                    t.end_ns = Some(t.end_ns.map_or(time, |e| e.max(time)));
                }
                None => t.aggregated_samples += 1,
            }
            let (series, weight) = (samples.series(i), samples.weight(i));
            t.per_series[series.index()] += 1;
            let w = &mut t.weights[series.index()];
            *w = w.saturating_add(weight);
            t.per_thread[samples.thread(i).index()] += 1;
            let Some(leaf) = samples.stack(i) else {
                continue;
            };
            t.with_stack += 1;
            if Some(series) == ranked {
                let w = &mut t.stack_weight[leaf.index()];
                *w = w.saturating_add(u64::try_from(weight).unwrap_or(0));
            }
        }
        t
    }
}

/// Self and total weight per function label, from the weight of each leaf stack.
#[derive(Default)]
struct FunctionCounts {
    /// Frames that print alike (the same function in two images, say) count as one function.
    label_of_frame: Vec<Option<u32>>,
    label_ids: FxHashMap<String, u32>,
    labels: Vec<String>,
    self_counts: Vec<u64>,
    total_counts: Vec<u64>,
    /// The last stack each label was counted for, so a recursive function counts once a stack.
    counted_in: Vec<usize>,
}

impl FunctionCounts {
    /// The label of a frame, numbered on first sight.
    fn label(&mut self, profile: &Profile, f: FrameHandle) -> usize {
        let Self {
            label_of_frame,
            label_ids,
            labels,
            self_counts,
            total_counts,
            counted_in,
        } = self;
        *label_of_frame[f.index()].get_or_insert_with(|| {
            let text = frame_label(profile, f);
            let next = labels.len() as u32;
            *label_ids.entry(text).or_insert_with_key(|text| {
                labels.push(text.clone());
                self_counts.push(0);
                total_counts.push(0);
                counted_in.push(usize::MAX);
                next
            })
        }) as usize
    }
}

/// The functions with the most self weight, then total weight, then by name.
fn top_functions(profile: &Profile, stack_weight: &[u64]) -> Vec<FunctionSummary> {
    let mut c = FunctionCounts {
        label_of_frame: vec![None; profile.frames().len()],
        ..FunctionCounts::default()
    };
    for ((leaf, _), &weight) in profile.stacks().zip(stack_weight) {
        if weight == 0 {
            continue;
        }
        let stack = leaf.index();
        for (depth, f) in profile.stack_frames(leaf).enumerate() {
            let label = c.label(profile, f);
            if depth == 0 {
                c.self_counts[label] += weight;
            }
            if c.counted_in[label] != stack {
                c.counted_in[label] = stack;
                c.total_counts[label] += weight;
            }
        }
    }
    let mut top: Vec<FunctionSummary> = c
        .labels
        .into_iter()
        .zip(c.self_counts.into_iter().zip(c.total_counts))
        .map(
            |(function, (self_samples, total_samples))| FunctionSummary {
                function,
                self_samples,
                total_samples,
            },
        )
        .collect();
    top.sort_by(|a, b| {
        (b.self_samples, b.total_samples, &a.function).cmp(&(
            a.self_samples,
            a.total_samples,
            &b.function,
        ))
    });
    top.truncate(TOP_FUNCTIONS);
    top
}

/// Every series with its sample count and total weight.
fn series_summaries(profile: &Profile, tally: &Tally) -> Vec<SeriesSummary> {
    profile
        .all_series()
        .map(|(h, s)| SeriesSummary {
            name: profile.str(s.name).to_owned(),
            kind: s.kind.name(),
            unit: profile.str(s.unit).to_owned(),
            source: profile.opt_str(s.source).map(str::to_owned),
            samples: tally.per_series[h.index()],
            total_weight: tally.weights[h.index()],
            period: s.period,
            frequency_hz: s.frequency_hz,
        })
        .collect()
}

/// Threads, most samples first.
fn thread_summaries(profile: &Profile, per_thread: &[u64]) -> Vec<ThreadSummary> {
    let mut threads: Vec<ThreadSummary> = profile
        .threads()
        .map(|(h, t)| ThreadSummary {
            pid: profile.process(t.process).pid,
            tid: t.tid,
            name: profile.opt_str(t.name).map(str::to_owned),
            samples: per_thread[h.index()],
        })
        .collect();
    threads.sort_by(|a, b| (b.samples, a.pid, a.tid).cmp(&(a.samples, b.pid, b.tid)));
    threads
}

/// Processes with their threads' samples, most samples first.
fn process_summaries(profile: &Profile, threads: &[ThreadSummary]) -> Vec<ProcessSummary> {
    let mut processes: Vec<ProcessSummary> = profile
        .processes()
        .map(|(_, p)| {
            let mine = threads.iter().filter(|t| t.pid == p.pid);
            ProcessSummary {
                pid: p.pid,
                name: profile.opt_str(p.name).map(str::to_owned),
                threads: mine.clone().count() as u64,
                samples: mine.map(|t| t.samples).sum(),
            }
        })
        .collect();
    processes.sort_by(|a, b| (b.samples, a.pid).cmp(&(a.samples, b.pid)));
    processes
}

/// Images with how many of their frames are known and how many of those have a name.
fn image_summaries(profile: &Profile) -> Vec<ImageSummary> {
    let mut image_frames: FxHashMap<usize, (u64, u64)> = FxHashMap::default();
    for (_, f) in profile.frames() {
        if let Some(i) = f.image {
            let e = image_frames.entry(i.index()).or_default();
            e.0 += 1;
            e.1 += u64::from(f.function.is_some());
        }
    }
    profile
        .images()
        .map(|(h, img)| {
            let (frames, symbolized) = image_frames.get(&h.index()).copied().unwrap_or_default();
            ImageSummary {
                path: profile.opt_str(img.path).map(str::to_owned),
                code_id: img.code_id.as_ref().map(|c| c.to_string()),
                debug_id: img.debug_id.map(|d| d.to_string()),
                frames,
                symbolized_frames: symbolized,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Frame, FrameAddress, FrameKind, Image};

    /// `inspect` and the tables name an unsymbolized frame the same way.
    #[test]
    fn unsymbolized_frames_have_one_name_everywhere() {
        let mut p = Profile::new("test");
        let path = p.intern("/system/lib64/libc.so");
        let image = p.add_image(Image::new(Some(path), 0x7000, 0x9000));
        let mut frame = Frame::new(FrameKind::Native);
        frame.image = Some(image);
        frame.address = Some(FrameAddress::ImageRelative(0x1234));
        let h = p.add_frame(frame);
        assert_eq!(frame_label(&p, h), "libc.so!0x1234");
        assert_eq!(p.frame_name(p.frame(h)), "libc.so!0x1234");

        let bare = p.add_frame(Frame::new(FrameKind::Native));
        assert_eq!(frame_label(&p, bare), "<unknown>");

        let mut java = Frame::new(FrameKind::Jvm);
        java.function = Some(p.intern("run"));
        java.module = Some(p.intern("com.example.Worker"));
        let java = p.add_frame(java);
        assert_eq!(frame_label(&p, java), "com.example.Worker.run");
    }

    /// Ranking tallies stacks, not samples: it must agree with counting every sample's frames
    /// one by one (a recursive function once per sample, the other series left out).
    #[test]
    fn top_functions_count_each_sample_once_per_function() {
        use crate::model::{Sample, Series, SeriesKind};
        let mut p = Profile::new("test");
        let process = p.add_process(Some(1));
        let thread = p.add_thread(process, Some(1));
        let series = |p: &mut Profile, kind, name: &str| {
            let (name, unit) = (p.intern(name), p.intern("ns"));
            p.add_series(Series {
                kind,
                name,
                unit,
                source: None,
                frequency_hz: None,
                period: None,
                spans: false,
            })
        };
        let other = series(&mut p, SeriesKind::Other, "faults");
        let cpu = series(&mut p, SeriesKind::CpuTime, "cpu");
        let frame = |p: &mut Profile, name: &str| {
            let mut f = Frame::new(FrameKind::Native);
            f.function = Some(p.intern(name));
            p.add_frame(f)
        };
        let (main, work, leaf) = (
            frame(&mut p, "main"),
            frame(&mut p, "work"),
            frame(&mut p, "leaf"),
        );
        let recursive = p.add_stack_from_root(vec![main, work, work, leaf]).unwrap();
        let shallow = p.add_stack_from_root(vec![main, work]).unwrap();
        let runs = [
            (recursive, 3, cpu),
            (shallow, 5, cpu),
            (recursive, 7, cpu),
            (shallow, 100, other),
        ];
        for (stack, weight, series) in runs {
            p.add_sample(Sample::new(thread, Some(stack), weight, series));
        }

        let summary = summarize(&p);
        let row = |name: &str| {
            let f = summary
                .top_functions
                .iter()
                .find(|f| f.function == name)
                .unwrap();
            (f.self_samples, f.total_samples)
        };
        assert_eq!(summary.top_functions_series.as_deref(), Some("cpu (ns)"));
        assert_eq!(row("leaf"), (10, 10));
        assert_eq!(row("work"), (5, 15));
        assert_eq!(row("main"), (0, 15));
        assert_eq!(summary.series[0].total_weight, 100);
        assert_eq!(summary.series[1].samples, 3);
        assert_eq!(summary.threads[0].samples, 4);
    }
}
