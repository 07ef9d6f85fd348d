//! The synthetic and shaped plans.

use crate::spec::{SyntheticSpec, WitnessSource};
use cuzk_core::plan::partition_bytes;
use cuzk_core::shaped::ShapedCircuit;
use cuzk_core::{
    synthesize, Bls12, CompiledR1cs, PartitionData, PartitionWitness, PlanError, Proof, ProofPlan,
    ProofRequest, ProvingAssignment, ProvingParameters, R1csCache, Randomness, Scalar, SyntheticCircuit,
};
use group::prime::PrimeCurveAffine;
use rand::SeedableRng;
use std::sync::{Arc, OnceLock};

/// The plan of a synthetic request (registered proof
/// [`crate::SYNTHETIC_REGISTERED_PROOF`]), its compiled R1CS kept in `r1cs`.
pub fn plan_for(request: &ProofRequest, r1cs: &Arc<R1csCache>) -> Result<Box<dyn ProofPlan>, PlanError> {
    let spec = SyntheticSpec::from_vanilla_proof(&request.vanilla_proof)?;
    let r1cs = Arc::clone(r1cs);
    Ok(match spec.witness {
        WitnessSource::Circuit => Box::new(SyntheticPlan {
            r1cs,
            ..SyntheticPlan::new(spec)?
        }),
        WitnessSource::Shaped => Box::new(ShapedPlan {
            r1cs,
            ..ShapedPlan::new(spec)?
        }),
    })
}

/// The synthetic PoRep-shaped circuit, partitioned.
#[derive(Debug)]
pub struct SyntheticPlan {
    spec: SyntheticSpec,
    /// Where the circuit's compiled R1CS is kept.
    r1cs: Arc<R1csCache>,
}

impl SyntheticPlan {
    /// Checks `spec`'s bounds. The plan keeps its compiled R1CS in a cache
    /// of its own (a source's plans share the source's, [`plan_for`]).
    pub fn new(spec: SyntheticSpec) -> Result<Self, PlanError> {
        spec.check()?;
        Ok(Self {
            spec,
            r1cs: Arc::default(),
        })
    }

    /// The circuit's compiled R1CS (every partition of a circuit id has the
    /// same constraint system), recorded on first use.
    fn compiled_r1cs(&self) -> Result<Arc<CompiledR1cs>, PlanError> {
        let circuit = self.circuit(0);
        self.r1cs.get_or_record(&circuit.circuit_id(), || {
            CompiledR1cs::record(circuit).map_err(|e| PlanError::Synthesis(e.to_string()))
        })
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

    fn synthesize(&self, index: usize) -> Result<ProvingAssignment, PlanError> {
        let circuit = self.circuit(index);
        synthesize(circuit.clone(), circuit.size_hint()).map_err(|e| PlanError::Synthesis(e.to_string()))
    }

    /// One scalar per variable (about one per constraint), a quarter more
    /// for the vectors' slack.
    fn witness_bytes(&self) -> Option<u64> {
        Some(self.spec.constraints as u64 * 32 * 5 / 4)
    }

    fn synthesize_witness(&self, index: usize) -> Result<PartitionData, PlanError> {
        let r1cs = self.compiled_r1cs()?;
        let witness = r1cs
            .witness(self.circuit(index))
            .map_err(|e| PlanError::Synthesis(e.to_string()))?;
        Ok(PartitionData::Witness(PartitionWitness { r1cs, witness }))
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

/// Partitions of PoRep shape with generated witnesses and generated
/// constraints ([`ShapedCircuit::compiled_r1cs`]), proved with a shaped
/// parameter file (`cuzk-bench gen-srs`): the full-size GPU path and
/// pipeline, measurable without a 32 GiB sector or its setup. Like a real
/// circuit's, a partition is a witness the engine proves on the device
/// (its a, b, c computed there from the R1CS) or, on the host path, a, b, c
/// computed on the host from the same R1CS: the same bytes either way.
///
/// Such proofs cannot pass a Groth16 verifier (the parameters come from no
/// setup), so [`ShapedPlan::verify`] checks only that every proof is made of
/// valid subgroup points. Their correctness is established elsewhere: the
/// blinding factors are fixed per partition so that `cuzk-bench batch
/// --supraseal` compares the bytes with supraseal-c2's for the same
/// witness, and the GPU tests compare the GPU backend with the CPU backend
/// and the verifier.
#[derive(Debug)]
pub struct ShapedPlan {
    spec: SyntheticSpec,
    /// Densities: drawn once (about a second at full size), shared by all
    /// partitions.
    circuit: OnceLock<ShapedCircuit>,
    /// Where the circuit's compiled R1CS is kept.
    r1cs: Arc<R1csCache>,
}

impl ShapedPlan {
    /// Checks `spec`'s bounds (those of synthetic requests). The plan
    /// keeps its compiled R1CS in a cache of its own (a source's plans
    /// share the source's, [`plan_for`]).
    pub fn new(spec: SyntheticSpec) -> Result<Self, PlanError> {
        spec.check()?;
        Ok(Self {
            spec,
            circuit: OnceLock::new(),
            r1cs: Arc::default(),
        })
    }

    fn circuit(&self) -> &ShapedCircuit {
        self.circuit
            .get_or_init(|| ShapedCircuit::new(self.spec.constraints, self.spec.inputs, self.spec.shape_seed))
    }

    /// The constraints of every partition of its circuit id, generated on
    /// first use (a few seconds at 2^27 constraints).
    fn compiled_r1cs(&self) -> Result<Arc<CompiledR1cs>, PlanError> {
        self.r1cs.get_or_record(&self.circuit_id(), || {
            self.circuit()
                .compiled_r1cs()
                .map_err(|e| PlanError::Synthesis(e.to_string()))
        })
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

    /// a, b, c on the host from the R1CS (the witness path's values).
    fn synthesize(&self, index: usize) -> Result<ProvingAssignment, PlanError> {
        let witness = self.circuit().witness(self.value_seed(index));
        self.compiled_r1cs()?
            .assign(witness)
            .map_err(|e| PlanError::Synthesis(e.to_string()))
    }

    /// One scalar per variable, held exactly: a shaped circuit has one
    /// variable (the constant one, an input or an aux variable) a
    /// constraint. From the spec, so that planning does not draw the
    /// densities (a second at full size) on the submitting thread.
    fn witness_bytes(&self) -> Option<u64> {
        let variables = self.spec.constraints.max(self.spec.inputs + 2);
        Some(variables as u64 * 32)
    }

    fn synthesize_witness(&self, index: usize) -> Result<PartitionData, PlanError> {
        let r1cs = self.compiled_r1cs()?;
        let witness = self.circuit().witness(self.value_seed(index));
        Ok(PartitionData::Witness(PartitionWitness { r1cs, witness }))
    }

    fn public_inputs(&self, index: usize) -> Vec<Scalar> {
        self.circuit().assignment_inputs(self.value_seed(index))
    }

    fn randomness(&self, index: usize) -> Randomness {
        let (r, s) = self.fixed_randomness(index);
        Randomness::Fixed { r, s }
    }

    fn verify(&self, _params: &ProvingParameters, proofs: &[Proof<Bls12>]) -> Result<(), PlanError> {
        if proofs.len() != self.spec.partitions {
            return Err(PlanError::Verification(format!(
                "{} partition proofs for {} partitions",
                proofs.len(),
                self.spec.partitions
            )));
        }
        for (index, proof) in proofs.iter().enumerate() {
            let g1_ok =
                |p: &blstrs::G1Affine| !bool::from(p.is_identity()) && bool::from(p.is_torsion_free());
            let g2_ok = !bool::from(proof.b.is_identity()) && bool::from(proof.b.is_torsion_free());
            if !(g1_ok(&proof.a) && g2_ok && g1_ok(&proof.c)) {
                return Err(PlanError::Verification(format!(
                    "partition {index}: shaped proof has a point at infinity or outside the subgroup"
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The engine fails a partition that holds more than its plan budgeted:
    /// the estimate from the spec (whole scalars, what synthesis may hold)
    /// must cover what the witness holds, kept as bits.
    #[test]
    fn a_shaped_witness_holds_at_most_what_its_plan_budgets() {
        for (constraints, inputs) in [(3000, 4), (122, 60), (1 << 12, 2)] {
            let plan = ShapedPlan::new(SyntheticSpec {
                constraints,
                partitions: 1,
                inputs,
                seed: 3,
                witness: crate::spec::WitnessSource::Shaped,
                shape_seed: 1,
            })
            .unwrap();
            let PartitionData::Witness(data) = plan.synthesize_witness(0).unwrap() else {
                panic!("a shaped partition is a witness");
            };
            let held = data.witness.heap_bytes();
            let budgeted = plan.witness_bytes().unwrap();
            assert!(held <= budgeted, "{constraints}, {inputs}: {held} > {budgeted}");
        }
    }
}
