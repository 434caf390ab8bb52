//! `ingest`: the Lambda bootstrap. See the `proflake_ingest` library for what it does.

fn main() -> Result<(), lambda_http::Error> {
    proflake_ingest::run()
}
