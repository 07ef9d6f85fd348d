//! The plan sources the engine was given, asked in order: the first that
//! claims a request plans it, the first that knows a circuit id says how
//! its parameters are obtained.

use crate::EngineError;
use cuzk_core::{ParameterRecipe, PlanError, PlanSource, Prepared, ProofPlan, ProofRequest};
use std::sync::Arc;

/// The engine's plan sources.
#[derive(Debug)]
pub(crate) struct PlanSources(Vec<Arc<dyn PlanSource>>);

impl PlanSources {
    pub(crate) fn new(sources: Vec<Arc<dyn PlanSource>>) -> Self {
        Self(sources)
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
