//! Proof verification with bellperson's verifier, an implementation
//! independent of our prover.

use bellperson::groth16::{prepare_verifying_key, verify_proof, PreparedVerifyingKey, Proof, VerifyingKey};
use blstrs::{Bls12, Scalar};

/// Why a proof could not be checked at all (bellperson's verifier error,
/// e.g. a wrong number of public inputs).
#[derive(Debug, thiserror::Error)]
#[error("cannot verify: {0}")]
pub struct VerifyError(#[from] bellperson::SynthesisError);

/// A verifying key prepared once for repeated verification.
pub struct Verifier {
    prepared: PreparedVerifyingKey<Bls12>,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier").finish_non_exhaustive()
    }
}

impl Verifier {
    /// Prepares `vk`.
    pub fn new(vk: &VerifyingKey<Bls12>) -> Self {
        Self {
            prepared: prepare_verifying_key(vk),
        }
    }

    /// Whether `proof` is valid for `public_inputs` (without the constant
    /// one); an error when it cannot even be checked (wrong input count).
    pub fn verify(&self, proof: &Proof<Bls12>, public_inputs: &[Scalar]) -> Result<bool, VerifyError> {
        Ok(verify_proof(&self.prepared, proof, public_inputs)?)
    }
}
