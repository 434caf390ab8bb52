//! Drawing folded stacks as an interactive SVG flame graph with inferno.

use inferno::flamegraph::{from_lines, Options};

use super::fold::Folded;
use proflake::{ErrorKind, Result};

/// Renders `folded` as an SVG flame graph titled `title`, widths in `folded.unit`.
///
/// Colours come from a hash of each function name, not a random generator, so the same
/// input always gives the same bytes (and a function keeps its colour across graphs).
pub fn render_svg(folded: &Folded, title: &str) -> Result<Vec<u8>> {
    // inferno draws an error picture and fails when the total is 0; say why instead.
    if folded.total() == 0 {
        return Err(ErrorKind::NoSamples {
            why: "the selected samples weigh 0 in total: nothing to draw".into(),
        }
        .into());
    }
    let text: Vec<String> = folded
        .lines
        .iter()
        .map(|(path, weight)| format!("{path} {weight}"))
        .collect();
    let mut options = Options::default();
    options.title = title.to_owned();
    options.count_name = folded.unit.clone();
    options.deterministic = true;
    let mut svg = Vec::new();
    from_lines(&mut options, text.iter().map(String::as_str), &mut svg).map_err(|e| {
        ErrorKind::Malformed {
            format: "folded stacks",
            offset: 0,
            what: e.to_string(),
        }
    })?;
    Ok(svg)
}
