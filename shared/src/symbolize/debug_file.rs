//! Validating an uploaded debug file and building its lookup cache.

use debugid::CodeId;
use sha2::{Digest, Sha256};
use symbolic_debuginfo::{Object, ParseObjectOptions};
use symbolic_symcache::{SymCacheConverter, SYMCACHE_VERSION};

use super::meta::{DebugFileKeys, DebugFileMeta, Quality, DEBUG_META_VERSION};
use super::segments::elf_load_segments;
use crate::error::{ErrorKind, Result};
use crate::model::BuildId;

/// Largest size a compressed ELF debug section may inflate to (1 GiB): a hostile upload cannot
/// make the function allocate without bound.
pub const MAX_DECOMPRESSED_SECTION_BYTES: usize = 1 << 30;

/// A validated debug file: its meta and lookup cache, ready to store.
#[derive(Debug)]
pub struct IngestedDebugFile {
    /// What the file is.
    pub meta: DebugFileMeta,
    /// The SymCache built from it.
    pub symcache: Vec<u8>,
}

/// The build ID a debug file is filed under (its code id; the debug id for formats without
/// one), read from the file itself.
pub fn debug_file_build_id(bytes: &[u8]) -> Result<BuildId> {
    refuse_on_panic(|| {
        let object = parse(bytes)?;
        Ok(file_ids(&object)?.swap_remove(0))
    })
}

/// Runs `read`, which hands the file to symbolic, and refuses the file if that panics.
/// symbolic's readers do on some corrupt files: a symbol or DWARF function whose end address
/// overflows u64 fails their overflow checks (symbolic-debuginfo's `FunctionBuilder::finish`,
/// symbolic-symcache's `process_symbolic_symbol`). An upload must be refused with its report,
/// not take the function down.
fn refuse_on_panic<T>(read: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(read)).unwrap_or_else(|payload| {
        let message = (payload.downcast_ref::<&str>().copied())
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("no message");
        Err(ErrorKind::DebugFile {
            what: format!("corrupt debug file: reading it failed ({message})"),
        }
        .into())
    })
}

fn parse(bytes: &[u8]) -> Result<Object<'_>> {
    let mut options = ParseObjectOptions::default();
    options.max_decompressed_section_size = Some(MAX_DECOMPRESSED_SECTION_BYTES);
    Object::parse_with_opts(bytes, options).map_err(|e| {
        crate::Error::from(ErrorKind::DebugFile {
            what: "not a debug file symbolic can read".into(),
        })
        .with_source(e)
    })
}

/// Every id a file answers to, the one it is filed under first.
fn file_ids(object: &Object<'_>) -> Result<Vec<BuildId>> {
    let format = object.file_format().to_string();
    let code_id = code_id(object).and_then(|c| BuildId::from_code_id(&c));
    let debug_id = object.debug_id();
    let debug_ids = [BuildId::from(debug_id), BuildId::breakpad(debug_id)];
    // ELF without a build-id note gets a debug id hashed from `.text`: nothing a profile names.
    Ok(match (code_id, debug_id.is_nil(), format.as_str()) {
        (Some(code), _, _) => std::iter::once(code).chain(debug_ids).collect(),
        (None, false, f) if f != "elf" => debug_ids.into(),
        _ => return Err(ErrorKind::NoBuildId { format }.into()),
    })
}

/// The file's code id, unless it is empty or all zeros.
fn code_id(object: &Object<'_>) -> Option<CodeId> {
    object
        .code_id()
        .filter(|c| !c.is_nil() && c.as_str().bytes().any(|b| b != b'0'))
}

/// Validates the debug file `bytes`, filed under `build_id`, and builds its lookup cache; its
/// meta records where the store keeps both (`keys`).
///
/// Refused: bytes that are no debug file `symbolic` can read, a file without a build ID, a file
/// whose build ID is not `build_id`, and a file with neither symbols nor line information.
pub fn ingest_debug_file(
    build_id: &BuildId,
    bytes: &[u8],
    keys: DebugFileKeys,
) -> Result<IngestedDebugFile> {
    refuse_on_panic(|| ingest(build_id, bytes, keys))
}

fn ingest(build_id: &BuildId, bytes: &[u8], keys: DebugFileKeys) -> Result<IngestedDebugFile> {
    let bad = |what: String| ErrorKind::DebugFile { what };
    let object = parse(bytes)?;
    let format = object.file_format().to_string();
    let code_id = code_id(&object).map(|c| c.as_str().to_ascii_lowercase());
    let debug_id = object.debug_id();
    let ids = file_ids(&object)?;
    let wanted = build_id.to_ascii_lowercase();
    if !ids.contains(&wanted) {
        return Err(ErrorKind::BuildIdMismatch {
            key_build_id: wanted.to_string(),
            file_build_id: ids[0].to_string(),
        }
        .into());
    }
    let has_symbols = object.has_symbols();
    let has_debug_info = object.has_debug_info();
    if !has_symbols && !has_debug_info {
        return Err(bad("the file has neither a symbol table nor line information".into()).into());
    }
    let has_inline_info = has_debug_info && has_inlinees(&object)?;
    let quality = match (has_debug_info, has_inline_info) {
        (true, true) => Quality::Inlines,
        (true, false) => Quality::Lines,
        _ => Quality::Symbols,
    };
    let mut converter = SymCacheConverter::new();
    converter.process_object(&object).map_err(|e| {
        crate::Error::from(bad("cannot build a lookup cache".into())).with_source(e)
    })?;
    let mut symcache = Vec::new();
    converter
        .serialize(&mut std::io::Cursor::new(&mut symcache))
        .map_err(|e| {
            crate::Error::from(bad("cannot write the lookup cache".into())).with_source(e)
        })?;
    let segments = (format == "elf")
        .then(|| elf_load_segments(bytes))
        .flatten();
    let sha256 = hex::encode(Sha256::digest(bytes));
    let meta = DebugFileMeta {
        meta_version: DEBUG_META_VERSION,
        build_id: wanted,
        debug_file_key: keys.debug_file,
        debug_file_bytes: bytes.len() as u64,
        symcache_key: keys.symcache,
        debug_file_sha256: sha256,
        file_format: format,
        object_kind: object.kind().to_string(),
        arch: object.arch().to_string(),
        code_id,
        debug_id: debug_id.to_string(),
        has_symbols,
        has_debug_info,
        has_inline_info,
        quality,
        load_address: object.load_address(),
        segments,
        symcache_version: SYMCACHE_VERSION,
        symcache_bytes: symcache.len() as u64,
    };
    Ok(IngestedDebugFile { meta, symcache })
}

/// Whether any function records inlined calls (stops at the first that does).
fn has_inlinees(object: &Object<'_>) -> Result<bool> {
    let session = object.debug_session().map_err(|e| {
        crate::Error::from(ErrorKind::DebugFile {
            what: "cannot read the debug information".into(),
        })
        .with_source(e)
    })?;
    for function in session.functions() {
        match function {
            Ok(f) if !f.inlinees.is_empty() => return Ok(true),
            Ok(_) => {}
            Err(e) => {
                return Err(crate::Error::from(ErrorKind::DebugFile {
                    what: "corrupt debug information".into(),
                })
                .with_source(e))
            }
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fuzzing found gcc-built libraries whose symbol table (`leaf` of size 0xffffffffffffff07)
    /// or DWARF gives a function an end past u64::MAX. Builds with overflow checks (tests,
    /// debug builds, the fuzz targets) panicked in symbolic; release builds wrap and take the
    /// file. Either way, no panic leaves `ingest_debug_file`.
    #[test]
    fn function_ends_past_u64_max_refuse_the_file() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fuzz/regressions/debug_file"
        );
        for name in ["symbol_end_overflows.so", "dwarf_function_end_overflows.so"] {
            let bytes = std::fs::read(format!("{dir}/{name}")).unwrap();
            let build_id = debug_file_build_id(&bytes).unwrap();
            let keys = DebugFileKeys {
                debug_file: "debuginfo/x/lib.so".into(),
                symcache: "debuginfo/x/lib.symcache".into(),
            };
            let result = ingest_debug_file(&build_id, &bytes, keys);
            if cfg!(debug_assertions) {
                let err = result.unwrap_err();
                assert!(
                    matches!(err.kind(), ErrorKind::DebugFile { what }
                        if what.contains("attempt to add with overflow")),
                    "{name}: {err}"
                );
            }
        }
    }
}
