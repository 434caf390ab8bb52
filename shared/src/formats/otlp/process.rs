//! Which model process a sample belongs to.
//!
//! A `ResourceProfiles` usually describes one process (`process.pid` and friends among the
//! resource attributes). The eBPF profiler instead makes one resource per container and puts
//! `process.pid`, `process.executable.name` and `process.executable.path` on each sample, so
//! a sample's own process attributes win over the resource's; the resource's other attributes
//! (`container.id`, `service.name`, `host.name`) describe every process of the resource.

use rustc_hash::FxHashSet;

use super::dict::Scalar;
use crate::model::{ProcessHandle, Profile};

const PID: &str = "process.pid";
const EXECUTABLE_NAME: &str = "process.executable.name";
const EXECUTABLE_PATH: &str = "process.executable.path";
const COMMAND_LINE: &str = "process.command_line";
const COMMAND_ARGS: &str = "process.command_args";

/// What one set of attributes says about a process.
#[derive(Debug, Default)]
pub(super) struct ProcessInfo {
    pub pid: Option<i64>,
    name: Option<String>,
    path_name: Option<String>,
    command_line: Option<String>,
    command_args: Option<String>,
    /// The attributes read, as text, to keep as process attributes.
    attributes: Vec<(String, String)>,
}

impl ProcessInfo {
    /// Reads `key` if it is one of the process attributes; says whether it was.
    pub(super) fn take(&mut self, key: &str, value: &Scalar) -> bool {
        let text = || match value {
            Scalar::Str(s) if !s.is_empty() => Some(s.to_string()),
            _ => None,
        };
        match key {
            PID => {
                self.pid = match value {
                    Scalar::Int(i) => Some(*i),
                    Scalar::Str(s) => s.trim().parse().ok(),
                    _ => None,
                }
            }
            EXECUTABLE_NAME => self.name = text(),
            EXECUTABLE_PATH => {
                self.path_name =
                    text().and_then(|p| p.rsplit(['/', '\\']).next().map(str::to_owned))
            }
            COMMAND_LINE => self.command_line = text(),
            COMMAND_ARGS => {
                // Arrays arrive rendered as JSON text.
                self.command_args = match value {
                    Scalar::Text(t) => serde_json::from_str::<Vec<String>>(t)
                        .ok()
                        .map(|a| a.join(" ")),
                    _ => None,
                }
            }
            _ => return false,
        }
        let text = value.to_text();
        if !text.is_empty() {
            self.attributes.push((key.to_owned(), text));
        }
        true
    }

    fn name(&self) -> Option<&str> {
        self.name.as_deref().or(self.path_name.as_deref())
    }

    fn command_line(&self) -> Option<&str> {
        self.command_line
            .as_deref()
            .or(self.command_args.as_deref())
    }
}

/// One resource's processes.
pub(super) struct ResourceProcesses {
    info: ProcessInfo,
    /// The resource's attributes in input order, each marked whether it is about the process
    /// itself (`process.pid`, ...) rather than where it ran.
    attributes: Vec<(String, String, bool)>,
    known: FxHashSet<ProcessHandle>,
}

impl ResourceProcesses {
    /// Reads a resource's attributes.
    pub(super) fn new(attrs: Vec<(&str, Scalar)>) -> Self {
        let mut info = ProcessInfo::default();
        let mut attributes = Vec::new();
        for (key, value) in attrs {
            let about_process = info.take(key, &value);
            let value = value.into_string();
            if !value.is_empty() {
                attributes.push((key.to_owned(), value, about_process));
            }
        }
        ResourceProcesses {
            info,
            attributes,
            known: FxHashSet::default(),
        }
    }

    /// The process of a sample whose own process attributes are `sample`.
    pub(super) fn process(&mut self, p: &mut Profile, sample: &ProcessInfo) -> ProcessHandle {
        let pid = sample.pid.or(self.info.pid);
        let process = p.add_process(pid);
        if !self.known.insert(process) {
            return process;
        }
        // Attributes in input order: the resource's, then the sample's. The resource's
        // process facts only hold for the resource's own process.
        let resource_process = sample.pid.is_none() || sample.pid == self.info.pid;
        p.name_process(process, sample.name(), sample.command_line());
        if resource_process {
            p.name_process(process, self.info.name(), self.info.command_line());
        }
        let resource = self
            .attributes
            .iter()
            .filter(|(_, _, about_process)| resource_process || !about_process)
            .map(|(k, v, _)| (k, v));
        for (key, value) in resource.chain(sample.attributes.iter().map(|(k, v)| (k, v))) {
            p.set_process_attribute(process, key, value);
        }
        process
    }
}
