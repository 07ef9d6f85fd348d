//! Synthesis beside the rayon pool: a plan whose synthesis waits on a
//! lock that another synthesis holds while it runs a parallel pass (the
//! R1CS cache's one-time recording, a plan's shared witness) must not
//! deadlock the engine. It did when whole syntheses ran on pool threads: a
//! pool thread waiting inside the parallel pass stole the other queued
//! synthesis, which then waited on the lock held lower on its own stack.
//! The same plan checks the sequential slots (`cuzk_core::cores`): no more
//! syntheses compute at once than there are slots, and a worker back from
//! a parallel pass gets its slot back even while the workers that took it
//! wait on the value it computes.

use cuzk_core::{PlanError, PlanSource, ProofPlan, ProofRequest, ProvingAssignment};
use cuzk_engine::{Engine, EngineConfig, JobStatus};
use rayon::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

mod common;
use common::{check_proof, forward_plan, forward_source, request_for, spec, synthetic, wait_within, SIZE};

/// The synthetic plan, its synthesis first waiting for a value computed
/// once per source by a parallel pass (as a shared witness or a cache is).
#[derive(Debug)]
struct Shared {
    inner: Box<dyn ProofPlan>,
    once: Arc<OnceLock<u64>>,
    busy: Arc<Busy>,
}

/// Syntheses in their sequential part now, and the most at once.
#[derive(Debug, Default)]
struct Busy {
    now: AtomicUsize,
    most: AtomicUsize,
}

impl ProofPlan for Shared {
    forward_plan!(inner: circuit_id, partitions, partition_bytes, public_inputs);
    fn synthesize(&self, index: usize) -> Result<ProvingAssignment, PlanError> {
        // The parallel pass lends the worker's slot to others, who then wait
        // on this value while holding it.
        let value = *self.once.get_or_init(|| {
            cuzk_core::cores::parallel(|| {
                (0..1u64 << 22)
                    .into_par_iter()
                    .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 7)
                    .reduce(|| 0, u64::wrapping_add)
            })
        });
        assert_ne!(value, 0);
        // A sequential part of some length.
        let now = self.busy.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.busy.most.fetch_max(now, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(30));
        self.busy.now.fetch_sub(1, Ordering::SeqCst);
        self.inner.synthesize(index)
    }
}

#[derive(Debug)]
struct Source {
    inner: Arc<dyn PlanSource>,
    once: Arc<OnceLock<u64>>,
    busy: Arc<Busy>,
}

impl PlanSource for Source {
    fn name(&self) -> &'static str {
        "shared"
    }
    fn plan(&self, request: &ProofRequest) -> Option<Result<Box<dyn ProofPlan>, PlanError>> {
        let once = Arc::clone(&self.once);
        let busy = Arc::clone(&self.busy);
        Some(
            self.inner
                .plan(request)?
                .map(|inner| Box::new(Shared { inner, once, busy }) as Box<dyn ProofPlan>),
        )
    }
    forward_source!(inner: parameters, r1cs_cache);
}

/// Proves one 6-partition job with 4 synthesis workers and `slots`
/// sequential slots, `rounds` times with a fresh lock each (the race is in
/// who starts first; `computed`: the lock's value is there from the start,
/// so no worker lends its slot); returns the most syntheses ever in their
/// sequential part at once.
fn prove_rounds(rounds: u64, slots: usize, computed: bool) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let busy = Arc::new(Busy::default());
    for round in 0..rounds {
        let source = Source {
            inner: synthetic(dir.path()),
            once: Arc::new(match computed {
                true => OnceLock::from(1),
                false => OnceLock::new(),
            }),
            busy: Arc::clone(&busy),
        };
        let config = EngineConfig {
            partition_workers: 4,
            sequential_slots: slots,
            ..EngineConfig::default()
        };
        let engine = Engine::start(config, Vec::new(), vec![Arc::new(source)]).unwrap();
        let s = spec(SIZE, 6, 70 + round);
        let job = engine.submit(request_for(&s, None)).unwrap().job_id;
        let result = wait_within(&engine, &job, Duration::from_secs(120));
        if result.status != JobStatus::Completed {
            // Deadlocked workers would never join: leave them, fail now.
            std::mem::forget(engine);
            panic!("round {round}: {:?} after 120 s: {}", result.status, result.error);
        }
        check_proof(dir.path(), &s, &result.proof);
        assert_eq!(engine.status().sequential_slots.in_use, 0);
        engine.shutdown(Duration::from_secs(5));
    }
    busy.most.load(Ordering::SeqCst)
}

#[test]
fn syntheses_waiting_on_a_lock_held_by_a_parallel_pass_all_finish() {
    // One slot per worker, and fewer slots than workers (a worker back from
    // the pass must not wait for a slot held by one waiting on it).
    prove_rounds(5, 4, false);
    prove_rounds(5, 2, false);
}

#[test]
fn no_more_syntheses_compute_at_once_than_there_are_slots() {
    assert_eq!(prove_rounds(2, 1, true), 1, "one slot: one synthesis at a time");
    assert!(
        prove_rounds(2, 4, true) > 1,
        "four slots: the four workers overlap"
    );
}
