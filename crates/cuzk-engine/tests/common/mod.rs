//! Helpers shared by the engine tests: synthetic requests on the CPU
//! backend, and an independent check of the proofs they return.
#![allow(dead_code)]

use cuzk_core::{
    ParameterCache, PlanSource, Priority, Proof, ProofKind, ProofRequest, SyntheticCircuit, Verifier,
    PROOF_BYTES,
};
use cuzk_engine::Engine;
use cuzk_synthetic::{SyntheticPlans, SyntheticSpec, SYNTHETIC_REGISTERED_PROOF};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Constraints of the small test partitions.
pub const SIZE: usize = 1 << 9;

/// The synthetic plan source with its parameters in `dir`.
pub fn synthetic(dir: &Path) -> Arc<dyn PlanSource> {
    Arc::new(SyntheticPlans::new(ParameterCache::new(dir).unwrap()))
}

/// A synthetic spec with two public inputs.
pub fn spec(constraints: usize, partitions: usize, seed: u64) -> SyntheticSpec {
    SyntheticSpec {
        constraints,
        partitions,
        inputs: 2,
        seed,
        ..SyntheticSpec::default()
    }
}

/// The request for `spec`.
pub fn request_for(spec: &SyntheticSpec, priority: Option<Priority>) -> ProofRequest {
    ProofRequest {
        request_id: String::new(),
        kind: ProofKind::PorepSealCommit,
        registered_proof: SYNTHETIC_REGISTERED_PROOF,
        priority,
        vanilla_proof: spec.to_vanilla_proof(),
        vanilla_proofs: Vec::new(),
        sector: Default::default(),
    }
}

/// Checks a completed job's bytes with bellperson's verifier, rebuilding the
/// public inputs the way the synthetic plan defines them.
pub fn check_proof(dir: &Path, spec: &SyntheticSpec, bytes: &[u8]) {
    assert_eq!(bytes.len(), PROOF_BYTES * spec.partitions);
    let id = SyntheticCircuit::new(
        spec.constraints,
        vec![cuzk_core::Scalar::from(0u64); spec.inputs],
        0,
    )
    .unwrap()
    .circuit_id();
    let vk = cuzk_core::params::read_vk(
        &ParameterCache::new(dir)
            .unwrap()
            .params_path(&id)
            .with_extension("vk"),
    )
    .unwrap();
    let verifier = Verifier::new(&vk);
    for (index, chunk) in bytes.chunks(PROOF_BYTES).enumerate() {
        let proof = Proof::<cuzk_core::Bls12>::read(chunk).unwrap();
        let base = spec.seed.wrapping_mul(1000).wrapping_add(index as u64 * 7);
        let inputs: Vec<_> = (0..spec.inputs)
            .map(|i| cuzk_core::Scalar::from(base + i as u64))
            .collect();
        assert!(verifier.verify(&proof, &inputs).unwrap(), "partition {index}");
    }
}

/// Waits (up to ten minutes) for a job's final result.
pub fn wait(engine: &Engine, job: &str) -> cuzk_engine::JobResult {
    wait_within(engine, job, Duration::from_secs(600))
}

/// A job's final result, or `Timeout` after `limit`.
pub fn wait_within(engine: &Engine, job: &str, limit: Duration) -> cuzk_engine::JobResult {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(engine.wait(job, Some(limit)))
        .unwrap()
}

/// Generates the parameters of the synthetic circuit of `constraints`
/// constraints into `dir`, as a daemon would on first use, and returns
/// what the engine counts for them (the file's length), so a test can
/// size a budget around it.
pub fn pregenerate(dir: &std::path::Path, constraints: usize) -> u64 {
    let cache = cuzk_core::ParameterCache::new(dir).unwrap();
    let id = SyntheticCircuit::new(constraints, vec![cuzk_core::Scalar::from(0u64); 2], 0)
        .unwrap()
        .circuit_id();
    let recipe = cuzk_synthetic::parameters::recipe(&cache, &id).unwrap().unwrap();
    recipe.load().unwrap();
    recipe.memory_bytes()
}
