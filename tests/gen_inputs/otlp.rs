//! An OTLP profiles request (v1.10 layout): one CPU profile of `samples` timestamped samples
//! over 16 threads, with 2,500 stacks drawn from 6,000 locations in 20 mappings.

use proflake_proto::otlp::opentelemetry::proto::collector::profiles::v1development::ExportProfilesServiceRequest;
use proflake_proto::otlp::opentelemetry::proto::common::v1::{any_value, AnyValue};
use proflake_proto::otlp::opentelemetry::proto::profiles::v1development::{
    Function, KeyValueAndUnit, Line, Location, Mapping, Profile, ProfilesDictionary,
    ResourceProfiles, Sample, ScopeProfiles, Stack, ValueType,
};
use prost::Message;

use super::Rng;

const STACKS: u64 = 2_500;
const LOCATIONS: u64 = 6_000;
const FUNCTIONS: u64 = 3_000;
const MAPPINGS: u64 = 20;
const THREADS: u64 = 16;
const PERIOD_NS: i64 = 10_000_000;

/// Writes the request into `out`.
pub fn request(samples: u64, out: &mut Vec<u8>) {
    let mut rng = Rng(0x0a11_ce5e_ed00_0001);
    let mut strings: Vec<Vec<u8>> = vec![Vec::new()];
    let mut string = |s: String| {
        strings.push(s.into_bytes());
        (strings.len() - 1) as i32
    };
    let cpu = string("cpu".into());
    let ns = string("nanoseconds".into());
    let thread_id = string("thread.id".into());
    let thread_name = string("thread.name".into());
    let mut dictionary = ProfilesDictionary {
        mapping_table: vec![Mapping::default()],
        location_table: vec![Location::default()],
        function_table: vec![Function::default()],
        link_table: vec![Default::default()],
        attribute_table: vec![KeyValueAndUnit::default()],
        stack_table: vec![Stack::default()],
        ..Default::default()
    };
    for m in 0..MAPPINGS {
        let filename_strindex = string(format!("/usr/lib/libgen{m}.so"));
        dictionary.mapping_table.push(Mapping {
            memory_start: 0x7f00_0000_0000 + m * 0x100_0000,
            memory_limit: 0x7f00_0000_0000 + m * 0x100_0000 + 0x80_0000,
            filename_strindex,
            ..Default::default()
        });
    }
    for f in 0..FUNCTIONS {
        let name_strindex = string(format!("gen::module{}::function{f}", f % 97));
        let filename_strindex = string(format!("src/module{}.rs", f % 97));
        dictionary.function_table.push(Function {
            name_strindex,
            system_name_strindex: name_strindex,
            filename_strindex,
            start_line: (f % 500) as i64 + 1,
        });
    }
    for l in 0..LOCATIONS {
        let m = l % MAPPINGS;
        dictionary.location_table.push(Location {
            mapping_index: m as i32 + 1,
            address: 0x7f00_0000_0000 + m * 0x100_0000 + 0x1000 + l * 0x40,
            lines: vec![Line {
                function_index: (l % FUNCTIONS) as i32 + 1,
                line: (l % 900) as i64 + 1,
                column: 0,
            }],
            ..Default::default()
        });
    }
    for _ in 0..STACKS {
        let depth = 6 + rng.next() % 55;
        dictionary.stack_table.push(Stack {
            location_indices: (0..depth)
                .map(|_| (rng.next() % LOCATIONS) as i32 + 1)
                .collect(),
        });
    }
    let mut thread_attributes = Vec::new();
    for t in 0..THREADS {
        let id = KeyValueAndUnit {
            key_strindex: thread_id,
            value: Some(AnyValue {
                value: Some(any_value::Value::IntValue(5000 + t as i64)),
            }),
            unit_strindex: 0,
        };
        let name = KeyValueAndUnit {
            key_strindex: thread_name,
            value: Some(AnyValue {
                value: Some(any_value::Value::StringValue(format!("worker-{t}"))),
            }),
            unit_strindex: 0,
        };
        dictionary.attribute_table.push(id);
        dictionary.attribute_table.push(name);
        let at = dictionary.attribute_table.len() as i32;
        thread_attributes.push(vec![at - 2, at - 1]);
    }
    // Samples of one identity (stack, thread) are one `Sample` with a timestamp and a value
    // per observation, as OTLP requires since v1.10; they are kept in order of first use.
    let start_ns = 1_700_000_000_000_000_000u64;
    let ticks = samples.div_ceil(THREADS);
    let mut identities: rustc_hash::FxHashMap<(u64, u64), usize> = Default::default();
    let mut merged: Vec<Sample> = Vec::new();
    for i in 0..samples {
        let (tick, thread) = (i / THREADS, i % THREADS);
        let stack = if rng.next().is_multiple_of(4) {
            rng.next() % STACKS
        } else {
            (thread * 149 + rng.next() % 24) % STACKS
        };
        let at = *identities.entry((stack, thread)).or_insert_with(|| {
            merged.push(Sample {
                stack_index: stack as i32 + 1,
                attribute_indices: thread_attributes[thread as usize].clone(),
                ..Default::default()
            });
            merged.len() - 1
        });
        merged[at].values.push(PERIOD_NS);
        merged[at]
            .timestamps_unix_nano
            .push(start_ns + tick * PERIOD_NS as u64 + thread * 1_000);
    }
    let samples = merged;
    let profile = Profile {
        sample_type: Some(ValueType {
            type_strindex: cpu,
            unit_strindex: ns,
        }),
        samples,
        time_unix_nano: start_ns,
        duration_nano: ticks * PERIOD_NS as u64,
        period_type: Some(ValueType {
            type_strindex: cpu,
            unit_strindex: ns,
        }),
        period: PERIOD_NS,
        profile_id: (1..=16).collect(),
        ..Default::default()
    };
    dictionary.string_table = strings;
    ExportProfilesServiceRequest {
        resource_profiles: vec![ResourceProfiles {
            scope_profiles: vec![ScopeProfiles {
                profiles: vec![profile],
                ..Default::default()
            }],
            ..Default::default()
        }],
        dictionary: Some(dictionary),
    }
    .encode(out)
    .expect("vec grows");
}
