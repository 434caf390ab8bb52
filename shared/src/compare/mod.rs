//! Comparing two releases of a service: which functions' shares of a series changed beyond
//! noise.

// The statistics come first; the job that reads the rollups and reports is next.
#[allow(dead_code)]
mod flags;
#[allow(dead_code)]
mod report;
#[allow(dead_code)]
mod rollups;
#[allow(dead_code)]
mod stats;
