//! The backend-independent Groth16 frame: what every prover backend does
//! the same way before and after its own MSMs and FFTs.
//!
//! A backend proves through a [`Frame`]: built for an evaluated assignment
//! or for a witness with its compiled R1CS (the checks against the
//! parameters, r and s drawn), it takes the backend's H and aux MSMs and
//! adds the public inputs' parts and B G2's ([`Frame::assemble`], a
//! [`PendingProof`]); [`finish`] joins the G2 thread and runs the epilogue. The arithmetic is
//! bellperson's, step for step, so with the same r and s every backend's
//! proof bytes equal bellperson's `create_proof`.

use crate::assignment::{DensityBitmap, ProvingAssignment};
use crate::domain::Domain;
use crate::msm::{structured_msm, ScalarVector, G1, G2};
use crate::params::{CircuitCounts, ParamsError, ProvingParameters};
use crate::r1cs::{CompiledR1cs, Witness};
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

impl Randomness {
    /// Concrete r and s: the fixed ones, or fresh secure ones.
    pub fn draw(self) -> (Scalar, Scalar) {
        match self {
            Randomness::Secure => {
                let mut rng = rand::rngs::OsRng;
                (Scalar::random(&mut rng), Scalar::random(&mut rng))
            }
            Randomness::Fixed { r, s } => (r, s),
        }
    }
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
    /// A backend failed in a way no retry on it would mend.
    #[error("{backend}: {message}")]
    Backend {
        /// The backend's name.
        backend: String,
        /// What went wrong.
        message: String,
    },
    /// Two backends proved the same input with the same r, s and their
    /// proofs differ (the dual backend's check).
    #[error("backends disagree: {0}")]
    Mismatch(String),
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
    /// GPU backend: copying a/b/c (or the witness) to the device (zero on
    /// the CPU).
    pub upload: Duration,
    /// GPU backend: that copy ran before the device lock, overlapping
    /// another partition's region (else it is part of `gpu_region`).
    pub upload_ahead: bool,
    /// GPU backend: waiting for the device lock (zero on the CPU).
    pub lock_wait: Duration,
    /// GPU backend: the whole CUDA region, lock held (zero on the CPU).
    pub gpu_region: Duration,
    /// GPU backend: the G1 sections were streamed from host memory (they
    /// did not stay resident on the device).
    pub streamed: bool,
    /// Combining the pieces into A, B, C.
    pub epilogue: Duration,
    /// Computing a, b, c from a witness-only partition, in the backend (on
    /// the device when `abc_on_device`, else on the host); zero when
    /// synthesis computed them.
    pub abc: Duration,
    /// a, b, c and the MSM scalars' classification were computed on the
    /// device (the witness path).
    pub abc_on_device: bool,
    /// GPU witness path: classifying the MSM scalars on the device.
    pub classify: Duration,
}

impl ProveTimings {
    /// Where a, b and c were computed: on the device, on the host by the
    /// backend, or by synthesis.
    pub fn abc_path(&self) -> &'static str {
        if self.abc_on_device {
            "device"
        } else if !self.abc.is_zero() {
            "host"
        } else {
            "synthesis"
        }
    }

    /// The device phases as `name=value` fields for a TIMELINE line (the
    /// engine prints them without knowing them; `cuzk-bench timeline`
    /// reads them by these names).
    pub fn device_fields(&self) -> String {
        format!(
            "lock_wait_ms={} gpu_ms={} upload_ms={} upload_ahead={} abc={} abc_ms={} classify_ms={} ntt_ms={} h_msm_ms={}",
            self.lock_wait.as_millis(),
            self.gpu_region.as_millis(),
            self.upload.as_millis(),
            self.upload_ahead,
            self.abc_path(),
            self.abc.as_millis(),
            self.classify.as_millis(),
            self.h_fft.as_millis(),
            self.h_msm.as_millis()
        )
    }
}

#[derive(Debug)]
struct Parts {
    params: Arc<ProvingParameters>,
    r: Scalar,
    s: Scalar,
    h: G1Projective,
    l: G1Projective,
    a: G1Projective,
    b_g1: G1Projective,
    b_g2: JoinHandle<(G2Projective, Duration)>,
}

#[derive(Debug)]
enum State {
    /// G1 work done, B G2 possibly running; `finish` runs the epilogue.
    Parts(Box<Parts>),
    /// Already a proof (a backend that had to finish to check its result).
    Complete(Box<Proof<Bls12>>),
}

/// A proof whose G1 work is done and whose B G2 MSM may still be running.
#[derive(Debug)]
pub struct PendingProof {
    state: State,
    pub(crate) timings: ProveTimings,
}

impl PendingProof {
    /// A proof that is already complete (`finish` returns it as is).
    pub fn completed(proof: Proof<Bls12>, timings: ProveTimings) -> Self {
        Self {
            state: State::Complete(Box::new(proof)),
            timings,
        }
    }

    /// Phase times so far (the G2 and epilogue fields fill in at `finish`).
    pub fn timings(&self) -> &ProveTimings {
        &self.timings
    }
}

/// The witness in the form MSMs read, shared with the G2 thread.
#[derive(Debug)]
pub(crate) struct MsmWitness {
    pub(crate) inputs: ScalarVector,
    pub(crate) aux: ScalarVector,
    pub(crate) a_aux_density: DensityBitmap,
    pub(crate) b_input_density: DensityBitmap,
    pub(crate) b_aux_density: DensityBitmap,
}

impl MsmWitness {
    /// The scalars and densities of `assignment` (which stays whole).
    pub(crate) fn of(assignment: &ProvingAssignment) -> Self {
        let (inputs, aux) = rayon::join(
            || ScalarVector::new(&assignment.input_assignment),
            || ScalarVector::new(&assignment.aux_assignment),
        );
        Self {
            inputs,
            aux,
            a_aux_density: assignment.a_aux_density.clone(),
            b_input_density: assignment.b_input_density.clone(),
            b_aux_density: assignment.b_aux_density.clone(),
        }
    }

    /// Only the public inputs' scalars and their B density: all the frame
    /// reads when a backend computed every aux MSM, B G2's included (the
    /// aux densities, megabytes at full size, are not copied).
    pub(crate) fn inputs_only(inputs: &[Scalar], r1cs: &CompiledR1cs) -> Self {
        Self {
            inputs: ScalarVector::new(inputs),
            aux: ScalarVector::new(&[]),
            a_aux_density: DensityBitmap::default(),
            b_input_density: r1cs.densities().1.clone(),
            b_aux_density: DensityBitmap::default(),
        }
    }

    /// Public inputs in B (the first points of both B sections).
    pub(crate) fn b_inputs(&self) -> usize {
        self.b_input_density.count_ones()
    }
}

/// B G2 over the aux variables: still running on the frame's CPU thread,
/// or computed by the backend (with the time it took).
// One a proof, moved once: the G2 point's size does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(crate) enum AuxG2 {
    /// The CPU thread of [`Frame::b_g2_on_cpu`] (inputs included).
    Running(JoinHandle<(G2Projective, Duration)>),
    /// The backend's result over the aux variables.
    Computed(G2Projective, Duration),
}

/// What a backend computes: H and the MSMs over the aux variables. The
/// frame adds the public inputs' parts.
#[derive(Debug)]
pub(crate) struct AuxMsms {
    /// H MSM.
    pub(crate) h: G1Projective,
    /// L MSM.
    pub(crate) l: G1Projective,
    /// A MSM over the aux variables.
    pub(crate) a: G1Projective,
    /// B MSM in G1 over the aux variables.
    pub(crate) b_g1: G1Projective,
    /// B MSM in G2 over the aux variables.
    pub(crate) b_g2: AuxG2,
}

/// One proof from its start to its [`PendingProof`]: the checks before
/// any work, r and s, and the assembly after the backend's MSMs. Every
/// backend goes through it, so the order of a proof is written once:
/// [`Frame::for_assignment`] or [`Frame::for_witness`], the backend's H
/// and aux MSMs, then [`Frame::assemble`].
#[derive(Debug)]
pub(crate) struct Frame {
    params: Arc<ProvingParameters>,
    domain: Domain,
    rs: (Scalar, Scalar),
}

impl Frame {
    /// An evaluated assignment: consistent in itself and with `params`.
    pub(crate) fn for_assignment(
        assignment: &ProvingAssignment,
        params: &Arc<ProvingParameters>,
        randomness: Randomness,
    ) -> Result<Self, ProveError> {
        assignment
            .validate()
            .map_err(|e| ProveError::InvalidAssignment(e.0))?;
        Self::checked(CircuitCounts::of_assignment(assignment), params, randomness)
    }

    /// A witness with its circuit's compiled R1CS: as many values as the
    /// circuit has variables, and the circuit's counts those of `params`.
    pub(crate) fn for_witness(
        r1cs: &CompiledR1cs,
        witness: &Witness,
        params: &Arc<ProvingParameters>,
        randomness: Randomness,
    ) -> Result<Self, ProveError> {
        if witness.inputs.len() != r1cs.num_inputs() || witness.aux.len() != r1cs.num_aux() {
            return Err(ProveError::InvalidAssignment(format!(
                "witness of {} inputs and {} aux, its R1CS has {} and {}",
                witness.inputs.len(),
                witness.aux.len(),
                r1cs.num_inputs(),
                r1cs.num_aux()
            )));
        }
        let (a_aux_density, b_input_density, b_aux_density) = r1cs.densities();
        let counts = CircuitCounts {
            inputs: r1cs.num_inputs(),
            aux: r1cs.num_aux(),
            domain: r1cs.num_constraints().next_power_of_two(),
            a_aux: a_aux_density.count_ones(),
            b: b_input_density.count_ones() + b_aux_density.count_ones(),
        };
        Self::checked(counts, params, randomness)
    }

    /// The checks both kinds of partition share.
    fn checked(
        counts: CircuitCounts,
        params: &Arc<ProvingParameters>,
        randomness: Randomness,
    ) -> Result<Self, ProveError> {
        let domain = Domain::for_size(counts.domain).ok_or(ProveError::DomainTooLarge(counts.domain))?;
        params.check_counts(&counts)?;
        let vk = &params.vk;
        if bool::from(vk.delta_g1.is_identity() | vk.delta_g2.is_identity()) {
            return Err(ProveError::SubvertedParameters);
        }
        Ok(Self {
            params: Arc::clone(params),
            domain,
            rs: randomness.draw(),
        })
    }

    /// The FFT domain of the partition.
    pub(crate) fn domain(&self) -> &Domain {
        &self.domain
    }

    /// B G2 over every variable on a CPU thread of its own, started now so
    /// that it overlaps the backend's G1 work (for a backend that leaves
    /// B G2 to the CPU).
    pub(crate) fn b_g2_on_cpu(&self, witness: &Arc<MsmWitness>) -> Result<AuxG2, ProveError> {
        spawn_b_g2(&self.params, witness, None).map(AuxG2::Running)
    }

    /// The pending proof: the public inputs' A and B G1 parts added to the
    /// backend's aux MSMs, and B G2's inputs part on the G2 thread (which
    /// [`finish`] joins before the epilogue).
    pub(crate) fn assemble(
        self,
        witness: &Arc<MsmWitness>,
        aux: AuxMsms,
        timings: ProveTimings,
    ) -> Result<PendingProof, ProveError> {
        let b_g2 = match aux.b_g2 {
            AuxG2::Running(thread) => thread,
            AuxG2::Computed(sum, took) => spawn_b_g2(&self.params, witness, Some((sum, took)))?,
        };
        let (a_inputs, b_g1_inputs) = input_msms(&self.params, witness);
        let (r, s) = self.rs;
        Ok(PendingProof {
            state: State::Parts(Box::new(Parts {
                params: self.params,
                r,
                s,
                h: aux.h,
                l: aux.l,
                a: a_inputs + aux.a,
                b_g1: b_g1_inputs + aux.b_g1,
                b_g2,
            })),
            timings,
        })
    }
}

/// Starts the B G2 MSM on a thread of its own: the inputs' part always, and
/// the aux part too unless a backend computed it (`aux_done`, with the time
/// it took), in which case the thread only adds the inputs' few points.
fn spawn_b_g2(
    params: &Arc<ProvingParameters>,
    witness: &Arc<MsmWitness>,
    aux_done: Option<(G2Projective, Duration)>,
) -> Result<JoinHandle<(G2Projective, Duration)>, ProveError> {
    let params = Arc::clone(params);
    let witness = Arc::clone(witness);
    std::thread::Builder::new()
        .name("b_g2_msm".into())
        .spawn(move || {
            let started = Instant::now();
            let split = witness.b_inputs();
            let inputs = structured_msm::<G2>(
                &params.b_g2[..split],
                &witness.inputs,
                Some(&witness.b_input_density),
            );
            let (aux, aux_time) = match aux_done {
                Some(done) => done,
                None => (
                    structured_msm::<G2>(&params.b_g2[split..], &witness.aux, Some(&witness.b_aux_density)),
                    Duration::ZERO,
                ),
            };
            (inputs + aux, aux_time + started.elapsed())
        })
        .map_err(|e| ProveError::G2Thread(e.to_string()))
}

/// The A and B_G1 MSMs over the public inputs: a handful of points, done on
/// the CPU for every backend.
fn input_msms(params: &ProvingParameters, w: &MsmWitness) -> (G1Projective, G1Projective) {
    let num_inputs = w.inputs.len();
    let split = w.b_inputs();
    (
        structured_msm::<G1>(&params.a[..num_inputs], &w.inputs, None),
        structured_msm::<G1>(&params.b_g1[..split], &w.inputs, Some(&w.b_input_density)),
    )
}

/// Joins the B G2 MSM and assembles the proof from the MSM results a, b1, b2,
/// h, l: A = alpha + a + r*delta, B = beta + b2 + s*delta,
/// C = s*a + r*b1 + r*s*delta + s*alpha + r*beta + h + l.
pub fn finish(pending: PendingProof) -> Result<(Proof<Bls12>, ProveTimings), ProveError> {
    let PendingProof { state, mut timings } = pending;
    let parts = match state {
        State::Complete(proof) => return Ok((*proof, timings)),
        State::Parts(parts) => *parts,
    };
    let Parts {
        params,
        r,
        s,
        h,
        l,
        a,
        b_g1,
        b_g2,
    } = parts;
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
