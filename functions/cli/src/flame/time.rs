//! Times as people type them for a flame graph's range: RFC 3339 (`2026-11-22T10:00:00Z`) or
//! Unix seconds (`1763800000`, `1763800000.25`). Exact integer arithmetic, no calendar crate:
//! only the proleptic Gregorian calendar in UTC is needed.

const NS_PER_SECOND: i64 = 1_000_000_000;

/// Parses an RFC 3339 time (`Z` or a `±HH:MM` offset, optional fraction) or Unix seconds into
/// ns since the Unix epoch. `None` when the text is neither or out of range.
pub fn parse_time_ns(text: &str) -> Option<i64> {
    let text = text.trim();
    if text.contains(['T', 't', ' ']) || text.matches('-').count() >= 2 {
        parse_rfc3339(text)
    } else {
        parse_unix_seconds(text)
    }
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `digits` as a number, only when it is exactly `len` ASCII digits.
fn fixed(digits: &str, len: usize) -> Option<i64> {
    (digits.len() == len && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// A fraction's digits as ns (digits past the ninth are dropped).
fn fraction_ns(digits: &str) -> Option<i64> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let kept = &digits[..digits.len().min(9)];
    let value: i64 = kept.parse().ok()?;
    Some(value * 10_i64.pow(9 - kept.len() as u32))
}

fn parse_unix_seconds(text: &str) -> Option<i64> {
    let (negative, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (whole, frac) = match body.split_once('.') {
        Some((w, f)) => (w, fraction_ns(f)?),
        None => (body, 0),
    };
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let ns = whole
        .parse::<i64>()
        .ok()?
        .checked_mul(NS_PER_SECOND)?
        .checked_add(frac)?;
    Some(if negative { -ns } else { ns })
}

fn parse_rfc3339(text: &str) -> Option<i64> {
    let (date, rest) = text.split_at_checked(10)?;
    let rest = rest.strip_prefix(['T', 't', ' '])?;
    let mut d = date.split('-');
    let (year, month, day) = (
        fixed(d.next()?, 4)?,
        fixed(d.next()?, 2)?,
        fixed(d.next()?, 2)?,
    );
    if !(1..=12).contains(&month) || !(1..=days_in_month(year, month)).contains(&day) {
        return None;
    }
    // The offset: `Z`, or `+HH:MM` / `-HH:MM` after the seconds.
    let (clock, offset_s) = if let Some(clock) = rest.strip_suffix(['Z', 'z']) {
        (clock, 0)
    } else {
        let at = rest.rfind(['+', '-'])?;
        let (clock, offset) = rest.split_at(at);
        let sign = if offset.starts_with('-') { -1 } else { 1 };
        let (h, m) = offset[1..].split_once(':')?;
        let (h, m) = (fixed(h, 2)?, fixed(m, 2)?);
        if h > 23 || m > 59 {
            return None;
        }
        (clock, sign * (h * 3600 + m * 60))
    };
    let (hms, frac) = match clock.split_once('.') {
        Some((hms, f)) => (hms, fraction_ns(f)?),
        None => (clock, 0),
    };
    let mut t = hms.split(':');
    let (h, m, s) = (
        fixed(t.next()?, 2)?,
        fixed(t.next()?, 2)?,
        fixed(t.next()?, 2)?,
    );
    // 60 is a leap second; it is read as the next second's start, as most systems do.
    if t.next().is_some() || h > 23 || m > 59 || s > 60 {
        return None;
    }
    let seconds = days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + s - offset_s;
    seconds.checked_mul(NS_PER_SECOND)?.checked_add(frac)
}

/// Days from 1970-01-01 to a date (negative before it), proleptic Gregorian: Howard
/// Hinnant's algorithm, in 400-year eras of 146,097 days.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rfc3339() {
        // py-spy sample's metadata timestamp, 1763800000 = 2025-11-22T08:26:40Z.
        assert_eq!(
            parse_time_ns("2025-11-22T08:26:40Z"),
            Some(1_763_800_000 * NS_PER_SECOND)
        );
        assert_eq!(parse_time_ns("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_time_ns("2025-11-22T10:26:40.25+02:00"),
            Some(1_763_800_000 * NS_PER_SECOND + 250_000_000)
        );
        assert_eq!(
            parse_time_ns("2024-02-29T00:00:00Z"),
            Some(1_709_164_800 * NS_PER_SECOND)
        );
        assert_eq!(parse_time_ns("1969-12-31T23:59:59Z"), Some(-NS_PER_SECOND));
    }

    #[test]
    fn reads_unix_seconds() {
        assert_eq!(
            parse_time_ns("1763800000"),
            Some(1_763_800_000 * NS_PER_SECOND)
        );
        assert_eq!(
            parse_time_ns("1763800000.5"),
            Some(1_763_800_000 * NS_PER_SECOND + 500_000_000)
        );
        assert_eq!(parse_time_ns("0.000000001"), Some(1));
    }

    #[test]
    fn rejects_what_is_not_a_time() {
        for bad in [
            "",
            "yesterday",
            "2025-13-01T00:00:00Z",
            "2025-02-29T00:00:00Z",
            "2025-11-22T24:00:00Z",
            "2025-11-22T08:26:40",
            "2025-11-22",
            "12.x",
            "1e9",
            "99999999999999999999",
        ] {
            assert_eq!(parse_time_ns(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn parses_to_the_nanosecond() {
        for (text, ns) in [
            ("2025-11-22T08:26:40Z", 1_763_800_000_000_000_000),
            ("1970-01-01T00:00:00Z", 0),
            ("1969-12-31T23:59:59.5Z", -500_000_000),
            ("2024-02-29T23:59:59.000000001Z", 1_709_251_199_000_000_001),
            ("2000-03-01T00:00:00Z", 951_868_800_000_000_000),
        ] {
            assert_eq!(parse_time_ns(text), Some(ns), "{text}");
        }
    }
}
