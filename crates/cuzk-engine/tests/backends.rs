//! The engine with backends it is given: fakes that decline, fail, panic or
//! are slow, beside the CPU backend, and two backends at once. Every proof
//! that completes is checked again with bellperson's verifier here.

use cuzk_core::backend::{BackendStatus, Fallback};
use cuzk_core::{
    BackendError, CompiledR1cs, CpuBackend, PartitionData, PendingProof, PlanError, PlanSource, Prepared,
    ProofPlan, ProofRequest, ProveError, ProverBackend, ProverInput, SyntheticCircuit,
};
use cuzk_engine::{Engine, EngineConfig, JobStatus};
use cuzk_synthetic::SyntheticSpec;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

mod common;
use common::{assert_proved, forward_source, gpu_status, synthetic, wait_until, SIZE};

/// How long a test waits for the devices' preparations, and how often it
/// looks.
const PREPARE_LIMIT: Duration = Duration::from_secs(60);
const PREPARE_POLL: Duration = Duration::from_millis(10);

/// What a fake backend does with the partitions it is given.
#[derive(Debug, Clone, Copy)]
enum Behaviour {
    /// Proves on the CPU.
    Prove,
    /// Declines its first `n` partitions, then proves.
    DeclineFirst(usize),
    /// Fails its `n`-th call (0-based) with an error, proves the others.
    FailCall(usize),
    /// Panics on its `n`-th call, proves the others.
    PanicCall(usize),
    /// Declines everything.
    DeclineAll,
    /// Fails every call from the `n`-th on (a device that died).
    FailFrom(usize),
}

#[derive(Debug)]
struct Fake {
    name: String,
    behaviour: Behaviour,
    delay: Duration,
    calls: AtomicUsize,
    proved: AtomicUsize,
}

impl Fake {
    fn new(name: &str, behaviour: Behaviour, delay: Duration) -> Arc<Self> {
        Arc::new(Self {
            name: name.into(),
            behaviour,
            delay,
            calls: AtomicUsize::new(0),
            proved: AtomicUsize::new(0),
        })
    }

    fn proved(&self) -> usize {
        self.proved.load(Ordering::SeqCst)
    }
}

impl ProverBackend for Fake {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn status(&self) -> BackendStatus {
        gpu_status(self.name.clone(), 7)
    }

    fn prove_start(&self, input: ProverInput) -> Result<PendingProof, BackendError> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(self.delay);
        let decline = |reason: &str, input: ProverInput| BackendError::Declined {
            backend: self.name.clone(),
            reason: reason.into(),
            input: Box::new(input),
        };
        match self.behaviour {
            Behaviour::DeclineAll => return Err(decline("declines everything", input)),
            Behaviour::DeclineFirst(n) if call < n => return Err(decline("not yet", input)),
            Behaviour::FailCall(n) if call == n => {
                return Err(BackendError::Failed(ProveError::Backend {
                    backend: self.name.clone(),
                    message: "injected device failure".into(),
                }))
            }
            Behaviour::PanicCall(n) if call == n => panic!("injected panic in {}", self.name),
            Behaviour::FailFrom(n) if call >= n => {
                return Err(BackendError::Failed(ProveError::Backend {
                    backend: self.name.clone(),
                    message: "injected device failure".into(),
                }))
            }
            _ => {}
        }
        let pending = CpuBackend.prove_start(input)?;
        self.proved.fetch_add(1, Ordering::SeqCst);
        Ok(pending)
    }
}

fn engine(dir: &Path, backends: Vec<Arc<dyn ProverBackend>>, workers: usize) -> Engine {
    let config = EngineConfig {
        partition_workers: 2,
        workers_per_backend: workers,
        max_prover_queue_depth: 2,
        ..EngineConfig::default()
    };
    Engine::start(config, backends, vec![synthetic(dir)]).unwrap()
}

fn spec(partitions: usize, seed: u64) -> SyntheticSpec {
    common::spec(SIZE, partitions, seed)
}

fn request(spec: &SyntheticSpec) -> ProofRequest {
    common::request_for(spec, None)
}

fn prove(engine: &Engine, spec: &SyntheticSpec) -> cuzk_engine::JobResult {
    let job = engine.submit(request(spec)).unwrap();
    common::wait(engine, &job.job_id)
}

#[test]
fn declined_partitions_go_to_the_fallback() {
    let dir = tempfile::tempdir().unwrap();
    let gpu = Fake::new("fake GPU", Behaviour::DeclineFirst(2), Duration::ZERO);
    let cpu = Fake::new("fake CPU", Behaviour::Prove, Duration::ZERO);
    let backend = Arc::new(Fallback::new(gpu.clone(), cpu.clone()));
    let engine = engine(dir.path(), vec![backend.clone()], 1);
    let s = spec(4, 3);
    let result = prove(&engine, &s);
    assert_proved(dir.path(), &s, &result);
    assert_eq!(backend.declined(), 2);
    assert_eq!(
        cpu.proved(),
        2,
        "the two declined partitions were proved on the fallback"
    );
    assert_eq!(gpu.proved(), 2);
}

#[test]
fn a_backend_that_declines_with_no_fallback_fails_the_job_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let only = Fake::new("picky", Behaviour::DeclineAll, Duration::ZERO);
    let engine = engine(dir.path(), vec![only], 1);
    let result = prove(&engine, &spec(1, 4));
    assert_eq!(result.status, JobStatus::Failed);
    assert!(
        result.error.contains("picky") && result.error.contains("declines everything"),
        "{}",
        result.error
    );
}

#[test]
fn a_backend_error_mid_job_fails_that_job_and_the_engine_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let flaky = Fake::new("flaky", Behaviour::FailCall(1), Duration::ZERO);
    let engine = engine(dir.path(), vec![flaky.clone()], 1);
    let result = prove(&engine, &spec(3, 5));
    assert_eq!(result.status, JobStatus::Failed);
    assert!(
        result.error.contains("injected device failure"),
        "{}",
        result.error
    );
    // The same backend proves the next job completely.
    let s = spec(2, 6);
    let result = prove(&engine, &s);
    assert_proved(dir.path(), &s, &result);
    // The failure is counted under the stage that failed it; the other
    // reasons' series exist at 0, and nothing is left queued.
    let text = engine.metrics_text();
    for line in [
        "cuzk_jobs_failed_total{kind=\"porep\",reason=\"prover\"} 1",
        "cuzk_jobs_failed_total{kind=\"porep\",reason=\"synthesis\"} 0",
        "cuzk_jobs_failed_total{kind=\"winning\",reason=\"verification\"} 0",
        "cuzk_jobs_queued{priority=\"normal\",state=\"pending\"} 0",
        "cuzk_jobs_queued{priority=\"critical\",state=\"running\"} 0",
    ] {
        assert!(text.contains(line), "{line} missing from:\n{text}");
    }
    assert!(text.contains("cuzk_srs_bytes{circuit_id=\""), "{text}");
}

#[test]
fn a_panicking_backend_fails_its_job_without_killing_the_worker() {
    let dir = tempfile::tempdir().unwrap();
    let backend = Fake::new("panicky", Behaviour::PanicCall(0), Duration::ZERO);
    // One prover worker: if the panic killed it, the next job would hang.
    let engine = engine(dir.path(), vec![backend], 1);
    let result = prove(&engine, &spec(1, 7));
    assert_eq!(result.status, JobStatus::Failed);
    assert!(result.error.contains("panicked"), "{}", result.error);
    let s = spec(1, 8);
    let result = prove(&engine, &s);
    assert_proved(dir.path(), &s, &result);
}

#[test]
fn a_slow_backend_beside_a_fast_one_gets_less_work_and_nothing_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let slow = Fake::new("slow", Behaviour::Prove, Duration::from_millis(400));
    let fast = Fake::new("fast", Behaviour::Prove, Duration::ZERO);
    let engine = engine(dir.path(), vec![slow.clone(), fast.clone()], 1);
    let s = spec(8, 9);
    let result = prove(&engine, &s);
    assert_proved(dir.path(), &s, &result);
    assert_eq!(
        slow.proved() + fast.proved(),
        8,
        "every partition proved exactly once"
    );
    assert!(
        fast.proved() > slow.proved(),
        "fast {} vs slow {}",
        fast.proved(),
        slow.proved()
    );
}

#[test]
fn two_backends_share_a_job_and_status_reports_each() {
    let dir = tempfile::tempdir().unwrap();
    let first = Fake::new("device A", Behaviour::Prove, Duration::from_millis(50));
    let second = Fake::new("device B", Behaviour::Prove, Duration::from_millis(50));
    let engine = engine(dir.path(), vec![first.clone(), second.clone()], 1);
    let status = engine.status();
    let names: Vec<_> = status.devices.iter().map(|d| d.backend.name.clone()).collect();
    assert_eq!(names, ["device A", "device B"]);
    assert_eq!(status.devices[0].backend.memory_total_bytes, 1 << 30);
    let s = spec(6, 10);
    let result = prove(&engine, &s);
    assert_proved(dir.path(), &s, &result);
    assert_eq!(first.proved() + second.proved(), 6);
    assert!(first.proved() > 0 && second.proved() > 0, "both devices got work");
}

/// A CPU-proving backend that asks for witness-only partitions (as the GPU
/// does) and counts what it is given.
#[derive(Debug, Default)]
struct WitnessTaker {
    witnesses: AtomicUsize,
    evaluated: AtomicUsize,
}

impl ProverBackend for WitnessTaker {
    fn name(&self) -> String {
        "witness taker".into()
    }

    fn status(&self) -> BackendStatus {
        CpuBackend.status()
    }

    fn takes_witness(&self) -> bool {
        true
    }

    fn prove_start(&self, input: ProverInput) -> Result<PendingProof, BackendError> {
        let counter = match input.data {
            PartitionData::Witness(_) => &self.witnesses,
            _ => &self.evaluated,
        };
        counter.fetch_add(1, Ordering::SeqCst);
        CpuBackend.prove_start(input)
    }
}

/// Issue 13: with a backend that computes a, b, c itself, partitions are
/// synthesised as their witness only, and the proofs (a, b, c then computed
/// from the compiled R1CS) verify; with `witness_only` off they are
/// synthesised in full.
#[test]
fn witness_only_partitions_go_to_backends_that_take_them() {
    let dir = tempfile::tempdir().unwrap();
    for witness_only in [true, false] {
        let taker = Arc::new(WitnessTaker::default());
        let config = EngineConfig {
            partition_workers: 2,
            witness_only,
            ..EngineConfig::default()
        };
        let engine = Engine::start(config, vec![taker.clone()], vec![synthetic(dir.path())]).unwrap();
        let spec = spec(3, 41 + witness_only as u64);
        let result = prove(&engine, &spec);
        assert_proved(dir.path(), &spec, &result);
        let (witnesses, evaluated) = (
            taker.witnesses.load(Ordering::SeqCst),
            taker.evaluated.load(Ordering::SeqCst),
        );
        if witness_only {
            assert_eq!((witnesses, evaluated), (3, 0));
            // The compiled R1CS is held, reported and counted by the
            // budget (the metric), and goes with the circuit's parameters.
            let circuit_id = cuzk_synthetic::SyntheticPlan::new(spec.clone())
                .unwrap()
                .circuit_id();
            let held = engine.status().compiled_r1cs;
            let entry = held
                .iter()
                .find(|e| e.circuit_id == circuit_id)
                .expect("R1CS reported");
            assert!(entry.bytes > 0);
            let metric = format!("cuzk_compiled_r1cs_bytes {}", entry.bytes);
            assert!(engine.metrics_text().contains(&metric), "{metric}");
            engine.evict_srs(&circuit_id);
            assert!(engine
                .status()
                .compiled_r1cs
                .iter()
                .all(|e| e.circuit_id != circuit_id));
        } else {
            assert_eq!((witnesses, evaluated), (0, 3));
        }
        engine.shutdown(Duration::from_secs(5));
    }
}

/// Issue 18: a device that fails a partition while another is in service
/// is quarantined (no work for it, a log line, status and metrics say so)
/// and the partition is synthesised again for the other device; the job
/// completes with every partition proved once by the good device.
#[test]
fn a_failing_device_is_quarantined_and_its_partition_goes_to_another() {
    let dir = tempfile::tempdir().unwrap();
    let broken = Fake::new("broken", Behaviour::FailFrom(0), Duration::ZERO);
    // Slow enough that the broken device is offered a partition first.
    let good = Fake::new("good", Behaviour::Prove, Duration::from_millis(30));
    let config = EngineConfig {
        partition_workers: 2,
        workers_per_backend: 1,
        max_prover_queue_depth: 2,
        device_quarantine: Duration::from_secs(600),
        ..EngineConfig::default()
    };
    let engine = Engine::start(
        config,
        vec![broken.clone(), good.clone()],
        vec![synthetic(dir.path())],
    )
    .unwrap();
    let s = spec(6, 21);
    let result = prove(&engine, &s);
    assert_proved(dir.path(), &s, &result);
    let broken_calls = broken.calls.load(Ordering::SeqCst);
    assert!(
        broken_calls >= 1,
        "the broken device was never offered a partition"
    );
    assert_eq!(broken.proved(), 0);
    assert_eq!(
        good.proved(),
        6,
        "every partition proved once, by the good device"
    );

    // Quarantined: the next job goes to the good device only.
    let s = spec(4, 22);
    let result = prove(&engine, &s);
    assert_proved(dir.path(), &s, &result);
    assert_eq!(broken.calls.load(Ordering::SeqCst), broken_calls);
    assert_eq!(good.proved(), 10);

    let status = engine.status();
    assert!(status.devices[0].quarantine_left.is_some());
    assert_eq!(status.devices[0].failures, broken_calls as u64);
    assert!(status.devices[1].quarantine_left.is_none());
    let text = engine.metrics_text();
    for line in [
        "cuzk_device_in_service{device=\"0\"} 0".to_string(),
        "cuzk_device_in_service{device=\"1\"} 1".to_string(),
        format!("cuzk_device_failures_total{{device=\"0\"}} {broken_calls}"),
        "cuzk_device_failures_total{device=\"1\"} 0".to_string(),
        // The fakes report 1 GiB total, 512 MiB free.
        "cuzk_device_memory_bytes{device=\"1\",state=\"free\"} 536870912".to_string(),
    ] {
        assert!(text.contains(&line), "{line} missing from:\n{text}");
    }
}

/// With every other device quarantined, a failure fails its job (there is
/// nowhere else to send the partition) and the engine goes on.
#[test]
fn with_no_other_device_in_service_a_failure_fails_the_job() {
    let dir = tempfile::tempdir().unwrap();
    let a = Fake::new("a", Behaviour::FailFrom(0), Duration::ZERO);
    let b = Fake::new("b", Behaviour::FailFrom(0), Duration::ZERO);
    let engine = engine(dir.path(), vec![a.clone(), b.clone()], 1);
    let result = prove(&engine, &spec(2, 23));
    assert_eq!(result.status, JobStatus::Failed);
    assert!(
        result.error.contains("injected device failure"),
        "{}",
        result.error
    );
    assert_eq!(a.proved() + b.proved(), 0);
}

/// A slow device that proves on the CPU and notes each partition's size,
/// in the order it is given them.
#[derive(Debug)]
struct Ordered {
    delay: Duration,
    order: std::sync::Mutex<Vec<usize>>,
}

impl ProverBackend for Ordered {
    fn name(&self) -> String {
        "ordered".into()
    }

    fn status(&self) -> BackendStatus {
        gpu_status(self.name(), 0)
    }

    fn prove_start(&self, input: ProverInput) -> Result<PendingProof, BackendError> {
        self.order.lock().unwrap().push(input.data.num_constraints());
        std::thread::sleep(self.delay);
        CpuBackend.prove_start(input)
    }
}

/// Issue 36: a WindowPoSt partition submitted behind a queue of PoRep
/// partitions (three proofs of four partitions, the device slow) is proved
/// before them: only those already past the dispatcher go first.
#[test]
fn a_post_submitted_behind_queued_porep_partitions_is_proved_first() {
    let dir = tempfile::tempdir().unwrap();
    let device = Arc::new(Ordered {
        delay: Duration::from_millis(150),
        order: std::sync::Mutex::new(Vec::new()),
    });
    let config = EngineConfig {
        partition_workers: 1,
        workers_per_backend: 1,
        max_prover_queue_depth: 1,
        ..EngineConfig::default()
    };
    let engine = Engine::start(config, vec![device.clone()], vec![synthetic(dir.path())]).unwrap();
    // Both circuits' parameters loaded first, so the order is not about loading.
    let (porep, post) = (spec(4, 31), common::spec(2 * SIZE, 1, 32));
    assert_eq!(prove(&engine, &spec(1, 30)).status, JobStatus::Completed);
    let mut window = request(&post);
    window.kind = cuzk_core::ProofKind::WindowPostPartition; // HIGH by default
    let rt = common::runtime();
    let warm = engine.submit(window.clone()).unwrap();
    rt.block_on(engine.wait(&warm.job_id, None)).unwrap();
    device.order.lock().unwrap().clear();

    let poreps: Vec<String> = (0..3)
        .map(|i| {
            let mut s = porep.clone();
            s.seed += i;
            engine.submit(request(&s)).unwrap().job_id
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    window.vanilla_proof = common::spec(2 * SIZE, 1, 33).to_vanilla_proof();
    let post_job = engine.submit(window).unwrap();
    let done = rt.block_on(engine.wait(&post_job.job_id, None)).unwrap();
    assert_eq!(done.status, JobStatus::Completed);
    for id in &poreps {
        assert_eq!(
            rt.block_on(engine.wait(id, None)).unwrap().status,
            JobStatus::Completed
        );
    }
    let order = device.order.lock().unwrap().clone();
    assert_eq!(order.len(), 13, "{order:?}");
    let post_size = *order.iter().max().unwrap();
    let at = order.iter().position(|&n| n == post_size).unwrap();
    // Past the dispatcher before it: at most the partition proving, the
    // one in the hand-off and the one synthesising (and one more while the
    // PoSt was submitted).
    assert!(at <= 4, "the PoSt partition was proved {at}th: {order:?}");
    assert!(order.len() - at > 8, "{order:?}");
}

/// What one preload handed a device.
type Handed = (Arc<cuzk_core::ProvingParameters>, Option<Arc<CompiledR1cs>>);

/// What a device does with what a preload hands it ([`ProverBackend::
/// prepare`]).
type Preparation = dyn Fn(&Arc<cuzk_core::ProvingParameters>, Option<&Arc<CompiledR1cs>>) -> Result<Option<String>, ProveError>
    + Send
    + Sync;

/// A device that proves on the CPU and prepares as its test says.
struct PreparingAs {
    name: &'static str,
    prepare: Box<Preparation>,
}

impl std::fmt::Debug for PreparingAs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparingAs").field("name", &self.name).finish()
    }
}

impl ProverBackend for PreparingAs {
    fn name(&self) -> String {
        self.name.into()
    }

    fn status(&self) -> BackendStatus {
        CpuBackend.status()
    }

    fn prove_start(&self, input: ProverInput) -> Result<PendingProof, BackendError> {
        CpuBackend.prove_start(input)
    }

    fn prepare(
        &self,
        params: &Arc<cuzk_core::ProvingParameters>,
        r1cs: Option<&Arc<CompiledR1cs>>,
    ) -> Result<Option<String>, ProveError> {
        (self.prepare)(params, r1cs)
    }
}

/// A device that records what each preload hands it, and the record; its
/// preparation fails when asked to.
fn preparing(fails: bool) -> (Arc<PreparingAs>, Arc<std::sync::Mutex<Vec<Handed>>>) {
    let prepared = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = Arc::clone(&prepared);
    let prepare = move |params: &Arc<cuzk_core::ProvingParameters>, r1cs: Option<&Arc<CompiledR1cs>>| {
        record.lock().unwrap().push((Arc::clone(params), r1cs.cloned()));
        if fails {
            return Err(ProveError::Backend {
                backend: "preparing".into(),
                message: "injected failure to prepare".into(),
            });
        }
        Ok(Some("taken".into()))
    };
    let device = PreparingAs {
        name: "preparing",
        prepare: Box::new(prepare),
    };
    (Arc::new(device), prepared)
}

/// The synthetic source, whose preload also hands out a compiled R1CS (as
/// the Filecoin source does from its file).
#[derive(Debug)]
struct WithR1cs {
    inner: Arc<dyn PlanSource>,
    r1cs: Arc<CompiledR1cs>,
}

impl PlanSource for WithR1cs {
    fn name(&self) -> &'static str {
        "synthetic with an R1CS"
    }

    forward_source!(inner: plan, parameters, r1cs_cache);

    fn prepare(&self, _circuit_id: &str) -> Option<Result<Prepared, PlanError>> {
        Some(Ok(Prepared {
            summary: "an R1CS".into(),
            r1cs: Some(Arc::clone(&self.r1cs)),
        }))
    }
}

/// Issue 36: a preloaded circuit's parameters and compiled R1CS go to
/// every device at the preload (a GPU copies them then, not at the first
/// partition); a device that fails to take them costs nothing else.
#[test]
fn a_preload_hands_the_parameters_and_r1cs_to_every_device() {
    let dir = tempfile::tempdir().unwrap();
    let circuit = SyntheticCircuit::new(SIZE, vec![cuzk_core::Scalar::from(0u64); 2], 0).unwrap();
    let id = circuit.circuit_id();
    let r1cs = Arc::new(CompiledR1cs::record(circuit).unwrap());
    let source: Arc<dyn PlanSource> = Arc::new(WithR1cs {
        inner: synthetic(dir.path()),
        r1cs: Arc::clone(&r1cs),
    });
    let (taking, taken) = preparing(false);
    let (failing, failed) = preparing(true);
    let config = EngineConfig {
        partition_workers: 2,
        preload: vec![id.clone()],
        ..EngineConfig::default()
    };
    let backends: Vec<Arc<dyn ProverBackend>> = vec![taking, failing];
    let engine = Engine::start(config, backends, vec![source]).unwrap();
    // Each device takes them on a thread of its own.
    wait_until(PREPARE_LIMIT, PREPARE_POLL, "no device was prepared", || {
        !taken.lock().unwrap().is_empty() && !failed.lock().unwrap().is_empty()
    });
    for record in [&taken, &failed] {
        let prepared = record.lock().unwrap();
        assert_eq!(prepared.len(), 1, "one preparation per preload");
        let (params, given) = &prepared[0];
        assert_eq!(params.h.len() + 1, SIZE, "the preloaded circuit's parameters");
        assert!(given.as_ref().is_some_and(|g| Arc::ptr_eq(g, &r1cs)), "its R1CS");
    }
    // The engine serves, and a PreloadSRS hands them out again.
    let s = spec(2, 11);
    let result = prove(&engine, &s);
    assert_proved(dir.path(), &s, &result);
    let (already, _) = engine.preload_srs(&id).unwrap();
    assert!(already);
    wait_until(PREPARE_LIMIT, PREPARE_POLL, "PreloadSRS did not prepare", || {
        taken.lock().unwrap().len() >= 2
    });
}

/// A device whose preparation takes a while, as a GPU's copy does.
fn slow_to_prepare() -> Arc<PreparingAs> {
    Arc::new(PreparingAs {
        name: "slow to prepare",
        prepare: Box::new(|_, _| {
            std::thread::sleep(Duration::from_millis(400));
            Ok(Some("copied".into()))
        }),
    })
}

/// CI failure of 2026-12-06 (`srs_manager_loads_once_and_reports_tiers`
/// evicted while a device still held the preloaded parameters, and freed
/// nothing): the status says how many preloads each device is still
/// taking, and once none is, an eviction frees the parameters.
#[test]
fn the_status_shows_preloads_in_progress_and_an_eviction_after_them_frees_the_parameters() {
    let dir = tempfile::tempdir().unwrap();
    let id = common::circuit_id(SIZE);
    let config = EngineConfig {
        partition_workers: 1,
        ..EngineConfig::default()
    };
    let backends: Vec<Arc<dyn ProverBackend>> = vec![slow_to_prepare()];
    let engine = Engine::start(config, backends, vec![synthetic(dir.path())]).unwrap();
    engine.preload_srs(&id).unwrap();
    assert_eq!(engine.status().devices[0].preparing, 1);
    // Evicted while the device holds them: gone from the manager, but
    // nothing is freed yet, and the status does not pretend otherwise.
    assert_eq!(engine.evict_srs(&id), (true, 0));
    engine.preload_srs(&id).unwrap();
    wait_until(
        PREPARE_LIMIT,
        Duration::from_millis(5),
        "preparation never ended",
        || engine.status().devices[0].preparing == 0,
    );
    let (was_loaded, freed) = engine.evict_srs(&id);
    assert!(was_loaded && freed > 0, "{was_loaded} {freed}");
}
