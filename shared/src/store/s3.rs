//! An S3 bucket (or a prefix of one) as an object store.
