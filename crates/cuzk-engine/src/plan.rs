//! How a request becomes partitions: a [`ProofPlan`] per proof type.

use crate::request::{ProofKind, ProofRequest, SyntheticSpec, SYNTHETIC_REGISTERED_PROOF};
use crate::EngineError;
use cuzk_core::{synthesize, ProvingAssignment, Scalar, SyntheticCircuit};

pub use cuzk_core::ProofPlan;

/// Largest synthetic partition served (2^27, the size of a 32 GiB PoRep
/// partition's domain).
pub const MAX_SYNTHETIC_CONSTRAINTS: usize = 1 << 27;
/// Most partitions a synthetic request may ask for.
pub const MAX_SYNTHETIC_PARTITIONS: usize = 64;
/// Most public inputs of a synthetic partition.
pub const MAX_SYNTHETIC_INPUTS: usize = 1024;

pub use cuzk_core::plan::partition_bytes;

/// Builds the plan for `request`.
pub fn plan_for(request: &ProofRequest) -> Result<Box<dyn ProofPlan>, EngineError> {
    if request.registered_proof == SYNTHETIC_REGISTERED_PROOF {
        return Ok(Box::new(SyntheticPlan::from_request(request)?));
    }
    if request.vanilla_proof.is_empty() && request.vanilla_proofs.is_empty() {
        return Err(EngineError::InvalidArgument(format!(
            "{:?} request carries no vanilla proof (vanilla_proof and vanilla_proofs are empty)",
            request.kind
        )));
    }
    let sector = &request.sector;
    let filecoin = cuzk_filecoin::FilecoinRequest {
        kind: match request.kind {
            ProofKind::PorepSealCommit => cuzk_filecoin::Kind::Porep,
            ProofKind::SnapDealsUpdate => cuzk_filecoin::Kind::Snap,
            ProofKind::WindowPostPartition => cuzk_filecoin::Kind::Window,
            ProofKind::WinningPost => cuzk_filecoin::Kind::Winning,
        },
        registered_proof: request.registered_proof,
        sector_size: sector.sector_size,
        vanilla_proof: request.vanilla_proof.clone(),
        vanilla_proofs: request.vanilla_proofs.clone(),
        sector_number: sector.sector_number,
        miner_id: sector.miner_id,
        randomness: sector.randomness.clone(),
        partition_index: sector.partition_index,
        comm_r_old: sector.comm_r_old.clone(),
        comm_r_new: sector.comm_r_new.clone(),
        comm_d_new: sector.comm_d_new.clone(),
    };
    cuzk_filecoin::plan_for(&filecoin).map_err(|e| match e {
        cuzk_filecoin::FilecoinError::InvalidArgument(m) => EngineError::InvalidArgument(m),
        cuzk_filecoin::FilecoinError::Unsupported(m) => EngineError::Unsupported(m),
        cuzk_filecoin::FilecoinError::Internal(m) => EngineError::Internal(m),
    })
}

/// The synthetic PoRep-shaped circuit, partitioned.
#[derive(Debug)]
pub struct SyntheticPlan {
    spec: SyntheticSpec,
}

impl SyntheticPlan {
    /// Parses and checks the JSON spec in `vanilla_proof` (empty means all
    /// defaults).
    pub fn from_request(request: &ProofRequest) -> Result<Self, EngineError> {
        let spec: SyntheticSpec = if request.vanilla_proof.is_empty() {
            SyntheticSpec::default()
        } else {
            serde_json::from_slice(&request.vanilla_proof)
                .map_err(|e| EngineError::InvalidArgument(format!("synthetic spec in vanilla_proof: {e}")))?
        };
        Self::new(spec)
    }

    /// Checks `spec`'s bounds.
    pub fn new(spec: SyntheticSpec) -> Result<Self, EngineError> {
        let bad = |what: String| Err(EngineError::InvalidArgument(what));
        if spec.partitions == 0 || spec.partitions > MAX_SYNTHETIC_PARTITIONS {
            return bad(format!(
                "partitions must be 1..={MAX_SYNTHETIC_PARTITIONS}, got {}",
                spec.partitions
            ));
        }
        if spec.inputs > MAX_SYNTHETIC_INPUTS {
            return bad(format!(
                "inputs must be at most {MAX_SYNTHETIC_INPUTS}, got {}",
                spec.inputs
            ));
        }
        let min = SyntheticCircuit::min_constraints(spec.inputs);
        if spec.constraints < min || spec.constraints > MAX_SYNTHETIC_CONSTRAINTS {
            return bad(format!(
                "constraints must be {min}..={MAX_SYNTHETIC_CONSTRAINTS} for {} inputs, got {}",
                spec.inputs, spec.constraints
            ));
        }
        Ok(Self { spec })
    }

    /// Constraints of each partition.
    pub fn partition_constraints(&self) -> usize {
        self.spec.constraints
    }

    fn circuit(&self, index: usize) -> SyntheticCircuit {
        SyntheticCircuit::new(
            self.spec.constraints,
            self.public_inputs(index),
            self.spec.seed.wrapping_add(index as u64),
        )
        .expect("bounds checked in SyntheticPlan::new")
    }
}

impl ProofPlan for SyntheticPlan {
    fn circuit_id(&self) -> String {
        self.circuit(0).circuit_id()
    }

    fn partitions(&self) -> usize {
        self.spec.partitions
    }

    fn partition_bytes(&self) -> u64 {
        partition_bytes(self.spec.constraints, self.spec.constraints)
    }

    fn synthesize(&self, index: usize) -> Result<ProvingAssignment, String> {
        let circuit = self.circuit(index);
        synthesize(circuit.clone(), circuit.size_hint()).map_err(|e| e.to_string())
    }

    fn public_inputs(&self, index: usize) -> Vec<Scalar> {
        // Distinct per partition and per seed, so a proof cannot verify
        // against another partition's inputs.
        let base = self.spec.seed.wrapping_mul(1000).wrapping_add(index as u64 * 7);
        (0..self.spec.inputs)
            .map(|i| Scalar::from(base.wrapping_add(i as u64)))
            .collect()
    }
}
