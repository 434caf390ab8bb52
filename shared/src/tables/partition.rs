//! The `dt=YYYY-MM-DD` partitions: UTC days, counted from the Unix epoch.

use crate::calendar::civil_from_days;

const DAY_US: i64 = 86_400_000_000;

/// Days since 1970-01-01 of a UTC microsecond time (negative before).
pub(super) fn day_of_us(us: i64) -> i64 {
    us.div_euclid(DAY_US)
}

/// `YYYY-MM-DD` of a day since the epoch, as the `dt` partition names it.
pub(super) fn dt(days: i64) -> String {
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_of_known_days() {
        assert_eq!(dt(0), "1970-01-01");
        assert_eq!(dt(-1), "1969-12-31");
        assert_eq!(dt(11_016), "2000-02-29");
        assert_eq!(dt(11_017), "2000-03-01");
        assert_eq!(dt(19_782), "2024-02-29");
        assert_eq!(dt(20_454), "2026-01-01");
        // 2023-11-14T22:13:20Z
        assert_eq!(dt(day_of_us(1_700_000_000_000_000)), "2023-11-14");
        assert_eq!(day_of_us(-1), -1);
    }
}
