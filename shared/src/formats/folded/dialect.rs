//! Which producer wrote a folded file. The line syntax is shared; the dialect decides how
//! frames are read and whether root frames name processes and threads.

use super::frame_syntax::{
    austin_process, austin_thread, is_pyspy_python_frame, is_sampling_python_frame, pyspy_process,
    pyspy_thread, sampling_thread,
};
use crate::model::SeriesKind;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dialect {
    /// py-spy `record -f raw`.
    PySpy,
    /// CPython 3.15 `python -m profiling.sampling ... --collapsed`.
    PythonSampling,
    /// austin 3.x (`austin -o FILE`).
    Austin,
    /// Anything else: stackcollapse-perf.pl and other FlameGraph collapsers.
    Generic,
}

impl Dialect {
    /// Decides from the first line whose frames only one dialect writes; files where none of
    /// the first lines does are generic. Python producers put a Python frame or a thread
    /// frame on nearly every line, so looking further would only slow generic files down.
    pub(super) fn detect<'a>(stacks: impl IntoIterator<Item = &'a str>) -> Dialect {
        const LINES_LOOKED_AT: usize = 1000;
        stacks
            .into_iter()
            .take(LINES_LOOKED_AT)
            .find_map(Self::vote)
            .unwrap_or(Dialect::Generic)
    }

    fn vote(stack: &str) -> Option<Dialect> {
        let mut frames = stack.split(';');
        let root = frames.next()?;
        // Before the Python frames: austin's are `file:function:line` too.
        if austin_process(root).is_some() && frames.next().and_then(austin_thread).is_some() {
            return Some(Dialect::Austin);
        }
        if sampling_thread(root).is_some() {
            return Some(Dialect::PythonSampling);
        }
        if pyspy_thread(root).is_some() || pyspy_process(root).is_some() {
            return Some(Dialect::PySpy);
        }
        stack.split(';').find_map(|frame| {
            if is_pyspy_python_frame(frame) {
                Some(Dialect::PySpy)
            } else if is_sampling_python_frame(frame) {
                Some(Dialect::PythonSampling)
            } else {
                None
            }
        })
    }

    /// Short name, kept as the profile attribute `folded.dialect`.
    pub(super) fn name(self) -> &'static str {
        match self {
            Dialect::PySpy => "py-spy",
            Dialect::PythonSampling => "profiling.sampling",
            Dialect::Austin => "austin",
            Dialect::Generic => "generic",
        }
    }

    /// The series' source.
    pub(super) fn source(self) -> &'static str {
        match self {
            Dialect::PySpy => "py-spy",
            Dialect::PythonSampling => "profiling.sampling",
            Dialect::Austin => "austin",
            Dialect::Generic => "folded",
        }
    }

    /// What the counts measure, as far as each producer's defaults tell; the file does not
    /// record the sampling mode. py-spy leaves idle threads out unless given `--idle`, which
    /// makes its samples on-CPU time in practice; profiling.sampling defaults to `--mode
    /// wall`; FlameGraph's collapsers are mostly fed CPU samples (perf `cpu-clock`/`cycles`);
    /// austin defaults to wall time, and its header says when it sampled otherwise.
    pub(super) fn series_kind(self) -> SeriesKind {
        match self {
            Dialect::PySpy | Dialect::Generic => SeriesKind::CpuTime,
            Dialect::PythonSampling | Dialect::Austin => SeriesKind::WallTime,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_by_first_telling_line() {
        let pyspy = ["", "thread (1): MainThread;main (a.py:3)"];
        assert_eq!(Dialect::detect(pyspy), Dialect::PySpy);
        assert_eq!(
            Dialect::detect(["<module> (a.py:1);f (a.py:2)"]),
            Dialect::PySpy
        );
        let sampling = ["tid:7;a.py:main:3"];
        assert_eq!(Dialect::detect(sampling), Dialect::PythonSampling);
        assert_eq!(Dialect::detect(["a.py:main:3"]), Dialect::PythonSampling);
        let austin = ["P6360;T0:6360;/app/a.py:main:3"];
        assert_eq!(Dialect::detect(austin), Dialect::Austin);
        assert_eq!(Dialect::detect(["P6360;T6360"]), Dialect::Austin);
        let perf = ["perf;main;do_syscall_64_[k]", "perf;[unknown]"];
        assert_eq!(Dialect::detect(perf), Dialect::Generic);
    }
}
