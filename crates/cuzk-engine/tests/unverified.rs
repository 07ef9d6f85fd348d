//! A request its plan source accepted as unverifiable (a benchmark switch,
//! e.g. Filecoin's `[benchmark] allow_unverifiable`) is proved, not
//! verified, and reported COMPLETED marked `UNVERIFIED: <reason>`, counted
//! by `cuzk_proofs_unverified_total`; every other request is still verified
//! (a plan whose proofs fail verification fails its job).

use cuzk_core::{PlanError, PlanSource, Proof, ProofPlan, ProofRequest, ProvingParameters};
use cuzk_engine::{Engine, EngineConfig, JobStatus};
use std::sync::Arc;
use std::time::Duration;

mod common;
use common::{check_proof, forward_plan, forward_source, request_for, spec, synthetic, wait_within, SIZE};

/// The synthetic plan with its verification replaced: unverifiable with a
/// reason, or (reason `None`) verification that always fails.
#[derive(Debug)]
struct Marked {
    inner: Box<dyn ProofPlan>,
    reason: Option<String>,
}

impl ProofPlan for Marked {
    forward_plan!(inner: circuit_id, partitions, partition_bytes, synthesize, public_inputs);
    fn unverifiable(&self) -> Option<String> {
        self.reason.clone()
    }
    fn verify(
        &self,
        _params: &ProvingParameters,
        _proofs: &[Proof<cuzk_core::Bls12>],
    ) -> Result<(), PlanError> {
        Err(PlanError::Verification("this plan's proofs never verify".into()))
    }
}

#[derive(Debug)]
struct Source {
    inner: Arc<dyn PlanSource>,
    reason: Option<String>,
    /// Requests planned: a count of the source's own, exported by the engine.
    planned: std::sync::atomic::AtomicU64,
}

impl PlanSource for Source {
    fn name(&self) -> &'static str {
        "marked"
    }
    fn plan(&self, request: &ProofRequest) -> Option<Result<Box<dyn ProofPlan>, PlanError>> {
        let reason = self.reason.clone();
        self.planned.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(
            self.inner
                .plan(request)?
                .map(|inner| Box::new(Marked { inner, reason }) as Box<dyn ProofPlan>),
        )
    }
    forward_source!(inner: parameters, r1cs_cache);
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("planned", self.planned.load(std::sync::atomic::Ordering::Relaxed))]
    }
}

fn run(dir: &std::path::Path, reason: Option<&str>, seed: u64) -> (Engine, cuzk_engine::JobResult) {
    let source = Source {
        inner: synthetic(dir),
        reason: reason.map(str::to_owned),
        planned: Default::default(),
    };
    let engine = Engine::start(EngineConfig::default(), Vec::new(), vec![Arc::new(source)]).unwrap();
    let job = engine.submit(request_for(&spec(SIZE, 2, seed), None)).unwrap();
    let result = wait_within(&engine, &job.job_id, Duration::from_secs(300));
    (engine, result)
}

#[test]
fn an_unverifiable_request_completes_marked_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, result) = run(dir.path(), Some("random benchmark inputs"), 3);
    assert_eq!(result.status, JobStatus::Completed, "{}", result.error);
    assert_eq!(result.error, "UNVERIFIED: random benchmark inputs");
    // The proof itself is a real one (the synthetic circuit's witness holds).
    check_proof(dir.path(), &spec(SIZE, 2, 3), &result.proof);
    let metrics = engine.metrics_text();
    assert!(metrics.contains("cuzk_proofs_unverified_total 1"));
    // A source's own counts are exported (and read again, not added twice).
    let planned = r#"cuzk_plan_source_events_total{event="planned",source="marked"} 1"#;
    assert!(metrics.contains(planned), "{metrics}");
    assert!(engine.metrics_text().contains(planned));
    engine.shutdown(Duration::from_secs(5));
}

#[test]
fn a_request_not_marked_is_verified_and_fails_when_its_proof_does_not_verify() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, result) = run(dir.path(), None, 4);
    assert_eq!(result.status, JobStatus::Failed);
    assert!(result.error.contains("never verify"), "{}", result.error);
    assert!(result.proof.is_empty());
    assert!(engine.metrics_text().contains("cuzk_proofs_unverified_total 0"));
    engine.shutdown(Duration::from_secs(5));
}
