//! Content sniffing: whether the first bytes of an input are OTLP profiles.
//!
//! pprof and Perfetto traces also start with the tag `0x0a`, so the binary test checks the
//! structure two levels deep against the messages a request starts with: a
//! `ResourceProfiles` holds only length-delimited fields (pprof's first `ValueType` holds only
//! varints), its `Resource` holds `KeyValue`s whose key is a string, and so on. Bytes cut off
//! by the end of the sniffed prefix are accepted as far as they go.

use crate::formats::protowire::{self, Field, Fields, Value, WireError};

/// What the sniffer knows about each message it descends into.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Msg {
    Request,
    ResourceProfiles,
    Resource,
    KeyValue,
    AnyValue,
    Scope,
    ScopeProfiles,
    Dictionary,
    Mapping,
    Location,
    Function,
    Link,
    KeyValueAndUnit,
    Stack,
    /// Contents not checked (a profile, whose numbering depends on the layout; entity refs;
    /// nested values).
    Opaque,
    Utf8,
}

/// What a field of `msg` numbered `number` may hold: `None` if the field is not part of the
/// message; `Some(None)` for a scalar; `Some(Some(m))` for a length-delimited `m`.
fn schema(msg: Msg, number: u32, wire_type: u8) -> Option<Option<Msg>> {
    use Msg::*;
    let len = |m: Msg| (wire_type == 2).then_some(Some(m));
    let varint = || (wire_type == 0).then_some(None);
    // Packed repeated scalars are LEN; a single unpacked element is a varint.
    let ints = || matches!(wire_type, 0 | 2).then_some(None);
    match (msg, number) {
        (Request, 1) => len(ResourceProfiles),
        (Request, 2) => len(Dictionary),
        (ResourceProfiles, 1) => len(Resource),
        (ResourceProfiles, 2) => len(ScopeProfiles),
        (ResourceProfiles, 3) => len(Utf8),
        (Resource, 1) => len(KeyValue),
        (Resource, 2) => varint(),
        (Resource, 3) => len(Opaque),
        (KeyValue, 1) => len(Utf8),
        (KeyValue, 2) => len(AnyValue),
        (KeyValue, 3) => varint(),
        (AnyValue, 1) => len(Utf8),
        (AnyValue, 2 | 3 | 8) => varint(),
        (AnyValue, 4) => (wire_type == 1).then_some(None),
        (AnyValue, 5..=7) => len(Opaque),
        (Scope, 1 | 2) => len(Utf8),
        (Scope, 3) => len(KeyValue),
        (Scope, 4) => varint(),
        (ScopeProfiles, 1) => len(Scope),
        (ScopeProfiles, 2) => len(Opaque),
        (ScopeProfiles, 3) => len(Utf8),
        (Dictionary, 1) => len(Mapping),
        (Dictionary, 2) => len(Location),
        (Dictionary, 3) => len(Function),
        (Dictionary, 4) => len(Link),
        (Dictionary, 5) => len(Opaque),
        (Dictionary, 6) => len(KeyValueAndUnit),
        (Dictionary, 7) => len(Stack),
        (Mapping, 1..=4) => varint(),
        (Mapping, 5) => ints(),
        (Location, 1 | 2) => varint(),
        (Location, 3) => len(Opaque),
        (Location, 4) => ints(),
        (Function, 1..=4) => varint(),
        (Link, 1 | 2) => len(Opaque),
        (KeyValueAndUnit, 1 | 3) => varint(),
        (KeyValueAndUnit, 2) => len(AnyValue),
        (Stack, 1) => ints(),
        _ => None,
    }
}

/// Checks `buf` as a `msg`. `complete` is false when `buf` may have been cut by the end of
/// the sniffed prefix; then running out of bytes is not a mismatch.
fn conforms(msg: Msg, buf: &[u8], complete: bool) -> bool {
    match msg {
        Msg::Opaque => return true,
        Msg::Utf8 => {
            return match std::str::from_utf8(buf) {
                Ok(_) => true,
                // A character cut by the prefix end is fine.
                Err(e) => !complete && e.error_len().is_none(),
            };
        }
        _ => {}
    }
    let mut fields = Fields::new(buf, 0);
    for field in &mut fields {
        let field = match field {
            Ok(f) => f,
            Err(WireError::Truncated { offset }) => {
                return !complete && field_cut_conforms(msg, &buf[offset as usize..]);
            }
            Err(WireError::Invalid { .. }) => return false,
        };
        if !field_conforms(msg, &field) {
            return false;
        }
    }
    true
}

/// A field whose bytes are all there, so its payload is complete.
fn field_conforms(msg: Msg, field: &Field) -> bool {
    match schema(msg, field.number, field.value.wire_type()) {
        None => false,
        Some(None) => true,
        Some(Some(inner)) => match field.value {
            Value::Len(payload) => conforms(inner, payload, true),
            _ => false,
        },
    }
}

/// A field whose payload runs past the end of a cut prefix: check its tag, and what there is
/// of its payload.
fn field_cut_conforms(msg: Msg, rest: &[u8]) -> bool {
    let mut at = 0;
    let Some(tag) = varint(rest, &mut at) else {
        return true;
    };
    let number = u32::try_from(tag >> 3).unwrap_or(0);
    let wire_type = (tag & 7) as u8;
    if number == 0 {
        return false;
    }
    match schema(msg, number, wire_type) {
        None => false,
        Some(None) => true,
        Some(Some(inner)) => {
            if varint(rest, &mut at).is_none() {
                return true;
            }
            conforms(inner, &rest[at..], false)
        }
    }
}

/// The varint at `*at`, moving `at` past it.
fn varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let (value, len) = protowire::varint(bytes.get(*at..)?).ok()?;
    *at += len;
    Some(value)
}

/// Whether `prefix` starts a binary OTLP profiles request, or a stream of them each behind a
/// 4-byte big-endian length. `complete` says whether `prefix` is the whole input.
pub(super) fn is_binary(prefix: &[u8], complete: bool) -> bool {
    match prefix {
        // A protobuf message never starts with 0x00 (field number 0), a 4-byte big-endian
        // length below 16 MiB always does.
        [0, a, b, c, rest @ ..] => {
            let len = u32::from_be_bytes([0, *a, *b, *c]) as usize;
            if len == 0 || (complete && len > rest.len()) {
                return false;
            }
            let body = &rest[..len.min(rest.len())];
            is_request(body, complete && len <= rest.len())
        }
        _ => is_request(prefix, complete),
    }
}

/// A request starts with a non-empty `resource_profiles` (encoders write fields in number
/// order, and a request without resources carries no profile) or, as the eBPF profiler's Go
/// encoder writes it, with the dictionary. Every dictionary table starts with its zero value,
/// so a dictionary's first field is an empty entry (`tag 00`); pprof's first fields never are.
fn is_request(body: &[u8], complete: bool) -> bool {
    let mut at = 1;
    let len = varint(body, &mut at);
    let starts_right = match (body.first(), len) {
        (Some(0x0a), Some(len)) => len > 0,
        (Some(0x12), Some(len)) => {
            len >= 2
                && matches!(
                    body.get(at),
                    Some(0x0a | 0x12 | 0x1a | 0x22 | 0x2a | 0x32 | 0x3a)
                )
                && body.get(at + 1) == Some(&0)
        }
        _ => false,
    };
    starts_right && conforms(Msg::Request, body, complete)
}

/// The keys of a `ProfilesDictionary`, JSON names and proto names.
const DICTIONARY_KEYS: &[&[u8]] = &[
    b"mappingTable",
    b"mapping_table",
    b"locationTable",
    b"location_table",
    b"functionTable",
    b"function_table",
    b"linkTable",
    b"link_table",
    b"stringTable",
    b"string_table",
    b"attributeTable",
    b"attribute_table",
    b"stackTable",
    b"stack_table",
];

/// Whether `prefix` starts an OTLP/JSON document: an object with a top-level
/// `resourceProfiles` key, or a `dictionary` object whose first key names a dictionary
/// table. Keys may come in any order (the Collector's marshaler writes the dictionary first,
/// and it can fill the whole sniffed prefix), and unknown top-level keys are skipped, as the
/// decoder ignores them.
pub(super) fn is_json(prefix: &[u8]) -> bool {
    let text = prefix.strip_prefix(b"\xef\xbb\xbf").unwrap_or(prefix);
    let mut json = JsonScan { text, at: 0 };
    if json.next_byte() != Some(b'{') {
        return false;
    }
    loop {
        let Some(key) = json.key() else {
            return false;
        };
        if key == b"resourceProfiles" || key == b"resource_profiles" {
            // Whatever the value, decoding says what is wrong with it.
            return true;
        }
        if key == b"dictionary" && json.peek() == Some(b'{') {
            let mut inside = JsonScan {
                text,
                at: json.at + 1,
            };
            if inside.peek() == Some(b'"') {
                return inside.key().is_some_and(|k| DICTIONARY_KEYS.contains(&k));
            }
        }
        if !json.skip_value() {
            return false;
        }
        if json.next_byte() != Some(b',') {
            // The object ended, or the prefix did, before a request key.
            return false;
        }
    }
}

/// A cursor over JSON text that knows just enough to step over values.
struct JsonScan<'a> {
    text: &'a [u8],
    at: usize,
}

impl<'a> JsonScan<'a> {
    fn skip_blanks(&mut self) {
        while self
            .text
            .get(self.at)
            .is_some_and(|b| b.is_ascii_whitespace())
        {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_blanks();
        self.text.get(self.at).copied()
    }

    fn next_byte(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.at += 1;
        Some(b)
    }

    /// A string's raw bytes (escapes left as written), the cursor after its closing quote.
    fn string(&mut self) -> Option<&'a [u8]> {
        if self.next_byte()? != b'"' {
            return None;
        }
        let start = self.at;
        loop {
            match *self.text.get(self.at)? {
                b'\\' => self.at += 2,
                b'"' => {
                    self.at += 1;
                    return self.text.get(start..self.at - 1);
                }
                _ => self.at += 1,
            }
        }
    }

    /// An object key and its colon.
    fn key(&mut self) -> Option<&'a [u8]> {
        let key = self.string()?;
        (self.next_byte()? == b':').then_some(key)
    }

    /// Steps over one value; false if it is not there whole or is not JSON.
    fn skip_value(&mut self) -> bool {
        let mut depth = 0usize;
        loop {
            match self.peek() {
                None => return false,
                Some(b'"') => {
                    if self.string().is_none() {
                        return false;
                    }
                }
                Some(b'{' | b'[') => {
                    depth += 1;
                    self.at += 1;
                }
                Some(b'}' | b']') => {
                    let Some(d) = depth.checked_sub(1) else {
                        return false;
                    };
                    depth = d;
                    self.at += 1;
                }
                Some(b',' | b':') if depth > 0 => self.at += 1,
                Some(b) if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.') => {
                    while self.text.get(self.at).is_some_and(|b| {
                        b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.')
                    }) {
                        self.at += 1;
                    }
                    if self.at == self.text.len() {
                        // A number cut by the prefix end.
                        return false;
                    }
                }
                Some(_) => return false,
            }
            if depth == 0 {
                return true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pprof_value_type_is_not_a_resource() {
        // pprof: sample_type {type: 1, unit: 2}, then a sample.
        let pprof = [0x0a, 0x04, 0x08, 0x01, 0x10, 0x02, 0x12, 0x02, 0x0a, 0x00];
        assert!(!is_binary(&pprof, true));
    }

    #[test]
    fn minimal_request_and_cut_prefix() {
        // resource_profiles { resource { attributes { key: "k" } } }
        let req = [0x0a, 0x07, 0x0a, 0x05, 0x0a, 0x03, 0x0a, 0x01, b'k'];
        assert!(is_binary(&req, true));
        assert!(is_binary(&req[..7], false), "cut inside the key");
        assert!(
            !is_binary(&req[..7], true),
            "a whole input must not end inside a field"
        );
        let mut stream = vec![0, 0, 0, req.len() as u8];
        stream.extend_from_slice(&req);
        assert!(is_binary(&stream, true));
        stream[3] += 1;
        assert!(!is_binary(&stream, true), "length beyond the end");
        assert!(!is_binary(&[0x0a, 0x00], true), "empty resource");
        // dictionary first: stack_table {} then string_table "" and "x".
        let dict_first = [
            0x12, 0x07, 0x3a, 0x00, 0x2a, 0x00, 0x2a, 0x01, b'x', 0x0a, 0x02, 0x1a, 0x00,
        ];
        assert!(is_binary(&dict_first, true));
        let pprof_sample_first = [0x12, 0x04, 0x0a, 0x02, 0x08, 0x09];
        assert!(!is_binary(&pprof_sample_first, true));
    }

    #[test]
    fn json_needs_the_key() {
        assert!(is_json(b"  {\"resourceProfiles\" : []}"));
        assert!(is_json(b"\xef\xbb\xbf{\"resource_profiles\":[]}"));
        assert!(!is_json(b"{\"note\": \"resourceProfiles\"}"));
        assert!(!is_json(b"[{\"resourceProfiles\": []}]"));
        assert!(
            !is_json(b"{\"other\": {\"resourceProfiles\": []}}"),
            "a nested key is not the request's"
        );
    }

    #[test]
    fn json_keys_in_any_order() {
        assert!(is_json(
            b"{\"dictionary\": {\"stringTable\": [\"\"]}, \"resourceProfiles\": []}"
        ));
        assert!(is_json(b"{\"dictionary\":{},\"resourceProfiles\":[]}"));
        // Unknown keys first, with values of every JSON type.
        assert!(is_json(
            b"{\"a\": 1.5e3, \"b\": [true, null, {\"c\": \"}\\\"\"}], \"resource_profiles\": [{}]}"
        ));
        // A dictionary larger than the sniffed prefix: only its first key is there.
        let mut cut = b"{\n \"dictionary\": {\n  \"mappingTable\": [".to_vec();
        cut.extend(b"{\"memoryStart\": \"4096\"},".repeat(300));
        cut.truncate(4096);
        assert!(is_json(&cut));
        assert!(!is_json(b"{\"dictionary\": {\"words\": []}}"));
        assert!(!is_json(b"{\"dictionary\": {}}"), "no profiles");
        assert!(!is_json(b"{\"a\": 1, \"dictionary"), "cut before the value");
    }
}
