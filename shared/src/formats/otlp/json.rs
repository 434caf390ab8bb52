//! OTLP/JSON onto the prost messages: proto3 JSON with OTLP's deviations (OTLP
//! specification, "JSON Protobuf Encoding"): lowerCamelCase keys (proto names accepted too), 64-bit integers as strings
//! or numbers, hex for `traceId`/`spanId`/`profileId`, omitted defaults, unknown keys
//! ignored. The v1.8/v1.9 names `sample` and `line` are accepted as well: JSON is keyed by
//! name, so the renumbering of v1.10 does not concern it.

use std::fmt;

use proflake_proto::otlp::common::{
    any_value, AnyValue, ArrayValue, InstrumentationScope, KeyValue, KeyValueList,
};
use proflake_proto::otlp::profiles::{
    Function, KeyValueAndUnit, Line, Link, Location, Mapping, Profile, ProfilesData,
    ProfilesDictionary, ResourceProfiles, Sample, ScopeProfiles, Stack, ValueType,
};
use proflake_proto::otlp::resource::Resource;
use serde_json::{Map, Value};

/// Where in the document a value is, built up lazily for error messages.
#[derive(Clone, Copy)]
pub(super) enum Path<'a> {
    Root,
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Root => write!(f, "$"),
            Path::Key(parent, key) => write!(f, "{parent}.{key}"),
            Path::Index(parent, i) => write!(f, "{parent}[{i}]"),
        }
    }
}

/// A value of the wrong type, with where it is.
#[derive(Debug)]
pub(super) struct JsonError(pub String);

type Result<T> = std::result::Result<T, JsonError>;

fn wrong(path: &Path, want: &str, got: &Value) -> JsonError {
    let got = match got {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    JsonError(format!("{path}: expected {want}, got {got}"))
}

/// An object's fields, looked up by JSON name or proto name; `null` counts as absent.
struct Obj<'v, 'p> {
    map: &'v Map<String, Value>,
    path: &'p Path<'p>,
}

impl<'v, 'p> Obj<'v, 'p> {
    fn new(v: &'v Value, path: &'p Path<'p>) -> Result<Self> {
        match v {
            Value::Object(map) => Ok(Obj { map, path }),
            other => Err(wrong(path, "an object", other)),
        }
    }

    /// The value under any of `names` (JSON name first), with its key.
    fn get(&self, names: &[&'static str]) -> Option<(&'static str, &'v Value)> {
        names.iter().find_map(|&n| match self.map.get(n) {
            None | Some(Value::Null) => None,
            Some(v) => Some((n, v)),
        })
    }

    fn scalar<T: Default>(
        &self,
        names: &[&'static str],
        read: fn(&Value, &Path) -> Result<T>,
    ) -> Result<T> {
        match self.get(names) {
            Some((key, v)) => read(v, &Path::Key(self.path, key)),
            None => Ok(T::default()),
        }
    }

    fn message<T: Default>(
        &self,
        names: &[&'static str],
        read: fn(&Value, &Path) -> Result<T>,
    ) -> Result<Option<T>> {
        match self.get(names) {
            Some((key, v)) => read(v, &Path::Key(self.path, key)).map(Some),
            None => Ok(None),
        }
    }

    fn list<T>(
        &self,
        names: &[&'static str],
        read: fn(&Value, &Path) -> Result<T>,
    ) -> Result<Vec<T>> {
        let Some((key, v)) = self.get(names) else {
            return Ok(Vec::new());
        };
        let path = Path::Key(self.path, key);
        let Value::Array(items) = v else {
            return Err(wrong(&path, "an array", v));
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| read(item, &Path::Index(&path, i)))
            .collect()
    }
}

// ---- scalars ----------------------------------------------------------------------------

/// An integer given as a JSON number or a decimal string.
fn integer<T: TryFrom<i128>>(v: &Value, path: &Path, want: &str) -> Result<T> {
    let n: Option<i128> = match v {
        Value::Number(n) => n
            .as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
            // proto3 JSON allows integral floats such as 1e3.
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 2e38)
                    .map(|f| f as i128)
            }),
        Value::String(s) => s.trim().parse().ok(),
        _ => return Err(wrong(path, want, v)),
    };
    n.and_then(|n| T::try_from(n).ok())
        .ok_or_else(|| JsonError(format!("{path}: {v} is not {want}")))
}

fn i32_(v: &Value, p: &Path) -> Result<i32> {
    integer(v, p, "an int32")
}
fn u32_(v: &Value, p: &Path) -> Result<u32> {
    integer(v, p, "a uint32")
}
fn i64_(v: &Value, p: &Path) -> Result<i64> {
    integer(v, p, "an int64")
}
fn u64_(v: &Value, p: &Path) -> Result<u64> {
    integer(v, p, "a uint64")
}

fn f64_(v: &Value, p: &Path) -> Result<f64> {
    match v {
        Value::Number(n) => n.as_f64().ok_or_else(|| wrong(p, "a double", v)),
        Value::String(s) => match s.as_str() {
            "NaN" => Ok(f64::NAN),
            "Infinity" => Ok(f64::INFINITY),
            "-Infinity" => Ok(f64::NEG_INFINITY),
            s => s.trim().parse().map_err(|_| wrong(p, "a double", v)),
        },
        _ => Err(wrong(p, "a double", v)),
    }
}

fn bool_(v: &Value, p: &Path) -> Result<bool> {
    v.as_bool().ok_or_else(|| wrong(p, "a boolean", v))
}

fn string(v: &Value, p: &Path) -> Result<String> {
    v.as_str()
        .map(str::to_owned)
        .ok_or_else(|| wrong(p, "a string", v))
}

/// A `bytes` field: base64 (standard or URL-safe, padding optional), as proto3 JSON says.
fn base64_(v: &Value, p: &Path) -> Result<Vec<u8>> {
    let s = v.as_str().ok_or_else(|| wrong(p, "a base64 string", v))?;
    base64_decode(s).ok_or_else(|| JsonError(format!("{p}: {s:?} is not base64")))
}

/// An id (`traceId`, `spanId`, `profileId`): hex in OTLP/JSON; base64 from generic proto3
/// JSON writers is accepted when it is not valid hex.
fn id(v: &Value, p: &Path) -> Result<Vec<u8>> {
    let s = v.as_str().ok_or_else(|| wrong(p, "a hex string", v))?;
    hex::decode(s)
        .ok()
        .or_else(|| base64_decode(s))
        .ok_or_else(|| JsonError(format!("{p}: {s:?} is neither hex nor base64")))
}

/// Standard or URL-safe alphabet, padded or not, as proto3 JSON parsers accept.
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    use base64::alphabet::{STANDARD, URL_SAFE};
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    use base64::Engine;
    let config = GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true);
    [STANDARD, URL_SAFE]
        .iter()
        .find_map(|alphabet| GeneralPurpose::new(alphabet, config).decode(s).ok())
}

fn list_of<T>(read: fn(&Value, &Path) -> Result<T>) -> impl Fn(&Value, &Path) -> Result<Vec<T>> {
    move |v, p| match v {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| read(item, &Path::Index(p, i)))
            .collect(),
        other => Err(wrong(p, "an array", other)),
    }
}

fn i32s(v: &Value, p: &Path) -> Result<Vec<i32>> {
    list_of(i32_)(v, p)
}
fn i64s(v: &Value, p: &Path) -> Result<Vec<i64>> {
    list_of(i64_)(v, p)
}
fn u64s(v: &Value, p: &Path) -> Result<Vec<u64>> {
    list_of(u64_)(v, p)
}
fn string_bytes(v: &Value, p: &Path) -> Result<Vec<u8>> {
    string(v, p).map(String::into_bytes)
}
fn strings(v: &Value, p: &Path) -> Result<Vec<Vec<u8>>> {
    list_of(string_bytes)(v, p)
}

// ---- messages ---------------------------------------------------------------------------

/// One OTLP/JSON request (`ExportProfilesServiceRequest` / `ProfilesData`).
pub(super) fn profiles_data(v: &Value) -> Result<ProfilesData> {
    let root = Path::Root;
    let o = Obj::new(v, &root)?;
    Ok(ProfilesData {
        resource_profiles: o.list(
            &["resourceProfiles", "resource_profiles"],
            resource_profiles,
        )?,
        dictionary: o.message(&["dictionary"], dictionary)?,
    })
}

fn resource_profiles(v: &Value, p: &Path) -> Result<ResourceProfiles> {
    let o = Obj::new(v, p)?;
    Ok(ResourceProfiles {
        resource: o.message(&["resource"], resource)?,
        scope_profiles: o.list(&["scopeProfiles", "scope_profiles"], scope_profiles)?,
        schema_url: o.scalar(&["schemaUrl", "schema_url"], string)?,
    })
}

fn resource(v: &Value, p: &Path) -> Result<Resource> {
    let o = Obj::new(v, p)?;
    Ok(Resource {
        attributes: o.list(&["attributes"], key_value)?,
        dropped_attributes_count: o.scalar(
            &["droppedAttributesCount", "dropped_attributes_count"],
            u32_,
        )?,
        // Entity references carry nothing the model keeps.
        entity_refs: Vec::new(),
    })
}

fn scope_profiles(v: &Value, p: &Path) -> Result<ScopeProfiles> {
    let o = Obj::new(v, p)?;
    Ok(ScopeProfiles {
        scope: o.message(&["scope"], scope)?,
        profiles: o.list(&["profiles"], profile)?,
        schema_url: o.scalar(&["schemaUrl", "schema_url"], string)?,
    })
}

fn scope(v: &Value, p: &Path) -> Result<InstrumentationScope> {
    let o = Obj::new(v, p)?;
    Ok(InstrumentationScope {
        name: o.scalar(&["name"], string)?,
        version: o.scalar(&["version"], string)?,
        attributes: o.list(&["attributes"], key_value)?,
        dropped_attributes_count: o.scalar(
            &["droppedAttributesCount", "dropped_attributes_count"],
            u32_,
        )?,
    })
}

fn key_value(v: &Value, p: &Path) -> Result<KeyValue> {
    let o = Obj::new(v, p)?;
    Ok(KeyValue {
        key: o.scalar(&["key"], string)?,
        value: o.message(&["value"], any_value)?,
        key_strindex: o.scalar(&["keyStrindex", "key_strindex"], i32_)?,
    })
}

fn any_value(v: &Value, p: &Path) -> Result<AnyValue> {
    use any_value::Value as V;
    let o = Obj::new(v, p)?;
    let at = |key| Path::Key(p, key);
    let value = if let Some((k, v)) = o.get(&["stringValue", "string_value"]) {
        Some(V::StringValue(string(v, &at(k))?))
    } else if let Some((k, v)) = o.get(&["boolValue", "bool_value"]) {
        Some(V::BoolValue(bool_(v, &at(k))?))
    } else if let Some((k, v)) = o.get(&["intValue", "int_value"]) {
        Some(V::IntValue(i64_(v, &at(k))?))
    } else if let Some((k, v)) = o.get(&["doubleValue", "double_value"]) {
        Some(V::DoubleValue(f64_(v, &at(k))?))
    } else if let Some((k, v)) = o.get(&["arrayValue", "array_value"]) {
        let path = at(k);
        let a = Obj::new(v, &path)?;
        Some(V::ArrayValue(ArrayValue {
            values: a.list(&["values"], any_value)?,
        }))
    } else if let Some((k, v)) = o.get(&["kvlistValue", "kvlist_value"]) {
        let path = at(k);
        let l = Obj::new(v, &path)?;
        Some(V::KvlistValue(KeyValueList {
            values: l.list(&["values"], key_value)?,
        }))
    } else if let Some((k, v)) = o.get(&["bytesValue", "bytes_value"]) {
        Some(V::BytesValue(base64_(v, &at(k))?))
    } else if let Some((k, v)) = o.get(&["stringValueStrindex", "string_value_strindex"]) {
        Some(V::StringValueStrindex(i32_(v, &at(k))?))
    } else {
        None
    };
    Ok(AnyValue { value })
}

fn profile(v: &Value, p: &Path) -> Result<Profile> {
    let o = Obj::new(v, p)?;
    Ok(Profile {
        sample_type: o.message(&["sampleType", "sample_type"], value_type)?,
        samples: o.list(&["samples", "sample"], sample)?,
        time_unix_nano: o.scalar(&["timeUnixNano", "time_unix_nano"], u64_)?,
        duration_nano: o.scalar(&["durationNano", "duration_nano"], u64_)?,
        period_type: o.message(&["periodType", "period_type"], value_type)?,
        period: o.scalar(&["period"], i64_)?,
        profile_id: o.scalar(&["profileId", "profile_id"], id)?,
        dropped_attributes_count: o.scalar(
            &["droppedAttributesCount", "dropped_attributes_count"],
            u32_,
        )?,
        original_payload_format: o.scalar(
            &["originalPayloadFormat", "original_payload_format"],
            string,
        )?,
        original_payload: o.scalar(&["originalPayload", "original_payload"], base64_)?,
        attribute_indices: o.scalar(&["attributeIndices", "attribute_indices"], i32s)?,
    })
}

fn value_type(v: &Value, p: &Path) -> Result<ValueType> {
    let o = Obj::new(v, p)?;
    Ok(ValueType {
        type_strindex: o.scalar(&["typeStrindex", "type_strindex"], i32_)?,
        unit_strindex: o.scalar(&["unitStrindex", "unit_strindex"], i32_)?,
    })
}

fn sample(v: &Value, p: &Path) -> Result<Sample> {
    let o = Obj::new(v, p)?;
    Ok(Sample {
        stack_index: o.scalar(&["stackIndex", "stack_index"], i32_)?,
        attribute_indices: o.scalar(&["attributeIndices", "attribute_indices"], i32s)?,
        link_index: o.scalar(&["linkIndex", "link_index"], i32_)?,
        values: o.scalar(&["values"], i64s)?,
        timestamps_unix_nano: o.scalar(&["timestampsUnixNano", "timestamps_unix_nano"], u64s)?,
    })
}

fn dictionary(v: &Value, p: &Path) -> Result<ProfilesDictionary> {
    let o = Obj::new(v, p)?;
    Ok(ProfilesDictionary {
        mapping_table: o.list(&["mappingTable", "mapping_table"], mapping)?,
        location_table: o.list(&["locationTable", "location_table"], location)?,
        function_table: o.list(&["functionTable", "function_table"], function)?,
        link_table: o.list(&["linkTable", "link_table"], link)?,
        string_table: o.scalar(&["stringTable", "string_table"], strings)?,
        attribute_table: o.list(&["attributeTable", "attribute_table"], key_value_and_unit)?,
        stack_table: o.list(&["stackTable", "stack_table"], stack)?,
    })
}

fn mapping(v: &Value, p: &Path) -> Result<Mapping> {
    let o = Obj::new(v, p)?;
    Ok(Mapping {
        memory_start: o.scalar(&["memoryStart", "memory_start"], u64_)?,
        memory_limit: o.scalar(&["memoryLimit", "memory_limit"], u64_)?,
        file_offset: o.scalar(&["fileOffset", "file_offset"], u64_)?,
        filename_strindex: o.scalar(&["filenameStrindex", "filename_strindex"], i32_)?,
        attribute_indices: o.scalar(&["attributeIndices", "attribute_indices"], i32s)?,
    })
}

fn location(v: &Value, p: &Path) -> Result<Location> {
    let o = Obj::new(v, p)?;
    Ok(Location {
        mapping_index: o.scalar(&["mappingIndex", "mapping_index"], i32_)?,
        address: o.scalar(&["address"], u64_)?,
        lines: o.list(&["lines", "line"], line)?,
        attribute_indices: o.scalar(&["attributeIndices", "attribute_indices"], i32s)?,
    })
}

fn line(v: &Value, p: &Path) -> Result<Line> {
    let o = Obj::new(v, p)?;
    Ok(Line {
        function_index: o.scalar(&["functionIndex", "function_index"], i32_)?,
        line: o.scalar(&["line"], i64_)?,
        column: o.scalar(&["column"], i64_)?,
    })
}

fn function(v: &Value, p: &Path) -> Result<Function> {
    let o = Obj::new(v, p)?;
    Ok(Function {
        name_strindex: o.scalar(&["nameStrindex", "name_strindex"], i32_)?,
        system_name_strindex: o.scalar(&["systemNameStrindex", "system_name_strindex"], i32_)?,
        filename_strindex: o.scalar(&["filenameStrindex", "filename_strindex"], i32_)?,
        start_line: o.scalar(&["startLine", "start_line"], i64_)?,
    })
}

fn link(v: &Value, p: &Path) -> Result<Link> {
    let o = Obj::new(v, p)?;
    Ok(Link {
        trace_id: o.scalar(&["traceId", "trace_id"], id)?,
        span_id: o.scalar(&["spanId", "span_id"], id)?,
    })
}

fn key_value_and_unit(v: &Value, p: &Path) -> Result<KeyValueAndUnit> {
    let o = Obj::new(v, p)?;
    Ok(KeyValueAndUnit {
        key_strindex: o.scalar(&["keyStrindex", "key_strindex"], i32_)?,
        value: o.message(&["value"], any_value)?,
        unit_strindex: o.scalar(&["unitStrindex", "unit_strindex"], i32_)?,
    })
}

fn stack(v: &Value, p: &Path) -> Result<Stack> {
    let o = Obj::new(v, p)?;
    Ok(Stack {
        location_indices: o.scalar(&["locationIndices", "location_indices"], i32s)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn base64_variants() {
        assert_eq!(base64_decode("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(base64_decode("aGVsbG8").unwrap(), b"hello");
        assert_eq!(base64_decode("-_8").unwrap(), [0xfb, 0xff]);
        assert!(base64_decode("a").is_none());
        assert!(base64_decode("a*==").is_none());
    }

    #[test]
    fn numbers_strings_and_names() {
        let v = json!({
            "resource_profiles": [{"scopeProfiles": [{"profiles": [{
                "sample": [{"stack_index": "3", "values": [1, "-2"], "timestampsUnixNano": ["18446744073709551615"]}],
                "period": 1e3,
                "profileId": "0102030405060708090a0b0c0d0e0f10",
                "unknownField": {"x": 1}
            }]}]}],
            "dictionary": {"linkTable": [{}, {"traceId": "AAECAwQFBgcICQoLDA0ODw==", "spanId": "0001020304050607"}]}
        });
        let data = profiles_data(&v).unwrap();
        let p = &data.resource_profiles[0].scope_profiles[0].profiles[0];
        assert_eq!(p.samples[0].stack_index, 3);
        assert_eq!(p.samples[0].values, [1, -2]);
        assert_eq!(p.samples[0].timestamps_unix_nano, [u64::MAX]);
        assert_eq!(p.period, 1000);
        assert_eq!(p.profile_id, (1..=16).collect::<Vec<u8>>());
        let link = &data.dictionary.unwrap().link_table[1];
        assert_eq!(
            link.trace_id,
            (0..16).collect::<Vec<u8>>(),
            "base64 fallback"
        );
        assert_eq!(link.span_id, (0..8).collect::<Vec<u8>>());
    }

    #[test]
    fn errors_name_the_path() {
        let v = json!({"resourceProfiles": [{"scopeProfiles": [{"profiles": [{"samples": [{"stackIndex": "x"}]}]}]}]});
        let e = profiles_data(&v).unwrap_err();
        assert_eq!(
            e.0,
            "$.resourceProfiles[0].scopeProfiles[0].profiles[0].samples[0].stackIndex: \"x\" is not an int32"
        );
        let e = profiles_data(&json!({"resourceProfiles": [{"resource": {"attributes": [{"value": {"intValue": "99999999999999999999"}}]}}]})).unwrap_err();
        assert!(
            e.0.ends_with("intValue: \"99999999999999999999\" is not an int64"),
            "{}",
            e.0
        );
    }
}
