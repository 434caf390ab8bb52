//! Where a reading command (`export`, `compare`, `flamegraph`) finds the bucket: a directory
//! laid out like it, or the bucket itself as `s3://BUCKET[/PREFIX]`.

use std::fmt;
use std::path::PathBuf;

/// The `--store` of a reading command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Location {
    /// A directory that mirrors the bucket.
    Dir(PathBuf),
    /// A bucket, under the prefix its outputs were written with.
    S3(S3Location),
}

/// `s3://BUCKET[/PREFIX]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct S3Location {
    pub(crate) bucket: String,
    /// Empty, or path segments each ending with `/`: what the functions' `PROFLAKE_OUTPUT_PREFIX`
    /// holds, so `s3://b/env/dev` reads what they wrote with `env/dev/`.
    pub(crate) prefix: String,
}

impl Location {
    /// A `--store` value: an `s3://` URL, else a directory. Another `scheme://` is refused
    /// rather than taken for a directory that does not exist.
    pub(crate) fn parse(text: &str) -> Result<Location, String> {
        if let Some(rest) = text.strip_prefix("s3://") {
            return S3Location::parse(rest).map(Location::S3);
        }
        if let Some((scheme, _)) = text.split_once("://") {
            if !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric()) {
                return Err(format!(
                    "{text:?}: only s3://BUCKET[/PREFIX] URLs and directories are stores"
                ));
            }
        }
        Ok(Location::Dir(PathBuf::from(text)))
    }
}

impl S3Location {
    /// What follows `s3://`.
    fn parse(rest: &str) -> Result<S3Location, String> {
        let usage = "expected s3://BUCKET[/PREFIX]";
        let (bucket, path) = rest.split_once('/').unwrap_or((rest, ""));
        if !is_bucket_name(bucket) {
            return Err(format!(
                "s3://{rest}: {bucket:?} is not a bucket name (3 to 63 lowercase letters, \
                 digits, '.' and '-'); {usage}"
            ));
        }
        let path = path.strip_suffix('/').unwrap_or(path);
        // An empty segment would make keys with `//`, which no function writes.
        if !path.is_empty() && path.split('/').any(str::is_empty) {
            return Err(format!(
                "s3://{rest}: the prefix has an empty path segment; {usage}"
            ));
        }
        let prefix = if path.is_empty() {
            String::new()
        } else {
            format!("{path}/")
        };
        Ok(S3Location {
            bucket: bucket.to_owned(),
            prefix,
        })
    }

    /// The URL of `key` under the prefix, for messages.
    pub(crate) fn url_of(&self, key: &str) -> String {
        format!("s3://{}/{}{key}", self.bucket, self.prefix)
    }
}

/// S3's rules for bucket names, enough to catch a mistyped URL before any request.
fn is_bucket_name(name: &str) -> bool {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    (3..=63).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-')
        && edge(name.chars().next())
        && edge(name.chars().last())
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Dir(dir) => write!(f, "{}", dir.display()),
            Location::S3(s3) => write!(f, "{s3}"),
        }
    }
}

impl fmt::Display for S3Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.prefix.strip_suffix('/') {
            Some(prefix) => write!(f, "s3://{}/{prefix}", self.bucket),
            None => write!(f, "s3://{}", self.bucket),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s3(bucket: &str, prefix: &str) -> Location {
        Location::S3(S3Location {
            bucket: bucket.into(),
            prefix: prefix.into(),
        })
    }

    #[test]
    fn urls_name_a_bucket_and_the_outputs_prefix() {
        assert_eq!(Location::parse("s3://my-bucket"), Ok(s3("my-bucket", "")));
        assert_eq!(Location::parse("s3://my-bucket/"), Ok(s3("my-bucket", "")));
        assert_eq!(
            Location::parse("s3://my.bucket/env/dev"),
            Ok(s3("my.bucket", "env/dev/"))
        );
        assert_eq!(
            Location::parse("s3://b12/env/dev/"),
            Ok(s3("b12", "env/dev/"))
        );
        assert_eq!(
            Location::parse("s3://b12/env/dev").unwrap().to_string(),
            "s3://b12/env/dev"
        );
        assert_eq!(
            Location::parse("s3://b12/").unwrap().to_string(),
            "s3://b12"
        );
    }

    #[test]
    fn anything_else_is_a_directory() {
        assert_eq!(Location::parse("out"), Ok(Location::Dir("out".into())));
        assert_eq!(
            Location::parse("./a://b"),
            Ok(Location::Dir("./a://b".into()))
        );
    }

    #[test]
    fn bad_urls_are_refused_with_the_reason() {
        for (url, reason) in [
            ("s3://", "not a bucket name"),
            ("s3:///prefix", "not a bucket name"),
            ("s3://My_Bucket/p", "not a bucket name"),
            ("s3://b-/p", "not a bucket name"),
            ("s3://bucket//p", "empty path segment"),
            ("s3://bucket/a//b", "empty path segment"),
            ("gs://bucket/p", "only s3://"),
        ] {
            let error = Location::parse(url).unwrap_err();
            assert!(error.contains(reason), "{url}: {error}");
        }
    }
}
