//! Sample labels: every label is kept as a model label, and the few with a known meaning also
//! say which process and thread a sample ran on and which trace span it belongs to.
//!
//! pprof has no thread or process fields; producers that know them put them in labels, under
//! names that vary: `thread_id`/`tid`/`thread` and `thread_name` (Pyroscope's SDKs, async
//! profilers), `thread.id`/`thread.name`/`process.pid` (OTLP attributes turned into labels),
//! `pid`. Trace ids arrive as Pyroscope-style hex strings in `trace_id`/`span_id`.

use proflake_proto::pprof;

use super::tables::Tables;
use crate::model::{Label, LabelSetHandle, LabelValue, Link, LinkHandle, Profile, ThreadHandle};

/// Stat: labels with no key, which Go's pprof drops too.
const NO_KEY: &str = "pprof_label_without_key";
/// Stat: labels with neither a string nor a number nor a unit, which Go's pprof drops too.
const NO_VALUE: &str = "pprof_label_without_value";

const TID_KEYS: &[&str] = &["thread_id", "tid", "thread.id", "thread"];
const THREAD_NAME_KEYS: &[&str] = &["thread_name", "thread.name", "thread"];
const PID_KEYS: &[&str] = &["pid", "process_id", "process.pid"];

/// What a sample's labels say about it.
pub(super) struct Tagged {
    pub thread: ThreadHandle,
    pub labels: Option<LabelSetHandle>,
    pub link: Option<LinkHandle>,
}

/// Reads one sample's labels into the model. `model_labels` is scratch space, reused from
/// sample to sample so that a sample costs no allocation.
pub(super) fn tag(
    profile: &mut Profile,
    tables: &Tables,
    labels: &[pprof::Label],
    model_labels: &mut Vec<Label>,
) -> Tagged {
    let mut pid = None;
    let mut tid = None;
    let mut thread_name = None;
    let mut trace_id = None;
    let mut span_id = None;
    model_labels.clear();
    for l in labels {
        let key = tables.str(l.key);
        if key.is_empty() {
            profile.count(NO_KEY);
            continue;
        }
        let value = if l.str != 0 {
            let text = tables.str(l.str);
            let number = text.trim().parse::<i64>().ok();
            if TID_KEYS.contains(&key) && number.is_some() {
                tid = tid.or(number);
            } else if THREAD_NAME_KEYS.contains(&key) {
                thread_name = thread_name.or(Some(text));
            }
            if PID_KEYS.contains(&key) {
                pid = pid.or(number);
            }
            match key {
                "trace_id" => trace_id = trace_id.or_else(|| hex_id::<16>(text)),
                "span_id" => span_id = span_id.or_else(|| hex_id::<8>(text)),
                _ => {}
            }
            LabelValue::Str(profile.intern(text))
        } else if l.num != 0 || l.num_unit != 0 {
            if TID_KEYS.contains(&key) {
                tid = tid.or(Some(l.num));
            }
            if PID_KEYS.contains(&key) {
                pid = pid.or(Some(l.num));
            }
            let unit = tables.opt_str(l.num_unit).map(|u| profile.intern(u));
            LabelValue::Num { value: l.num, unit }
        } else {
            profile.count(NO_VALUE);
            continue;
        };
        model_labels.push(Label {
            key: profile.intern(key),
            value,
        });
    }
    let process = profile.add_process(pid);
    let thread = profile.add_thread(process, tid);
    if let Some(name) = thread_name {
        profile.name_thread(thread, name);
    }
    let link = match (trace_id, span_id) {
        (Some(trace_id), Some(span_id)) => Some(profile.add_link(Link { trace_id, span_id })),
        _ => None,
    };
    Tagged {
        thread,
        labels: profile.add_label_set(model_labels),
        link,
    }
}

/// Decodes an id written as exactly `2 * N` hex digits; an all-zero id means "none".
fn hex_id<const N: usize>(text: &str) -> Option<[u8; N]> {
    let mut id = [0u8; N];
    hex::decode_to_slice(text, &mut id).ok()?;
    id.iter().any(|&b| b != 0).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::hex_id;

    #[test]
    fn hex_ids_need_the_exact_size() {
        assert_eq!(
            hex_id::<8>("00000000000000ff"),
            Some([0, 0, 0, 0, 0, 0, 0, 0xff])
        );
        assert_eq!(hex_id::<8>("ff"), None);
        assert_eq!(hex_id::<8>("0000000000000000"), None);
        assert_eq!(hex_id::<8>("zz000000000000ff"), None);
        assert!(hex_id::<16>("4bf92f3577b34da6a3ce929d0e0e4736").is_some());
    }
}
