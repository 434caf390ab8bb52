//! Flame graphs from the stack tables: read the Parquet tables (or take them in memory),
//! fold the selected samples into weighted stacks, draw them with inferno.
//!
//! Working from the tables rather than the model means a graph of a whole bucket (many
//! uploads, any input format) and a graph of one converted file come from the same code.

mod columns;
mod fold;
mod paths;
mod read;
mod render;
mod time;

#[cfg(test)]
mod tests;

pub use fold::{fold, FlameFilter, Folded, IdOrName};
pub use paths::flame_frame_name;
pub use read::{read_table_objects, read_tables, read_tables_between};
pub use render::render_svg;
pub use time::parse_time_ns;
