//! Frames and the images they live in.

use debugid::{CodeId, DebugId};

use super::{BuildId, ImageHandle, StringHandle};

/// What kind of code a frame belongs to. Closed on purpose: decoders map their format's
/// vocabulary onto it, and anything else lands in `Other` with the producer's own word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrameKind {
    /// Nothing says what kind of code this is.
    Unknown,
    /// Machine code from an executable or shared library.
    Native,
    /// Operating-system kernel code.
    Kernel,
    /// Managed JVM / Android ART code (Java, Kotlin).
    Jvm,
    /// Code run by an interpreter, language not known.
    Interpreted,
    /// Just-in-time compiled code.
    Jit,
    /// Garbage-collector work.
    Gc,
    /// Language runtime internals.
    Runtime,
    /// CPython code.
    Python,
    /// JavaScript (V8 and others).
    JavaScript,
    /// A kind named by the producer that none of the above covers.
    Other(StringHandle),
}

impl FrameKind {
    /// The stable lowercase name used in outputs and tables; `Other` kinds have their own.
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            FrameKind::Unknown => "unknown",
            FrameKind::Native => "native",
            FrameKind::Kernel => "kernel",
            FrameKind::Jvm => "jvm",
            FrameKind::Interpreted => "interpreted",
            FrameKind::Jit => "jit",
            FrameKind::Gc => "gc",
            FrameKind::Runtime => "runtime",
            FrameKind::Python => "python",
            FrameKind::JavaScript => "javascript",
            FrameKind::Other(_) => return None,
        })
    }
}

/// Where a frame's instruction address points.
///
/// Formats disagree on the address space, and a symbolizer needs to know which one it got,
/// so the model keeps the value as recorded together with its space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrameAddress {
    /// A runtime virtual address in the sampled process (pprof, OTLP, Sentry `instruction_addr`).
    Absolute(u64),
    /// An address relative to the start of the frame's image file as the producer computed
    /// it (Perfetto `rel_pc`: unwindstack's ELF-relative pc, load bias included).
    ImageRelative(u64),
    /// An address relative to the image's base, the address its debug file's symbols start
    /// from (Firefox processed profiles, Breakpad): looked up as it is.
    BaseRelative(u64),
}

/// A function a frame's code was inlined into (innermost first).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InlinedCall {
    /// Function name.
    pub function: Option<StringHandle>,
    /// The name as recorded, when it differs from `function` (mangled linker symbol).
    pub system_name: Option<StringHandle>,
    /// Source file.
    pub file: Option<StringHandle>,
    /// 1-based source line.
    pub line: Option<u32>,
    /// 1-based source column.
    pub column: Option<u32>,
}

/// One frame: a code location, with whatever symbol information the input carried.
///
/// An unsymbolized native frame has `image` and `address` but no `function`: that pair (with
/// the image's build ID) is everything a later symbolization pass needs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    /// Kind of code.
    pub kind: FrameKind,
    /// Human-readable function name (demangled where the input was mangled).
    pub function: Option<StringHandle>,
    /// The name as recorded, when it differs from `function` (mangled linker symbol).
    pub system_name: Option<StringHandle>,
    /// Class, module or namespace (Java class, Python module).
    pub module: Option<StringHandle>,
    /// Source file.
    pub file: Option<StringHandle>,
    /// 1-based source line.
    pub line: Option<u32>,
    /// 1-based source column.
    pub column: Option<u32>,
    /// The image holding the code.
    pub image: Option<ImageHandle>,
    /// The instruction address.
    pub address: Option<FrameAddress>,
    /// Functions this frame's code was inlined into, innermost first. Empty for most frames.
    pub inlined_into: Box<[InlinedCall]>,
    /// Where the outermost function holding the code starts, in the space of `address`
    /// (Sentry's `sym_addr`). Set by symbolization.
    pub function_start: Option<u64>,
    /// What symbolization made of the frame; `None` when it was not attempted (the input named
    /// the frame, or it has no image and address).
    pub symbol_status: Option<SymbolStatus>,
}

/// What symbolization made of a frame, in symbolicator's words (Sentry's frame `status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SymbolStatus {
    /// A debug file named the frame.
    Symbolicated,
    /// The image's debug file has no symbol at the address.
    MissingSymbol,
    /// No debug file for the image is known (yet).
    UnknownImage,
    /// The address cannot be placed in the debug file (outside every mapped segment, or too
    /// large for the lookup cache).
    Malformed,
}

impl SymbolStatus {
    /// Sentry's name for the status.
    pub fn name(self) -> &'static str {
        match self {
            SymbolStatus::Symbolicated => "symbolicated",
            SymbolStatus::MissingSymbol => "missing_symbol",
            SymbolStatus::UnknownImage => "unknown_image",
            SymbolStatus::Malformed => "malformed",
        }
    }
}

impl Frame {
    /// A frame of `kind` with nothing else known; fill in the fields that apply.
    pub fn new(kind: FrameKind) -> Self {
        Frame {
            kind,
            function: None,
            system_name: None,
            module: None,
            file: None,
            line: None,
            column: None,
            image: None,
            address: None,
            inlined_into: Box::new([]),
            function_start: None,
            symbol_status: None,
        }
    }
}

/// An image (mapping): a file mapped into the sampled process.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Image {
    /// Path of the mapped file, as the producer named it.
    pub path: Option<StringHandle>,
    /// The image's code identifier: the GNU build ID as lowercase hex for ELF files.
    pub code_id: Option<CodeId>,
    /// The debug identifier symbol servers index by (derived from the build ID for ELF).
    pub debug_id: Option<DebugId>,
    /// First mapped runtime address.
    pub start: u64,
    /// One past the last mapped runtime address (0 when unknown).
    pub end: u64,
    /// Offset in the file at which the mapping starts.
    pub file_offset: u64,
    /// Difference between the file's preferred load address and where it is mapped.
    pub load_bias: u64,
}

impl Image {
    /// An image with only a path and range known.
    pub fn new(path: Option<StringHandle>, start: u64, end: u64) -> Self {
        Image {
            path,
            code_id: None,
            debug_id: None,
            start,
            end,
            file_offset: 0,
            load_bias: 0,
        }
    }

    /// The id its debug file is looked up by: its code id, else its debug id (nil ids count as
    /// none); `None` when it has neither.
    pub fn build_id(&self) -> Option<BuildId> {
        if let Some(code) = self.code_id.as_ref().and_then(BuildId::from_code_id) {
            return Some(code);
        }
        self.debug_id.filter(|d| !d.is_nil()).map(BuildId::from)
    }
}
