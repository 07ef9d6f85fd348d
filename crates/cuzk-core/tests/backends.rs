//! The backend combinators on the CPU (runs everywhere): the dual backend
//! passes equal proofs and catches unequal ones; the fallback takes what a
//! backend declines.

mod common;

use cuzk_core::backend::{prove_with, BackendStatus, Dual, Fallback};
use cuzk_core::{
    proof_to_bytes, BackendError, CpuBackend, PendingProof, ProveError, ProverBackend, ProverInput,
    Randomness, Scalar, Verifier,
};
use std::sync::Arc;

/// A backend that proves on the CPU and then flips the proof's A to -A: a
/// wrong proof of the right shape, as a broken device might give.
#[derive(Debug)]
struct Corrupting;

impl ProverBackend for Corrupting {
    fn name(&self) -> String {
        "corrupting".into()
    }
    fn status(&self) -> BackendStatus {
        BackendStatus {
            name: self.name(),
            ..CpuBackend.status()
        }
    }
    fn prove_start(&self, input: ProverInput) -> Result<PendingProof, BackendError> {
        let (mut proof, timings) = cuzk_core::finish(CpuBackend.prove_start(input)?)?;
        proof.a = -proof.a;
        Ok(PendingProof::completed(proof, timings))
    }
}

/// Declines everything.
#[derive(Debug)]
struct Declining;

impl ProverBackend for Declining {
    fn name(&self) -> String {
        "declining".into()
    }
    fn status(&self) -> BackendStatus {
        Corrupting.status()
    }
    fn prove_start(&self, input: ProverInput) -> Result<PendingProof, BackendError> {
        Err(BackendError::Declined {
            backend: self.name(),
            reason: "test".into(),
            input: Box::new(input),
        })
    }
}

fn input(seed: u64, randomness: Randomness) -> (ProverInput, Vec<Scalar>, Arc<cuzk_core::ProvingParameters>) {
    let (circuit, params) = common::circuit_and_params(1 << 8, vec![Scalar::from(3u64)], seed);
    let assignment = cuzk_core::synthesize(circuit.clone(), circuit.size_hint()).unwrap();
    let inputs = circuit.public_inputs().to_vec();
    (
        ProverInput::evaluated(assignment, &params, randomness),
        inputs,
        params,
    )
}

#[test]
fn dual_of_two_equal_backends_gives_a_verifying_proof() {
    let (input, public, params) = input(1, Randomness::Secure);
    let dual = Dual::new(Arc::new(CpuBackend), Arc::new(CpuBackend));
    let (proof, _) = prove_with(&dual, input).unwrap();
    assert!(Verifier::new(&params.vk).verify(&proof, &public).unwrap());
}

#[test]
fn dual_catches_a_backend_that_disagrees() {
    let (input, _, _) = input(2, Randomness::Secure);
    let dual = Dual::new(Arc::new(CpuBackend), Arc::new(Corrupting));
    match prove_with(&dual, input) {
        Err(ProveError::Mismatch(m)) => assert!(m.contains("corrupting"), "{m}"),
        other => panic!("expected a mismatch, got {other:?}"),
    }
}

#[test]
fn dual_declines_when_its_first_backend_declines_and_gives_the_input_back() {
    let r = Scalar::from(5u64);
    let (input, _, _) = input(3, Randomness::Fixed { r, s: r });
    let dual = Dual::new(Arc::new(Declining), Arc::new(CpuBackend));
    match dual.prove_start(input) {
        Err(BackendError::Declined { input, .. }) => {
            assert_eq!(input.randomness, Randomness::Fixed { r, s: r });
        }
        other => panic!("expected a decline, got {other:?}"),
    }
}

#[test]
fn fallback_proves_what_the_primary_declines_with_the_same_bytes() {
    let (r, s) = (Scalar::from(11u64), Scalar::from(13u64));
    let fixed = Randomness::Fixed { r, s };
    let (first, _, _) = input(4, fixed);
    let (second, public, params) = input(4, fixed);
    let fallback = Fallback::new(Arc::new(Declining), Arc::new(CpuBackend));
    let (via_fallback, _) = prove_with(&fallback, first).unwrap();
    let (direct, _) = prove_with(&CpuBackend, second).unwrap();
    assert_eq!(proof_to_bytes(&via_fallback), proof_to_bytes(&direct));
    assert!(Verifier::new(&params.vk).verify(&via_fallback, &public).unwrap());
    assert_eq!(fallback.declined(), 1);
}

/// Issue 13: a witness-only partition on the CPU backend (a, b, c computed
/// on the host from the compiled R1CS) gives the proof bytes of its
/// evaluated assignment, for the same r, s, and times that step.
#[test]
fn a_witness_only_partition_proves_like_its_evaluated_assignment() {
    use cuzk_core::{CompiledR1cs, PartitionData, PartitionWitness, SyntheticCircuit};
    let circuit = SyntheticCircuit::new(3000, vec![Scalar::from(4u64)], 8).unwrap();
    let r1cs = Arc::new(CompiledR1cs::record(circuit.clone()).unwrap());
    let witness = r1cs.witness(circuit).unwrap();
    let assignment = r1cs.assign(witness.clone()).unwrap();
    let params = Arc::new(cuzk_core::shaped::shaped_parameters(&assignment, 9));
    let fixed = Randomness::Fixed {
        r: Scalar::from(10u64),
        s: Scalar::from(11u64),
    };
    let (evaluated, _) = prove_with(&CpuBackend, ProverInput::evaluated(assignment, &params, fixed)).unwrap();
    let input = ProverInput {
        data: PartitionData::Witness(PartitionWitness { r1cs, witness }),
        params: Arc::clone(&params),
        randomness: fixed,
        priority: cuzk_core::Priority::Normal,
    };
    let (from_witness, timings) = prove_with(&CpuBackend, input).unwrap();
    assert_eq!(proof_to_bytes(&from_witness), proof_to_bytes(&evaluated));
    assert!(!timings.abc.is_zero() && !timings.abc_on_device);
}
