//! A span's `args` as labels: each leaf value under its key, objects flattened with dotted
//! keys two levels deep (`data.url`), integers as numbers and everything else as text,
//! bounded per span.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::model::{Label, LabelSetHandle, LabelValue, Profile};

/// What the stats call args that are not kept.
pub(super) mod stat {
    /// Past `max_span_args` for one span.
    pub const DROPPED: &str = "span_args_dropped";
    /// Arrays, objects nested deeper than two levels, and strings longer than
    /// `max_string_bytes`.
    pub const SKIPPED: &str = "span_args_skipped";
}

/// Reads args into labels, reusing its buffers from span to span.
pub(super) struct Args {
    labels: Vec<Label>,
    key: String,
    max_args: usize,
    max_string: usize,
}

impl Args {
    pub(super) fn new(max_args: u64, max_string: u64) -> Args {
        Args {
            labels: Vec::new(),
            key: String::new(),
            max_args: usize::try_from(max_args).unwrap_or(usize::MAX),
            max_string: usize::try_from(max_string).unwrap_or(usize::MAX),
        }
    }

    /// The label set of `args` (an object; anything else has no labels).
    pub(super) fn labels(
        &mut self,
        args: &RawValue,
        profile: &mut Profile,
    ) -> Option<LabelSetHandle> {
        self.labels.clear();
        self.key.clear();
        let mut de = serde_json::Deserializer::from_str(args.get());
        // An args value that is no object, or a malformed one, gives no labels: the event's
        // time and name are what matter, and the document parsed as JSON already.
        let _ = Level {
            args: self,
            profile,
            depth: 0,
        }
        .deserialize(&mut de);
        profile.add_label_set(&self.labels)
    }

    fn push(&mut self, profile: &mut Profile, value: LabelValue) {
        if self.labels.len() >= self.max_args {
            profile.count(stat::DROPPED);
            return;
        }
        let key = profile.intern(&self.key);
        self.labels.push(Label { key, value });
    }
}

/// One object level of args: `depth` 0 is `args` itself.
struct Level<'a, 'p> {
    args: &'a mut Args,
    profile: &'p mut Profile,
    depth: u8,
}

impl<'de> DeserializeSeed<'de> for Level<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Level<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let len = self.args.key.len();
            if self.depth > 0 {
                self.args.key.push('.');
            }
            self.args.key.push_str(&key);
            map.next_value_seed(Leaf {
                args: &mut *self.args,
                profile: &mut *self.profile,
                depth: self.depth,
            })?;
            self.args.key.truncate(len);
        }
        Ok(())
    }
}

/// The value under one key.
struct Leaf<'a, 'p> {
    args: &'a mut Args,
    profile: &'p mut Profile,
    depth: u8,
}

impl<'de> DeserializeSeed<'de> for Leaf<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl Leaf<'_, '_> {
    fn text(self, text: &str) {
        if text.len() > self.args.max_string {
            self.profile.count(stat::SKIPPED);
            return;
        }
        let value = LabelValue::Str(self.profile.intern(text));
        self.args.push(self.profile, value);
    }
}

impl<'de> Visitor<'de> for Leaf<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an args value")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<(), E> {
        self.text(v);
        Ok(())
    }

    fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<(), E> {
        self.args
            .push(self.profile, LabelValue::Num { value, unit: None });
        Ok(())
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<(), E> {
        match i64::try_from(v) {
            Ok(v) => self.visit_i64(v),
            Err(_) => self.visit_str(&v.to_string()),
        }
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<(), E> {
        let mut buf = ryu_like(v);
        if buf.ends_with(".0") {
            buf.truncate(buf.len() - 2);
        }
        self.text(&buf);
        Ok(())
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<(), E> {
        self.text(if v { "true" } else { "false" });
        Ok(())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.profile.count(stat::SKIPPED);
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        if self.depth >= 1 {
            self.profile.count(stat::SKIPPED);
            return IgnoredAny.visit_map(map).map(|_| ());
        }
        Level {
            args: self.args,
            profile: self.profile,
            depth: self.depth + 1,
        }
        .visit_map(map)
    }
}

/// A float as JSON writes it (the shortest text that reads back as the same number).
fn ryu_like(v: f64) -> String {
    serde_json::Number::from_f64(v).map_or_else(|| v.to_string(), |n| n.to_string())
}

#[cfg(test)]
mod tests {
    use super::Args;
    use crate::model::{LabelValue, Profile};
    use serde_json::value::RawValue;

    fn labels(json: &str, max: u64) -> (Vec<(String, String)>, Profile) {
        let mut p = Profile::new("test");
        let raw = RawValue::from_string(json.to_owned()).unwrap();
        let set = Args::new(max, 16).labels(&raw, &mut p);
        let out = set
            .map(|s| p.label_set(s).to_vec())
            .unwrap_or_default()
            .into_iter()
            .map(|l| {
                let v = match l.value {
                    LabelValue::Str(s) => p.str(s).to_owned(),
                    LabelValue::Num { value, .. } => format!("#{value}"),
                };
                (p.str(l.key).to_owned(), v)
            })
            .collect();
        (out, p)
    }

    #[test]
    fn leaves_become_labels_under_dotted_keys() {
        let (got, p) = labels(
            r#"{"model": "m1", "ttft_ms": 812, "cost": 0.25, "ok": true, "none": null,
                "data": {"url": "u", "deep": {"x": 1}}, "list": [1, 2], "long": "0123456789abcdefXYZ"}"#,
            64,
        );
        let want = [
            ("model", "m1"),
            ("ttft_ms", "#812"),
            ("cost", "0.25"),
            ("ok", "true"),
            ("data.url", "u"),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(got, want);
        assert_eq!(p.stats["span_args_skipped"], 3);
    }

    #[test]
    fn args_past_the_bound_are_dropped_and_counted() {
        let (got, p) = labels(r#"{"a": 1, "b": 2, "c": 3}"#, 2);
        assert_eq!(got.len(), 2);
        assert_eq!(p.stats["span_args_dropped"], 1);
    }
}
