//! Benchmark-only proof plans: cuzk's synthetic PoRep-shaped circuit (its
//! proofs verify) and shaped witnesses (full-size partitions generated
//! without a circuit; their proofs cannot verify). Requests name them with
//! the reserved [`SYNTHETIC_REGISTERED_PROOF`] and a JSON [`SyntheticSpec`]
//! in `vanilla_proof`; [`SyntheticPlans`] is their plan source, and
//! generates their parameters on first use.
//!
//! - [`spec`]: the request's JSON spec and its bounds.
//! - [`plans`]: [`SyntheticPlan`] and [`ShapedPlan`].
//! - [`parameters`]: the generated parameter files.

pub mod parameters;
pub mod plans;
pub mod spec;

pub use plans::{ShapedPlan, SyntheticPlan};
pub use spec::{
    SyntheticSpec, WitnessSource, MAX_SYNTHETIC_CONSTRAINTS, MAX_SYNTHETIC_INPUTS, MAX_SYNTHETIC_PARTITIONS,
};

use cuzk_core::{ParameterCache, ParameterRecipe, PlanError, PlanSource, ProofPlan, ProofRequest, R1csCache};
use std::sync::Arc;

/// `registered_proof` value reserved for cuzk's synthetic circuit. It lies
/// far outside the Go ABI's RegisteredSealProof / RegisteredPoStProof values.
pub const SYNTHETIC_REGISTERED_PROOF: u64 = 9000;

/// The plan source of synthetic and shaped requests, with the directory
/// their generated parameters are cached in.
#[derive(Debug)]
pub struct SyntheticPlans {
    cache: ParameterCache,
    r1cs: Arc<R1csCache>,
}

impl SyntheticPlans {
    /// A source whose parameters live in `cache`, its plans' compiled R1CS
    /// in a cache of its own.
    pub fn new(cache: ParameterCache) -> Self {
        Self {
            cache,
            r1cs: Arc::default(),
        }
    }

    /// Its plans' compiled R1CS kept in `r1cs` (shared with other sources).
    pub fn with_r1cs_cache(self, r1cs: Arc<R1csCache>) -> Self {
        Self { r1cs, ..self }
    }
}

impl PlanSource for SyntheticPlans {
    fn name(&self) -> &'static str {
        "synthetic"
    }

    fn plan(&self, request: &ProofRequest) -> Option<Result<Box<dyn ProofPlan>, PlanError>> {
        (request.registered_proof == SYNTHETIC_REGISTERED_PROOF).then(|| plans::plan_for(request, &self.r1cs))
    }

    fn parameters(&self, circuit_id: &str) -> Option<Result<Box<dyn ParameterRecipe>, PlanError>> {
        parameters::recipe(&self.cache, circuit_id)
    }

    fn r1cs_cache(&self) -> Option<Arc<R1csCache>> {
        Some(Arc::clone(&self.r1cs))
    }
}
