//! Chunk measurements (memory footprint, CPU usage, frame rates) that SDKs send beside a
//! profile, in the shape Relay re-serializes them: a unit from a closed list and
//! `{timestamp, value}` points. Relay rejects a chunk with any other unit, so do we.

use serde::{Deserialize, Serialize};

/// One named measurement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// The unit of every value.
    pub unit: MeasurementUnit,
    /// The points, in the order sent.
    pub values: Vec<MeasurementValue>,
}

/// Relay's measurement units; the short aliases are accepted on input and written in full.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MeasurementUnit {
    /// Nanoseconds (`ns`).
    #[serde(alias = "ns")]
    Nanosecond,
    /// Hertz (`hz`).
    #[serde(alias = "hz")]
    Hertz,
    /// Bytes.
    Byte,
    /// Percent.
    Percent,
    /// Nanojoules (`nj`).
    #[serde(alias = "nj")]
    Nanojoule,
}

impl MeasurementUnit {
    /// The unit's full name, as it is written.
    pub fn name(self) -> &'static str {
        match self {
            MeasurementUnit::Nanosecond => "nanosecond",
            MeasurementUnit::Hertz => "hertz",
            MeasurementUnit::Byte => "byte",
            MeasurementUnit::Percent => "percent",
            MeasurementUnit::Nanojoule => "nanojoule",
        }
    }
}

/// One point. Other keys SDKs send (`elapsed_since_start_ns`) are dropped, as Relay drops them.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeasurementValue {
    /// Unix time in seconds.
    pub timestamp: f64,
    /// The value.
    pub value: f64,
}

impl Measurement {
    /// The points whose time lies in `[start_ns, end_ns]`.
    pub fn between(&self, start_ns: i64, end_ns: i64) -> Measurement {
        let inside = |v: &&MeasurementValue| {
            let ns = v.timestamp * 1e9;
            ns >= start_ns as f64 && ns <= end_ns as f64
        };
        Measurement {
            unit: self.unit,
            values: self.values.iter().filter(inside).copied().collect(),
        }
    }
}
