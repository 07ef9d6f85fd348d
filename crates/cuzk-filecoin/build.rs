//! Names what shapes the Filecoin circuits, for the compiled R1CS files
//! (`cuzk_filecoin::plans::CIRCUIT_SHAPE`): the versions of the crates that
//! build them, as Cargo.lock resolved them. A file recorded under other
//! versions is stale and recorded again.

use std::path::Path;

/// The crates whose code decides the circuits' constraints.
const CIRCUIT_CRATES: &[&str] = &[
    "bellperson",
    "filecoin-hashers",
    "filecoin-proofs",
    "neptune",
    "storage-proofs-core",
    "storage-proofs-porep",
    "storage-proofs-post",
    "storage-proofs-update",
];

fn main() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let lock = Path::new(&manifest).join("../../Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let text = std::fs::read_to_string(&lock).unwrap_or_default();
    let mut found = Vec::new();
    let mut name = None;
    for line in text.lines() {
        if let Some(value) = line.strip_prefix("name = ") {
            name = Some(value.trim_matches('"').to_owned());
        } else if let (Some(value), Some(current)) = (line.strip_prefix("version = "), name.take()) {
            if CIRCUIT_CRATES.contains(&current.as_str()) {
                found.push(format!("{current} {}", value.trim_matches('"')));
            }
        }
    }
    found.sort();
    let shape = if found.is_empty() {
        // Built outside this workspace: the crate's own version stands in.
        format!(
            "cuzk-filecoin {}",
            std::env::var("CARGO_PKG_VERSION").unwrap_or_default()
        )
    } else {
        found.join(", ")
    };
    println!("cargo:rustc-env=CUZK_CIRCUIT_SHAPE={shape}");
}
