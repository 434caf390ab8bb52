//! The samples of a profile, stored by column.
//!
//! A trace holds millions of samples, and most of their fields repeat: one series, one weight,
//! no labels, no links, no unwinder error. So each field is its own column, and a column holds a
//! single value for as long as every row has it, and one value per row only once a row differs.
//! A Perfetto sample then costs its time, thread, stack, CPU, mode and counter (about 30
//! bytes) instead of the 80 of a [`Sample`].

use std::fmt;

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
    /// One value per row.
    Each(Vec<T>),
}

impl<T: Copy + PartialEq> Column<T> {
    /// Appends a row's value; `len` rows are there before it.
    #[inline]
    fn push(&mut self, len: usize, value: T) {
        match self {
            Column::Each(values) => values.push(value),
            Column::Same(same) if *same == value => {}
            Column::Same(same) => {
                let mut values = Vec::with_capacity((len + 1).next_power_of_two());
                values.resize(len, *same);
                values.push(value);
                *self = Column::Each(values);
            }
            Column::Empty => *self = Column::Same(value),
        }
    }

    /// Row `i`'s value; `i` must be a row.
    #[inline]
    fn get(&self, i: usize) -> T {
        match self {
            Column::Each(values) => values[i],
            Column::Same(same) => *same,
            Column::Empty => panic!("row {i} of an empty column"),
        }
    }

    /// Sets row `i` of `len` rows.
    #[inline]
    fn set(&mut self, len: usize, i: usize, value: T) {
        match self {
            Column::Each(values) => values[i] = value,
            Column::Same(same) if *same == value => {}
            Column::Same(same) => {
                let mut values = vec![*same; len];
                values[i] = value;
                *self = Column::Each(values);
            }
            Column::Empty => panic!("row {i} of an empty column"),
        }
    }

    fn truncate(&mut self, len: usize) {
        match self {
            _ if len == 0 => *self = Column::Empty,
            Column::Each(values) => {
                values.truncate(len);
                values.shrink_to_fit();
            }
            Column::Same(_) | Column::Empty => {}
        }
    }

    /// Puts the rows in the order of `order` (row positions).
    fn reorder(&mut self, order: &[u32]) {
        if let Column::Each(values) = self {
            *values = order.iter().map(|&i| values[i as usize]).collect();
        }
    }
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

impl<T: Copy + PartialEq + Default> Nullable<T> {
    #[inline]
    fn push(&mut self, len: usize, value: Option<T>) {
        self.values.push(len, value.unwrap_or_default());
        self.present.push(len, value.is_some());
    }

    #[inline]
    fn get(&self, i: usize) -> Option<T> {
        self.present.get(i).then(|| self.values.get(i))
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

    fn reorder(&mut self, order: &[u32]) {
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
    ($table:expr, $column:ident => $body:expr) => {{
        {
            let $column = &mut $table.time;
            $body;
        }
        {
            let $column = &mut $table.thread;
            $body;
        }
        {
            let $column = &mut $table.stack;
            $body;
        }
        {
            let $column = &mut $table.weight;
            $body;
        }
        {
            let $column = &mut $table.series;
            $body;
        }
        {
            let $column = &mut $table.cpu;
            $body;
        }
        {
            let $column = &mut $table.cpu_mode;
            $body;
        }
        {
            let $column = &mut $table.unwind_error;
            $body;
        }
        {
            let $column = &mut $table.counter;
            $body;
        }
        {
            let $column = &mut $table.labels;
            $body;
        }
        {
            let $column = &mut $table.link;
            $body;
        }
    }};
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

    /// The first sample, if any.
    pub fn first(&self) -> Option<Sample> {
        (!self.is_empty()).then(|| self.get(0))
    }

    /// The last sample, if any.
    pub fn last(&self) -> Option<Sample> {
        (!self.is_empty()).then(|| self.get(self.len - 1))
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

    /// Sample `i`'s time.
    #[inline]
    pub fn time(&self, i: usize) -> Option<i64> {
        self.time.get(i)
    }

    /// Sample `i`'s thread.
    #[inline]
    pub fn thread(&self, i: usize) -> ThreadHandle {
        self.thread.get(i)
    }

    /// Sample `i`'s stack.
    #[inline]
    pub fn stack(&self, i: usize) -> Option<StackHandle> {
        self.stack.get(i)
    }

    /// Sample `i`'s weight.
    #[inline]
    pub fn weight(&self, i: usize) -> i64 {
        self.weight.get(i)
    }

    /// Sample `i`'s series.
    #[inline]
    pub fn series(&self, i: usize) -> SeriesHandle {
        self.series.get(i)
    }

    /// Sample `i`'s CPU.
    #[inline]
    pub fn cpu(&self, i: usize) -> Option<u32> {
        self.cpu.get(i)
    }

    /// Sample `i`'s labels.
    #[inline]
    pub fn labels(&self, i: usize) -> Option<LabelSetHandle> {
        self.labels.get(i)
    }

    /// Sample `i`'s trace link.
    #[inline]
    pub fn link(&self, i: usize) -> Option<LinkHandle> {
        self.link.get(i)
    }

    /// Keeps the samples `keep` returns true for, in order; `keep` may change them.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&mut Sample) -> bool) {
        let mut kept = 0;
        for i in 0..self.len {
            let mut s = self.get(i);
            let before = s;
            if !keep(&mut s) {
                continue;
            }
            if kept != i || s != before {
                self.set(kept, s);
            }
            kept += 1;
        }
        if kept < self.len {
            self.len = kept;
            each_column!(self, column => column.truncate(kept));
        }
    }

    /// Replaces sample `i`.
    fn set(&mut self, i: usize, s: Sample) {
        let len = self.len;
        self.time.set(len, i, s.time);
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

    /// Changes every sample's time.
    pub(crate) fn map_times(&mut self, mut f: impl FnMut(Option<i64>) -> Option<i64>) {
        for i in 0..self.len {
            let t = self.time.get(i);
            self.time.set(self.len, i, f(t));
        }
    }

    /// Orders samples by time (stable: samples with equal or no time keep their order).
    pub(crate) fn sort_by_time(&mut self) {
        let times = |i: usize| self.time.get(i);
        if (1..self.len).all(|i| times(i - 1) <= times(i)) {
            return;
        }
        let mut order: Vec<u32> = (0..self.len as u32).collect();
        order.sort_by_key(|&i| times(i as usize));
        each_column!(self, column => column.reorder(&order));
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
    fn retain_and_sort_keep_rows_whole() {
        let mut table = SampleTable::default();
        let mut expected: Vec<Sample> = (0..40).map(sample).collect();
        for &s in &expected {
            table.push(s);
        }
        let keep = |s: &mut Sample| {
            s.time = s.time.map(|t| t * 2);
            s.thread.index() != 1
        };
        table.retain(keep);
        expected.retain_mut(keep);
        assert_eq!(table.to_vec(), expected);

        table.sort_by_time();
        expected.sort_by_key(|s| s.time);
        assert_eq!(table.to_vec(), expected);

        table.retain(|_| false);
        assert!(table.is_empty());
        table.push(sample(3));
        assert_eq!(table.to_vec(), vec![sample(3)]);
    }
}
