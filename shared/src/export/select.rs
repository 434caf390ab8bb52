//! Which profiles and samples an export or a flame graph takes: one upload, or a slice of the
//! fleet by service, release, environment, time, series, process and thread.

use std::collections::BTreeSet;

/// A thread or process named by number (tid, pid) or by name. A number also matches a
/// thread or process *named* like it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdOrName {
    /// A thread or process id.
    Id(i64),
    /// A name, exactly.
    Name(String),
}

impl IdOrName {
    /// A number when the text is one, else a name.
    pub fn parse(text: &str) -> Self {
        match text.parse() {
            Ok(id) => IdOrName::Id(id),
            Err(_) => IdOrName::Name(text.to_owned()),
        }
    }

    /// Whether a thread or process with this id and name is the one meant.
    pub fn matches(&self, id: Option<i64>, name: Option<&str>) -> bool {
        match self {
            IdOrName::Id(want) => id == Some(*want) || name.is_some_and(|n| n.parse() == Ok(*want)),
            IdOrName::Name(want) => name == Some(want.as_str()),
        }
    }
}

impl std::fmt::Display for IdOrName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IdOrName::Id(id) => write!(f, "{id}"),
            IdOrName::Name(name) => write!(f, "{name:?}"),
        }
    }
}

/// The samples an export takes: every field set narrows it; the default takes everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    /// Only this upload (`source_id`).
    pub source_id: Option<String>,
    /// Only profiles of this service.
    pub service: Option<String>,
    /// Only profiles of this release.
    pub release: Option<String>,
    /// Only profiles of this environment.
    pub environment: Option<String>,
    /// Only samples at or after this time, ns since the Unix epoch. Aggregated samples,
    /// which have no time, count at their profile's start.
    pub from_ns: Option<i64>,
    /// Only samples at or before this time, ns since the Unix epoch.
    pub to_ns: Option<i64>,
    /// Only these series (`sample_type`); every series when empty.
    pub series: Vec<String>,
    /// Only profiles of this process (`pid` or `process_name`).
    pub process: Option<IdOrName>,
    /// Only samples of this thread (`thread_id` or `thread_name`).
    pub thread: Option<IdOrName>,
}

impl Selection {
    /// What the selection takes, for titles and messages; empty when it takes everything.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        let mut text = |what: &str, value: &Option<String>| {
            if let Some(v) = value {
                parts.push(format!("{what} {v:?}"));
            }
        };
        text("upload", &self.source_id);
        text("service", &self.service);
        text("release", &self.release);
        text("environment", &self.environment);
        if let Some(p) = &self.process {
            parts.push(format!("process {p}"));
        }
        if let Some(t) = &self.thread {
            parts.push(format!("thread {t}"));
        }
        if !self.series.is_empty() {
            let names: Vec<String> = self.series.iter().map(|s| format!("{s:?}")).collect();
            parts.push(format!("series {}", names.join(", ")));
        }
        let time = crate::calendar::utc_time;
        match (self.from_ns, self.to_ns) {
            (Some(f), Some(t)) => parts.push(format!("from {} to {}", time(f), time(t))),
            (Some(f), None) => parts.push(format!("from {}", time(f))),
            (None, Some(t)) => parts.push(format!("to {}", time(t))),
            (None, None) => {}
        }
        parts.join(", ")
    }

    /// Whether a sample at `time_ns` is in the time range.
    pub(crate) fn in_time(&self, time_ns: i64) -> bool {
        self.from_ns.is_none_or(|f| time_ns >= f) && self.to_ns.is_none_or(|t| time_ns <= t)
    }
}

/// Up to 20 distinct values, sorted, for a message naming what exists.
pub(crate) fn listing(values: BTreeSet<String>) -> String {
    if values.is_empty() {
        return "none".into();
    }
    let more = values.len().saturating_sub(20);
    let mut out = values.into_iter().take(20).collect::<Vec<_>>().join(", ");
    if more > 0 {
        out.push_str(&format!(" and {more} more"));
    }
    out
}
