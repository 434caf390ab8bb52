//! An uncompressed pprof CPU profile of at least `bytes` bytes, as Go writes them: samples
//! (count, nanoseconds) over 2,500 stacks of 6,000 locations, each with a goroutine label,
//! so that few samples merge and the file grows with the sample count.

use proflake_proto::pprof::{Function, Label, Line, Location, Mapping, Profile, Sample, ValueType};
use prost::Message;

use super::Rng;

const STACKS: u64 = 2_500;
const LOCATIONS: u64 = 6_000;
const FUNCTIONS: u64 = 3_000;
const PERIOD_NS: i64 = 10_000_000;

/// Writes the profile into `out`.
pub fn profile(bytes: usize, out: &mut Vec<u8>) {
    let mut rng = Rng(0x0bad_5eed_0000_0002);
    let mut strings: Vec<Vec<u8>> = vec![Vec::new()];
    let mut string = |s: &str| {
        strings.push(s.as_bytes().to_vec());
        (strings.len() - 1) as i64
    };
    let (samples_s, count, cpu, nanoseconds) = (
        string("samples"),
        string("count"),
        string("cpu"),
        string("nanoseconds"),
    );
    let goroutine = string("goroutine");
    let binary = string("/usr/local/bin/server");
    let mut p = Profile {
        sample_type: vec![
            ValueType {
                r#type: samples_s,
                unit: count,
            },
            ValueType {
                r#type: cpu,
                unit: nanoseconds,
            },
        ],
        mapping: vec![Mapping {
            id: 1,
            memory_start: 0x40_0000,
            memory_limit: 0x80_0000,
            filename: binary,
            has_functions: true,
            ..Default::default()
        }],
        time_nanos: 1_700_000_000_000_000_000,
        duration_nanos: 60_000_000_000,
        period_type: Some(ValueType {
            r#type: cpu,
            unit: nanoseconds,
        }),
        period: PERIOD_NS,
        ..Default::default()
    };
    for f in 0..FUNCTIONS {
        let name = string(&format!("main.(*server{}).handler{f}", f % 31));
        let file = string(&format!("/src/server/handler{}.go", f % 31));
        p.function.push(Function {
            id: f + 1,
            name,
            system_name: name,
            filename: file,
            start_line: (f % 700) as i64 + 1,
        });
    }
    for l in 0..LOCATIONS {
        p.location.push(Location {
            id: l + 1,
            mapping_id: 1,
            address: 0x40_1000 + l * 0x30,
            line: vec![Line {
                function_id: l % FUNCTIONS + 1,
                line: (l % 900) as i64 + 1,
                ..Default::default()
            }],
            ..Default::default()
        });
    }
    let stacks: Vec<Vec<u64>> = (0..STACKS)
        .map(|_| {
            let depth = 6 + rng.next() % 55;
            (0..depth).map(|_| rng.next() % LOCATIONS + 1).collect()
        })
        .collect();
    p.string_table = strings;
    // Count as we go: the message is only ever one sample larger than the last check.
    let header = p.encoded_len();
    let mut size = header;
    let mut n = 0u64;
    while size < bytes {
        let sample = Sample {
            location_id: stacks[(rng.next() % STACKS) as usize].clone(),
            value: vec![
                1 + (rng.next() % 3) as i64,
                PERIOD_NS * (1 + (rng.next() % 3) as i64),
            ],
            label: vec![Label {
                key: goroutine,
                num: (n % 20_000) as i64 + 1,
                ..Default::default()
            }],
        };
        let len = sample.encoded_len();
        size += 1 + prost::length_delimiter_len(len) + len;
        p.sample.push(sample);
        n += 1;
    }
    p.encode(out).expect("vec grows");
}
