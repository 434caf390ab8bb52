//! What an export gives: its bytes and what went into them.

/// One series of an export.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportedSeries {
    /// `sample_type`.
    pub sample_type: String,
    /// `sample_unit`.
    pub unit: String,
    /// The sum of the exported samples' values.
    pub total: i64,
    /// The exported `samples` rows.
    pub samples: u64,
}

/// An export's bytes and what went into them.
#[derive(Clone, Debug)]
pub struct Exported {
    /// The file.
    pub bytes: Vec<u8>,
    /// The series the file holds, with their totals.
    pub series: Vec<ExportedSeries>,
    /// Profiles and uploads the samples come from.
    pub profiles: usize,
    /// Uploads the samples come from.
    pub uploads: usize,
}
