//! The layout (docs/layout.md, linked from the README) is the repository's: every path it names
//! exists, and every crate, module of `shared`, document and script is named, so the layout
//! cannot go stale unnoticed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The first word of each unindented line of docs/layout.md's layout block.
fn layout() -> BTreeSet<String> {
    let readme = std::fs::read_to_string(root().join("docs/layout.md")).unwrap();
    let section = readme
        .split("\n## Layout")
        .nth(1)
        .expect("docs/layout.md has a Layout section");
    let block = section
        .split("```text\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .expect("the Layout section has a text block");
    block
        .lines()
        .filter(|line| !line.starts_with(' '))
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// The entries of `dir` (relative to the root) as the layout writes them: `dir/name` for a
/// file, `dir/name/` for a folder.
fn entries(dir: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root().join(dir))
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type().unwrap().is_dir() {
                format!("{dir}/{name}/")
            } else {
                format!("{dir}/{name}")
            }
        })
        .filter(|name| {
            !name
                .rsplit('/')
                .find(|part| !part.is_empty())
                .unwrap()
                .starts_with('.')
        })
        .collect();
    names.sort();
    names
}

#[test]
fn every_path_the_layout_names_exists() {
    for path in layout() {
        let on_disk = root().join(path.trim_end_matches('/'));
        assert!(
            on_disk.exists(),
            "docs/layout.md's layout names {path}, which is not there"
        );
        assert_eq!(
            on_disk.is_dir(),
            path.ends_with('/'),
            "{path}: a folder is written with a trailing /, a file without"
        );
    }
}

#[test]
fn every_crate_module_document_and_script_is_named() {
    let layout = layout();
    let mut wanted: Vec<String> = [
        "Cargo.toml",
        "template.yaml",
        "samconfig.toml",
        "openapi.yaml",
        "Makefile",
        "shared/",
        "admin/",
        "devplane/",
        "dataplane/",
        "holder/",
        "examples/agent/",
        "tests/",
        "bench/",
        "fuzz/",
        "events/",
        "functions/",
        "scripts/",
    ]
    .map(str::to_owned)
    .to_vec();
    for dir in ["functions", "shared/src", "docs", "scripts"] {
        wanted.extend(entries(dir));
    }
    let missing: Vec<&String> = wanted
        .iter()
        .filter(|path| !layout.contains(*path))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/layout.md's layout does not name {missing:?}"
    );
}
