use super::{decode, test};
use crate::limits::Limits;
use crate::model::Timestamps;

#[test]
fn sniffs_speedscope_documents_by_any_of_their_keys() {
    assert!(test(
        br#"{"$schema": "https://www.speedscope.app/file-format-schema.json", "#
    ));
    assert!(test(
        br#"
{"name": "x", "shared": {"frames": [{"name": "a"}]}}"#
    ));
    assert!(test(
        br#"{"exporter": "x", "profiles": [{"type": "evented", "#
    ));
    assert!(test(b"\xef\xbb\xbf{\"profiles\":[{\"type\":\"sampled\""));
}

#[test]
fn leaves_other_json_alone() {
    assert!(!test(br#"{"shared": {"stringArray": []}}"#));
    assert!(!test(br#"{"profiles": [{"name": "p"}]}"#));
    assert!(!test(br#"{"meta": {"shared": {"frames": []}}}"#));
    assert!(!test(
        br#"{"traceEvents": [], "schema": "speedscope.app/file-format-schema"}"#
    ));
    assert!(!test(
        br#"[{"$schema": "https://www.speedscope.app/file-format-schema.json"}]"#
    ));
}

const EVENTED: &str = r#"{"shared": {"frames": [{"name": "a", "file": "a.py", "line": 3}, {"name": "b"}]},
  "profiles": [{"type": "evented", "name": "main", "unit": "milliseconds", "startValue": 0, "endValue": 10,
    "events": [{"type": "O", "frame": 0, "at": 0}, {"type": "O", "frame": 1, "at": 2},
               {"type": "C", "frame": 1, "at": 5}, {"type": "C", "frame": 0, "at": 8}]}]}"#;

#[test]
fn evented_profiles_become_spans_in_nanoseconds_on_the_trace_clock() {
    let p = decode(EVENTED.as_bytes(), &Limits::default()).unwrap();
    assert_eq!(p.timestamps, Timestamps::TraceClock("speedscope".into()));
    let samples: Vec<(Option<i64>, i64)> = p.samples().iter().map(|s| (s.time, s.weight)).collect();
    assert_eq!(
        samples,
        [
            (Some(0), 2_000_000),
            (Some(2_000_000), 3_000_000),
            (Some(5_000_000), 3_000_000)
        ]
    );
    let (_, series) = p.all_series().next().unwrap();
    assert!(series.spans);
    assert_eq!(p.str(series.unit), "nanoseconds");
}

#[test]
fn sampled_weights_of_unit_none_stay_exact() {
    let doc = r#"{"shared": {"frames": [{"name": "a"}]}, "profiles": [{"type": "sampled",
      "unit": "none", "startValue": 0, "endValue": 1, "samples": [[0], [0, 0]], "weights": [1.5, 2]}]}"#;
    let p = decode(doc.as_bytes(), &Limits::default()).unwrap();
    let (_, series) = p.all_series().next().unwrap();
    assert_eq!(p.str(series.unit), "none*1e-1");
    let weights: Vec<i64> = p.samples().iter().map(|s| s.weight).collect();
    assert_eq!(weights, [15, 20]);
    assert!(p.samples().iter().all(|s| s.time.is_none()));
}

#[test]
fn malformed_documents_say_what_is_wrong() {
    let cases = [
        (
            r#"{"shared": {"frames": []}, "profiles": [{"type": "evented", "unit": "none", "startValue": 0, "endValue": 1, "events": [{"type": "O", "frame": 3, "at": 0}]}]}"#,
            "names frame 3",
        ),
        (
            r#"{"shared": {"frames": [{"name": "a"}]}, "profiles": [{"type": "sampled", "unit": "none", "startValue": 0, "endValue": 1, "samples": [[0]], "weights": []}]}"#,
            "1 samples but 0 weights",
        ),
        (
            r#"{"shared": {"frames": []}, "profiles": [{"type": "flame", "unit": "none", "startValue": 0, "endValue": 1}]}"#,
            "neither",
        ),
        (
            r#"{"shared": {"frames": []}, "profiles": [{"type": "evented", "unit": "none", "startValue": 0, "endValue": 1, "events": [{"type": "X", "frame": 0, "at": 0}]}]}"#,
            "profiles[0].events[0].type",
        ),
    ];
    for (doc, want) in cases {
        let err = decode(doc.as_bytes(), &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains(want), "{err}");
    }
}
