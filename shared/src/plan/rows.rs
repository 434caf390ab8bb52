//! Positions of model samples as a plan holds them: runs of consecutive positions.
//!
//! A plan's samples are mostly long runs of the model's sample table (one process of a
//! trace, in time order), so a plan costs a few bytes a run rather than 4 bytes a sample.

/// Positions in [`crate::model::Profile::samples`], in the order pushed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rows {
    /// Each closed run as two LEB128 numbers: the zigzag distance of its first position from
    /// the end of the run before it, and its length less one.
    runs: Vec<u8>,
    /// The open run: its first position and length (0 while there are no rows).
    open: (u32, u32),
    /// One past the last position of the last closed run.
    end: i64,
    len: usize,
}

impl Rows {
    /// No rows.
    pub fn new() -> Self {
        Rows::default()
    }

    /// Appends position `row`.
    #[inline]
    pub fn push(&mut self, row: u32) {
        let (start, n) = self.open;
        if n > 0 && start.checked_add(n) == Some(row) {
            self.open.1 += 1;
        } else {
            self.close();
            self.open = (row, 1);
        }
        self.len += 1;
    }

    fn close(&mut self) {
        let (start, n) = self.open;
        if n == 0 {
            return;
        }
        let gap = i64::from(start) - self.end;
        put(&mut self.runs, ((gap << 1) ^ (gap >> 63)) as u64);
        put(&mut self.runs, u64::from(n - 1));
        self.end = i64::from(start) + i64::from(n);
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first position.
    pub fn first(&self) -> Option<u32> {
        self.iter().next()
    }

    /// The last position.
    pub fn last(&self) -> Option<u32> {
        let (start, n) = self.open;
        (n > 0).then(|| start + (n - 1))
    }

    /// Each position, in the order pushed.
    pub fn iter(&self) -> RowsIter<'_> {
        RowsIter {
            runs: &self.runs,
            open: self.open,
            end: 0,
            next: 0,
            left_in_run: 0,
            left: self.len,
        }
    }

    /// Gives back capacity the encoding grew into but does not use.
    pub fn shrink_to_fit(&mut self) {
        self.runs.shrink_to_fit();
    }
}

impl FromIterator<u32> for Rows {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
        let mut rows = Rows::new();
        for row in iter {
            rows.push(row);
        }
        rows.shrink_to_fit();
        rows
    }
}

impl<'a> IntoIterator for &'a Rows {
    type Item = u32;
    type IntoIter = RowsIter<'a>;

    fn into_iter(self) -> RowsIter<'a> {
        self.iter()
    }
}

/// The positions of [`Rows::iter`].
#[derive(Clone, Debug)]
pub struct RowsIter<'a> {
    /// The closed runs not yet started.
    runs: &'a [u8],
    /// The open run, read after the closed ones.
    open: (u32, u32),
    /// One past the last position of the run read last.
    end: i64,
    next: u32,
    left_in_run: u32,
    left: usize,
}

impl Iterator for RowsIter<'_> {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        if self.left_in_run == 0 {
            if self.left == 0 {
                return None;
            }
            let (start, n) = match (take(&mut self.runs), take(&mut self.runs)) {
                (Some(gap), Some(n)) => {
                    let gap = (gap >> 1) as i64 ^ -((gap & 1) as i64);
                    ((self.end + gap) as u32, n as u32 + 1)
                }
                _ => std::mem::take(&mut self.open),
            };
            self.next = start;
            self.left_in_run = n;
            self.end = i64::from(start) + i64::from(n);
        }
        let row = self.next;
        self.next = self.next.wrapping_add(1);
        self.left_in_run -= 1;
        self.left -= 1;
        Some(row)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for RowsIter<'_> {}

fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[inline]
fn take(bytes: &mut &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for (i, &b) in bytes.iter().enumerate() {
        v |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            *bytes = &bytes[i + 1..];
            return Some(v);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(state: &mut u64) -> u64 {
        *state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *state >> 33
    }

    #[test]
    fn positions_read_back_in_the_order_pushed() {
        let mut state = 7;
        let cases: Vec<Vec<u32>> = vec![
            vec![],
            vec![0],
            vec![u32::MAX],
            vec![5, 6, 7, 8],
            vec![9, 3, 4, 5, 0, u32::MAX, u32::MAX - 1, 1, 1, 2],
            (0..100_000).collect(),
            (0..50_000).map(|i| i * 2).collect(),
            (0..20_000).rev().collect(),
            (0..30_000).map(|_| lcg(&mut state) as u32).collect(),
            (0..30_000)
                .scan(0u32, |at, _| {
                    *at +=
                        1 + lcg(&mut state).is_multiple_of(4) as u32 * (lcg(&mut state) as u32 % 9);
                    Some(*at)
                })
                .collect(),
        ];
        for case in cases {
            let rows: Rows = case.iter().copied().collect();
            assert_eq!(rows.len(), case.len());
            assert_eq!(rows.first(), case.first().copied());
            assert_eq!(rows.last(), case.last().copied());
            assert_eq!(rows.iter().len(), case.len());
            assert_eq!(rows.iter().collect::<Vec<_>>(), case);
            // Pushed one at a time and read while the last run is still open.
            let mut open = Rows::new();
            for (i, &row) in case.iter().enumerate() {
                open.push(row);
                if i % 7_001 == 0 {
                    assert_eq!(open.iter().collect::<Vec<_>>(), case[..=i]);
                }
            }
            assert_eq!(open.iter().collect::<Vec<_>>(), case);
        }
    }

    #[test]
    fn runs_cost_bytes_per_run_not_per_row() {
        let contiguous: Rows = (0..1_000_000).collect();
        assert!(contiguous.runs.is_empty(), "one open run");
        // Two processes' samples interleaved in bursts of 16.
        let interleaved: Rows = (0..1_000_000u32).filter(|i| (i / 16) % 2 == 0).collect();
        assert_eq!(interleaved.len(), 500_000);
        assert!(
            interleaved.runs.len() <= 2 * 500_000 / 16,
            "{}",
            interleaved.runs.len()
        );
    }
}
