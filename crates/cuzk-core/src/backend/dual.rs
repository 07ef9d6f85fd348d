//! Two backends on the same partition, checked against each other.

use super::{BackendError, BackendKind, BackendStatus, PartitionData, ProverBackend, ProverInput};
use crate::groth16::{finish, proof_to_bytes, PendingProof, ProveError, Randomness};
use crate::params::ProvingParameters;
use crate::r1cs::CompiledR1cs;
use std::sync::Arc;

/// Proves every partition on both backends with the same r, s (drawn once
/// when the input asks for secure randomness) and fails unless the proofs
/// are byte-equal; returns the first backend's. Costs both backends' time
/// and a copy of the partition: for tests and audits, not production.
#[derive(Debug)]
pub struct Dual {
    first: Arc<dyn ProverBackend>,
    second: Arc<dyn ProverBackend>,
}

impl Dual {
    /// `first` checked against `second`.
    pub fn new(first: Arc<dyn ProverBackend>, second: Arc<dyn ProverBackend>) -> Self {
        Self { first, second }
    }
}

impl ProverBackend for Dual {
    fn name(&self) -> String {
        format!("dual({}, {})", self.first.name(), self.second.name())
    }

    fn status(&self) -> BackendStatus {
        let first = self.first.status();
        BackendStatus {
            name: self.name(),
            kind: match (first.kind, self.second.status().kind) {
                (BackendKind::Cpu, BackendKind::Cpu) => BackendKind::Cpu,
                _ => BackendKind::Gpu,
            },
            ..first
        }
    }

    fn prepare(
        &self,
        params: &Arc<ProvingParameters>,
        r1cs: Option<&Arc<CompiledR1cs>>,
    ) -> Result<Option<String>, ProveError> {
        let said: Vec<String> = [
            self.first.prepare(params, r1cs)?,
            self.second.prepare(params, r1cs)?,
        ]
        .into_iter()
        .flatten()
        .collect();
        Ok((!said.is_empty()).then(|| said.join("; ")))
    }

    fn prove_start(&self, input: ProverInput) -> Result<PendingProof, BackendError> {
        let (r, s) = input.randomness.draw();
        let fixed = Randomness::Fixed { r, s };
        let copy = ProverInput {
            data: match &input.data {
                PartitionData::Evaluated(assignment) => PartitionData::Evaluated(assignment.clone()),
                PartitionData::Witness(witness) => PartitionData::Witness(witness.clone()),
            },
            params: Arc::clone(&input.params),
            randomness: fixed,
            priority: input.priority,
        };
        let original = ProverInput {
            randomness: fixed,
            ..input
        };
        // The first backend gets the copy, so that if it declines, the
        // original goes back to the caller untouched.
        let first = match self.first.prove_start(copy) {
            Ok(pending) => finish(pending)?,
            Err(BackendError::Declined { backend, reason, .. }) => {
                return Err(BackendError::Declined {
                    backend,
                    reason,
                    input: Box::new(ProverInput {
                        randomness: input.randomness,
                        ..original
                    }),
                })
            }
            Err(e) => return Err(e),
        };
        let second = finish(self.second.prove_start(original)?)?;
        let (a, b) = (proof_to_bytes(&first.0), proof_to_bytes(&second.0));
        if a != b {
            return Err(BackendError::Failed(ProveError::Mismatch(format!(
                "{} and {} gave different proofs for the same input and r, s",
                self.first.name(),
                self.second.name()
            ))));
        }
        Ok(PendingProof::completed(first.0, first.1))
    }
}
