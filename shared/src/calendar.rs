//! UTC calendar arithmetic (proleptic Gregorian, exact integers): what partition names, time
//! parsing and summaries need, without a calendar crate. Howard Hinnant's day algorithms,
//! which work in 400-year eras of 146,097 days.

/// Days from 1970-01-01 to the given date (negative before it).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date `(year, month, day)` of a day number (days since 1970-01-01).
pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
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

/// `YYYY-MM-DDTHH:MM:SS` of whole seconds since the epoch.
pub fn utc_seconds(seconds: i64) -> String {
    let (days, rest) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    let (y, mo, d) = civil_from_days(days);
    format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// RFC 3339 UTC of ns since the epoch, with a fraction only when there is one, to the last
/// digit that is not zero (`2026-11-22T10:00:00Z`, `2026-11-22T10:00:00.5Z`): how messages and
/// titles show a time the user gave.
pub fn utc_time(ns: i64) -> String {
    let (seconds, frac) = (ns.div_euclid(1_000_000_000), ns.rem_euclid(1_000_000_000));
    let mut out = utc_seconds(seconds);
    if frac != 0 {
        let digits = format!("{frac:09}");
        out.push('.');
        out.push_str(digits.trim_end_matches('0'));
    }
    out.push('Z');
    out
}

/// RFC 3339 UTC with milliseconds (`2026-11-22T10:00:00.000Z`) of ns since the epoch.
pub fn utc_millis(ns: i64) -> String {
    let millis = ns.rem_euclid(1_000_000_000) / 1_000_000;
    format!("{}.{millis:03}Z", utc_seconds(ns.div_euclid(1_000_000_000)))
}

/// Nanoseconds since the epoch of an RFC 3339 time (`2025-07-30T15:39:37.123Z`, a fraction
/// of up to 9 digits, `Z` or a `±HH:MM` offset), as JavaScript's `toISOString` writes them;
/// `None` for anything else.
pub(crate) fn parse_rfc3339(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let digits = b.get(r)?;
        digits.iter().all(u8::is_ascii_digit).then(|| {
            digits
                .iter()
                .fold(0i64, |n, d| n * 10 + i64::from(d - b'0'))
        })
    };
    let sep = |i: usize, c: &[u8]| b.get(i).is_some_and(|x| c.contains(x));
    if !(sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt ") && sep(13, b":") && sep(16, b":")) {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut i = 19;
    let mut nanos = 0i64;
    if sep(i, b".") {
        let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 || digits > 9 {
            return None;
        }
        nanos = num(i + 1..i + 1 + digits)? * 10i64.pow(9 - digits as u32);
        i += 1 + digits;
    }
    let offset_s = match b.get(i..)? {
        b"Z" | b"z" => 0,
        [sign @ (b'+' | b'-'), ..] if b.len() == i + 6 && sep(i + 3, b":") => {
            let minutes = num(i + 1..i + 3)? * 60 + num(i + 4..i + 6)?;
            if *sign == b'+' {
                minutes * 60
            } else {
                -minutes * 60
            }
        }
        _ => return None,
    };
    let seconds =
        days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset_s;
    seconds.checked_mul(1_000_000_000)?.checked_add(nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_days() {
        for (days, date) in [
            (0, (1970, 1, 1)),
            (-1, (1969, 12, 31)),
            (11_016, (2000, 2, 29)),
            (11_017, (2000, 3, 1)),
            (19_782, (2024, 2, 29)),
            (20_454, (2026, 1, 1)),
        ] {
            assert_eq!(civil_from_days(days), date);
            assert_eq!(days_from_civil(date.0, date.1.into(), date.2.into()), days);
        }
        assert_eq!(
            utc_millis(1_700_000_000_123_456_789),
            "2023-11-14T22:13:20.123Z"
        );
        assert_eq!(utc_millis(-1), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn consecutive_days_are_consecutive_dates() {
        // Every day for 800 years around the epoch: the day of month steps by one, or wraps
        // to 1 at the month's real length with the month (and year) stepping; and the day
        // number comes back.
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
            assert_eq!(days_from_civil(next.0, next.1.into(), next.2.into()), days);
            prev = next;
        }
    }

    #[test]
    fn rfc3339_times_as_javascript_writes_them() {
        use super::parse_rfc3339;
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00.000Z"), Some(0));
        assert_eq!(
            parse_rfc3339("2025-07-30T15:39:37.123Z"),
            Some(1_753_889_977_123_000_000)
        );
        assert_eq!(
            parse_rfc3339("2025-07-30T17:39:37+02:00"),
            Some(1_753_889_977_000_000_000)
        );
        assert_eq!(
            parse_rfc3339("2025-07-30T15:39:37.000000001Z"),
            Some(1_753_889_977_000_000_001)
        );
        for bad in [
            "2025-07-30",
            "2025-13-01T00:00:00Z",
            "2025-07-30T15:39:37",
            "x025-07-30T15:39:37Z",
            "2025-07-30T15:39:37.Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }
}
