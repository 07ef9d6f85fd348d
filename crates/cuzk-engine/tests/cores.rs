//! One budget of cores: synthesis runs on the threads of the process's
//! rayon pool (where the plans' parallel passes and the backends' CPU work
//! run too), so however many synthesis workers and partitions are in
//! flight, no more partitions compute at once than the pool has threads.

use cuzk_core::{ParameterRecipe, PlanError, PlanSource, ProofPlan, ProofRequest, ProvingAssignment, Scalar};
use cuzk_engine::{Engine, EngineConfig, JobStatus};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

mod common;
use common::{check_proof, request_for, spec, synthetic, SIZE};

/// The pool's threads in this test process (fewer than the workers).
const POOL_THREADS: usize = 2;

/// Synthesis calls running now and at most, and whether any ran off the pool.
#[derive(Debug, Default)]
struct Probe {
    running: AtomicUsize,
    most: AtomicUsize,
    off_pool: AtomicBool,
}

/// The synthetic plan, its synthesis watched by a [`Probe`].
#[derive(Debug)]
struct Watched {
    inner: Box<dyn ProofPlan>,
    probe: Arc<Probe>,
}

impl ProofPlan for Watched {
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
        if rayon::current_thread_index().is_none() {
            self.probe.off_pool.store(true, Ordering::SeqCst);
        }
        let now = self.probe.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.probe.most.fetch_max(now, Ordering::SeqCst);
        // Long enough for every worker to be inside synthesis at once if
        // nothing held them back.
        std::thread::sleep(Duration::from_millis(40));
        let result = self.inner.synthesize(index);
        self.probe.running.fetch_sub(1, Ordering::SeqCst);
        result
    }
    fn public_inputs(&self, index: usize) -> Vec<Scalar> {
        self.inner.public_inputs(index)
    }
}

#[derive(Debug)]
struct Source {
    inner: Arc<dyn PlanSource>,
    probe: Arc<Probe>,
}

impl PlanSource for Source {
    fn name(&self) -> &'static str {
        "watched"
    }
    fn plan(&self, request: &ProofRequest) -> Option<Result<Box<dyn ProofPlan>, PlanError>> {
        let probe = Arc::clone(&self.probe);
        Some(
            self.inner
                .plan(request)?
                .map(|inner| Box::new(Watched { inner, probe }) as Box<dyn ProofPlan>),
        )
    }
    fn parameters(&self, circuit_id: &str) -> Option<Result<Box<dyn ParameterRecipe>, PlanError>> {
        self.inner.parameters(circuit_id)
    }
}

#[test]
fn synthesis_workers_share_the_pool_threads_and_never_exceed_them() {
    // The only test in this binary: it sizes the process's pool.
    rayon::ThreadPoolBuilder::new()
        .num_threads(POOL_THREADS)
        .build_global()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let probe = Arc::new(Probe::default());
    let source = Source {
        inner: synthetic(dir.path()),
        probe: Arc::clone(&probe),
    };
    let config = EngineConfig {
        partition_workers: 8,
        max_prover_queue_depth: 16,
        ..EngineConfig::default()
    };
    let engine = Engine::start(config, Vec::new(), vec![Arc::new(source)]).unwrap();
    let specs: Vec<_> = (0..3).map(|seed| spec(SIZE, 6, 40 + seed)).collect();
    let jobs: Vec<_> = specs
        .iter()
        .map(|s| engine.submit(request_for(s, None)).unwrap().job_id)
        .collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for (id, s) in jobs.iter().zip(&specs) {
        let result = rt
            .block_on(engine.wait(id, Some(Duration::from_secs(300))))
            .unwrap();
        assert_eq!(result.status, JobStatus::Completed, "{}", result.error);
        check_proof(dir.path(), s, &result.proof);
    }
    assert!(
        !probe.off_pool.load(Ordering::SeqCst),
        "a partition was synthesised outside the pool"
    );
    let most = probe.most.load(Ordering::SeqCst);
    assert!(
        most <= POOL_THREADS,
        "{most} partitions synthesised at once with {POOL_THREADS} pool threads"
    );
    // The budget is used, not serialised: both threads synthesised at once.
    assert_eq!(most, POOL_THREADS, "the pool's threads were not used together");
    engine.shutdown(Duration::from_secs(5));
}
