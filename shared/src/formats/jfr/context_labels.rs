//! Pyroscope's labels for async-profiler's `contextId`s: the `LabelsSnapshot` its Java agent
//! sends beside a JFR recording (the `labels` part of `/ingest?format=jfr`), read when the
//! recording is received and applied to the samples of each context once it is decoded.

use std::collections::BTreeMap;

use prost::Message;
use rustc_hash::FxHashMap;

use crate::error::{ErrorKind, Result};
use crate::formats::protowire::{Fields, Value};
use crate::limits::{exceeded, Limits};
use crate::model::{Label, LabelSetHandle, LabelValue, Profile};

/// The labels of each context, by context id (in decimal, as JSON keys are strings).
pub(crate) type ContextLabels = BTreeMap<String, BTreeMap<String, String>>;

/// The label key async-profiler's context id is kept under.
const CONTEXT_ID: &str = "contextId";

/// `jfr_labels.proto` of pyroscope-java.
#[derive(Clone, PartialEq, Message)]
struct Context {
    #[prost(btree_map = "int64, int64", tag = "1")]
    labels: BTreeMap<i64, i64>,
}

#[derive(Clone, PartialEq, Message)]
struct LabelsSnapshot {
    #[prost(btree_map = "int64, message", tag = "1")]
    contexts: BTreeMap<i64, Context>,
    #[prost(btree_map = "int64, string", tag = "2")]
    strings: BTreeMap<i64, String>,
}

fn malformed(what: String) -> crate::error::Error {
    ErrorKind::Malformed {
        format: "labels-snapshot",
        offset: 0,
        what,
    }
    .into()
}

/// How many map entries a snapshot holds, counted on the wire before it is decoded: the
/// contexts, the strings and every context's labels.
fn entries(bytes: &[u8]) -> Result<u64> {
    let wire = |e| malformed(format!("not a LabelsSnapshot: {e}"));
    let mut n = 0u64;
    for field in Fields::new(bytes, 0) {
        let field = field.map_err(wire)?;
        n += 1;
        if let (1, Value::Len(entry)) = (field.number, field.value) {
            for inner in Fields::new(entry, 0) {
                let inner = inner.map_err(wire)?;
                if let (2, Value::Len(context)) = (inner.number, inner.value) {
                    n += Fields::new(context, 0).count() as u64;
                }
            }
        }
    }
    Ok(n)
}

/// Reads a `LabelsSnapshot` into each context's labels (a string id no string names is
/// left out).
pub(crate) fn read_snapshot(bytes: &[u8], limits: &Limits) -> Result<ContextLabels> {
    if entries(bytes)? > limits.max_table_entries {
        return Err(exceeded("max_table_entries", limits.max_table_entries));
    }
    let snapshot = LabelsSnapshot::decode(bytes)
        .map_err(|e| malformed(format!("not a LabelsSnapshot: {e}")))?;
    if snapshot
        .strings
        .values()
        .any(|s| s.len() as u64 > limits.max_string_bytes)
    {
        return Err(exceeded("max_string_bytes", limits.max_string_bytes));
    }
    let text = |id: &i64| snapshot.strings.get(id).cloned();
    Ok(snapshot
        .contexts
        .iter()
        .map(|(id, context)| {
            let labels = context
                .labels
                .iter()
                .filter_map(|(k, v)| Some((text(k)?, text(v)?)))
                .collect();
            (id.to_string(), labels)
        })
        .collect())
}

/// Gives every sample labelled with a `contextId` that `contexts` knows that context's labels
/// too. Each distinct label set is rewritten once.
pub(crate) fn apply(profile: &mut Profile, contexts: &ContextLabels) {
    if contexts.is_empty() {
        return;
    }
    let by_id: FxHashMap<i64, &BTreeMap<String, String>> = contexts
        .iter()
        .filter_map(|(id, labels)| Some((id.parse().ok()?, labels)))
        .collect();
    let mut rewritten: FxHashMap<LabelSetHandle, Option<LabelSetHandle>> = FxHashMap::default();
    for i in 0..profile.samples().len() {
        let Some(set) = profile.samples().labels(i) else {
            continue;
        };
        let new = match rewritten.get(&set) {
            Some(&new) => new,
            None => {
                let new = with_context(profile, set, &by_id);
                rewritten.insert(set, new);
                new
            }
        };
        if let Some(new) = new {
            profile.set_sample_labels(i, Some(new));
        }
    }
}

/// What [`apply`] would make of each label set of `profile` that has a context `contexts`
/// knows, for samples that are not in the model yet (a second pass's): the set it becomes,
/// by the set it was. Empty when no set changes.
pub(crate) fn relabeling(
    profile: &mut Profile,
    contexts: &ContextLabels,
) -> FxHashMap<LabelSetHandle, LabelSetHandle> {
    let mut relabeled = FxHashMap::default();
    if contexts.is_empty() {
        return relabeled;
    }
    let by_id: FxHashMap<i64, &BTreeMap<String, String>> = contexts
        .iter()
        .filter_map(|(id, labels)| Some((id.parse().ok()?, labels)))
        .collect();
    // The sets there are now: those made here are not looked at again.
    let sets: Vec<LabelSetHandle> = profile.label_sets().map(|(set, _)| set).collect();
    for set in sets {
        if let Some(new) = with_context(profile, set, &by_id) {
            relabeled.insert(set, new);
        }
    }
    relabeled
}

/// `set` with its context's labels added, if it has a context `by_id` knows.
fn with_context(
    profile: &mut Profile,
    set: LabelSetHandle,
    by_id: &FxHashMap<i64, &BTreeMap<String, String>>,
) -> Option<LabelSetHandle> {
    let labels = profile.label_set(set).to_vec();
    let context = labels.iter().find_map(|l| match l.value {
        LabelValue::Num { value, .. } if profile.str(l.key) == CONTEXT_ID => Some(value),
        _ => None,
    })?;
    let extra = by_id.get(&context)?;
    let mut labels = labels;
    for (k, v) in extra.iter() {
        let key = profile.intern(k);
        let value = LabelValue::Str(profile.intern(v));
        labels.push(Label { key, value });
    }
    profile.add_label_set(&labels)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot() -> Vec<u8> {
        LabelsSnapshot {
            contexts: BTreeMap::from([
                (
                    7,
                    Context {
                        labels: BTreeMap::from([(1, 2), (3, 4)]),
                    },
                ),
                (
                    8,
                    Context {
                        labels: BTreeMap::from([(1, 99)]),
                    },
                ),
            ]),
            strings: BTreeMap::from([
                (1, "span_name".to_owned()),
                (2, "checkout".to_owned()),
                (3, "user".to_owned()),
                (4, "u1".to_owned()),
            ]),
        }
        .encode_to_vec()
    }

    #[test]
    fn a_snapshot_reads_into_each_contexts_labels() {
        let contexts = read_snapshot(&snapshot(), &Limits::default()).unwrap();
        let want: ContextLabels = BTreeMap::from([
            (
                "7".to_owned(),
                BTreeMap::from([
                    ("span_name".to_owned(), "checkout".to_owned()),
                    ("user".to_owned(), "u1".to_owned()),
                ]),
            ),
            ("8".to_owned(), BTreeMap::new()),
        ]);
        assert_eq!(contexts, want);
        // 2 contexts, 4 strings, 3 labels.
        assert_eq!(entries(&snapshot()).unwrap(), 9);
        let limits = Limits {
            max_table_entries: 8,
            ..Limits::default()
        };
        assert!(matches!(
            read_snapshot(&snapshot(), &limits).unwrap_err().kind(),
            ErrorKind::LimitExceeded { .. }
        ));
        assert!(read_snapshot(b"\x0a\x05ab", &Limits::default()).is_err());
    }
}
