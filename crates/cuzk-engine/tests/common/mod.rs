//! Helpers shared by the engine tests: synthetic requests on the CPU
//! backend, and an independent check of the proofs they return.
#![allow(dead_code)]

use cuzk_core::backend::{BackendKind, BackendStatus};
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

/// The parameter id of the synthetic circuit of `constraints` constraints
/// and two public inputs (the tests' spec).
pub fn circuit_id(constraints: usize) -> String {
    SyntheticCircuit::new(constraints, vec![cuzk_core::Scalar::from(0u64); 2], 0)
        .unwrap()
        .circuit_id()
}

/// `result` is a completed job's, and its proof verifies for `spec`.
pub fn assert_proved(dir: &Path, spec: &SyntheticSpec, result: &cuzk_engine::JobResult) {
    assert_eq!(
        result.status,
        cuzk_engine::JobStatus::Completed,
        "{}",
        result.error
    );
    check_proof(dir, spec, &result.proof);
}

/// Waits (up to ten minutes) for a job's final result.
pub fn wait(engine: &Engine, job: &str) -> cuzk_engine::JobResult {
    wait_within(engine, job, Duration::from_secs(600))
}

/// A job's final result, or `Timeout` after `limit`.
pub fn wait_within(engine: &Engine, job: &str, limit: Duration) -> cuzk_engine::JobResult {
    runtime().block_on(engine.wait(job, Some(limit))).unwrap()
}

/// Generates the parameters of the synthetic circuit of `constraints`
/// constraints into `dir`, as a daemon would on first use, and returns
/// what the engine counts for them (the file's length), so a test can
/// size a budget around it.
pub fn pregenerate(dir: &std::path::Path, constraints: usize) -> u64 {
    let cache = cuzk_core::ParameterCache::new(dir).unwrap();
    let id = circuit_id(constraints);
    let recipe = cuzk_synthetic::parameters::recipe(&cache, &id).unwrap().unwrap();
    recipe.load().unwrap();
    recipe.memory_bytes()
}

/// A current-thread runtime for the blocking calls of the engine's async
/// API.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Polls `done` every `poll` until it holds, failing with `what` once
/// `limit` has passed.
pub fn wait_until(limit: Duration, poll: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + limit;
    while !done() {
        assert!(std::time::Instant::now() < deadline, "{what}");
        std::thread::sleep(poll);
    }
}

/// What a fake device reports: a GPU of 1 GiB, half of it free.
pub fn gpu_status(name: String, ordinal: u32) -> BackendStatus {
    BackendStatus {
        name,
        kind: BackendKind::Gpu,
        ordinal,
        memory_total_bytes: 1 << 30,
        memory_free_bytes: 1 << 29,
    }
}

/// Writes the `ProofPlan` methods that a test's wrapping plan leaves as
/// they are, each handing the call to the plan it wraps (`self.$inner`);
/// the wrapper writes out the methods it changes. A method not listed
/// keeps the trait's default, as it would written out by hand.
#[allow(unused_macros)] // as dead_code above: not every test binary wraps one
macro_rules! forward_plan {
    ($inner:tt: $($method:ident),+ $(,)?) => {
        $(forward_plan!(@ $inner $method);)+
    };
    (@ $inner:tt circuit_id) => {
        fn circuit_id(&self) -> String {
            self.$inner.circuit_id()
        }
    };
    (@ $inner:tt partitions) => {
        fn partitions(&self) -> usize {
            self.$inner.partitions()
        }
    };
    (@ $inner:tt partition_bytes) => {
        fn partition_bytes(&self) -> u64 {
            self.$inner.partition_bytes()
        }
    };
    (@ $inner:tt synthesize) => {
        fn synthesize(&self, index: usize) -> Result<cuzk_core::ProvingAssignment, cuzk_core::PlanError> {
            self.$inner.synthesize(index)
        }
    };
    (@ $inner:tt public_inputs) => {
        fn public_inputs(&self, index: usize) -> Vec<cuzk_core::Scalar> {
            self.$inner.public_inputs(index)
        }
    };
}
#[allow(unused_imports)]
pub(crate) use forward_plan;

/// The same for a test's wrapping `PlanSource`: the listed methods go to
/// the source it wraps (`self.$inner`).
#[allow(unused_macros)] // as dead_code above: not every test binary wraps one
macro_rules! forward_source {
    ($inner:tt: $($method:ident),+ $(,)?) => {
        $(forward_source!(@ $inner $method);)+
    };
    (@ $inner:tt plan) => {
        fn plan(
            &self,
            request: &cuzk_core::ProofRequest,
        ) -> Option<Result<Box<dyn cuzk_core::ProofPlan>, cuzk_core::PlanError>> {
            self.$inner.plan(request)
        }
    };
    (@ $inner:tt parameters) => {
        fn parameters(
            &self,
            circuit_id: &str,
        ) -> Option<Result<Box<dyn cuzk_core::ParameterRecipe>, cuzk_core::PlanError>> {
            self.$inner.parameters(circuit_id)
        }
    };
    (@ $inner:tt r1cs_cache) => {
        fn r1cs_cache(&self) -> Option<std::sync::Arc<cuzk_core::R1csCache>> {
            self.$inner.r1cs_cache()
        }
    };
}
#[allow(unused_imports)]
pub(crate) use forward_source;
