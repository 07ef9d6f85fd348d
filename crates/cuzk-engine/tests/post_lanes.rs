//! PoSt on time under PoRep load (issue 36): the lanes kept for PoSt and
//! the budget's PoSt reserve, with a device that holds PoRep partitions
//! for as long as the test wants; and (issue 35.4) the budget counting
//! what a witness kept as bits really holds. Each test's engine counts
//! the compiled R1CS of its own sources' cache only, so the tests run side
//! by side (when the cache was the process's, another test's engine
//! recording a circuit in the middle of a test shrank what this one's
//! budget left: one run in ten waited out its PoSt). Every completed proof
//! is checked again with bellperson's verifier.

use cuzk_core::backend::BackendStatus;
use cuzk_core::{BackendError, CpuBackend, PendingProof, ProverBackend, ProverInput};
use cuzk_engine::{Engine, EngineConfig};
use cuzk_synthetic::SyntheticSpec;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

mod common;
use common::{assert_proved, request_for, synthetic, SIZE};

fn spec(partitions: usize, seed: u64) -> SyntheticSpec {
    common::spec(SIZE, partitions, seed)
}

fn request(spec: &SyntheticSpec) -> cuzk_core::ProofRequest {
    request_for(spec, None)
}

/// A device whose partitions below High priority wait at a gate until the
/// test opens it (PoRep regions that take long, holding every general
/// prover), while PoSt partitions pass.
#[derive(Debug, Default)]
struct Gated {
    open: std::sync::Mutex<bool>,
    opened: std::sync::Condvar,
    held: AtomicUsize,
    /// Takes witness-only partitions, as a GPU does.
    takes_witness: bool,
}

impl Gated {
    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }
}

impl ProverBackend for Gated {
    fn name(&self) -> String {
        "gated".into()
    }

    fn status(&self) -> BackendStatus {
        common::gpu_status(self.name(), 0)
    }

    fn prove_start(&self, input: ProverInput) -> Result<PendingProof, BackendError> {
        if input.priority < cuzk_core::Priority::High {
            self.held.fetch_add(1, Ordering::SeqCst);
            let mut open = self.open.lock().unwrap();
            while !*open {
                open = self.opened.wait(open).unwrap();
            }
        }
        CpuBackend.prove_start(input)
    }

    fn takes_witness(&self) -> bool {
        self.takes_witness
    }
}

/// Opens the gate when dropped: a failing test does not leave the
/// engine's workers at the gate, its shutdown waiting for them.
struct OpenOnDrop(Arc<Gated>);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.open();
    }
}

/// A job's final result, or `Timeout` after a minute.
fn wait(engine: &Engine, job: &str) -> cuzk_engine::JobResult {
    common::wait_within(engine, job, Duration::from_secs(60))
}

/// Waits (at most a minute) until `done` says so.
fn until(what: &str, done: impl Fn() -> bool) {
    common::wait_until(
        Duration::from_secs(60),
        Duration::from_millis(5),
        &format!("timed out waiting for {what}"),
        done,
    );
}

/// Issue 36, PoSt on time under load: with every general prover held by a
/// PoRep partition on the device, the hand-off full and every general
/// synthesis worker holding a finished PoRep partition it cannot hand
/// off, a WindowPoSt and a WinningPoSt submitted then are still
/// synthesised, proved and verified, by the lanes kept for PoSt, while
/// not one PoRep partition has got past the device.
#[test]
fn a_post_is_proved_while_porep_partitions_hold_every_general_worker() {
    let dir = tempfile::tempdir().unwrap();
    let device = Arc::new(Gated::default());
    let config = EngineConfig {
        partition_workers: 2,
        workers_per_backend: 2,
        max_prover_queue_depth: 1,
        ..EngineConfig::default()
    };
    let engine = Engine::start(config, vec![device.clone()], vec![synthetic(dir.path())]).unwrap();
    let _open_at_the_end = OpenOnDrop(Arc::clone(&device));
    let poreps: Vec<(SyntheticSpec, String)> = (0..3)
        .map(|i| {
            let s = spec(4, 40 + i);
            let id = engine.submit(request(&s)).unwrap().job_id;
            (s, id)
        })
        .collect();
    // Both general provers held at the device and a partition waiting in
    // the hand-off (the general synthesis workers then have theirs to hand
    // off, or will have soon).
    until("the general workers to fill up", || {
        let (_, handoff) = engine.status().queued_partitions;
        device.held.load(Ordering::SeqCst) == 2 && handoff >= 1
    });

    let post = |kind, seed| {
        let s = spec(1, seed);
        let mut r = request(&s);
        r.kind = kind;
        (s, engine.submit(r).unwrap().job_id)
    };
    let window = post(cuzk_core::ProofKind::WindowPostPartition, 50);
    let winning = post(cuzk_core::ProofKind::WinningPost, 51);
    for (s, id) in [&window, &winning] {
        let result = wait(&engine, id);
        assert_proved(dir.path(), s, &result);
    }
    assert_eq!(
        device.held.load(Ordering::SeqCst),
        2,
        "a PoRep partition got past the device"
    );

    device.open();
    for (s, id) in &poreps {
        let result = wait(&engine, id);
        assert_proved(dir.path(), s, &result);
    }
}

/// Issue 36: the budget's PoSt reserve. PoRep partitions may take the
/// budget but the reserve (two of them, held at the device, fill it); a
/// WindowPoSt partition of the same circuit is granted from the reserve
/// and proved while they stay held. Without the reserve it would wait for
/// their memory.
#[test]
fn the_post_reserve_keeps_memory_for_a_post_while_porep_fills_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let device = Arc::new(Gated::default());
    let parameters = common::pregenerate(dir.path(), SIZE);
    let per_partition = cuzk_core::plan::partition_bytes(SIZE, SIZE);
    let config = EngineConfig {
        partition_workers: 4,
        workers_per_backend: 4,
        max_prover_queue_depth: 4,
        memory_budget: parameters + 3 * per_partition,
        post_reserve: per_partition,
        ..EngineConfig::default()
    };
    let engine = Engine::start(config, vec![device.clone()], vec![synthetic(dir.path())]).unwrap();
    let _open_at_the_end = OpenOnDrop(Arc::clone(&device));
    let porep = spec(4, 60);
    let porep_job = engine.submit(request(&porep)).unwrap().job_id;
    until("two PoRep partitions at the device", || {
        device.held.load(Ordering::SeqCst) == 2
    });
    // No third: the rest of the budget is the reserve.
    std::thread::sleep(Duration::from_millis(200));
    let status = engine.status();
    assert_eq!(device.held.load(Ordering::SeqCst), 2);
    assert_eq!(status.queued_partitions, (2, 0));
    assert_eq!(status.memory_used, 2 * per_partition);

    let post = spec(1, 61);
    let mut window = request(&post);
    window.kind = cuzk_core::ProofKind::WindowPostPartition;
    let window = engine.submit(window).unwrap().job_id;
    let result = wait(&engine, &window);
    assert_proved(dir.path(), &post, &result);
    assert_eq!(device.held.load(Ordering::SeqCst), 2);

    device.open();
    let result = wait(&engine, &porep_job);
    assert_proved(dir.path(), &porep, &result);
}

/// Issue 35.4: a witness waiting for the device holds its bits, not its
/// plan's estimate, and the budget counts what it holds. The budget has
/// room for three partitions at the estimate; with one held at the device,
/// all eight are granted (the rest synthesised, waiting for the device or
/// to be handed off). Counting the estimate, five would still wait.
#[test]
fn witnesses_kept_as_bits_leave_their_estimate_to_the_next_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let device = Arc::new(Gated {
        takes_witness: true,
        ..Gated::default()
    });
    let parameters = common::pregenerate(dir.path(), SIZE);
    let porep = spec(8, 70);
    // The circuit's compiled R1CS, which the budget counts, recorded first.
    let source = synthetic(dir.path());
    let plan = source.plan(&request(&porep)).unwrap().unwrap();
    let estimate = plan.witness_bytes().unwrap();
    assert!(matches!(
        plan.synthesize_witness(0).unwrap(),
        cuzk_core::PartitionData::Witness(_)
    ));
    let r1cs = source
        .r1cs_cache()
        .expect("the synthetic source's R1CS cache")
        .memory_bytes();
    let config = EngineConfig {
        partition_workers: 4,
        workers_per_backend: 1,
        max_prover_queue_depth: 4,
        memory_budget: parameters + r1cs + 3 * estimate,
        ..EngineConfig::default()
    };
    let engine = Engine::start(config, vec![device.clone()], vec![source]).unwrap();
    let _open_at_the_end = OpenOnDrop(Arc::clone(&device));
    let job = engine.submit(request(&porep)).unwrap().job_id;
    until("every partition granted, one at the device", || {
        let (waiting, _) = engine.status().queued_partitions;
        device.held.load(Ordering::SeqCst) == 1 && waiting == 0
    });
    let used = engine.status().memory_used;
    assert!(
        used < 2 * estimate,
        "{used} bytes granted for eight partitions of {estimate}"
    );

    device.open();
    let result = wait(&engine, &job);
    assert_proved(dir.path(), &porep, &result);
}
