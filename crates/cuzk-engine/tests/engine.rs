//! The engine in process: priorities, cancellation, idempotency, bad input,
//! the memory budget and shutdown. Every completed proof is checked here
//! again with bellperson's verifier, independently of the engine's own check.

use cuzk_core::{PlanSource, Priority, ProofKind, ProofRequest, PROOF_BYTES};
use cuzk_engine::{Engine, EngineConfig, EngineError, JobStatus};
use cuzk_synthetic::SyntheticSpec;
use std::sync::Arc;
use std::time::Duration;

mod common;
use common::{assert_proved, circuit_id, pregenerate, request_for, spec, synthetic, SIZE};

fn config(_dir: &std::path::Path) -> EngineConfig {
    EngineConfig {
        partition_workers: 2,
        workers_per_backend: 2,
        ..EngineConfig::default()
    }
}

/// An engine on the CPU backend serving synthetic requests, and Filecoin
/// ones as the daemon does (their refusals are checked here).
fn start(dir: &std::path::Path, config: EngineConfig) -> Result<Engine, EngineError> {
    let filecoin: Arc<dyn PlanSource> = Arc::new(cuzk_filecoin::FilecoinPlans::new(dir.to_path_buf()));
    Engine::start(config, Vec::new(), vec![synthetic(dir), filecoin])
}

/// An engine with one synthesis worker and one prover: what is queued
/// stays queued while one partition goes through.
fn one_pipeline(dir: &std::path::Path) -> Engine {
    let config = EngineConfig {
        partition_workers: 1,
        workers_per_backend: 1,
        ..config(dir)
    };
    start(dir, config).unwrap()
}

fn request(spec: SyntheticSpec, priority: Option<Priority>) -> ProofRequest {
    request_for(&spec, priority)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn mixed_priorities_all_complete_and_verify() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Arc::new(start(dir.path(), config(dir.path())).unwrap());
    let priorities = [
        Priority::Low,
        Priority::Normal,
        Priority::High,
        Priority::Critical,
    ];
    let mut jobs = Vec::new();
    for i in 0..24u64 {
        let s = spec(SIZE, 1 + (i as usize % 3), i);
        let outcome = engine
            .submit(request(s.clone(), Some(priorities[i as usize % 4])))
            .unwrap();
        jobs.push((outcome.job_id, s));
    }
    let rt = runtime();
    for (id, s) in &jobs {
        let result = rt
            .block_on(engine.wait(id, Some(Duration::from_secs(300))))
            .unwrap();
        assert_proved(dir.path(), s, &result);
    }
    assert_eq!(engine.status().completed, 24);
    let text = engine.metrics_text();
    assert!(
        text.contains("cuzk_jobs_finished_total{kind=\"porep\",status=\"completed\"} 24"),
        "{text}"
    );
}

#[test]
fn critical_job_overtakes_queued_normal_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let engine = one_pipeline(dir.path());
    // Warm the parameters so the ordering is not about loading.
    let rt = runtime();
    let warm = engine.submit(request(spec(1 << 11, 1, 99), None)).unwrap();
    rt.block_on(engine.wait(&warm.job_id, None)).unwrap();

    let normal: Vec<String> = (0..20)
        .map(|i| engine.submit(request(spec(1 << 11, 1, i), None)).unwrap().job_id)
        .collect();
    let mut winning = request(spec(1 << 11, 1, 500), None);
    winning.kind = ProofKind::WinningPost; // CRITICAL by default
    let critical = engine.submit(winning).unwrap();
    assert_eq!(critical.queue_position, 0, "nothing queued outranks it");

    let done = rt.block_on(engine.wait(&critical.job_id, None)).unwrap();
    assert_eq!(done.status, JobStatus::Completed);
    let still_waiting = normal
        .iter()
        .filter(|id| engine.result(id).unwrap().is_none())
        .count();
    // At most the partitions already past the dispatcher (one synthesising,
    // one in the hand-off, one proving) can finish first.
    assert!(
        still_waiting >= 17,
        "only {still_waiting} of 20 NORMAL jobs were still waiting"
    );
    for id in &normal {
        assert_eq!(
            rt.block_on(engine.wait(id, None)).unwrap().status,
            JobStatus::Completed
        );
    }
}

#[test]
fn cancel_timeout_idempotency_and_bad_requests() {
    let dir = tempfile::tempdir().unwrap();
    let engine = one_pipeline(dir.path());
    let rt = runtime();

    // A long job keeps the single pipeline busy.
    let long = engine.submit(request(spec(1 << 13, 6, 1), None)).unwrap();
    let queued = engine.submit(request(spec(SIZE, 1, 2), None)).unwrap();

    // Await with a timeout returns TIMEOUT and leaves the job running.
    let early = rt
        .block_on(engine.wait(&long.job_id, Some(Duration::from_millis(50))))
        .unwrap();
    assert_eq!(early.status, JobStatus::Timeout);
    assert!(engine.result(&long.job_id).unwrap().is_none());

    // Cancel the queued job, then the running one.
    assert!(
        !engine.cancel(&queued.job_id).unwrap(),
        "queued job was not running"
    );
    let cancelled = rt.block_on(engine.wait(&queued.job_id, None)).unwrap();
    assert_eq!(cancelled.status, JobStatus::Cancelled);
    while !engine.status().queues.iter().any(|q| q.in_progress > 0) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(engine.cancel(&long.job_id).unwrap(), "long job was running");
    assert_eq!(
        rt.block_on(engine.wait(&long.job_id, None)).unwrap().status,
        JobStatus::Cancelled
    );
    // Cancelling again changes nothing.
    assert!(!engine.cancel(&long.job_id).unwrap());

    // Idempotent resubmission.
    let mut keyed = request(spec(SIZE, 1, 3), None);
    keyed.request_id = "sector-42".into();
    let first = engine.submit(keyed.clone()).unwrap();
    let again = engine.submit(keyed).unwrap();
    assert_eq!(first.job_id, again.job_id);
    assert!(again.duplicate && !first.duplicate);
    let result = rt.block_on(engine.wait(&first.job_id, None)).unwrap();
    assert_proved(dir.path(), &spec(SIZE, 1, 3), &result);

    // Bad requests are errors and the engine keeps serving.
    let mut bad = request(spec(SIZE, 1, 1), None);
    bad.vanilla_proof = b"{not json".to_vec();
    assert!(matches!(
        engine.submit(bad).unwrap_err(),
        EngineError::InvalidArgument(_)
    ));
    let mut unknown_field = request(spec(SIZE, 1, 1), None);
    unknown_field.vanilla_proof = br#"{"constraint": 5}"#.to_vec();
    assert!(matches!(
        engine.submit(unknown_field).unwrap_err(),
        EngineError::InvalidArgument(_)
    ));
    for oversized in [spec(1 << 28, 1, 1), spec(SIZE, 1000, 1), spec(3, 1, 1)] {
        assert!(matches!(
            engine.submit(request(oversized, None)).unwrap_err(),
            EngineError::InvalidArgument(_)
        ));
    }
    // A Filecoin proof type whose payload is no C1 output.
    let mut not_c1 = request(spec(SIZE, 1, 1), None);
    not_c1.registered_proof = 8; // StackedDrg32GiBV1_1
    assert!(matches!(
        engine.submit(not_c1).unwrap_err(),
        EngineError::InvalidArgument(m) if m.contains("C1 output")
    ));
    // Non-interactive PoRep (an aggregate) is not served.
    let mut aggregate = request(spec(SIZE, 1, 1), None);
    aggregate.registered_proof = 18;
    assert!(matches!(
        engine.submit(aggregate).unwrap_err(),
        EngineError::Unsupported(_)
    ));
    assert!(matches!(
        rt.block_on(engine.wait("no-such-job", None)).unwrap_err(),
        EngineError::NotFound(_)
    ));
    assert!(matches!(
        engine.cancel("no-such-job").unwrap_err(),
        EngineError::NotFound(_)
    ));
    let after = engine.submit(request(spec(SIZE, 1, 4), None)).unwrap();
    assert_eq!(
        rt.block_on(engine.wait(&after.job_id, None)).unwrap().status,
        JobStatus::Completed
    );
}

/// Issue 12.8: a corrupt parameter file the engine generated itself (a
/// benchmark circuit's) is generated again instead of failing every job;
/// a corrupt file of unknown origin (a Filecoin id) fails its job with a
/// clear error naming the problem, and other circuits keep working.
#[test]
fn unusable_parameters_fail_the_job_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let s = spec(SIZE, 3, 1);
    let id = circuit_id(SIZE);
    std::fs::write(dir.path().join(format!("{id}.params")), b"not a parameter file").unwrap();
    let engine = start(dir.path(), config(dir.path())).unwrap();
    let rt = runtime();
    let job = engine.submit(request(s.clone(), None)).unwrap();
    let result = rt.block_on(engine.wait(&job.job_id, None)).unwrap();
    assert_proved(dir.path(), &s, &result);

    // Not ours to regenerate: a corrupt file under a Filecoin-style id.
    let foreign = "v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-0-0-sha256_hasher-test";
    std::fs::write(
        dir.path().join(format!("{foreign}.params")),
        b"not a parameter file",
    )
    .unwrap();
    let err = engine.preload_srs(foreign).unwrap_err();
    assert!(
        matches!(&err, EngineError::Srs(m) if m.contains("truncated") && m.contains(foreign)),
        "{err:?}"
    );
    // Issue 12.7: the error names the file, not the server's directory.
    assert!(
        !err.to_string().contains(&dir.path().display().to_string()),
        "{err}"
    );
    assert_eq!(engine.status().failed, 0);
    // Other circuits still work.
    let ok = engine.submit(request(spec(SIZE + 1, 1, 1), None)).unwrap();
    assert_eq!(
        rt.block_on(engine.wait(&ok.job_id, None)).unwrap().status,
        JobStatus::Completed
    );
}

#[test]
fn memory_budget_bounds_partitions_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let per_partition = cuzk_core::plan::partition_bytes(1 << 12, 1 << 12);
    // The budget counts the parameters too: room for them and two
    // partitions.
    let parameters = pregenerate(dir.path(), 1 << 12);
    let engine = Arc::new(
        start(
            dir.path(),
            EngineConfig {
                partition_workers: 4,
                workers_per_backend: 2,
                max_prover_queue_depth: 4,
                memory_budget: per_partition * 2 + parameters,
                ..config(dir.path())
            },
        )
        .unwrap(),
    );
    let jobs: Vec<String> = (0..6)
        .map(|i| engine.submit(request(spec(1 << 12, 2, i), None)).unwrap().job_id)
        .collect();
    let watcher = {
        let engine = Arc::clone(&engine);
        std::thread::spawn(move || {
            let mut peak = 0;
            while engine.status().completed < 6 {
                let status = engine.status();
                assert!(
                    status.memory_used <= status.memory_budget,
                    "{} > {}",
                    status.memory_used,
                    status.memory_budget
                );
                peak = peak.max(status.memory_used);
                std::thread::sleep(Duration::from_millis(1));
            }
            peak
        })
    };
    let rt = runtime();
    for id in &jobs {
        assert_eq!(
            rt.block_on(engine.wait(id, None)).unwrap().status,
            JobStatus::Completed
        );
    }
    let peak = watcher.join().unwrap();
    assert!(peak > 0 && peak <= per_partition * 2);
    assert_eq!(engine.status().memory_used, 0, "every permit returned");
}

#[test]
fn srs_manager_loads_once_and_reports_tiers() {
    let dir = tempfile::tempdir().unwrap();
    let engine = start(dir.path(), config(dir.path())).unwrap();
    let id = circuit_id(SIZE);
    let (already, _) = engine.preload_srs(&id).unwrap();
    assert!(!already);
    let (already, _) = engine.preload_srs(&id).unwrap();
    assert!(already);
    let status = engine.status().srs;
    assert_eq!(status.len(), 1);
    assert_eq!(status[0].tier, cuzk_engine::Tier::Warm);
    assert!(status[0].size_bytes > 0);
    assert!(engine.preload_srs("no-such-circuit").is_err());
    // The devices take preloaded parameters in the background and hold
    // them until done: only then does an eviction free them.
    common::wait_until(
        Duration::from_secs(30),
        Duration::from_millis(5),
        "preparation never finished",
        || engine.status().devices.iter().all(|d| d.preparing == 0),
    );
    let (was_loaded, freed) = engine.evict_srs(&id);
    assert!(was_loaded && freed > 0);
    assert_eq!(engine.evict_srs(&id), (false, 0));
    let cold = engine
        .status()
        .srs
        .into_iter()
        .find(|s| s.circuit_id == id)
        .unwrap();
    assert_eq!(cold.tier, cuzk_engine::Tier::Cold);
}

#[test]
fn shutdown_gives_every_job_a_final_status() {
    let dir = tempfile::tempdir().unwrap();
    let engine = one_pipeline(dir.path());
    let jobs: Vec<String> = (0..8)
        .map(|i| engine.submit(request(spec(1 << 12, 2, i), None)).unwrap().job_id)
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    engine.shutdown(Duration::from_millis(100));
    assert!(matches!(
        engine.submit(request(spec(SIZE, 1, 1), None)).unwrap_err(),
        EngineError::ShuttingDown
    ));
    for id in &jobs {
        let result = engine.result(id).unwrap().expect("final status");
        assert!(
            matches!(result.status, JobStatus::Completed | JobStatus::Cancelled),
            "{result:?}"
        );
    }
}

#[test]
fn idle_parameters_are_evicted_under_memory_pressure() {
    let dir = tempfile::tempdir().unwrap();
    let id = circuit_id;
    // On disk already, so the engine counts what a read holds rather than
    // what a generation would.
    pregenerate(dir.path(), 1 << 10);
    pregenerate(dir.path(), (1 << 10) - 1);
    let engine = start(
        dir.path(),
        EngineConfig {
            // Room for one set of 2^10 parameters, not two.
            srs_memory_limit: 500_000,
            ..config(dir.path())
        },
    )
    .unwrap();
    engine.preload_srs(&id(1 << 10)).unwrap();
    let size_of = |status: &[cuzk_engine::SrsStatus], circuit: &str| {
        status
            .iter()
            .find(|s| s.circuit_id == circuit)
            .map(|s| (s.tier, s.size_bytes))
    };
    let first = size_of(&engine.status().srs, &id(1 << 10)).unwrap();
    assert!(
        first.1 > 250_000 && first.1 < 500_000,
        "test assumes one fits: {}",
        first.1
    );
    engine.preload_srs(&id((1 << 10) - 1)).unwrap();
    let status = engine.status().srs;
    assert_eq!(
        size_of(&status, &id(1 << 10)).unwrap().0,
        cuzk_engine::Tier::Cold,
        "LRU idle entry evicted"
    );
    assert_eq!(
        size_of(&status, &id((1 << 10) - 1)).unwrap().0,
        cuzk_engine::Tier::Warm
    );
    // Proving with the evicted circuit loads it again (and evicts the other).
    let rt = runtime();
    let job = engine.submit(request(spec(1 << 10, 1, 1), None)).unwrap();
    assert_eq!(
        rt.block_on(engine.wait(&job.job_id, None)).unwrap().status,
        JobStatus::Completed
    );
    let status = engine.status().srs;
    assert_eq!(
        size_of(&status, &id((1 << 10) - 1)).unwrap().0,
        cuzk_engine::Tier::Cold
    );
}

/// Shaped partitions (generated witnesses and constraints): the engine
/// writes the shaped parameter file on first use, proves every partition
/// with the plan's witness, a, b, c from the generated R1CS and fixed
/// blinding factors (so the bytes are exactly those of a direct proof,
/// which is what `cuzk-bench batch --supraseal` compares with
/// supraseal-c2), and its structural check rejects a broken proof.
#[test]
fn shaped_partitions_prove_with_the_plans_witness_and_randomness() {
    use cuzk_core::shaped::{Shape, ShapedCircuit};
    use cuzk_core::ProofPlan;
    use cuzk_synthetic::ShapedPlan;
    use cuzk_synthetic::WitnessSource;

    let dir = tempfile::tempdir().unwrap();
    let engine = start(dir.path(), config(dir.path())).unwrap();
    let shaped = SyntheticSpec {
        constraints: 3000,
        partitions: 3,
        inputs: 4,
        seed: 5,
        witness: WitnessSource::Shaped,
        shape_seed: 9,
    };
    let rt = runtime();
    let run = |spec: &SyntheticSpec| {
        let id = engine.submit(request(spec.clone(), None)).unwrap().job_id;
        rt.block_on(engine.wait(&id, Some(Duration::from_secs(300))))
            .unwrap()
    };
    let result = run(&shaped);
    assert_eq!(result.status, JobStatus::Completed, "{}", result.error);
    assert_eq!(result.proof.len(), 3 * PROOF_BYTES);

    let plan = ShapedPlan::new(shaped.clone()).unwrap();
    let path = dir.path().join(format!("{}.params", plan.circuit_id()));
    assert_eq!(plan.circuit_id(), "shaped-v1-n3000-i4-s9");
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        Shape::of(3000, 4, 9).file_bytes()
    );
    let params = Arc::new(cuzk_core::ProvingParameters::read(&path, cuzk_core::PointCheck::Full).unwrap());
    let circuit = ShapedCircuit::new(3000, 4, 9);
    let r1cs = circuit.compiled_r1cs().unwrap();
    let mut proofs = Vec::new();
    for (index, chunk) in result.proof.chunks(PROOF_BYTES).enumerate() {
        let (r, s) = plan.fixed_randomness(index);
        let assignment = r1cs.assign(circuit.witness(plan.value_seed(index))).unwrap();
        assert_eq!(&assignment.input_assignment[1..], &plan.public_inputs(index)[..]);
        let (direct, _) =
            cuzk_core::prove(assignment, &params, cuzk_core::Randomness::Fixed { r, s }).unwrap();
        assert_eq!(
            chunk,
            &cuzk_core::proof_to_bytes(&direct)[..],
            "partition {index}"
        );
        proofs.push(direct);
    }
    // Partitions differ from each other, and the check can fail.
    assert_ne!(
        result.proof[..PROOF_BYTES],
        result.proof[PROOF_BYTES..2 * PROOF_BYTES]
    );
    plan.verify(&params, &proofs).unwrap();
    proofs[1].a = <blstrs::G1Affine as group::prime::PrimeCurveAffine>::identity();
    assert!(plan
        .verify(&params, &proofs)
        .unwrap_err()
        .to_string()
        .contains("partition 1"));
    assert!(plan.verify(&params, &proofs[..2]).is_err());

    // Out-of-range sizes are refused like synthetic ones.
    let too_big = SyntheticSpec {
        constraints: (1 << 27) + 1,
        ..shaped.clone()
    };
    let err = engine.submit(request(too_big, None)).unwrap_err();
    assert!(matches!(err, EngineError::InvalidArgument(_)), "{err:?}");
}

/// Regression (issue 12.1): PreloadSRS of an enormous benchmark circuit id
/// aborted the process ("memory allocation of 32000000000000 bytes
/// failed"), and one above 2^27 started an unbounded generation. Such ids
/// are refused before anything is allocated, and neither they nor unknown
/// ids leave an entry behind.
#[test]
fn preload_of_hostile_circuit_ids_is_refused_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let engine = start(dir.path(), config(dir.path())).unwrap();
    for id in [
        "synthetic-v1-n1000000000000-i2",
        "shaped-v1-n1000000000000-i2-s0",
        "synthetic-v1-n200000000-i2",
        "synthetic-v1-nX-i2",
        "../../etc/passwd",
        "/etc/hostname",
    ] {
        let err = engine.preload_srs(id).unwrap_err();
        assert!(matches!(err, EngineError::InvalidArgument(_)), "{id}: {err:?}");
    }
    // A plain id with no file: missing parameters, named.
    let err = engine.preload_srs("no-such-circuit").unwrap_err();
    assert!(
        matches!(&err, EngineError::Srs(m) if m.contains("no-such-circuit.params")),
        "{err:?}"
    );
    assert!(engine.status().srs.is_empty(), "{:?}", engine.status().srs);
    // The engine still serves.
    let s = spec(SIZE, 1, 21);
    let job = engine.submit(request(s.clone(), None)).unwrap();
    let result = runtime().block_on(engine.wait(&job.job_id, None)).unwrap();
    assert_proved(dir.path(), &s, &result);
}

/// Regression (issue 12.5): the reference's example config preloads
/// `porep-32g`, and a preload that could not load made the engine (and so
/// the daemon) refuse to start. It starts, and says what is missing when a
/// job needs it.
#[test]
fn a_preload_that_cannot_load_does_not_stop_the_engine() {
    let dir = tempfile::tempdir().unwrap();
    let engine = start(
        dir.path(),
        EngineConfig {
            preload: vec!["porep-32g".into(), "../nope".into()],
            ..config(dir.path())
        },
    )
    .unwrap();
    assert!(engine.status().srs.is_empty());
    let err = engine.preload_srs("porep-32g").unwrap_err();
    assert!(
        matches!(&err, EngineError::Srs(m) if m.contains("v28-stacked-proof-of-replication")),
        "{err:?}"
    );
    let s = spec(SIZE, 1, 31);
    let job = engine.submit(request(s.clone(), None)).unwrap();
    let result = runtime().block_on(engine.wait(&job.job_id, None)).unwrap();
    assert_eq!(result.status, JobStatus::Completed, "{}", result.error);
}
