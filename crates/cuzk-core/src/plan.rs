//! How a proof request becomes partitions: one [`ProofPlan`] per request.
//! The engine schedules by it; proof types (the synthetic circuit, the
//! Filecoin proofs) implement it.

use crate::{Bls12, Proof, ProvingAssignment, ProvingParameters, Randomness, Scalar, Verifier};

/// Bytes one partition of `constraints` constraints and `aux` variables
/// holds while in flight: a/b/c padded to the domain, the assignments, and
/// the byte copies the MSMs read (plus a quarter for bookkeeping).
pub fn partition_bytes(constraints: usize, aux: usize) -> u64 {
    let domain = constraints.next_power_of_two() as u64;
    let scalar = 32u64;
    let abc = 3 * domain * scalar;
    let witness = aux as u64 * (scalar * 2 + 1);
    (abc + witness) * 5 / 4
}

/// Everything the pipeline needs to know about one proof.
pub trait ProofPlan: Send + Sync + std::fmt::Debug {
    /// Key of the parameters (SRS) the partitions are proved with: the file
    /// stem of `<param_cache>/<circuit_id>.params`.
    fn circuit_id(&self) -> String;
    /// Number of partitions, each a separate Groth16 proof.
    fn partitions(&self) -> usize;
    /// Upper estimate of the host memory one partition holds from the start
    /// of its synthesis to the end of `prove_start`.
    fn partition_bytes(&self) -> u64;
    /// Builds partition `index`'s proving assignment.
    fn synthesize(&self, index: usize) -> Result<ProvingAssignment, String>;
    /// Public inputs of partition `index`, for verification.
    fn public_inputs(&self, index: usize) -> Vec<Scalar>;

    /// The blinding factors r, s of partition `index`: fresh secure
    /// randomness for every real proof. Only benchmark plans fix them, so
    /// that another prover's output can be compared byte for byte.
    fn randomness(&self, _index: usize) -> Randomness {
        Randomness::Secure
    }

    /// Checks the whole proof before it is reported: by default every
    /// partition against its public inputs with bellperson's verifier.
    /// Proof types with their own verifier (filecoin-proofs') add it.
    fn verify(&self, params: &ProvingParameters, proofs: &[Proof<Bls12>]) -> Result<(), String> {
        let verifier = Verifier::new(&params.vk);
        for (index, proof) in proofs.iter().enumerate() {
            match verifier.verify(proof, &self.public_inputs(index)) {
                Ok(true) => {}
                Ok(false) => return Err(format!("partition {index} proof failed verification")),
                Err(e) => return Err(format!("partition {index} verification error: {e}")),
            }
        }
        Ok(())
    }
}
