//! Unit tests of the OTLP decoder: layout detection and profcheck on the fixtures, and small
//! hand-built requests for the paths fixtures do not reach.

use proflake_proto::otlp::common::{any_value, AnyValue, InstrumentationScope, KeyValue};
use proflake_proto::otlp::legacy::v1_9;
use proflake_proto::otlp::profiles::{
    Function, KeyValueAndUnit, Line, Link, Location, Mapping, Profile as OtlpProfile, ProfilesData,
    ProfilesDictionary, ResourceProfiles, Sample, ScopeProfiles, Stack, ValueType,
};
use proflake_proto::otlp::resource::Resource;
use prost::Message;

use super::layout::{self, Layout};
use super::profcheck::{self, Findings, Options};
use crate::error::{ErrorKind, Result};
use crate::limits::Limits;
use crate::model::Profile;

fn decode(bytes: &[u8]) -> Result<Profile> {
    super::decode(bytes, &Limits::default())
}

fn decode_json(bytes: &[u8]) -> Result<Profile> {
    super::decode_json(bytes, &Limits::default())
}

fn detect(bytes: &[u8]) -> Result<Layout> {
    layout::detect(bytes, 0, &Limits::default())
}

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../tests/fixtures/otlp/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn findings(data: &ProfilesData, opts: Options) -> Findings {
    let mut f = Findings::new(10_000);
    profcheck::check(data, opts, &mut f);
    f
}

fn v1_10(name: &str) -> ProfilesData {
    ProfilesData::decode(fixture(name).as_slice()).unwrap()
}

#[test]
fn fixture_layouts() {
    let cases = [
        ("sig-profiling_profile.v1_8.otlp", Layout::V1_8),
        ("sig-profiling_profile.v1_10.pb", Layout::V1_10),
        ("sig-profiling_k8s_0.v1_10.pb", Layout::V1_10),
        ("synthetic_edge_cases.v1_10.pb", Layout::V1_10),
        ("synthetic_edge_cases.v1_9.pb", Layout::V1_9),
    ];
    for (name, want) in cases {
        assert_eq!(detect(&fixture(name)).unwrap(), want, "{name}");
    }
}

#[test]
fn strict_time_range_reproduces_profcheck() {
    let strict = Options {
        strict_time_range: true,
        ..Options::default()
    };
    for (name, want) in [
        ("sig-profiling_profile.v1_10.pb", 4),
        ("sig-profiling_k8s_0.v1_10.pb", 6),
        ("sig-profiling_k8s_1.v1_10.pb", 7),
    ] {
        let data = v1_10(name);
        let f = findings(&data, strict);
        assert_eq!(f.total, want, "{name}: {:#?}", f.list);
        assert!(
            f.list
                .iter()
                .all(|l| l.contains("is outside profile time range")),
            "{name}: {:#?}",
            f.list
        );
        assert_eq!(
            findings(&data, Options::default()).total,
            0,
            "{name}, lenient"
        );
    }
}

// ---- hand-built requests ------------------------------------------------------------------

/// A small valid v1.10 request: one resource (pid 7), one `cpu/nanoseconds` profile with one
/// timestamps-only sample on stack [leaf=2, root=1].
fn request() -> ProfilesData {
    let s = |v: &[&str]| v.iter().map(|s| s.as_bytes().to_vec()).collect();
    let dictionary = ProfilesDictionary {
        string_table: s(&[
            "",
            "cpu",
            "nanoseconds",
            "main",
            "leaf",
            "process.pid",
            "/bin/app",
        ]),
        mapping_table: vec![
            Mapping::default(),
            Mapping {
                memory_start: 0x1000,
                memory_limit: 0x2000,
                filename_strindex: 6,
                ..Default::default()
            },
        ],
        location_table: vec![
            Location::default(),
            Location {
                lines: vec![Line {
                    function_index: 1,
                    line: 3,
                    column: 0,
                }],
                ..Default::default()
            },
            Location {
                mapping_index: 1,
                address: 0x1234,
                lines: vec![Line {
                    function_index: 2,
                    ..Default::default()
                }],
                ..Default::default()
            },
        ],
        function_table: vec![
            Function::default(),
            Function {
                name_strindex: 3,
                ..Default::default()
            },
            Function {
                name_strindex: 4,
                ..Default::default()
            },
        ],
        link_table: vec![Link::default()],
        attribute_table: vec![KeyValueAndUnit::default()],
        stack_table: vec![
            Stack::default(),
            Stack {
                location_indices: vec![2, 1],
            },
        ],
    };
    let profile = OtlpProfile {
        sample_type: Some(ValueType {
            type_strindex: 1,
            unit_strindex: 2,
        }),
        samples: vec![Sample {
            stack_index: 1,
            timestamps_unix_nano: vec![1_000, 2_000],
            ..Default::default()
        }],
        time_unix_nano: 1_000,
        duration_nano: 5_000,
        ..Default::default()
    };
    ProfilesData {
        resource_profiles: vec![ResourceProfiles {
            resource: Some(Resource {
                attributes: vec![KeyValue {
                    key: String::new(),
                    key_strindex: 5,
                    value: Some(AnyValue {
                        value: Some(any_value::Value::IntValue(7)),
                    }),
                }],
                ..Default::default()
            }),
            scope_profiles: vec![ScopeProfiles {
                scope: Some(InstrumentationScope::default()),
                profiles: vec![profile],
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
        dictionary: Some(dictionary),
    }
}

fn sample_mut(data: &mut ProfilesData) -> &mut Sample {
    &mut data.resource_profiles[0].scope_profiles[0].profiles[0].samples[0]
}

fn dict_mut(data: &mut ProfilesData) -> &mut ProfilesDictionary {
    data.dictionary.as_mut().unwrap()
}

fn malformed_text(bytes: &[u8]) -> String {
    let e = decode(bytes).unwrap_err();
    match e.kind() {
        ErrorKind::Malformed { what, .. } => what.clone(),
        other => panic!("expected Malformed, got {other:?}"),
    }
}

#[test]
fn hand_built_request_decodes() {
    let data = request();
    assert_eq!(
        findings(&data, Options::default()).list,
        Vec::<String>::new()
    );
    let p = decode(&data.encode_to_vec()).unwrap();
    assert_eq!(p.samples().len(), 2);
    let proc_ = p.process(p.thread(p.samples().get(0).thread).process);
    assert_eq!(proc_.pid, Some(7));
    let leaf = p.samples().get(0).stack.unwrap();
    let names: Vec<_> = p
        .stack_frames(leaf)
        .map(|f| p.opt_str(p.frame(f).function).unwrap().to_owned())
        .collect();
    assert_eq!(names, ["leaf", "main"], "leaf first from the model");
    assert_eq!((p.start_time, p.duration), (Some(1_000), Some(5_000)));
}

#[test]
fn out_of_range_references_are_errors_with_paths() {
    let mut data = request();
    sample_mut(&mut data).stack_index = 99;
    assert_eq!(
        malformed_text(&data.encode_to_vec()),
        "resource_profiles[0].scope_profiles[0].profiles[0].samples[0].stack_index 99 out of range (stack_table has 2)"
    );

    let mut data = request();
    dict_mut(&mut data).stack_table[1].location_indices[1] = 7;
    assert_eq!(
        malformed_text(&data.encode_to_vec()),
        "dictionary.stack_table[1].location_indices[1] 7 out of range (location_table has 3)"
    );

    let mut data = request();
    dict_mut(&mut data).location_table[2].mapping_index = -1;
    assert_eq!(
        malformed_text(&data.encode_to_vec()),
        "dictionary.location_table[2].mapping_index -1 out of range (mapping_table has 2)"
    );

    let mut data = request();
    sample_mut(&mut data).attribute_indices = vec![3];
    assert_eq!(
        malformed_text(&data.encode_to_vec()),
        "resource_profiles[0].scope_profiles[0].profiles[0].samples[0].attribute_indices[0] 3 out of range (attribute_table has 1)"
    );

    let mut data = request();
    data.resource_profiles[0]
        .resource
        .as_mut()
        .unwrap()
        .attributes[0]
        .key_strindex = 40;
    assert_eq!(
        malformed_text(&data.encode_to_vec()),
        "resource_profiles[0].resource.attributes[0].key_strindex 40 out of range (string_table has 7)"
    );

    // No dictionary at all: every reference is out of range, none panics.
    let mut data = request();
    data.dictionary = None;
    assert!(malformed_text(&data.encode_to_vec()).contains("out of range"));
}

#[test]
fn sample_limit() {
    // One sample record with two timestamps: two model samples.
    let bytes = request().encode_to_vec();
    let limits = |max_samples| Limits {
        max_samples,
        ..Limits::default()
    };
    assert!(super::decode(&bytes, &limits(2)).is_ok());
    let e = super::decode(&bytes, &limits(1)).unwrap_err();
    assert_eq!(
        e.kind(),
        &ErrorKind::LimitExceeded {
            limit: "max_samples",
            max: 1
        },
        "{e}"
    );
    // Sample records are held to the limit on the wire, before prost decodes them.
    let mut two = request();
    let first = two.resource_profiles[0].scope_profiles[0].profiles[0].samples[0].clone();
    two.resource_profiles[0].scope_profiles[0].profiles[0]
        .samples
        .push(first);
    let e = layout::detect(&two.encode_to_vec(), 0, &limits(1)).unwrap_err();
    assert_eq!(
        e.kind(),
        &ErrorKind::LimitExceeded {
            limit: "max_samples",
            max: 1
        }
    );
}

#[test]
fn dictionary_tables_are_held_to_the_limit_on_the_wire() {
    let bytes = request().encode_to_vec();
    let strings = request().dictionary.unwrap().string_table.len() as u64;
    let limits = |max_table_entries| Limits {
        max_table_entries,
        ..Limits::default()
    };
    // The string table is the largest.
    assert!(layout::detect(&bytes, 0, &limits(strings)).is_ok());
    let e = layout::detect(&bytes, 0, &limits(strings - 1)).unwrap_err();
    assert_eq!(
        e.kind(),
        &ErrorKind::LimitExceeded {
            limit: "max_table_entries",
            max: strings - 1
        }
    );
}

#[test]
fn stacks_deeper_than_the_limit_are_kept_without_frames() {
    let data = request();
    let dict = data.dictionary.as_ref().unwrap();
    let depth = dict
        .stack_table
        .iter()
        .map(|s| s.location_indices.len())
        .max()
        .unwrap() as u64;
    assert!(depth > 1, "the request has a stack to cut");
    let limits = Limits {
        max_stack_depth: depth - 1,
        ..Limits::default()
    };
    let full = decode(&data.encode_to_vec()).unwrap();
    let cut = super::decode(&data.encode_to_vec(), &limits).unwrap();
    assert_eq!(
        cut.samples().len(),
        full.samples().len(),
        "samples are kept"
    );
    assert!(cut.stats.get("otlp_stack_too_deep").copied().unwrap_or(0) > 0);
    assert!(cut.samples().iter().any(|s| s.stack.is_none()));
    assert!(!full.stats.contains_key("otlp_stack_too_deep"));
}

#[test]
fn pre_v1_8_layouts_are_rejected_by_name() {
    // A sample with field 6 (v1.4–v1.7 timestamps), inside an otherwise valid request.
    let mut data = request();
    data.resource_profiles[0].scope_profiles[0].profiles[0]
        .samples
        .clear();
    let sample = [0x08, 0x01, 0x32, 0x01, 0x05]; // stack_index 1, field 6 LEN [5]
                                                 // Append a Profile field 2 (sample) to the profile by re-wrapping the whole request.
    let mut profile = data.resource_profiles[0].scope_profiles[0].profiles[0].encode_to_vec();
    profile.push(0x12);
    profile.push(sample.len() as u8);
    profile.extend_from_slice(&sample);
    let mut scope = vec![0x12, profile.len() as u8];
    scope.extend_from_slice(&profile);
    let mut resource = vec![0x12, scope.len() as u8];
    resource.extend_from_slice(&scope);
    let bytes = {
        let mut out = vec![0x0a, resource.len() as u8];
        out.extend_from_slice(&resource);
        let dict = data.dictionary.as_ref().unwrap().encode_to_vec();
        out.push(0x12);
        prost::encoding::encode_varint(dict.len() as u64, &mut out);
        out.extend_from_slice(&dict);
        out
    };
    let text = malformed_text(&bytes);
    assert!(text.contains("layout v1.7"), "{text}");
    assert!(text.contains("field 6"), "{text}");
}

#[test]
fn v1_9_values_are_not_taken_for_attribute_indices() {
    // The case that is silent with v1.10 bindings (prost with v1.10 bindings drops the values): values only, no attributes,
    // no link; and values with timestamps.
    let data = request();
    let legacy = v1_9::ProfilesData {
        resource_profiles: vec![v1_9::ResourceProfiles {
            resource: data.resource_profiles[0].resource.clone(),
            scope_profiles: vec![v1_9::ScopeProfiles {
                scope: None,
                profiles: vec![v1_9::Profile {
                    sample_type: Some(ValueType {
                        type_strindex: 1,
                        unit_strindex: 2,
                    }),
                    samples: vec![
                        v1_9::Sample {
                            stack_index: 1,
                            values: vec![1_500_000],
                            ..Default::default()
                        },
                        v1_9::Sample {
                            stack_index: 1,
                            values: vec![3, 4],
                            timestamps_unix_nano: vec![1_500, 1_600],
                            ..Default::default()
                        },
                    ],
                    ..Default::default()
                }],
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
        dictionary: data.dictionary.clone(),
    };
    let bytes = legacy.encode_to_vec();
    assert_eq!(detect(&bytes).unwrap(), Layout::V1_9);
    let p = decode(&bytes).unwrap();
    let weights: Vec<_> = p.samples().iter().map(|s| (s.time, s.weight)).collect();
    assert_eq!(
        weights,
        [(None, 1_500_000), (Some(1_500), 3), (Some(1_600), 4)]
    );
}

#[test]
fn truncated_and_garbage_inputs() {
    let bytes = fixture("sig-profiling_profile.v1_10.pb");
    for cut in [1, 2, 100, bytes.len() / 2, bytes.len() - 1] {
        let e = decode(&bytes[..cut]).unwrap_err();
        assert!(
            matches!(
                e.kind(),
                ErrorKind::Truncated { .. } | ErrorKind::Malformed { .. }
            ),
            "cut at {cut}: {e}"
        );
    }
    let e = decode(&bytes[..bytes.len() - 1]).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Truncated { .. }), "{e}");
    let stream = fixture("sig-profiling_k8s.v1_8.lenprefixed.otlp");
    let e = decode(&stream[..stream.len() - 10]).unwrap_err();
    assert!(
        matches!(
            e.kind(),
            ErrorKind::Truncated {
                what: "OTLP stream message",
                ..
            }
        ),
        "{e}"
    );

    let e = decode_json(b"{\"resourceProfiles\": [").unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Truncated { .. }), "{e}");
    let e = decode_json(b"{\"resourceProfiles\": nope}").unwrap_err();
    assert!(
        matches!(
            e.kind(),
            ErrorKind::Malformed {
                format: "otlp-json",
                ..
            }
        ),
        "{e}"
    );
    let e = decode_json(b"{\"resourceProfiles\": {}}").unwrap_err();
    assert!(
        e.to_string()
            .contains("$.resourceProfiles: expected an array, got an object"),
        "{e}"
    );
    assert!(decode_json(b"   ").is_err());
}

#[test]
fn every_prefix_of_a_request_is_handled() {
    // No cut point may panic, whatever the error.
    let bytes = fixture("synthetic_edge_cases.v1_10.pb");
    for cut in 0..bytes.len() {
        let _ = decode(&bytes[..cut]);
    }
    let json = fixture("synthetic_edge_cases.v1_10.json");
    for cut in (0..json.len()).step_by(7) {
        let _ = decode_json(&json[..cut]);
    }
}

#[test]
fn stream_findings_name_the_message() {
    let mut bad = request();
    dict_mut(&mut bad).function_table.push(Function::default());
    let mut stream = Vec::new();
    for data in [request(), bad] {
        let body = data.encode_to_vec();
        stream.extend_from_slice(&(body.len() as u32).to_be_bytes());
        stream.extend_from_slice(&body);
    }
    let p = decode(&stream).unwrap();
    assert_eq!(p.samples().len(), 4);
    assert_eq!(
        p.findings,
        ["message[1]: dictionary: function_table[3]: must have at least one of name, system_name or filename"]
    );
}

#[test]
fn profcheck_rules_beyond_upstream() {
    let mut data = request();
    {
        let d = dict_mut(&mut data);
        d.stack_table.push(Stack::default());
        d.location_table[2].address = 0x9000;
        d.link_table[0] = Link {
            trace_id: vec![0; 16],
            span_id: vec![0; 8],
        };
        d.string_table.push(vec![0xff, 0xfe]);
        d.function_table[2].start_line = -1;
    }
    {
        let p = &mut data.resource_profiles[0].scope_profiles[0].profiles[0];
        p.profile_id = vec![0; 16];
        p.original_payload = vec![1];
        p.samples.push(p.samples[0].clone());
        p.samples.push(Sample {
            stack_index: 1,
            values: vec![1, 2],
            ..Default::default()
        });
    }
    let f = findings(&data, Options::default());
    let want = [
        "resource_profiles[0]: scope_profiles[0]: profile[0]: profile_id is all zero, which is invalid",
        "resource_profiles[0]: scope_profiles[0]: profile[0]: original_payload and original_payload_format must be set together",
        "resource_profiles[0]: scope_profiles[0]: profile[0]: sample[1]: same stack_index, attribute_indices and link_index as sample[0]; samples with one identity should be merged",
        "resource_profiles[0]: scope_profiles[0]: profile[0]: sample[2]: values (len=2) must contain a single element if timestamps_unix_nano is not set",
        "resource_profiles[0]: scope_profiles[0]: profile[0]: sample[2]: sample shape values_only does not match expected sample shape timestamps_only",
        "resource_profiles[0]: scope_profiles[0]: profile[0]: sample[2]: same stack_index, attribute_indices and link_index as sample[0]; samples with one identity should be merged",
        "dictionary: location_table[2]: address 0x9000 is outside mapping_table[1] [0x1000, 0x2000)",
        "dictionary: function_table[2].start_line: -1 < 0, must be non-negative",
        "dictionary: string_table[7]: not valid UTF-8",
        "dictionary: stack_table[2]: stack is empty",
    ];
    assert_eq!(f.list, want, "all-zero link_table[0] is accepted");

    // profcheck's strict zero-value rule would have flagged the v1.11 link; the orphan check
    // counts reference-based resource keys as string references.
    let mut orphans = request();
    dict_mut(&mut orphans).string_table.push(b"unused".to_vec());
    let f = findings(
        &orphans,
        Options {
            orphans: true,
            ..Options::default()
        },
    );
    assert_eq!(
        f.list,
        ["dictionary: string_table: unreferenced entry at index 7"]
    );
}

#[test]
fn findings_are_capped() {
    let mut data = request();
    sample_mut(&mut data).timestamps_unix_nano = (10_000..11_500u64).collect();
    let p = decode(&data.encode_to_vec()).unwrap();
    assert_eq!(p.findings.len(), super::MAX_FINDINGS + 1);
    assert_eq!(
        p.findings.last().unwrap(),
        &format!(
            "... and {} more profcheck findings",
            1500 - super::MAX_FINDINGS
        )
    );
}
