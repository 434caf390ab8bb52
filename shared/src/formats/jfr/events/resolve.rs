//! What events refer to, resolved from the chunk's constant pools once per key: threads,
//! stack traces and their frames (methods, classes, symbols, frame types) and strings.

use std::borrow::Cow;

use crate::error::Result;
use crate::limits::{exceeded, Limits};
use crate::model::{FrameKind, ProcessHandle, StackHandle, StringHandle, ThreadHandle};

use super::{Caches, Chunk, Importer};
use crate::formats::jfr::metadata::Kind;
use crate::formats::jfr::reader::RawString;
use crate::formats::jfr::values::{element, read_struct, Value};

impl Importer<'_> {
    pub(super) fn thread(
        &mut self,
        chunk: &Chunk<'_, '_>,
        caches: &mut Caches,
        process: ProcessHandle,
        class: usize,
        key: u64,
    ) -> Result<ThreadHandle> {
        if let Some(&t) = caches.threads.get(&key) {
            return Ok(t);
        }
        let mut fields = Vec::new();
        let found = chunk.pool_struct(class, key, &mut fields)?;
        let c = &chunk.metadata.classes[class];
        let get = |name| found.then(|| c.field(name).map(|f| fields[f])).flatten();
        let tid = get("osThreadId").and_then(Value::int).filter(|&t| t > 0);
        let thread = self.profile.add_thread(process, tid);
        for name in ["javaName", "osName"] {
            if let Some(Value::String(raw)) = get(name) {
                if let Some(name) = chunk.string(raw)?.filter(|n| !n.is_empty()) {
                    self.profile.name_thread(thread, &name);
                    break;
                }
            }
        }
        if !found {
            self.profile.count("jfr_unresolved_thread");
        }
        if self.profile.threads().len() as u64 > self.limits.max_threads {
            return Err(exceeded("max_threads", self.limits.max_threads));
        }
        caches.threads.insert(key, thread);
        Ok(thread)
    }

    /// The leaf of a stack trace from the pool, and whether the JVM cut it short.
    pub(super) fn stack(
        &mut self,
        chunk: &Chunk<'_, '_>,
        caches: &mut Caches,
        class: usize,
        key: u64,
    ) -> Result<(Option<StackHandle>, bool)> {
        if let Some(&s) = caches.stacks.get(&key) {
            return Ok(s);
        }
        let mut fields = Vec::new();
        let resolved = if chunk.pool_struct(class, key, &mut fields)? {
            self.read_stack(chunk, caches, class, &fields)?
        } else {
            self.profile.count("jfr_unresolved_stack");
            (None, false)
        };
        caches.stacks.insert(key, resolved);
        Ok(resolved)
    }

    fn read_stack(
        &mut self,
        chunk: &Chunk<'_, '_>,
        caches: &mut Caches,
        class: usize,
        fields: &[Value<'_>],
    ) -> Result<(Option<StackHandle>, bool)> {
        let c = &chunk.metadata.classes[class];
        let get = |name| c.field(name).map(|f| fields[f]);
        let truncated = get("truncated").and_then(Value::int).unwrap_or(0) != 0;
        let Some(Value::Array {
            class: frame_class,
            pool,
            len,
            at,
        }) = get("frames")
        else {
            return Ok((None, truncated));
        };
        if len as u64 > self.limits.max_stack_depth {
            self.profile.count("jfr_stack_too_deep");
            return Ok((None, truncated));
        }
        let mut frames = std::mem::take(&mut self.frames);
        frames.clear();
        let mut r = chunk.reader.at(at);
        let mut frame_fields = Vec::new();
        let fc = &chunk.metadata.classes[frame_class];
        let (method, line, kind) = (fc.field("method"), fc.field("lineNumber"), fc.field("type"));
        for _ in 0..len {
            let found = match element(chunk.metadata, frame_class, pool, &mut r, 0)? {
                Value::Ref { key, .. } => chunk.pool_struct(frame_class, key, &mut frame_fields)?,
                Value::Struct { at, .. } => {
                    read_struct(
                        chunk.metadata,
                        frame_class,
                        &mut chunk.reader.at(at),
                        &mut frame_fields,
                    )?;
                    true
                }
                _ => false,
            };
            let get = |i: Option<usize>| found.then(|| i.map(|i| frame_fields[i])).flatten();
            let kind = match get(kind) {
                Some(Value::Ref { class, key }) => self.frame_kind(chunk, caches, class, key)?,
                _ => FrameKind::Jvm,
            };
            let line = get(line)
                .and_then(Value::int)
                .filter(|&l| l > 0)
                .and_then(|l| u32::try_from(l).ok());
            let mut frame = crate::model::Frame::new(kind);
            if let Some(Value::Ref { class, key }) = get(method) {
                if let Some((function, module)) = self.method(chunk, caches, class, key)? {
                    frame.function = Some(function);
                    frame.module = module;
                }
            }
            frame.line = line;
            if frame.function.is_none() {
                self.profile.count("jfr_unresolved_method");
            }
            frames.push(self.profile.add_frame(frame));
        }
        // Leaf first in the recording, root first in the model.
        let mut leaf = None;
        for &frame in frames.iter().rev() {
            leaf = Some(self.profile.add_stack(leaf, frame));
        }
        self.frames = frames;
        if self.profile.stacks().len() as u64 > self.limits.max_stack_nodes {
            return Err(exceeded("max_stack_nodes", self.limits.max_stack_nodes));
        }
        Ok((leaf, truncated))
    }

    /// A method's name and its class (`package.Class`).
    fn method(
        &mut self,
        chunk: &Chunk<'_, '_>,
        caches: &mut Caches,
        class: usize,
        key: u64,
    ) -> Result<Option<(StringHandle, Option<StringHandle>)>> {
        if let Some(&m) = caches.methods.get(&key) {
            return Ok(m);
        }
        let mut fields = Vec::new();
        let mut resolved = None;
        if chunk.pool_struct(class, key, &mut fields)? {
            let c = &chunk.metadata.classes[class];
            let get = |name| c.field(name).map(|f| fields[f]);
            let name = match get("name") {
                Some(v) => chunk.symbol(v)?,
                None => None,
            };
            let type_name = match get("type") {
                Some(Value::Ref { class, key }) => chunk.class_name(class, key)?,
                _ => None,
            };
            if let Some(name) = name {
                // As the model holds JVM frames (and Sentry's Java frames): the method, and
                // its class as the module.
                check_len(&name, self.limits)?;
                let function = self.profile.intern(&name);
                let module = match type_name {
                    Some(t) => {
                        let class = java_name(&t);
                        check_len(&class, self.limits)?;
                        Some(self.profile.intern(&class))
                    }
                    None => None,
                };
                resolved = Some((function, module));
            }
        }
        caches.methods.insert(key, resolved);
        Ok(resolved)
    }

    fn frame_kind(
        &mut self,
        chunk: &Chunk<'_, '_>,
        caches: &mut Caches,
        class: usize,
        key: u64,
    ) -> Result<FrameKind> {
        if let Some(&k) = caches.frame_kinds.get(&key) {
            return Ok(k);
        }
        let mut fields = Vec::new();
        let mut description = None;
        if chunk.pool_struct(class, key, &mut fields)? {
            let c = &chunk.metadata.classes[class];
            if let Some(Value::String(raw)) = c.field("description").map(|f| fields[f]) {
                description = chunk.string(raw)?.map(Cow::into_owned);
            }
        }
        let kind = match description.as_deref() {
            Some("Native" | "C++") => FrameKind::Native,
            Some("Kernel") => FrameKind::Kernel,
            _ => FrameKind::Jvm,
        };
        caches.frame_kinds.insert(key, kind);
        Ok(kind)
    }
}

impl<'a> Chunk<'a, '_> {
    /// Reads the fields of pool entry `key` of struct class `class` into `out`; false when the
    /// pool has no such entry.
    fn pool_struct(&self, class: usize, key: u64, out: &mut Vec<Value<'a>>) -> Result<bool> {
        let Some(at) = self.pools.get(class, key) else {
            return Ok(false);
        };
        if self.metadata.classes[class].kind != Kind::Struct {
            return Ok(false);
        }
        read_struct(self.metadata, class, &mut self.reader.at(at), out)?;
        Ok(true)
    }

    /// The text of a string value, looked up in the string pool when it refers there.
    pub(super) fn string(&self, raw: RawString<'a>) -> Result<Option<Cow<'a, str>>> {
        match raw {
            RawString::Pool(key) => {
                let Some(at) = self.string_class.and_then(|c| self.pools.get(c, key)) else {
                    return Ok(None);
                };
                let mut r = self.reader.at(at);
                let raw = r.raw_string()?;
                // A pooled string that refers to the pool again is not followed.
                r.text(raw)
            }
            other => self.reader.text(other),
        }
    }

    /// The text of a `jdk.types.Symbol` reference (or a string in its place).
    fn symbol(&self, value: Value<'a>) -> Result<Option<String>> {
        match value {
            Value::String(raw) => Ok(self.string(raw)?.map(Cow::into_owned)),
            Value::Ref { class, key } => {
                let mut fields = Vec::new();
                if !self.pool_struct(class, key, &mut fields)? {
                    return Ok(None);
                }
                let c = &self.metadata.classes[class];
                match c.field("string").map(|f| fields[f]) {
                    Some(Value::String(raw)) => Ok(self.string(raw)?.map(Cow::into_owned)),
                    _ => Ok(None),
                }
            }
            _ => Ok(None),
        }
    }

    /// The name of a `java.lang.Class` from the pool, as the JVM spells it (`java/lang/Object`).
    fn class_name(&self, class: usize, key: u64) -> Result<Option<String>> {
        let mut fields = Vec::new();
        if !self.pool_struct(class, key, &mut fields)? {
            return Ok(None);
        }
        let c = &self.metadata.classes[class];
        match c.field("name").map(|f| fields[f]) {
            Some(v) => self.symbol(v),
            None => Ok(None),
        }
    }
}

/// A JVM class name with dots (`java/lang/Object` → `java.lang.Object`). A hidden class's
/// name already has them, and a slash before its address (`Foo$$Lambda/0x0123`) that stays.
fn java_name(name: &str) -> String {
    if name.contains('.') {
        name.to_owned()
    } else {
        name.replace('/', ".")
    }
}

fn check_len(s: &str, limits: &Limits) -> Result<()> {
    if s.len() as u64 > limits.max_string_bytes {
        return Err(exceeded("max_string_bytes", limits.max_string_bytes));
    }
    Ok(())
}
