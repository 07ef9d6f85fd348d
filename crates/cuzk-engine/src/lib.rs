//! cuzk's proving engine: jobs, the partition pipeline, the memory budget
//! and the SRS manager, independent of any transport, proof type or
//! prover hardware.
//!
//! The engine is given its prover backends (`cuzk_core::ProverBackend`)
//! and its plan sources (`cuzk_core::PlanSource`) at start. A request
//! becomes a plan, the plan per-partition work items. One ordered
//! dispatcher grants memory before synthesis; `partition_workers` threads
//! synthesise; each backend's prover workers take ready partitions through
//! a bounded, priority-ordered hand-off and run `prove_start` (beside them,
//! a synthesis worker and a prover kept for PoSt partitions); `finish`
//! runs on finisher threads, so a prover moves to the next partition while
//! the previous one's G2 MSM and epilogue complete. Partitions are
//! assembled in order and the whole proof is verified before it is
//! reported COMPLETED.
//!
//! Files, in pipeline order: [`engine`] (the API), `sched` (dispatcher and
//! hand-off), `stages/{synthesis,prove,finish}.rs`, with `config`,
//! `status`, `state`, `job`, `plans`, `srs`, `metrics` and `timeline` beside
//! them.

mod config;
pub mod engine;
mod job;
mod metrics;
mod plans;
mod sched;
pub mod srs;
mod stages;
mod state;
mod status;
mod sync;
mod timeline;

pub use config::EngineConfig;
pub use engine::{Engine, SubmitOutcome};
pub use job::{JobResult, JobStatus};
pub use srs::{SrsStatus, Tier};
pub use status::{DeviceStatus, EngineStatus, KindQueue};

use cuzk_core::PlanError;

/// Errors the engine reports to clients.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// The request is malformed or out of bounds.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The proof type is not served (yet).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// No job with this id (never existed, or its result was pruned).
    #[error("no job with id {0}")]
    NotFound(String),
    /// The request cannot be taken now or ever with these resources (its
    /// partitions exceed the memory budget, or the queue is full).
    #[error("resource exhausted: {0}")]
    ResourceExhausted(String),
    /// The engine is shutting down and accepts no new work.
    #[error("the engine is shutting down")]
    ShuttingDown,
    /// Parameters could not be loaded.
    #[error("parameters: {0}")]
    Srs(String),
    /// A step that should not fail did.
    #[error("internal error: {0}")]
    Internal(String),
}

impl EngineError {
    /// Not found, echoing at most 64 characters of a client's id (a 1 MB id
    /// must not come back in the error).
    pub fn not_found(job_id: &str) -> Self {
        let mut shown: String = job_id.chars().take(64).collect();
        if shown.len() < job_id.len() {
            shown.push('…');
        }
        EngineError::NotFound(shown)
    }
}

impl From<PlanError> for EngineError {
    fn from(e: PlanError) -> Self {
        match e {
            PlanError::InvalidArgument(m) => EngineError::InvalidArgument(m),
            PlanError::Unsupported(m) => EngineError::Unsupported(m),
            PlanError::Parameters(m) => EngineError::Srs(m),
            other => EngineError::Internal(other.to_string()),
        }
    }
}
