//! Flame graphs from the stack tables: fold the selected samples of one series into weighted
//! stacks, draw them with inferno. The tables come from [`proflake::tables::read_tables`], from
//! a directory, a bucket or a conversion in memory.
//!
//! Working from the tables rather than the model means a graph of a whole bucket (many
//! uploads, any input format) and a graph of one converted file come from the same code.

mod columns;
mod fold;
mod paths;
mod render;
mod time;

#[cfg(test)]
mod tests;

pub use fold::{fold, FlameFilter, Folded};
pub use proflake::export::IdOrName;
pub use render::render_svg;
pub use time::parse_time_ns;
