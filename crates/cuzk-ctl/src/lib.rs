//! cuzk-ctl: the operator's tool beside the daemon (`cuzk-ctl doctor`,
//! `status`, `preload`, `metrics`, `timeline`), and what it shares with
//! cuzk-bench:
//!
//! - [`daemon`]: reaching a daemon (address, TLS, token).
//! - [`report`]: the `--json` report both tools write (docs/bench/SCHEMA.md)
//!   and the host's description in it.
//! - [`doctor`]: a host checked before it proves, with what to fix.
//! - [`admin`]: a daemon's status, preloads and metrics.
//! - [`timeline`]: a log's TIMELINE lines drawn as an SVG chart.

pub mod admin;
pub mod daemon;
pub mod doctor;
pub mod report;
pub mod timeline;

/// This tool, as its `--json` reports name it.
fn tool() -> report::Tool {
    report::Tool::new(env!("CARGO_PKG_NAME"), Vec::new(), None)
}
