//! A backend with a second one for what it declines.

use super::{BackendError, BackendStatus, ProverBackend, ProverInput};
use crate::groth16::{PendingProof, ProveError};
use crate::params::ProvingParameters;
use crate::r1cs::CompiledR1cs;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Proves on `primary`; a partition the primary declines (too small for a
/// GPU, does not fit its memory, a device error before the input was
/// consumed) goes to `secondary`, with a log line. Errors that are not
/// declines (bad input) are not retried: no backend would do better.
#[derive(Debug)]
pub struct Fallback {
    primary: Arc<dyn ProverBackend>,
    secondary: Arc<dyn ProverBackend>,
    declined: AtomicU64,
}

impl Fallback {
    /// `primary`, falling back to `secondary`.
    pub fn new(primary: Arc<dyn ProverBackend>, secondary: Arc<dyn ProverBackend>) -> Self {
        Self {
            primary,
            secondary,
            declined: AtomicU64::new(0),
        }
    }

    /// Partitions the primary declined so far.
    pub fn declined(&self) -> u64 {
        self.declined.load(Ordering::Relaxed)
    }
}

impl ProverBackend for Fallback {
    fn name(&self) -> String {
        self.primary.name()
    }

    fn status(&self) -> BackendStatus {
        self.primary.status()
    }

    /// The primary's: what it declines, the secondary takes in any form.
    fn takes_witness(&self) -> bool {
        self.primary.takes_witness()
    }

    /// The primary's: the secondary is there for what the primary
    /// declines, and holds nothing until then.
    fn prepare(
        &self,
        params: &Arc<ProvingParameters>,
        r1cs: Option<&Arc<CompiledR1cs>>,
    ) -> Result<Option<String>, ProveError> {
        self.primary.prepare(params, r1cs)
    }

    fn prove_start(&self, input: ProverInput) -> Result<PendingProof, BackendError> {
        match self.primary.prove_start(input) {
            Err(BackendError::Declined {
                backend,
                reason,
                input,
            }) => {
                self.declined.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(
                    %backend,
                    %reason,
                    fallback = %self.secondary.name(),
                    "backend declined a partition; proving it on the fallback"
                );
                self.secondary.prove_start(*input)
            }
            other => other,
        }
    }
}
