//! speedscope's file format (`https://www.speedscope.app/file-format-schema.json`): the
//! frames shared by every profile, and one profile per thread and series, named
//! `<thread> (<series>)`.
//!
//! - A series of samples becomes a sampled profile: its stacks root first, one per sample in
//!   time order (aggregated samples, which have none, in stored order), weighted by the value.
//! - A span series (each sample a stretch of open spans) becomes an evented profile: frames
//!   opened and closed at times relative to the slice's start, in nanoseconds.
//!
//! speedscope knows the units `nanoseconds`, `microseconds`, `milliseconds`, `seconds` and
//! `bytes`; any other unit (counts, events) is written as `none`.

use std::fmt::Write as _;

use super::slice::{Slice, NONE};

const SCHEMA: &str = "https://www.speedscope.app/file-format-schema.json";

fn speedscope_unit(unit: &str) -> &'static str {
    match unit {
        "nanoseconds" => "nanoseconds",
        "microseconds" => "microseconds",
        "milliseconds" => "milliseconds",
        "seconds" => "seconds",
        "bytes" => "bytes",
        _ => "none",
    }
}

fn json_text(out: &mut String, text: &str) {
    out.push_str(&serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into()));
}

/// The slice as a speedscope document; `name` names the document.
pub(crate) fn write(slice: &Slice, name: &str) -> Vec<u8> {
    let mut out = String::with_capacity(1024 + slice.samples.len() * 16);
    out.push_str("{\"$schema\":");
    json_text(&mut out, SCHEMA);
    out.push_str(",\"name\":");
    json_text(&mut out, name);
    out.push_str(&format!(
        ",\"exporter\":\"proflake {}\",\"activeProfileIndex\":0,\"shared\":{{\"frames\":[",
        env!("CARGO_PKG_VERSION")
    ));
    for (i, f) in slice.frames.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"name\":");
        json_text(&mut out, &f.name);
        if let Some(file) = &f.file {
            out.push_str(",\"file\":");
            json_text(&mut out, file);
        }
        if let Some(line) = f.line.filter(|&l| l > 0) {
            let _ = write!(out, ",\"line\":{line}");
        }
        if let Some(col) = f.column.filter(|&c| c > 0) {
            let _ = write!(out, ",\"col\":{col}");
        }
        out.push('}');
    }
    out.push_str("]},\"profiles\":[");
    // Rows of each (thread, series), in time order.
    let s = &slice.samples;
    let mut order: Vec<u32> = (0..s.len() as u32).collect();
    order.sort_by_key(|&i| {
        let i = i as usize;
        (
            s.thread[i],
            s.series[i],
            s.time_ns[i].is_some(),
            s.time_ns[i],
        )
    });
    let mut first_profile = true;
    let mut start = 0;
    let mut stack = Vec::new();
    while start < order.len() {
        let head = order[start] as usize;
        let (thread, series) = (s.thread[head], s.series[head]);
        let end = start
            + order[start..]
                .iter()
                .take_while(|&&i| s.thread[i as usize] == thread && s.series[i as usize] == series)
                .count();
        let rows = &order[start..end];
        start = end;
        if !first_profile {
            out.push(',');
        }
        first_profile = false;
        let t = &slice.threads[thread as usize];
        let sr = &slice.series[series as usize];
        let thread_name = match (&t.name, t.tid) {
            (Some(name), _) => name.clone(),
            (None, Some(tid)) => format!("thread {tid}"),
            (None, None) => "all threads".to_owned(),
        };
        out.push_str("{\"name\":");
        json_text(&mut out, &format!("{thread_name} ({})", sr.sample_type));
        if sr.spans {
            write_evented(&mut out, slice, rows, &mut stack);
        } else {
            write_sampled(&mut out, slice, rows, speedscope_unit(&sr.unit), &mut stack);
        }
        out.push('}');
    }
    out.push_str("]}");
    out.into_bytes()
}

fn write_sampled(out: &mut String, slice: &Slice, rows: &[u32], unit: &str, stack: &mut Vec<u32>) {
    let s = &slice.samples;
    let total: i64 = rows.iter().map(|&i| s.value[i as usize]).sum();
    let _ = write!(
        out,
        ",\"type\":\"sampled\",\"unit\":\"{unit}\",\"startValue\":0,\"endValue\":{total},\"samples\":["
    );
    for (k, &i) in rows.iter().enumerate() {
        if k > 0 {
            out.push(',');
        }
        out.push('[');
        stack.clear();
        stack.extend(slice.stack(s.node[i as usize]));
        for (j, f) in stack.iter().rev().enumerate() {
            if j > 0 {
                out.push(',');
            }
            let _ = write!(out, "{f}");
        }
        out.push(']');
    }
    out.push_str("],\"weights\":[");
    for (k, &i) in rows.iter().enumerate() {
        if k > 0 {
            out.push(',');
        }
        let _ = write!(out, "{}", s.value[i as usize]);
    }
    out.push(']');
}

/// Stretches of open spans as open and close events: between two stretches, the frames the
/// next one no longer has close (innermost first) and the ones it adds open (outermost
/// first); a gap closes everything.
fn write_evented(out: &mut String, slice: &Slice, rows: &[u32], stack: &mut Vec<u32>) {
    let s = &slice.samples;
    let base = slice.start_ns;
    let mut open: Vec<u32> = Vec::new();
    let mut events = String::new();
    let event = |events: &mut String, kind: char, frame: u32, at: i64| {
        if !events.is_empty() {
            events.push(',');
        }
        let _ = write!(
            events,
            "{{\"type\":\"{kind}\",\"frame\":{frame},\"at\":{at}}}"
        );
    };
    let mut last_end = 0i64;
    for &i in rows {
        let i = i as usize;
        let at = s.time_ns[i].unwrap_or(base).saturating_sub(base);
        let length = s.weight_ns[i].unwrap_or(s.value[i]).max(0);
        if at > last_end {
            while let Some(f) = open.pop() {
                event(&mut events, 'C', f, last_end);
            }
        }
        stack.clear();
        if s.node[i] != NONE {
            stack.extend(slice.stack(s.node[i]));
        }
        stack.reverse();
        let common = open
            .iter()
            .zip(stack.iter())
            .take_while(|(a, b)| a == b)
            .count();
        while open.len() > common {
            let f = open.pop().expect("longer than common");
            event(&mut events, 'C', f, at);
        }
        for &f in &stack[common..] {
            event(&mut events, 'O', f, at);
            open.push(f);
        }
        last_end = last_end.max(at.saturating_add(length));
    }
    while let Some(f) = open.pop() {
        event(&mut events, 'C', f, last_end);
    }
    let _ = write!(
        out,
        ",\"type\":\"evented\",\"unit\":\"nanoseconds\",\"startValue\":0,\"endValue\":{last_end},\"events\":[{events}]"
    );
}
