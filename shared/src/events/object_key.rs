//! Object keys in S3 event notifications are form-urlencoded: `+` is a space and everything
//! else outside the unreserved set is `%XX` (moto encodes `/` too). A key that is not valid
//! UTF-8 once decoded cannot name an S3 object, so it is an error rather than a lossy guess.

use percent_encoding::percent_decode_str;

/// The object key an event names.
pub fn decode_object_key(encoded: &str) -> std::result::Result<String, String> {
    let spaced = encoded.replace('+', " ");
    let key = percent_decode_str(&spaced)
        .decode_utf8()
        .map_err(|_| format!("object key {encoded:?} is not UTF-8 once decoded"))?;
    if key.is_empty() {
        return Err("empty object key".into());
    }
    Ok(key.into_owned())
}
