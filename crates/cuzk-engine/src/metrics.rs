//! Prometheus metrics of the engine.

use cuzk_core::{Priority, ProofKind};
use prometheus::{
    CounterVec, Encoder, Gauge, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};

/// The pipeline stage that failed a job (`jobs_failed_total{reason}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FailureReason {
    /// Its parameters could not be loaded.
    Parameters,
    /// A partition's synthesis failed (or panicked).
    Synthesis,
    /// A partition held more memory than its plan budgeted.
    Budget,
    /// The prover backend failed.
    Prover,
    /// The B G2 join or the epilogue failed.
    Finish,
    /// The assembled proof did not verify.
    Verification,
}

impl FailureReason {
    pub(crate) const ALL: [FailureReason; 6] = [
        FailureReason::Parameters,
        FailureReason::Synthesis,
        FailureReason::Budget,
        FailureReason::Prover,
        FailureReason::Finish,
        FailureReason::Verification,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            FailureReason::Parameters => "parameters",
            FailureReason::Synthesis => "synthesis",
            FailureReason::Budget => "budget",
            FailureReason::Prover => "prover",
            FailureReason::Finish => "finish",
            FailureReason::Verification => "verification",
        }
    }
}

/// The final statuses `jobs_finished_total` counts.
pub(crate) const FINAL_STATUSES: [&str; 4] = ["completed", "failed", "cancelled", "timeout"];

/// The engine's metrics, registered in their own registry.
#[derive(Debug, Clone)]
pub struct Metrics {
    registry: Registry,
    pub(crate) submitted: IntCounterVec,
    pub(crate) finished: IntCounterVec,
    pub(crate) failed: IntCounterVec,
    pub(crate) jobs_queued: IntGaugeVec,
    pub(crate) srs_bytes: IntGaugeVec,
    pub(crate) device_failures: IntCounterVec,
    pub(crate) device_in_service: IntGaugeVec,
    pub(crate) device_memory: IntGaugeVec,
    pub(crate) job_seconds: HistogramVec,
    pub(crate) phase_seconds: HistogramVec,
    pub(crate) gpu_busy_seconds: CounterVec,
    pub(crate) budget_bytes: IntGauge,
    pub(crate) budget_used_bytes: IntGauge,
    pub(crate) r1cs_bytes: IntGauge,
    pub(crate) spare_witness_bytes: IntGauge,
    pub(crate) unverified: IntCounter,
    pub(crate) dispatch_queue: IntGauge,
    pub(crate) prover_queue: IntGauge,
    pub(crate) srs_resident_bytes: IntGauge,
    pub(crate) uptime_seconds: Gauge,
    pub(crate) source_events: IntCounterVec,
}

impl Metrics {
    pub(crate) fn new() -> Self {
        let registry = Registry::new_custom(Some("cuzk".into()), None).expect("static prefix");
        let buckets = vec![
            0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
        ];
        let submitted =
            IntCounterVec::new(Opts::new("jobs_submitted_total", "Jobs accepted"), &["kind"]).unwrap();
        let finished = IntCounterVec::new(
            Opts::new("jobs_finished_total", "Jobs that reached a final status"),
            &["kind", "status"],
        )
        .unwrap();
        let failed = IntCounterVec::new(
            Opts::new(
                "jobs_failed_total",
                "Jobs that failed, by the stage that failed them",
            ),
            &["kind", "reason"],
        )
        .unwrap();
        let jobs_queued = IntGaugeVec::new(
            Opts::new(
                "jobs_queued",
                "Jobs accepted and not final: pending (no partition started) or running",
            ),
            &["priority", "state"],
        )
        .unwrap();
        let srs_bytes = IntGaugeVec::new(
            Opts::new(
                "srs_bytes",
                "Bytes of each circuit's parameters, by tier (hot, warm, cold)",
            ),
            &["circuit_id", "tier"],
        )
        .unwrap();
        let device_failures = IntCounterVec::new(
            Opts::new("device_failures_total", "Partitions each prover device failed"),
            &["device"],
        )
        .unwrap();
        let device_in_service = IntGaugeVec::new(
            Opts::new(
                "device_in_service",
                "1 while a prover device takes work, 0 during a quarantine after a failure",
            ),
            &["device"],
        )
        .unwrap();
        let device_memory = IntGaugeVec::new(
            Opts::new(
                "device_memory_bytes",
                "Each prover device's own memory, total and free (GPUs; the CPU reports none)",
            ),
            &["device", "state"],
        )
        .unwrap();
        let job_seconds = HistogramVec::new(
            HistogramOpts::new("job_duration_seconds", "Submission to final status").buckets(buckets.clone()),
            &["kind"],
        )
        .unwrap();
        let phase_seconds = HistogramVec::new(
            HistogramOpts::new("partition_phase_seconds", "Per-partition pipeline phases").buckets(buckets),
            &["phase"],
        )
        .unwrap();
        let gpu_busy_seconds = CounterVec::new(
            Opts::new(
                "gpu_busy_seconds_total",
                "Seconds each GPU spent in CUDA regions (its busy time; divide by wall time for the busy fraction)",
            ),
            &["device"],
        )
        .unwrap();
        let gauge = |name: &str, help: &str| IntGauge::new(name, help).unwrap();
        let metrics = Self {
            submitted,
            finished,
            failed,
            jobs_queued,
            srs_bytes,
            device_failures,
            device_in_service,
            device_memory,
            job_seconds,
            phase_seconds,
            gpu_busy_seconds,
            budget_bytes: gauge("memory_budget_bytes", "Memory budget for partitions in flight"),
            budget_used_bytes: gauge(
                "memory_budget_used_bytes",
                "Memory granted to partitions in flight",
            ),
            dispatch_queue: gauge("dispatch_queue_partitions", "Partitions waiting for synthesis"),
            prover_queue: gauge(
                "prover_queue_partitions",
                "Synthesised partitions waiting for a prover",
            ),
            srs_resident_bytes: gauge("srs_resident_bytes", "Bytes of resident parameters"),
            unverified: IntCounter::new(
                "proofs_unverified_total",
                "Benchmark proofs reported without verification (allow_unverifiable)",
            )
            .unwrap(),
            r1cs_bytes: gauge(
                "compiled_r1cs_bytes",
                "Host bytes of compiled R1CS held (counted by the memory budget)",
            ),
            spare_witness_bytes: gauge(
                "spare_witness_bytes",
                "Host bytes of spare witness vectors the plan sources keep between partitions (counted by the memory budget)",
            ),
            uptime_seconds: Gauge::new("uptime_seconds", "Seconds since the engine started").unwrap(),
            source_events: IntCounterVec::new(
                Opts::new(
                    "plan_source_events_total",
                    "Events a plan source counts (the Filecoin source: native_witness, native_witness_fallback)",
                ),
                &["source", "event"],
            )
            .unwrap(),
            registry,
        };
        let r = &metrics.registry;
        r.register(Box::new(metrics.submitted.clone())).unwrap();
        r.register(Box::new(metrics.finished.clone())).unwrap();
        r.register(Box::new(metrics.failed.clone())).unwrap();
        r.register(Box::new(metrics.jobs_queued.clone())).unwrap();
        r.register(Box::new(metrics.srs_bytes.clone())).unwrap();
        r.register(Box::new(metrics.device_failures.clone())).unwrap();
        r.register(Box::new(metrics.device_in_service.clone())).unwrap();
        r.register(Box::new(metrics.device_memory.clone())).unwrap();
        r.register(Box::new(metrics.job_seconds.clone())).unwrap();
        r.register(Box::new(metrics.phase_seconds.clone())).unwrap();
        r.register(Box::new(metrics.gpu_busy_seconds.clone())).unwrap();
        r.register(Box::new(metrics.budget_bytes.clone())).unwrap();
        r.register(Box::new(metrics.budget_used_bytes.clone())).unwrap();
        r.register(Box::new(metrics.dispatch_queue.clone())).unwrap();
        r.register(Box::new(metrics.prover_queue.clone())).unwrap();
        r.register(Box::new(metrics.srs_resident_bytes.clone())).unwrap();
        r.register(Box::new(metrics.r1cs_bytes.clone())).unwrap();
        r.register(Box::new(metrics.spare_witness_bytes.clone())).unwrap();
        r.register(Box::new(metrics.unverified.clone())).unwrap();
        r.register(Box::new(metrics.uptime_seconds.clone())).unwrap();
        r.register(Box::new(metrics.source_events.clone())).unwrap();
        // Every series exists from the start at 0: Prometheus' rate() and
        // increase() miss a series' first increment, so the first failure
        // of a kind would otherwise not show on a dashboard.
        for kind in ProofKind::ALL {
            metrics.submitted.with_label_values(&[kind.name()]);
            for status in FINAL_STATUSES {
                metrics.finished.with_label_values(&[kind.name(), status]);
            }
            for reason in FailureReason::ALL {
                metrics.failed.with_label_values(&[kind.name(), reason.name()]);
            }
        }
        metrics
    }

    /// Jobs not final by priority and state, from (priority, started) pairs.
    pub(crate) fn set_jobs_queued(&self, jobs: impl Iterator<Item = (Priority, bool)>) {
        let mut counts = std::collections::HashMap::new();
        for key in jobs {
            *counts.entry(key).or_insert(0i64) += 1;
        }
        for priority in Priority::ALL {
            for (started, state) in [(false, "pending"), (true, "running")] {
                let n = counts.get(&(priority, started)).copied().unwrap_or(0);
                self.jobs_queued
                    .with_label_values(&[priority.name(), state])
                    .set(n);
            }
        }
    }

    /// Prometheus text exposition format.
    pub(crate) fn render(&self) -> String {
        let mut out = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut out)
            .expect("text encoding to memory cannot fail");
        String::from_utf8(out).expect("prometheus text is UTF-8")
    }
}
