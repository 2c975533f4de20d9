//! The benchmark baseline: read every `*.json` under the given directories and parse each
//! into a plain `serde_json::Value`, nothing else. `bench/check.py` compares `servio check`
//! with this over the same files, in the same run.

use std::path::{Path, PathBuf};

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(dir).expect("readable directory").map(|e| e.expect("entry").path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

fn main() {
    let mut files = Vec::new();
    for arg in std::env::args().skip(1) {
        let path = PathBuf::from(arg);
        if path.is_dir() { collect(&path, &mut files) } else { files.push(path) }
    }
    let (mut bytes, mut values) = (0usize, 0usize);
    for file in &files {
        let text = std::fs::read(file).expect("readable file");
        bytes += text.len();
        let value: serde_json::Value = serde_json::from_slice(&text).expect("JSON");
        values += usize::from(value.is_object());
    }
    println!("{} files, {bytes} bytes, {values} objects", files.len());
}
