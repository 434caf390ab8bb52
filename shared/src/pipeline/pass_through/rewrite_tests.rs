//! Tests of symbolized frames in Sample v2: as the writer writes them, and as a pass-through
//! chunk is rewritten with them.

use serde_json::{json, Value};

use super::*;
use crate::formats::sentry::chunk::{frame_handles, read_chunk};
use crate::formats::PassThrough;
use crate::metadata::UploadMetadata;
use crate::model::{
    ids_from_build_id, FrameAddress, FrameKind, Image, InlinedCall, Sample, Series, SeriesKind,
    SymbolStatus,
};
use crate::writers::sample_v2::{check_chunk, check_sample_v2, write_sample_v2, Rule};

/// 2024-03-01T12:00:00Z in ns.
const NOON: i64 = 1_709_294_400_000_000_000;

fn value(json: &[u8]) -> Value {
    serde_json::from_slice(json).expect("JSON")
}

fn call(
    p: &mut Profile,
    function: &str,
    symbol: Option<&str>,
    file: &str,
    line: u32,
) -> InlinedCall {
    InlinedCall {
        function: Some(p.intern(function)),
        system_name: symbol.map(|s| p.intern(s)),
        file: Some(p.intern(file)),
        line: Some(line),
        column: None,
    }
}

/// Symbolizes `frame` as a SymCache hit with a three-level inline chain would:
/// `vec_len` (vec.h:7) inlined into `update` (game.cc:40) inlined into `tick` (main.cc:12),
/// `tick` starting at `start`, in the space of the frame's address.
fn symbolize(p: &mut Profile, start: u64) -> impl FnMut(&mut crate::model::Frame) {
    let function = p.intern("vec_len");
    let symbol = p.intern("_ZN3vec3lenEv");
    let file = p.intern("/src/vec.h");
    let calls: Box<[InlinedCall]> = Box::new([
        call(p, "update", Some("_Z6updatev"), "/src/game.cc", 40),
        call(p, "tick", None, "/src/main.cc", 12),
    ]);
    move |f| {
        f.function = Some(function);
        f.system_name = Some(symbol);
        f.file = Some(file);
        f.line = Some(7);
        f.inlined_into = calls.clone();
        f.function_start = Some(start);
        f.symbol_status = Some(SymbolStatus::Symbolicated);
    }
}

/// The three rows of [`symbolize`]'s frame, leaf first, at `addr`, in `package`, with
/// `sym_addr` on the outermost.
fn symbolized_rows(addr: &str, sym_addr: &str, package: &str, extra: &Value) -> Vec<Value> {
    let row = |function: &str, symbol: Option<&str>, path: &str, file: &str, line: u32| {
        let mut row = json!({
            "abs_path": path, "filename": file, "function": function, "instruction_addr": addr,
            "lineno": line, "package": package, "platform": "native", "status": "symbolicated",
        });
        if let Some(symbol) = symbol {
            row["symbol"] = symbol.into();
        }
        for (k, v) in extra.as_object().unwrap() {
            row[k] = v.clone();
        }
        row
    };
    let mut tick = row("tick", None, "/src/main.cc", "main.cc", 12);
    tick["sym_addr"] = sym_addr.into();
    vec![
        row("vec_len", Some("_ZN3vec3lenEv"), "/src/vec.h", "vec.h", 7),
        row("update", Some("_Z6updatev"), "/src/game.cc", "game.cc", 40),
        tick,
    ]
}

#[test]
fn a_symbolized_frame_is_written_as_sentry_stores_it() {
    let mut p = Profile::new("test");
    let path = p.intern("/data/app/lib/arm64/libgame.so");
    let mut image = Image::new(Some(path), 0x7000_0000, 0x7010_0000);
    (image.code_id, image.debug_id) = ids_from_build_id(&[0xde, 0xad, 0xbe, 0xef]);
    let image = p.add_image(image);
    let mut leaf = crate::model::Frame::new(FrameKind::Native);
    leaf.image = Some(image);
    leaf.address = Some(FrameAddress::ImageRelative(0x1234));
    symbolize(&mut p, 0x1200)(&mut leaf);
    let leaf = p.add_frame(leaf);
    // Recursion inlined at one address: the same function twice, other lines.
    let mut recursive = crate::model::Frame::new(FrameKind::Native);
    recursive.image = Some(image);
    recursive.address = Some(FrameAddress::ImageRelative(0x2000));
    recursive.function = Some(p.intern("walk"));
    recursive.line = Some(5);
    recursive.inlined_into = Box::new([call(&mut p, "walk", None, "walk.c", 9)]);
    recursive.symbol_status = Some(SymbolStatus::Symbolicated);
    let recursive = p.add_frame(recursive);
    let mut missing = crate::model::Frame::new(FrameKind::Native);
    missing.image = Some(image);
    missing.address = Some(FrameAddress::ImageRelative(0x3000));
    missing.symbol_status = Some(SymbolStatus::MissingSymbol);
    let missing = p.add_frame(missing);
    let mut main = crate::model::Frame::new(FrameKind::Native);
    main.function = Some(p.intern("main"));
    main.file = Some(p.intern("/src/main.c"));
    let main = p.add_frame(main);
    let stacks = [
        p.add_stack_from_root([main, missing, leaf]),
        p.add_stack_from_root([main, recursive]),
    ];
    let (name, unit) = (p.intern("cpu"), p.intern("nanoseconds"));
    let series = p.add_series(Series {
        kind: SeriesKind::CpuTime,
        name,
        unit,
        source: None,
        frequency_hz: None,
        period: None,
        spans: false,
    });
    let process = p.add_process(Some(1));
    let thread = p.add_thread(process, Some(1));
    for i in 0..4 {
        let mut s = Sample::new(thread, stacks[i % 2], 1, series);
        s.time = Some(NOON + i as i64 * 10_000_000);
        p.add_sample(s);
    }

    let chunks = write_sample_v2(&p, &UploadMetadata::default(), "id").unwrap();
    assert_eq!(chunks.len(), 1);
    assert_eq!(check_sample_v2(&chunks[0].json), []);
    let chunk = value(&chunks[0].json);
    let package = "/data/app/lib/arm64/libgame.so";
    let mut expected = symbolized_rows("0x70001234", "0x70001200", package, &json!({}));
    let walk = |line: u32| {
        json!({"function": "walk", "lineno": line, "instruction_addr": "0x70002000",
               "package": package, "platform": "native", "status": "symbolicated"})
    };
    // A file without a directory is its own last component.
    let mut outer_walk = walk(9);
    outer_walk["abs_path"] = "walk.c".into();
    outer_walk["filename"] = "walk.c".into();
    expected.extend([
        json!({"instruction_addr": "0x70003000", "package": package, "platform": "native",
               "status": "missing_symbol"}),
        // Not symbolized: the file stays whole in `filename`.
        json!({"abs_path": "/src/main.c", "filename": "/src/main.c", "function": "main"}),
        walk(5),
        outer_walk,
    ]);
    assert_eq!(chunk["profile"]["frames"], Value::Array(expected));
    assert_eq!(
        chunk["profile"]["stacks"],
        json!([[0, 1, 2, 3, 4], [5, 6, 4]])
    );
    let images = &chunk["debug_meta"]["images"];
    assert_eq!(images.as_array().unwrap().len(), 1);
    assert_eq!(images[0]["image_addr"], "0x70000000");

    // Reading the chunk back keeps what symbolization said.
    let read = read_chunk(&chunks[0].json).unwrap();
    let mut back = Profile::new("sample-v2");
    let handles = crate::formats::sentry::chunk::import_frames(&mut back, &read);
    let tick = back.frame(handles[2]);
    assert_eq!(back.opt_str(tick.function), Some("tick"));
    assert_eq!(tick.function_start, Some(0x7000_1200));
    assert_eq!(tick.symbol_status, Some(SymbolStatus::Symbolicated));
    assert_eq!(
        back.opt_str(tick.file),
        Some("/src/main.cc"),
        "the full path"
    );
    let inner = back.frame(handles[0]);
    assert_eq!(back.opt_str(inner.system_name), Some("_ZN3vec3lenEv"));
    assert_eq!(inner.function_start, None);
    let missing = back.frame(handles[3]);
    assert_eq!(missing.symbol_status, Some(SymbolStatus::MissingSymbol));
}

/// A chunk as a native SDK sends it: one unsymbolized frame, one named, and keys no schema
/// names.
fn sdk_chunk() -> Value {
    json!({
        "version": "2",
        "chunk_id": "0123456789abcdef0123456789abcdef",
        "profiler_id": "fedcba9876543210fedcba9876543210",
        "platform": "cocoa",
        "release": "game@1.0",
        "client_sdk": {"name": "sentry.cocoa", "version": "8.0.0"},
        "debug_meta": {"images": [
            {"type": "macho", "code_file": "/app/Game", "image_addr": "0x100000000",
             "debug_id": "7f4a3eb0-885e-8d4c-a04b-05fa32cc4cbd", "image_size": 65536}
        ]},
        "profile": {
            "samples": [
                {"timestamp": 1709294400.0, "stack_id": 0, "thread_id": "259"},
                {"timestamp": 1709294400.01, "stack_id": 1, "thread_id": "259", "x_state": "r"},
                {"timestamp": 1709294400.02, "stack_id": 0, "thread_id": "259"}
            ],
            "stacks": [[0, 1], [1]],
            "frames": [
                {"instruction_addr": "0x100001234", "package": "/app/Game", "in_app": true,
                 "x_trust": "fp"},
                {"function": "main", "instruction_addr": "0x100000100", "package": "/app/Game",
                 "data": {"x": 1}}
            ],
            "thread_metadata": {"259": {"name": "main"}},
            "x_profile": [1]
        },
        "x_chunk": {"kept": true}
    })
}

#[test]
fn a_pass_through_chunk_is_rewritten_with_its_symbolized_frames() {
    let json = serde_json::to_vec(&sdk_chunk()).unwrap();
    let chunk = read_chunk(&json).unwrap();
    assert!(check_chunk(&chunk).is_empty());
    let (mut profile, mut output) = super::super::pass_through(PassThrough {
        chunk: chunk.clone(),
        json: json.clone(),
    });
    let handles = frame_handles(&chunk);
    assert_eq!(handles.len(), 2);
    let mut symbolized = symbolize(&mut profile, 0x1_0000_1200);
    profile.rewrite_frames(|h, f| {
        if h == handles[0] {
            symbolized(f);
        }
    });

    assert_eq!(rewrite_chunk(&mut output, &profile).unwrap(), 1);
    let rewritten = value(&output.json);
    let mut expected = sdk_chunk();
    let frames = &mut expected["profile"]["frames"];
    let unsymbolized = frames[1].clone();
    let extra = json!({"in_app": true, "x_trust": "fp"});
    let mut rows = symbolized_rows("0x100001234", "0x100001200", "/app/Game", &extra);
    for row in &mut rows {
        // The frame said no platform: it keeps the chunk's.
        row.as_object_mut().unwrap().remove("platform");
    }
    rows.push(unsymbolized.clone());
    *frames = Value::Array(rows);
    expected["profile"]["stacks"] = json!([[0, 1, 2, 3], [3]]);
    assert_eq!(rewritten, expected);

    // The frame the symbolizer left alone is written byte for byte as it was.
    let new = read_chunk(&output.json).unwrap();
    let text = |f: &schema::Frame| serde_json::to_string(f).unwrap();
    assert_eq!(text(&new.profile.frames[3]), text(&chunk.profile.frames[1]));
    let old_bytes = text(&chunk.profile.frames[1]);
    let written = String::from_utf8(output.json.clone()).unwrap();
    assert!(written.contains(&old_bytes), "{written}");

    // Relay accepts it; the new frames are distinct although they share an address.
    let violations = check_chunk(&new);
    assert!(
        !violations.iter().any(|v| v.rule.relay_rejects()),
        "{violations:?}"
    );
    assert!(
        !violations.iter().any(|v| v.rule == Rule::DuplicateEntries),
        "{violations:?}"
    );

    // Read back, the chunk is its own symbolized model: rewriting again changes nothing.
    let (again, mut output_again) = super::super::pass_through(PassThrough {
        chunk: new.clone(),
        json: output.json.clone(),
    });
    assert_eq!(rewrite_chunk(&mut output_again, &again).unwrap(), 0);
    assert_eq!(output_again.json, output.json);
}

#[test]
fn a_profile_of_another_chunk_is_refused() {
    let json = serde_json::to_vec(&sdk_chunk()).unwrap();
    let mut chunk = read_chunk(&json).unwrap();
    let handles = frame_handles(&chunk);
    let mut other = Profile::new("test");
    let err = rewrite_frames(&mut chunk, &other, &handles).unwrap_err();
    assert!(err.to_string().contains("has no frame"), "{err}");
    let mut f = crate::model::Frame::new(FrameKind::Native);
    f.address = Some(FrameAddress::Absolute(0x42));
    let h = other.add_frame(f);
    let err = rewrite_frames(&mut chunk, &other, &[h, h]).unwrap_err();
    assert!(err.to_string().contains("not the frame read"), "{err}");
    let err = rewrite_frames(&mut chunk, &other, &[h]).unwrap_err();
    assert!(err.to_string().contains("1 frame handles"), "{err}");
    assert_eq!(chunk, read_chunk(&json).unwrap(), "nothing changed");
}
