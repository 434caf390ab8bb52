//! `rehydrate`: the Lambda bootstrap. See the `proflake_rehydrate` library for what it does.

fn main() -> Result<(), lambda_runtime::Error> {
    proflake_lambda::run("rehydrate", proflake_rehydrate::App::from_env)
}
