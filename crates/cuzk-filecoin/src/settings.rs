//! filecoin-proofs reads its settings (`FIL_PROOFS_*`) from the environment
//! once per process, on first use; these helpers set them before that.

use std::path::{Path, PathBuf};

/// Where filecoin-proofs looks for `v28-*.params` / `.vk` files.
pub const PARAMETER_CACHE_VAR: &str = "FIL_PROOFS_PARAMETER_CACHE";
/// Where filecoin-proofs keeps the SDR parent cache (generated when missing).
pub const PARENT_CACHE_VAR: &str = "FIL_PROOFS_PARENT_CACHE";

/// The one parameter directory of a daemon (or bench): `explicit` (the
/// config's `[srs] param_cache` or `--param-cache`) when given, exported as
/// `FIL_PROOFS_PARAMETER_CACHE` so filecoin-proofs' verifiers read the same
/// `.vk` files; else [`init`]`(default)`.
pub fn init_with(explicit: Option<&Path>, default: &Path) -> PathBuf {
    match explicit {
        Some(dir) => {
            std::env::set_var(PARAMETER_CACHE_VAR, dir);
            init(dir)
        }
        None => init(default),
    }
}

/// [`init_with`]`(Some(dir), dir)` once per process, `dir` created first;
/// every later call returns the first call's directory (filecoin-proofs
/// latches its settings once, so a test binary's tests share one).
pub fn init_once(dir: &Path) -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        if let Err(e) = std::fs::create_dir_all(dir) {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot create the parameter directory");
        }
        init_with(Some(dir), dir)
    })
    .clone()
}

/// The parameter directory in effect: `FIL_PROOFS_PARAMETER_CACHE` when set,
/// else `fallback` (which is then exported so filecoin-proofs agrees).
/// The parent cache defaults to `parent-cache/` beside it.
///
/// Call before any filecoin-proofs function runs (they latch the settings).
pub fn init(fallback: &Path) -> PathBuf {
    let dir = match std::env::var_os(PARAMETER_CACHE_VAR) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => {
            std::env::set_var(PARAMETER_CACHE_VAR, fallback);
            fallback.to_path_buf()
        }
    };
    if std::env::var_os(PARENT_CACHE_VAR).is_none() {
        std::env::set_var(PARENT_CACHE_VAR, dir.join("parent-cache"));
    }
    dir
}
