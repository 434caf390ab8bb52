use proptest::prelude::*;

use super::{stat, SpanTrack, Target};
use crate::model::{Frame, FrameHandle, FrameKind, Profile, Series, SeriesKind};

struct Fixture {
    profile: Profile,
    target: Target,
    frames: Vec<FrameHandle>,
}

fn fixture(names: usize) -> Fixture {
    let mut profile = Profile::new("test");
    let process = profile.add_process(Some(1));
    let thread = profile.add_thread(process, Some(1));
    let series = Series {
        kind: SeriesKind::WallTime,
        name: profile.intern("spans"),
        unit: profile.intern("nanoseconds"),
        source: None,
        frequency_hz: None,
        period: None,
        spans: true,
    };
    let series = profile.add_series(series);
    let frames = (0..names)
        .map(|i| {
            let mut frame = Frame::new(FrameKind::Unknown);
            frame.function = Some(profile.intern(&format!("s{i}")));
            profile.add_frame(frame)
        })
        .collect();
    Fixture {
        profile,
        target: Target {
            thread,
            series,
            timed: true,
        },
        frames,
    }
}

impl Fixture {
    fn sweep(&mut self, track: SpanTrack, end: i64) {
        track.sweep(self.target, end, &mut self.profile, 64);
    }

    /// Each sample as (time, weight, its stack's names from the root).
    fn samples(&self) -> Vec<(i64, i64, String)> {
        let p = &self.profile;
        p.samples()
            .iter()
            .map(|s| {
                let mut names: Vec<&str> = s
                    .stack
                    .map(|leaf| {
                        p.stack_frames(leaf)
                            .map(|f| p.opt_str(p.frame(f).function).unwrap())
                            .collect()
                    })
                    .unwrap_or_default();
                names.reverse();
                (s.time.unwrap(), s.weight, names.join(";"))
            })
            .collect()
    }

    fn stat(&self, name: &str) -> u64 {
        self.profile.stats.get(name).copied().unwrap_or(0)
    }
}

fn rows(rows: &[(i64, i64, &str)]) -> Vec<(i64, i64, String)> {
    rows.iter().map(|&(t, w, s)| (t, w, s.to_owned())).collect()
}

#[test]
fn nested_begins_and_ends() {
    let mut f = fixture(2);
    let mut track = SpanTrack::default();
    track.begin(0, 0, f.frames[0], None);
    track.begin(2, 1, f.frames[1], None);
    track.end(5, Some(1), None);
    track.end(10, Some(0), None);
    f.sweep(track, 10);
    assert_eq!(
        f.samples(),
        rows(&[(0, 2, "s0"), (2, 3, "s0;s1"), (5, 5, "s0")])
    );
    assert_eq!(f.stat(stat::SPANS), 2);
    assert_eq!(f.stat(stat::NOT_NESTED), 0);
}

#[test]
fn overlapping_spans_are_attributed_once_to_the_earliest_begun_first() {
    let mut f = fixture(2);
    let mut track = SpanTrack::default();
    track.begin(0, 0, f.frames[0], None);
    track.begin(5, 1, f.frames[1], None);
    track.end(10, Some(0), None);
    track.end(15, Some(1), None);
    f.sweep(track, 15);
    assert_eq!(
        f.samples(),
        rows(&[(0, 5, "s0"), (5, 5, "s0;s1"), (10, 5, "s1")])
    );
    assert_eq!(f.stat(stat::NOT_NESTED), 1);
}

#[test]
fn an_end_of_no_open_name_closes_the_innermost_and_is_counted() {
    let mut f = fixture(3);
    let mut track = SpanTrack::default();
    track.begin(0, 0, f.frames[0], None);
    track.begin(1, 1, f.frames[1], None);
    track.end(4, Some(2), None);
    track.end(6, None, None);
    track.end(7, None, None);
    f.sweep(track, 7);
    assert_eq!(
        f.samples(),
        rows(&[(0, 1, "s0"), (1, 3, "s0;s1"), (4, 2, "s0")])
    );
    assert_eq!(f.stat(stat::UNMATCHED_END), 3);
}

#[test]
fn a_complete_child_written_before_its_parent_nests_in_it() {
    let mut f = fixture(2);
    let mut track = SpanTrack::default();
    track.complete(0, 4, 1, f.frames[1], None);
    track.complete(0, 10, 0, f.frames[0], None);
    // A sibling beginning where the child ends.
    track.complete(4, 2, 1, f.frames[1], None);
    f.sweep(track, 10);
    assert_eq!(
        f.samples(),
        rows(&[(0, 4, "s0;s1"), (4, 2, "s0;s1"), (6, 4, "s0")])
    );
    assert_eq!(f.stat(stat::NOT_NESTED), 0);
}

#[test]
fn a_begin_and_an_end_at_one_instant_keep_the_written_order() {
    let mut f = fixture(3);
    let mut track = SpanTrack::default();
    track.begin(0, 0, f.frames[0], None);
    track.begin(0, 1, f.frames[1], None);
    track.end(3, Some(1), None);
    track.begin(3, 2, f.frames[2], None);
    track.end(5, Some(2), None);
    track.end(5, Some(0), None);
    f.sweep(track, 5);
    assert_eq!(f.samples(), rows(&[(0, 3, "s0;s1"), (3, 2, "s0;s2")]));
    assert_eq!(f.stat(stat::NOT_NESTED), 0);
}

#[test]
fn a_span_never_ended_lasts_to_the_end_of_the_document() {
    let mut f = fixture(1);
    let mut track = SpanTrack::default();
    track.begin(3, 0, f.frames[0], None);
    f.sweep(track, 10);
    assert_eq!(f.samples(), rows(&[(3, 7, "s0")]));
    assert_eq!(f.stat(stat::UNTERMINATED), 1);
}

#[test]
fn stacks_deeper_than_the_limit_are_kept_without_frames() {
    let mut f = fixture(3);
    let mut track = SpanTrack::default();
    for (i, &frame) in f.frames.clone().iter().enumerate() {
        track.begin(i as i64, i as u32, frame, None);
    }
    track.sweep(f.target, 5, &mut f.profile, 2);
    let weights: Vec<(i64, bool)> = f
        .profile
        .samples()
        .iter()
        .map(|s| (s.weight, s.stack.is_some()))
        .collect();
    assert_eq!(weights, [(1, true), (1, true), (3, false)]);
    assert_eq!(f.stat(stat::TOO_DEEP), 1);
}

/// The measure of the union of half-open intervals.
fn union_measure(mut intervals: Vec<(i64, i64)>) -> i64 {
    intervals.sort_unstable();
    let (mut total, mut reach) = (0, i64::MIN);
    for (a, b) in intervals {
        let a = a.max(reach);
        if b > a {
            total += b - a;
            reach = b;
        }
    }
    total
}

proptest! {
    /// Whatever the overlap, every instant inside some span is attributed exactly once.
    #[test]
    fn weights_add_up_to_the_union_of_the_spans(
        spans in prop::collection::vec((0i64..1000, 0i64..200, any::<bool>()), 0..40),
        end in 0i64..1300,
    ) {
        let mut f = fixture(spans.len());
        let mut track = SpanTrack::default();
        let mut intervals = Vec::new();
        let mut unterminated = 0;
        for (i, &(start, len, complete)) in spans.iter().enumerate() {
            let name = i as u32;
            if complete && len > 0 {
                track.complete(start, len, name, f.frames[i], None);
                intervals.push((start, start + len));
            } else if !complete {
                track.begin(start, name, f.frames[i], None);
                // Every third is left open.
                if i % 3 == 0 {
                    unterminated += 1;
                } else {
                    track.end(start + len, Some(name), None);
                    intervals.push((start, start + len));
                }
            }
        }
        let last = track.last_time().unwrap_or(0).max(end);
        for (i, &(start, _, complete)) in spans.iter().enumerate() {
            if !complete && i % 3 == 0 {
                intervals.push((start, last));
            }
        }
        f.sweep(track, last);
        let total: i64 = f.profile.samples().iter().map(|s| s.weight).sum();
        prop_assert_eq!(total, union_measure(intervals));
        prop_assert_eq!(f.stat(stat::UNTERMINATED), unterminated);
        prop_assert_eq!(f.stat(stat::UNMATCHED_END), 0);
    }
}
