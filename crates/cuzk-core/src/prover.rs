//! The Groth16 prover on the CPU, as a split API.
//!
//! [`prove_start`] computes the H polynomial and the G1 MSMs and leaves the B
//! G2 MSM running on a thread of its own; [`finish`] joins it and runs the
//! epilogue. A pipeline calls `finish` off the prover worker, so the next
//! partition starts while this one's G2 MSM and epilogue complete.
//!
//! The arithmetic is bellperson's, step for step, so with the same r and s the
//! proof bytes equal bellperson's `create_proof`.

use crate::assignment::{DensityBitmap, ProvingAssignment};
use crate::domain::Domain;
use crate::msm::{dense_msm, structured_msm, ScalarVector, G1, G2};
use crate::params::{ParamsError, ProvingParameters};
use bellperson::groth16::Proof;
use blstrs::{Bls12, G1Projective, G2Projective, Scalar};
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Where the blinding factors r and s come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Randomness {
    /// Fresh values from the operating system's secure RNG (production).
    #[default]
    Secure,
    /// Given values, for reproducible proofs in tests.
    Fixed {
        /// Blinds A.
        r: Scalar,
        /// Blinds B.
        s: Scalar,
    },
}

/// Why a proof could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ProveError {
    /// The assignment is internally inconsistent.
    #[error("invalid proving assignment: {0}")]
    InvalidAssignment(String),
    /// The parameters are unusable for this assignment.
    #[error(transparent)]
    Params(#[from] ParamsError),
    /// More constraints than the field's FFT domains allow.
    #[error("{0} constraints exceed the largest FFT domain (2^32)")]
    DomainTooLarge(usize),
    /// delta is the point at infinity: the parameters are subverted.
    #[error("verifying key has delta at infinity (subverted parameters)")]
    SubvertedParameters,
    /// The B G2 MSM thread could not start or died.
    #[error("B G2 MSM thread failed: {0}")]
    G2Thread(String),
}

/// Wall-clock time of each prover phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProveTimings {
    /// Scalar conversion and classification of the assignment.
    pub prepare: Duration,
    /// FFTs producing the H coefficients.
    pub h_fft: Duration,
    /// H MSM.
    pub h_msm: Duration,
    /// L MSM.
    pub l_msm: Duration,
    /// A MSM (inputs and aux).
    pub a_msm: Duration,
    /// B MSM in G1.
    pub b_g1_msm: Duration,
    /// B MSM in G2 (on its own thread, overlapping the rest).
    pub b_g2_msm: Duration,
    /// Time `finish` waited for the G2 MSM.
    pub g2_wait: Duration,
    /// GPU backend: copying a/b/c to the device (zero on the CPU).
    pub upload: Duration,
    /// GPU backend: waiting for the device lock (zero on the CPU).
    pub lock_wait: Duration,
    /// GPU backend: the whole CUDA region, lock held (zero on the CPU).
    pub gpu_region: Duration,
    /// GPU backend: the G1 sections were streamed from host memory (they
    /// did not stay resident on the device).
    pub streamed: bool,
    /// Combining the pieces into A, B, C.
    pub epilogue: Duration,
}

/// A proof whose G1 work is done and whose B G2 MSM may still be running.
#[derive(Debug)]
pub struct PendingProof {
    params: Arc<ProvingParameters>,
    r: Scalar,
    s: Scalar,
    h: G1Projective,
    l: G1Projective,
    a: G1Projective,
    b_g1: G1Projective,
    b_g2: JoinHandle<(G2Projective, Duration)>,
    timings: ProveTimings,
}

/// The witness in the form the MSMs read, shared with the G2 thread.
#[derive(Debug)]
pub(crate) struct Witness {
    pub(crate) inputs: ScalarVector,
    pub(crate) aux: ScalarVector,
    pub(crate) a_aux_density: DensityBitmap,
    pub(crate) b_input_density: DensityBitmap,
    pub(crate) b_aux_density: DensityBitmap,
}

/// Checks everything a backend needs before it starts, and draws r and s.
pub(crate) fn preflight(
    assignment: &ProvingAssignment,
    params: &ProvingParameters,
    randomness: Randomness,
) -> Result<(Domain, Scalar, Scalar), ProveError> {
    assignment.validate().map_err(ProveError::InvalidAssignment)?;
    params.check_fits(assignment)?;
    let domain = Domain::for_size(assignment.num_constraints())
        .ok_or(ProveError::DomainTooLarge(assignment.num_constraints()))?;
    let vk = &params.vk;
    if bool::from(vk.delta_g1.is_identity() | vk.delta_g2.is_identity()) {
        return Err(ProveError::SubvertedParameters);
    }
    let (r, s) = match randomness {
        Randomness::Secure => {
            let mut rng = rand::rngs::OsRng;
            (Scalar::random(&mut rng), Scalar::random(&mut rng))
        }
        Randomness::Fixed { r, s } => (r, s),
    };
    Ok((domain, r, s))
}

/// Starts the B G2 MSM on a thread of its own (on the CPU for every backend).
pub(crate) fn spawn_b_g2(
    params: &Arc<ProvingParameters>,
    witness: &Arc<Witness>,
) -> Result<JoinHandle<(G2Projective, Duration)>, ProveError> {
    let params = Arc::clone(params);
    let witness = Arc::clone(witness);
    std::thread::Builder::new()
        .name("b_g2_msm".into())
        .spawn(move || {
            let started = Instant::now();
            let split = witness.b_input_density.count_ones();
            let sum =
                structured_msm::<G2>(
                    &params.b_g2[..split],
                    &witness.inputs,
                    Some(&witness.b_input_density),
                ) + structured_msm::<G2>(&params.b_g2[split..], &witness.aux, Some(&witness.b_aux_density));
            (sum, started.elapsed())
        })
        .map_err(|e| ProveError::G2Thread(e.to_string()))
}

impl PendingProof {
    /// Assembles a pending proof from a backend's MSM results.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn from_parts(
        params: &Arc<ProvingParameters>,
        r: Scalar,
        s: Scalar,
        h: G1Projective,
        l: G1Projective,
        a: G1Projective,
        b_g1: G1Projective,
        b_g2: JoinHandle<(G2Projective, Duration)>,
        timings: ProveTimings,
    ) -> Self {
        Self {
            params: Arc::clone(params),
            r,
            s,
            h,
            l,
            a,
            b_g1,
            b_g2,
            timings,
        }
    }
}

/// Starts a proof: validates, computes H and the G1 MSMs, and starts the B
/// G2 MSM. The assignment's a/b/c vectors are freed before this returns.
pub fn prove_start(
    assignment: ProvingAssignment,
    params: &Arc<ProvingParameters>,
    randomness: Randomness,
) -> Result<PendingProof, ProveError> {
    let (domain, r, s) = preflight(&assignment, params, randomness)?;
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
    let witness = Arc::new(Witness {
        inputs,
        aux,
        a_aux_density,
        b_input_density,
        b_aux_density,
    });
    timings.prepare = started.elapsed();
    let b_g2 = spawn_b_g2(params, &witness)?;

    let timed = |slot: &mut Duration, f: &mut dyn FnMut() -> G1Projective| {
        let started = Instant::now();
        let out = f();
        *slot = started.elapsed();
        out
    };

    let started = Instant::now();
    let h_coeffs = domain.h_coefficients(a, b, c);
    timings.h_fft = started.elapsed();
    let h = timed(&mut timings.h_msm, &mut || dense_msm::<G1>(&params.h, &h_coeffs));
    drop(h_coeffs);

    let w = &witness;
    let l = timed(&mut timings.l_msm, &mut || {
        structured_msm::<G1>(&params.l, &w.aux, None)
    });
    let (a_inputs, b_inputs) = input_msms(params, w);
    let num_inputs = w.inputs.len();
    let a = timed(&mut timings.a_msm, &mut || {
        a_inputs + structured_msm::<G1>(&params.a[num_inputs..], &w.aux, Some(&w.a_aux_density))
    });
    let split = w.b_input_density.count_ones();
    let b_g1 = timed(&mut timings.b_g1_msm, &mut || {
        b_inputs + structured_msm::<G1>(&params.b_g1[split..], &w.aux, Some(&w.b_aux_density))
    });
    Ok(PendingProof::from_parts(
        params, r, s, h, l, a, b_g1, b_g2, timings,
    ))
}

/// The A and B_G1 MSMs over the public inputs: a handful of points, done on
/// the CPU by every backend.
pub(crate) fn input_msms(params: &ProvingParameters, w: &Witness) -> (G1Projective, G1Projective) {
    let num_inputs = w.inputs.len();
    let split = w.b_input_density.count_ones();
    (
        structured_msm::<G1>(&params.a[..num_inputs], &w.inputs, None),
        structured_msm::<G1>(&params.b_g1[..split], &w.inputs, Some(&w.b_input_density)),
    )
}

impl PendingProof {
    /// Phase times so far (the G2 and epilogue fields fill in at `finish`).
    pub fn timings(&self) -> &ProveTimings {
        &self.timings
    }
}

/// Joins the B G2 MSM and assembles the proof from the MSM results a, b1, b2,
/// h, l: A = alpha + a + r*delta, B = beta + b2 + s*delta,
/// C = s*a + r*b1 + r*s*delta + s*alpha + r*beta + h + l.
pub fn finish(pending: PendingProof) -> Result<(Proof<Bls12>, ProveTimings), ProveError> {
    let PendingProof {
        params,
        r,
        s,
        h,
        l,
        a,
        b_g1,
        b_g2,
        mut timings,
    } = pending;
    let waited = Instant::now();
    let (b_g2, g2_time) = b_g2
        .join()
        .map_err(|_| ProveError::G2Thread("the thread panicked".into()))?;
    timings.g2_wait = waited.elapsed();
    timings.b_g2_msm = g2_time;

    let started = Instant::now();
    let vk = &params.vk;
    let g_a = vk.delta_g1 * r + vk.alpha_g1 + a;
    let g_b = vk.delta_g2 * s + vk.beta_g2 + b_g2;
    let g_c = a * s + b_g1 * r + vk.delta_g1 * (r * s) + vk.alpha_g1 * s + vk.beta_g1 * r + h + l;
    let proof = Proof {
        a: g_a.to_affine(),
        b: g_b.to_affine(),
        c: g_c.to_affine(),
    };
    timings.epilogue = started.elapsed();
    Ok((proof, timings))
}

/// `prove_start` then `finish`, for callers that do not pipeline.
pub fn prove(
    assignment: ProvingAssignment,
    params: &Arc<ProvingParameters>,
    randomness: Randomness,
) -> Result<(Proof<Bls12>, ProveTimings), ProveError> {
    finish(prove_start(assignment, params, randomness)?)
}

/// Size of a compressed Groth16 proof.
pub const PROOF_BYTES: usize = 192;

/// The standard 192-byte compressed encoding (bellperson's `Proof::write`).
pub fn proof_to_bytes(proof: &Proof<Bls12>) -> [u8; PROOF_BYTES] {
    let mut out = [0u8; PROOF_BYTES];
    out[..48].copy_from_slice(&proof.a.to_compressed());
    out[48..144].copy_from_slice(&proof.b.to_compressed());
    out[144..].copy_from_slice(&proof.c.to_compressed());
    out
}
