//! The `dt=YYYY-MM-DD` partitions: UTC days, counted from the Unix epoch.

const DAY_US: i64 = 86_400_000_000;

/// Days since 1970-01-01 of a UTC microsecond time (negative before).
pub(super) fn day_of_us(us: i64) -> i64 {
    us.div_euclid(DAY_US)
}

/// The proleptic Gregorian date of a day since the epoch: Howard Hinnant's
/// `civil_from_days`, which works in 400-year eras of 146,097 days.
pub(super) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365], from March 1st
    let mp = (5 * doy + 2) / 153; // [0, 11], March = 0
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
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

    #[test]
    fn consecutive_days_are_consecutive_dates() {
        // Every day for 800 years around the epoch: the day of month steps by one, or wraps
        // to 1 at the month's real length with the month (and year) stepping.
        let month_len = |y: i64, m: u32| match m {
            2 if y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        };
        let mut prev = civil_from_days(-146_097);
        for days in -146_096..146_097 {
            let next = civil_from_days(days);
            let (py, pm, pd) = prev;
            let wraps = pd == month_len(py, pm);
            let ok = (!wraps && next == (py, pm, pd + 1))
                || (wraps && pm < 12 && next == (py, pm + 1, 1))
                || (wraps && pm == 12 && next == (py + 1, 1, 1));
            assert!(ok, "{prev:?} -> {next:?}");
            prev = next;
        }
    }
}
