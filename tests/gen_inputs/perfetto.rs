//! A traced_perf-style trace: one `PerfSample` packet per sample on one sequence, with
//! callstacks, frames, functions and mappings interned the first time a sample uses them (as
//! traced_perf's unwinder does), and mixed native, Java (boot image and JIT) and kernel frames.

use proflake_proto::perfetto::{
    clock_snapshot::Clock, perf_events::Timebase, trace_packet::Data,
    trace_packet::OptionalTrustedPacketSequenceId, Callstack, ClockSnapshot, Frame, InternedData,
    InternedString, Mapping, PerfSample, PerfSampleDefaults, Trace, TracePacket,
    TracePacketDefaults,
};
use prost::Message;

use super::Rng;

const SEQ: u32 = 7;
const BOOT0: u64 = 10_000_000_000;
const CALLSTACKS: u64 = 2_500;
const FUNCTIONS: u64 = 6_000;

/// The shape of the trace.
pub struct Shape {
    pub seconds: u64,
    pub hz: u64,
    pub threads: u64,
}

struct Library {
    path: &'static str,
    java: bool,
}

const LIBRARIES: &[Library] = &[
    Library {
        path: "/apex/com.android.runtime/lib64/bionic/libc.so",
        java: false,
    },
    Library {
        path: "/apex/com.android.art/lib64/libart.so",
        java: false,
    },
    Library {
        path: "/system/lib64/libhwui.so",
        java: false,
    },
    Library {
        path: "/system/lib64/libgui.so",
        java: false,
    },
    Library {
        path: "/system/lib64/libbinder.so",
        java: false,
    },
    Library {
        path: "/system/lib64/libandroid_runtime.so",
        java: false,
    },
    Library {
        path: "/system/lib64/libEGL.so",
        java: false,
    },
    Library {
        path: "/system/lib64/libskia.so",
        java: false,
    },
    Library {
        path: "/data/app/com.example.app/lib/arm64/libgame.so",
        java: false,
    },
    Library {
        path: "/data/app/com.example.app/lib/arm64/libcrypto.so",
        java: false,
    },
    Library {
        path: "/system/framework/arm64/boot-framework.oat",
        java: true,
    },
    Library {
        path: "/system/framework/arm64/boot.oat",
        java: true,
    },
    Library {
        path: "/data/app/com.example.app/oat/arm64/base.odex",
        java: true,
    },
    Library {
        path: "[anon:dalvik-jit-code-cache]",
        java: true,
    },
    Library {
        path: "[kernel.kallsyms]",
        java: false,
    },
];

fn interned(iid: u64, text: &str) -> InternedString {
    InternedString {
        iid: Some(iid),
        r#str: Some(text.as_bytes().to_vec()),
    }
}

fn packet(data: Option<Data>) -> TracePacket {
    TracePacket {
        optional_trusted_packet_sequence_id: Some(
            OptionalTrustedPacketSequenceId::TrustedPacketSequenceId(SEQ),
        ),
        data,
        ..Default::default()
    }
}

/// The name of function `f`, in its library's language.
fn function_name(f: u64, library: &Library) -> String {
    if library.path.starts_with("[kernel") {
        return format!("__kernel_fn_{f}");
    }
    if library.java {
        const PACKAGES: &[&str] = &[
            "android.os.Looper",
            "android.view.Choreographer",
            "com.example.app.render.Scene",
            "com.example.app.net.Client",
            "java.util.HashMap",
            "kotlinx.coroutines.DispatchedTask",
        ];
        let class = PACKAGES[(f % PACKAGES.len() as u64) as usize];
        return format!("{class}$Inner{}.method{f}", f % 7);
    }
    let module = format!("module{}", f % 97);
    let function = format!("function{f}");
    format!(
        "_ZN7example{}{module}{}{function}Ev",
        module.len(),
        function.len()
    )
}

/// Writes the trace into `out`.
pub fn trace(shape: &Shape, out: &mut Vec<u8>) {
    let mut rng = Rng(0x005e_ed0f_9e37_79b9);
    let emit = |out: &mut Vec<u8>, p: TracePacket| {
        Trace { packet: vec![p] }.encode(out).expect("vec grows");
    };
    let mut snap = packet(Some(Data::ClockSnapshot(ClockSnapshot {
        clocks: vec![
            Clock {
                clock_id: Some(6),
                timestamp: Some(BOOT0),
                ..Default::default()
            },
            Clock {
                clock_id: Some(1),
                timestamp: Some(1_700_000_000_000_000_000),
                ..Default::default()
            },
        ],
        primary_trace_clock: Some(6),
    })));
    snap.optional_trusted_packet_sequence_id = None;
    emit(out, snap);

    let mut first = packet(None);
    first.sequence_flags = Some(1);
    first.trace_packet_defaults = Some(TracePacketDefaults {
        timestamp_clock_id: Some(6),
        perf_sample_defaults: Some(PerfSampleDefaults {
            timebase: Some(Timebase {
                frequency: Some(shape.hz),
                counter: Some(1),
                ..Default::default()
            }),
        }),
        ..Default::default()
    });
    emit(out, first);

    // Each callstack: kernel frames on top only sometimes, native leaves, Java in the middle,
    // native roots (libc, libart) at the bottom. Frames are drawn from each library's own
    // function range so a function always lives in one mapping.
    let per_library = FUNCTIONS / LIBRARIES.len() as u64;
    let callstacks: Vec<Vec<u64>> = (0..CALLSTACKS)
        .map(|_| {
            let depth = 6 + rng.next() % 55;
            (0..depth)
                .map(|d| {
                    let library = match d {
                        0 => 0,
                        1 => 1,
                        _ if d + 1 == depth && rng.next().is_multiple_of(4) => {
                            LIBRARIES.len() as u64 - 1
                        }
                        _ if d < depth * 2 / 3 => 10 + rng.next() % 4,
                        _ => 2 + rng.next() % 8,
                    };
                    library * per_library + rng.next() % per_library
                })
                .collect()
        })
        .collect();

    let mut seen_callstack = vec![false; CALLSTACKS as usize];
    let mut seen_frame = vec![false; FUNCTIONS as usize];
    let mut seen_mapping = vec![false; LIBRARIES.len()];
    let samples = shape.seconds * shape.hz * shape.threads;
    let period_ns = 1_000_000_000 / shape.hz;
    for i in 0..samples {
        let tick = i / shape.threads;
        let thread = i % shape.threads;
        // A thread keeps to a few hot stacks, as real threads do.
        let c = if rng.next().is_multiple_of(4) {
            rng.next() % CALLSTACKS
        } else {
            (thread * 149 + rng.next() % 24) % CALLSTACKS
        };
        let mut p = packet(Some(Data::PerfSample(PerfSample {
            cpu: Some((thread % 8) as u32),
            pid: Some(4000 + (thread / 8) as u32),
            tid: Some(4000 + (thread / 8) as u32 * 100 + thread as u32),
            cpu_mode: Some(2),
            callstack_iid: Some(c + 1),
            timebase_count: Some(tick * 1_000_000),
            ..Default::default()
        })));
        p.sequence_flags = Some(2);
        p.timestamp = Some(BOOT0 + 1_000_000_000 + tick * period_ns + thread * 1_000);
        if !seen_callstack[c as usize] {
            seen_callstack[c as usize] = true;
            let mut data = InternedData::default();
            for &f in &callstacks[c as usize] {
                if seen_frame[f as usize] {
                    continue;
                }
                seen_frame[f as usize] = true;
                let l = (f / per_library) as usize;
                if !seen_mapping[l] {
                    seen_mapping[l] = true;
                    let l64 = l as u64;
                    data.mapping_paths
                        .push(interned(l64 + 1, LIBRARIES[l].path));
                    data.build_ids.push(InternedString {
                        iid: Some(l64 + 1),
                        r#str: Some((0..20).map(|b| (l64 * 31 + b) as u8).collect()),
                    });
                    data.mappings.push(Mapping {
                        iid: Some(l64 + 1),
                        build_id: Some(l64 + 1),
                        start: Some(0x7000_0000_0000 + l64 * 0x100_0000),
                        end: Some(0x7000_0000_0000 + l64 * 0x100_0000 + 0x80_0000),
                        path_string_ids: vec![l64 + 1],
                        ..Default::default()
                    });
                }
                data.function_names
                    .push(interned(f + 1, &function_name(f, &LIBRARIES[l])));
                data.frames.push(Frame {
                    iid: Some(f + 1),
                    function_name_id: Some(f + 1),
                    mapping_id: Some(l as u64 + 1),
                    rel_pc: Some(0x1000 + (f % per_library) * 0x80),
                    ..Default::default()
                });
            }
            data.callstacks.push(Callstack {
                iid: Some(c + 1),
                frame_ids: callstacks[c as usize].iter().map(|f| f + 1).collect(),
            });
            p.interned_data = Some(data);
        }
        emit(out, p);
    }
}
