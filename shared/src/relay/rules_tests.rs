//! Tests of the Relay rules.
use super::*;
use serde_json::json;

/// The optional string fields of Relay's `sample::Frame`.
const FRAME_STRING_FIELDS: [&str; 6] = [
    "function", "module", "package", "filename", "abs_path", "platform",
];

/// A chunk that exercises every optional field and still passes: two threads, an idle
/// sample, mixed native/java frames and a native image.
fn valid() -> Value {
    json!({
        "version": "2",
        "chunk_id": "0123456789abcdef0123456789abcdef",
        "profiler_id": "fedcba9876543210fedcba9876543210",
        "platform": "android",
        "release": "app@1.0",
        "environment": "production",
        "client_sdk": {"name": "proflake", "version": "0.1.0"},
        "debug_meta": {"images": [{
            "type": "symbolic",
            "debug_id": "7f4a3eb0-885e-8d4c-a04b-05fa32cc4cbd",
            "code_file": "/system/lib64/libc.so",
            "image_addr": "0x7328f11000",
            "image_vmaddr": "0x4000",
            "image_size": 503808
        }]},
        "profile": {
            "samples": [
                {"timestamp": 1700000001.0, "stack_id": 0, "thread_id": "42"},
                {"timestamp": 1700000001.01, "stack_id": 1, "thread_id": "42"},
                {"timestamp": 1700000001.02, "stack_id": 2, "thread_id": "42"},
                {"timestamp": 1700000001.03, "stack_id": 0, "thread_id": "43"},
                {"timestamp": 1700000001.04, "stack_id": 0, "thread_id": "43"}
            ],
            "stacks": [[1, 0], [2, 1, 0], []],
            "frames": [
                {"function": "main", "instruction_addr": "0x7328f12000",
                 "package": "/system/lib64/libc.so", "platform": "native"},
                {"function": "run", "module": "com.example.Worker", "package": "base.odex",
                 "platform": "java", "lineno": 12, "in_app": true},
                {"function": "foo", "filename": "foo.c", "abs_path": "/src/foo.c",
                 "lineno": 3, "colno": 7, "instruction_addr": "0x0", "platform": "native"}
            ],
            "thread_metadata": {"42": {"name": "main", "priority": 5}, "43": {"name": "worker"}}
        }
    })
}

fn check(value: &Value) -> Vec<Violation> {
    check_sample_v2(&serde_json::to_vec(value).unwrap())
}

fn mutated(mutate: impl FnOnce(&mut Value)) -> Vec<Violation> {
    let mut chunk = valid();
    mutate(&mut chunk);
    check(&chunk)
}

/// Replaces the value at a JSON pointer (the parent must exist).
fn set(chunk: &mut Value, pointer: &str, new: Value) {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    match chunk
        .pointer_mut(parent)
        .unwrap_or_else(|| panic!("no {parent}"))
    {
        Value::Object(map) => {
            map.insert(key.to_owned(), new);
        }
        Value::Array(items) => items[key.parse::<usize>().unwrap()] = new,
        other => panic!("{parent} is {other}"),
    }
}

fn remove(chunk: &mut Value, pointer: &str) {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    let map = chunk
        .pointer_mut(parent)
        .and_then(Value::as_object_mut)
        .unwrap();
    assert!(map.remove(key).is_some(), "{pointer} was not there");
}

#[track_caller]
fn assert_breaks(violations: &[Violation], rule: Rule) {
    assert!(
        violations.iter().any(|v| v.rule == rule),
        "expected {rule:?}, got {violations:#?}"
    );
}

#[track_caller]
fn assert_breaks_at(violations: &[Violation], rule: Rule, detail_prefix: &str) {
    assert!(
        violations
            .iter()
            .any(|v| v.rule == rule && v.detail.starts_with(detail_prefix)),
        "expected {rule:?} at {detail_prefix}, got {violations:#?}"
    );
}

/// The distinct rules broken, in a stable order, for exact comparisons.
fn rule_set(violations: &[Violation]) -> Vec<Rule> {
    let mut rules: Vec<Rule> = Vec::new();
    for v in violations {
        if !rules.contains(&v.rule) {
            rules.push(v.rule);
        }
    }
    rules.sort_by_key(|r| format!("{r:?}"));
    rules
}

fn sorted(mut rules: Vec<Rule>) -> Vec<Rule> {
    rules.sort_by_key(|r| format!("{r:?}"));
    rules
}

#[test]
fn valid_chunk_passes() {
    assert_eq!(check(&valid()), vec![]);
}

#[test]
fn spec_minimal_example_passes() {
    // Spec §1.6 (Relay's test_convert_minimal_trace output), wrapped with required metadata.
    let profile: Value = serde_json::from_str(
        r#"{"samples":[{"timestamp":1700000001.0,"stack_id":0,"thread_id":"42"},
                    {"timestamp":1700000001.01,"stack_id":0,"thread_id":"42"}],
         "stacks":[[1,0]],
         "frames":[{"function":"main","instruction_addr":"0x1000","platform":"native"},
                   {"function":"foo","instruction_addr":"0x2000","platform":"native"}],
         "thread_metadata":{"42":{"name":"main"}}}"#,
    )
    .unwrap();
    let chunk = json!({
        "version": "2",
        "chunk_id": "11cde81c68384f67afd587b3766f1285",
        "profiler_id": "76e564243495495da5bb90152d3afdef",
        "platform": "android",
        "release": null,
        "client_sdk": {"name": "sentry.java.android", "version": "8.38.0"},
        "profile": profile
    });
    assert_eq!(check(&chunk), vec![]);
}

#[test]
fn vroomrs_python_fixture_is_rejected() {
    let v = check_sample_v2(
        include_str!("../../../tests/fixtures/sentry/vroomrs_sample_v2_valid_python.json")
            .as_bytes(),
    );
    // As SOURCES.md says: stack [0..6] over a single frame, and a single sample.
    assert_breaks_at(
        &v,
        Rule::MalformedStacks,
        "profile.stacks[0][1]: 1 >= 1 frames",
    );
    assert_breaks(&v, Rule::NotEnoughSamples);
    // Also: it carries the server-only fields vroomrs needs, its lone thread gets dropped,
    // and two thread_metadata entries name threads without samples.
    assert_eq!(
        rule_set(&v),
        sorted(vec![
            Rule::ForbiddenField,
            Rule::MalformedStacks,
            Rule::NotEnoughSamples,
            Rule::SingleSampleThread,
            Rule::UnreferencedThreadMetadata,
        ])
    );
}

#[test]
fn vroomrs_android_fixture_breaks_only_strict_rules() {
    let v = check_sample_v2(
        include_str!("../../../tests/fixtures/sentry/vroomrs_sample_v2_valid_android.json")
            .as_bytes(),
    );
    // Relay would accept this chunk, but not unchanged: it carries the four server-only
    // fields (a vroomrs fixture is post-ingest data), and samples are grouped by thread
    // rather than sorted by time (thread "2" restarts at .1179), so Relay re-sorts them.
    assert_eq!(
        rule_set(&v),
        sorted(vec![Rule::ForbiddenField, Rule::UnsortedSamples])
    );
    assert_eq!(
        v.iter().filter(|v| v.rule == Rule::ForbiddenField).count(),
        4
    );
    assert_breaks_at(&v, Rule::UnsortedSamples, "profile.samples[3].timestamp");
    assert!(v.iter().all(|v| !v.rule.relay_rejects()), "{v:#?}");
}

#[test]
fn vroomrs_cocoa_fixture_breaks_only_strict_rules() {
    let v = check_sample_v2(
        include_str!("../../../tests/fixtures/sentry/vroomrs_sample_v2_valid_cocoa.json")
            .as_bytes(),
    );
    // Relay would accept it after rewriting: server-only fields; an uppercase debug_id
    // (written back lowercase); zero-padded image_addr/image_vmaddr (written back
    // unpadded); frame addresses with PAC bits that Relay masks off on cocoa; and a
    // thread_metadata entry for a thread with no samples (dropped).
    assert_eq!(
        rule_set(&v),
        sorted(vec![
            Rule::ForbiddenField,
            Rule::NonCanonical,
            Rule::UnreferencedThreadMetadata,
        ])
    );
    assert!(v.iter().all(|v| !v.rule.relay_rejects()), "{v:#?}");
    assert_breaks_at(&v, Rule::NonCanonical, "debug_meta.images[0].debug_id");
    assert_breaks_at(&v, Rule::NonCanonical, "debug_meta.images[0].image_addr");
    assert_breaks_at(&v, Rule::NonCanonical, "debug_meta.images[0].image_vmaddr");
    assert_breaks_at(&v, Rule::NonCanonical, "profile.frames[0].instruction_addr");
    assert_breaks_at(
        &v,
        Rule::UnreferencedThreadMetadata,
        "profile.thread_metadata[\"0x000000016d8fb180\"]",
    );
}

#[test]
fn invalid_json_gives_one_violation() {
    let v = check_sample_v2(b"{\"version\": \"2\",");
    assert_eq!(v.len(), 1, "{v:#?}");
    assert_eq!(v[0].rule, Rule::InvalidJson);
}

#[test]
fn out_of_range_number_is_invalid_json() {
    // Without serde_json's arbitrary_precision, 1e400 does not parse at all.
    let text = serde_json::to_string(&valid()).unwrap();
    assert!(text.contains("\"timestamp\":1700000001.0"), "{text}");
    let text = text.replace("\"timestamp\":1700000001.0", "\"timestamp\":1e400");
    assert_eq!(
        rule_set(&check_sample_v2(text.as_bytes())),
        vec![Rule::InvalidJson]
    );
}

#[test]
fn top_level_must_be_object() {
    assert_eq!(
        check(&json!([1, 2]))
            .iter()
            .map(|v| v.rule)
            .collect::<Vec<_>>(),
        vec![Rule::WrongType]
    );
}

#[test]
fn version_must_be_string_two() {
    assert_breaks(
        &mutated(|c| remove(c, "/version")),
        Rule::PlatformNotSupported,
    );
    assert_breaks(
        &mutated(|c| set(c, "/version", json!("1"))),
        Rule::PlatformNotSupported,
    );
    assert_breaks(
        &mutated(|c| set(c, "/version", json!(2))),
        Rule::PlatformNotSupported,
    );
}

#[test]
fn sampled_profile_and_server_fields_are_forbidden() {
    assert_breaks_at(
        &mutated(|c| set(c, "/sampled_profile", json!(""))),
        Rule::ForbiddenField,
        "sampled_profile",
    );
    for key in SERVER_ONLY_FIELDS {
        assert_breaks_at(
            &mutated(|c| set(c, &format!("/{key}"), json!(1))),
            Rule::ForbiddenField,
            key,
        );
    }
}

#[test]
fn ids_must_be_32_lowercase_hex() {
    for key in ["chunk_id", "profiler_id"] {
        let pointer = format!("/{key}");
        for bad in [
            "0123456789ABCDEF0123456789ABCDEF",
            "01234567-89ab-cdef-0123-456789abcdef",
            "0123",
            "",
        ] {
            assert_breaks_at(
                &mutated(|c| set(c, &pointer, json!(bad))),
                Rule::InvalidId,
                key,
            );
        }
        assert_breaks_at(
            &mutated(|c| set(c, &pointer, json!(7))),
            Rule::WrongType,
            key,
        );
        assert_breaks_at(&mutated(|c| remove(c, &pointer)), Rule::MissingField, key);
    }
}

#[test]
fn platform_is_a_required_non_empty_string() {
    assert_breaks_at(
        &mutated(|c| remove(c, "/platform")),
        Rule::MissingField,
        "platform",
    );
    assert_breaks_at(
        &mutated(|c| set(c, "/platform", json!(""))),
        Rule::MissingField,
        "platform",
    );
    assert_breaks_at(
        &mutated(|c| set(c, "/platform", json!(1))),
        Rule::WrongType,
        "platform",
    );
}

#[test]
fn release_is_present_string_or_null() {
    assert_eq!(mutated(|c| set(c, "/release", Value::Null)), vec![]);
    assert_breaks_at(
        &mutated(|c| remove(c, "/release")),
        Rule::MissingField,
        "release",
    );
    assert_breaks_at(
        &mutated(|c| set(c, "/release", json!(1))),
        Rule::WrongType,
        "release",
    );
}

#[test]
fn environment_is_an_optional_string() {
    assert_eq!(mutated(|c| remove(c, "/environment")), vec![]);
    assert_breaks_at(
        &mutated(|c| set(c, "/environment", json!(1))),
        Rule::WrongType,
        "environment",
    );
    // Relay would drop a null, so it is not sent unchanged.
    assert_breaks_at(
        &mutated(|c| set(c, "/environment", Value::Null)),
        Rule::WrongType,
        "environment",
    );
}

#[test]
fn client_sdk_needs_name_and_version() {
    assert_breaks_at(
        &mutated(|c| remove(c, "/client_sdk")),
        Rule::MissingField,
        "client_sdk",
    );
    assert_breaks_at(
        &mutated(|c| set(c, "/client_sdk", json!("x"))),
        Rule::WrongType,
        "client_sdk",
    );
    assert_breaks_at(
        &mutated(|c| remove(c, "/client_sdk/version")),
        Rule::MissingField,
        "client_sdk.version",
    );
    assert_breaks_at(
        &mutated(|c| set(c, "/client_sdk/name", json!(1))),
        Rule::WrongType,
        "client_sdk.name",
    );
}

#[test]
fn debug_meta_is_optional_but_needs_images() {
    assert_eq!(mutated(|c| remove(c, "/debug_meta")), vec![]);
    assert_breaks_at(
        &mutated(|c| set(c, "/debug_meta", json!({}))),
        Rule::MissingField,
        "debug_meta.images",
    );
    assert_breaks_at(
        &mutated(|c| set(c, "/debug_meta/images", json!({}))),
        Rule::WrongType,
        "debug_meta.images",
    );
}

#[test]
fn image_type_must_be_a_relay_variant() {
    let v = mutated(|c| set(c, "/debug_meta/images/0/type", json!("elf")));
    assert_breaks_at(
        &v,
        Rule::InvalidDebugImage,
        "debug_meta.images[0].type: \"elf\"",
    );
    assert_breaks(
        &mutated(|c| remove(c, "/debug_meta/images/0/type")),
        Rule::InvalidDebugImage,
    );
    assert_eq!(
        mutated(|c| set(c, "/debug_meta/images/0/type", json!("macho"))),
        vec![]
    );
}

#[test]
fn native_image_needs_canonical_debug_id() {
    let path = "/debug_meta/images/0/debug_id";
    for (bad, rule) in [
        ("7F4A3EB0-885E-8D4C-A04B-05FA32CC4CBD", Rule::NonCanonical),
        ("7f4a3eb0885e8d4ca04b05fa32cc4cbd", Rule::NonCanonical),
        ("not-an-id", Rule::InvalidDebugImage),
    ] {
        assert_breaks_at(
            &mutated(|c| set(c, path, json!(bad))),
            rule,
            "debug_meta.images[0].debug_id",
        );
    }
    assert_breaks_at(
        &mutated(|c| remove(c, path)),
        Rule::InvalidDebugImage,
        "debug_meta.images[0].debug_id",
    );
    // An appendix (PDB age) is part of the canonical form.
    assert_eq!(
        mutated(|c| set(c, path, json!("7f4a3eb0-885e-8d4c-a04b-05fa32cc4cbd-a"))),
        vec![]
    );
}

#[test]
fn native_image_needs_code_file_and_address() {
    assert_breaks_at(
        &mutated(|c| remove(c, "/debug_meta/images/0/code_file")),
        Rule::InvalidDebugImage,
        "debug_meta.images[0].code_file",
    );
    assert_breaks_at(
        &mutated(|c| set(c, "/debug_meta/images/0/code_file", json!(1))),
        Rule::WrongType,
        "debug_meta.images[0].code_file",
    );
    assert_breaks_at(
        &mutated(|c| remove(c, "/debug_meta/images/0/image_addr")),
        Rule::InvalidDebugImage,
        "debug_meta.images[0].image_addr",
    );
    assert_eq!(
        mutated(|c| remove(c, "/debug_meta/images/0/image_vmaddr")),
        vec![]
    );
    assert_eq!(
        mutated(|c| remove(c, "/debug_meta/images/0/image_size")),
        vec![]
    );
}

#[test]
fn image_addresses_and_size_are_checked() {
    assert_breaks_at(
        &mutated(|c| set(c, "/debug_meta/images/0/image_addr", json!("0x07328f11000"))),
        Rule::NonCanonical,
        "debug_meta.images[0].image_addr",
    );
    assert_breaks_at(
        &mutated(|c| set(c, "/debug_meta/images/0/image_vmaddr", json!("4000"))),
        Rule::InvalidAddress,
        "debug_meta.images[0].image_vmaddr",
    );
    assert_breaks_at(
        &mutated(|c| set(c, "/debug_meta/images/0/image_addr", json!(4096))),
        Rule::WrongType,
        "debug_meta.images[0].image_addr",
    );
    assert_breaks_at(
        &mutated(|c| set(c, "/debug_meta/images/0/image_size", json!(-1))),
        Rule::WrongType,
        "debug_meta.images[0].image_size",
    );
    assert_breaks_at(
        &mutated(|c| set(c, "/debug_meta/images/0/image_size", json!("4096"))),
        Rule::WrongType,
        "debug_meta.images[0].image_size",
    );
}

#[test]
fn proguard_image_needs_only_a_canonical_uuid() {
    let proguard = json!({"type": "proguard", "uuid": "32420279-25e2-34e6-8bc7-8a006a8f2425"});
    assert_eq!(
        mutated(|c| set(c, "/debug_meta/images/0", proguard)),
        vec![]
    );
    let upper = json!({"type": "proguard", "uuid": "32420279-25E2-34E6-8BC7-8A006A8F2425"});
    assert_breaks_at(
        &mutated(|c| set(c, "/debug_meta/images/0", upper)),
        Rule::InvalidDebugImage,
        "debug_meta.images[0].uuid",
    );
}

#[test]
fn image_aliases_are_forbidden() {
    let v = mutated(|c| set(c, "/debug_meta/images/0/name", json!("libc.so")));
    assert_breaks_at(&v, Rule::ForbiddenField, "debug_meta.images[0].name");
}

#[test]
fn address_syntax() {
    let addr = |s: &str| address(s).map_err(|f| f.rule);
    assert_eq!(addr("0x0").ok(), Some(0));
    assert_eq!(addr("0x735d14b000").ok(), Some(0x73_5d14_b000));
    assert_eq!(addr("0xffffffffffffffff").ok(), Some(u64::MAX));
    for bad in [
        "",
        "0x",
        "735d14b000",
        "0X10",
        "0xg",
        " 0x1",
        "0x1ffffffffffffffff",
        "-0x1",
    ] {
        assert_eq!(addr(bad).err(), Some(Rule::InvalidAddress), "{bad:?}");
    }
    // Accepted by Relay, but written back differently.
    for rewritten in ["0xABC", "0x00", "0x0001"] {
        assert_eq!(
            addr(rewritten).err(),
            Some(Rule::NonCanonical),
            "{rewritten:?}"
        );
    }
    assert_breaks_at(
        &mutated(|c| set(c, "/profile/frames/0/instruction_addr", json!(16))),
        Rule::WrongType,
        "profile.frames[0].instruction_addr",
    );
}

#[test]
fn profile_and_its_arrays_are_required() {
    assert_breaks_at(
        &mutated(|c| remove(c, "/profile")),
        Rule::MissingField,
        "profile",
    );
    for key in ["samples", "stacks", "frames"] {
        let path = format!("profile.{key}");
        assert_breaks_at(
            &mutated(|c| remove(c, &format!("/profile/{key}"))),
            Rule::MissingField,
            &path,
        );
        assert_breaks_at(
            &mutated(|c| set(c, &format!("/profile/{key}"), json!({}))),
            Rule::WrongType,
            &path,
        );
    }
}

#[test]
fn sample_fields_have_types() {
    assert_breaks_at(
        &mutated(|c| set(c, "/profile/samples/0", json!(1))),
        Rule::WrongType,
        "profile.samples[0]",
    );
    assert_breaks_at(
        &mutated(|c| remove(c, "/profile/samples/0/timestamp")),
        Rule::MissingField,
        "profile.samples[0].timestamp",
    );
    assert_breaks_at(
        &mutated(|c| set(c, "/profile/samples/0/timestamp", json!("1700000001"))),
        Rule::WrongType,
        "profile.samples[0].timestamp",
    );
    assert_breaks_at(
        &mutated(|c| set(c, "/profile/samples/0/stack_id", json!(-1))),
        Rule::WrongType,
        "profile.samples[0].stack_id",
    );
    assert_breaks_at(
        &mutated(|c| set(c, "/profile/samples/0/stack_id", json!(1.0))),
        Rule::WrongType,
        "profile.samples[0].stack_id",
    );
    assert_breaks_at(
        &mutated(|c| set(c, "/profile/samples/0/thread_id", json!(42))),
        Rule::WrongType,
        "profile.samples[0].thread_id",
    );
    assert_breaks_at(
        &mutated(|c| remove(c, "/profile/samples/0/thread_id")),
        Rule::MissingField,
        "profile.samples[0].thread_id",
    );
}

#[test]
fn integer_timestamps_are_numbers_too() {
    assert_eq!(
        mutated(|c| set(c, "/profile/samples/0/timestamp", json!(1700000001_u64))),
        vec![]
    );
}

#[test]
fn non_finite_timestamp() {
    // serde_json::Value cannot hold NaN/inf, so the check is exercised directly.
    for ts in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        assert_eq!(
            finite_timestamp(ts).err().map(|f| f.rule),
            Some(Rule::NonFiniteTimestamp)
        );
    }
    assert!(finite_timestamp(1.7e9).is_ok());
}

#[test]
fn stack_id_must_be_in_range() {
    let v = mutated(|c| set(c, "/profile/samples/3/stack_id", json!(7)));
    assert!(
        v.contains(&Violation {
            rule: Rule::MalformedSamples,
            detail: "profile.samples[3].stack_id: 7 >= 3 stacks".into()
        }),
        "{v:#?}"
    );
}

#[test]
fn samples_must_be_sorted() {
    let v = mutated(|c| set(c, "/profile/samples/1/timestamp", json!(1700000000.5)));
    assert_breaks_at(
        &v,
        Rule::UnsortedSamples,
        "profile.samples[1].timestamp: 1700000000.5 is earlier than profile.samples[0]",
    );
    // Equal timestamps keep their order under Relay's stable sort.
    assert_eq!(
        mutated(|c| set(c, "/profile/samples/1/timestamp", json!(1700000001.0))),
        vec![]
    );
}

#[test]
fn duration_limit_is_66_seconds() {
    let v = mutated(|c| set(c, "/profile/samples/4/timestamp", json!(1700000067.5)));
    assert_eq!(rule_set(&v), vec![Rule::DurationIsTooLong]);
    assert_eq!(
        mutated(|c| set(c, "/profile/samples/4/timestamp", json!(1700000067.0))),
        vec![]
    );
}

#[test]
fn stacks_are_arrays_of_frame_indices() {
    let v = mutated(|c| set(c, "/profile/stacks/1/0", json!(9)));
    assert!(
        v.contains(&Violation {
            rule: Rule::MalformedStacks,
            detail: "profile.stacks[1][0]: 9 >= 3 frames".into()
        }),
        "{v:#?}"
    );
    assert_breaks_at(
        &mutated(|c| set(c, "/profile/stacks/1/0", json!(-1))),
        Rule::WrongType,
        "profile.stacks[1][0]",
    );
    assert_breaks_at(
        &mutated(|c| set(c, "/profile/stacks/1", json!("0,1"))),
        Rule::WrongType,
        "profile.stacks[1]",
    );
}

#[test]
fn duplicate_stacks_are_reported() {
    let v = mutated(|c| set(c, "/profile/stacks/1", json!([1, 0])));
    assert_eq!(rule_set(&v), vec![Rule::DuplicateEntries]);
    assert!(!Rule::DuplicateEntries.relay_rejects());
    assert!(
        v[0].detail.contains("duplicate of profile.stacks[0]"),
        "{v:#?}"
    );
}

#[test]
fn duplicate_frames_are_reported() {
    let v = mutated(|c| {
        let first = c.pointer("/profile/frames/0").unwrap().clone();
        set(c, "/profile/frames/2", first);
    });
    assert_eq!(rule_set(&v), vec![Rule::DuplicateEntries]);
    assert!(
        v[0].detail
            .starts_with("profile.frames[2]: duplicate of profile.frames[0]"),
        "{v:#?}"
    );
}

#[test]
fn frame_fields_have_types() {
    for key in FRAME_STRING_FIELDS {
        let path = format!("profile.frames[1].{key}");
        assert_breaks_at(
            &mutated(|c| set(c, &format!("/profile/frames/1/{key}"), json!(1))),
            Rule::WrongType,
            &path,
        );
    }
    for (key, bad) in [
        ("lineno", json!(-1)),
        ("colno", json!(1.5)),
        ("lineno", json!(u64::from(u32::MAX) + 1)),
        ("in_app", json!("yes")),
    ] {
        let path = format!("profile.frames[1].{key}");
        assert_breaks_at(
            &mutated(|c| set(c, &format!("/profile/frames/1/{key}"), bad)),
            Rule::WrongType,
            &path,
        );
    }
}

#[test]
fn frame_instruction_addr_is_an_address() {
    let v = mutated(|c| {
        set(
            c,
            "/profile/frames/0/instruction_addr",
            json!("0x7328F12000"),
        )
    });
    assert_breaks_at(&v, Rule::NonCanonical, "profile.frames[0].instruction_addr");
}

#[test]
fn frame_aliases_are_forbidden() {
    let v = mutated(|c| set(c, "/profile/frames/1/line", json!(3)));
    assert_breaks_at(&v, Rule::ForbiddenField, "profile.frames[1].line");
}

#[test]
fn cocoa_addresses_must_be_free_of_pac_bits() {
    let pac = |c: &mut Value| {
        set(
            c,
            "/profile/frames/0/instruction_addr",
            json!("0xa722447ffffffffc"),
        )
    };
    // Only cocoa chunks get masked; elsewhere a high address is left alone.
    assert_eq!(mutated(pac), vec![]);
    let v = mutated(|c| {
        set(c, "/platform", json!("cocoa"));
        pac(c);
    });
    assert_eq!(rule_set(&v), vec![Rule::NonCanonical]);
    assert!(!Rule::NonCanonical.relay_rejects());
}

#[test]
fn frame_needs_something_to_show() {
    let v = mutated(|c| {
        set(
            c,
            "/profile/frames/1",
            json!({"module": "com.example.Worker", "platform": "java"}),
        )
    });
    assert_eq!(rule_set(&v), vec![Rule::EmptyFrame]);
    assert!(v[0].detail.starts_with("profile.frames[1]:"), "{v:#?}");
    for key in ["filename", "function", "instruction_addr"] {
        let frame = json!({key: "0x1"});
        assert_eq!(
            mutated(|c| set(c, "/profile/frames/1", frame)),
            vec![],
            "{key}"
        );
    }
}

#[test]
fn thread_with_one_non_empty_sample_is_dropped() {
    let v = mutated(|c| set(c, "/profile/samples/4/stack_id", json!(2)));
    assert_eq!(rule_set(&v), vec![Rule::SingleSampleThread]);
    assert!(v[0].detail.contains("thread \"43\" has 1 sample"), "{v:#?}");
}

#[test]
fn idle_only_thread_is_dropped_once() {
    let v = mutated(|c| {
        set(c, "/profile/samples/3/stack_id", json!(2));
        set(c, "/profile/samples/4/stack_id", json!(2));
    });
    assert_eq!(v.len(), 1, "{v:#?}");
    assert!(
        v[0].rule == Rule::SingleSampleThread && v[0].detail.contains("has 0 sample"),
        "{v:#?}"
    );
}

#[test]
fn no_samples_is_not_enough() {
    let v = mutated(|c| set(c, "/profile/samples", json!([])));
    assert_breaks_at(&v, Rule::NotEnoughSamples, "profile.samples: no samples");
}

#[test]
fn no_surviving_thread_is_not_enough() {
    let v = mutated(|c| {
        let samples = c
            .pointer_mut("/profile/samples")
            .and_then(Value::as_array_mut)
            .unwrap();
        samples.retain(|s| s["thread_id"] == "42");
        samples.truncate(1);
        remove(c, "/profile/thread_metadata/43");
    });
    assert_eq!(
        rule_set(&v),
        sorted(vec![Rule::SingleSampleThread, Rule::NotEnoughSamples])
    );
}

#[test]
fn thread_metadata_must_be_referenced() {
    let v = mutated(|c| set(c, "/profile/thread_metadata/99", json!({"name": "ghost"})));
    assert_eq!(v, vec![Violation { rule: Rule::UnreferencedThreadMetadata, detail: "profile.thread_metadata[\"99\"]: no sample has this thread_id; Relay drops the entry".into() }]);
    assert_eq!(mutated(|c| remove(c, "/profile/thread_metadata")), vec![]);
}

#[test]
fn thread_metadata_fields_have_types() {
    assert_breaks_at(
        &mutated(|c| set(c, "/profile/thread_metadata", json!([]))),
        Rule::WrongType,
        "profile.thread_metadata",
    );
    assert_breaks_at(
        &mutated(|c| set(c, "/profile/thread_metadata/42/priority", json!(-1))),
        Rule::WrongType,
        "profile.thread_metadata[\"42\"].priority",
    );
    assert_breaks_at(
        &mutated(|c| set(c, "/profile/thread_metadata/42/name", json!(1))),
        Rule::WrongType,
        "profile.thread_metadata[\"42\"].name",
    );
    assert_breaks_at(
        &mutated(|c| set(c, "/profile/thread_metadata/42", json!("main"))),
        Rule::WrongType,
        "profile.thread_metadata[\"42\"]",
    );
}
