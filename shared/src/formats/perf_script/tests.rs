use super::*;
use crate::model::{FrameKind, LabelValue, SeriesKind};

const TWO: &str = "\
# ========
# perf version : 6.8
# cmdline : /usr/bin/perf record -g ./app
# ========
#
app 7/7 [001] 10.000001:    1000 cpu-clock:u: 
\t    4005f6 _Z4workv+0x16 (/opt/app)
\t    400500 main+0x10 (/opt/app)
\t ffffffff8100 [unknown] ([kernel.kallsyms])

app 7/7 [001] 10.000002:    2000 cpu-clock:u: 
\t    4005f6 _Z4workv+0x16 (/opt/app)
\t    400500 main+0x10 (/opt/app)

worker 7/7 [000] 10.000003:    3000 cpu-clock:u: 
\t    400500 main+0x10 (/opt/app)
";

fn decode_text(text: &str, limits: &Limits) -> Result<Profile> {
    decode(text.as_bytes(), "plain", limits)
}

#[test]
fn records_become_timed_samples_with_stacks_root_first() {
    let profile = decode_text(TWO, &Limits::default()).unwrap();
    let samples: Vec<_> = profile.samples().iter().collect();
    assert_eq!(samples.len(), 3);
    assert_eq!(samples[0].time, Some(10_000_001_000));
    assert_eq!(samples.iter().map(|s| s.weight).sum::<i64>(), 6000);
    assert_eq!((samples[0].cpu, samples[2].cpu), (Some(1), Some(0)));
    let series = profile.series(samples[0].series);
    assert_eq!(series.kind, SeriesKind::CpuTime);
    assert_eq!(profile.str(series.name), "cpu-clock:u");
    assert_eq!(profile.str(series.unit), "nanoseconds");
    let frames: Vec<_> = profile.stack_frames(samples[0].stack.unwrap()).collect();
    assert_eq!(frames.len(), 3, "leaf first");
    let leaf = profile.frame(frames[0]);
    assert_eq!(profile.opt_str(leaf.function), Some("work()"));
    assert_eq!(profile.opt_str(leaf.system_name), Some("_Z4workv"));
    let root = profile.frame(frames[2]);
    assert_eq!((root.kind, root.function), (FrameKind::Kernel, None));
    assert_eq!(
        root.address,
        Some(crate::model::FrameAddress::Absolute(0xffffffff8100))
    );
    assert_eq!(
        profile.attributes.get("perf.version").map(String::as_str),
        Some("6.8")
    );
    assert_eq!(
        profile.timestamps,
        crate::model::Timestamps::TraceClock("perf".into())
    );
}

#[test]
fn a_changed_comm_is_a_label_and_the_thread_keeps_its_first_name() {
    let profile = decode_text(TWO, &Limits::default()).unwrap();
    let samples: Vec<_> = profile.samples().iter().collect();
    assert_eq!(profile.threads().len(), 1);
    let thread = profile.thread(samples[2].thread);
    assert_eq!(profile.opt_str(thread.name), Some("app"));
    assert_eq!(samples[0].labels, None);
    let labels = profile.label_set(samples[2].labels.unwrap());
    assert_eq!(profile.str(labels[0].key), "comm");
    assert!(matches!(labels[0].value, LabelValue::Str(s) if profile.str(s) == "worker"));
}

#[test]
fn blocks_that_cut_lines_give_the_same_profile() {
    let whole = decode_text(TWO, &Limits::default()).unwrap();
    for block in [1, 7, 64] {
        let text = TextBlocks::new(TWO.as_bytes(), "plain", "t", 1 << 20).with_block_bytes(block);
        let cut = decode_blocks(text, &Limits::default()).unwrap();
        assert_eq!(cut.samples().len(), whole.samples().len(), "{block}");
        assert_eq!(cut.stacks().len(), whole.stacks().len(), "{block}");
    }
}

#[test]
fn without_callchains_the_frame_is_on_the_header_line() {
    let text = "            perf 12 [000] 5.5:          3 cycles:  ffffffff81 native_write_msr+0x6 ([kernel.kallsyms])\n\
                           a b 13 [001] 5.6:          4 cycles:  4005f6 main+0x16 (/tmp/a.out)\n";
    let profile = decode_text(text, &Limits::default()).unwrap();
    let samples: Vec<_> = profile.samples().iter().collect();
    assert_eq!(samples.len(), 2);
    let leaf = profile.frame(profile.stack(samples[1].stack.unwrap()).frame);
    assert_eq!(profile.opt_str(leaf.function), Some("main"));
    let thread = profile.thread(samples[1].thread);
    assert_eq!(
        (thread.tid, profile.opt_str(thread.name)),
        (Some(13), Some("a b"))
    );
    let series = profile.series(samples[0].series);
    assert_eq!(
        (series.kind, profile.str(series.unit)),
        (SeriesKind::Other, "count")
    );
}

#[test]
fn out_of_order_records_are_sorted_and_tracepoint_text_counted() {
    let text =
        "a 1 2.0: sched:sched_switch: prev_comm=a\n\na 1 1.0: sched:sched_switch: prev_comm=b\n";
    let profile = decode_text(text, &Limits::default()).unwrap();
    let times: Vec<_> = profile.samples().iter().map(|s| s.time.unwrap()).collect();
    assert_eq!(times, [1_000_000_000, 2_000_000_000]);
    assert_eq!(profile.stats.get("perf_tracepoint_details"), Some(&2));
    assert!(profile
        .samples()
        .iter()
        .all(|s| s.weight == 1 && s.stack.is_none()));
}

#[test]
fn limits_and_malformed_lines() {
    let limits = Limits {
        max_stack_depth: 2,
        ..Limits::default()
    };
    let profile = decode_text(TWO, &limits).unwrap();
    assert_eq!(profile.stats.get("perf_stack_too_deep"), Some(&1));
    assert_eq!(profile.samples().len(), 3);

    let limits = Limits {
        max_samples: 2,
        ..Limits::default()
    };
    let err = decode_text(TWO, &limits).unwrap_err();
    assert!(err.to_string().contains("max_samples"), "{err}");

    let err = decode_text("a 1 1.0: 5 cycles:\n\nnot a header\n", &Limits::default()).unwrap_err();
    match err.kind() {
        ErrorKind::Malformed {
            format,
            offset,
            what,
        } => {
            assert_eq!((*format, *offset), ("perf-script", 20));
            assert!(what.starts_with("line 3:"), "{what}");
        }
        other => panic!("{other:?}"),
    }
    let err =
        decode_text("a 1 1.0: 5 cycles:\na 1 1.1: cycles:\n", &Limits::default()).unwrap_err();
    assert!(err.to_string().contains("period"), "{err}");
}

#[test]
fn sniffs_perf_text_and_nothing_else() {
    assert!(test(TWO.as_bytes()));
    assert!(test(b"# ========\n# perf version : 4.15.18\n"));
    assert!(test(b"\xEF\xBB\xBFa 1 1.0: 5 cycles:\n"));
    assert!(!test(b"# only a comment\n"));
    assert!(!test(b"a;b 1\n"));
    assert!(!test(b"{\"a 1 1.0: x:\": 1}\n"));
    assert!(!test(b"\t 643 _Z4betav (/workdir/x)\n"));
    assert!(!test(b"a 1 1.0: 5 cyc\xffles:\n"));
}
