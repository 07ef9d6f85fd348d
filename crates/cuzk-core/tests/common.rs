//! Helpers shared by the integration tests.
#![allow(dead_code)]

use cuzk_core::{ProvingParameters, Scalar, SyntheticCircuit};
use rand::SeedableRng;
use std::path::PathBuf;
use std::sync::Arc;

/// A synthetic circuit and parameters generated for it by bellperson.
pub fn circuit_and_params(
    constraints: usize,
    inputs: Vec<Scalar>,
    witness_seed: u64,
) -> (SyntheticCircuit, Arc<ProvingParameters>) {
    let circuit = SyntheticCircuit::new(constraints, inputs, witness_seed).unwrap();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(constraints as u64);
    let generated =
        bellperson::groth16::generate_random_parameters::<blstrs::Bls12, _, _>(circuit.clone(), &mut rng)
            .unwrap();
    let params = ProvingParameters::from_bellperson(generated, PathBuf::from("<generated>"));
    (circuit, Arc::new(params))
}
