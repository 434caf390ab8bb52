//! A chunk's metadata event: its string table and the element tree
//! `root → metadata → class{name, id, superType} → field{name, class, constantPool, dimension}`,
//! read into the classes the values are decoded by. Annotations, settings and the `region`
//! element are passed over.

use rustc_hash::FxHashMap;

use crate::error::Result;
use crate::limits::{exceeded, Limits};

use super::reader::Reader;

/// Deepest element nesting read: the JDK writes five levels (root, metadata, class, field,
/// annotation).
const MAX_ELEMENT_DEPTH: usize = 16;

/// What a class's values are on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Boolean,
    /// An integer this many bytes wide, signed or not (`char` is unsigned).
    Int {
        width: u8,
        signed: bool,
    },
    Float,
    Double,
    String,
    /// Its fields in order.
    Struct,
}

impl Kind {
    fn of(name: &str) -> Kind {
        match name {
            "boolean" => Kind::Boolean,
            "byte" => Kind::Int {
                width: 1,
                signed: true,
            },
            "char" => Kind::Int {
                width: 2,
                signed: false,
            },
            "short" => Kind::Int {
                width: 2,
                signed: true,
            },
            "int" => Kind::Int {
                width: 4,
                signed: true,
            },
            "long" => Kind::Int {
                width: 8,
                signed: true,
            },
            "float" => Kind::Float,
            "double" => Kind::Double,
            "java.lang.String" => Kind::String,
            _ => Kind::Struct,
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Field {
    pub name: String,
    /// Index into [`Metadata::classes`].
    pub class: usize,
    /// The value is a key into the class's constant pool.
    pub constant_pool: bool,
    /// The value is an array of the class's values.
    pub array: bool,
}

#[derive(Clone, Debug)]
pub(crate) struct Class {
    pub name: String,
    pub kind: Kind,
    pub fields: Vec<Field>,
    /// A struct whose values take no bytes: every field is such a struct. Its values are
    /// not walked, so that nesting such classes in one another costs nothing.
    pub empty: bool,
}

impl Class {
    /// The position of the field named `name`.
    pub(crate) fn field(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }
}

#[derive(Debug, Default)]
pub(crate) struct Metadata {
    pub classes: Vec<Class>,
    by_id: FxHashMap<u64, usize>,
}

impl Metadata {
    /// The class with JFR type id `id`.
    pub(crate) fn class_index(&self, id: u64) -> Option<usize> {
        self.by_id.get(&id).copied()
    }

    /// The class named `name`.
    pub(crate) fn class_named(&self, name: &str) -> Option<usize> {
        self.classes.iter().position(|c| c.name == name)
    }

    /// Marks the struct classes whose values take no bytes. Every value that is walked then
    /// takes at least a byte, so walking the values of a record costs at most its bytes
    /// times the fields of a class, whatever the metadata nests.
    fn mark_empty(&mut self) {
        // Which structs hold each struct inline, and the ones that take bytes of their own.
        let mut holders: Vec<Vec<usize>> = vec![Vec::new(); self.classes.len()];
        let mut taking = Vec::new();
        for (c, class) in self.classes.iter().enumerate() {
            if class.kind != Kind::Struct {
                continue;
            }
            let mut takes_bytes = false;
            for f in &class.fields {
                if f.array || f.constant_pool || self.classes[f.class].kind != Kind::Struct {
                    takes_bytes = true;
                } else {
                    holders[f.class].push(c);
                }
            }
            if takes_bytes {
                taking.push(c);
            }
        }
        for class in &mut self.classes {
            class.empty = class.kind == Kind::Struct;
        }
        for &c in &taking {
            self.classes[c].empty = false;
        }
        // A struct holding one that takes bytes takes bytes too.
        while let Some(c) = taking.pop() {
            for &holder in &holders[c] {
                if self.classes[holder].empty {
                    self.classes[holder].empty = false;
                    taking.push(holder);
                }
            }
        }
    }

    /// Reads the metadata event `r` is at (its size and type already read).
    pub(crate) fn read(r: &mut Reader<'_>, limits: &Limits) -> Result<Metadata> {
        // Start time, duration, metadata id.
        for _ in 0..3 {
            r.varint()?;
        }
        let n = r.count(1, "metadata string")?;
        if n as u64 > limits.max_table_entries {
            return Err(exceeded("max_table_entries", limits.max_table_entries));
        }
        let mut strings = Vec::with_capacity(n);
        for _ in 0..n {
            let raw = r.raw_string()?;
            let text = r.text(raw)?.map(|s| s.into_owned()).unwrap_or_default();
            if text.len() as u64 > limits.max_string_bytes {
                return Err(exceeded("max_string_bytes", limits.max_string_bytes));
            }
            strings.push(text);
        }
        let root = Element::read(r, &strings, 0)?;
        let mut metadata = Metadata::default();
        // Field classes are ids until every class is known.
        let mut field_ids: Vec<Vec<u64>> = Vec::new();
        let classes = root
            .children
            .iter()
            .filter(|e| e.name == "metadata")
            .flat_map(|m| m.children.iter().filter(|e| e.name == "class"));
        for class in classes {
            let id = class.number(r, "id")?;
            let name = class.attr("name").unwrap_or_default().to_owned();
            let mut fields = Vec::new();
            let mut ids = Vec::new();
            for field in class.children.iter().filter(|e| e.name == "field") {
                ids.push(field.number(r, "class")?);
                fields.push(Field {
                    name: field.attr("name").unwrap_or_default().to_owned(),
                    class: 0,
                    constant_pool: field.attr("constantPool") == Some("true"),
                    array: field.attr("dimension").is_some_and(|d| d != "0"),
                });
            }
            if metadata.by_id.insert(id, metadata.classes.len()).is_some() {
                return Err(r.malformed(format!("metadata declares class id {id} twice")));
            }
            metadata.classes.push(Class {
                kind: Kind::of(&name),
                name,
                fields,
                empty: false,
            });
            field_ids.push(ids);
        }
        for (c, ids) in field_ids.into_iter().enumerate() {
            for (f, id) in ids.into_iter().enumerate() {
                let Some(class) = metadata.class_index(id) else {
                    let class = &metadata.classes[c];
                    return Err(r.malformed(format!(
                        "field {}.{} has the undeclared class id {id}",
                        class.name, class.fields[f].name
                    )));
                };
                metadata.classes[c].fields[f].class = class;
            }
        }
        metadata.mark_empty();
        Ok(metadata)
    }
}

/// One element of the metadata tree, its names resolved from the string table.
struct Element<'s> {
    name: &'s str,
    attributes: Vec<(&'s str, &'s str)>,
    children: Vec<Element<'s>>,
}

impl<'s> Element<'s> {
    fn read(r: &mut Reader<'_>, strings: &'s [String], depth: usize) -> Result<Element<'s>> {
        if depth >= MAX_ELEMENT_DEPTH {
            return Err(r.malformed(format!(
                "metadata elements nest deeper than {MAX_ELEMENT_DEPTH}"
            )));
        }
        let string = |r: &mut Reader<'_>| -> Result<&'s str> {
            let i = r.varint()?;
            usize::try_from(i)
                .ok()
                .and_then(|i| strings.get(i))
                .map(String::as_str)
                .ok_or_else(|| r.malformed(format!("metadata string index {i} out of range")))
        };
        let name = string(r)?;
        let n = r.count(2, "metadata attribute")?;
        let mut attributes = Vec::with_capacity(n);
        for _ in 0..n {
            attributes.push((string(r)?, string(r)?));
        }
        let n = r.count(3, "metadata element")?;
        let mut children = Vec::with_capacity(n);
        for _ in 0..n {
            children.push(Element::read(r, strings, depth + 1)?);
        }
        Ok(Element {
            name,
            attributes,
            children,
        })
    }

    fn attr(&self, key: &str) -> Option<&'s str> {
        self.attributes
            .iter()
            .find(|(k, _)| *k == key)
            .map(|&(_, v)| v)
    }

    fn number(&self, r: &Reader<'_>, key: &str) -> Result<u64> {
        let value = self.attr(key);
        value.and_then(|v| v.parse().ok()).ok_or_else(|| {
            r.malformed(format!(
                "metadata {} element's {key} is {value:?}, not a number",
                self.name
            ))
        })
    }
}
