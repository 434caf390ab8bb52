//! Perfetto's enums and names, mapped onto the model's vocabulary.

use proflake_proto::perfetto::{perf_events::Timebase, stack_sample::CounterDescriptor};

use crate::model::{CpuMode, FrameKind, SeriesKind};

/// `Profiling.CpuMode` (PerfSample).
pub(super) fn perf_cpu_mode(mode: Option<i32>) -> CpuMode {
    match mode.unwrap_or(0) {
        1 => CpuMode::Kernel,
        2 => CpuMode::User,
        3 => CpuMode::Hypervisor,
        4 => CpuMode::GuestKernel,
        5 => CpuMode::GuestUser,
        _ => CpuMode::Unknown,
    }
}

/// `StackSample.Mode`, numbered differently from `Profiling.CpuMode`.
pub(super) fn stack_sample_cpu_mode(mode: Option<i32>) -> CpuMode {
    match mode.unwrap_or(0) {
        1 => CpuMode::User,
        2 => CpuMode::Kernel,
        3 => CpuMode::Hypervisor,
        4 => CpuMode::GuestUser,
        5 => CpuMode::GuestKernel,
        _ => CpuMode::Unknown,
    }
}

/// `Profiling.StackUnwindError`, spelled as trace_processor does.
pub(super) fn unwind_error(code: i32) -> &'static str {
    const NAMES: [&str; 16] = [
        "unknown",
        "none",
        "memory_invalid",
        "unwind_info",
        "unsupported",
        "invalid_map",
        "max_frames_exceeded",
        "repeated_frame",
        "invalid_elf",
        "system_call",
        "thread_timeout",
        "thread_does_not_exist",
        "bad_arch",
        "maps_parse",
        "invalid_parameter",
        "ptrace_call",
    ];
    usize::try_from(code)
        .ok()
        .and_then(|i| NAMES.get(i))
        .copied()
        .unwrap_or("unknown")
}

/// Stat name for `PerfSample.sample_skipped_reason`, as trace_processor counts them.
pub(super) fn skip_reason_stat(reason: i32) -> &'static str {
    match reason {
        3 => "perf_samples_skipped_dataloss",
        4 => "perf_samples_not_in_scope",
        _ => "perf_samples_skipped",
    }
}

/// `Frame.Kind`.
pub(super) fn frame_kind(kind: i32) -> Option<FrameKind> {
    Some(match kind {
        1 => FrameKind::Native,
        2 => FrameKind::Kernel,
        3 => FrameKind::Interpreted,
        4 => FrameKind::Jit,
        5 => FrameKind::Gc,
        6 => FrameKind::Runtime,
        _ => return None,
    })
}

/// Whether a mapping holds managed ART/JVM code (Relay's rule, the one Sentry's Android
/// pipeline uses).
pub(super) fn is_java_mapping(path: &str) -> bool {
    path.contains("dalvik-jit-code-cache")
        || [".oat", ".odex", ".vdex", ".jar", ".dex"]
            .iter()
            .any(|ext| path.ends_with(ext))
}

/// Whether a mapping is the kernel's.
pub(super) fn is_kernel_mapping(path: &str) -> bool {
    path == "/kernel" || path.starts_with("[kernel")
}

fn counter_name(counter: i32) -> Option<&'static str> {
    Some(match counter {
        1 => "cpu-clock",
        2 => "page-faults",
        3 => "task-clock",
        4 => "context-switches",
        5 => "cpu-migrations",
        6 => "minor-faults",
        7 => "major-faults",
        8 => "alignment-faults",
        9 => "emulation-faults",
        20 => "dummy",
        10 => "cpu-cycles",
        11 => "instructions",
        12 => "cache-references",
        13 => "cache-misses",
        14 => "branch-instructions",
        15 => "branch-misses",
        16 => "bus-cycles",
        17 => "stalled-cycles-frontend",
        18 => "stalled-cycles-backend",
        19 => "ref-cycles",
        _ => return None,
    })
}

/// The name of a perf timebase and whether it samples CPU time. Without defaults
/// (Android R, early S) traced_perf sampled cpu-clock, and trace_processor assumes so too.
pub(super) fn perf_timebase(timebase: Option<&Timebase>) -> (String, SeriesKind) {
    let Some(tb) = timebase else {
        return ("cpu-clock".into(), SeriesKind::CpuTime);
    };
    let counter = tb.counter.filter(|&c| c != 0);
    let kind = match counter {
        Some(1 | 3) => SeriesKind::CpuTime,
        None if tb.tracepoint.is_none() && tb.raw_event.is_none() => SeriesKind::CpuTime,
        _ => SeriesKind::Other,
    };
    let name = if let Some(name) = tb.name.as_deref().filter(|n| !n.is_empty()) {
        name.to_owned()
    } else if let Some(name) = counter.and_then(counter_name) {
        name.to_owned()
    } else if let Some(tp) = &tb.tracepoint {
        tp.name.clone().unwrap_or_else(|| "tracepoint".into())
    } else if let Some(raw) = &tb.raw_event {
        format!(
            "raw.{:#x}.{:#x}",
            raw.r#type.unwrap_or(0),
            raw.config.unwrap_or(0)
        )
    } else {
        "cpu-clock".into()
    };
    (name, kind)
}

/// Unit name and series kind of a StackSample counter descriptor.
pub(super) fn stack_sample_series(
    descriptor: Option<&CounterDescriptor>,
    source: Option<&str>,
) -> (String, String, SeriesKind) {
    use proflake_proto::perfetto::stack_sample::counter_descriptor::UnitField;
    let name = descriptor
        .and_then(|d| d.name.clone())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "samples".into());
    let unit = match descriptor.and_then(|d| d.unit_field.as_ref()) {
        Some(UnitField::UnitStr(s)) => s.clone(),
        Some(UnitField::Unit(u)) => match u {
            1 => "ns",
            2 => "cycles",
            3 => "instructions",
            4 => "bytes",
            5 => "page-faults",
            6 => "cache-misses",
            7 => "cache-references",
            8 => "branch-misses",
            _ => "count",
        }
        .to_owned(),
        None => "count".to_owned(),
    };
    let kind = if unit == "ns" {
        let wall = name.contains("wall") || source.is_some_and(|s| s.contains("wall"));
        if wall {
            SeriesKind::WallTime
        } else {
            SeriesKind::CpuTime
        }
    } else {
        SeriesKind::Other
    };
    (name, unit, kind)
}
