//! Folded stacks (`root;…;leaf weight`), as flamegraph.pl, inferno and speedscope read them:
//! one series, summed per stack. Folded stacks carry no time, thread, unit or frame detail
//! beyond a name.

use rustc_hash::FxHashMap;

use super::slice::{Slice, NONE};

/// A frame name as one folded-stack field. Folded lines are `a;b;c <count>`, and inferno
/// reads them back with a few rules a name must not trip:
/// - `;` separates frames, so it becomes `,` (`[u8; 8]` reads `[u8, 8]`);
/// - a line is one line and is trimmed, so control characters become spaces and the name is
///   trimmed, or the root and leaf would differ from the same frame elsewhere;
/// - the count is the last space-separated field, and a second numeric field before it makes
///   the line differential, so a name ending in ` <digits>` gets a no-break space instead;
/// - a line starting `# ` is a comment, so a leading `# ` also gets a no-break space;
/// - an empty name would merge into the graph's root: it reads `<unknown>`, as `frames.name`
///   does for a frame nothing is known of.
pub(crate) fn flame_frame_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| match c {
            ';' => ',',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect();
    out = out.trim().to_owned();
    if out.is_empty() {
        return "<unknown>".into();
    }
    if let Some(space) = out.rfind(' ') {
        let last = &out[space + 1..];
        if last.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            out.replace_range(space..=space, "\u{a0}");
        }
    }
    if out.starts_with("# ") {
        out.replace_range(1..2, "\u{a0}");
    }
    out
}

/// The one frame of samples without a stack.
pub(crate) const NO_STACK: &str = "<no stack>";

/// The folded lines of one series: `(path, summed value)`, sorted by path. Values are summed
/// per stack; a stack whose values sum to zero or less is left out, as folded weights are
/// counts.
pub(crate) fn fold(slice: &Slice, series: usize) -> Vec<(String, u64)> {
    let mut by_node: FxHashMap<u32, i64> = FxHashMap::default();
    let s = &slice.samples;
    for i in 0..s.len() {
        if s.series[i] as usize == series {
            *by_node.entry(s.node[i]).or_default() += s.value[i];
        }
    }
    let names: Vec<String> = slice
        .frames
        .iter()
        .map(|f| flame_frame_name(&f.name))
        .collect();
    let mut frames: Vec<u32> = Vec::new();
    let mut by_path: FxHashMap<String, u64> = FxHashMap::default();
    for (node, value) in by_node {
        let Ok(value) = u64::try_from(value) else {
            continue;
        };
        if value == 0 {
            continue;
        }
        let path = if node == NONE {
            NO_STACK.to_owned()
        } else {
            frames.clear();
            frames.extend(slice.stack(node));
            let mut path = String::new();
            for (i, &f) in frames.iter().rev().enumerate() {
                if i > 0 {
                    path.push(';');
                }
                path.push_str(&names[f as usize]);
            }
            path
        };
        // Two frames whose names only differ in what folding replaces are one path.
        *by_path.entry(path).or_default() += value;
    }
    let mut lines: Vec<(String, u64)> = by_path.into_iter().collect();
    lines.sort_unstable();
    lines
}

/// `fold`'s lines as text, one `path weight` per line.
pub(crate) fn write(lines: &[(String, u64)]) -> Vec<u8> {
    let mut out = String::new();
    for (path, weight) in lines {
        out.push_str(path);
        out.push(' ');
        out.push_str(&weight.to_string());
        out.push('\n');
    }
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_names_cannot_break_a_folded_line() {
        assert_eq!(flame_frame_name("fib"), "fib");
        assert_eq!(flame_frame_name("drop<[u8; 8]>"), "drop<[u8, 8]>");
        assert_eq!(flame_frame_name("a\nb\t"), "a b");
        assert_eq!(flame_frame_name("  "), "<unknown>");
        assert_eq!(flame_frame_name("retry 3"), "retry\u{a0}3");
        assert_eq!(flame_frame_name("v 1.5"), "v\u{a0}1.5");
        assert_eq!(flame_frame_name("frame 3x"), "frame 3x");
        assert_eq!(flame_frame_name("# note"), "#\u{a0}note");
        assert_eq!(
            flame_frame_name("<module> (workload.py:48)"),
            "<module> (workload.py:48)"
        );
    }
}
