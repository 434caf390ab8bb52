//! Events into samples: which events become which series, their threads, stacks and weights.
//! Threads, stacks, methods and frame types are resolved from the constant pools once per
//! chunk and key, so that an event costs a few lookups.

use rustc_hash::FxHashMap;

use crate::error::Result;
use crate::limits::{exceeded, Limits};
use crate::model::{
    FrameHandle, FrameKind, Label, LabelValue, ProcessHandle, Profile, Sample, SeriesHandle,
    SeriesKind, StackHandle, StringHandle, ThreadHandle,
};

use super::chunk::Header;
use super::constant_pool::Pools;
use super::metadata::Metadata;
use super::reader::Reader;
use super::spool::SpooledChunk;
use super::values::{read_struct, Value};

mod resolve;

/// How an event's weight is found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Weight {
    /// The sampling period of the event type (`jdk.ActiveSetting` `period`), in ns; a count
    /// of samples when the recording does not say.
    Period,
    /// A field in nanoseconds.
    Nanos(&'static str),
    /// A field in ticks, turned into nanoseconds.
    Ticks(&'static str),
    /// A field in bytes.
    Bytes(&'static str),
    /// async-profiler's wall-clock samples: a count of samples times the `wall` interval.
    Samples(&'static str),
}

/// The events read, each a series of its own.
const EVENTS: &[(&str, SeriesKind, Weight)] = &[
    ("jdk.ExecutionSample", SeriesKind::CpuTime, Weight::Period),
    (
        "jdk.CPUTimeSample",
        SeriesKind::CpuTime,
        Weight::Nanos("samplingPeriod"),
    ),
    (
        "jdk.NativeMethodSample",
        SeriesKind::WallTime,
        Weight::Period,
    ),
    (
        "profiler.WallClockSample",
        SeriesKind::WallTime,
        Weight::Samples("samples"),
    ),
    (
        "jdk.ObjectAllocationSample",
        SeriesKind::Other,
        Weight::Bytes("weight"),
    ),
    (
        "jdk.ObjectAllocationInNewTLAB",
        SeriesKind::Other,
        Weight::Bytes("tlabSize"),
    ),
    (
        "jdk.ObjectAllocationOutsideTLAB",
        SeriesKind::Other,
        Weight::Bytes("allocationSize"),
    ),
    ("profiler.Malloc", SeriesKind::Other, Weight::Bytes("size")),
    (
        "profiler.LiveObject",
        SeriesKind::Other,
        Weight::Bytes("allocationSize"),
    ),
    (
        "jdk.JavaMonitorEnter",
        SeriesKind::Other,
        Weight::Ticks("duration"),
    ),
    (
        "jdk.ThreadPark",
        SeriesKind::Other,
        Weight::Ticks("duration"),
    ),
];

/// The settings kept from `jdk.ActiveSetting` events: the sampling periods.
const SETTINGS: &[&str] = &["period", "interval", "wall"];

/// Where an event type's fields are.
#[derive(Clone, Copy, Debug)]
struct Plan {
    /// Index into [`EVENTS`].
    event: usize,
    time: Option<usize>,
    thread: Option<usize>,
    stack: Option<usize>,
    weight: Option<usize>,
    context: Option<usize>,
    /// The sampling period in this chunk, for the event types weighed by one.
    period: Option<i64>,
    unit: &'static str,
    series: Option<SeriesHandle>,
}

/// Where the samples an importer makes go.
pub(crate) enum Samples<'s> {
    /// Into the profile.
    Keep,
    /// Nowhere: only counted, and their times bounded chunk by chunk (a first pass).
    Count,
    /// Handed to the function with their position among all the recording's samples, as
    /// they are read (a second pass).
    Forward(&'s mut dyn FnMut(u64, Sample) -> Result<()>),
}

/// Samples a run of [`ChunkTimes`] holds at most: the second pass's watermark moves on
/// run by run, so the samples waiting for it are about a run's, not a chunk's (a chunk of a
/// busy recording holds a million).
const RUN_SAMPLES: u64 = 1 << 14;

/// The times of a run of samples: a chunk's, or [`RUN_SAMPLES`] of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ChunkTimes {
    /// How many samples the recording has up to this run's end.
    pub samples_to_end: u64,
    pub least: i64,
    pub greatest: i64,
}

/// What a whole recording's events have made so far: the profile, and what carries from one
/// chunk to the next (settings, series, the process).
pub(crate) struct Importer<'l> {
    pub(crate) profile: Profile,
    limits: &'l Limits,
    samples: Samples<'l>,
    /// Samples made so far, kept or not.
    pushed: u64,
    /// The least and greatest time of the current run's samples.
    chunk_bounds: Option<(i64, i64)>,
    /// Each run's, for the runs with samples.
    pub(crate) chunk_times: Vec<ChunkTimes>,
    process: Option<ProcessHandle>,
    /// `jdk.ActiveSetting` values by (event type name, setting name).
    settings: FxHashMap<(String, String), String>,
    series: Vec<(usize, Option<i64>, SeriesHandle)>,
    truncated: StringHandle,
    context_key: StringHandle,
    start: Option<i64>,
    end: Option<i64>,
    frames: Vec<FrameHandle>,
}

/// What one chunk's samples refer to, resolved once per key.
#[derive(Default)]
struct Caches {
    threads: FxHashMap<u64, ThreadHandle>,
    stacks: FxHashMap<u64, (Option<StackHandle>, bool)>,
    methods: FxHashMap<u64, Option<(StringHandle, Option<StringHandle>)>>,
    frame_kinds: FxHashMap<u64, FrameKind>,
}

/// One chunk's bytes and what its metadata and pools say.
struct Chunk<'a, 'm> {
    header: &'m Header,
    metadata: &'m Metadata,
    pools: &'m Pools,
    reader: Reader<'a>,
    string_class: Option<usize>,
}

/// What a chunk's events are read with but their bytes.
#[derive(Clone, Copy)]
struct ChunkParts<'m> {
    header: &'m Header,
    metadata: &'m Metadata,
    pools: &'m Pools,
    string_class: Option<usize>,
}

impl<'m> ChunkParts<'m> {
    /// The chunk read by `reader`: the kept records with one event after them.
    fn with_reader<'a>(self, reader: &Reader<'a>) -> Chunk<'a, 'm> {
        Chunk {
            header: self.header,
            metadata: self.metadata,
            pools: self.pools,
            reader: reader.clone(),
            string_class: self.string_class,
        }
    }
}

impl<'l> Importer<'l> {
    pub(crate) fn new(limits: &'l Limits, samples: Samples<'l>) -> Self {
        let mut profile = Profile::new(super::FORMAT);
        let truncated = profile.intern("truncated");
        let context_key = profile.intern("contextId");
        Importer {
            profile,
            limits,
            samples,
            pushed: 0,
            chunk_bounds: None,
            chunk_times: Vec::new(),
            process: None,
            settings: FxHashMap::default(),
            series: Vec::new(),
            truncated,
            context_key,
            start: None,
            end: None,
            frames: Vec::new(),
        }
    }

    /// Reads the events of one whole chunk.
    pub(crate) fn chunk(
        &mut self,
        header: &Header,
        metadata: &Metadata,
        pools: &Pools,
        spooled: &mut SpooledChunk,
    ) -> Result<()> {
        let string_class = metadata.class_named("java.lang.String");
        let chunk = ChunkParts {
            header,
            metadata,
            pools,
            string_class,
        };
        let end = header.start_nanos.saturating_add(header.duration_nanos);
        self.start = Some(
            self.start
                .map_or(header.start_nanos, |s| s.min(header.start_nanos)),
        );
        self.end = Some(self.end.map_or(end, |e| e.max(end)));
        // The settings and the JVM's pid first: they may be written after the first samples.
        let setting = metadata.class_named("jdk.ActiveSetting");
        let jvm = metadata.class_named("jdk.JVMInformation");
        let mut pid = None;
        // One vector for every event's fields, whose values borrow that event's bytes.
        let mut spare: Vec<Value<'static>> = Vec::new();
        spooled.for_each_event(|all, mut r| {
            let Some(class) = metadata.class_index(r.varint()?) else {
                return Ok(());
            };
            let mut fields = recycle(std::mem::take(&mut spare));
            if Some(class) == setting {
                self.setting(&chunk.with_reader(all), class, &mut r, &mut fields)?;
            } else if Some(class) == jvm && pid.is_none() {
                read_struct(metadata, class, &mut r, &mut fields)?;
                let c = &metadata.classes[class];
                pid = c.field("pid").and_then(|f| fields[f].int());
            }
            spare = recycle(fields);
            Ok(())
        })?;
        let process = *self
            .process
            .get_or_insert_with(|| self.profile.add_process(pid));
        // Each event type's period and series, once per chunk.
        let mut plans: FxHashMap<usize, Plan> = FxHashMap::default();
        for (class, c) in metadata.classes.iter().enumerate() {
            let Some(event) = EVENTS.iter().position(|(name, ..)| *name == c.name) else {
                continue;
            };
            let (name, _, weight) = EVENTS[event];
            let (period, unit) = match weight {
                Weight::Period => {
                    let p = self.period(name).or_else(|| self.interval("interval"));
                    (p, if p.is_some() { "nanoseconds" } else { "count" })
                }
                Weight::Samples(_) => {
                    let p = self.interval("wall");
                    (p, if p.is_some() { "nanoseconds" } else { "count" })
                }
                Weight::Nanos(_) | Weight::Ticks(_) => (None, "nanoseconds"),
                Weight::Bytes(_) => (None, "bytes"),
            };
            plans.insert(class, plan(event, c, period, unit));
        }
        let mut caches = Caches::default();
        self.chunk_bounds = None;
        spooled.for_each_event(|all, mut r| {
            let class = metadata.class_index(r.varint()?);
            match class.and_then(|c| Some((c, plans.get_mut(&c)?))) {
                Some((class, plan)) => {
                    let mut fields = recycle(std::mem::take(&mut spare));
                    read_struct(metadata, class, &mut r, &mut fields)?;
                    // Made at the first sample: the metadata declares every event type.
                    if plan.series.is_none() {
                        let kind = EVENTS[plan.event].1;
                        plan.series = Some(self.series(plan.event, kind, plan.unit, plan.period));
                    }
                    self.sample(&chunk.with_reader(all), &mut caches, process, plan, &fields)?;
                    spare = recycle(fields);
                    Ok(())
                }
                None => {
                    if class.is_none() || class != setting {
                        self.profile.count("jfr_skipped_events");
                    }
                    Ok(())
                }
            }
        })?;
        self.end_run();
        Ok(())
    }

    /// Notes the times of the run of samples just ended, if it has any.
    fn end_run(&mut self) {
        if let Some((least, greatest)) = self.chunk_bounds.take() {
            self.chunk_times.push(ChunkTimes {
                samples_to_end: self.pushed,
                least,
                greatest,
            });
        }
    }

    /// How many samples the events made, kept or not.
    pub(crate) fn samples_made(&self) -> u64 {
        self.pushed
    }

    /// Keeps the period settings of one `jdk.ActiveSetting` event.
    fn setting<'a>(
        &mut self,
        chunk: &Chunk<'a, '_>,
        class: usize,
        r: &mut Reader<'a>,
        fields: &mut Vec<Value<'a>>,
    ) -> Result<()> {
        read_struct(chunk.metadata, class, r, fields)?;
        let c = &chunk.metadata.classes[class];
        let get = |name| c.field(name).map(|f| fields[f]);
        let Some(Value::String(name)) = get("name") else {
            return Ok(());
        };
        let name = chunk.string(name)?.unwrap_or_default();
        if !SETTINGS.contains(&&*name) {
            return Ok(());
        }
        let Some(Value::String(value)) = get("value") else {
            return Ok(());
        };
        let value = chunk.string(value)?.unwrap_or_default().into_owned();
        let event = get("id")
            .and_then(Value::int)
            .and_then(|id| chunk.metadata.class_index(id as u64))
            .map(|c| chunk.metadata.classes[c].name.clone())
            .unwrap_or_default();
        self.settings.insert((event, name.into_owned()), value);
        Ok(())
    }

    /// The period in ns an event type's `period` setting gives it.
    fn period(&self, event: &str) -> Option<i64> {
        let found = self
            .settings
            .get(&(event.to_owned(), "period".to_owned()))?;
        parse_period(found)
    }

    /// One of async-profiler's intervals in ns (`interval`, `wall`): it gives them to its
    /// recording, not to an event type.
    fn interval(&self, setting: &str) -> Option<i64> {
        let mut found = self
            .settings
            .iter()
            .filter(|((_, name), _)| name == setting);
        parse_period(found.next()?.1)
    }

    fn sample(
        &mut self,
        chunk: &Chunk<'_, '_>,
        caches: &mut Caches,
        process: ProcessHandle,
        plan: &Plan,
        fields: &[Value<'_>],
    ) -> Result<()> {
        let weight_rule = EVENTS[plan.event].2;
        let field = |i: Option<usize>| i.map(|i| fields[i]);
        let Some(time) = field(plan.time)
            .and_then(Value::int)
            .and_then(|t| chunk.header.ticks_to_unix_ns(t))
        else {
            self.profile.count("jfr_event_without_time");
            return Ok(());
        };
        let weight_field = field(plan.weight).and_then(Value::int);
        let weight = match weight_rule {
            Weight::Period => plan.period.unwrap_or(1),
            Weight::Samples(_) => {
                let samples = weight_field.unwrap_or(1);
                plan.period.map_or(samples, |p| samples.saturating_mul(p))
            }
            Weight::Ticks(_) => chunk.header.ticks_to_ns(weight_field.unwrap_or(0)),
            Weight::Nanos(_) | Weight::Bytes(_) => weight_field.unwrap_or(0),
        };
        let Some(series) = plan.series else {
            return Ok(());
        };
        let thread = match field(plan.thread) {
            // Key 0 is null: the event has none.
            Some(Value::Ref { class, key }) if key != 0 => {
                self.thread(chunk, caches, process, class, key)?
            }
            _ => self.profile.add_thread(process, None),
        };
        let (stack, truncated) = match field(plan.stack) {
            Some(Value::Ref { class, key }) if key != 0 => self.stack(chunk, caches, class, key)?,
            _ => (None, false),
        };
        if self.pushed >= self.limits.max_samples {
            return Err(exceeded("max_samples", self.limits.max_samples));
        }
        let mut sample = Sample::new(thread, stack, weight, series);
        sample.time = Some(time);
        if truncated {
            sample.unwind_error = Some(self.truncated);
        }
        if let Some(context) = field(plan.context).and_then(Value::int).filter(|&c| c != 0) {
            sample.labels = self.profile.add_label_set(&[Label {
                key: self.context_key,
                value: LabelValue::Num {
                    value: context,
                    unit: None,
                },
            }]);
        }
        let position = self.pushed;
        self.pushed += 1;
        self.chunk_bounds = Some(match self.chunk_bounds {
            Some((least, greatest)) => (least.min(time), greatest.max(time)),
            None => (time, time),
        });
        if self.pushed.is_multiple_of(RUN_SAMPLES) {
            self.end_run();
        }
        match &mut self.samples {
            Samples::Keep => self.profile.add_sample(sample),
            Samples::Count => {}
            Samples::Forward(to) => to(position, sample)?,
        }
        Ok(())
    }

    fn series(
        &mut self,
        event: usize,
        kind: SeriesKind,
        unit: &str,
        period: Option<i64>,
    ) -> SeriesHandle {
        if let Some(&(_, _, h)) = self.series.iter().find(|(e, p, h)| {
            *e == event && *p == period && self.profile.str(self.profile.series(*h).unit) == unit
        }) {
            return h;
        }
        let series = crate::model::Series {
            kind,
            name: self.profile.intern(EVENTS[event].0),
            unit: self.profile.intern(unit),
            source: Some(self.profile.intern("jfr")),
            frequency_hz: None,
            period: period.and_then(|p| u64::try_from(p).ok()),
            spans: false,
        };
        let h = self.profile.add_series(series);
        self.series.push((event, period, h));
        h
    }

    /// The profile, its samples in time order.
    pub(crate) fn finish(mut self) -> Profile {
        // Sample v2 carries every CPU-time series: with the JDK's CPU-time sampler on
        // (JEP 509), the execution sampler's samples of the same threads are left to the tables.
        let of = |name: &str| -> Vec<SeriesHandle> {
            self.series
                .iter()
                .filter(|(e, ..)| EVENTS[*e].0 == name)
                .map(|&(.., h)| h)
                .collect()
        };
        if !of("jdk.CPUTimeSample").is_empty() {
            for h in of("jdk.ExecutionSample") {
                self.profile.set_series_kind(h, SeriesKind::Other);
            }
        }
        self.profile.start_time = self.start;
        self.profile.duration = match (self.start, self.end) {
            (Some(s), Some(e)) => Some(e.saturating_sub(s).max(0)),
            _ => None,
        };
        self.profile.sort_samples_by_time();
        self.profile
    }
}

/// `v` emptied, its allocation kept for values that borrow other bytes.
fn recycle<'b>(mut v: Vec<Value<'_>>) -> Vec<Value<'b>> {
    v.clear();
    v.into_iter()
        .map(|_| unreachable!("the vector is empty"))
        .collect()
}

/// Where the fields of an event type that becomes samples are.
fn plan(event: usize, c: &super::metadata::Class, period: Option<i64>, unit: &'static str) -> Plan {
    let weight = match EVENTS[event].2 {
        Weight::Period => None,
        Weight::Nanos(f) | Weight::Ticks(f) | Weight::Bytes(f) | Weight::Samples(f) => c.field(f),
    };
    Plan {
        event,
        time: c.field("startTime"),
        thread: c.field("sampledThread").or_else(|| c.field("eventThread")),
        stack: c.field("stackTrace"),
        weight,
        context: c.field("contextId"),
        period,
        unit,
        series: None,
    }
}

/// A period setting in nanoseconds: `10 ms`, `20ms`, `1 s`, `100 us`, or a bare number of
/// nanoseconds (async-profiler's intervals); `None` for anything else (`off`, `500/s`).
pub(crate) fn parse_period(value: &str) -> Option<i64> {
    let value = value.trim();
    let digits = value
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(value.len());
    let number: i64 = value[..digits].parse().ok()?;
    let unit = value[digits..].trim();
    let scale = match unit {
        "" | "ns" => 1,
        "us" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        _ => return None,
    };
    number.checked_mul(scale).filter(|&p| p > 0)
}
