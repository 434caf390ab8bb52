//! The document as speedscope's schema defines it, read with typed serde (never a generic
//! JSON value) after its nesting depth is checked.

use serde::Deserialize;

use crate::error::Result;
use crate::formats::json_document;
use crate::limits::{exceeded, Limits};

#[derive(Deserialize)]
pub(super) struct Document {
    pub shared: Shared,
    pub profiles: Vec<ProfileDoc>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub exporter: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct Shared {
    pub frames: Vec<FrameDoc>,
}

#[derive(Deserialize)]
pub(super) struct FrameDoc {
    pub name: String,
    #[serde(default)]
    pub file: Option<String>,
    #[serde(default)]
    pub line: Option<i64>,
    #[serde(default)]
    pub col: Option<i64>,
}

/// One profile; which fields it has depends on `type`. One struct rather than an internally
/// tagged enum, which serde would buffer whole before reading.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ProfileDoc {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub name: Option<String>,
    pub unit: String,
    /// Where the profile ends: spans never closed are open until then.
    #[serde(default)]
    pub end_value: Option<f64>,
    #[serde(default)]
    pub events: Vec<Event>,
    #[serde(default)]
    pub samples: Vec<Vec<u64>>,
    #[serde(default)]
    pub weights: Vec<f64>,
}

#[derive(Deserialize)]
pub(super) struct Event {
    #[serde(rename = "type")]
    pub kind: EventKind,
    pub at: f64,
    pub frame: u64,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
pub(super) enum EventKind {
    /// A frame opened.
    O,
    /// A frame closed.
    C,
}

impl Document {
    pub(super) fn parse(json: &[u8], limits: &Limits) -> Result<Document> {
        limits.check_json_depth(json)?;
        let doc: Document = json_document::parse(super::FORMAT, json)?;
        if doc.shared.frames.len() as u64 > limits.max_table_entries {
            return Err(exceeded("max_table_entries", limits.max_table_entries));
        }
        let records = doc.profiles.iter().fold(0u64, |n, p| {
            n.saturating_add((p.events.len() + p.samples.len()) as u64)
        });
        if records > limits.max_samples {
            return Err(exceeded("max_samples", limits.max_samples));
        }
        Ok(doc)
    }
}
