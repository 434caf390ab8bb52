//! What only the command line shows: flame graphs drawn from the stack tables and the summary
//! `inspect` prints. They live here rather than in the library so that the functions, which
//! never draw or print them, do not build or ship inferno and the summary code.

#![warn(missing_docs)]

pub mod flame;
pub mod summary;
