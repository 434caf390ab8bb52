//! A real native library for symbolization tests: C built by gcc inside the test (build ID on,
//! `-O2` with forced inlining, linked at 0x200000 so its load bias is not zero), and binutils'
//! own answers about it (`readelf`, `objdump`, `addr2line`), the independent reference.

use std::path::PathBuf;
use std::process::Command;

/// The library's source. `mix` and `fold` are always inlined: `work`'s loop has two inline
/// levels, `outer` calls `work` (a return address to adjust).
const SOURCE: &str = r#"
static inline __attribute__((always_inline)) unsigned mix(unsigned x) {
    return (x * 2654435761u) ^ (x >> 7);
}
static inline __attribute__((always_inline)) unsigned fold(unsigned n) {
    unsigned s = 0;
    for (unsigned i = 0; i < n; i++)
        s += mix(i + s);
    return s;
}
__attribute__((noinline)) unsigned work(unsigned n) {
    return fold(n) + 1;
}
__attribute__((noinline)) unsigned outer(unsigned n) {
    unsigned t = 0;
    for (unsigned i = 0; i < n; i++)
        t ^= work(i);
    return t;
}
"#;

/// Where the library's first segment starts (its load address).
pub const LINKED_AT: u64 = 0x20_0000;

/// One loadable segment, as readelf prints it.
#[derive(Clone, Copy, Debug)]
pub struct Load {
    pub offset: u64,
    pub vaddr: u64,
    pub filesz: u64,
    pub executable: bool,
}

/// The built library and what binutils say about it.
pub struct NativeLib {
    /// Holds the build directory for as long as the library is used.
    pub _dir: tempfile::TempDir,
    pub path: PathBuf,
    pub build_id: String,
    pub loads: Vec<Load>,
}

/// One inline level as addr2line prints it: function, file and line (`None` for `??`/0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Level {
    pub function: String,
    pub file: Option<String>,
    pub line: Option<u32>,
}

fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e} (scripts/test.sh installs it)"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("tool output is text")
}

/// Builds the library with `extra` linker/compiler flags.
pub fn build(name: &str, extra: &[&str]) -> NativeLib {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("work.c");
    std::fs::write(&src, SOURCE).unwrap();
    let path = dir.path().join(name);
    let text_segment = format!("-Wl,-Ttext-segment={LINKED_AT:#x}");
    run(Command::new("gcc")
        .args(["-O2", "-g", "-fPIC", "-shared", "-Wl,--build-id=sha1"])
        .arg(&text_segment)
        .args(extra)
        .arg("-o")
        .arg(&path)
        .arg(&src));
    let notes = run(Command::new("readelf").arg("-n").arg(&path));
    let build_id = notes
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: "))
        .unwrap_or_default()
        .trim()
        .to_owned();
    let loads = run(Command::new("readelf").arg("-lW").arg(&path))
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.first() == Some(&"LOAD")).then(|| Load {
                offset: hex(f[1]),
                vaddr: hex(f[2]),
                filesz: hex(f[4]),
                executable: f[6..f.len() - 1].contains(&"E"),
            })
        })
        .collect::<Vec<_>>();
    assert_eq!(loads[0].vaddr, LINKED_AT, "linked where asked");
    NativeLib {
        _dir: dir,
        path,
        build_id,
        loads,
    }
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
}

impl NativeLib {
    /// The executable segment.
    pub fn text(&self) -> Load {
        *self
            .loads
            .iter()
            .find(|l| l.executable)
            .expect("a code segment")
    }

    /// Every instruction address of `function` (ELF virtual addresses), from objdump, within
    /// the function's symbol (the alignment padding after it is never executed).
    pub fn instructions(&self, function: &str) -> Vec<u64> {
        let symbols = run(Command::new("readelf").arg("-sW").arg(&self.path));
        let (start, size) = symbols
            .lines()
            .find_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.len() >= 8 && f[3] == "FUNC" && f[7] == function)
                    .then(|| (hex(f[1]), f[2].parse::<u64>().unwrap()))
            })
            .expect("readelf lists the function");
        let listing = run(Command::new("objdump")
            .args(["-d", "--no-show-raw-insn"])
            .arg(&self.path));
        let header = format!("<{function}>:");
        let mut inside = false;
        let mut out = Vec::new();
        for line in listing.lines() {
            if line.ends_with(&header) {
                inside = true;
                continue;
            }
            if inside {
                let Some((addr, _)) = line.trim().split_once(':') else {
                    break; // blank line ends the function
                };
                match u64::from_str_radix(addr, 16) {
                    Ok(a) if a < start + size => out.push(a),
                    _ => break,
                }
            }
        }
        assert!(!out.is_empty(), "objdump lists {function}");
        out
    }

    /// The return address of `caller`'s call to `callee`: the instruction after the call.
    pub fn return_address(&self, caller: &str, callee: &str) -> u64 {
        let listing = run(Command::new("objdump")
            .args(["-d", "--no-show-raw-insn"])
            .arg(&self.path));
        let header = format!("<{caller}>:");
        let mut lines = listing
            .lines()
            .skip_while(|l| !l.ends_with(&header))
            .skip(1);
        // Through the PLT in a shared library: `<work@plt>`.
        let (direct, plt) = (format!("<{callee}>"), format!("<{callee}@plt>"));
        while let Some(line) = lines.next() {
            if line.contains("call") && (line.contains(&direct) || line.contains(&plt)) {
                let next = lines.next().expect("an instruction follows the call");
                return hex(next.trim().split_once(':').unwrap().0);
            }
        }
        panic!("{caller} calls {callee}");
    }

    /// addr2line's inline chain (innermost first) for each virtual address.
    pub fn addr2line(&self, addresses: &[u64]) -> Vec<Vec<Level>> {
        let mut cmd = Command::new("addr2line");
        cmd.args(["-a", "-f", "-i", "-C", "-e"]).arg(&self.path);
        for a in addresses {
            cmd.arg(format!("{a:#x}"));
        }
        let out = run(&mut cmd);
        let mut chains: Vec<Vec<Level>> = Vec::new();
        let mut lines = out.lines().peekable();
        while let Some(line) = lines.next() {
            if line.starts_with("0x") {
                chains.push(Vec::new());
                continue;
            }
            let location = lines.next().expect("a location follows each function");
            let (file, line_no) = location.rsplit_once(':').expect("file:line");
            let line_no = line_no.split_whitespace().next().unwrap_or("");
            chains.last_mut().expect("address first").push(Level {
                function: line.to_owned(),
                file: (file != "??").then(|| file.to_owned()),
                line: line_no.parse().ok().filter(|&l| l != 0),
            });
        }
        assert_eq!(chains.len(), addresses.len());
        chains
    }

    /// The library's bytes.
    pub fn bytes(&self) -> Vec<u8> {
        std::fs::read(&self.path).unwrap()
    }

    /// A copy split into a stripped library and its separate `.debug` file (objcopy
    /// `--only-keep-debug`), as distributions ship them.
    pub fn split_debug(&self) -> (Vec<u8>, Vec<u8>) {
        let debug = self.path.with_extension("debug");
        let stripped = self.path.with_extension("stripped");
        run(Command::new("objcopy")
            .arg("--only-keep-debug")
            .arg(&self.path)
            .arg(&debug));
        run(Command::new("objcopy")
            .arg("--strip-debug")
            .arg(&self.path)
            .arg(&stripped));
        (
            std::fs::read(&stripped).unwrap(),
            std::fs::read(&debug).unwrap(),
        )
    }

    /// A copy with compressed debug sections (`objcopy --compress-debug-sections`).
    pub fn compressed_debug(&self) -> Vec<u8> {
        let out = self.path.with_extension("zdebug");
        run(Command::new("objcopy")
            .arg("--compress-debug-sections=zlib")
            .arg(&self.path)
            .arg(&out));
        std::fs::read(out).unwrap()
    }
}

/// Where the test tools scripts/test.sh installs live (`dump_syms`).
pub fn tool(name: &str) -> PathBuf {
    let local = super::repo_path(".tools/bin").join(name);
    if local.is_file() {
        local
    } else {
        PathBuf::from(name)
    }
}

impl NativeLib {
    /// The Breakpad symbol file Mozilla's `dump_syms` writes for the library, with inline
    /// records.
    pub fn breakpad(&self) -> Vec<u8> {
        let out = run(Command::new(tool("dump_syms"))
            .arg("--inlines")
            .arg(&self.path));
        assert!(out.starts_with("MODULE "), "dump_syms wrote a symbol file");
        out.into_bytes()
    }
}
