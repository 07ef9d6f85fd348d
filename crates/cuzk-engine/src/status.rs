//! What status reports: backends, parameters, queues, memory.

use crate::srs::SrsStatus;
use cuzk_core::backend::BackendStatus;
use cuzk_core::ProofKind;
use std::time::Duration;

/// A prover backend as status reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceStatus {
    /// The backend's own report (name, kind, ordinal, memory).
    pub backend: BackendStatus,
    /// Job being proved now (empty if idle).
    pub current_job_id: String,
    /// Its kind.
    pub current_proof_kind: String,
    /// Out of service this much longer after a failure (`None`: in service).
    pub quarantine_left: Option<Duration>,
    /// Partitions it failed since the start.
    pub failures: u64,
    /// Preloads it is still taking: until they finish it holds a reference
    /// to their parameters, so evicting them frees nothing yet.
    pub preparing: usize,
}

/// Pending and running jobs of one kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KindQueue {
    /// Kind.
    pub kind: ProofKind,
    /// Not started.
    pub pending: u32,
    /// Started, not final.
    pub in_progress: u32,
}

/// Engine-wide status.
#[derive(Clone, Debug)]
pub struct EngineStatus {
    /// Prover backends.
    pub devices: Vec<DeviceStatus>,
    /// Parameters known to the SRS manager.
    pub srs: Vec<SrsStatus>,
    /// Per-kind queues.
    pub queues: Vec<KindQueue>,
    /// Jobs completed since start.
    pub completed: u64,
    /// Jobs failed since start.
    pub failed: u64,
    /// Seconds since start.
    pub uptime: Duration,
    /// Memory budget and what is granted now.
    pub memory_budget: u64,
    /// Granted now (to partitions in flight).
    pub memory_used: u64,
    /// The compiled R1CS held (counted by the budget beside `memory_used`).
    pub compiled_r1cs: Vec<cuzk_core::CachedR1cs>,
    /// Partitions waiting for synthesis / for a prover.
    pub queued_partitions: (usize, usize),
    /// The synthesis workers' sequential slots: total, in use, waiting.
    pub sequential_slots: cuzk_core::cores::SlotsSnapshot,
}
