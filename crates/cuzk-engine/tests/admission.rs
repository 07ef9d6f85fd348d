//! Admission and liveness (issue 12, items 2, 3 and 7): status answers while
//! parameters load, requests that cannot fit the memory budget or a full
//! queue are refused at submission, errors do not echo unbounded input, and
//! a panicking plan source refuses its request without harming the engine.

use cuzk_core::{ParameterRecipe, PlanError, PlanSource, ProofPlan, ProofRequest, ProvingParameters};
use cuzk_engine::{Engine, EngineConfig, EngineError, JobStatus};
use cuzk_synthetic::SyntheticSpec;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

mod common;
use common::{spec, synthetic, wait, SIZE};

fn request(spec: &SyntheticSpec) -> ProofRequest {
    common::request_for(spec, None)
}

/// A gate a test opens when it is ready.
#[derive(Debug, Default)]
struct Gate {
    open: Mutex<bool>,
    changed: Condvar,
    waiting: Mutex<bool>,
    arrived: Condvar,
}

impl Gate {
    fn pass(&self) {
        *self.waiting.lock().unwrap() = true;
        self.arrived.notify_all();
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.changed.wait(open).unwrap();
        }
    }
    fn wait_for_arrival(&self) {
        let mut waiting = self.waiting.lock().unwrap();
        while !*waiting {
            waiting = self.arrived.wait(waiting).unwrap();
        }
    }
    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.changed.notify_all();
    }
}

/// The synthetic source, whose parameter loads wait at a gate (a load or
/// generation that takes as long as the test wants).
#[derive(Debug)]
struct SlowParameters {
    inner: Arc<dyn PlanSource>,
    gate: Arc<Gate>,
}

#[derive(Debug)]
struct GatedRecipe {
    inner: Box<dyn ParameterRecipe>,
    gate: Arc<Gate>,
}

impl ParameterRecipe for GatedRecipe {
    fn check_available(&self) -> Result<(), PlanError> {
        self.inner.check_available()
    }
    fn load(&self) -> Result<ProvingParameters, PlanError> {
        self.gate.pass();
        self.inner.load()
    }
}

impl PlanSource for SlowParameters {
    fn name(&self) -> &'static str {
        "slow"
    }
    fn plan(&self, request: &ProofRequest) -> Option<Result<Box<dyn ProofPlan>, PlanError>> {
        self.inner.plan(request)
    }
    fn parameters(&self, circuit_id: &str) -> Option<Result<Box<dyn ParameterRecipe>, PlanError>> {
        let gate = Arc::clone(&self.gate);
        self.inner
            .parameters(circuit_id)
            .map(|r| r.map(|inner| Box::new(GatedRecipe { inner, gate }) as Box<dyn ParameterRecipe>))
    }
}

/// Regression (issue 12.2): status took every SRS entry's lock, which a
/// first-use generation holds for its whole length, so GetStatus (and then
/// every submit, await and cancel) froze for the generation (52.5 s at
/// 2^16). Here the load is held open until status, a submission and a
/// cancel have all answered.
#[test]
fn status_submit_and_cancel_answer_while_parameters_load() {
    let dir = tempfile::tempdir().unwrap();
    let gate = Arc::new(Gate::default());
    let source = Arc::new(SlowParameters {
        inner: synthetic(dir.path()),
        gate: Arc::clone(&gate),
    });
    let engine = Engine::start(EngineConfig::default(), Vec::new(), vec![source]).unwrap();
    let s = spec(SIZE, 1, 1);
    let first = engine.submit(request(&s)).unwrap();
    gate.wait_for_arrival(); // the load is in progress, and stays so
    let status = engine.status();
    assert_eq!(status.srs.len(), 1);
    assert_eq!(
        status.srs[0].tier,
        cuzk_engine::Tier::Cold,
        "loading, not resident"
    );
    let second = engine.submit(request(&spec(SIZE, 1, 2))).unwrap();
    engine.cancel(&second.job_id).unwrap();
    assert_eq!(wait(&engine, &second.job_id).status, JobStatus::Cancelled);
    assert!(!engine.metrics_text().is_empty());
    gate.open();
    let result = wait(&engine, &first.job_id);
    assert_eq!(result.status, JobStatus::Completed, "{}", result.error);
}

/// Regression (issue 12.3): `{"constraints":134217728,"partitions":64}` was
/// accepted on a budget that cannot hold one of its partitions, then ran
/// alone while every later job waited. It is refused at submission, naming
/// the sizes, and the engine goes on.
#[test]
fn a_request_whose_partitions_exceed_the_budget_is_refused_at_submission() {
    let dir = tempfile::tempdir().unwrap();
    let config = EngineConfig {
        memory_budget: 64 << 20,
        ..EngineConfig::default()
    };
    let engine = Engine::start(config, Vec::new(), vec![synthetic(dir.path())]).unwrap();
    let err = engine.submit(request(&spec(1 << 27, 64, 1))).unwrap_err();
    match &err {
        EngineError::ResourceExhausted(m) => {
            assert!(m.contains("MiB") && m.contains("64 MiB"), "{m}");
        }
        other => panic!("expected RESOURCE_EXHAUSTED, got {other:?}"),
    }
    let s = spec(SIZE, 1, 3);
    let job = engine.submit(request(&s)).unwrap();
    assert_eq!(wait(&engine, &job.job_id).status, JobStatus::Completed);
}

#[test]
fn submissions_beyond_the_queue_bound_are_refused_until_jobs_finish() {
    let dir = tempfile::tempdir().unwrap();
    let gate = Arc::new(Gate::default());
    let source = Arc::new(SlowParameters {
        inner: synthetic(dir.path()),
        gate: Arc::clone(&gate),
    });
    let config = EngineConfig {
        max_queued_jobs: 2,
        ..EngineConfig::default()
    };
    let engine = Engine::start(config, Vec::new(), vec![source]).unwrap();
    let a = engine.submit(request(&spec(SIZE, 1, 1))).unwrap();
    let b = engine.submit(request(&spec(SIZE, 1, 2))).unwrap();
    match engine.submit(request(&spec(SIZE, 1, 3))).unwrap_err() {
        EngineError::ResourceExhausted(m) => assert!(m.contains("max_queued_jobs"), "{m}"),
        other => panic!("{other:?}"),
    }
    gate.open();
    assert_eq!(wait(&engine, &a.job_id).status, JobStatus::Completed);
    assert_eq!(wait(&engine, &b.job_id).status, JobStatus::Completed);
    let c = engine.submit(request(&spec(SIZE, 1, 3))).unwrap();
    assert_eq!(wait(&engine, &c.job_id).status, JobStatus::Completed);
}

/// Regression (issue 12.7): a 1 MB job id came back whole in NOT_FOUND.
#[test]
fn not_found_echoes_a_bounded_id() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::start(EngineConfig::default(), Vec::new(), vec![synthetic(dir.path())]).unwrap();
    let huge = "x".repeat(1 << 20);
    let err = engine.cancel(&huge).unwrap_err();
    assert!(matches!(err, EngineError::NotFound(_)));
    assert!(err.to_string().len() < 200, "{} bytes", err.to_string().len());
}

/// A plan source that panics while planning (third-party parsing).
#[derive(Debug)]
struct Panicking;

impl PlanSource for Panicking {
    fn name(&self) -> &'static str {
        "panicking"
    }
    fn plan(&self, _: &ProofRequest) -> Option<Result<Box<dyn ProofPlan>, PlanError>> {
        panic!("insertion index (is 9) should be <= len (is 3)")
    }
    fn parameters(&self, _: &str) -> Option<Result<Box<dyn ParameterRecipe>, PlanError>> {
        None
    }
}

#[test]
fn a_panic_while_planning_refuses_the_request_and_the_engine_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::start(
        EngineConfig::default(),
        Vec::new(),
        vec![synthetic(dir.path()), Arc::new(Panicking)],
    )
    .unwrap();
    let mut filecoin = request(&spec(SIZE, 1, 1));
    filecoin.registered_proof = 8;
    match engine.submit(filecoin).unwrap_err() {
        EngineError::InvalidArgument(m) => {
            assert!(m.contains("panicked") && m.contains("insertion index"), "{m}")
        }
        other => panic!("{other:?}"),
    }
    let job = engine.submit(request(&spec(SIZE, 1, 4))).unwrap();
    assert_eq!(wait(&engine, &job.job_id).status, JobStatus::Completed);
}

/// Issue 12.7: parameters of idle circuits are evicted by the default
/// policy (after `srs_idle_evict`), not kept for ever; parameters in use
/// are never evicted.
#[test]
fn idle_parameters_are_evicted_after_the_idle_time() {
    let dir = tempfile::tempdir().unwrap();
    let config = EngineConfig {
        srs_idle_evict: Some(Duration::from_millis(300)),
        ..EngineConfig::default()
    };
    let engine = Engine::start(config, Vec::new(), vec![synthetic(dir.path())]).unwrap();
    let job = engine.submit(request(&spec(SIZE, 1, 1))).unwrap();
    assert_eq!(wait(&engine, &job.job_id).status, JobStatus::Completed);
    assert_eq!(engine.status().srs[0].tier, cuzk_engine::Tier::Warm);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while engine.status().srs[0].tier != cuzk_engine::Tier::Cold {
        assert!(std::time::Instant::now() < deadline, "never evicted");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Loaded again on the next use.
    let job = engine.submit(request(&spec(SIZE, 1, 2))).unwrap();
    assert_eq!(wait(&engine, &job.job_id).status, JobStatus::Completed);
    assert_eq!(
        EngineConfig::default().srs_idle_evict,
        Some(Duration::from_secs(7200))
    );
}

/// A plan whose memory estimate is far too small.
#[derive(Debug)]
struct Underestimated(Box<dyn ProofPlan>);

impl ProofPlan for Underestimated {
    fn circuit_id(&self) -> String {
        self.0.circuit_id()
    }
    fn partitions(&self) -> usize {
        self.0.partitions()
    }
    fn partition_bytes(&self) -> u64 {
        1024
    }
    fn synthesize(&self, index: usize) -> Result<cuzk_core::ProvingAssignment, PlanError> {
        self.0.synthesize(index)
    }
    fn public_inputs(&self, index: usize) -> Vec<cuzk_core::Scalar> {
        self.0.public_inputs(index)
    }
}

#[derive(Debug)]
struct Underestimating(Arc<dyn PlanSource>);

impl PlanSource for Underestimating {
    fn name(&self) -> &'static str {
        "underestimating"
    }
    fn plan(&self, request: &ProofRequest) -> Option<Result<Box<dyn ProofPlan>, PlanError>> {
        self.0
            .plan(request)
            .map(|p| p.map(|p| Box::new(Underestimated(p)) as Box<dyn ProofPlan>))
    }
    fn parameters(&self, id: &str) -> Option<Result<Box<dyn ParameterRecipe>, PlanError>> {
        self.0.parameters(id)
    }
}

/// Issue 12.3: "a partition never exceeds its budgeted size". A partition
/// that holds more after synthesis than its plan asked the budget for fails
/// its job with the sizes, instead of overrunning the budget.
#[test]
fn a_partition_larger_than_its_budgeted_size_fails_its_job() {
    let dir = tempfile::tempdir().unwrap();
    let source = Arc::new(Underestimating(synthetic(dir.path())));
    let engine = Engine::start(EngineConfig::default(), Vec::new(), vec![source]).unwrap();
    let job = engine.submit(request(&spec(SIZE, 2, 1))).unwrap();
    let result = wait(&engine, &job.job_id);
    assert_eq!(result.status, JobStatus::Failed);
    assert!(
        result.error.contains("more than") && result.error.contains("budgeted"),
        "{}",
        result.error
    );
    // The other partition may still be finishing its synthesis; its permit
    // comes back when it sees the job failed.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while engine.status().memory_used != 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "a permit was never returned"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
