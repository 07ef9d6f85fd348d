//! Synthesis beside the rayon pool: a plan whose synthesis waits on a
//! lock that another synthesis holds while it runs a parallel pass (the
//! R1CS cache's one-time recording, a plan's shared witness) must not
//! deadlock the engine. It did when whole syntheses ran on pool threads: a
//! pool thread waiting inside the parallel pass stole the other queued
//! synthesis, which then waited on the lock held lower on its own stack.

use cuzk_core::{ParameterRecipe, PlanError, PlanSource, ProofPlan, ProofRequest, ProvingAssignment, Scalar};
use cuzk_engine::{Engine, EngineConfig, JobStatus};
use rayon::prelude::*;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

mod common;
use common::{check_proof, request_for, spec, synthetic, SIZE};

/// The synthetic plan, its synthesis first waiting for a value computed
/// once per source by a parallel pass (as a shared witness or a cache is).
#[derive(Debug)]
struct Shared {
    inner: Box<dyn ProofPlan>,
    once: Arc<OnceLock<u64>>,
}

impl ProofPlan for Shared {
    fn circuit_id(&self) -> String {
        self.inner.circuit_id()
    }
    fn partitions(&self) -> usize {
        self.inner.partitions()
    }
    fn partition_bytes(&self) -> u64 {
        self.inner.partition_bytes()
    }
    fn synthesize(&self, index: usize) -> Result<ProvingAssignment, PlanError> {
        let value = *self.once.get_or_init(|| {
            (0..1u64 << 22)
                .into_par_iter()
                .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 7)
                .reduce(|| 0, u64::wrapping_add)
        });
        assert_ne!(value, 0);
        self.inner.synthesize(index)
    }
    fn public_inputs(&self, index: usize) -> Vec<Scalar> {
        self.inner.public_inputs(index)
    }
}

#[derive(Debug)]
struct Source {
    inner: Arc<dyn PlanSource>,
    once: Arc<OnceLock<u64>>,
}

impl PlanSource for Source {
    fn name(&self) -> &'static str {
        "shared"
    }
    fn plan(&self, request: &ProofRequest) -> Option<Result<Box<dyn ProofPlan>, PlanError>> {
        let once = Arc::clone(&self.once);
        Some(
            self.inner
                .plan(request)?
                .map(|inner| Box::new(Shared { inner, once }) as Box<dyn ProofPlan>),
        )
    }
    fn parameters(&self, circuit_id: &str) -> Option<Result<Box<dyn ParameterRecipe>, PlanError>> {
        self.inner.parameters(circuit_id)
    }
}

#[test]
fn syntheses_waiting_on_a_lock_held_by_a_parallel_pass_all_finish() {
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // Rounds with a fresh lock each: the race is in who starts first.
    for round in 0..5u64 {
        let source = Source {
            inner: synthetic(dir.path()),
            once: Arc::new(OnceLock::new()),
        };
        let config = EngineConfig {
            partition_workers: 4,
            ..EngineConfig::default()
        };
        let engine = Engine::start(config, Vec::new(), vec![Arc::new(source)]).unwrap();
        let s = spec(SIZE, 6, 70 + round);
        let job = engine.submit(request_for(&s, None)).unwrap().job_id;
        let result = rt
            .block_on(engine.wait(&job, Some(Duration::from_secs(120))))
            .unwrap();
        if result.status != JobStatus::Completed {
            // Deadlocked workers would never join: leave them, fail now.
            std::mem::forget(engine);
            panic!("round {round}: {:?} after 120 s: {}", result.status, result.error);
        }
        check_proof(dir.path(), &s, &result.proof);
        engine.shutdown(Duration::from_secs(5));
    }
}
