//! The repository's own rules, the ones ARCHITECTURE.md states as invariants and a machine can
//! check, held by tests in `tidy` (as rust-analyzer's `xtask/src/tidy.rs` does): run with
//! `cargo test -p xtask`, and by `scripts/test` with every other suite.
//!
//! Nothing here ships: the crate has no public API beyond the helpers its tests share.

#![deny(missing_docs)]

#[cfg(test)]
mod tidy;

use std::path::{Path, PathBuf};

/// The repository's root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask/ sits in the repository").to_owned()
}

/// Every `.rs` file under `dir`, skipping build output, installed packages and virtual
/// environments, in a stable order.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if path.is_dir() {
                if !matches!(name.to_str(), Some("target" | "node_modules" | ".venv" | ".git")) {
                    pending.push(path);
                }
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// `path` relative to the repository's root, for messages.
pub fn shown(path: &Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).display().to_string()
}
