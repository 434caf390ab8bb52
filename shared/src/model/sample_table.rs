//! The samples of a profile, stored by column.
//!
//! A trace holds millions of samples, and most of their fields repeat: one series, one weight,
//! no labels, no links, no unwinder error. So each field is its own column, and a column holds a
//! single value for as long as every row has it, and one value per row only once a row differs.
//! Those values are packed as narrow as they fit: a handful of threads or CPUs in a byte each,
//! times and counters as 4-byte differences from their block's first value. A Perfetto sample
//! of the bench trace then costs its time, thread, stack, CPU, mode and counter in about 17
//! bytes instead of the 80 of a [`Sample`].

use std::cmp::Reverse;
use std::collections::binary_heap::PeekMut;
use std::collections::BinaryHeap;
use std::fmt;

use rustc_hash::FxHashMap;

use super::{
    CpuMode, LabelSetHandle, LinkHandle, Sample, SeriesHandle, StackHandle, StringHandle,
    ThreadHandle,
};

/// One field of every row.
#[derive(Clone, Debug, Default)]
enum Column<T> {
    /// No rows yet.
    #[default]
    Empty,
    /// Every row has this value.
    Same(T),
    /// One value per row, packed.
    Each(Packed),
}

impl<T: Code> Column<T> {
    /// The packed form's rank, for tests of how rows are stored.
    #[cfg(test)]
    fn rank(&self) -> Option<usize> {
        match self {
            Column::Each(values) => Some(values.rank()),
            _ => None,
        }
    }

    /// Appends a row's value; `len` rows are there before it.
    #[inline]
    fn push(&mut self, len: usize, value: T) {
        match self {
            Column::Each(values) => values.push(len, value.code()),
            Column::Same(same) if *same == value => {}
            Column::Same(same) => {
                let mut values = Packed::filled(len, same.code());
                values.push(len, value.code());
                *self = Column::Each(values);
            }
            Column::Empty => *self = Column::Same(value),
        }
    }

    /// Appends the `n` rows of `other`; `len` rows are there before them. A value every row
    /// of both has stays one value, as pushing row by row would leave it.
    fn extend_from(&mut self, len: usize, other: &Column<T>, n: usize) {
        match (other, &*self) {
            (Column::Empty, _) => {}
            (Column::Same(value), Column::Empty) => *self = Column::Same(*value),
            (Column::Same(value), Column::Same(same)) if same == value => {}
            (Column::Same(value), _) => (0..n).for_each(|i| self.push(len + i, *value)),
            (Column::Each(values), _) => {
                (0..n).for_each(|i| self.push(len + i, T::decode(values.get(i))));
            }
        }
    }

    /// Row `i`'s value; `i` must be a row.
    #[inline]
    fn get(&self, i: usize) -> T {
        match self {
            Column::Each(values) => T::decode(values.get(i)),
            Column::Same(same) => *same,
            Column::Empty => panic!("row {i} of an empty column"),
        }
    }

    /// Sets row `i` of `len` rows.
    #[inline]
    fn set(&mut self, len: usize, i: usize, value: T) {
        match self {
            Column::Each(values) => values.set(len, i, value.code()),
            Column::Same(same) if *same == value => {}
            Column::Same(same) => {
                let mut values = Packed::filled(len, same.code());
                values.set(len, i, value.code());
                *self = Column::Each(values);
            }
            Column::Empty => panic!("row {i} of an empty column"),
        }
    }

    fn truncate(&mut self, len: usize) {
        match self {
            _ if len == 0 => *self = Column::Empty,
            Column::Each(values) => values.truncate(len),
            Column::Same(_) | Column::Empty => {}
        }
    }

    /// Puts the rows in `order`.
    fn reorder(&mut self, order: &Order) {
        if let Column::Each(values) = self {
            let codes = order.rows().map(|i| values.get(i));
            *values = Packed::of_rank(values.rank(), codes);
        }
    }
}

/// A new order of a table's rows.
enum Order {
    /// Each new row's old position.
    Rows(Vec<u32>),
    /// Rows merged from runs already in order (beginning at `starts`): the run each new row
    /// comes from, which is all a merge needs to say, in a byte or two a row.
    Runs { starts: Vec<usize>, from: RunIds },
}

/// The run of each row of a merge.
enum RunIds {
    U8(Vec<u8>),
    U16(Vec<u16>),
}

impl Order {
    /// Each new row's old position, in order.
    fn rows(&self) -> OrderRows<'_> {
        let (len, cursors) = match self {
            Order::Rows(rows) => (rows.len(), Vec::new()),
            Order::Runs { starts, from } => (
                match from {
                    RunIds::U8(v) => v.len(),
                    RunIds::U16(v) => v.len(),
                },
                starts.clone(),
            ),
        };
        OrderRows {
            order: self,
            next: 0,
            len,
            cursors,
        }
    }
}

/// The rows of an [`Order`].
struct OrderRows<'a> {
    order: &'a Order,
    next: usize,
    len: usize,
    /// Of a merge: the next row of each run.
    cursors: Vec<usize>,
}

impl Iterator for OrderRows<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        if self.next == self.len {
            return None;
        }
        let at = self.next;
        self.next += 1;
        let run = match self.order {
            Order::Rows(rows) => return Some(rows[at] as usize),
            Order::Runs {
                from: RunIds::U8(v),
                ..
            } => usize::from(v[at]),
            Order::Runs {
                from: RunIds::U16(v),
                ..
            } => usize::from(v[at]),
        };
        let row = self.cursors[run];
        self.cursors[run] += 1;
        Some(row)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.len - self.next;
        (left, Some(left))
    }
}

impl ExactSizeIterator for OrderRows<'_> {}

/// A value as the columns store it: a `u64` code, small for small values.
trait Code: Copy + PartialEq {
    fn code(self) -> u64;
    fn decode(code: u64) -> Self;
}

impl Code for i64 {
    #[inline]
    fn code(self) -> u64 {
        self as u64
    }
    #[inline]
    fn decode(code: u64) -> Self {
        code as i64
    }
}

impl Code for u64 {
    #[inline]
    fn code(self) -> u64 {
        self
    }
    #[inline]
    fn decode(code: u64) -> Self {
        code
    }
}

impl Code for u32 {
    #[inline]
    fn code(self) -> u64 {
        u64::from(self)
    }
    #[inline]
    fn decode(code: u64) -> Self {
        code as u32
    }
}

impl Code for bool {
    #[inline]
    fn code(self) -> u64 {
        u64::from(self)
    }
    #[inline]
    fn decode(code: u64) -> Self {
        code != 0
    }
}

impl Code for CpuMode {
    #[inline]
    fn code(self) -> u64 {
        self as u64
    }
    #[inline]
    fn decode(code: u64) -> Self {
        let mode = usize::try_from(code).ok().and_then(|i| CpuMode::ALL.get(i));
        mode.copied().unwrap_or_default()
    }
}

/// Handles are stored as their index; optional ones as index + 1, 0 for none.
macro_rules! handle_codes {
    ($($handle:ident),*) => {$(
        impl Code for $handle {
            #[inline]
            fn code(self) -> u64 {
                self.index() as u64
            }
            #[inline]
            fn decode(code: u64) -> Self {
                $handle::from_index(code as usize)
            }
        }

        impl Code for Option<$handle> {
            #[inline]
            fn code(self) -> u64 {
                self.map_or(0, |h| h.index() as u64 + 1)
            }
            #[inline]
            fn decode(code: u64) -> Self {
                code.checked_sub(1).map(|i| $handle::from_index(i as usize))
            }
        }
    )*};
}

handle_codes!(
    ThreadHandle,
    StackHandle,
    SeriesHandle,
    StringHandle,
    LabelSetHandle,
    LinkHandle
);

/// Rows of one block of [`Packed::Blocks`]: 1.28 s of a 100 Hz sampler fits the 4-byte
/// deltas (±2.1 s of nanoseconds), and the base costs half a bit a row.
const BLOCK_ROWS: usize = 128;

/// The delta of a row stored in [`Packed::Blocks`]' `far` map.
const FAR: u32 = u32::MAX;

/// One code per row, in the narrowest form that holds every code so far: half a byte, 1, 2, 3
/// or 4 bytes for small codes (handles, CPUs, modes), 4 bytes from a per-block base for codes
/// close to their neighbours (times, counters), else 8. A column only ever widens, so a code
/// is re-stored a few times at most. A few rows far from their block's base (a sampler paused
/// for a while) are kept aside rather than widening the whole column.
#[derive(Clone, Debug)]
enum Packed {
    /// Two rows a byte, the first in the low half: a series, a handful of threads or label
    /// sets.
    U4(Vec<u8>),
    U8(Vec<u8>),
    U16(Vec<u16>),
    /// A 2-byte position per row in a list of at most [`DICT_CODES`] distinct codes that fit 4
    /// bytes: a trace's few thousand leaf stacks, whose handles number in the hundreds of
    /// thousands.
    Dict {
        positions: Vec<u16>,
        codes: Vec<u32>,
        index: FxHashMap<u32, u16>,
    },
    /// Three little-endian bytes a row: a span trace's hundreds of thousands of distinct
    /// stacks.
    U24(Vec<u8>),
    U32(Vec<u32>),
    /// Each block's first code, each row's zigzag difference from it, and the rows too far
    /// from it (their delta is [`FAR`]).
    Blocks {
        bases: Vec<u64>,
        deltas: Vec<u32>,
        far: FxHashMap<usize, u64>,
    },
    U64(Vec<u64>),
}

/// The forms of [`Packed`], in the order columns widen in.
mod rank {
    pub const U4: usize = 0;
    pub const U8: usize = 1;
    pub const U16: usize = 2;
    pub const DICT: usize = 3;
    pub const U24: usize = 4;
    pub const U32: usize = 5;
    pub const BLOCKS: usize = 6;
    pub const U64: usize = 7;
}

/// The largest code the fixed-width form of `rank` holds; `None` for the other forms.
fn widest(form: usize) -> Option<u64> {
    match form {
        rank::U4 => Some(0xF),
        rank::U8 => Some(u64::from(u8::MAX)),
        rank::U16 => Some(u64::from(u16::MAX)),
        rank::U24 => Some(0xFF_FFFF),
        rank::U32 => Some(u64::from(u32::MAX)),
        _ => None,
    }
}

/// Row `i` of a [`Packed::U24`].
#[inline]
fn u24_at(v: &[u8], i: usize) -> u64 {
    u64::from(v[3 * i]) | u64::from(v[3 * i + 1]) << 8 | u64::from(v[3 * i + 2]) << 16
}

/// Row `i` of a [`Packed::U4`].
#[inline]
fn u4_at(v: &[u8], i: usize) -> u64 {
    u64::from(v[i / 2] >> (4 * (i % 2)) & 0xF)
}

/// Most runs of rows in time order that [`SampleTable::sort_by_time`] merges; rows in more
/// are sorted.
const MERGED_RUNS: usize = 1 << 16;

/// Most distinct codes of [`Packed::Dict`].
const DICT_CODES: usize = 1 << 16;

/// The difference of `code` from `base`, zigzag-encoded, if it fits 4 bytes.
#[inline]
fn delta(base: u64, code: u64) -> Option<u32> {
    let d = code.wrapping_sub(base) as i64;
    u32::try_from(((d << 1) ^ (d >> 63)) as u64)
        .ok()
        .filter(|&z| z != FAR)
}

#[inline]
fn undelta(base: u64, delta: u32) -> u64 {
    let d = u64::from(delta);
    base.wrapping_add(((d >> 1) as i64 ^ -((d & 1) as i64)) as u64)
}

impl Packed {
    /// `len` rows of `code`.
    fn filled(len: usize, code: u64) -> Packed {
        Packed::of(std::iter::repeat_n(code, len))
    }

    /// The codes of `codes`, packed.
    fn of(codes: impl ExactSizeIterator<Item = u64>) -> Packed {
        Self::of_rank(rank::U4, codes)
    }

    /// `codes` packed, starting from the form of `rank` with room for all of them: the form
    /// they were in before a reordering still holds them, so reordering a column does not
    /// widen it step by step, holding two copies of every width on the way.
    fn of_rank(form: usize, codes: impl ExactSizeIterator<Item = u64>) -> Packed {
        let total = codes.len();
        let mut packed = Self::empty(form, total);
        for (i, code) in codes.enumerate() {
            while !packed.try_push(i, code) {
                packed.widen_to(i, code, total);
            }
        }
        packed
    }

    /// No rows yet, in the form of `rank`, with room for `capacity`.
    fn empty(form: usize, capacity: usize) -> Packed {
        match form {
            rank::U4 => Packed::U4(Vec::with_capacity(capacity.div_ceil(2))),
            rank::U8 => Packed::U8(Vec::with_capacity(capacity)),
            rank::U16 => Packed::U16(Vec::with_capacity(capacity)),
            rank::DICT => Packed::Dict {
                positions: Vec::with_capacity(capacity),
                codes: Vec::new(),
                index: FxHashMap::default(),
            },
            rank::U24 => Packed::U24(Vec::with_capacity(3 * capacity)),
            rank::U32 => Packed::U32(Vec::with_capacity(capacity)),
            rank::BLOCKS => Packed::Blocks {
                bases: Vec::with_capacity(capacity / BLOCK_ROWS + 1),
                deltas: Vec::with_capacity(capacity),
                far: FxHashMap::default(),
            },
            _ => Packed::U64(Vec::with_capacity(capacity)),
        }
    }

    /// Appends row `len`.
    #[inline]
    fn push(&mut self, len: usize, code: u64) {
        while !self.try_push(len, code) {
            self.widen(len, code);
        }
    }

    #[inline]
    fn try_push(&mut self, len: usize, code: u64) -> bool {
        match self {
            Packed::U4(_) if code > 0xF => false,
            Packed::U4(v) if len.is_multiple_of(2) => {
                v.push(code as u8);
                true
            }
            Packed::U4(v) => {
                let last = v
                    .last_mut()
                    .expect("an odd row's byte holds the row before it");
                *last = (*last & 0xF) | (code as u8) << 4;
                true
            }
            Packed::U8(v) => u8::try_from(code).map(|c| v.push(c)).is_ok(),
            Packed::U16(v) => u16::try_from(code).map(|c| v.push(c)).is_ok(),
            Packed::Dict {
                positions,
                codes,
                index,
            } => dict_position(codes, index, code)
                .map(|at| positions.push(at))
                .is_some(),
            Packed::U24(_) if code > 0xFF_FFFF => false,
            Packed::U24(v) => {
                v.extend_from_slice(&code.to_le_bytes()[..3]);
                true
            }
            Packed::U32(v) => u32::try_from(code).map(|c| v.push(c)).is_ok(),
            Packed::Blocks { bases, deltas, far } => {
                if len.is_multiple_of(BLOCK_ROWS) {
                    bases.push(code);
                    deltas.push(0);
                    return true;
                }
                match delta(bases[len / BLOCK_ROWS], code) {
                    Some(d) => deltas.push(d),
                    // Past a block's worth and one row in 8 aside, 8 bytes a row is cheaper.
                    None if far.len() > len / 8 + BLOCK_ROWS => return false,
                    None => {
                        deltas.push(FAR);
                        far.insert(len, code);
                    }
                }
                true
            }
            Packed::U64(v) => {
                v.push(code);
                true
            }
        }
    }

    /// Row `i`'s code.
    #[inline]
    fn get(&self, i: usize) -> u64 {
        match self {
            Packed::U4(v) => u4_at(v, i),
            Packed::U8(v) => u64::from(v[i]),
            Packed::U16(v) => u64::from(v[i]),
            Packed::Dict {
                positions, codes, ..
            } => u64::from(codes[usize::from(positions[i])]),
            Packed::U24(v) => u24_at(v, i),
            Packed::U32(v) => u64::from(v[i]),
            Packed::Blocks { bases, deltas, far } => match deltas[i] {
                FAR => far[&i],
                d => undelta(bases[i / BLOCK_ROWS], d),
            },
            Packed::U64(v) => v[i],
        }
    }

    /// Sets row `i` of `len` rows.
    fn set(&mut self, len: usize, i: usize, code: u64) {
        while !self.try_set(i, code) {
            self.widen(len, code);
        }
    }

    fn try_set(&mut self, i: usize, code: u64) -> bool {
        match self {
            Packed::U4(_) if code > 0xF => false,
            Packed::U4(v) => {
                let shift = 4 * (i % 2);
                v[i / 2] = (v[i / 2] & !(0xF << shift)) | (code as u8) << shift;
                true
            }
            Packed::U8(v) => u8::try_from(code).map(|c| v[i] = c).is_ok(),
            Packed::U16(v) => u16::try_from(code).map(|c| v[i] = c).is_ok(),
            Packed::Dict {
                positions,
                codes,
                index,
            } => dict_position(codes, index, code)
                .map(|at| positions[i] = at)
                .is_some(),
            Packed::U24(_) if code > 0xFF_FFFF => false,
            Packed::U24(v) => {
                v[3 * i..3 * i + 3].copy_from_slice(&code.to_le_bytes()[..3]);
                true
            }
            Packed::U32(v) => u32::try_from(code).map(|c| v[i] = c).is_ok(),
            Packed::Blocks { bases, deltas, far } => {
                match delta(bases[i / BLOCK_ROWS], code) {
                    Some(d) => {
                        deltas[i] = d;
                        far.remove(&i);
                    }
                    None => {
                        deltas[i] = FAR;
                        far.insert(i, code);
                    }
                }
                true
            }
            Packed::U64(v) => {
                v[i] = code;
                true
            }
        }
    }

    /// Re-stores rows `0..len` in the next wider form that holds them, skipping the fixed
    /// widths too narrow for `code`, the code to be stored next.
    fn widen(&mut self, len: usize, code: u64) {
        self.widen_to(len, code, (len + 1).next_power_of_two());
    }

    /// [`widen`](Packed::widen), with room for `capacity` rows.
    fn widen_to(&mut self, len: usize, code: u64, capacity: usize) {
        let capacity = capacity.max(len + 1);
        for form in self.rank() + 1..=rank::U64 {
            // A list holds codes of 4 bytes.
            let widest = widest(form).or((form == rank::DICT).then_some(u64::from(u32::MAX)));
            if widest.is_some_and(|w| code > w) {
                continue;
            }
            let mut wider = Self::empty(form, capacity);
            if (0..len).all(|i| wider.try_push(i, self.get(i))) {
                *self = wider;
                return;
            }
        }
    }

    /// Position of the form in the order columns widen in.
    fn rank(&self) -> usize {
        match self {
            Packed::U4(_) => rank::U4,
            Packed::U8(_) => rank::U8,
            Packed::U16(_) => rank::U16,
            Packed::Dict { .. } => rank::DICT,
            Packed::U24(_) => rank::U24,
            Packed::U32(_) => rank::U32,
            Packed::Blocks { .. } => rank::BLOCKS,
            Packed::U64(_) => rank::U64,
        }
    }

    fn truncate(&mut self, len: usize) {
        match self {
            Packed::U4(v) => {
                shrink(v, len.div_ceil(2));
                // The half of the last byte past the rows is clear, for the next push.
                if let (Some(last), true) = (v.last_mut(), len % 2 == 1) {
                    *last &= 0xF;
                }
            }
            Packed::U8(v) => shrink(v, len),
            Packed::U16(v) => shrink(v, len),
            // Codes no row uses any more stay listed: at most 64 Ki of them.
            Packed::Dict { positions, .. } => shrink(positions, len),
            Packed::U24(v) => shrink(v, 3 * len),
            Packed::U32(v) => shrink(v, len),
            Packed::Blocks { bases, deltas, far } => {
                shrink(bases, len.div_ceil(BLOCK_ROWS));
                shrink(deltas, len);
                far.retain(|&i, _| i < len);
            }
            Packed::U64(v) => shrink(v, len),
        }
    }
}

/// `code`'s position in a [`Packed::Dict`]'s codes, listed there if it is new and there is
/// room; `None` when it does not fit one.
#[inline]
fn dict_position(codes: &mut Vec<u32>, index: &mut FxHashMap<u32, u16>, code: u64) -> Option<u16> {
    let code = u32::try_from(code).ok()?;
    if let Some(&at) = index.get(&code) {
        return Some(at);
    }
    if codes.len() == DICT_CODES {
        return None;
    }
    let at = codes.len() as u16;
    codes.push(code);
    index.insert(code, at);
    Some(at)
}

fn shrink<T>(v: &mut Vec<T>, len: usize) {
    v.truncate(len);
    v.shrink_to_fit();
}

/// A column of optional values, stored as the values and whether each is there, so that an
/// `Option<i64>` costs 8 bytes a row, not 16, while every row has one.
#[derive(Clone, Debug)]
struct Nullable<T> {
    values: Column<T>,
    present: Column<bool>,
}

impl<T> Default for Nullable<T> {
    fn default() -> Self {
        Nullable {
            values: Column::Empty,
            present: Column::Empty,
        }
    }
}

impl<T: Code + Default> Nullable<T> {
    #[cfg(test)]
    fn values_rank(&self) -> Option<usize> {
        self.values.rank()
    }

    #[inline]
    fn push(&mut self, len: usize, value: Option<T>) {
        self.values.push(len, value.unwrap_or_default());
        self.present.push(len, value.is_some());
    }

    #[inline]
    fn get(&self, i: usize) -> Option<T> {
        self.present.get(i).then(|| self.values.get(i))
    }

    fn extend_from(&mut self, len: usize, other: &Nullable<T>, n: usize) {
        self.values.extend_from(len, &other.values, n);
        self.present.extend_from(len, &other.present, n);
    }

    #[inline]
    fn set(&mut self, len: usize, i: usize, value: Option<T>) {
        self.values.set(len, i, value.unwrap_or_default());
        self.present.set(len, i, value.is_some());
    }

    fn truncate(&mut self, len: usize) {
        self.values.truncate(len);
        self.present.truncate(len);
    }

    fn reorder(&mut self, order: &Order) {
        self.values.reorder(order);
        self.present.reorder(order);
    }
}

/// Every sample of a profile, in the order added (by time once the decoder has finished).
/// Rows are read as [`Sample`] values, or one field at a time.
#[derive(Clone, Default)]
pub struct SampleTable {
    len: usize,
    time: Nullable<i64>,
    thread: Column<ThreadHandle>,
    stack: Column<Option<StackHandle>>,
    weight: Column<i64>,
    series: Column<SeriesHandle>,
    cpu: Nullable<u32>,
    cpu_mode: Column<CpuMode>,
    unwind_error: Column<Option<StringHandle>>,
    counter: Nullable<u64>,
    labels: Column<Option<LabelSetHandle>>,
    link: Column<Option<LinkHandle>>,
}

/// Applies the same operation to every column.
macro_rules! each_column {
    ($table:expr, $column:ident => $body:expr) => {
        each_column!(@ $table, $column => $body;
            time thread stack weight series cpu cpu_mode unwind_error counter labels link)
    };
    (@ $table:expr, $column:ident => $body:expr; $($field:ident)*) => {{
        $({
            let $column = &mut $table.$field;
            $body;
        })*
    }};
}

/// One reader per field: `name(i)` is sample `i`'s `name`.
macro_rules! field_accessors {
    ($($(#[$doc:meta])* $name:ident: $ty:ty;)*) => {$(
        $(#[$doc])*
        #[inline]
        pub fn $name(&self, i: usize) -> $ty {
            self.$name.get(i)
        }
    )*};
}

impl SampleTable {
    /// Number of samples.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends every sample of `other`, in order: column by column, so a column whose rows
    /// all hold one value costs nothing a row.
    pub(crate) fn extend_from(&mut self, other: &SampleTable) {
        let (len, n) = (self.len, other.len);
        self.time.extend_from(len, &other.time, n);
        self.thread.extend_from(len, &other.thread, n);
        self.stack.extend_from(len, &other.stack, n);
        self.weight.extend_from(len, &other.weight, n);
        self.series.extend_from(len, &other.series, n);
        self.cpu.extend_from(len, &other.cpu, n);
        self.cpu_mode.extend_from(len, &other.cpu_mode, n);
        self.unwind_error.extend_from(len, &other.unwind_error, n);
        self.counter.extend_from(len, &other.counter, n);
        self.labels.extend_from(len, &other.labels, n);
        self.link.extend_from(len, &other.link, n);
        self.len += n;
    }

    /// Appends a sample.
    #[inline]
    pub(crate) fn push(&mut self, s: Sample) {
        let len = self.len;
        self.time.push(len, s.time);
        self.thread.push(len, s.thread);
        self.stack.push(len, s.stack);
        self.weight.push(len, s.weight);
        self.series.push(len, s.series);
        self.cpu.push(len, s.cpu);
        self.cpu_mode.push(len, s.cpu_mode);
        self.unwind_error.push(len, s.unwind_error);
        self.counter.push(len, s.counter);
        self.labels.push(len, s.labels);
        self.link.push(len, s.link);
        self.len += 1;
    }

    /// Sample `i`. Panics past the end, like indexing a slice.
    #[inline]
    pub fn get(&self, i: usize) -> Sample {
        assert!(i < self.len, "sample {i} of {}", self.len);
        Sample {
            time: self.time.get(i),
            thread: self.thread.get(i),
            stack: self.stack.get(i),
            weight: self.weight.get(i),
            series: self.series.get(i),
            cpu: self.cpu.get(i),
            cpu_mode: self.cpu_mode.get(i),
            unwind_error: self.unwind_error.get(i),
            counter: self.counter.get(i),
            labels: self.labels.get(i),
            link: self.link.get(i),
        }
    }

    /// Every sample, in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            table: self,
            next: 0,
        }
    }

    /// Every sample, copied out: for tests and small profiles.
    pub fn to_vec(&self) -> Vec<Sample> {
        self.iter().collect()
    }

    field_accessors! {
        /// Sample `i`'s time.
        time: Option<i64>;
        /// Sample `i`'s thread.
        thread: ThreadHandle;
        /// Sample `i`'s stack.
        stack: Option<StackHandle>;
        /// Sample `i`'s weight.
        weight: i64;
        /// Sample `i`'s series.
        series: SeriesHandle;
        /// Sample `i`'s CPU.
        cpu: Option<u32>;
        /// Sample `i`'s processor mode.
        cpu_mode: CpuMode;
        /// Why sample `i`'s stack is incomplete, as the producer said.
        unwind_error: Option<StringHandle>;
        /// The sampler's running counter at sample `i`.
        counter: Option<u64>;
        /// Sample `i`'s labels.
        labels: Option<LabelSetHandle>;
        /// Sample `i`'s trace link.
        link: Option<LinkHandle>;
    }

    /// Moves every sample's time, and keeps only the samples `f` gives a time: `f` is called
    /// once per sample, in order. Only the times are rewritten unless a sample goes.
    pub(crate) fn retain_times(&mut self, mut f: impl FnMut(Option<i64>) -> Option<i64>) {
        let mut times = Nullable::default();
        // Which rows stay, once one does not.
        let mut kept_rows: Option<Vec<bool>> = None;
        let mut kept = 0;
        for i in 0..self.len {
            match f(self.time.get(i)) {
                Some(t) => {
                    times.push(kept, Some(t));
                    kept += 1;
                    if let Some(rows) = &mut kept_rows {
                        rows.push(true);
                    }
                }
                None => kept_rows.get_or_insert_with(|| vec![true; i]).push(false),
            }
        }
        if let Some(rows) = kept_rows {
            let from = rows.iter().enumerate().filter(|(_, &keep)| keep);
            for (to, (from, _)) in from.enumerate() {
                if to != from {
                    self.set_all_but_time(to, self.get(from));
                }
            }
            self.len = kept;
            each_column!(self, column => column.truncate(kept));
        }
        self.time = times;
    }

    /// Replaces sample `i`'s labels.
    pub(crate) fn set_labels(&mut self, i: usize, labels: Option<LabelSetHandle>) {
        self.labels.set(self.len, i, labels);
    }

    /// Replaces every field of sample `i` but its time.
    fn set_all_but_time(&mut self, i: usize, s: Sample) {
        let len = self.len;
        self.thread.set(len, i, s.thread);
        self.stack.set(len, i, s.stack);
        self.weight.set(len, i, s.weight);
        self.series.set(len, i, s.series);
        self.cpu.set(len, i, s.cpu);
        self.cpu_mode.set(len, i, s.cpu_mode);
        self.unwind_error.set(len, i, s.unwind_error);
        self.counter.set(len, i, s.counter);
        self.labels.set(len, i, s.labels);
        self.link.set(len, i, s.link);
    }

    /// Multiplies every weight by `factor`, saturating (the caller knows none overflows).
    pub(crate) fn scale_weights(&mut self, factor: i64) {
        let mut weights = Column::default();
        for i in 0..self.len {
            weights.push(i, self.weight.get(i).saturating_mul(factor));
        }
        weights.truncate(self.len);
        self.weight = weights;
    }

    /// Changes every sample's time.
    pub(crate) fn map_times(&mut self, mut f: impl FnMut(Option<i64>) -> Option<i64>) {
        let mut times = Nullable::default();
        for i in 0..self.len {
            times.push(i, f(self.time.get(i)));
        }
        // Without the capacity it grew into: the model is held until its outputs are written.
        times.truncate(self.len);
        self.time = times;
    }

    /// Orders samples by time (stable: samples with equal or no time keep their order).
    pub(crate) fn sort_by_time(&mut self) {
        let times = |i: usize| self.time.get(i);
        // Where each run of rows already in time order begins: decoders add samples thread by
        // thread or track by track, each in order.
        let mut runs: Vec<usize> = vec![0];
        for i in 1..self.len {
            if times(i - 1) > times(i) {
                runs.push(i);
                if runs.len() > MERGED_RUNS {
                    break;
                }
            }
        }
        if runs.len() == 1 {
            return;
        }
        let order = if runs.len() <= MERGED_RUNS {
            self.merge_runs(runs)
        } else {
            Order::Rows(self.sorted_order())
        };
        each_column!(self, column => column.reorder(&order));
    }

    /// The rows in time order, merged from the runs beginning at `runs` (at most
    /// [`MERGED_RUNS`]): a row per step from a heap of the runs' heads, with no copy of the
    /// times and no sort buffer.
    fn merge_runs(&self, runs: Vec<usize>) -> Order {
        let times = |i: usize| self.time.get(i);
        let ends: Vec<usize> = runs[1..].iter().copied().chain([self.len]).collect();
        // Equal times come out by run, and runs are in row order: the merge is stable. A
        // missing time is `None`, which sorts first.
        let mut heads: BinaryHeap<Reverse<(Option<i64>, usize, usize)>> = runs
            .iter()
            .enumerate()
            .map(|(run, &row)| Reverse((times(row), run, row)))
            .collect();
        // The head taken is replaced in place by its run's next row: one sift down a row
        // instead of a pop and a push. Heads are unique (run, row), so the order is the same.
        let mut next = || {
            let mut head = heads.peek_mut()?;
            let Reverse((_, run, row)) = *head;
            if row + 1 < ends[run] {
                *head = Reverse((times(row + 1), run, row + 1));
            } else {
                PeekMut::pop(head);
            }
            Some(run)
        };
        // Run numbers fit the narrow form chosen for them: there are at most `MERGED_RUNS`.
        let from = if runs.len() <= 1 << 8 {
            let mut from = Vec::with_capacity(self.len);
            while let Some(run) = next() {
                from.push(run as u8);
            }
            RunIds::U8(from)
        } else {
            let mut from = Vec::with_capacity(self.len);
            while let Some(run) = next() {
                from.push(run as u16);
            }
            RunIds::U16(from)
        };
        Order::Runs { starts: runs, from }
    }

    /// The rows in time order, sorted: for rows in many runs.
    fn sorted_order(&self) -> Vec<u32> {
        let times = |i: usize| self.time.get(i);
        let mut order: Vec<u32> = (0..self.len as u32).collect();
        // The sort compares each time many times: read them out of their packed column once.
        // A missing time sorts first, as `i64::MIN` does, unless that time itself occurs.
        let mut exact = true;
        let keys: Vec<i64> = (0..self.len)
            .map(|i| match times(i) {
                Some(t) => {
                    exact &= t != i64::MIN;
                    t
                }
                None => i64::MIN,
            })
            .collect();
        if exact {
            order.sort_by_key(|&i| keys[i as usize]);
        } else {
            order.sort_by_key(|&i| times(i as usize));
        }
        order
    }

    /// Moves rows `at..` into a new table, in order.
    pub(crate) fn split_off(&mut self, at: usize) -> SampleTable {
        let at = at.min(self.len);
        let mut rest = SampleTable::default();
        for i in at..self.len {
            rest.push(self.get(i));
        }
        self.len = at;
        each_column!(self, column => column.truncate(at));
        rest
    }

    /// Gives back capacity the columns grew into but do not use.
    pub(crate) fn shrink_to_fit(&mut self) {
        let len = self.len;
        each_column!(self, column => column.truncate(len));
    }
}

impl PartialEq for SampleTable {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl Eq for SampleTable {}

impl fmt::Debug for SampleTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// The samples of a [`SampleTable`], in order.
#[derive(Clone)]
pub struct Iter<'t> {
    table: &'t SampleTable,
    next: usize,
}

impl Iterator for Iter<'_> {
    type Item = Sample;

    #[inline]
    fn next(&mut self) -> Option<Sample> {
        (self.next < self.table.len).then(|| {
            self.next += 1;
            self.table.get(self.next - 1)
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.table.len - self.next;
        (left, Some(left))
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'t> IntoIterator for &'t SampleTable {
    type Item = Sample;
    type IntoIter = Iter<'t>;

    fn into_iter(self) -> Iter<'t> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(i: usize) -> Sample {
        let mut s = Sample::new(
            ThreadHandle::from_index(i % 3),
            (!i.is_multiple_of(4)).then(|| StackHandle::from_index(i)),
            1,
            SeriesHandle::from_index(0),
        );
        s.time = (!i.is_multiple_of(5)).then_some(1_000 - i as i64);
        s.cpu = Some(2);
        s
    }

    #[test]
    fn rows_read_back_as_added() {
        let mut table = SampleTable::default();
        let mut expected = Vec::new();
        for i in 0..50 {
            let mut s = sample(i);
            if i == 30 {
                // Columns that held one value start holding one per row.
                s.weight = 7;
                s.cpu = None;
                s.labels = Some(LabelSetHandle::from_index(1));
            }
            table.push(s);
            expected.push(s);
            assert_eq!(table.to_vec(), expected);
        }
        assert_eq!(table.len(), 50);
        assert_eq!(table.get(30).weight, 7);
        assert_eq!(table.weight(31), 1);
        assert_eq!(table.iter().len(), 50);
    }

    #[test]
    fn extending_by_a_table_is_pushing_its_rows() {
        // Tables whose columns hold one value or one per row, alike or not, empty or not.
        let of = |range: std::ops::Range<usize>, weight: i64| {
            let mut table = SampleTable::default();
            for i in range {
                let mut s = sample(i);
                s.weight = weight;
                table.push(s);
            }
            table
        };
        let tables = [
            of(0..0, 1),
            of(0..1, 1),
            of(0..20, 1),
            of(20..45, 1),
            of(45..46, 9),
            of(46..300, 9),
        ];
        for a in &tables {
            for b in &tables {
                let mut pushed = a.clone();
                b.iter().for_each(|s| pushed.push(s));
                let mut extended = a.clone();
                extended.extend_from(b);
                assert_eq!(extended.to_vec(), pushed.to_vec());
                assert_eq!(extended.weight.rank(), pushed.weight.rank());
                assert_eq!(extended.thread.rank(), pushed.thread.rank());
                assert_eq!(extended.time.values_rank(), pushed.time.values_rank());
            }
        }
    }

    #[test]
    fn sorting_by_time_is_stable_and_puts_missing_times_first() {
        // With and without the one time a missing time shares its sort key with.
        for extreme in [i64::MIN + 1, i64::MIN] {
            let mut table = SampleTable::default();
            let mut expected: Vec<Sample> = (0..60)
                .map(|i| {
                    let mut s = sample(i);
                    s.weight = i as i64; // tells equal times apart
                    s.time = match i % 5 {
                        0 => None,
                        1 => Some(extreme),
                        _ => Some(1_000 - (i as i64 % 7) * 10),
                    };
                    s
                })
                .collect();
            for &s in &expected {
                table.push(s);
            }
            table.sort_by_time();
            expected.sort_by_key(|s| s.time);
            assert_eq!(table.to_vec(), expected, "{extreme}");
        }
    }

    /// Rows in a few runs are merged (their runs numbered in a byte, or in two past 256), rows
    /// in more than [`MERGED_RUNS`] sorted: each as a stable sort by time orders them, equal
    /// times within and across runs and missing times included.
    #[test]
    fn runs_merged_or_sorted_give_the_stable_order() {
        for runs in [2, 17, 300, 2 * MERGED_RUNS] {
            let mut table = SampleTable::default();
            let mut expected = Vec::new();
            let mut seed = 7u64;
            for run in 0..runs {
                // Two runs at a time start together, each lower than the last: a run begins
                // at every second run at least.
                let mut time = ((runs - run) / 2) as i64 * 10;
                for _ in 0..3 {
                    seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    time += (seed >> 62) as i64; // 0..=3: equal times within a run too
                    let mut s = sample(expected.len());
                    s.weight = expected.len() as i64; // tells equal times apart
                    s.time = (seed >> 59 != 0).then_some(time);
                    expected.push(s);
                }
            }
            for &s in &expected {
                table.push(s);
            }
            table.sort_by_time();
            expected.sort_by_key(|s| s.time);
            assert!(table.to_vec() == expected, "{runs} runs");
        }
    }

    #[test]
    fn times_moved_and_sorted_keep_rows_whole() {
        let mut table = SampleTable::default();
        let mut expected: Vec<Sample> = (0..40).map(sample).collect();
        for &s in &expected {
            table.push(s);
        }
        table.sort_by_time();
        expected.sort_by_key(|s| s.time);
        assert_eq!(table.to_vec(), expected);

        // Times moved, every seventh sample dropped by having none.
        fn step(n: &mut i64) -> impl FnMut(Option<i64>) -> Option<i64> + '_ {
            move |t| {
                *n += 1;
                t.filter(|_| *n % 7 != 0).map(|t| t + 11)
            }
        }
        let (mut a, mut b) = (0, 0);
        let mut kept = Vec::new();
        let mut expected_step = step(&mut a);
        for s in &expected {
            if let Some(t) = expected_step(s.time) {
                kept.push(Sample {
                    time: Some(t),
                    ..*s
                });
            }
        }
        table.retain_times(step(&mut b));
        expected = kept;
        assert_eq!(table.to_vec(), expected);
        // None dropped: only the times change.
        table.retain_times(|t| t.map(|t| t - 11));
        for s in &mut expected {
            s.time = s.time.map(|t| t - 11);
        }
        assert_eq!(table.to_vec(), expected);

        table.retain_times(|_| None);
        assert!(table.is_empty());
        table.push(sample(3));
        assert_eq!(table.to_vec(), vec![sample(3)]);
    }

    /// A small deterministic generator, so the test needs no crate.
    fn lcg(state: &mut u64) -> u64 {
        *state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *state >> 33
    }

    #[test]
    fn codes_are_packed_as_narrow_as_they_fit_and_read_back_exactly() {
        let forms = |codes: &[u64]| {
            let packed = Packed::of(codes.iter().copied());
            let back: Vec<u64> = (0..codes.len()).map(|i| packed.get(i)).collect();
            assert_eq!(back, codes);
            packed.rank()
        };
        assert_eq!(forms(&[0, 3, 15, 1, 2]), rank::U4);
        assert_eq!(forms(&[0, 3, 255]), rank::U8);
        assert_eq!(forms(&[0, 256, 3]), rank::U16);
        assert_eq!(
            forms(&[0, 70_000]),
            rank::DICT,
            "a few codes past 2 bytes are listed"
        );
        let stacks: Vec<u64> = (0..50_000).map(|i| 100_000 + (i * 7919) % 2_500).collect();
        assert_eq!(forms(&stacks), rank::DICT);
        // Rows set later keep the list, or leave it for a code it cannot hold.
        let mut listed = Packed::of(stacks.iter().copied());
        listed.set(stacks.len(), 7, 3_000_000);
        listed.set(stacks.len(), 8, stacks[9]);
        assert_eq!(
            (listed.get(7), listed.get(8), listed.rank()),
            (3_000_000, stacks[9], rank::DICT)
        );
        listed.set(stacks.len(), 9, 1 << 40);
        assert_eq!(
            (listed.get(7), listed.get(9), listed.rank()),
            (3_000_000, 1 << 40, rank::BLOCKS)
        );
        assert_eq!(listed.get(10), stacks[10]);
        // More distinct codes than a list holds: 3 bytes each, or 4 past 2^24.
        let distinct: Vec<u64> = (0..70_000).map(|i| 70_000 + i).collect();
        assert_eq!(forms(&distinct), rank::U24);
        let wide: Vec<u64> = (0..70_000).map(|i| (1 << 24) - 5 + i).collect();
        assert_eq!(forms(&wide), rank::U32);
        // Rows set later in the narrow forms keep their neighbours.
        let mut nibbles = Packed::of([1u64, 2, 3, 4, 5].into_iter());
        nibbles.set(5, 1, 15);
        nibbles.set(5, 2, 0);
        assert_eq!(
            (0..5).map(|i| nibbles.get(i)).collect::<Vec<_>>(),
            [1, 15, 0, 4, 5]
        );
        nibbles.set(5, 3, 16);
        assert_eq!(
            (
                (0..5).map(|i| nibbles.get(i)).collect::<Vec<_>>(),
                nibbles.rank()
            ),
            (vec![1, 15, 0, 16, 5], rank::U8)
        );
        let mut three = Packed::of(distinct.iter().copied());
        three.set(distinct.len(), 1, 0xFF_FFFF);
        assert_eq!(
            (three.get(0), three.get(1), three.get(2)),
            (70_000, 0xFF_FFFF, 70_002)
        );
        // Truncated to an odd length, a half-byte column takes new rows in the free half.
        let mut odd = Packed::of([7u64, 8, 9, 10].into_iter());
        odd.truncate(3);
        odd.push(3, 11);
        assert_eq!(
            (0..4).map(|i| odd.get(i)).collect::<Vec<_>>(),
            [7, 8, 9, 11]
        );
        // Times a millisecond apart, well past 4 bytes, over many blocks.
        let times: Vec<u64> = (0..10_000)
            .map(|i| 1_700_000_000_000_000_000 + i * 1_000_000)
            .collect();
        assert_eq!(forms(&times), rank::BLOCKS);
        // Negative steps, and extremes kept aside, survive the zigzag.
        assert_eq!(
            forms(&[5, 3, 0, u64::MAX, 1 << 63, (1 << 63) - 1]),
            rank::BLOCKS
        );
        assert_eq!(forms(&[100, 90, 80, 4_000_000_000]), rank::DICT);
        assert_eq!(forms(&[100, 90, 80, 5_000_000_000]), rank::BLOCKS);
        // A pause of 10 s inside a block: the rows after it are kept aside.
        let paused: Vec<u64> = (0..1000)
            .map(|i| i * 1_000_000 + u64::from(i >= 50) * 10_000_000_000)
            .collect();
        assert_eq!(forms(&paused), rank::BLOCKS);
        // Codes all over the place: 8 bytes each.
        let mut state = 1;
        let scattered: Vec<u64> = (0..1000).map(|_| lcg(&mut state) << 31).collect();
        assert_eq!(forms(&scattered), rank::U64);

        // Setting a code that does not fit widens the column and keeps every other row.
        let mut packed = Packed::of([1u64, 2, 3].into_iter());
        packed.set(3, 1, 1 << 40);
        assert_eq!(
            (0..3).map(|i| packed.get(i)).collect::<Vec<_>>(),
            [1, 1 << 40, 3]
        );
        packed.push(3, 7);
        packed.truncate(2);
        assert_eq!(
            (0..2).map(|i| packed.get(i)).collect::<Vec<_>>(),
            [1, 1 << 40]
        );
    }

    #[test]
    fn a_large_table_matches_a_list_of_samples_through_every_change() {
        let mut state = 7;
        let mut table = SampleTable::default();
        let mut expected = Vec::new();
        let mut time = 1_700_000_000_000_000_000i64;
        for i in 0..20_000usize {
            let r = lcg(&mut state);
            // Mostly close in time, sometimes out of order, once a long pause.
            time += match r % 50 {
                0 => -3_000_000,
                _ if i == 12_345 => 30_000_000_000,
                _ => 250_000,
            };
            let mut s = Sample::new(
                ThreadHandle::from_index((r % 16) as usize),
                (!r.is_multiple_of(7)).then(|| StackHandle::from_index((r % 70_000) as usize)),
                if i < 15_000 {
                    1
                } else {
                    (r % 1000) as i64 - 10
                },
                SeriesHandle::from_index(usize::from(i > 19_000)),
            );
            s.time = (!r.is_multiple_of(101)).then_some(time);
            s.cpu = Some((r % 8) as u32);
            s.cpu_mode = if r.is_multiple_of(3) {
                CpuMode::Kernel
            } else {
                CpuMode::User
            };
            s.counter = Some(lcg(&mut state) << 20);
            table.push(s);
            expected.push(s);
        }
        assert_eq!(table.to_vec(), expected);
        assert_eq!(table.len(), expected.len());

        // Every time moves onto another clock, and every tenth sample goes.
        let mut n = 0;
        table.retain_times(|t| {
            n += 1;
            t.filter(|_| n % 10 != 0)
                .map(|t| t - 1_600_000_000_000_000_000 + n)
        });
        let mut n = 0;
        expected.retain_mut(|s| {
            n += 1;
            s.time = s
                .time
                .filter(|_| n % 10 != 0)
                .map(|t| t - 1_600_000_000_000_000_000 + n);
            s.time.is_some()
        });
        assert_eq!(table.to_vec(), expected);
        table.sort_by_time();
        expected.sort_by_key(|s| s.time);
        assert_eq!(table.to_vec(), expected);

        table.map_times(|t| t.map(|t| t + 5));
        for s in &mut expected {
            s.time = s.time.map(|t| t + 5);
        }
        table.shrink_to_fit();
        assert_eq!(table.to_vec(), expected);
        assert_eq!(
            table.time.values_rank(),
            Some(rank::BLOCKS),
            "times are stored in 4 bytes"
        );
        assert_eq!(
            table.thread.rank(),
            Some(rank::U4),
            "16 threads take half a byte"
        );
    }
}
