//! Clock conversion through ClockSnapshots, as trace_processor's clock tracker does it.
//!
//! Every snapshot says "at this instant, clock A read a, clock B read b, ...". Clocks that
//! appear together in a snapshot are linked; converting a timestamp walks the shortest chain of
//! links (breadth-first), and each hop uses the latest snapshot holding both clocks whose
//! source reading is not after the timestamp (the first one if all are).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

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
    /// Conversions worked out so far: every sample of a trace converts between the same few
    /// clocks, so the path search and each hop's snapshot list are done once per pair.
    routes: RefCell<FxHashMap<(ClockKey, ClockKey), Option<Route>>>,
}

/// The hops from one clock to another; `None` in the cache when no path links them.
type Route = Rc<[Hop]>;

/// One link of a conversion path: the readings (from, to) of every snapshot holding both
/// clocks, sorted by the source reading (snapshot order among equal readings).
struct Hop {
    readings: Vec<(i64, i64)>,
    /// The first snapshot's pair, used for times before every snapshot.
    first: (i64, i64),
}

impl Hop {
    /// The latest snapshot whose source reading is not after `ts` (the later one of equals).
    fn apply(&self, ts: i64) -> Option<i64> {
        let after = self.readings.partition_point(|&(a, _)| a <= ts);
        let (a, b) = after
            .checked_sub(1)
            .map_or(self.first, |i| self.readings[i]);
        ts.checked_sub(a)?.checked_add(b)
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
            self.routes.get_mut().clear();
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

    /// Converts `ts` (in the units of `from`) to ns on `to`.
    pub(super) fn convert(&self, from: ClockKey, ts: i64, to: ClockKey) -> Option<i64> {
        let ts = ts.checked_mul(*self.multipliers.get(&from).unwrap_or(&1))?;
        if from == to {
            return Some(ts);
        }
        let route = self
            .routes
            .borrow_mut()
            .entry((from, to))
            .or_insert_with(|| self.route(from, to))
            .clone()?;
        route.iter().try_fold(ts, |value, hop| hop.apply(value))
    }

    fn route(&self, from: ClockKey, to: ClockKey) -> Option<Route> {
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
                Some(Hop { readings, first })
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
}
