//! `publish`: the Lambda bootstrap. See the `proflake_publish` library for what it does.

fn main() -> Result<(), lambda_runtime::Error> {
    proflake_lambda::run("publish", proflake_publish::App::from_env)
}
