//! Every relative link in the repository's Markdown resolves: to a file that exists and, for
//! `page.md#anchor`, to a heading of that page (as GitHub names its anchors). Pages get split
//! and sections move; a link left behind fails here rather than in a reader's browser.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::util::repo_path;

/// Directories without documentation of the repository's own: build output, tools, virtual
/// environments and version control (all hidden or named `target`).
fn skipped(name: &str) -> bool {
    name.starts_with('.') || name == "target" || name == "node_modules"
}

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy();
        if path.is_dir() {
            if !skipped(&name) {
                markdown_files(&path, out);
            }
        } else if name.ends_with(".md") {
            out.push(path);
        }
    }
}

/// The lines of `text` outside fenced code blocks (the fences included).
fn outside_fences(text: &str) -> impl Iterator<Item = &str> {
    let mut fenced = false;
    text.lines().filter(move |line| {
        let fence = line.trim_start().starts_with("```");
        fenced ^= fence;
        !fenced && !fence
    })
}

/// The text outside fenced code blocks and inline code spans, where a link is a link. A code
/// span may wrap onto the next line, but never past a blank one.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for line in outside_fences(text) {
        if line.trim().is_empty() {
            in_code = false;
        }
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
            } else if !in_code {
                out.push(c);
            }
        }
        out.push('\n');
    }
    out
}

/// The targets of the inline links `[text](target)` in `prose`.
fn link_targets(prose: &str) -> Vec<&str> {
    prose
        .match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &prose[at + 2..];
            let end = rest.find(|c: char| c == ')' || c.is_whitespace())?;
            (rest.as_bytes()[end] == b')').then(|| &rest[..end])
        })
        .collect()
}

fn is_remote(target: &str) -> bool {
    target.contains("://") || target.starts_with("mailto:")
}

/// A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor a page has: its headings (a repeated one numbered `-1`, `-2`, … as GitHub
/// does) and explicit `<a id="…">` or `<a name="…">` targets.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for line in outside_fences(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
            let base = slug(line[hashes..].trim().trim_end_matches('#'));
            let mut anchor = base.clone();
            let mut n = 0;
            while found.contains(&anchor) {
                n += 1;
                anchor = format!("{base}-{n}");
            }
            found.insert(anchor);
        }
        for attribute in ["<a id=\"", "<a name=\""] {
            for (at, _) in line.match_indices(attribute) {
                let rest = &line[at + attribute.len()..];
                if let Some(end) = rest.find('"') {
                    found.insert(rest[..end].to_owned());
                }
            }
        }
    }
    found
}

/// What is wrong with `target`, a link in the page at `page`, if anything.
fn broken(page: &Path, target: &str) -> Option<String> {
    let (path, anchor) = match target.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (target, None),
    };
    let resolved = if path.is_empty() {
        page.to_path_buf()
    } else {
        page.parent().unwrap().join(path)
    };
    if !resolved.exists() {
        return Some("no such file".to_owned());
    }
    let anchor = anchor.filter(|_| resolved.extension().is_some_and(|e| e == "md"))?;
    let text = std::fs::read_to_string(&resolved).unwrap();
    (!anchors(&text).contains(anchor)).then(|| "no such heading".to_owned())
}

#[test]
fn relative_links_in_markdown_resolve() {
    let root = repo_path("");
    let mut pages = Vec::new();
    markdown_files(&root, &mut pages);
    assert!(
        pages.iter().any(|p| p.ends_with("docs/tables.md")),
        "{pages:?}"
    );
    let mut problems = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for target in link_targets(&prose(&text)) {
            if is_remote(target) {
                continue;
            }
            if let Some(why) = broken(page, target) {
                let name = page.strip_prefix(&root).unwrap_or(page).display();
                problems.push(format!("{name}: {target}: {why}"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
}

#[test]
fn anchors_are_named_as_github_names_them() {
    let page = "# `convert` and `process`\n## Limits\n```sh\n# not a heading\n```\n## Limits\n\
                <a id=\"here\"></a>\n## What the decoders skip: counts, …\n";
    let expected = [
        "convert-and-process",
        "here",
        "limits",
        "limits-1",
        "what-the-decoders-skip-counts-",
    ];
    assert_eq!(anchors(page), expected.map(String::from).into());
}

#[test]
fn links_in_code_are_not_links() {
    let text = "[a](x.md) `[b](y.md)` [`c`](z.md#top)\n```\n[d](w.md)\n```\n`wrapped\n[e](v.md)`\n";
    assert_eq!(link_targets(&prose(text)), ["x.md", "z.md#top"]);
}
