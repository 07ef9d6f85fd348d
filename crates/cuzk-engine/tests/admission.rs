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
use common::{
    circuit_id, forward_plan, forward_source, pregenerate, spec, synthetic, wait, wait_until, wait_within,
    SIZE,
};

/// How long a test waits for the engine to reach a state, and how often
/// it looks.
const POLL_LIMIT: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(20);

fn request(spec: &SyntheticSpec) -> ProofRequest {
    common::request_for(spec, None)
}

/// A gate a test opens when it is ready.
#[derive(Debug, Default)]
struct Gate {
    /// Loads that reached the gate.
    passes: std::sync::atomic::AtomicUsize,
    open: Mutex<bool>,
    changed: Condvar,
    waiting: Mutex<bool>,
    arrived: Condvar,
}

impl Gate {
    fn pass(&self) {
        self.passes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
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

/// The synthetic source in `dir` behind a closed gate, and the gate.
fn slow_parameters(dir: &std::path::Path) -> (Arc<SlowParameters>, Arc<Gate>) {
    let gate = Arc::new(Gate::default());
    let source = Arc::new(SlowParameters {
        inner: synthetic(dir),
        gate: Arc::clone(&gate),
    });
    (source, gate)
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
    fn memory_bytes(&self) -> u64 {
        self.inner.memory_bytes()
    }
}

impl PlanSource for SlowParameters {
    fn name(&self) -> &'static str {
        "slow"
    }
    forward_source!(inner: plan, r1cs_cache);
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
    let (source, gate) = slow_parameters(dir.path());
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

/// Issue 36: the configured preloads run beside the engine, not before it
/// serves. Before, `Engine::start` (and so the daemon's listener) waited
/// for every preload: a status call went unanswered for the length of a
/// 45 GiB read, and a request could not overlap its witness with it. Now
/// the engine starts while the preload's parameters load, answers status,
/// and a job for that circuit waits for the same load (one load, not two)
/// and is proved.
#[test]
fn the_engine_serves_while_its_preload_loads() {
    let dir = tempfile::tempdir().unwrap();
    let (source, gate) = slow_parameters(dir.path());
    let s = spec(SIZE, 1, 3);
    let circuit_id = source.plan(&request(&s)).unwrap().unwrap().circuit_id();
    let config = EngineConfig {
        preload: vec![circuit_id],
        ..EngineConfig::default()
    };
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let starting_source: Arc<dyn PlanSource> = source;
    std::thread::spawn(move || {
        let _ = started_tx.send(Engine::start(config, Vec::new(), vec![starting_source]));
    });
    let engine = started_rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the engine did not start while its preload waited")
        .unwrap();
    gate.wait_for_arrival(); // the preload's load is in progress
    let status = engine.status();
    assert_eq!(status.srs.len(), 1);
    assert_eq!(status.srs[0].tier, cuzk_engine::Tier::Cold, "loading");
    let job = engine.submit(request(&s)).unwrap();
    gate.open();
    let result = wait(&engine, &job.job_id);
    assert_eq!(result.status, JobStatus::Completed, "{}", result.error);
    assert_eq!(
        gate.passes.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "the job loaded the parameters again"
    );
}

/// Partitions synthesised so far (the synthesis phase's count).
fn synthesised(engine: &Engine) -> u64 {
    let text = engine.metrics_text();
    text.lines()
        .find(|l| l.starts_with("cuzk_partition_phase_seconds_count{phase=\"synthesis\"}"))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0)
}

/// Issue 36: a job's first partition is synthesised while its parameters
/// load (their memory reserved), not after: a circuit's first witness
/// overlaps the load. One only: the others wait for the parameters, so
/// the synthesis workers stay free for jobs whose parameters are resident.
#[test]
fn a_jobs_first_partition_is_synthesised_while_its_parameters_load() {
    let dir = tempfile::tempdir().unwrap();
    let (source, gate) = slow_parameters(dir.path());
    let _release = OpenOnDrop(Arc::clone(&gate));
    let config = EngineConfig {
        partition_workers: 3,
        ..EngineConfig::default()
    };
    let engine = Engine::start(config, Vec::new(), vec![source]).unwrap();
    let job = engine.submit(request(&spec(SIZE, 3, 1))).unwrap();
    gate.wait_for_arrival(); // the load runs, held at the gate
    wait_until(
        Duration::from_secs(60),
        POLL,
        "no partition was synthesised while the parameters loaded",
        || synthesised(&engine) >= 1,
    );
    // Three workers are free, and the job has two more partitions.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        synthesised(&engine),
        1,
        "more than one partition ahead of the parameters"
    );
    gate.open();
    let result = wait(&engine, &job.job_id);
    assert_eq!(result.status, JobStatus::Completed, "{}", result.error);
    assert_eq!(synthesised(&engine), 3);
    assert_eq!(gate.passes.load(std::sync::atomic::Ordering::SeqCst), 1);
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
    let (source, gate) = slow_parameters(dir.path());
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
    wait_until(
        Duration::from_secs(30),
        Duration::from_millis(50),
        "never evicted",
        || engine.status().srs[0].tier == cuzk_engine::Tier::Cold,
    );
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
    forward_plan!(0: circuit_id, partitions, synthesize, public_inputs);
    fn partition_bytes(&self) -> u64 {
        1024
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
    forward_source!(0: parameters, r1cs_cache);
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
    wait_until(POLL_LIMIT, POLL, "a permit was never returned", || {
        engine.status().memory_used == 0
    });
}

/// Regression (issue 34.1): `{"constraints":67108864,"partitions":1}` and
/// PreloadSRS of `synthetic-v1-n134217728-i2` were accepted and started a
/// parameter generation that grew the daemon until the host's memory ran
/// out. Both are refused at once, naming the sizes, and nothing is
/// generated.
#[test]
fn parameters_that_cannot_fit_are_refused_at_submission_and_preload() {
    let dir = tempfile::tempdir().unwrap();
    // The budget of a large host (nothing is allocated): a partition of the
    // request fits it, its parameters' generation does not.
    let config = EngineConfig {
        memory_budget: 64 << 30,
        ..EngineConfig::default()
    };
    let engine = Engine::start(config, Vec::new(), vec![synthetic(dir.path())]).unwrap();
    let started = std::time::Instant::now();
    match engine.submit(request(&spec(1 << 26, 1, 1))).unwrap_err() {
        EngineError::ResourceExhausted(m) => {
            assert!(m.contains("parameters") && m.contains("MiB"), "{m}")
        }
        other => panic!("expected RESOURCE_EXHAUSTED, got {other:?}"),
    }
    match engine.preload_srs("synthetic-v1-n134217728-i2").unwrap_err() {
        EngineError::ResourceExhausted(m) => {
            assert!(
                m.contains("synthetic-v1-n134217728-i2") && m.contains("MiB"),
                "{m}"
            )
        }
        other => panic!("expected RESOURCE_EXHAUSTED, got {other:?}"),
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "refused only after working"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "something was generated"
    );
    assert!(engine.status().srs.is_empty(), "a refused id left an entry");
    let job = engine.submit(request(&spec(SIZE, 1, 2))).unwrap();
    assert_eq!(wait(&engine, &job.job_id).status, JobStatus::Completed);
}

/// Issue 34.1, "plus what is already resident": parameters that fit alone
/// but not beside those being loaded are refused, and accepted once the
/// others are idle (and can give way).
#[test]
fn parameters_must_fit_beside_those_in_use_or_loading() {
    let dir = tempfile::tempdir().unwrap();
    let first = pregenerate(dir.path(), SIZE);
    let second = pregenerate(dir.path(), SIZE - 1);
    let (source, gate) = slow_parameters(dir.path());
    let config = EngineConfig {
        srs_memory_limit: first.max(second) * 3 / 2,
        ..EngineConfig::default()
    };
    let engine = Engine::start(config, Vec::new(), vec![source]).unwrap();
    let loading = engine.submit(request(&spec(SIZE, 1, 1))).unwrap();
    gate.wait_for_arrival(); // the first circuit's load holds its bytes
    match engine.submit(request(&spec(SIZE - 1, 1, 2))).unwrap_err() {
        EngineError::ResourceExhausted(m) => assert!(m.contains("in use or loading"), "{m}"),
        other => panic!("expected RESOURCE_EXHAUSTED, got {other:?}"),
    }
    assert!(matches!(
        engine.preload_srs(&circuit_id(SIZE - 1)).unwrap_err(),
        EngineError::ResourceExhausted(_)
    ));
    gate.open();
    assert_eq!(wait(&engine, &loading.job_id).status, JobStatus::Completed);
    // Idle now: the first circuit's parameters give way to the second's.
    let job = engine.submit(request(&spec(SIZE - 1, 1, 3))).unwrap();
    assert_eq!(wait(&engine, &job.job_id).status, JobStatus::Completed);
    let resident: u64 = engine
        .status()
        .srs
        .iter()
        .filter(|s| s.tier != cuzk_engine::Tier::Cold)
        .map(|s| s.size_bytes)
        .sum();
    assert!(resident <= first.max(second) * 3 / 2, "{resident}");
}

/// Opens its gate when dropped (also while a failed test unwinds).
struct OpenOnDrop(Arc<Gate>);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.open();
    }
}

/// A plan source whose loads of one circuit id wait at a gate.
#[derive(Debug)]
struct SlowFor {
    inner: Arc<dyn PlanSource>,
    gate: Arc<Gate>,
    circuit_id: String,
}

impl PlanSource for SlowFor {
    fn name(&self) -> &'static str {
        "slow-for-one"
    }
    forward_source!(inner: plan, r1cs_cache);
    fn parameters(&self, circuit_id: &str) -> Option<Result<Box<dyn ParameterRecipe>, PlanError>> {
        let inner = self.inner.parameters(circuit_id)?;
        if circuit_id != self.circuit_id {
            return Some(inner);
        }
        let gate = Arc::clone(&self.gate);
        Some(inner.map(|inner| Box::new(GatedRecipe { inner, gate }) as Box<dyn ParameterRecipe>))
    }
}

/// Regression (issue 34.2): a load ran on the synthesis worker that picked
/// the job's first partition, so a long generation held a worker (with two
/// of them, two generations stopped all synthesis) and a CRITICAL job whose
/// parameters were resident waited behind it (AwaitProof TIMEOUT after
/// 60 s). With one synthesis worker and a load held open for the whole
/// test, a job whose parameters are resident still completes.
#[test]
fn a_load_holds_no_synthesis_worker_and_delays_no_job_with_resident_parameters() {
    let dir = tempfile::tempdir().unwrap();
    let slow_id = circuit_id(SIZE);
    let gate = Arc::new(Gate::default());
    let source = Arc::new(SlowFor {
        inner: synthetic(dir.path()),
        gate: Arc::clone(&gate),
        circuit_id: slow_id,
    });
    let config = EngineConfig {
        partition_workers: 1,
        ..EngineConfig::default()
    };
    // Should the test fail, the load is let go, so the engine's shutdown
    // (which joins its threads) ends and the failure is reported.
    let _release = OpenOnDrop(Arc::clone(&gate));
    let engine = Engine::start(config, Vec::new(), vec![source]).unwrap();
    pregenerate(dir.path(), SIZE - 1);
    engine.preload_srs(&circuit_id(SIZE - 1)).unwrap();
    let blocked = engine.submit(request(&spec(SIZE, 2, 1))).unwrap();
    gate.wait_for_arrival();
    let mut urgent = request(&spec(SIZE - 1, 1, 2));
    urgent.priority = Some(cuzk_core::Priority::Critical);
    let urgent = engine.submit(urgent).unwrap();
    let result = wait_within(&engine, &urgent.job_id, Duration::from_secs(60));
    assert_eq!(result.status, JobStatus::Completed, "{}", result.error);
    // A second job of the loading circuit shares its load; both finish
    // once it is done.
    let sharing = engine.submit(request(&spec(SIZE, 1, 3))).unwrap();
    gate.open();
    assert_eq!(wait(&engine, &blocked.job_id).status, JobStatus::Completed);
    assert_eq!(wait(&engine, &sharing.job_id).status, JobStatus::Completed);
}

/// A job cancelled while its parameters wait for memory or load does not
/// stay behind: its partitions leave the queue and its load's promise of
/// memory is withdrawn.
#[test]
fn a_job_cancelled_while_its_parameters_load_ends_and_frees_its_promise() {
    let dir = tempfile::tempdir().unwrap();
    let (source, gate) = slow_parameters(dir.path());
    let engine = Engine::start(EngineConfig::default(), Vec::new(), vec![source]).unwrap();
    let job = engine.submit(request(&spec(SIZE, 2, 1))).unwrap();
    gate.wait_for_arrival();
    engine.cancel(&job.job_id).unwrap();
    assert_eq!(wait(&engine, &job.job_id).status, JobStatus::Cancelled);
    gate.open();
    wait_until(POLL_LIMIT, POLL, "partitions left queued", || {
        engine.status().queued_partitions.0 == 0
    });
    let next = engine.submit(request(&spec(SIZE, 1, 2))).unwrap();
    assert_eq!(wait(&engine, &next.job_id).status, JobStatus::Completed);
}

/// A plan whose partition 0 waits at a gate before its synthesis (the
/// CPU backend's partitions are synthesised in full).
#[derive(Debug)]
struct GatedFirst {
    inner: Box<dyn ProofPlan>,
    gate: Arc<Gate>,
}

impl ProofPlan for GatedFirst {
    forward_plan!(inner: circuit_id, partitions, partition_bytes, public_inputs);
    fn synthesize(&self, index: usize) -> Result<cuzk_core::ProvingAssignment, PlanError> {
        if index == 0 {
            self.gate.pass();
        }
        self.inner.synthesize(index)
    }
}

/// A source that keeps `held` bytes between partitions, as the Filecoin
/// source keeps spare witness vectors, and records each release; its
/// plans' partition 0 waits at `gate`.
#[derive(Debug)]
struct Keeping {
    inner: Arc<dyn PlanSource>,
    gate: Arc<Gate>,
    held: std::sync::atomic::AtomicU64,
    releases: Mutex<Vec<Duration>>,
}

impl PlanSource for Keeping {
    fn name(&self) -> &'static str {
        "keeping"
    }
    fn plan(&self, request: &ProofRequest) -> Option<Result<Box<dyn ProofPlan>, PlanError>> {
        let gate = Arc::clone(&self.gate);
        self.inner
            .plan(request)
            .map(|plan| plan.map(|inner| Box::new(GatedFirst { inner, gate }) as Box<dyn ProofPlan>))
    }
    forward_source!(inner: parameters, r1cs_cache);
    fn held_bytes(&self) -> u64 {
        self.held.load(std::sync::atomic::Ordering::SeqCst)
    }
    fn release(&self, idle: Duration) -> u64 {
        self.releases.lock().unwrap().push(idle);
        self.held.swap(0, std::sync::atomic::Ordering::SeqCst)
    }
}

fn keeping(dir: &std::path::Path, held: u64) -> Arc<Keeping> {
    Arc::new(Keeping {
        inner: synthetic(dir),
        gate: Arc::new(Gate::default()),
        held: held.into(),
        releases: Mutex::default(),
    })
}

/// Issue 35: what a source keeps between partitions (spare witness
/// vectors) is counted by the memory budget and exported, and a partition
/// waiting for memory has it freed: with partition 0 held at its
/// synthesis and the source keeping more than the budget, partition 1 is
/// granted only once the source released everything.
#[test]
fn a_sources_spare_bytes_count_against_the_budget_and_give_way_to_a_waiting_partition() {
    let dir = tempfile::tempdir().unwrap();
    let held = 1u64 << 40;
    let source = keeping(dir.path(), held);
    let _release = OpenOnDrop(Arc::clone(&source.gate));
    let config = EngineConfig {
        memory_budget: 16 << 30,
        partition_workers: 2,
        ..EngineConfig::default()
    };
    let engine = Engine::start(config, Vec::new(), vec![source.clone() as Arc<dyn PlanSource>]).unwrap();
    assert!(
        engine
            .metrics_text()
            .contains(&format!("cuzk_spare_witness_bytes {held}")),
        "{}",
        engine.metrics_text()
    );
    let job = engine.submit(request(&spec(SIZE, 2, 1))).unwrap();
    source.gate.wait_for_arrival();
    wait_until(
        Duration::from_secs(60),
        POLL,
        "partition 1 never asked the source to free its spares",
        || source.releases.lock().unwrap().contains(&Duration::ZERO),
    );
    assert_eq!(source.held_bytes(), 0);
    source.gate.open();
    assert_eq!(wait(&engine, &job.job_id).status, JobStatus::Completed);
    assert!(engine.metrics_text().contains("cuzk_spare_witness_bytes 0"));
}

/// Spares left idle past `srs_idle_evict` are freed by the engine's
/// housekeeping, as idle parameters and R1CS are.
#[test]
fn a_sources_spare_bytes_are_released_when_idle() {
    let dir = tempfile::tempdir().unwrap();
    let source = keeping(dir.path(), 1 << 30);
    let idle = Duration::from_millis(200);
    let config = EngineConfig {
        srs_idle_evict: Some(idle),
        ..EngineConfig::default()
    };
    let engine = Engine::start(config, Vec::new(), vec![source.clone() as Arc<dyn PlanSource>]).unwrap();
    wait_until(POLL_LIMIT, POLL, "the idle spares were never released", || {
        source.releases.lock().unwrap().contains(&idle)
    });
    drop(engine);
}
