//! The convert and rehydrate Lambdas' handlers end to end: real uploads to S3, the real S3 →
//! SQS notifications, the handlers called the way Lambda's SQS event source mapping calls them, all
//! against a moto server per test (S3 + SQS; `.venv/bin/moto_server`, or
//! `$PROFLAKE_MOTO_SERVER`). scripts/test.sh installs moto into .venv.
//!
//! `cargo test -p proflake-tests --test e2e -- --nocapture` shows the burst throughput, and that
//! of the 1,000 uploads drained under faults (faults_under_load.rs) with handler CPU per object.

mod burst;
mod convert;
mod failures;
mod fault_proxy;
mod faults_under_load;
mod harness;
mod load;
mod publish;
mod rehydrate;
mod store;

// In the library, so that the command line's tests start their moto the same way.
use proflake_tests::moto;
