//! Values decoded by their class in the chunk's metadata: a struct's fields one level deep,
//! nested structs and arrays left where they are for the caller to read if it wants them.

use crate::error::Result;

use super::metadata::{Kind, Metadata};
use super::reader::{RawString, Reader};

/// Deepest nesting of structs held inline in one another (no JDK type nests more than a few).
const MAX_VALUE_DEPTH: usize = 32;

/// One field's value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Value<'a> {
    /// Booleans and integers of every width.
    Int(i64),
    Float(f64),
    String(RawString<'a>),
    /// A key into the constant pool of the class at this index.
    Ref {
        class: usize,
        key: u64,
    },
    /// A struct of the class at this index, stored inline from byte `at`.
    Struct {
        class: usize,
        at: usize,
    },
    /// `len` values of the class at this index from byte `at`, keys into its pool or not.
    Array {
        class: usize,
        pool: bool,
        len: usize,
        at: usize,
    },
}

impl Value<'_> {
    pub(crate) fn int(self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(i),
            _ => None,
        }
    }
}

/// Reads the fields of a value of struct class `class` into `out` (cleared first), one per
/// field in the metadata's order.
pub(crate) fn read_struct<'a>(
    metadata: &Metadata,
    class: usize,
    r: &mut Reader<'a>,
    out: &mut Vec<Value<'a>>,
) -> Result<()> {
    out.clear();
    for field in &metadata.classes[class].fields {
        let value = if field.array {
            let len = r.count(1, "array element")?;
            let at = r.pos();
            for _ in 0..len {
                element(metadata, field.class, field.constant_pool, r, 0)?;
            }
            Value::Array {
                class: field.class,
                pool: field.constant_pool,
                len,
                at,
            }
        } else {
            element(metadata, field.class, field.constant_pool, r, 0)?
        };
        out.push(value);
    }
    Ok(())
}

/// Reads one value of `class` (a pool key when `pool`), passing over a nested struct.
pub(crate) fn element<'a>(
    metadata: &Metadata,
    class: usize,
    pool: bool,
    r: &mut Reader<'a>,
    depth: usize,
) -> Result<Value<'a>> {
    if pool {
        return Ok(Value::Ref {
            class,
            key: r.varint()?,
        });
    }
    Ok(match metadata.classes[class].kind {
        Kind::Boolean => Value::Int(i64::from(r.u8()? != 0)),
        Kind::Int { width, signed } => Value::Int(r.int(width, signed)?),
        Kind::Float => Value::Float(r.f32()?),
        Kind::Double => Value::Float(r.f64()?),
        Kind::String => Value::String(r.raw_string()?),
        Kind::Struct => {
            let at = r.pos();
            if !metadata.classes[class].empty {
                skip_struct(metadata, class, r, depth + 1)?;
            }
            Value::Struct { class, at }
        }
    })
}

/// Passes over a value of struct class `class`.
pub(crate) fn skip_struct(
    metadata: &Metadata,
    class: usize,
    r: &mut Reader<'_>,
    depth: usize,
) -> Result<()> {
    if depth > MAX_VALUE_DEPTH {
        return Err(r.malformed(format!(
            "values of {} nest deeper than {MAX_VALUE_DEPTH}",
            metadata.classes[class].name
        )));
    }
    for field in &metadata.classes[class].fields {
        let len = if field.array {
            r.count(1, "array element")?
        } else {
            1
        };
        for _ in 0..len {
            element(metadata, field.class, field.constant_pool, r, depth)?;
        }
    }
    Ok(())
}
