//! The CPU backend: H by radix-2 FFTs and every MSM on blst, on the host's
//! cores. It accepts every partition, so it is what other backends fall
//! back to.

use super::{BackendError, BackendKind, BackendStatus, ProverBackend, ProverInput};
use crate::assignment::ProvingAssignment;
use crate::groth16::{AuxMsms, Frame, MsmWitness, PendingProof, ProveError, ProveTimings, Randomness};
use crate::msm::{dense_msm, structured_msm, ScalarVector, G1};
use crate::params::ProvingParameters;
use blstrs::G1Projective;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Proves on the host's cores (blst's MSMs, our FFTs).
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuBackend;

impl ProverBackend for CpuBackend {
    fn name(&self) -> String {
        "CPU".into()
    }

    fn status(&self) -> BackendStatus {
        BackendStatus {
            name: self.name(),
            kind: BackendKind::Cpu,
            ordinal: 0,
            memory_total_bytes: 0,
            memory_free_bytes: 0,
        }
    }

    fn prove_start(&self, input: ProverInput) -> Result<PendingProof, BackendError> {
        // A witness-only partition gets its a, b, c here, on the host.
        let (assignment, abc) = input.data.into_assignment()?;
        let mut pending = prove_start(assignment, &input.params, input.randomness)?;
        pending.timings.abc = abc;
        Ok(pending)
    }
}

/// Starts a proof on the CPU: validates, computes H and the G1 MSMs, and
/// starts the B G2 MSM. The assignment's a/b/c vectors are freed before
/// this returns.
pub fn prove_start(
    assignment: ProvingAssignment,
    params: &Arc<ProvingParameters>,
    randomness: Randomness,
) -> Result<PendingProof, ProveError> {
    let frame = Frame::for_assignment(&assignment, params, randomness)?;
    let mut timings = ProveTimings::default();
    let started = Instant::now();
    let ProvingAssignment {
        a,
        b,
        c,
        input_assignment,
        aux_assignment,
        a_aux_density,
        b_input_density,
        b_aux_density,
    } = assignment;
    let (inputs, aux) = rayon::join(
        || ScalarVector::new(&input_assignment),
        || ScalarVector::new(&aux_assignment),
    );
    drop((input_assignment, aux_assignment));
    let witness = Arc::new(MsmWitness {
        inputs,
        aux,
        a_aux_density,
        b_input_density,
        b_aux_density,
    });
    timings.prepare = started.elapsed();
    let b_g2 = frame.b_g2_on_cpu(&witness)?;

    let timed = |slot: &mut Duration, f: &mut dyn FnMut() -> G1Projective| {
        let started = Instant::now();
        let out = f();
        *slot = started.elapsed();
        out
    };

    let started = Instant::now();
    let h_coeffs = frame.domain().h_coefficients(a, b, c);
    timings.h_fft = started.elapsed();
    let h = timed(&mut timings.h_msm, &mut || dense_msm::<G1>(&params.h, &h_coeffs));
    drop(h_coeffs);

    let w = &witness;
    let l = timed(&mut timings.l_msm, &mut || {
        structured_msm::<G1>(&params.l, &w.aux, None)
    });
    let num_inputs = w.inputs.len();
    let a = timed(&mut timings.a_msm, &mut || {
        structured_msm::<G1>(&params.a[num_inputs..], &w.aux, Some(&w.a_aux_density))
    });
    let split = w.b_inputs();
    let b_g1 = timed(&mut timings.b_g1_msm, &mut || {
        structured_msm::<G1>(&params.b_g1[split..], &w.aux, Some(&w.b_aux_density))
    });
    frame.assemble(&witness, AuxMsms { h, l, a, b_g1, b_g2 }, timings)
}

/// `prove_start` then `finish` on the CPU, for callers that do not pipeline.
pub fn prove(
    assignment: ProvingAssignment,
    params: &Arc<ProvingParameters>,
    randomness: Randomness,
) -> Result<(bellperson::groth16::Proof<crate::Bls12>, ProveTimings), ProveError> {
    crate::finish(prove_start(assignment, params, randomness)?)
}
