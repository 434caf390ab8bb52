//! Callchain lines, `ADDRESS SYMBOL[+0xOFFSET] (DSO)`, leaf first, into frames.
//!
//! With inline information perf prints one line per function at an address, innermost first,
//! each with `(inlined)` in place of its DSO, then the function the code was inlined into with
//! its DSO. Those lines are one frame: its function is the innermost, `inlined_into` lists the
//! others. When DWARF names the outer function differently from the ELF symbol, perf prints
//! every line of the address as `(inlined)`; the frame then has no image.

use rustc_hash::FxHashMap;

use crate::formats::demangle::demangle;
use crate::model::{
    Frame, FrameAddress, FrameHandle, FrameKind, Image, InlinedCall, Profile, StringHandle,
};

/// The DSO perf prints for a line of inlined code.
const INLINED: &str = "inlined";

/// One callchain line, borrowed from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct FrameLine<'a> {
    pub address: u64,
    /// `None` for `[unknown]` (or no symbol printed).
    pub symbol: Option<&'a str>,
    /// `None` when no DSO is printed or it is `[unknown]`.
    pub dso: Option<&'a str>,
    pub inlined: bool,
}

/// Parses a callchain line (leading blanks and trailing `\r` already gone); `None` when it
/// does not start with a hexadecimal address.
pub(super) fn parse(line: &str) -> Option<FrameLine<'_>> {
    let line = line.trim_matches([' ', '\t']);
    let (address, rest) = match line.find([' ', '\t']) {
        Some(i) => (&line[..i], line[i..].trim_start_matches([' ', '\t'])),
        None => (line, ""),
    };
    if address.is_empty() || address.len() > 16 {
        return None;
    }
    let address = u64::from_str_radix(address, 16).ok()?;
    // The DSO is the last parenthesized word; a symbol may hold parentheses and blanks.
    let (symbol, dso) = match rest
        .strip_suffix(')')
        .and_then(|r| r.rfind(" (").map(|i| (r, i)))
    {
        Some((r, i)) => (r[..i].trim_end(), Some(&r[i + 2..])),
        None if rest.starts_with('(') && rest.ends_with(')') => {
            ("", Some(&rest[1..rest.len() - 1]))
        }
        None => (rest, None),
    };
    let inlined = dso == Some(INLINED);
    Some(FrameLine {
        address,
        symbol: symbol_name(symbol),
        dso: dso.filter(|d| !inlined && *d != "[unknown]" && !d.is_empty()),
        inlined,
    })
}

/// The symbol without perf's `+0xOFFSET`; `None` for `[unknown]` or nothing.
fn symbol_name(symbol: &str) -> Option<&str> {
    let symbol = match symbol.rfind("+0x") {
        Some(i)
            if symbol[i + 3..].bytes().all(|b| b.is_ascii_hexdigit()) && i + 3 < symbol.len() =>
        {
            &symbol[..i]
        }
        _ => symbol,
    };
    Some(symbol).filter(|s| !s.is_empty() && *s != "[unknown]")
}

/// The kind of a frame in `dso`: perf names kernel code `[kernel.kallsyms]` and kernel
/// modules `[module]`; the bracketed user-space mappings are the exceptions.
fn kind(dso: Option<&str>) -> FrameKind {
    const USER_SPACE: [&str; 6] = [
        "[vdso]",
        "[vsyscall]",
        "[heap]",
        "[stack]",
        "[vectors]",
        "[uprobes]",
    ];
    match dso {
        Some(d) if d.starts_with('[') && d.ends_with(']') => {
            if USER_SPACE.contains(&d) || d.starts_with("[anon") || d.starts_with("[jit") {
                FrameKind::Native
            } else {
                FrameKind::Kernel
            }
        }
        _ => FrameKind::Native,
    }
}

/// A record's frames, built as its lines come and interned by their text, so a frame seen
/// before costs one hash lookup and no allocation.
pub(super) struct Frames {
    /// By the text of the frame's lines (one, or an address's inlined lines and its own).
    known: FxHashMap<Box<str>, FrameHandle>,
    /// The `(inlined)` lines waiting for the line of their address, joined by `\n`.
    pending: String,
    pending_address: Option<u64>,
}

impl Frames {
    pub(super) fn new() -> Self {
        Frames {
            known: FxHashMap::default(),
            pending: String::new(),
            pending_address: None,
        }
    }

    /// Takes one callchain line (`text` trimmed, `line` parsed from it); gives the frames it
    /// completes, leaf first, to `push`.
    pub(super) fn line(
        &mut self,
        profile: &mut Profile,
        text: &str,
        line: &FrameLine<'_>,
        mut push: impl FnMut(FrameHandle),
    ) {
        if self.pending_address.is_some_and(|a| a != line.address) {
            if let Some(frame) = self.flush(profile) {
                push(frame);
            }
        }
        if line.inlined {
            self.pending_address = Some(line.address);
            self.pending.push_str(text);
            self.pending.push('\n');
            return;
        }
        if self.pending_address.take().is_none() {
            push(self.intern(profile, text));
            return;
        }
        self.pending.push_str(text);
        let key = std::mem::take(&mut self.pending);
        push(self.intern(profile, &key));
        self.pending = key;
        self.pending.clear();
    }

    /// The frame of inlined lines no line of their own address followed; `None` without any.
    pub(super) fn flush(&mut self, profile: &mut Profile) -> Option<FrameHandle> {
        self.pending_address.take()?;
        let key = std::mem::take(&mut self.pending);
        let frame = self.intern(profile, key.trim_end_matches('\n'));
        self.pending = key;
        self.pending.clear();
        Some(frame)
    }

    fn intern(&mut self, profile: &mut Profile, key: &str) -> FrameHandle {
        if let Some(&frame) = self.known.get(key) {
            return frame;
        }
        let frame = build(profile, key);
        self.known.insert(key.into(), frame);
        frame
    }
}

/// The frame of one address's lines (innermost first, each a line `parse` accepted).
fn build(profile: &mut Profile, key: &str) -> FrameHandle {
    let lines: Vec<FrameLine<'_>> = key.split('\n').filter_map(parse).collect();
    let Some((first, callers)) = lines.split_first() else {
        // Every line of a key was parsed before it was added: not reached.
        return profile.add_frame(Frame::new(FrameKind::Unknown));
    };
    let outer = callers.last().unwrap_or(first);
    let mut frame = Frame::new(kind(outer.dso));
    (frame.function, frame.system_name) = names(profile, first.symbol);
    frame.address = Some(FrameAddress::Absolute(first.address));
    frame.image = outer.dso.map(|dso| {
        let path = profile.intern(dso);
        // perf script prints no mapping range.
        profile.add_image(Image::new(Some(path), 0, 0))
    });
    frame.inlined_into = callers
        .iter()
        .map(|caller| {
            let (function, system_name) = names(profile, caller.symbol);
            InlinedCall {
                function,
                system_name,
                file: None,
                line: None,
                column: None,
            }
        })
        .collect();
    profile.add_frame(frame)
}

/// A symbol's readable name, and the symbol as printed when that differs.
fn names(
    profile: &mut Profile,
    symbol: Option<&str>,
) -> (Option<StringHandle>, Option<StringHandle>) {
    let Some(symbol) = symbol else {
        return (None, None);
    };
    let readable = demangle(symbol);
    let mangled = (readable != symbol).then(|| profile.intern(symbol));
    (Some(profile.intern(&readable)), mangled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_as_perf_prints_them() {
        let l = parse("643 _Z4betav (/workdir/simple-terminates)").unwrap();
        assert_eq!(
            (l.address, l.symbol, l.dso, l.inlined),
            (
                0x643,
                Some("_Z4betav"),
                Some("/workdir/simple-terminates"),
                false
            )
        );
        let l = parse("6ce258d4c544155 [unknown] ([unknown])").unwrap();
        assert_eq!((l.symbol, l.dso), (None, None));
        let l = parse("ffffffffa4c7c5c6 native_write_msr+0x6 ([kernel.kallsyms])").unwrap();
        assert_eq!(
            (l.symbol, l.dso),
            (Some("native_write_msr"), Some("[kernel.kallsyms]"))
        );
        let l = parse("7f4547e3f04b _dl_start_final+0x25b (inlined)").unwrap();
        assert_eq!(
            (l.symbol, l.dso, l.inlined),
            (Some("_dl_start_final"), None, true)
        );
        let l =
            parse("4005f6 std::vector<int>::push_back(int const&)+0x1c (/tmp/a b.out)").unwrap();
        assert_eq!(
            (l.symbol, l.dso),
            (
                Some("std::vector<int>::push_back(int const&)"),
                Some("/tmp/a b.out")
            )
        );
        let l = parse("4005f6 x+0xzz").unwrap();
        assert_eq!((l.symbol, l.dso), (Some("x+0xzz"), None));
        assert_eq!(parse("4005f6 (/bin/x)").unwrap().dso, Some("/bin/x"));
        assert_eq!(parse("main (/bin/x)"), None);
        assert_eq!(parse("a.c:5"), None);
    }

    #[test]
    fn kernel_and_user_mappings() {
        assert_eq!(kind(Some("[kernel.kallsyms]")), FrameKind::Kernel);
        assert_eq!(kind(Some("[nf_conntrack]")), FrameKind::Kernel);
        assert_eq!(kind(Some("[vdso]")), FrameKind::Native);
        assert_eq!(kind(Some("/lib/libc.so.6")), FrameKind::Native);
        assert_eq!(kind(None), FrameKind::Native);
    }

    #[test]
    fn inlined_lines_fold_into_the_line_of_their_address() {
        let mut profile = Profile::new("perf-script");
        let mut frames = Frames::new();
        let mut got = Vec::new();
        for text in [
            "7f4b304 elf_machine_rela_relative+0x924 (inlined)",
            "7f4b304 elf_dynamic_do_Rela+0x924 (inlined)",
            "7f4b304 _dl_relocate_object+0x924 (/lib/ld.so)",
            "7f9a53a determine_info+0x13a (inlined)",
            "7f43a5 main+0x5 (/bin/x)",
        ] {
            frames.line(&mut profile, text, &parse(text).unwrap(), |f| got.push(f));
        }
        assert_eq!(frames.flush(&mut profile), None);
        assert_eq!(got.len(), 3);
        let f = profile.frame(got[0]);
        assert_eq!(
            profile.opt_str(f.function),
            Some("elf_machine_rela_relative")
        );
        let outer: Vec<_> = f
            .inlined_into
            .iter()
            .map(|c| profile.opt_str(c.function))
            .collect();
        assert_eq!(
            outer,
            [Some("elf_dynamic_do_Rela"), Some("_dl_relocate_object")]
        );
        assert!(f.image.is_some());
        let f = profile.frame(got[1]);
        assert_eq!(
            (profile.opt_str(f.function), f.image, f.inlined_into.len()),
            (Some("determine_info"), None, 0)
        );
        assert_eq!(f.address, Some(FrameAddress::Absolute(0x7f9a53a)));
    }
}
