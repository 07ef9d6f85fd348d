//! cuzk's proving engine: jobs, the partition pipeline, the memory budget
//! and the SRS manager, independent of any transport.
//!
//! A proof becomes per-partition work items. One ordered dispatcher grants
//! memory before synthesis; `partition_workers` threads synthesise; prover
//! workers take ready partitions through a bounded, priority-ordered
//! hand-off and run `prove_start`; `finish` runs on finisher threads, so a
//! prover moves to the next partition while the previous one's G2 MSM and
//! epilogue complete. Partitions are assembled in order and the whole proof
//! is verified before it is reported COMPLETED.

mod engine;
mod job;
mod metrics;
pub mod plan;
pub mod request;
mod sched;
pub mod srs;
mod timeline;

pub use engine::{DeviceStatus, Engine, EngineConfig, EngineStatus, KindQueue, SubmitOutcome};
pub use job::{JobResult, JobStatus};
pub use request::{
    Priority, ProofKind, ProofRequest, SectorFields, SyntheticSpec, WitnessSource, SYNTHETIC_REGISTERED_PROOF,
};
pub use srs::{SrsStatus, Tier};

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
