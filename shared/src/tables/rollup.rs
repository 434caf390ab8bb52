//! `function_rollup`: self and total value per function, series, service and hour.
//!
//! Samples are first summed per (hour, leaf stack) within a profile, so each distinct stack is
//! walked once rather than once per sample.

use arrow_array::RecordBatch;
use rustc_hash::FxHashMap;

use super::call_tree::CallTree;
use super::columns::{batch, int64s, strings, timestamps};
use super::profiles::{clamp, micros, TableProfile};
use super::schema::Table;
use crate::error::Result;
use crate::model::Profile;

const HOUR_US: i64 = 3_600_000_000;

/// One rollup row's identity. Field order is the table's sort order: `hour`, `service`,
/// `function`, then the remaining keys so equal leading keys still sort deterministically.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct RollupKey<'a> {
    pub hour_us: i64,
    pub service: Option<&'a str>,
    pub function: &'a str,
    pub release: Option<&'a str>,
    pub environment: Option<&'a str>,
    pub platform: &'a str,
    pub sample_type: &'a str,
    pub sample_unit: &'a str,
}

/// Sums kept exact in i128; only absurd totals saturate when written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct RollupSums {
    pub self_value: i128,
    pub total_value: i128,
    pub self_rows: i128,
    pub total_rows: i128,
}

/// The functions a node's frame was inlined into: they are on the stack too, as the Sample v2
/// chunk (which spells them out as frames) and `queries.sql`'s `top_total_functions` count
/// them, unnamed ones as `<unknown>`.
fn inlined_callers<'a>(
    profile: &'a Profile,
    tree: &CallTree,
    node: u32,
) -> impl Iterator<Item = &'a str> {
    let frame = tree.frames[tree.stacks[node as usize].frame as usize];
    profile
        .frame(frame)
        .inlined_into
        .iter()
        .map(move |call| profile.opt_str(call.function).unwrap_or("<unknown>"))
}

/// One profile's sums per (hour, function), its functions named as its tree names them.
pub(super) type ProfileSums = FxHashMap<(i64, String), RollupSums>;

/// One hour's sums of a table profile's samples, by the stack id of their leaf: 12 bytes a
/// node, exact all the same.
#[derive(Debug)]
struct HourSums {
    hour_us: i64,
    weight: Vec<i64>,
    /// What a stack's weights add up to past `i64` (only absurd weights get there), carried
    /// here so `weight` stays 8 bytes.
    carried: FxHashMap<u32, i128>,
    /// A table profile numbers its samples in `u32`, so no count overflows.
    rows: Vec<u32>,
}

impl HourSums {
    fn new(hour_us: i64, nodes: usize) -> Self {
        HourSums {
            hour_us,
            weight: vec![0; nodes],
            carried: FxHashMap::default(),
            rows: vec![0; nodes],
        }
    }

    #[inline]
    fn add(&mut self, stack: u32, weight: i64) {
        let sum = &mut self.weight[stack as usize];
        match sum.checked_add(weight) {
            Some(total) => *sum = total,
            None => {
                *self.carried.entry(stack).or_default() += i128::from(*sum) + i128::from(weight);
                *sum = 0;
            }
        }
        self.rows[stack as usize] += 1;
    }

    fn weight(&self, stack: u32) -> i128 {
        i128::from(self.weight[stack as usize]) + self.carried.get(&stack).copied().unwrap_or(0)
    }
}

/// A table profile's samples summed by hour and leaf. The parts of a window written in parts
/// add up here, and the functions' sums are worked out once, from the whole window's.
#[derive(Debug, Default)]
pub(super) struct LeafSums {
    hours: Vec<HourSums>,
}

impl LeafSums {
    /// Adds the samples of `p`, read with its tree (which may have grown since the last
    /// part).
    pub fn add(&mut self, p: &TableProfile<'_>, tree: &CallTree) {
        let samples = p.profile.samples();
        let nodes = tree.stacks.len();
        // A table profile is one window of the grid (or aggregated at one instant), so it has
        // one hour, or two when its window straddles one: a dense array per hour costs 12
        // bytes a node, where a map keyed by (hour, stack) cost seven times that, which for a
        // trace of a million distinct span stacks was the conversion's largest allocation.
        let hours = &mut self.hours;
        for h in hours.iter_mut() {
            h.weight.resize(nodes, 0);
            h.rows.resize(nodes, 0);
        }
        for index in &p.plan.samples {
            let index = index as usize;
            let Some(stack) = samples.stack(index).and_then(|s| tree.stack_id(s)) else {
                continue;
            };
            let time_us = samples.time(index).map(micros).unwrap_or(p.start_us);
            let hour_us = time_us.div_euclid(HOUR_US) * HOUR_US;
            let at = match hours.iter().position(|h| h.hour_us == hour_us) {
                Some(at) => at,
                None => {
                    hours.push(HourSums::new(hour_us, nodes));
                    hours.len() - 1
                }
            };
            hours[at].add(stack, samples.weight(index));
        }
    }

    /// The sums per (hour, function), the functions named as `tree` names them.
    pub fn by_function(&self, profile: &Profile, tree: &CallTree) -> ProfileSums {
        let hours = &self.hours;
        let nodes = tree.stacks.len();
        // (hour, function) → sums: hashed while stacks are walked, each function of each leaf
        // once for all its hours. The sums are exact integer additions, so the order stacks are
        // walked in cannot show.
        let mut per_function: FxHashMap<(i64, &str), RollupSums> = FxHashMap::default();
        let names: Vec<String> = tree
            .frames
            .iter()
            .map(|&f| profile.frame_name(profile.frame(f)))
            .collect();
        let name = |s: u32| -> &str { &names[tree.stacks[s as usize].frame as usize] };
        let mut functions: Vec<&str> = Vec::new();
        for stack in 0..nodes {
            if hours
                .iter()
                .all(|h| h.rows.get(stack).is_none_or(|&r| r == 0))
            {
                continue;
            }
            let stack_id = stack as u32;
            // Recursion puts a function on the stack more than once; it counts once per sample.
            functions.clear();
            for node in tree.path(stack_id) {
                functions.push(name(node));
                functions.extend(inlined_callers(profile, tree, node));
            }
            functions.sort_unstable();
            functions.dedup();
            for h in hours {
                let (weight, count) = (h.weight(stack_id), i128::from(h.rows[stack]));
                if count == 0 {
                    continue;
                }
                let leaf = per_function.entry((h.hour_us, name(stack_id))).or_default();
                leaf.self_value += weight;
                leaf.self_rows += count;
                for &function in &functions {
                    let sums = per_function.entry((h.hour_us, function)).or_default();
                    sums.total_value += weight;
                    sums.total_rows += count;
                }
            }
        }
        per_function
            .into_iter()
            .map(|((hour_us, function), sums)| ((hour_us, function.to_owned()), sums))
            .collect()
    }
}

/// What a rollup row says besides its hour and function: profiles alike in all of it (two
/// processes of one service, or one process's windows) share rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct RollupGroup {
    service: Option<String>,
    release: Option<String>,
    environment: Option<String>,
    platform: String,
    sample_type: String,
    sample_unit: String,
}

/// The rollup of an upload, summed profile by profile as its windows are tabulated.
#[derive(Debug, Default)]
pub(super) struct Rollup {
    groups: Vec<RollupGroup>,
    /// (hour, group, function) → sums.
    sums: FxHashMap<(i64, usize, String), RollupSums>,
}

impl Rollup {
    /// The rows profile `p` adds to.
    pub fn group_of(p: &TableProfile<'_>) -> RollupGroup {
        let owned = |v: Option<&str>| v.map(str::to_owned);
        RollupGroup {
            service: owned(p.service),
            release: owned(p.input.release),
            environment: owned(p.input.environment),
            platform: p.platform.clone(),
            sample_type: p.sampled.sample_type.to_owned(),
            sample_unit: p.sampled.sample_unit.to_owned(),
        }
    }

    /// Adds the sums of a profile of `group`.
    pub fn add(&mut self, group: RollupGroup, sums: ProfileSums) {
        // An upload has a handful of groups.
        let g = match self.groups.iter().position(|g| *g == group) {
            Some(g) => g,
            None => {
                self.groups.push(group);
                self.groups.len() - 1
            }
        };
        for ((hour_us, function), sums) in sums {
            let row = self.sums.entry((hour_us, g, function)).or_default();
            row.self_value += sums.self_value;
            row.total_value += sums.total_value;
            row.self_rows += sums.self_rows;
            row.total_rows += sums.total_rows;
        }
    }

    /// Every row, sorted by key.
    pub fn rows(&self) -> Vec<(RollupKey<'_>, RollupSums)> {
        let mut rows: Vec<_> = self
            .sums
            .iter()
            .map(|((hour_us, g, function), &sums)| {
                let group = &self.groups[*g];
                let key = RollupKey {
                    hour_us: *hour_us,
                    service: group.service.as_deref(),
                    function: function.as_str(),
                    release: group.release.as_deref(),
                    environment: group.environment.as_deref(),
                    platform: &group.platform,
                    sample_type: &group.sample_type,
                    sample_unit: &group.sample_unit,
                };
                (key, sums)
            })
            .collect();
        rows.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        rows
    }
}

/// The rollup rows, in the given order.
pub(super) fn rollup_batch(
    source_id: &str,
    rows: &[(&RollupKey<'_>, &RollupSums)],
) -> Result<RecordBatch> {
    const T: Table = Table::FunctionRollup;
    let sums = |f: fn(&RollupSums) -> i128| int64s(rows.iter().map(|(_, s)| Some(clamp(f(s)))));
    batch(
        T,
        vec![
            strings(T, rows.iter().map(|_| Some(source_id)))?,
            timestamps(rows.iter().map(|(k, _)| k.hour_us)),
            strings(T, rows.iter().map(|(k, _)| k.service))?,
            strings(T, rows.iter().map(|(k, _)| k.release))?,
            strings(T, rows.iter().map(|(k, _)| k.environment))?,
            strings(T, rows.iter().map(|(k, _)| Some(k.platform)))?,
            strings(T, rows.iter().map(|(k, _)| Some(k.sample_type)))?,
            strings(T, rows.iter().map(|(k, _)| Some(k.sample_unit)))?,
            strings(T, rows.iter().map(|(k, _)| Some(k.function)))?,
            sums(|s| s.self_value),
            sums(|s| s.total_value),
            sums(|s| s.self_rows),
            sums(|s| s.total_rows),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::HourSums;

    #[test]
    fn a_stack_s_sum_past_i64_is_carried_exactly() {
        let mut sums = HourSums::new(0, 3);
        for w in [i64::MAX, i64::MAX, -5, i64::MAX] {
            sums.add(1, w);
        }
        sums.add(2, i64::MIN);
        sums.add(2, -1);
        assert_eq!(sums.weight(1), 3 * i128::from(i64::MAX) - 5);
        assert_eq!(sums.weight(2), i128::from(i64::MIN) - 1);
        assert_eq!(sums.weight(0), 0);
        assert_eq!((sums.rows[0], sums.rows[1], sums.rows[2]), (0, 4, 2));
    }
}
