//! `convert`: the Lambda bootstrap. See the `proflake_convert` library for what it does.

fn main() -> Result<(), lambda_runtime::Error> {
    proflake_lambda::run("convert", proflake_convert::App::from_env)
}
