//! A human-sized summary of a profile: what `proflake inspect` shows.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use serde::Serialize;

use proflake::model::{FrameHandle, Profile, SeriesKind, Timestamps};

/// How many functions the summary lists.
pub const TOP_FUNCTIONS: usize = 15;

/// Summary of a profile.
#[derive(Clone, Debug, Serialize)]
pub struct ProfileSummary {
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
pub struct SeriesSummary {
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
pub struct ProcessSummary {
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
pub struct ThreadSummary {
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
pub struct FunctionSummary {
    /// Display name: the function, or `image!0xaddr` for unsymbolized code.
    pub function: String,
    /// Weight of samples with this function at the leaf.
    pub self_samples: u64,
    /// Weight of samples with this function anywhere on the stack.
    pub total_samples: u64,
}

/// One image.
#[derive(Clone, Debug, Serialize)]
pub struct ImageSummary {
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
pub fn frame_label(profile: &Profile, handle: FrameHandle) -> String {
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
pub fn summarize(profile: &Profile) -> ProfileSummary {
    let samples = profile.samples();
    let series_count = profile.all_series().len();
    let mut per_series = vec![0u64; series_count];
    let mut weights = vec![0i64; series_count];
    let mut per_thread = vec![0u64; profile.threads().len()];
    let mut stack_weight = vec![0u64; profile.stacks().len()];
    let mut with_stack = 0;
    let ranked = [SeriesKind::CpuTime, SeriesKind::WallTime]
        .iter()
        .find_map(|k| profile.all_series().find(|(_, s)| s.kind == *k))
        .or_else(|| profile.all_series().next())
        .map(|(h, _)| h);
    let (mut start_ns, mut end_ns, mut aggregated_samples) = (None::<i64>, None::<i64>, 0);
    // Only the fields the tally needs are read from the columns.
    for i in 0..samples.len() {
        match samples.time(i) {
            Some(t) => {
                start_ns = Some(start_ns.map_or(t, |s| s.min(t)));
                end_ns = Some(end_ns.map_or(t, |e| e.max(t)));
            }
            None => aggregated_samples += 1,
        }
        let (series, weight) = (samples.series(i), samples.weight(i));
        per_series[series.index()] += 1;
        let w = &mut weights[series.index()];
        *w = w.saturating_add(weight);
        per_thread[samples.thread(i).index()] += 1;
        let Some(leaf) = samples.stack(i) else {
            continue;
        };
        with_stack += 1;
        if Some(series) == ranked {
            let w = &mut stack_weight[leaf.index()];
            *w = w.saturating_add(u64::try_from(weight).unwrap_or(0));
        }
    }

    // Frames that print alike (the same function in two images, say) count as one function.
    let mut label_of_frame: Vec<Option<u32>> = vec![None; profile.frames().len()];
    let mut label_ids: FxHashMap<String, u32> = FxHashMap::default();
    let mut labels: Vec<String> = Vec::new();
    let mut self_counts: Vec<u64> = Vec::new();
    let mut total_counts: Vec<u64> = Vec::new();
    // The last stack each label was counted for, so a recursive function counts once a stack.
    let mut counted_in: Vec<usize> = Vec::new();
    for ((leaf, _), &weight) in profile.stacks().zip(&stack_weight) {
        if weight == 0 {
            continue;
        }
        let stack = leaf.index();
        for (depth, f) in profile.stack_frames(leaf).enumerate() {
            let label = *label_of_frame[f.index()].get_or_insert_with(|| {
                let text = frame_label(profile, f);
                let next = labels.len() as u32;
                *label_ids.entry(text).or_insert_with_key(|text| {
                    labels.push(text.clone());
                    self_counts.push(0);
                    total_counts.push(0);
                    counted_in.push(usize::MAX);
                    next
                })
            }) as usize;
            if depth == 0 {
                self_counts[label] += weight;
            }
            if counted_in[label] != stack {
                counted_in[label] = stack;
                total_counts[label] += weight;
            }
        }
    }
    let mut top: Vec<FunctionSummary> = labels
        .into_iter()
        .zip(self_counts.into_iter().zip(total_counts))
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

    let mut image_frames: FxHashMap<usize, (u64, u64)> = FxHashMap::default();
    for (_, f) in profile.frames() {
        if let Some(i) = f.image {
            let e = image_frames.entry(i.index()).or_default();
            e.0 += 1;
            e.1 += u64::from(f.function.is_some());
        }
    }
    let images = profile
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
        .collect();

    ProfileSummary {
        timestamps: match &profile.timestamps {
            Timestamps::UnixEpoch => "unix".into(),
            Timestamps::TraceClock(c) => format!("trace clock {c} (no wall-clock reference)"),
        },
        start_ns,
        end_ns,
        samples: samples.len() as u64,
        samples_with_stack: with_stack,
        aggregated_samples,
        recorded_start_ns: profile.start_time,
        recorded_duration_ns: profile.duration,
        attributes: profile.attributes.clone(),
        findings: profile.findings.clone(),
        series: profile
            .all_series()
            .map(|(h, s)| SeriesSummary {
                name: profile.str(s.name).to_owned(),
                kind: s.kind.name(),
                unit: profile.str(s.unit).to_owned(),
                source: profile.opt_str(s.source).map(str::to_owned),
                samples: per_series[h.index()],
                total_weight: weights[h.index()],
                period: s.period,
                frequency_hz: s.frequency_hz,
            })
            .collect(),
        processes,
        threads,
        top_functions_series: ranked.map(|h| {
            let series = profile.series(h);
            format!(
                "{} ({})",
                profile.str(series.name),
                profile.str(series.unit)
            )
        }),
        top_functions: top,
        images,
        stats: profile
            .stats
            .iter()
            .map(|(k, v)| ((*k).to_owned(), *v))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proflake::model::{Frame, FrameAddress, FrameKind, Image};

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
        use proflake::model::{Sample, Series, SeriesKind};
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
