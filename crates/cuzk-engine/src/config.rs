//! The engine's settings (the daemon's TOML maps onto these).

use std::time::Duration;

/// Engine settings. Which backends prove and which plan sources plan are
/// given to [`crate::Engine::start`] beside these.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Resident parameter bytes above which idle ones are evicted (0 = no limit).
    pub srs_memory_limit: u64,
    /// Parameters unused this long are evicted (`None`: kept until memory
    /// pressure or EvictSRS). Long enough by default that a circuit used
    /// every WindowPoSt deadline (30 min) stays resident.
    pub srs_idle_evict: Option<Duration>,
    /// Circuit ids loaded at start.
    pub preload: Vec<String>,
    /// Synthesis threads.
    pub partition_workers: usize,
    /// Synthesis workers that compute at once (sequential slots, each one
    /// core beside rayon's pool: see `cuzk_core::cores`); the others wait
    /// for a slot, highest priority first. 0: as many as `partition_workers`.
    pub sequential_slots: usize,
    /// Prover workers per backend: more than one lets a backend's host-side
    /// work (preparation, input MSMs) overlap another partition's device work.
    pub workers_per_backend: usize,
    /// How long a device that failed a partition receives no work, when
    /// another device can take it (the partition is synthesised again for
    /// that one). With one device, a failure fails its job.
    pub device_quarantine: Duration,
    /// Synthesised partitions that may wait for a prover.
    pub max_prover_queue_depth: usize,
    /// Bytes granted to partitions in flight.
    pub memory_budget: u64,
    /// Bytes of `memory_budget` that only PoSt partitions (High priority
    /// and above) may be granted, so PoRep partitions in flight never hold
    /// the memory a WindowPoSt or WinningPoSt needs.
    pub post_reserve: u64,
    /// How long finished results are kept.
    pub result_ttl: Duration,
    /// How many finished results are kept at most.
    pub result_capacity: usize,
    /// Jobs queued or running at most; submissions beyond are refused
    /// (RESOURCE_EXHAUSTED) rather than queued without bound.
    pub max_queued_jobs: usize,
    /// Synthesise only the witness of partitions with a compiled R1CS when
    /// every backend computes a, b, c itself (the GPU: on the device), so
    /// a partition holds a third of the memory in flight. Off: every
    /// partition is synthesised in full on the host.
    pub witness_only: bool,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            srs_memory_limit: 0,
            srs_idle_evict: Some(Duration::from_secs(2 * 3600)),
            preload: Vec::new(),
            partition_workers: 2,
            sequential_slots: 0,
            workers_per_backend: 2,
            device_quarantine: Duration::from_secs(60),
            max_prover_queue_depth: 1,
            memory_budget: 4 << 30,
            post_reserve: 0,
            result_ttl: Duration::from_secs(600),
            result_capacity: 10_000,
            max_queued_jobs: 1_000,
            witness_only: true,
        }
    }
}
