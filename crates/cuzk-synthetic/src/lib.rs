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

use cuzk_core::{ParameterCache, ParameterRecipe, PlanError, PlanSource, ProofPlan, ProofRequest};

/// `registered_proof` value reserved for cuzk's synthetic circuit. It lies
/// far outside the Go ABI's RegisteredSealProof / RegisteredPoStProof values.
pub const SYNTHETIC_REGISTERED_PROOF: u64 = 9000;

/// The plan source of synthetic and shaped requests, with the directory
/// their generated parameters are cached in.
#[derive(Debug)]
pub struct SyntheticPlans {
    cache: ParameterCache,
}

impl SyntheticPlans {
    /// A source whose parameters live in `cache`.
    pub fn new(cache: ParameterCache) -> Self {
        Self { cache }
    }
}

impl PlanSource for SyntheticPlans {
    fn name(&self) -> &'static str {
        "synthetic"
    }

    fn plan(&self, request: &ProofRequest) -> Option<Result<Box<dyn ProofPlan>, PlanError>> {
        (request.registered_proof == SYNTHETIC_REGISTERED_PROOF).then(|| plans::plan_for(request))
    }

    fn parameters(&self, circuit_id: &str) -> Option<Result<Box<dyn ParameterRecipe>, PlanError>> {
        parameters::recipe(&self.cache, circuit_id)
    }
}
