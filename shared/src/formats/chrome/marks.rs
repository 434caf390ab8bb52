//! Instants (`i`, `I`, `R`) and counters (`C`) as the model's marks: an instant is one mark
//! with its scope and args, a counter event one mark per numeric arg, keyed by the arg's
//! name, as catapult draws one series per key.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::event::RawEvent;
use crate::error::Result;
use crate::limits::exceeded;
use crate::model::{LabelSetHandle, Mark, MarkKind, MarkScope, Profile, ThreadHandle};

/// The marks added so far, bounded, and what the stats say of them at the end.
pub(super) struct Marks {
    /// `max_samples`: marks are as many as the events, so they take the samples' bound.
    max: u64,
    instants: u64,
    counters: u64,
    args_skipped: u64,
    /// The name of the counter being read, `<name> <id>` when the event has an id.
    name: String,
}

impl Marks {
    pub(super) fn new(max: u64) -> Self {
        Marks {
            max,
            instants: 0,
            counters: 0,
            args_skipped: 0,
            name: String::new(),
        }
    }

    fn add(&mut self, profile: &mut Profile, mark: Mark) -> Result<()> {
        if self.instants + self.counters >= self.max {
            return Err(exceeded("max_samples", self.max));
        }
        match mark.kind {
            MarkKind::Instant => self.instants += 1,
            MarkKind::Counter => self.counters += 1,
        }
        profile.add_mark(mark);
        Ok(())
    }

    /// An instant event at `time` on `thread`, its args as `labels`. `i` and `I` are
    /// thread-scoped unless `s` says otherwise; `R` (a navigation mark) has no scope.
    pub(super) fn instant(
        &mut self,
        profile: &mut Profile,
        e: &RawEvent<'_>,
        (time, thread): (i64, ThreadHandle),
        labels: Option<LabelSetHandle>,
    ) -> Result<()> {
        let scope = match e.s.as_deref() {
            Some(s) => MarkScope::from_letter(s),
            None if e.ph.as_deref() != Some("R") => Some(MarkScope::Thread),
            None => None,
        };
        let mark = Mark {
            time,
            thread,
            kind: MarkKind::Instant,
            name: profile.intern(e.name.as_deref().unwrap_or("")),
            category: category(profile, e),
            key: None,
            value: None,
            scope,
            labels,
        };
        self.add(profile, mark)
    }

    /// A counter event at `time` on `thread`: a mark per numeric arg; other args are counted.
    pub(super) fn counter(
        &mut self,
        profile: &mut Profile,
        e: &RawEvent<'_>,
        (time, thread): (i64, ThreadHandle),
    ) -> Result<()> {
        self.name.clear();
        self.name.push_str(e.name.as_deref().unwrap_or(""));
        if let Some(id) = e.id {
            let id = id.get();
            let id = id
                .strip_prefix('"')
                .and_then(|i| i.strip_suffix('"'))
                .unwrap_or(id);
            self.name.push(' ');
            self.name.push_str(id);
        }
        let name = profile.intern(&self.name);
        let category = category(profile, e);
        let Some(args) = e.args else { return Ok(()) };
        let template = Mark {
            time,
            thread,
            kind: MarkKind::Counter,
            name,
            category,
            key: None,
            value: None,
            scope: None,
            labels: None,
        };
        let mut failed = None;
        let mut de = serde_json::Deserializer::from_str(args.get());
        // Args that are no object have no values; the document parsed as JSON already.
        let _ = de.deserialize_map(CounterArgs {
            marks: self,
            profile,
            template,
            failed: &mut failed,
        });
        failed.map_or(Ok(()), Err)
    }

    /// Says in the stats how many marks were added and how many counter args were not.
    pub(super) fn finish(self, profile: &mut Profile) {
        let counts = [
            ("chrome_instants", self.instants),
            ("chrome_counters", self.counters),
            ("chrome_counter_args_skipped", self.args_skipped),
        ];
        for (stat, n) in counts {
            if n > 0 {
                *profile.stats.entry(stat).or_default() += n;
            }
        }
    }
}

fn category(profile: &mut Profile, e: &RawEvent<'_>) -> Option<crate::model::StringHandle> {
    e.cat
        .as_deref()
        .filter(|c| !c.is_empty())
        .map(|c| profile.intern(c))
}

/// Reads a counter's args object: each numeric value becomes a mark keyed by its arg, as it
/// is read; the first error stops the reading and is kept in `failed`.
struct CounterArgs<'m> {
    marks: &'m mut Marks,
    profile: &'m mut Profile,
    template: Mark,
    failed: &'m mut Option<crate::Error>,
}

impl<'de> Visitor<'de> for CounterArgs<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an args object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            let Numeric(value) = map.next_value()?;
            let Some(value) = value else {
                self.marks.args_skipped += 1;
                continue;
            };
            let mark = Mark {
                key: Some(self.profile.intern(&key)),
                value: Some(value),
                ..self.template
            };
            if let Err(e) = self.marks.add(self.profile, mark) {
                *self.failed = Some(e);
                return Err(serde::de::Error::custom("stopped at a limit"));
            }
        }
        Ok(())
    }
}

/// A JSON value, read as its number when it is one; finite numbers only.
struct Numeric(Option<f64>);

impl<'de> Deserialize<'de> for Numeric {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NumericVisitor)
    }
}

struct NumericVisitor;

impl<'de> Visitor<'de> for NumericVisitor {
    type Value = Numeric;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_i64<E>(self, v: i64) -> Result<Numeric, E> {
        Ok(Numeric(Some(v as f64)))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Numeric, E> {
        Ok(Numeric(Some(v as f64)))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Numeric, E> {
        Ok(Numeric(v.is_finite().then_some(v)))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Numeric, E> {
        Ok(Numeric(None))
    }

    fn visit_str<E>(self, _: &str) -> Result<Numeric, E> {
        Ok(Numeric(None))
    }

    fn visit_unit<E>(self) -> Result<Numeric, E> {
        Ok(Numeric(None))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Numeric, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Numeric(None))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Numeric, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Numeric(None))
    }
}
