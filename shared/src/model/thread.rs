//! Processes and threads.

use super::{ProcessHandle, StringHandle};

/// A process. `pid` is `None` when the input did not say which process a sample came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Process {
    /// Process id.
    pub pid: Option<i64>,
    /// Short name (`comm`, or the executable's base name).
    pub name: Option<StringHandle>,
    /// Full command line, arguments separated by spaces.
    pub command_line: Option<StringHandle>,
    /// What the producer said about the process and where it ran (`service.name`,
    /// `container.id`, `host.name`), in input order, first value per key.
    pub attributes: Vec<(StringHandle, StringHandle)>,
}

/// A thread. `tid` is `None` when the input did not say which thread a sample ran on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Thread {
    /// The process the thread belongs to.
    pub process: ProcessHandle,
    /// Thread id.
    pub tid: Option<i64>,
    /// Thread name.
    pub name: Option<StringHandle>,
}
