//! Profiles of the gcc-built library ([`super::native`]) in the two address forms
//! symbolization handles, and the check that a store's tables name their frames as addr2line
//! does. Shared by the integration tests (a local directory) and the e2e tests (the bucket).

use std::collections::BTreeMap;

use arrow_array::{
    Array, Int32Array, Int64Array, ListArray, RecordBatch, StringArray, StructArray,
};
use proflake::{store::ObjectStore, tables::read_tables, tables::Table};
use proflake_proto::perfetto::trace_packet::{Data, OptionalTrustedPacketSequenceId};
use proflake_proto::perfetto::{
    Callstack, Frame, InternedData, InternedString, Mapping, PerfSample, Trace, TracePacket,
};
use prost::Message;
use serde_json::json;

use super::native::{Level, NativeLib};

/// Where the test pretends the library was loaded: runtime = BASE + virtual address.
pub const BASE: u64 = 0x7f55_0000_0000;
/// 2026-11-01T00:00:00Z.
pub const START_S: u64 = 1_793_491_200;

/// The addresses profiled: every instruction of `work` and `outer`, as leaf frames, and one
/// stack `outer → work` whose caller frame is a return address.
pub struct Addresses {
    /// Leaf frames: every instruction of `work`, and of `outer` but the return address.
    pub leaves: Vec<u64>,
    /// The return address of `outer`'s call to `work`.
    pub ret: u64,
    /// The leaf of the `outer → work` stack.
    pub callee: u64,
}

/// The addresses profiled in `lib`.
pub fn addresses(lib: &NativeLib) -> Addresses {
    let ret = lib.return_address("outer", "work");
    let mut leaves = lib.instructions("work");
    // An absolute address that is both a leaf and a return address is one model frame, looked
    // up as a return address (the documented rule): the return address is not a leaf here.
    leaves.extend(lib.instructions("outer").into_iter().filter(|&a| a != ret));
    Addresses {
        callee: leaves[0],
        ret,
        leaves,
    }
}

fn packet() -> TracePacket {
    TracePacket {
        optional_trusted_packet_sequence_id: Some(
            OptionalTrustedPacketSequenceId::TrustedPacketSequenceId(1),
        ),
        ..Default::default()
    }
}

/// A traced_perf-style trace: one single-frame callstack per leaf address, and one
/// `outer → work` callstack whose caller `rel_pc` the unwinder already moved into the call
/// (return address − 1 on x86-64).
pub fn perfetto_trace(lib: &NativeLib, a: &Addresses) -> Vec<u8> {
    let text = lib.text();
    let s = |iid: u64, v: &[u8]| InternedString {
        iid: Some(iid),
        r#str: Some(v.to_vec()),
    };
    let raw_build_id = hex::decode(&lib.build_id).unwrap();
    let mut rel_pcs: Vec<u64> = a.leaves.clone();
    rel_pcs.push(a.ret - 1);
    let frames: Vec<Frame> = rel_pcs
        .iter()
        .enumerate()
        .map(|(i, &pc)| Frame {
            iid: Some(i as u64 + 1),
            mapping_id: Some(1),
            rel_pc: Some(pc),
            ..Default::default()
        })
        .collect();
    let mut callstacks: Vec<Callstack> = (0..a.leaves.len() as u64)
        .map(|i| Callstack {
            iid: Some(i + 1),
            frame_ids: vec![i + 1],
        })
        .collect();
    let callee_frame = a.leaves.iter().position(|&x| x == a.callee).unwrap() as u64 + 1;
    // Perfetto callstacks are root first.
    callstacks.push(Callstack {
        iid: Some(callstacks.len() as u64 + 1),
        frame_ids: vec![rel_pcs.len() as u64, callee_frame],
    });
    let interned = InternedData {
        build_ids: vec![s(1, &raw_build_id)],
        mapping_paths: vec![s(1, b"data"), s(2, b"app"), s(3, b"libwork.so")],
        mappings: vec![Mapping {
            iid: Some(1),
            build_id: Some(1),
            start: Some(BASE + text.vaddr),
            end: Some(BASE + text.vaddr + text.filesz),
            exact_offset: Some(text.offset),
            start_offset: Some(0),
            load_bias: Some(text.vaddr - text.offset),
            path_string_ids: vec![1, 2, 3],
        }],
        frames,
        callstacks: callstacks.clone(),
        ..Default::default()
    };
    let mut first = packet();
    first.sequence_flags = Some(1);
    first.timestamp = Some(1_000_000);
    first.interned_data = Some(interned);
    let mut packets = vec![first];
    for (i, c) in callstacks.iter().enumerate() {
        let mut p = packet();
        p.sequence_flags = Some(2);
        p.timestamp = Some(1_000_000 + (i as u64 + 1) * 1_000_000);
        p.data = Some(Data::PerfSample(PerfSample {
            cpu: Some(0),
            pid: Some(42),
            tid: Some(42),
            cpu_mode: Some(2),
            callstack_iid: c.iid,
            ..Default::default()
        }));
        packets.push(p);
    }
    Trace { packet: packets }.encode_to_vec()
}

/// An OTLP/JSON request of the eBPF profiler's shape: absolute addresses in a mapping of the
/// code segment, one leaf location per address and one `outer → work` stack whose caller
/// location is the return address itself.
pub fn otlp_request(lib: &NativeLib, a: &Addresses) -> Vec<u8> {
    let text = lib.text();
    let mut locations = vec![json!({})];
    let mut stacks = vec![json!({})];
    let mut samples = Vec::new();
    let mut runtime: Vec<u64> = a.leaves.iter().map(|va| BASE + va).collect();
    runtime.push(BASE + a.ret);
    for (i, abs) in runtime.iter().enumerate() {
        locations
            .push(json!({"mappingIndex": 1, "address": abs.to_string(), "attributeIndices": [2]}));
        if i < a.leaves.len() {
            stacks.push(json!({"locationIndices": [i + 1]}));
        }
    }
    let callee = a.leaves.iter().position(|&x| x == a.callee).unwrap() + 1;
    // Leaf first, as pprof.
    stacks.push(json!({"locationIndices": [callee, runtime.len()]}));
    for s in 1..stacks.len() {
        let t = (START_S * 1_000_000_000 + s as u64 * 10_000_000).to_string();
        samples.push(json!({"stackIndex": s, "timestampsUnixNano": [t]}));
    }
    let request = json!({
        "resourceProfiles": [{
            "resource": {"attributes": [{"key": "process.pid", "value": {"intValue": "42"}}]},
            "scopeProfiles": [{"profiles": [{
                "sampleType": {"typeStrindex": 3, "unitStrindex": 4},
                "samples": samples,
                "timeUnixNano": (START_S * 1_000_000_000).to_string(),
                "durationNano": "1000000000",
                "periodType": {"typeStrindex": 5, "unitStrindex": 6},
                "period": "10000000"
            }]}]
        }],
        "dictionary": {
            "mappingTable": [{}, {
                "memoryStart": (BASE + text.vaddr).to_string(),
                "memoryLimit": (BASE + text.vaddr + text.filesz).to_string(),
                "fileOffset": text.offset.to_string(),
                "filenameStrindex": 7,
                "attributeIndices": [1]
            }],
            "locationTable": locations,
            "stackTable": stacks,
            "stringTable": ["", "process.executable.build_id.gnu", "profile.frame.type",
                            "samples", "count", "cpu", "nanoseconds", "/data/app/libwork.so"],
            "attributeTable": [{},
                {"keyStrindex": 1, "value": {"stringValue": lib.build_id}},
                {"keyStrindex": 2, "value": {"stringValue": "native"}}]
        }
    });
    serde_json::to_vec(&request).unwrap()
}

fn col<'a, T: 'static>(b: &'a RecordBatch, name: &str) -> &'a T {
    b.column_by_name(name)
        .unwrap_or_else(|| panic!("column {name}"))
        .as_any()
        .downcast_ref::<T>()
        .unwrap()
}

fn opt_str(a: &StringArray, i: usize) -> Option<String> {
    a.is_valid(i).then(|| a.value(i).to_owned())
}

fn opt_u32(a: &Int32Array, i: usize) -> Option<u32> {
    a.is_valid(i).then(|| a.value(i) as u32)
}

/// Each frame of the tables that has an address: (source format, address space, address) →
/// its inline chain, innermost first, read from `function`/`file`/`line` and `inlined_into`.
pub fn table_chains(store: &dyn ObjectStore) -> BTreeMap<(String, u64), Vec<Level>> {
    let t = read_tables(store, &[Table::Frames], None, None).unwrap();
    let f = &t.frames;
    let (function, file, line) = (
        col::<StringArray>(f, "function"),
        col::<StringArray>(f, "file"),
        col::<Int32Array>(f, "line"),
    );
    let (address, space) = (
        col::<Int64Array>(f, "address"),
        col::<StringArray>(f, "address_space"),
    );
    let inlined = col::<ListArray>(f, "inlined_into");
    let mut out = BTreeMap::new();
    for i in 0..f.num_rows() {
        if !address.is_valid(i) {
            continue;
        }
        let mut chain = Vec::new();
        if let Some(function) = opt_str(function, i) {
            chain.push(Level {
                function,
                file: opt_str(file, i),
                line: opt_u32(line, i),
            });
        }
        let calls = inlined.value(i);
        let calls = calls.as_any().downcast_ref::<StructArray>().unwrap();
        let (cf, cfile, cline) = (
            calls
                .column_by_name("function")
                .unwrap()
                .as_any()
                .downcast_ref::<StringArray>()
                .unwrap(),
            calls
                .column_by_name("file")
                .unwrap()
                .as_any()
                .downcast_ref::<StringArray>()
                .unwrap(),
            calls
                .column_by_name("line")
                .unwrap()
                .as_any()
                .downcast_ref::<Int32Array>()
                .unwrap(),
        );
        for j in 0..calls.len() {
            chain.push(Level {
                function: opt_str(cf, j).unwrap_or_default(),
                file: opt_str(cfile, j),
                line: opt_u32(cline, j),
            });
        }
        out.insert((space.value(i).to_owned(), address.value(i) as u64), chain);
    }
    out
}

/// Asserts that every profiled address reads in the tables as addr2line reads it: leaf
/// addresses as they are, the caller at its call instruction (return address − 1).
pub fn assert_matches_addr2line(lib: &NativeLib, a: &Addresses, store: &dyn ObjectStore) {
    let chains = table_chains(store);
    let mut lookups: Vec<u64> = a.leaves.clone();
    lookups.push(a.ret - 1);
    let expected = lib.addr2line(&lookups);
    let mut compared = 0;
    for (i, want) in expected.iter().enumerate() {
        let va = lookups[i];
        // Perfetto: the rel_pc is the virtual address (the caller's already adjusted).
        let perfetto = &chains[&("image_relative".to_owned(), va)];
        assert_eq!(perfetto, want, "rel_pc {va:#x}");
        // OTLP: the absolute address; the caller's is the return address itself.
        let abs = if i == a.leaves.len() {
            BASE + a.ret
        } else {
            BASE + va
        };
        let otlp = &chains[&("absolute".to_owned(), abs)];
        assert_eq!(otlp, want, "absolute {abs:#x} (virtual address {va:#x})");
        compared += 2;
    }
    assert_eq!(compared, 2 * (a.leaves.len() + 1));
    let inline_levels: usize = expected.iter().map(|c| c.len()).max().unwrap();
    assert!(
        inline_levels >= 2,
        "the library has inlined code at the addresses profiled"
    );
}
