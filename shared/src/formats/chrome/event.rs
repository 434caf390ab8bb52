//! One trace event as written, its fields borrowed from the document's bytes, and the
//! numbers in it read as trace_processor reads them.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

/// A trace event. Fields the decoder does not use are skipped unread; `args` is parsed only
/// when kept.
#[derive(Deserialize)]
pub(super) struct RawEvent<'a> {
    #[serde(borrow, default)]
    pub name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub cat: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub ph: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub ts: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub dur: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub pid: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub tid: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub args: Option<&'a RawValue>,
    /// An instant's scope.
    #[serde(borrow, default)]
    pub s: Option<Cow<'a, str>>,
}

/// The text of a number, or of a string holding one (`"pid": "12"`).
fn number_text(raw: &RawValue) -> &str {
    let text = raw.get();
    text.strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text)
}

/// Microseconds (`ts`, `dur`) as nanoseconds: integers exactly, fractions rounded to the
/// nearest ns. `None` for what is no number or out of range.
pub(super) fn micros_to_ns(raw: &RawValue) -> Option<i64> {
    let text = number_text(raw);
    if let Ok(us) = text.parse::<i64>() {
        return us.checked_mul(1000);
    }
    let us: f64 = text.parse().ok()?;
    let ns = (us * 1000.0).round();
    (ns.is_finite() && ns.abs() < 9.2e18).then_some(ns as i64)
}

/// A process or thread id: an integer, or a string holding one. `None` otherwise.
pub(super) fn id(raw: &RawValue) -> Option<i64> {
    let text = number_text(raw);
    text.parse::<i64>().ok().or_else(|| {
        let f: f64 = text.parse().ok()?;
        (f.fract() == 0.0 && f.abs() < 9.2e18).then_some(f as i64)
    })
}

#[cfg(test)]
mod tests {
    use super::{id, micros_to_ns};
    use serde_json::value::RawValue;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_owned()).unwrap()
    }

    #[test]
    fn timestamps_are_exact_for_integers_and_rounded_for_fractions() {
        assert_eq!(micros_to_ns(&raw("1234567")), Some(1_234_567_000));
        assert_eq!(micros_to_ns(&raw("1.0005")), Some(1001));
        assert_eq!(micros_to_ns(&raw("\"12\"")), Some(12_000));
        assert_eq!(micros_to_ns(&raw("-3")), Some(-3000));
        assert_eq!(micros_to_ns(&raw("1e300")), None);
        assert_eq!(micros_to_ns(&raw("\"x\"")), None);
        assert_eq!(micros_to_ns(&raw("9223372036854775807")), None);
    }

    #[test]
    fn ids_are_integers_or_strings_of_them() {
        assert_eq!(id(&raw("42")), Some(42));
        assert_eq!(id(&raw("\"-1\"")), Some(-1));
        assert_eq!(id(&raw("7.0")), Some(7));
        assert_eq!(id(&raw("\"Browser\"")), None);
    }
}
