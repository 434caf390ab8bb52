//! The Arrow schemas of the stack tables, version 2 (documented in `docs/tables.md`). Only
//! signed types: Athena, Trino, Spark and Iceberg have no unsigned ones.
//!
//! Column order here is the order in the files; new columns go at the end.

use std::sync::{Arc, LazyLock};

use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};

/// Version of the table schemas; part of every table key (`tables/v2/...`).
pub const TABLES_SCHEMA_VERSION: u32 = 2;

/// The tables, in write order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Table {
    /// One row per profile (one series of one process, one window).
    Profiles,
    /// One row per observation.
    Samples,
    /// The call tree, one row per node.
    Stacks,
    /// One row per distinct code location.
    Frames,
    /// Self and total value per function, series, service and hour.
    FunctionRollup,
    /// One row per instant and per counter value.
    Counters,
}

impl Table {
    /// Every table, in write order.
    pub const ALL: [Table; 6] = [
        Table::Profiles,
        Table::Samples,
        Table::Stacks,
        Table::Frames,
        Table::FunctionRollup,
        Table::Counters,
    ];

    /// The table's name, as in keys and in `proflake.table`.
    pub fn name(self) -> &'static str {
        match self {
            Table::Profiles => "profiles",
            Table::Samples => "samples",
            Table::Stacks => "stacks",
            Table::Frames => "frames",
            Table::FunctionRollup => "function_rollup",
            Table::Counters => "counters",
        }
    }

    /// The table's Arrow schema.
    pub fn schema(self) -> SchemaRef {
        match self {
            Table::Profiles => PROFILES.clone(),
            Table::Samples => SAMPLES.clone(),
            Table::Stacks => STACKS.clone(),
            Table::Frames => FRAMES.clone(),
            Table::FunctionRollup => FUNCTION_ROLLUP.clone(),
            Table::Counters => COUNTERS.clone(),
        }
    }

    /// The columns rows are sorted by, in order.
    pub fn sort_columns(self) -> &'static [&'static str] {
        match self {
            Table::Profiles => &["start_time", "profile_id"],
            Table::Samples => &["timestamp", "profile_id"],
            Table::Stacks => &["profile_id", "stack_id"],
            Table::Frames => &["profile_id", "frame_id"],
            Table::FunctionRollup => &["hour", "service", "function"],
            Table::Counters => &["timestamp", "pid", "thread_id"],
        }
    }
}

/// UTC microsecond timestamps: DuckDB's `TIMESTAMP WITH TIME ZONE`.
pub fn timestamp_type() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
}

fn text(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::Utf8, nullable)
}

/// `MAP(VARCHAR, VARCHAR)` with the field names parquet and DuckDB use.
pub fn string_map_type() -> DataType {
    let entries = Field::new(
        "key_value",
        DataType::Struct(Fields::from(vec![text("key", false), text("value", true)])),
        false,
    );
    DataType::Map(Arc::new(entries), false)
}

/// The struct of one `frames.inlined_into` entry. New fields go at the end, nullable, as
/// new columns do.
pub fn inlined_call_fields() -> Fields {
    Fields::from(vec![
        text("function", true),
        text("file", true),
        Field::new("line", DataType::Int32, true),
        Field::new("column", DataType::Int32, true),
        text("system_name", true),
    ])
}

fn int(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::Int32, nullable)
}

fn bigint(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::Int64, nullable)
}

static PROFILES: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        text("source_id", false),
        text("profile_id", false),
        text("source_key", false),
        text("source_etag", false),
        text("source_format", false),
        text("converter", false),
        text("platform", false),
        text("release", true),
        text("environment", true),
        text("service", true),
        text("host", true),
        bigint("pid", true),
        text("process_name", true),
        text("sample_type", false),
        text("sample_unit", false),
        text("series_kind", false),
        bigint("period", true),
        bigint("frequency_hz", true),
        text("timestamps", false),
        Field::new("start_time", timestamp_type(), false),
        Field::new("end_time", timestamp_type(), false),
        bigint("samples", false),
        bigint("total_value", false),
        bigint("total_weight_ns", true),
        Field::new("attributes", string_map_type(), false),
        // Added within version 2.
        text("clock_source", true),
    ]))
});

static SAMPLES: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        text("source_id", false),
        text("profile_id", false),
        text("sample_type", false),
        text("sample_unit", false),
        Field::new("timestamp", timestamp_type(), true),
        bigint("thread_id", true),
        text("thread_name", true),
        int("stack_id", true),
        bigint("value", false),
        bigint("weight_ns", true),
        int("cpu", true),
        text("trace_id", true),
        text("span_id", true),
        Field::new("labels", string_map_type(), true),
        // Added within version 2.
        text("cpu_mode", true),
        text("unwind_error", true),
        bigint("counter", true),
    ]))
});

static STACKS: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        text("source_id", false),
        text("profile_id", false),
        int("stack_id", false),
        int("parent_id", true),
        int("frame_id", false),
        int("depth", false),
    ]))
});

static FRAMES: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        text("source_id", false),
        text("profile_id", false),
        int("frame_id", false),
        text("name", false),
        text("kind", false),
        text("function", true),
        text("system_name", true),
        text("module", true),
        text("file", true),
        int("line", true),
        int("column", true),
        bigint("address", true),
        text("address_space", true),
        text("image_path", true),
        text("build_id", true),
        text("debug_id", true),
        bigint("image_start", true),
        bigint("image_end", true),
        bigint("image_file_offset", true),
        Field::new(
            "inlined_into",
            DataType::List(Arc::new(Field::new(
                "element",
                DataType::Struct(inlined_call_fields()),
                false,
            ))),
            false,
        ),
        Field::new("symbolized", DataType::Boolean, false),
        text("symbol_status", true),
        bigint("function_start", true),
    ]))
});

static FUNCTION_ROLLUP: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        text("source_id", false),
        Field::new("hour", timestamp_type(), false),
        text("service", true),
        text("release", true),
        text("environment", true),
        text("platform", false),
        text("sample_type", false),
        text("sample_unit", false),
        text("function", false),
        bigint("self_value", false),
        bigint("total_value", false),
        bigint("self_rows", false),
        bigint("total_rows", false),
    ]))
});

static COUNTERS: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        text("source_id", false),
        Field::new("timestamp", timestamp_type(), false),
        bigint("pid", true),
        text("process_name", true),
        bigint("thread_id", true),
        text("thread_name", true),
        text("kind", false),
        text("name", false),
        text("category", true),
        text("key", true),
        Field::new("value", DataType::Float64, true),
        text("scope", true),
        Field::new("labels", string_map_type(), true),
    ]))
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_columns_exist() {
        for table in Table::ALL {
            let schema = table.schema();
            for c in table.sort_columns() {
                assert!(schema.field_with_name(c).is_ok(), "{} {c}", table.name());
            }
        }
    }
}
