//! What only the command line shows: flame graphs drawn from the stack tables. They live here
//! rather than in the library so that the functions, which never draw them, do not build or
//! ship inferno.

#![warn(missing_docs)]

pub mod flame;
