//! What both layouts share: `meta`, the libraries, thread identities, the series samples go
//! to and the clock that puts them on the wall.

use debugid::{CodeId, DebugId};
use serde::Deserialize;

use super::malformed;
use crate::error::Result;
use crate::model::{
    checked_seconds_to_ns, Image, ImageHandle, Profile, Series, SeriesHandle, SeriesKind,
    ThreadHandle, Timestamps,
};

/// The parts of `meta` read.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Meta {
    /// The sampling interval, in ms.
    pub interval: Option<f64>,
    /// When the profile's time 0 is, in ms since the Unix epoch.
    pub start_time: Option<f64>,
    #[serde(default)]
    pub categories: Option<Vec<Category>>,
    pub sample_units: Option<SampleUnits>,
    pub product: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct Category {
    #[serde(default)]
    pub name: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SampleUnits {
    pub thread_cpu_delta: Option<String>,
}

impl Meta {
    /// Whether category `index` is the kernel's: samply and Firefox name it `Kernel`.
    pub fn is_kernel(&self, index: Option<u64>) -> bool {
        let categories = self.categories.as_deref().unwrap_or_default();
        index
            .and_then(|i| categories.get(usize::try_from(i).ok()?))
            .is_some_and(|c| c.name == "Kernel")
    }

    /// The clock of this profile's sample times, which are ms after `startTime`; without a
    /// `startTime` they stay on the `firefox` trace clock.
    pub fn clock(&self, profile: &mut Profile) -> Result<Clock> {
        let Some(start) = self.start_time else {
            profile.timestamps = Timestamps::TraceClock("firefox".into());
            return Ok(Clock { start_ns: 0 });
        };
        let start_ns = checked_seconds_to_ns(start / 1000.0)
            .ok_or_else(|| malformed(format!("meta.startTime {start:?} is out of range")))?;
        Ok(Clock { start_ns })
    }

    /// The profile-wide attributes `meta` gives.
    pub fn describe(&self, profile: &mut Profile) {
        if let Some(product) = self.product.as_deref().filter(|p| !p.is_empty()) {
            profile
                .attributes
                .entry("firefox.product".into())
                .or_insert_with(|| product.to_owned());
        }
    }
}

/// Sample times: ms after the profile's start, to ns on the profile's clock.
#[derive(Clone, Copy)]
pub(super) struct Clock {
    start_ns: i64,
}

impl Clock {
    pub fn at(self, ms: f64, what: &dyn Fn() -> String) -> Result<i64> {
        // Rounded to whole ns: the ms fractions Firefox writes carry ns at most.
        let ns = ms * 1e6;
        let offset = (ns.is_finite() && ns.abs() < 9.0e18).then(|| ns.round() as i64);
        offset
            .and_then(|o| self.start_ns.checked_add(o))
            .ok_or_else(|| malformed(format!("{}: time {ms:?} ms is out of range", what())))
    }
}

/// One entry of `libs`. The processed layout has no `start`, `end` or `offset`: its frame
/// addresses are relative to the library.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Lib {
    pub name: Option<String>,
    pub path: Option<String>,
    pub breakpad_id: Option<String>,
    pub code_id: Option<String>,
    #[serde(default)]
    pub start: u64,
    #[serde(default)]
    pub end: u64,
    #[serde(default)]
    pub offset: u64,
}

impl Lib {
    /// The image the library is: its path, its code id (the ELF build ID, the Mach-O UUID,
    /// the PE timestamp and size) and its Breakpad id as the debug id.
    pub fn image(&self, profile: &mut Profile) -> ImageHandle {
        let path = self.path.as_deref().or(self.name.as_deref());
        let path = path.filter(|p| !p.is_empty()).map(|p| profile.intern(p));
        let mut image = Image::new(path, self.start, self.end);
        image.file_offset = self.offset;
        image.code_id = self
            .code_id
            .as_deref()
            .map(|c| CodeId::new(c.to_owned()))
            .filter(|c| !c.is_nil());
        image.debug_id = self
            .breakpad_id
            .as_deref()
            .and_then(|b| DebugId::from_breakpad(b).ok())
            .filter(|d| !d.is_nil());
        profile.add_image(image)
    }
}

/// The images of `libs`, each made once.
pub(super) struct Images<'a> {
    libs: &'a [Lib],
    made: Vec<Option<ImageHandle>>,
}

impl<'a> Images<'a> {
    pub fn new(libs: &'a [Lib]) -> Self {
        Images {
            libs,
            made: vec![None; libs.len()],
        }
    }

    pub fn get(&mut self, index: usize, profile: &mut Profile) -> Option<ImageHandle> {
        let lib = self.libs.get(index)?;
        Some(*self.made[index].get_or_insert_with(|| lib.image(profile)))
    }

    pub fn libs(&self) -> &'a [Lib] {
        self.libs
    }
}

/// A pid or tid: a number, or (processed since version 47, and samply's own) a string.
#[derive(Deserialize, Clone)]
#[serde(untagged)]
pub(super) enum Id {
    Number(i64),
    Text(String),
}

impl Id {
    fn number(&self) -> Option<i64> {
        match self {
            Id::Number(n) => Some(*n),
            Id::Text(t) => t.parse().ok(),
        }
    }
}

/// Who a thread is, as both layouts write it.
pub(super) struct ThreadId<'t> {
    pub pid: Option<&'t Id>,
    pub tid: Option<&'t Id>,
    pub name: Option<&'t str>,
    pub process_name: Option<&'t str>,
    pub process_type: Option<&'t str>,
}

impl ThreadId<'_> {
    /// The model's thread, in the model's process. A pid that is not a number (the
    /// profiler's own placeholders) is kept as the process attribute `firefox.pid`.
    pub fn add(&self, profile: &mut Profile) -> ThreadHandle {
        let pid = self.pid.and_then(Id::number);
        let process = profile.add_process(pid);
        if let (None, Some(Id::Text(text))) = (pid, self.pid) {
            profile.set_process_attribute(process, "firefox.pid", text);
        }
        profile.name_process(process, self.process_name, None);
        if let Some(kind) = self.process_type.filter(|k| !k.is_empty()) {
            profile.set_process_attribute(process, "firefox.process_type", kind);
        }
        let thread = profile.add_thread(process, self.tid.and_then(Id::number));
        if let Some(name) = self.name {
            profile.name_thread(thread, name);
        }
        thread
    }
}

/// What a sample's `weight` counts (`samples.weightType`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum WeightType {
    /// Sample counts (the default): wall-clock samples at the profile's interval.
    Samples,
    /// Durations in ms of traced (not sampled) calls.
    TracingMs,
    /// Allocated bytes.
    Bytes,
}

impl WeightType {
    pub fn parse(name: Option<&str>) -> Result<WeightType> {
        match name {
            None | Some("samples") => Ok(WeightType::Samples),
            Some("tracing-ms") => Ok(WeightType::TracingMs),
            Some("bytes") => Ok(WeightType::Bytes),
            Some(other) => Err(malformed(format!(
                "samples.weightType {other:?} is not samples, tracing-ms or bytes"
            ))),
        }
    }

    /// A weight as the series' integer unit: ms of tracing become ns.
    pub fn scale(self, weight: f64) -> i64 {
        let w = match self {
            WeightType::TracingMs => weight * 1e6,
            WeightType::Samples | WeightType::Bytes => weight,
        };
        // `as` saturates: a weight no i64 holds is no real one.
        w.round() as i64
    }
}

/// The series one thread's samples go to.
#[derive(Clone, Copy)]
pub(super) struct Targets {
    pub weights: SeriesHandle,
    pub weight_type: WeightType,
    /// `threadCPUDelta`'s series, when the thread has the column.
    pub cpu: Option<SeriesHandle>,
}

impl Targets {
    pub fn new(
        profile: &mut Profile,
        meta: &Meta,
        weight_type: WeightType,
        has_cpu: bool,
    ) -> Targets {
        let frequency_hz = meta
            .interval
            .filter(|ms| *ms > 0.0)
            .map(|ms| (1000.0 / ms).round() as u64)
            .filter(|&hz| hz > 0);
        let weights = match weight_type {
            WeightType::Samples => series(
                profile,
                "samples",
                "count",
                SeriesKind::WallTime,
                frequency_hz,
            ),
            WeightType::TracingMs => series(
                profile,
                "tracing",
                "nanoseconds",
                SeriesKind::WallTime,
                None,
            ),
            WeightType::Bytes => series(profile, "allocations", "bytes", SeriesKind::Other, None),
        };
        let cpu = has_cpu.then(|| {
            let unit = meta
                .sample_units
                .as_ref()
                .and_then(|u| u.thread_cpu_delta.as_deref());
            match unit {
                Some("ns") => series(profile, "cpu", "nanoseconds", SeriesKind::CpuTime, None),
                Some("variable CPU cycles") => {
                    series(profile, "cpu_cycles", "cycles", SeriesKind::Other, None)
                }
                // µs is the unit Firefox and samply write, and the one before units were named.
                _ => series(profile, "cpu", "microseconds", SeriesKind::CpuTime, None),
            }
        });
        Targets {
            weights,
            weight_type,
            cpu,
        }
    }
}

fn series(
    profile: &mut Profile,
    name: &str,
    unit: &str,
    kind: SeriesKind,
    frequency_hz: Option<u64>,
) -> SeriesHandle {
    let series = Series {
        kind,
        name: profile.intern(name),
        unit: profile.intern(unit),
        source: Some(profile.intern("firefox")),
        frequency_hz,
        period: None,
        spans: false,
    };
    profile.add_series(series)
}
