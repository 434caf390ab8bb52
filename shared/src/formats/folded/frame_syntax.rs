//! The text of one frame, per producer dialect.
//!
//! - py-spy (`record -f raw`): `function (file:line)`, or `function (file)` when the line is
//!   unknown or `--nolineno` was given; `--threads` adds a root `thread (TID)` or
//!   `thread (TID): NAME` frame, `--subprocesses` root `process PID:"COMMAND LINE"` frames
//!   (outermost ancestor first). Native frames from `--native` have a C file or a library in
//!   the parentheses, unresolved ones are `0xADDR (?)`.
//! - CPython's `profiling.sampling --collapsed` (3.15): a root `tid:TID` frame, then
//!   `file:function:line` with the file's base name; synthetic frames (`<GC>`, `<native>`)
//!   are the bare name.
//! - austin (3.x): root `P<pid>` and `T<interpreter>:<tid>` frames, then `file:function:line`
//!   with the file's full path.
//! - stackcollapse-perf.pl and other generic producers: the function name, with FlameGraph's
//!   annotation suffixes `_[k]` (kernel), `_[j]` (JIT), `_[i]` (inlined); an unsymbolized
//!   frame is `[unknown]`, or `[module]` when perf knew the module.

use crate::model::FrameKind;

/// A frame's fields as the text gives them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct FrameText<'a> {
    pub kind: FrameKind,
    pub function: Option<&'a str>,
    pub file: Option<&'a str>,
    pub line: Option<u32>,
    pub address: Option<u64>,
    /// Path of the image the code is in.
    pub image: Option<&'a str>,
}

impl<'a> FrameText<'a> {
    fn named(kind: FrameKind, function: &'a str) -> Self {
        FrameText {
            kind,
            function: Some(function),
            file: None,
            line: None,
            address: None,
            image: None,
        }
    }
}

// ---- py-spy ---------------------------------------------------------------------------

/// A py-spy `--subprocesses` frame: pid and command line.
pub(super) fn pyspy_process(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix("process ")?;
    let (pid, command) = rest.split_once(":\"")?;
    let command = command.strip_suffix('"')?;
    is_decimal(pid).then_some((pid, command))
}

/// A py-spy `--threads` frame: thread id (decimal OS id, or `0x` hex Python id where the OS
/// id is unknown) and the name, if any.
pub(super) fn pyspy_thread(text: &str) -> Option<(&str, Option<&str>)> {
    let rest = text.strip_prefix("thread (")?;
    let (id, rest) = rest.split_once(')')?;
    let name = match rest {
        "" => None,
        _ => Some(rest.strip_prefix(": ")?),
    };
    let is_id = is_decimal(id)
        || id
            .strip_prefix("0x")
            .or_else(|| id.strip_prefix("0X"))
            .is_some_and(|hex| !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()));
    is_id.then_some((id, name))
}

/// Parses a py-spy thread id: decimal, or `0x` hex.
pub(super) fn thread_id(id: &str) -> Option<i64> {
    match id.strip_prefix("0x").or_else(|| id.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16)
            .ok()
            .and_then(|v| i64::try_from(v).ok()),
        None => id.parse().ok(),
    }
}

/// `function (location)`: the name and what is inside the last balanced parentheses, so
/// that `operator() (a.cc:3)` and `f (C:\Program Files (x86)\a.py:3)` split right.
fn paren_location(text: &str) -> Option<(&str, &str)> {
    let body = text.strip_suffix(')')?;
    let mut depth = 0usize;
    let open = body.char_indices().rev().find_map(|(i, c)| match c {
        ')' => {
            depth += 1;
            None
        }
        '(' if depth == 0 => Some(i),
        '(' => {
            depth -= 1;
            None
        }
        _ => None,
    })?;
    let name = body[..open].strip_suffix(' ')?;
    (!name.is_empty()).then_some((name, &body[open + 1..]))
}

/// Whether a file name is Python source as CPython names it (`<frozen os>` and `<string>`
/// are code objects without a file).
fn is_python_file(file: &str) -> bool {
    let lower = file.to_ascii_lowercase();
    [".py", ".pyw", ".pyx", ".pxd", ".pyi"]
        .iter()
        .any(|ext| lower.ends_with(ext))
        || (file.starts_with('<') && file.ends_with('>'))
}

/// A py-spy frame whose location marks it as Python (used to detect the dialect).
pub(super) fn is_pyspy_python_frame(text: &str) -> bool {
    paren_location(text).is_some_and(|(_, location)| is_python_file(split_line(location).0))
}

fn split_line(location: &str) -> (&str, Option<u32>) {
    match location.rsplit_once(':') {
        Some((file, line)) if is_decimal(line) => (file, line.parse().ok().filter(|&l| l > 0)),
        _ => (location, None),
    }
}

/// One py-spy frame below the thread and process frames.
pub(super) fn pyspy_frame(text: &str) -> FrameText<'_> {
    let Some((name, location)) = paren_location(text) else {
        return FrameText::named(FrameKind::Unknown, text);
    };
    let (file, line) = split_line(location);
    if is_python_file(file) {
        return FrameText {
            kind: FrameKind::Python,
            function: Some(name),
            file: Some(file),
            line,
            address: None,
            image: None,
        };
    }
    // `--native` frames: a C source or a library; `0xADDR (?)` when unresolved.
    let address = name
        .strip_prefix("0x")
        .and_then(|hex| u64::from_str_radix(hex, 16).ok());
    FrameText {
        kind: FrameKind::Native,
        function: address.is_none().then_some(name),
        file: (file != "?").then_some(file),
        line,
        address,
        image: None,
    }
}

// ---- CPython profiling.sampling ----------------------------------------------------------

/// A `tid:TID` root frame: the thread id text.
pub(super) fn sampling_thread(text: &str) -> Option<&str> {
    text.strip_prefix("tid:").filter(|id| is_decimal(id))
}

/// `file:function:line` with a Python file: (file, function, line).
fn sampling_location(text: &str) -> Option<(&str, &str, u32)> {
    let (rest, line) = text.rsplit_once(':')?;
    let (file, function) = rest.split_once(':')?;
    let line = if is_decimal(line) {
        line.parse().ok()?
    } else {
        return None;
    };
    (!file.is_empty() && !function.is_empty()).then_some((file, function, line))
}

/// A profiling.sampling frame of a Python file (used to detect the dialect).
pub(super) fn is_sampling_python_frame(text: &str) -> bool {
    sampling_location(text).is_some_and(|(file, _, _)| is_python_file(file))
}

/// One profiling.sampling frame below the `tid:` frame.
pub(super) fn sampling_frame(text: &str) -> FrameText<'_> {
    match sampling_location(text) {
        Some((file, function, line)) => FrameText {
            kind: FrameKind::Python,
            function: Some(function),
            file: Some(file),
            line: (line > 0).then_some(line),
            address: None,
            image: None,
        },
        None => FrameText::named(
            match text {
                "<GC>" => FrameKind::Gc,
                "<native>" => FrameKind::Native,
                _ => FrameKind::Python,
            },
            text,
        ),
    }
}

// ---- austin ---------------------------------------------------------------------------

/// An austin `P<pid>` root frame: the pid.
pub(super) fn austin_process(text: &str) -> Option<i64> {
    text.strip_prefix('P')
        .filter(|pid| is_decimal(pid))
        .and_then(|pid| pid.parse().ok())
}

/// An austin thread frame below the process frame: `T<interpreter>:<tid>` (austin 3.5 and
/// later) or `T<id>` (earlier, the id in decimal or as a hex pthread id). `Some(None)` when
/// it is a thread frame whose id does not fit a thread id.
pub(super) fn austin_thread(text: &str) -> Option<Option<i64>> {
    let id = text.strip_prefix('T')?;
    match id.split_once(':') {
        Some((interpreter, tid)) if is_decimal(interpreter) && is_decimal(tid) => {
            Some(tid.parse().ok())
        }
        Some(_) => None,
        None if is_decimal(id) => Some(id.parse().ok()),
        None if !id.is_empty() && id.bytes().all(|b| b.is_ascii_hexdigit()) => Some(
            u64::from_str_radix(id, 16)
                .ok()
                .and_then(|v| i64::try_from(v).ok()),
        ),
        None => None,
    }
}

/// One austin frame below the thread frame: `file:function:line`, with the full path of the
/// file (`<frozen ...>` for frozen modules); austin writes `:INVALID:` for a frame it could
/// not read.
pub(super) fn austin_frame(text: &str) -> FrameText<'_> {
    let parsed = text.rsplit_once(':').and_then(|(rest, line)| {
        let (file, function) = rest.rsplit_once(':')?;
        let line = match line {
            "" => None,
            l if is_decimal(l) => l.parse().ok().filter(|&l| l > 0),
            _ => return None,
        };
        (!file.is_empty() && !function.is_empty()).then_some((file, function, line))
    });
    match parsed {
        Some((file, function, line)) => FrameText {
            kind: if is_python_file(file) {
                FrameKind::Python
            } else {
                FrameKind::Native
            },
            function: Some(function),
            file: Some(file),
            line,
            address: None,
            image: None,
        },
        None => FrameText::named(FrameKind::Unknown, text),
    }
}

// ---- generic (stackcollapse-perf) --------------------------------------------------------

/// One frame of a generic producer.
pub(super) fn generic_frame(text: &str) -> FrameText<'_> {
    let (kind, name) = if let Some(name) = text.strip_suffix("_[k]") {
        (FrameKind::Kernel, name)
    } else if let Some(name) = text.strip_suffix("_[j]") {
        (FrameKind::Jit, name)
    } else if let Some(name) = text.strip_suffix("_[i]") {
        (FrameKind::Native, name)
    } else {
        (FrameKind::Native, text)
    };
    if let Some(module) = name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        // perf could not symbolize the address; all it may know is the module.
        return FrameText {
            function: None,
            image: (!module.is_empty() && module != "unknown").then_some(module),
            ..FrameText::named(kind, name)
        };
    }
    FrameText::named(kind, name)
}

fn is_decimal(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pyspy_python_frames() {
        let f = pyspy_frame("Thread.run (threading.py:982)");
        assert_eq!(f.kind, FrameKind::Python);
        assert_eq!(
            (f.function, f.file, f.line),
            (Some("Thread.run"), Some("threading.py"), Some(982))
        );
        let f = pyspy_frame("_find_and_load (<frozen importlib._bootstrap>:1176)");
        assert_eq!(f.file, Some("<frozen importlib._bootstrap>"));
        let f = pyspy_frame(r"main (C:\Program Files (x86)\app\main.py:7)");
        assert_eq!(
            (f.function, f.file, f.line),
            (
                Some("main"),
                Some(r"C:\Program Files (x86)\app\main.py"),
                Some(7)
            )
        );
        let f = pyspy_frame("<module> (prog.py)");
        assert_eq!((f.file, f.line), (Some("prog.py"), None));
    }

    #[test]
    fn pyspy_native_frames() {
        let f = pyspy_frame("operator() (engine.cc:41)");
        assert_eq!(f.kind, FrameKind::Native);
        assert_eq!((f.function, f.line), (Some("operator()"), Some(41)));
        let f = pyspy_frame("0x7f3a2c (?)");
        assert_eq!(
            (f.function, f.file, f.address),
            (None, None, Some(0x7f3a2c))
        );
    }

    #[test]
    fn pyspy_root_frames() {
        assert_eq!(pyspy_thread("thread (18635)"), Some(("18635", None)));
        assert_eq!(
            pyspy_thread("thread (0x7F12AB): MainThread"),
            Some(("0x7F12AB", Some("MainThread")))
        );
        assert_eq!(pyspy_thread("thread (threads.py:3)"), None);
        assert_eq!(thread_id("0x7F12AB"), Some(0x7f12ab));
        assert_eq!(
            pyspy_process(r#"process 42:"python3 -m app --x "y"""#),
            Some(("42", r#"python3 -m app --x "y""#))
        );
        assert_eq!(pyspy_process("process (x.py:1)"), None);
    }

    #[test]
    fn sampling_frames() {
        assert_eq!(sampling_thread("tid:12"), Some("12"));
        let f = sampling_frame("file.py:func2:20");
        assert_eq!(
            (f.kind, f.function, f.file, f.line),
            (FrameKind::Python, Some("func2"), Some("file.py"), Some(20))
        );
        assert_eq!(sampling_frame("<GC>").kind, FrameKind::Gc);
        assert_eq!(sampling_frame("<native>").kind, FrameKind::Native);
    }

    #[test]
    fn austin_frames() {
        assert_eq!(austin_process("P27412"), Some(27412));
        assert_eq!(austin_process("Pthread"), None);
        assert_eq!(austin_thread("T0:27454"), Some(Some(27454)));
        assert_eq!(austin_thread("T6360"), Some(Some(6360)));
        assert_eq!(austin_thread("T7f3e8c3f6740"), Some(Some(0x7f3e_8c3f_6740)));
        assert_eq!(austin_thread("Thread"), None);
        assert_eq!(austin_thread("T0:x"), None);
        let f = austin_frame("/tmp/app/workload.py:fib:5");
        assert_eq!(
            (f.kind, f.function, f.file, f.line),
            (
                FrameKind::Python,
                Some("fib"),
                Some("/tmp/app/workload.py"),
                Some(5)
            )
        );
        let f = austin_frame("<frozen importlib._bootstrap>:_find_and_load:1176");
        assert_eq!(f.file, Some("<frozen importlib._bootstrap>"));
        let f = austin_frame(r"C:\app\main.py:<module>:3");
        assert_eq!(
            (f.file, f.function),
            (Some(r"C:\app\main.py"), Some("<module>"))
        );
        let f = austin_frame(":INVALID:");
        assert_eq!(
            (f.kind, f.function),
            (FrameKind::Unknown, Some(":INVALID:"))
        );
    }

    #[test]
    fn generic_suffixes() {
        let f = generic_frame("do_syscall_64_[k]");
        assert_eq!(
            (f.kind, f.function),
            (FrameKind::Kernel, Some("do_syscall_64"))
        );
        assert_eq!(generic_frame("Interpreter_[j]").kind, FrameKind::Jit);
        assert_eq!(generic_frame("[unknown]").function, None);
        let f = generic_frame("[libc.so.6]");
        assert_eq!((f.function, f.image), (None, Some("libc.so.6")));
        assert_eq!(generic_frame("main").function, Some("main"));
    }
}
