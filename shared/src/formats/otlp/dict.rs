//! The request's `ProfilesDictionary`, with every lookup bounds-checked and every attribute
//! value resolved, including the reference-based forms of v1.10 (`KeyValue.key_strindex`,
//! `AnyValue.string_value_strindex`) at any depth of arrays and key-value lists.

use std::borrow::Cow;

use proflake_proto::otlp::common::{any_value, AnyValue, KeyValue};
use proflake_proto::otlp::profiles::ProfilesDictionary;

use crate::error::{Error, ErrorKind, Result};

/// Where errors point: the format being decoded, the byte offset of the request, and a path
/// prefix naming the request inside a stream.
#[derive(Clone, Debug)]
pub(super) struct Ctx {
    pub format: &'static str,
    pub offset: u64,
    pub prefix: String,
}

impl Ctx {
    pub(super) fn malformed(&self, what: String) -> Error {
        ErrorKind::Malformed {
            format: self.format,
            offset: self.offset,
            what: format!("{}{what}", self.prefix),
        }
        .into()
    }
}

/// A lazily built path (`resource_profiles[0].scope_profiles[1]...`), only formatted when an
/// error needs it.
pub(super) type PathFn<'a> = &'a dyn Fn() -> String;

/// One attribute value in the forms the model keeps apart.
#[derive(Debug, PartialEq)]
pub(super) enum Scalar<'a> {
    Str(Cow<'a, str>),
    Int(i64),
    /// Anything else, as text (bools, doubles, bytes as hex, arrays and lists as JSON).
    Text(String),
    /// The value is unset.
    Empty,
}

impl Scalar<'_> {
    /// The value as text, without consuming it.
    pub(super) fn to_text(&self) -> String {
        match self {
            Scalar::Str(s) => s.to_string(),
            Scalar::Int(i) => i.to_string(),
            Scalar::Text(t) => t.clone(),
            Scalar::Empty => String::new(),
        }
    }

    /// The value as text, as a process or profile attribute keeps it.
    pub(super) fn into_string(self) -> String {
        match self {
            Scalar::Str(s) => s.into_owned(),
            Scalar::Int(i) => i.to_string(),
            Scalar::Text(t) => t,
            Scalar::Empty => String::new(),
        }
    }
}

/// One entry of the attribute table.
pub(super) struct Attr<'d> {
    pub key: &'d str,
    pub value: Option<&'d AnyValue>,
    pub unit: Option<&'d str>,
}

/// The dictionary, with its string table as text.
pub(super) struct Dict<'d> {
    pub tables: &'d ProfilesDictionary,
    strings: Vec<Cow<'d, str>>,
    pub ctx: Ctx,
}

impl<'d> Dict<'d> {
    /// Wraps `tables`; strings that are not UTF-8 are repaired (profcheck reports them).
    pub(super) fn new(tables: &'d ProfilesDictionary, ctx: Ctx) -> Self {
        let strings = tables
            .string_table
            .iter()
            .map(|b| String::from_utf8_lossy(b))
            .collect();
        Dict {
            tables,
            strings,
            ctx,
        }
    }

    /// Checks `index` against a table of `len` rows named `table`.
    pub(super) fn index(&self, index: i32, len: usize, table: &str, path: PathFn) -> Result<usize> {
        usize::try_from(index)
            .ok()
            .filter(|&i| i < len)
            .ok_or_else(|| {
                self.ctx.malformed(format!(
                    "{} {index} out of range ({table} has {len})",
                    path()
                ))
            })
    }

    /// A string by index; index 0 is the empty string.
    pub(super) fn string(&self, index: i32, path: PathFn) -> Result<&str> {
        let i = self.index(index, self.strings.len(), "string_table", path)?;
        Ok(&self.strings[i])
    }

    /// A string by index, `None` for index 0 or an empty string.
    pub(super) fn opt_string(&self, index: i32, path: PathFn) -> Result<Option<&str>> {
        if index == 0 {
            return Ok(None);
        }
        Ok(Some(self.string(index, path)?).filter(|s| !s.is_empty()))
    }

    /// An attribute table entry with its key and unit resolved.
    pub(super) fn attribute(&self, index: i32, path: PathFn) -> Result<Attr<'_>> {
        let table = &self.tables.attribute_table;
        let kv = &table[self.index(index, table.len(), "attribute_table", path)?];
        let at = || format!("dictionary.attribute_table[{index}]");
        let key = self.string(kv.key_strindex, &|| format!("{}.key_strindex", at()))?;
        let unit = self.opt_string(kv.unit_strindex, &|| format!("{}.unit_strindex", at()))?;
        Ok(Attr {
            key,
            value: kv.value.as_ref(),
            unit,
        })
    }

    /// The key of a resource or scope attribute: `key_strindex` when set, else `key`.
    pub(super) fn key<'k>(&'k self, kv: &'k KeyValue, path: PathFn) -> Result<&'k str> {
        if kv.key_strindex != 0 {
            return self.string(kv.key_strindex, &|| format!("{}.key_strindex", path()));
        }
        Ok(&kv.key)
    }

    /// A value, resolved.
    pub(super) fn scalar<'v>(
        &'v self,
        value: Option<&'v AnyValue>,
        path: PathFn,
    ) -> Result<Scalar<'v>> {
        use any_value::Value;
        let Some(value) = value.and_then(|v| v.value.as_ref()) else {
            return Ok(Scalar::Empty);
        };
        Ok(match value {
            Value::StringValue(s) => Scalar::Str(Cow::Borrowed(s)),
            Value::StringValueStrindex(i) => Scalar::Str(Cow::Borrowed(
                self.string(*i, &|| format!("{}.string_value_strindex", path()))?,
            )),
            Value::IntValue(i) => Scalar::Int(*i),
            Value::BoolValue(b) => Scalar::Text(b.to_string()),
            Value::DoubleValue(d) => Scalar::Text(d.to_string()),
            Value::BytesValue(b) => Scalar::Text(hex::encode(b)),
            Value::ArrayValue(_) | Value::KvlistValue(_) => {
                Scalar::Text(self.json(value, path)?.to_string())
            }
        })
    }

    /// A value as JSON, for arrays and key-value lists.
    fn json(&self, value: &any_value::Value, path: PathFn) -> Result<serde_json::Value> {
        use any_value::Value;
        use serde_json::Value as J;
        Ok(match value {
            Value::StringValue(s) => J::String(s.clone()),
            Value::StringValueStrindex(i) => J::String(
                self.string(*i, &|| format!("{}.string_value_strindex", path()))?
                    .to_owned(),
            ),
            Value::IntValue(i) => J::from(*i),
            Value::BoolValue(b) => J::Bool(*b),
            Value::DoubleValue(d) => J::from(*d),
            Value::BytesValue(b) => J::String(hex::encode(b)),
            Value::ArrayValue(a) => J::Array(
                a.values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| match &v.value {
                        Some(v) => self.json(v, &|| format!("{}.array_value[{i}]", path())),
                        None => Ok(J::Null),
                    })
                    .collect::<Result<_>>()?,
            ),
            Value::KvlistValue(l) => {
                let mut map = serde_json::Map::new();
                for (i, kv) in l.values.iter().enumerate() {
                    let at = || format!("{}.kvlist_value[{i}]", path());
                    let key = self.key(kv, &at)?.to_owned();
                    let v = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                        Some(v) => self.json(v, &|| format!("{}.value", at()))?,
                        None => J::Null,
                    };
                    map.entry(key).or_insert(v);
                }
                J::Object(map)
            }
        })
    }

    /// Resolves a list of resource or scope attributes into (key, value) pairs.
    pub(super) fn key_values<'k>(
        &'k self,
        list: &'k [KeyValue],
        path: PathFn,
    ) -> Result<Vec<(&'k str, Scalar<'k>)>> {
        list.iter()
            .enumerate()
            .map(|(i, kv)| {
                let at = || format!("{}[{i}]", path());
                let key = self.key(kv, &at)?;
                let value = self.scalar(kv.value.as_ref(), &|| format!("{}.value", at()))?;
                Ok((key, value))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proflake_proto::otlp::common::{ArrayValue, KeyValueList};

    fn dict(strings: &[&str]) -> ProfilesDictionary {
        ProfilesDictionary {
            string_table: strings.iter().map(|s| s.as_bytes().to_vec()).collect(),
            ..Default::default()
        }
    }

    fn ctx() -> Ctx {
        Ctx {
            format: "otlp",
            offset: 0,
            prefix: String::new(),
        }
    }

    fn any(v: any_value::Value) -> AnyValue {
        AnyValue { value: Some(v) }
    }

    #[test]
    fn references_resolve_recursively() {
        let tables = dict(&["", "service.name", "checkout", "k"]);
        let d = Dict::new(&tables, ctx());
        let kv = KeyValue {
            key: String::new(),
            key_strindex: 1,
            value: Some(any(any_value::Value::StringValueStrindex(2))),
        };
        let got = d
            .key_values(std::slice::from_ref(&kv), &|| "attrs".into())
            .unwrap();
        assert_eq!(got, vec![("service.name", Scalar::Str("checkout".into()))]);

        let nested = any(any_value::Value::KvlistValue(KeyValueList {
            values: vec![KeyValue {
                key: String::new(),
                key_strindex: 3,
                value: Some(any(any_value::Value::ArrayValue(ArrayValue {
                    values: vec![any(any_value::Value::StringValueStrindex(2))],
                }))),
            }],
        }));
        let s = d.scalar(Some(&nested), &|| "v".into()).unwrap();
        assert_eq!(s, Scalar::Text(r#"{"k":["checkout"]}"#.into()));
    }

    #[test]
    fn out_of_range_names_the_path() {
        let tables = dict(&[""]);
        let d = Dict::new(&tables, ctx());
        let v = any(any_value::Value::StringValueStrindex(7));
        let e = d
            .scalar(Some(&v), &|| "resource.attributes[0].value".into())
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("resource.attributes[0].value.string_value_strindex 7 out of range (string_table has 1)"),
            "{e}"
        );
        assert!(d.string(-1, &|| "x".into()).is_err());
    }
}
