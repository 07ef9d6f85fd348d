//! The bench's `--json` reports: cuzk-ctl's report (docs/bench/SCHEMA.md)
//! naming this binary, its features and its CUDA toolkit.

use cuzk_ctl::report::{JsonReport, Tool};
use std::path::Path;

/// Starts the report of `command`, written to `path` if one was asked for.
pub fn start(command: &str, path: Option<&Path>) -> JsonReport {
    JsonReport::start(tool(), command, path)
}

/// This binary as its reports name it (build, commit, features).
pub fn tool() -> Tool {
    let features = [
        ("cuda", cfg!(feature = "cuda")),
        ("supraseal", cfg!(feature = "supraseal")),
    ]
    .into_iter()
    .filter(|(_, on)| *on)
    .map(|(name, _)| name.to_string())
    .collect();
    Tool::new(env!("CARGO_PKG_NAME"), features, Some(env!("CUZK_CUDA_TOOLKIT")))
}
