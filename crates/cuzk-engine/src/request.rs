//! What a client asks for, in engine terms.

use serde::{Deserialize, Serialize};

/// Scheduling priority; higher runs first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Priority {
    /// Background work.
    Low = 1,
    /// PoRep and SnapDeals by default.
    Normal = 2,
    /// WindowPoSt by default.
    High = 3,
    /// WinningPoSt by default (30 s deadline).
    Critical = 4,
}

/// The proof types of the `cuzk.v1` API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProofKind {
    /// PoRep commit phase 2.
    PorepSealCommit,
    /// SnapDeals empty-sector update.
    SnapDealsUpdate,
    /// One WindowPoSt partition.
    WindowPostPartition,
    /// WinningPoSt.
    WinningPost,
}

impl ProofKind {
    /// Priority when the request leaves it unspecified.
    pub fn default_priority(self) -> Priority {
        match self {
            ProofKind::WinningPost => Priority::Critical,
            ProofKind::WindowPostPartition => Priority::High,
            ProofKind::PorepSealCommit | ProofKind::SnapDealsUpdate => Priority::Normal,
        }
    }

    /// Stable lower-case name for logs and metrics.
    pub fn name(self) -> &'static str {
        match self {
            ProofKind::PorepSealCommit => "porep",
            ProofKind::SnapDealsUpdate => "snap",
            ProofKind::WindowPostPartition => "wpost",
            ProofKind::WinningPost => "winning",
        }
    }

    /// All kinds, for per-kind reporting.
    pub const ALL: [ProofKind; 4] = [
        ProofKind::PorepSealCommit,
        ProofKind::SnapDealsUpdate,
        ProofKind::WindowPostPartition,
        ProofKind::WinningPost,
    ];
}

/// `registered_proof` value reserved for cuzk's synthetic circuit. It lies
/// far outside the Go ABI's RegisteredSealProof / RegisteredPoStProof values.
pub const SYNTHETIC_REGISTERED_PROOF: u64 = 9000;

/// A request as the engine receives it (the gRPC layer maps onto this).
#[derive(Clone, Debug)]
pub struct ProofRequest {
    /// Idempotency key; empty means none.
    pub request_id: String,
    /// Proof type.
    pub kind: ProofKind,
    /// Go ABI registered proof, or [`SYNTHETIC_REGISTERED_PROOF`].
    pub registered_proof: u64,
    /// Explicit priority, or the kind's default.
    pub priority: Option<Priority>,
    /// PoRep C1 output; for synthetic requests a JSON [`SyntheticSpec`].
    pub vanilla_proof: Vec<u8>,
    /// PoSt / SnapDeals vanilla proofs.
    pub vanilla_proofs: Vec<Vec<u8>>,
    /// The sector fields of Filecoin requests.
    pub sector: SectorFields,
}

/// The request fields only Filecoin proofs use (`cuzk.v1` fields 3, 20-23,
/// 30-32).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SectorFields {
    /// Sector size in bytes (0 = take it from the registered proof).
    pub sector_size: u64,
    /// Sector number (PoRep).
    pub sector_number: u64,
    /// Miner actor id.
    pub miner_id: u64,
    /// PoSt randomness (32 bytes).
    pub randomness: Vec<u8>,
    /// WindowPoSt partition index.
    pub partition_index: u32,
    /// SnapDeals: old replica commitment (32 bytes).
    pub comm_r_old: Vec<u8>,
    /// SnapDeals: new replica commitment.
    pub comm_r_new: Vec<u8>,
    /// SnapDeals: new data commitment.
    pub comm_d_new: Vec<u8>,
}

/// Shape of a synthetic request, from the `vanilla_proof` field as JSON,
/// e.g. `{"constraints": 65536, "partitions": 2}`. Every field is optional.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct SyntheticSpec {
    /// Constraints per partition (R1CS total, as `SyntheticCircuit` counts).
    pub constraints: usize,
    /// Partitions in the proof.
    pub partitions: usize,
    /// Public inputs per partition.
    pub inputs: usize,
    /// Witness seed; partition p uses `seed + p` (shaped witnesses:
    /// `seed * 2^20 + p`, see `ShapedPlan::value_seed`).
    pub seed: u64,
    /// Where the witness comes from.
    pub witness: WitnessSource,
    /// Shaped witnesses: seed of the A/B densities (the "circuit"), which
    /// the parameter file `shaped-v1-n<constraints>-i<inputs>-s<shape_seed>`
    /// was made for.
    pub shape_seed: u64,
}

/// How a synthetic request's partitions get their witness.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum WitnessSource {
    /// Synthesised from cuzk's synthetic circuit (proofs verify).
    #[default]
    Circuit,
    /// Generated directly in the shape of a PoRep partition, without a
    /// circuit (`cuzk_core::shaped`), to measure the proving pipeline at full
    /// size. The proofs cannot verify: no setup stands behind the parameters.
    Shaped,
}

impl SyntheticSpec {
    /// The JSON a client puts in `vanilla_proof` for this spec.
    pub fn to_vanilla_proof(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a plain struct serialises")
    }
}

impl Default for SyntheticSpec {
    fn default() -> Self {
        Self {
            constraints: 1 << 16,
            partitions: 1,
            inputs: 2,
            seed: 1,
            witness: WitnessSource::Circuit,
            shape_seed: 0,
        }
    }
}
