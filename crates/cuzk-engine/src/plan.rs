//! How a request becomes partitions: a [`ProofPlan`] per proof type.

use crate::request::{ProofKind, ProofRequest, SyntheticSpec, WitnessSource, SYNTHETIC_REGISTERED_PROOF};
use crate::EngineError;
use cuzk_core::shaped::ShapedCircuit;
use cuzk_core::{
    synthesize, Bls12, Proof, ProvingAssignment, ProvingParameters, Randomness, Scalar, SyntheticCircuit,
};
use group::prime::PrimeCurveAffine;
use rand::SeedableRng;
use std::sync::OnceLock;

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
        let plan = SyntheticPlan::from_request(request)?;
        return Ok(match plan.spec.witness {
            WitnessSource::Circuit => Box::new(plan),
            WitnessSource::Shaped => Box::new(ShapedPlan::new(plan.spec)?),
        });
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

/// Partitions of PoRep shape with generated witnesses (no circuit), proved
/// with a shaped parameter file (`cuzk-bench gen-srs`): the full-size GPU
/// path and pipeline, measurable without a 32 GiB sector or its setup.
///
/// Such proofs cannot pass a Groth16 verifier (the parameters come from no
/// setup), so [`ShapedPlan::verify`] checks only that every proof is made of
/// valid subgroup points. Their correctness is established elsewhere: the
/// blinding factors are fixed per partition so that `cuzk-bench batch
/// --supraseal` compares the bytes with supraseal-c2's for the same
/// witness, and `cuzk-bench gpu-check` compares the GPU prover with the CPU
/// prover and the verifier.
#[derive(Debug)]
pub struct ShapedPlan {
    spec: SyntheticSpec,
    /// Densities: drawn once (about a second at full size), shared by all
    /// partitions.
    circuit: OnceLock<ShapedCircuit>,
}

impl ShapedPlan {
    /// Checks `spec`'s bounds (those of synthetic requests).
    pub fn new(spec: SyntheticSpec) -> Result<Self, EngineError> {
        let spec = SyntheticPlan::new(spec)?.spec;
        Ok(Self {
            spec,
            circuit: OnceLock::new(),
        })
    }

    fn circuit(&self) -> &ShapedCircuit {
        self.circuit
            .get_or_init(|| ShapedCircuit::new(self.spec.constraints, self.spec.inputs, self.spec.shape_seed))
    }

    /// The witness seed of partition `index`.
    pub fn value_seed(&self, index: usize) -> u64 {
        self.spec.seed.wrapping_mul(1 << 20).wrapping_add(index as u64)
    }

    /// The fixed blinding factors of partition `index`.
    pub fn fixed_randomness(&self, index: usize) -> (Scalar, Scalar) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(self.value_seed(index));
        (
            <Scalar as ff::Field>::random(&mut rng),
            <Scalar as ff::Field>::random(&mut rng),
        )
    }
}

impl ProofPlan for ShapedPlan {
    fn circuit_id(&self) -> String {
        cuzk_core::shaped::shaped_circuit_id(self.spec.constraints, self.spec.inputs, self.spec.shape_seed)
    }

    fn partitions(&self) -> usize {
        self.spec.partitions
    }

    fn partition_bytes(&self) -> u64 {
        partition_bytes(self.spec.constraints, self.spec.constraints)
    }

    fn synthesize(&self, index: usize) -> Result<ProvingAssignment, String> {
        Ok(self.circuit().assignment(self.value_seed(index)))
    }

    fn public_inputs(&self, index: usize) -> Vec<Scalar> {
        self.circuit().assignment_inputs(self.value_seed(index))
    }

    fn randomness(&self, index: usize) -> Randomness {
        let (r, s) = self.fixed_randomness(index);
        Randomness::Fixed { r, s }
    }

    fn verify(&self, _params: &ProvingParameters, proofs: &[Proof<Bls12>]) -> Result<(), String> {
        if proofs.len() != self.spec.partitions {
            return Err(format!(
                "{} partition proofs for {} partitions",
                proofs.len(),
                self.spec.partitions
            ));
        }
        for (index, proof) in proofs.iter().enumerate() {
            let g1_ok =
                |p: &blstrs::G1Affine| !bool::from(p.is_identity()) && bool::from(p.is_torsion_free());
            let g2_ok = !bool::from(proof.b.is_identity()) && bool::from(proof.b.is_torsion_free());
            if !(g1_ok(&proof.a) && g2_ok && g1_ok(&proof.c)) {
                return Err(format!(
                    "partition {index}: shaped proof has a point at infinity or outside the subgroup"
                ));
            }
        }
        Ok(())
    }
}
