//! A record's first line, as `perf script` prints it:
//! `comm pid/tid [cpu] seconds.fraction: period event: rest`, where every field but the
//! time may be missing (`-F` picks them), the comm may hold spaces, and `rest` is a
//! tracepoint's text or, without `-g`, the sampled frame.

/// Most decimals a time may have: perf prints 6 (µs), or 9 with `--ns`.
const MAX_TIME_DECIMALS: usize = 9;

/// The fields of one header line, borrowed from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Header<'a> {
    /// The command name (empty when not printed). perf cuts it at 15 bytes.
    pub comm: &'a str,
    /// The process id, printed only with the thread id as `pid/tid`.
    pub pid: Option<i64>,
    /// The thread id: a lone number is the thread id, as perf prints `tid` by default (and
    /// trace_processor reads it so).
    pub tid: Option<i64>,
    pub cpu: Option<u32>,
    /// Nanoseconds on perf's clock (seconds since boot, `perf_clock`).
    pub time: i64,
    pub period: Option<u64>,
    /// The event's name without its final `:` (`cpu-clock`, `cycles:u`, `sched:sched_switch`).
    pub event: Option<&'a str>,
    /// What follows the event, trimmed: a tracepoint's text, or a frame without `-g`.
    pub rest: &'a str,
}

/// Parses a header line; `None` when it is none. The time is the first token of the form
/// `DIGITS.DIGITS:` whose preceding fields parse, so a comm that looks like a time cannot
/// take its place.
pub(super) fn parse(line: &str) -> Option<Header<'_>> {
    let mut from = 0;
    while let Some(i) = line[from..].find(':') {
        let colon = from + i;
        from = colon + 1;
        let before = &line[..colon];
        let start = before.rfind([' ', '\t']).map_or(0, |s| s + 1);
        let Some(time) = time_ns(&before[start..]) else {
            continue;
        };
        let Some((comm, pid, tid, cpu)) = who(&before[..start]) else {
            continue;
        };
        let (period, event, rest) = after_time(&line[colon + 1..]);
        return Some(Header {
            comm,
            pid,
            tid,
            cpu,
            time,
            period,
            event,
            rest,
        });
    }
    None
}

/// The fields before the time: comm, then `pid/tid` or one id, then `[cpu]`, each optional.
#[allow(clippy::type_complexity)]
fn who(text: &str) -> Option<(&str, Option<i64>, Option<i64>, Option<u32>)> {
    let mut text = text.trim_end_matches([' ', '\t']);
    let mut cpu = None;
    if let Some(open) = text.strip_suffix(']').and_then(|t| t.rfind('[')) {
        let inner = &text[open + 1..text.len() - 1];
        if is_digits(inner) {
            cpu = Some(inner.parse().ok()?);
            text = text[..open].trim_end_matches([' ', '\t']);
        }
    }
    let start = text.rfind([' ', '\t']).map_or(0, |s| s + 1);
    let ids = &text[start..];
    let (pid, tid) = match ids.split_once('/') {
        Some((pid, tid)) if is_digits(pid) && is_digits(tid) => {
            (Some(pid.parse().ok()?), Some(tid.parse().ok()?))
        }
        None if is_digits(ids) => (None, Some(ids.parse().ok()?)),
        // A comm with neither id: the whole text is the comm.
        _ => return Some((text.trim(), None, None, cpu)),
    };
    Some((text[..start].trim(), pid, tid, cpu))
}

/// The period, the event and what follows them, from the text after the time's `:`.
fn after_time(text: &str) -> (Option<u64>, Option<&str>, &str) {
    let mut rest = text.trim_start_matches([' ', '\t']);
    let mut period = None;
    let (token, after) = split_token(rest);
    if is_digits(token) {
        if let Ok(p) = token.parse() {
            period = Some(p);
            rest = after;
        }
    }
    let (token, after) = split_token(rest);
    let event = token.strip_suffix(':').filter(|e| !e.is_empty());
    if event.is_some() {
        rest = after;
    }
    (period, event, rest.trim_matches([' ', '\t']))
}

/// The first whitespace-separated token and the text after it.
fn split_token(text: &str) -> (&str, &str) {
    let text = text.trim_start_matches([' ', '\t']);
    match text.find([' ', '\t']) {
        Some(i) => (&text[..i], &text[i..]),
        None => (text, ""),
    }
}

/// `SECONDS.FRACTION` as nanoseconds, exactly: no float rounding.
pub(super) fn time_ns(token: &str) -> Option<i64> {
    let (whole, fraction) = token.split_once('.')?;
    if !is_digits(whole) || !is_digits(fraction) || fraction.len() > MAX_TIME_DECIMALS {
        return None;
    }
    let seconds: i64 = whole.parse().ok()?;
    let scale = 10i64.pow((MAX_TIME_DECIMALS - fraction.len()) as u32);
    let nanos = fraction.parse::<i64>().ok()? * scale;
    seconds.checked_mul(1_000_000_000)?.checked_add(nanos)
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fields_perf_prints_by_default() {
        let h = parse("simple-terminat    10 198792.736893:    1001001 cpu-clock:").unwrap();
        assert_eq!(
            (h.comm, h.pid, h.tid, h.cpu, h.time, h.period, h.event, h.rest),
            (
                "simple-terminat",
                None,
                Some(10),
                None,
                198_792_736_893_000,
                Some(1_001_001),
                Some("cpu-clock"),
                ""
            )
        );
        let h = parse("forks     9 [002] 203265.377019:    1001001 cpu-clock: ").unwrap();
        assert_eq!((h.comm, h.tid, h.cpu), ("forks", Some(9), Some(2)));
        let h = parse("perf 83220/83220 36556.170907:          1 cycles: ").unwrap();
        assert_eq!(
            (h.pid, h.tid, h.period, h.event),
            (Some(83220), Some(83220), Some(1), Some("cycles"))
        );
        let h = parse("trace    6061 150520.991529:   16949152 task-clock:ppp: ").unwrap();
        assert_eq!(h.event, Some("task-clock:ppp"));
    }

    #[test]
    fn comms_with_spaces_tracepoints_and_missing_fields() {
        let h = parse("V8 WorkerThread 25607 4794564.109216: cycles:").unwrap();
        assert_eq!(
            (h.comm, h.tid, h.period, h.event),
            ("V8 WorkerThread", Some(25607), None, Some("cycles"))
        );
        let h = parse("    kworker/0:1 5 [000] 12.5: sched:sched_switch: prev_comm=a prev_pid=5 ==> next_comm=b").unwrap();
        assert_eq!(
            (h.comm, h.tid, h.time),
            ("kworker/0:1", Some(5), 12_500_000_000)
        );
        assert_eq!(
            (h.event, h.rest),
            (
                Some("sched:sched_switch"),
                "prev_comm=a prev_pid=5 ==> next_comm=b"
            )
        );
        let h = parse("a 1 2.000000001: ").unwrap();
        assert_eq!((h.time, h.event), (2_000_000_001, None));
        let h = parse("12.5: 3 cpu-clock:  4005f6 main+0x16 (/tmp/a.out)").unwrap();
        assert_eq!(
            (h.comm, h.tid, h.period, h.rest),
            ("", None, Some(3), "4005f6 main+0x16 (/tmp/a.out)")
        );
    }

    #[test]
    fn lines_that_are_no_header() {
        for line in [
            "a;b 1",
            "\t 643 _Z4betav (/workdir/x)",
            "# perf version : 4.15",
            "a 1 2.: x:",
            "a 1 .5: x:",
            "a 1 1.0123456789: x:",
        ] {
            assert_eq!(parse(line), None, "{line}");
        }
        assert_eq!(time_ns("99999999999.5"), None, "out of range");
    }
}
