//! Clock conversion through ClockSnapshots, as trace_processor's clock tracker does it.
//!
//! Every snapshot says "at this instant, clock A read a, clock B read b, ...". Clocks that
//! appear together in a snapshot are linked; converting a timestamp walks the shortest chain of
//! links (breadth-first), and each hop uses the latest snapshot holding both clocks whose
//! source reading is not after the timestamp (the first one if all are).

use std::collections::VecDeque;

use proflake_proto::perfetto::ClockSnapshot;
use rustc_hash::FxHashMap;

/// Builtin clock ids (`perfetto.protos.BuiltinClock`).
pub(super) const REALTIME: u32 = 1;
pub(super) const REALTIME_COARSE: u32 = 2;
pub(super) const MONOTONIC: u32 = 3;
pub(super) const BOOTTIME: u32 = 6;
const TRACE_FILE: u32 = 11;

/// A clock: builtin and global ids are trace-wide, ids 64..=127 belong to one sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct ClockKey {
    id: u32,
    sequence: u32,
}

impl ClockKey {
    pub(super) fn new(id: u32, sequence: u32) -> Self {
        let sequence = if (64..128).contains(&id) { sequence } else { 0 };
        ClockKey { id, sequence }
    }
}

/// The name trace_processor and the Perfetto docs use for a builtin clock.
pub(super) fn clock_name(id: u32) -> String {
    match id {
        1 => "REALTIME".into(),
        2 => "REALTIME_COARSE".into(),
        3 => "MONOTONIC".into(),
        4 => "MONOTONIC_COARSE".into(),
        5 => "MONOTONIC_RAW".into(),
        6 => "BOOTTIME".into(),
        9 => "TSC".into(),
        10 => "PERF".into(),
        11 => "TRACE_FILE".into(),
        other => format!("clock {other}"),
    }
}

#[derive(Default)]
pub(super) struct ClockTracker {
    /// Per snapshot: clock -> reading in ns.
    snapshots: Vec<FxHashMap<ClockKey, i64>>,
    primary: Option<u32>,
    /// Units per clock, in ns (1 unless the snapshot said otherwise).
    multipliers: FxHashMap<ClockKey, i64>,
}

/// Converts times from one clock to another. Every sample of a trace converts between the
/// same few clocks, so the path search and each hop's snapshot list are worked out once, and
/// since times mostly come in order, each hop first tries the snapshot the last time used.
pub(super) struct Conversion {
    /// Units of the source clock, in ns.
    multiplier: i64,
    /// Each hop with the position its last time found; `None` when no path links the
    /// clocks, none when they are one clock.
    hops: Option<Vec<(Hop, usize)>>,
}

impl Conversion {
    /// Converts `ts` (in the units of the source clock) to ns on the target clock.
    pub(super) fn convert(&mut self, ts: i64) -> Option<i64> {
        let ts = ts.checked_mul(self.multiplier)?;
        let hops = self.hops.as_mut()?;
        hops.iter_mut()
            .try_fold(ts, |value, (hop, hint)| hop.apply(value, hint))
    }

    /// Whether any path links the clocks: without one, no time converts.
    pub(super) fn links(&self) -> bool {
        self.hops.is_some()
    }

    /// Whether a later time never converts to an earlier one, so that the least of some
    /// times converts to the least of their conversions.
    #[cfg(test)]
    pub(super) fn is_monotone(&self) -> bool {
        self.multiplier > 0 && self.hops.iter().flatten().all(|(hop, _)| hop.monotone)
    }

    /// Bounds on what the times `least..=greatest` convert to: none converts to less than the
    /// first or more than the second. They are the conversions of `least` and `greatest` when
    /// the conversion is monotone. `None` when no path links the clocks, or when a bound
    /// overflows (as converting the time there would).
    pub(super) fn bounds(&self, least: i64, greatest: i64) -> Option<(i64, i64)> {
        debug_assert!(least <= greatest);
        let (a, b) = (
            least.checked_mul(self.multiplier)?,
            greatest.checked_mul(self.multiplier)?,
        );
        // A hop's bounds hold for every time between the previous hop's, so for whichever
        // of those times the previous hop actually gives.
        self.hops
            .as_ref()?
            .iter()
            .try_fold((a.min(b), a.max(b)), |(low, high), (hop, _)| {
                hop.bounds(low, high)
            })
    }
}

/// Readings [`Hop::bounds`] visits one by one at most. A block's raw times mostly lie
/// between a few snapshots; one whose times cross more (a producer's buffer written long
/// after its samples) gets looser bounds rather than costing every snapshot of the trace.
const MAX_VISITED: usize = 512;

/// One link of a conversion path: the readings (from, to) of every snapshot holding both
/// clocks, sorted by the source reading (snapshot order among equal readings).
struct Hop {
    readings: Vec<(i64, i64)>,
    /// The first snapshot's pair, used for times before every snapshot.
    first: (i64, i64),
    /// Whether the offset the hop adds never decreases as the source time grows: bounds then
    /// need only the ends of a range, whatever lies inside it.
    monotone: bool,
    /// The least and greatest offset of any reading (in i128: readings are anywhere in i64,
    /// and so their differences are not), for bounds over too many readings to visit.
    offsets: (i128, i128),
}

impl Hop {
    /// `readings` sorted by source reading, snapshot order among equals.
    fn new(readings: Vec<(i64, i64)>, first: (i64, i64)) -> Self {
        let offset = |(a, b): (i64, i64)| i128::from(b) - i128::from(a);
        // Each reading applies from its source reading on, the last of equal ones winning,
        // and `first` before them all.
        let applied = readings
            .iter()
            .enumerate()
            .filter(|&(i, r)| readings.get(i + 1).is_none_or(|next| next.0 != r.0))
            .map(|(_, &r)| r);
        let monotone = std::iter::once(first)
            .chain(applied)
            .map(offset)
            .is_sorted();
        let offsets = readings
            .iter()
            .map(|&r| offset(r))
            .fold((offset(first), offset(first)), |(low, high), o| {
                (low.min(o), high.max(o))
            });
        Hop {
            readings,
            first,
            monotone,
            offsets,
        }
    }

    /// The latest snapshot whose source reading is not after `ts` (the later one of equals).
    /// `hint` is where the last time found it, and becomes where this one does.
    #[inline]
    fn apply(&self, ts: i64, hint: &mut usize) -> Option<i64> {
        let readings = &self.readings;
        let h = *hint;
        let still = (h == 0 || readings[h - 1].0 <= ts) && readings.get(h).is_none_or(|r| r.0 > ts);
        let after = if still {
            h
        } else {
            readings.partition_point(|&(a, _)| a <= ts)
        };
        *hint = after;
        self.through(after, ts)
    }

    /// [`Hop::apply`] without a hint.
    fn at(&self, ts: i64) -> Option<i64> {
        self.through(self.readings.partition_point(|&(a, _)| a <= ts), ts)
    }

    /// `ts` through the last of the first `after` readings, or `first` when `after` is 0.
    #[inline]
    fn through(&self, after: usize, ts: i64) -> Option<i64> {
        let (a, b) = after
            .checked_sub(1)
            .map_or(self.first, |i| self.readings[i]);
        ts.checked_sub(a)?.checked_add(b)
    }

    /// Bounds on what the times `least..=greatest` (in ns) go to: the least and greatest
    /// results, or looser ones when more than [`MAX_VISITED`] readings lie inside the range.
    /// Between readings a result goes up one for one with the time, so each piece is least
    /// at its first time and greatest at its last: the least result is at `least` or at a
    /// reading inside the range, the greatest at `greatest` or just before one.
    fn bounds(&self, least: i64, greatest: i64) -> Option<(i64, i64)> {
        let (low, high) = (self.at(least)?, self.at(greatest)?);
        if self.monotone {
            return Some((low, high));
        }
        let inside = &self.readings[self.readings.partition_point(|&(a, _)| a <= least)
            ..self.readings.partition_point(|&(a, _)| a <= greatest)];
        if inside.len() > MAX_VISITED {
            // Every piece adds one of the offsets.
            let low = i128::from(least) + self.offsets.0;
            let high = i128::from(greatest) + self.offsets.1;
            return Some((i64::try_from(low).ok()?, i64::try_from(high).ok()?));
        }
        // Each reading inside is after `least`, so `a - 1` is still in the range.
        inside.iter().try_fold((low, high), |(low, high), &(a, _)| {
            Some((low.min(self.at(a)?), high.max(self.at(a - 1)?)))
        })
    }
}

/// Where the samples of one clock get their times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Place {
    /// Converted by this conversion of the [`Placer`].
    Convert(usize),
    /// Kept as read.
    Raw,
    /// None: the sample cannot be placed.
    Drop,
}

/// Puts sample times on the clock a trace's times are given on, with the snapshots of the
/// whole trace: the wall clock if any snapshot has one, else the default clock. Every place
/// that converts samples goes through one, so that each gives a sample the same time.
pub(super) struct Placer<'c> {
    clocks: &'c ClockTracker,
    default_clock: Option<u32>,
    target: Option<u32>,
    /// One conversion per source clock: a trace whose samples alternate clocks must not
    /// search paths once per sample.
    conversions: Vec<Conversion>,
    by_clock: FxHashMap<ClockKey, usize>,
}

impl<'c> Placer<'c> {
    pub(super) fn new(clocks: &'c ClockTracker) -> Self {
        let default_clock = clocks.default_clock();
        Placer {
            clocks,
            default_clock,
            target: clocks.wall_clock().or(default_clock),
            conversions: Vec::new(),
            by_clock: FxHashMap::default(),
        }
    }

    /// Where the times of samples on `clock` (`None`: the trace's default clock) go.
    pub(super) fn place(&mut self, clock: Option<ClockKey>) -> Place {
        let from = clock.or(self.default_clock.map(|c| ClockKey::new(c, 0)));
        match (from, self.target) {
            (Some(from), Some(to)) => {
                let (conversions, clocks) = (&mut self.conversions, self.clocks);
                let at = *self.by_clock.entry(from).or_insert_with(|| {
                    conversions.push(clocks.conversion(from, ClockKey::new(to, 0)));
                    conversions.len() - 1
                });
                Place::Convert(at)
            }
            (None, None) => Place::Raw,
            // A clock id with nothing to convert to: trace_processor keeps such values as
            // trace time.
            (Some(_), None) => Place::Raw,
            (None, Some(_)) => Place::Drop,
        }
    }

    /// The time a sample placed at `place` with the raw time `ts` gets; `None` when it
    /// cannot be placed.
    pub(super) fn time(&mut self, place: Place, ts: i64) -> Option<i64> {
        match place {
            Place::Convert(at) => self.conversions[at].convert(ts),
            Place::Raw => Some(ts),
            Place::Drop => None,
        }
    }

    /// The conversion of a [`Place::Convert`].
    pub(super) fn conversion(&self, at: usize) -> &Conversion {
        &self.conversions[at]
    }
}

impl ClockTracker {
    pub(super) fn snapshot_count(&self) -> usize {
        self.snapshots.len()
    }

    pub(super) fn add_snapshot(&mut self, snapshot: &ClockSnapshot, sequence: u32) {
        let mut readings = FxHashMap::default();
        for clock in &snapshot.clocks {
            let (Some(id), Some(ts)) = (clock.clock_id, clock.timestamp) else {
                continue;
            };
            let key = ClockKey::new(id, sequence);
            let multiplier = clock
                .unit_multiplier_ns
                .filter(|&m| m > 0)
                .and_then(|m| i64::try_from(m).ok())
                .unwrap_or(1);
            self.multipliers.insert(key, multiplier);
            let ns = i64::try_from(ts)
                .unwrap_or(i64::MAX)
                .saturating_mul(multiplier);
            readings.insert(key, ns);
        }
        if let Some(primary) = snapshot.primary_trace_clock.filter(|&c| c != 0) {
            self.primary = Some(primary);
        }
        if !readings.is_empty() {
            self.snapshots.push(readings);
        }
    }

    fn has_clock(&self, id: u32) -> bool {
        let key = ClockKey::new(id, 0);
        self.snapshots.iter().any(|s| s.contains_key(&key))
    }

    /// The clock packets without a clock id are on: the primary trace clock if a snapshot set
    /// it, else BOOTTIME if snapshots have it and no TRACE_FILE clock (the legacy rule).
    pub(super) fn default_clock(&self) -> Option<u32> {
        self.primary.or_else(|| {
            (self.has_clock(BOOTTIME) && !self.has_clock(TRACE_FILE)).then_some(BOOTTIME)
        })
    }

    /// The wall clock to convert to, if any snapshot has one.
    pub(super) fn wall_clock(&self) -> Option<u32> {
        [REALTIME, REALTIME_COARSE]
            .into_iter()
            .find(|&c| self.has_clock(c))
    }

    /// How to convert times from `from` to `to`, with the snapshots seen so far.
    pub(super) fn conversion(&self, from: ClockKey, to: ClockKey) -> Conversion {
        let multiplier = *self.multipliers.get(&from).unwrap_or(&1);
        let hops = if from == to {
            Some(Vec::new())
        } else {
            self.route(from, to)
        };
        Conversion {
            multiplier,
            hops: hops.map(|hops| hops.into_iter().map(|hop| (hop, 0)).collect()),
        }
    }

    /// Converts one time: [`ClockTracker::conversion`] for many.
    #[cfg(test)]
    fn convert(&self, from: ClockKey, ts: i64, to: ClockKey) -> Option<i64> {
        self.conversion(from, to).convert(ts)
    }

    fn route(&self, from: ClockKey, to: ClockKey) -> Option<Vec<Hop>> {
        let path = self.path(from, to)?;
        path.windows(2)
            .map(|pair| {
                let (from, to) = (pair[0], pair[1]);
                let readings: Vec<(i64, i64)> = self
                    .snapshots
                    .iter()
                    .filter_map(|s| Some((*s.get(&from)?, *s.get(&to)?)))
                    .collect();
                let first = *readings.first()?;
                let mut readings = readings;
                readings.sort_by_key(|&(a, _)| a);
                Some(Hop::new(readings, first))
            })
            .collect()
    }

    fn path(&self, from: ClockKey, to: ClockKey) -> Option<Vec<ClockKey>> {
        let mut previous: FxHashMap<ClockKey, ClockKey> = FxHashMap::default();
        let mut queue = VecDeque::from([from]);
        previous.insert(from, from);
        while let Some(clock) = queue.pop_front() {
            if clock == to {
                let mut path = vec![to];
                let mut at = to;
                while at != from {
                    at = previous[&at];
                    path.push(at);
                }
                path.reverse();
                return Some(path);
            }
            for s in self.snapshots.iter().filter(|s| s.contains_key(&clock)) {
                for &next in s.keys() {
                    if let std::collections::hash_map::Entry::Vacant(e) = previous.entry(next) {
                        e.insert(clock);
                        queue.push_back(next);
                    }
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proflake_proto::perfetto::clock_snapshot::Clock;
    use proptest::prelude::*;

    fn snapshot(clocks: &[(u32, u64)]) -> ClockSnapshot {
        ClockSnapshot {
            clocks: clocks
                .iter()
                .map(|&(id, ts)| Clock {
                    clock_id: Some(id),
                    timestamp: Some(ts),
                    ..Default::default()
                })
                .collect(),
            primary_trace_clock: None,
        }
    }

    #[test]
    fn one_conversion_gives_each_time_what_a_fresh_one_gives() {
        let mut t = ClockTracker::default();
        for i in 0..50u64 {
            t.add_snapshot(
                &snapshot(&[(BOOTTIME, i * 1_000 + 7), (MONOTONIC, i * 990)]),
                1,
            );
        }
        t.add_snapshot(&snapshot(&[(BOOTTIME, 40), (REALTIME, 1_000_000)]), 1);
        let k = |id| ClockKey::new(id, 1);
        let mut conversion = t.conversion(k(MONOTONIC), k(REALTIME));
        // In order, with repeats, jumps back, and times before and past every snapshot.
        let times = (0..60_000)
            .step_by(333)
            .chain([5, 5, 48_000, 0, -10, 100_000, 989, 990]);
        for ts in times {
            let fresh = t.convert(k(MONOTONIC), ts, k(REALTIME));
            assert!(fresh.is_some());
            assert_eq!(conversion.convert(ts), fresh, "at {ts}");
        }
    }

    #[test]
    fn monotone_conversions_are_those_whose_offset_never_shrinks() {
        let k = |id| ClockKey::new(id, 1);
        let conversion = |snapshots: &[(u64, u64)]| {
            let mut t = ClockTracker::default();
            for &(mono, wall) in snapshots {
                t.add_snapshot(&snapshot(&[(MONOTONIC, mono), (REALTIME, wall)]), 1);
            }
            t.conversion(k(MONOTONIC), k(REALTIME))
        };
        let cases: [(&[(u64, u64)], bool); 6] = [
            (&[(100, 1_100), (200, 1_300)], true),
            (&[(100, 1_100), (200, 1_150)], false),
            // Before every reading the first snapshot applies, not the earliest reading.
            (&[(200, 1_300), (100, 1_050)], false),
            (&[(200, 1_300), (100, 1_200)], true),
            // Of equal readings the later snapshot applies.
            (&[(100, 1_100), (200, 1_050), (200, 1_300)], true),
            (&[(100, 1_100), (200, 1_300), (200, 1_050)], false),
        ];
        for (snapshots, monotone) in cases {
            let mut c = conversion(snapshots);
            assert!(c.links());
            assert_eq!(c.is_monotone(), monotone, "{snapshots:?}");
            let times: Vec<i64> = (0..400).map(|ts| c.convert(ts).unwrap()).collect();
            assert_eq!(times.is_sorted(), monotone, "{snapshots:?}");
        }
        let mut t = ClockTracker::default();
        t.add_snapshot(&snapshot(&[(MONOTONIC, 1), (REALTIME, 2)]), 1);
        let unlinked = t.conversion(k(BOOTTIME), k(REALTIME));
        assert!(!unlinked.links() && unlinked.is_monotone());
    }

    #[test]
    fn converts_through_latest_snapshot_and_multiple_hops() {
        let mut t = ClockTracker::default();
        t.add_snapshot(&snapshot(&[(BOOTTIME, 1_000), (MONOTONIC, 500)]), 1);
        t.add_snapshot(&snapshot(&[(BOOTTIME, 2_000), (MONOTONIC, 1_400)]), 1);
        t.add_snapshot(&snapshot(&[(BOOTTIME, 1_000), (REALTIME, 1_000_000)]), 1);
        let k = |id| ClockKey::new(id, 1);
        assert_eq!(t.convert(k(MONOTONIC), 600, k(BOOTTIME)), Some(1_100));
        assert_eq!(t.convert(k(MONOTONIC), 1_500, k(BOOTTIME)), Some(2_100));
        // Before every snapshot: the first one applies.
        assert_eq!(t.convert(k(MONOTONIC), 100, k(BOOTTIME)), Some(600));
        // MONOTONIC -> BOOTTIME -> REALTIME.
        assert_eq!(t.convert(k(MONOTONIC), 600, k(REALTIME)), Some(1_000_100));
        assert_eq!(t.convert(k(5), 600, k(REALTIME)), None);
        assert_eq!(t.default_clock(), Some(BOOTTIME));
        assert_eq!(t.wall_clock(), Some(REALTIME));
    }

    fn in_units(clocks: &[(u32, u64, u64)]) -> ClockSnapshot {
        ClockSnapshot {
            clocks: clocks
                .iter()
                .map(|&(id, ts, unit)| Clock {
                    clock_id: Some(id),
                    timestamp: Some(ts),
                    unit_multiplier_ns: (unit != 1).then_some(unit),
                    ..Default::default()
                })
                .collect(),
            primary_trace_clock: None,
        }
    }

    /// The least and greatest conversion of `points`, one by one; every point must convert.
    fn extremes(c: &mut Conversion, points: impl IntoIterator<Item = i64>) -> (i64, i64) {
        points
            .into_iter()
            .map(|ts| c.convert(ts).unwrap_or_else(|| panic!("{ts} converts")))
            .fold((i64::MAX, i64::MIN), |(low, high), t| {
                (low.min(t), high.max(t))
            })
    }

    /// Source readings (small, scaled up below) and offsets of one hop's snapshots.
    fn hop_readings() -> impl Strategy<Value = Vec<(u64, i64)>> {
        proptest::collection::vec((0u64..2_000, -300i64..300), 1..12)
    }

    /// Keeps the readings but makes the offset grow with the source reading, and with the
    /// snapshot among equal ones.
    fn made_monotone(readings: &mut [(u64, i64)]) {
        readings.sort_by_key(|&(a, _)| a);
        let mut offsets: Vec<i64> = readings.iter().map(|&(_, o)| o).collect();
        offsets.sort();
        for (r, o) in readings.iter_mut().zip(offsets) {
            r.1 = o;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1_000))]

        /// MONOTONIC (in `unit` ns) to REALTIME directly or through BOOTTIME, readings `scale`
        /// apart from `base` on: the bounds of a range hold for every time in it (all of
        /// them when the range is short; else its ends, every piece's ends and some between),
        /// and are its least and greatest conversion for a monotone conversion, and for one
        /// hop in ns (the points tried hold the ends of all its pieces).
        #[test]
        fn bounds_hold_for_every_time_in_the_range(
            mut hops in proptest::collection::vec(hop_readings(), 1..=2),
            monotone: bool,
            unit in prop_oneof![Just(1u64), Just(3)],
            scale in prop_oneof![Just(1u64), Just(1_000_003)],
            base in prop_oneof![Just(0u64), Just(1_700_000_000_000_000_000 / 3)],
            ends in (-200i64..2_200, -200i64..2_200),
        ) {
            if monotone {
                hops.iter_mut().for_each(|h| made_monotone(h));
            }
            // Target readings stay positive whatever the offset.
            const AHEAD: u64 = 1_000_000_000;
            let shift = |o: i64| (AHEAD as i64 + o * scale as i64) as u64;
            let mut t = ClockTracker::default();
            for &(a, o) in &hops[0] {
                let a = base + a * scale;
                let to = if hops.len() == 1 { REALTIME } else { BOOTTIME };
                let readings = [(MONOTONIC, a, unit), (to, a * unit + shift(o), 1)];
                t.add_snapshot(&in_units(&readings), 1);
            }
            // The second hop's readings lie among the first hop's results.
            for &(c, o) in hops.get(1).into_iter().flatten() {
                let c = (base + c * scale) * unit + AHEAD;
                let readings = [(BOOTTIME, c, 1), (REALTIME, c + shift(o), 1)];
                t.add_snapshot(&in_units(&readings), 1);
            }
            let k = |id| ClockKey::new(id, 1);
            let mut c = t.conversion(k(MONOTONIC), k(REALTIME));
            prop_assert_eq!(c.hops.as_ref().map(Vec::len), Some(hops.len()));
            if monotone {
                prop_assert!(c.is_monotone());
            }

            let at = |x: i64| base as i64 + x * scale as i64;
            let (lo, hi) = (at(ends.0.min(ends.1)), at(ends.0.max(ends.1)));
            let mut points: Vec<i64> = vec![lo, hi];
            if hi - lo <= 5_000 {
                points.extend(lo..=hi);
            } else {
                points.extend((1..64).map(|i| lo + (hi - lo) / 64 * i));
            }
            let first_hop = &c.hops.as_ref().unwrap()[0].0;
            let unit = unit as i64;
            for &(a, b) in &first_hop.readings {
                // Where a reading starts to apply, and the last time before.
                points.extend([a / unit, a / unit - 1]);
                // Where the first hop's result, through this reading's offset, reaches
                // one of the second hop's readings, and the times either side.
                for (hop, _) in c.hops.as_ref().unwrap().iter().skip(1) {
                    for &(r, _) in &hop.readings {
                        let ts = (r - (b - a)).div_euclid(unit);
                        points.extend([ts - 1, ts, ts + 1]);
                    }
                }
            }
            points.retain(|p| (lo..=hi).contains(p));

            let bounds = c.bounds(lo, hi).expect("nothing overflows");
            let (least, greatest) = extremes(&mut c, points);
            prop_assert!(
                bounds.0 <= least && greatest <= bounds.1,
                "{:?} vs {:?}", bounds, (least, greatest)
            );
            // One hop's pieces start and end at reading times in ns, which a unit of several
            // ns may step over: then the bounds are off by less than the unit.
            if hops.len() == 1 {
                prop_assert!(least - bounds.0 < unit && bounds.1 - greatest < unit);
            }
            if (hops.len() == 1 && unit == 1) || c.is_monotone() {
                prop_assert_eq!(bounds, (least, greatest));
            }
            if c.is_monotone() {
                prop_assert_eq!(bounds, (c.convert(lo).unwrap(), c.convert(hi).unwrap()));
            }
        }
    }

    #[test]
    fn bounds_over_more_readings_than_are_visited() {
        // Readings 10 apart from 1000 on. Monotone, the offset grows by one at each; else it
        // is 100, then 105 at every other reading.
        let readings = 3 * MAX_VISITED as u64;
        let hop = |monotone: bool| {
            let mut t = ClockTracker::default();
            for i in 0..readings {
                let offset = if monotone { 100 + i } else { 100 + 5 * (i % 2) };
                t.add_snapshot(
                    &snapshot(&[
                        (MONOTONIC, 1_000 + 10 * i),
                        (REALTIME, 1_000 + 10 * i + offset),
                    ]),
                    1,
                );
            }
            t.conversion(ClockKey::new(MONOTONIC, 1), ClockKey::new(REALTIME, 1))
        };
        let reading = |i: usize| 1_000 + 10 * i as i64;
        // Ranges and whether more than MAX_VISITED readings lie after their start.
        let ranges = [
            ((990, reading(MAX_VISITED - 1)), false),
            ((990, reading(MAX_VISITED)), true),
            ((0, reading(readings as usize) + 50), true),
            // Ends on an offset of 100 just after one of 105: the exact greatest is 1 less
            // than the end plus 105.
            ((500, reading(2 * MAX_VISITED)), true),
        ];
        for monotone in [false, true] {
            let mut c = hop(monotone);
            assert_eq!(c.is_monotone(), monotone);
            for ((lo, hi), many) in ranges {
                let bounds = c.bounds(lo, hi).unwrap();
                let exact = extremes(&mut c, lo..=hi);
                if monotone || !many {
                    assert_eq!(bounds, exact, "{lo}..={hi}");
                } else {
                    // The least and greatest offset, whatever the range holds.
                    assert_eq!(bounds, (lo + 100, hi + 105), "{lo}..={hi}");
                    assert!(bounds.0 <= exact.0 && exact.1 <= bounds.1, "{lo}..={hi}");
                }
            }
        }
        let mut c = hop(false);
        let (lo, hi) = (500, reading(2 * MAX_VISITED));
        assert_eq!(extremes(&mut c, lo..=hi).1, hi + 104);
    }

    #[test]
    fn bounds_that_overflow_are_none() {
        let mut t = ClockTracker::default();
        t.add_snapshot(
            &in_units(&[(MONOTONIC, 100, 1_000), (REALTIME, 1_000_000, 1)]),
            1,
        );
        t.add_snapshot(
            &in_units(&[(MONOTONIC, 200, 1_000), (REALTIME, 1_000, 1)]),
            1,
        );
        let k = |id| ClockKey::new(id, 1);
        let c = t.conversion(k(MONOTONIC), k(REALTIME));
        assert!(!c.is_monotone());
        // 100 and 200 µs give 1 ms and 1 µs: the wall clock went back at 200 µs, from
        // 1.1 ms. The greatest bound is the time 1 ns before that, less than a unit above
        // what 199 µs gives.
        assert_eq!(c.bounds(150, 250), Some((1_000, 1_100_000 - 1)));
        assert_eq!(t.convert(k(MONOTONIC), 199, k(REALTIME)), Some(1_099_000));
        // The unit overflows, then the offset.
        assert_eq!(c.bounds(0, i64::MAX / 1_000 + 1), None);
        let mut t = ClockTracker::default();
        t.add_snapshot(&snapshot(&[(MONOTONIC, 0), (REALTIME, 10)]), 1);
        let c = t.conversion(k(MONOTONIC), k(REALTIME));
        assert_eq!(c.bounds(0, i64::MAX - 10), Some((10, i64::MAX)));
        assert_eq!(c.bounds(0, i64::MAX - 9), None);
        assert_eq!(t.conversion(k(BOOTTIME), k(REALTIME)).bounds(0, 1), None);
    }
}
