//! The pipeline's stages, one worker loop each, in the order a partition
//! passes through them:
//!
//! 1. [`synthesis`]: a partition leaves the dispatcher with its memory
//!    permit, its job's parameters are acquired, and its plan synthesises
//!    it; the result waits in the hand-off for a prover.
//! 2. [`prove`]: a prover worker of one backend runs `prove_start`
//!    (everything but B G2's join and the epilogue) and releases the
//!    permit, since the partition's a/b/c are gone.
//! 3. [`finish`]: a finisher joins B G2 and runs the epilogue; when a job's
//!    last partition arrives, its proofs are assembled in order, verified
//!    as a whole, and the job ends.
//!
//! Third-party code (plans' synthesis and verification, backends) runs
//! inside [`guarded`], so a panic there fails its job instead of killing
//! the worker and leaving the job without a final status.

pub(crate) mod finish;
pub(crate) mod prove;
pub(crate) mod synthesis;

use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `work`, turning a panic into an error naming `what`.
pub(crate) fn guarded<T>(what: &str, work: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    match catch_unwind(AssertUnwindSafe(work)) {
        Ok(result) => result,
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            tracing::error!(%message, "{what} panicked");
            Err(format!("{what} panicked: {message}"))
        }
    }
}
