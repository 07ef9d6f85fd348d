//! Prover backends: where a partition's Groth16 work runs.
//!
//! A [`ProverBackend`] takes a [`ProverInput`] (the partition's data, its
//! parameters and where r, s come from) and returns a [`PendingProof`]
//! that [`crate::finish`] completes. A backend that cannot take a
//! partition (too small for it, does not fit, a device error before
//! anything was consumed) *declines* it and hands the input back
//! untouched, so a combinator can give it to another backend:
//!
//! - [`CpuBackend`]: blst on the host; accepts everything.
//! - [`CudaBackend`]: one per GPU (none are found in a build without the
//!   `cuda` feature: cuzk-sys's polyfill reports no devices).
//! - [`Fallback`]: a primary and a backend for what the primary declines.
//! - [`Dual`]: two backends on the same input with the same r, s, failing
//!   unless their proofs are byte-equal (tests and audits).

pub mod cpu;
mod cuda;
mod dual;
mod fallback;

pub use cpu::CpuBackend;
pub use cuda::{CudaBackend, GpuError, Tuning, GPU_MIN_DOMAIN};
pub use dual::Dual;
pub use fallback::Fallback;

use crate::groth16::{PendingProof, ProveError, Randomness};
use crate::params::ProvingParameters;
use crate::r1cs::{CompiledR1cs, Witness};
use crate::request::Priority;
use crate::ProvingAssignment;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a partition brings to the prover. Non-exhaustive: a backend
/// declines variants it cannot prove.
#[derive(Debug)]
#[non_exhaustive]
pub enum PartitionData {
    /// Synthesised on the host: a, b, c evaluated, plus the assignments.
    Evaluated(ProvingAssignment),
    /// Only the witness, with its circuit's compiled R1CS: the backend
    /// computes a, b, c (the CUDA backend on the device, where the R1CS is
    /// resident; otherwise on the host, see [`PartitionData::into_assignment`]).
    Witness(PartitionWitness),
}

/// A partition's witness and the compiled R1CS of its circuit.
#[derive(Debug, Clone)]
pub struct PartitionWitness {
    /// The circuit's matrices (shared by every partition of the circuit).
    pub r1cs: Arc<CompiledR1cs>,
    /// The partition's variable values.
    pub witness: Witness,
}

impl PartitionData {
    /// Constraints of the partition.
    pub fn num_constraints(&self) -> usize {
        match self {
            PartitionData::Evaluated(assignment) => assignment.num_constraints(),
            PartitionData::Witness(w) => w.r1cs.num_constraints(),
        }
    }

    /// Host bytes the partition holds (the compiled R1CS, shared and
    /// accounted for apart, not included).
    pub fn heap_bytes(&self) -> u64 {
        match self {
            PartitionData::Evaluated(assignment) => assignment.heap_bytes(),
            PartitionData::Witness(w) => w.witness.heap_bytes(),
        }
    }

    /// The evaluated assignment: as it is, or with a, b, c computed on the
    /// host from the witness (in parallel over rows), with the time that took.
    pub fn into_assignment(self) -> Result<(ProvingAssignment, Duration), ProveError> {
        match self {
            PartitionData::Evaluated(assignment) => Ok((assignment, Duration::ZERO)),
            PartitionData::Witness(PartitionWitness { r1cs, witness }) => {
                let started = Instant::now();
                let assignment = r1cs
                    .assign(witness)
                    .map_err(|e| ProveError::InvalidAssignment(e.to_string()))?;
                Ok((assignment, started.elapsed()))
            }
        }
    }
}

/// One partition for a backend.
#[derive(Debug)]
pub struct ProverInput {
    /// The partition's data.
    pub data: PartitionData,
    /// The parameters it is proved with.
    pub params: Arc<ProvingParameters>,
    /// Where r, s come from.
    pub randomness: Randomness,
    /// How urgent the partition is: where partitions wait for a device,
    /// the highest priority goes first.
    pub priority: Priority,
}

impl ProverInput {
    /// An evaluated assignment with its parameters.
    pub fn evaluated(
        assignment: ProvingAssignment,
        params: &Arc<ProvingParameters>,
        randomness: Randomness,
    ) -> Self {
        Self {
            data: PartitionData::Evaluated(assignment),
            params: Arc::clone(params),
            randomness,
            priority: Priority::Normal,
        }
    }

    /// The same input at `priority`.
    pub fn with_priority(self, priority: Priority) -> Self {
        Self { priority, ..self }
    }
}

/// Why a backend did not start a proof.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The backend will not take this partition; the input comes back
    /// untouched for another backend.
    #[error("{backend} declined the partition: {reason}")]
    Declined {
        /// The backend's name.
        backend: String,
        /// Why, for the log.
        reason: String,
        /// The untouched input.
        input: Box<ProverInput>,
    },
    /// The proof cannot be made (bad input, or a failure after the input
    /// was consumed); no other backend is tried.
    #[error(transparent)]
    Failed(#[from] ProveError),
}

/// What kind of hardware a backend proves on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    /// The host's cores.
    Cpu,
    /// A GPU.
    Gpu,
}

/// A backend as status reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendStatus {
    /// Name, e.g. "NVIDIA H200 (GPU 0)" or "CPU".
    pub name: String,
    /// Kind of hardware.
    pub kind: BackendKind,
    /// Device ordinal (CUDA ordinal for GPUs; 0 for the CPU).
    pub ordinal: u32,
    /// Device memory, when the backend has its own (0 for the CPU).
    pub memory_total_bytes: u64,
    /// Free device memory, when the backend has its own (0 for the CPU).
    pub memory_free_bytes: u64,
}

/// Where partitions are proved.
pub trait ProverBackend: Send + Sync + std::fmt::Debug {
    /// Name for logs and metrics.
    fn name(&self) -> String;
    /// Name, kind and memory now.
    fn status(&self) -> BackendStatus;
    /// Starts a partition's proof: everything but the B G2 join and the
    /// epilogue, which [`crate::finish`] runs (off the prover worker).
    fn prove_start(&self, input: ProverInput) -> Result<PendingProof, BackendError>;
    /// Whether witness-only partitions ([`PartitionData::Witness`]) are
    /// what this backend wants: it computes a, b, c where that is cheaper
    /// than the host (the GPU). Every backend accepts them; one that
    /// answers false computes a, b, c on the host, at once, so the engine
    /// synthesises in full for it.
    fn takes_witness(&self) -> bool {
        false
    }
    /// Makes a circuit ready before its first partition (a preload): its
    /// parameters resident where the backend keeps them and, for a backend
    /// that takes witnesses, its compiled R1CS beside them, so the first
    /// partition does not wait for either. Returns what was done (a line
    /// for the log), `None` when the backend keeps nothing of its own (the
    /// CPU). A failure costs nothing but the time: the first partition
    /// tries again, or is declined, as it would have been without it.
    fn prepare(
        &self,
        _params: &Arc<ProvingParameters>,
        _r1cs: Option<&Arc<CompiledR1cs>>,
    ) -> Result<Option<String>, ProveError> {
        Ok(None)
    }
}

/// `prove_start` then `finish` on `backend`, for callers that do not
/// pipeline; a declined partition is an error.
pub fn prove_with(
    backend: &dyn ProverBackend,
    input: ProverInput,
) -> Result<(bellperson::groth16::Proof<crate::Bls12>, crate::ProveTimings), ProveError> {
    match backend.prove_start(input) {
        Ok(pending) => crate::finish(pending),
        Err(BackendError::Failed(e)) => Err(e),
        Err(BackendError::Declined { backend, reason, .. }) => Err(ProveError::Backend {
            backend,
            message: format!("declined: {reason}"),
        }),
    }
}

/// Where the query sections live while a device proves with them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Residency {
    /// In device memory when they fit with a partition's working set, else
    /// streamed.
    #[default]
    Auto,
    /// Always in device memory (CPU fallback when they do not fit).
    Device,
    /// Always streamed from page-locked host memory.
    Host,
}

/// A residency name that is none of auto, device, host.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown SRS residency {0:?} (auto, device or host)")]
pub struct UnknownResidency(pub String);

impl std::str::FromStr for Residency {
    type Err = UnknownResidency;
    fn from_str(s: &str) -> Result<Self, UnknownResidency> {
        match s {
            "auto" => Ok(Residency::Auto),
            "device" => Ok(Residency::Device),
            "host" => Ok(Residency::Host),
            other => Err(UnknownResidency(other.to_string())),
        }
    }
}
