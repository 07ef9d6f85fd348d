//! The plan sources the engine was given, asked in order: the first that
//! claims a request plans it, the first that knows a circuit id says how
//! its parameters are obtained.

use crate::EngineError;
use cuzk_core::{
    CachedR1cs, ParameterRecipe, PlanError, PlanSource, Prepared, ProofPlan, ProofRequest, R1csCache,
};
use std::sync::Arc;
use std::time::Duration;

/// The engine's plan sources, and the R1CS caches their plans keep their
/// compiled R1CS in ([`PlanSource::r1cs_cache`]; sources may share one).
#[derive(Debug)]
pub(crate) struct PlanSources(Vec<Arc<dyn PlanSource>>, Vec<Arc<R1csCache>>);

impl PlanSources {
    pub(crate) fn new(sources: Vec<Arc<dyn PlanSource>>) -> Self {
        let mut caches: Vec<Arc<R1csCache>> = Vec::new();
        for cache in sources.iter().filter_map(|source| source.r1cs_cache()) {
            if !caches.iter().any(|known| Arc::ptr_eq(known, &cache)) {
                caches.push(cache);
            }
        }
        Self(sources, caches)
    }

    /// Host bytes of the compiled R1CS the sources' caches hold.
    pub(crate) fn r1cs_bytes(&self) -> u64 {
        self.1.iter().map(|cache| cache.memory_bytes()).sum()
    }

    /// Every compiled R1CS held, by circuit id.
    pub(crate) fn r1cs_snapshot(&self) -> Vec<CachedR1cs> {
        let mut all: Vec<CachedR1cs> = self.1.iter().flat_map(|cache| cache.snapshot()).collect();
        all.sort_by(|a, b| a.circuit_id.cmp(&b.circuit_id));
        all
    }

    /// Drops `circuit_id`'s compiled R1CS from every cache; the bytes freed.
    pub(crate) fn evict_r1cs(&self, circuit_id: &str) -> u64 {
        self.1.iter().map(|cache| cache.evict(circuit_id)).sum()
    }

    /// Drops every compiled R1CS unused for `idle`.
    pub(crate) fn evict_idle_r1cs(&self, idle: Duration) {
        for cache in &self.1 {
            cache.evict_idle(idle);
        }
    }

    /// Every source's event counts ([`PlanSource::counters`]), with its name.
    pub(crate) fn counters(&self) -> Vec<(&'static str, &'static str, u64)> {
        self.0
            .iter()
            .flat_map(|source| {
                let name = source.name();
                source
                    .counters()
                    .into_iter()
                    .map(move |(event, n)| (name, event, n))
            })
            .collect()
    }

    /// Host bytes the sources keep between partitions ([`PlanSource::held_bytes`]).
    pub(crate) fn held_bytes(&self) -> u64 {
        self.0.iter().map(|source| source.held_bytes()).sum()
    }

    /// Frees what the sources kept unused for `idle` ([`PlanSource::release`]);
    /// the bytes freed.
    pub(crate) fn release(&self, idle: Duration) -> u64 {
        self.0.iter().map(|source| source.release(idle)).sum()
    }

    /// The plan of `request`, from the first source that claims it.
    pub(crate) fn plan(&self, request: &ProofRequest) -> Result<Box<dyn ProofPlan>, EngineError> {
        self.0
            .iter()
            .find_map(|source| source.plan(request))
            .unwrap_or_else(|| {
                Err(PlanError::Unsupported(format!(
                    "no plan source serves {:?} with registered proof {}",
                    request.kind, request.registered_proof
                )))
            })
            .map_err(EngineError::from)
    }

    /// Prepares what the sources keep of `circuit_id` besides its
    /// parameters ([`PlanSource::prepare`]); `None` when no source keeps
    /// anything for it.
    pub(crate) fn prepare(&self, circuit_id: &str) -> Option<Result<Prepared, PlanError>> {
        self.0.iter().find_map(|source| source.prepare(circuit_id))
    }

    /// How `circuit_id`'s parameters are obtained.
    pub(crate) fn parameters(&self, circuit_id: &str) -> Result<Box<dyn ParameterRecipe>, EngineError> {
        self.0
            .iter()
            .find_map(|source| source.parameters(circuit_id))
            .unwrap_or_else(|| {
                Err(PlanError::InvalidArgument(format!(
                    "unknown circuit id {:?}",
                    circuit_id.chars().take(80).collect::<String>()
                )))
            })
            .map_err(EngineError::from)
    }
}
