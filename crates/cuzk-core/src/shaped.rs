//! Proving inputs of a given shape without a real circuit, for measuring at
//! full scale (2^27-constraint partitions) where synthesising a real circuit
//! and running a trusted setup are out of reach.
//!
//! [`ShapedCircuit`] draws a PoRep partition's densities (A density 99.7 %,
//! B density 25 %) once per circuit id; [`ShapedCircuit::witness`] makes a
//! PoRep-shaped witness directly (aux values about 50 % zero, 45 % one, 5 %
//! other) and [`ShapedCircuit::compiled_r1cs`] constraints of those
//! densities, so the engine proves shaped partitions as it proves real ones
//! (the witness on the host, a, b, c from the R1CS on the device).
//! [`shaped_assignment`] is a whole assignment with a, b, c drawn at random,
//! for a lone partition. [`shaped_parameters`] and
//! [`write_shaped_parameters`] make a parameter set whose section sizes fit
//! them, from valid subgroup points produced by repeated addition (one
//! scalar multiplication per chunk, not per point) and batch
//! normalisation. Proofs made this way do not verify (the constraints are
//! not satisfied and the parameters come from no setup), but every prover
//! must produce the same bytes from them, which is what the GPU checks and
//! benchmarks rely on.

use crate::assignment::{DensityBitmap, ProvingAssignment};
use crate::packed::PackedScalars;
use crate::params::ProvingParameters;
use crate::r1cs::{CompiledR1cs, Matrix, R1csError, Witness, MINUS_ONE_ID, ONE_ID};
use bellperson::groth16::VerifyingKey;
use bellperson::Index;
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
use rand::rngs::SmallRng;
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use std::path::PathBuf;

const CHUNK: usize = 1 << 14;

/// The generator of one chunk of one stream. Witness data only has to look
/// like a witness (its values decide which MSM paths run, not what they
/// cost), so a small fast generator is used: ChaCha here made generating a
/// 2^27 partition slower than proving it.
fn rng(seed: u64, stream: u64, chunk: usize) -> SmallRng {
    let key = seed
        ^ stream.wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ (chunk as u64).wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
    SmallRng::seed_from_u64(key)
}

/// A uniformly random value below 2^254 (so below the field modulus, no
/// rejection), converted to a scalar.
fn random_scalar(rng: &mut SmallRng) -> Scalar {
    let limbs = [
        rng.next_u64(),
        rng.next_u64(),
        rng.next_u64(),
        rng.next_u64() >> 2,
    ];
    Scalar::from_u64s_le(&limbs).expect("values below 2^254 are canonical")
}

/// The aux values of chunk `chunk` of partition `seed` (endless; a chunk
/// takes CHUNK): about 50 % zero, 45 % one, 5 % other.
fn aux_chunk(seed: u64, chunk: usize) -> impl Iterator<Item = Scalar> {
    let mut rng = rng(seed, 4, chunk);
    std::iter::repeat_with(move || match rng.gen_range(0..100) {
        0..=49 => Scalar::ZERO,
        50..=94 => Scalar::ONE,
        _ => random_scalar(&mut rng),
    })
}

fn random_scalars(len: usize, seed: u64, stream: u64) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; len];
    out.par_chunks_mut(CHUNK).enumerate().for_each(|(i, part)| {
        let mut rng = rng(seed, stream, i);
        part.iter_mut().for_each(|s| *s = random_scalar(&mut rng));
    });
    out
}

fn bitmap(len: usize, density: f64, seed: u64, stream: u64) -> DensityBitmap {
    let mut bits = DensityBitmap::with_capacity(len);
    let mut rng = rng(seed, stream, 0);
    for i in 0..len {
        bits.push_zero();
        if rng.gen_bool(density) {
            bits.set(i);
        }
    }
    bits
}

/// The density bitmaps of a shaped assignment: A-aux 99.7 %, B-aux 25 %,
/// B-input half of the inputs plus the constant one.
fn densities(aux_len: usize, inputs: usize, seed: u64) -> (DensityBitmap, DensityBitmap, DensityBitmap) {
    let (a_aux, b_aux) = rayon::join(
        || bitmap(aux_len, 0.997, seed, 6),
        || bitmap(aux_len, 0.25, seed, 7),
    );
    let mut b_input = bitmap(inputs + 1, 0.5, seed, 8);
    b_input.set(0);
    (a_aux, b_input, b_aux)
}

/// Section sizes of the parameters of a shaped partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Constraints (at most the domain size).
    pub constraints: usize,
    /// Public inputs including the constant one (= IC points).
    pub inputs: usize,
    /// H points: domain size - 1.
    pub h: usize,
    /// L points: aux variables.
    pub l: usize,
    /// A points: inputs + aux variables in A.
    pub a: usize,
    /// B points (G1 and G2): inputs and aux variables in B.
    pub b: usize,
}

/// Constraints of a 32 GiB PoRep partition (storage-proofs 19.1).
pub const POREP_32G_CONSTRAINTS: usize = 130_278_541;
/// Public inputs of a 32 GiB PoRep partition, without the constant one.
pub const POREP_32G_INPUTS: usize = 327;

impl Shape {
    /// The shape of `shaped_assignment(constraints, inputs, seed)`.
    pub fn of(constraints: usize, inputs: usize, seed: u64) -> Self {
        ShapedCircuit::new(constraints, inputs, seed).shape()
    }

    /// A 32 GiB PoRep partition: 130,278,541 constraints and 328 public
    /// inputs (storage-proofs 19.1), a 2^27 domain.
    pub fn porep_32g(seed: u64) -> Self {
        Self::of(POREP_32G_CONSTRAINTS, POREP_32G_INPUTS, seed)
    }

    /// The shape's parameter file size in bytes.
    pub fn file_bytes(&self) -> u64 {
        let g1 = (self.h + self.l + self.a + self.b + self.inputs + 3) as u64;
        let g2 = (self.b + 3) as u64;
        g1 * 96 + g2 * 192 + 6 * 4
    }
}

/// The circuit-fixed part of a shaped partition: its size and which
/// variables appear in A and B. Like a real circuit's, it is the same for
/// every partition of a proof; only the witness values differ.
#[derive(Clone, Debug)]
pub struct ShapedCircuit {
    constraints: usize,
    inputs: usize,
    shape_seed: u64,
    a_aux_density: DensityBitmap,
    b_input_density: DensityBitmap,
    b_aux_density: DensityBitmap,
}

impl ShapedCircuit {
    /// `constraints` constraints (one aux variable each) and `inputs` public
    /// inputs plus the constant one; densities drawn from `shape_seed`.
    pub fn new(constraints: usize, inputs: usize, shape_seed: u64) -> Self {
        let constraints = constraints.max(inputs + 2);
        let aux_len = constraints - inputs - 1;
        let (a_aux_density, b_input_density, b_aux_density) = densities(aux_len, inputs, shape_seed);
        Self {
            constraints,
            inputs,
            shape_seed,
            a_aux_density,
            b_input_density,
            b_aux_density,
        }
    }

    /// Key of its parameter file: `shaped-v1-n<constraints>-i<inputs>-s<shape seed>`.
    pub fn circuit_id(&self) -> String {
        shaped_circuit_id(self.constraints, self.inputs, self.shape_seed)
    }

    /// Section sizes of its parameters.
    pub fn shape(&self) -> Shape {
        Shape {
            constraints: self.constraints,
            inputs: self.inputs + 1,
            h: self.constraints.next_power_of_two() - 1,
            l: self.a_aux_density.len(),
            a: self.inputs + 1 + self.a_aux_density.count_ones(),
            b: self.b_input_density.count_ones() + self.b_aux_density.count_ones(),
        }
    }

    /// An assignment for it without its constraints: a/b/c drawn at random
    /// rather than computed from [`compiled_r1cs`](Self::compiled_r1cs)
    /// (cheap, for tests and benchmarks of a lone partition); aux values
    /// about 50 % zero, 45 % one, 5 % other, as in
    /// [`witness`](Self::witness). Deterministic in `value_seed`.
    pub fn assignment(&self, value_seed: u64) -> ProvingAssignment {
        // A parallel pass: a synthesis worker's slot is free meanwhile.
        crate::cores::parallel(|| self.assignment_on_pool(value_seed))
    }

    fn assignment_on_pool(&self, value_seed: u64) -> ProvingAssignment {
        let (constraints, seed) = (self.constraints, value_seed);
        let ((a, (b, c)), witness) = rayon::join(
            || {
                rayon::join(
                    || random_scalars(constraints, seed, 1),
                    || {
                        rayon::join(
                            || random_scalars(constraints, seed, 2),
                            || random_scalars(constraints, seed, 3),
                        )
                    },
                )
            },
            || {
                let mut aux = vec![Scalar::ZERO; self.a_aux_density.len()];
                aux.par_chunks_mut(CHUNK).enumerate().for_each(|(i, part)| {
                    part.iter_mut()
                        .zip(aux_chunk(seed, i))
                        .for_each(|(s, value)| *s = value)
                });
                (self.inputs_of(seed), aux)
            },
        );
        let (inputs, aux) = witness;
        ProvingAssignment {
            a,
            b,
            c,
            input_assignment: inputs,
            aux_assignment: aux,
            a_aux_density: self.a_aux_density.clone(),
            b_input_density: self.b_input_density.clone(),
            b_aux_density: self.b_aux_density.clone(),
        }
    }

    /// The variables' values of partition `value_seed`: the constant one
    /// and the public inputs, and aux values about 50 % zero, 45 % one, 5 %
    /// other (a PoRep partition's mix of bits and field elements). With
    /// [`compiled_r1cs`](Self::compiled_r1cs) this is what the engine's
    /// witness path proves.
    pub fn witness(&self, value_seed: u64) -> Witness {
        crate::cores::parallel(|| {
            let len = self.a_aux_density.len();
            let pieces: Vec<PackedScalars> = (0..len.div_ceil(CHUNK))
                .into_par_iter()
                .map(|i| {
                    aux_chunk(value_seed, i)
                        .take(CHUNK.min(len - i * CHUNK))
                        .collect()
                })
                .collect();
            Witness {
                inputs: self.inputs_of(value_seed),
                aux: PackedScalars::concat(&pieces),
                left: None,
            }
        })
    }

    /// The constant one, then the public inputs of partition `seed`.
    fn inputs_of(&self, seed: u64) -> Vec<Scalar> {
        let mut inputs = Vec::with_capacity(self.inputs + 1);
        inputs.push(Scalar::ONE);
        inputs.extend(self.assignment_inputs(seed));
        inputs
    }

    /// The public inputs (without the constant one) of `assignment(value_seed)`.
    pub fn assignment_inputs(&self, value_seed: u64) -> Vec<Scalar> {
        random_scalars(self.inputs, value_seed, 5)
    }

    /// Constraints for it, whose densities are the circuit's (so its
    /// parameter file fits them), about five nonzeros a constraint as in a
    /// PoRep partition (5.5). Constraint `j` of the aux variables has
    /// `A = w_j + k w_{j+1}` (the second term when `w_{j+1}` is in A, `k`
    /// one or, every eighth constraint, one of 62 other coefficients;
    /// `A = 1` when `w_j` is not in A), `B = w_b` for the B variables in
    /// turn plus the inputs `x_i` in B with `i = j` modulo the aux count,
    /// and `C = w_j - w_{j+7}`; then `x_i * 0 = 0` for each input, as
    /// [`crate::synthesize`] appends. The constraints are not satisfied (the
    /// witness is random): shaped proofs do not verify in any case. Built in
    /// parallel, a few seconds at 2^27 constraints.
    pub fn compiled_r1cs(&self) -> Result<CompiledR1cs, R1csError> {
        let (inputs, aux) = (self.inputs + 1, self.a_aux_density.len());
        let rows = ShapedRows::new(self);
        let coefficients = rows.coefficients.clone();
        CompiledR1cs::from_rows(inputs, aux, aux + inputs, coefficients, |matrix, r, terms| {
            rows.row(matrix, r, terms)
        })
    }
}

/// The rows of [`ShapedCircuit::compiled_r1cs`].
struct ShapedRows<'a> {
    circuit: &'a ShapedCircuit,
    /// The aux variables in B, in order.
    b_aux: Vec<usize>,
    coefficients: Vec<Scalar>,
}

impl<'a> ShapedRows<'a> {
    fn new(circuit: &'a ShapedCircuit) -> Self {
        let aux = circuit.a_aux_density.len();
        let b_aux = (0..aux).filter(|&i| circuit.b_aux_density.get(i)).collect();
        let mut rng = rng(circuit.shape_seed, 9, 0);
        let mut coefficients = vec![Scalar::ONE, -Scalar::ONE];
        // Below 2^254 and drawn: zero (which a row may not hold) has
        // probability 2^-254.
        coefficients.extend((0..SHAPED_COEFFICIENTS).map(|_| random_scalar(&mut rng)));
        Self {
            circuit,
            b_aux,
            coefficients,
        }
    }

    /// Row `r` of `matrix`, as (variable, coefficient id) terms.
    fn row(&self, matrix: Matrix, r: usize, terms: &mut Vec<(Index, u32)>) {
        let c = self.circuit;
        let (inputs, aux) = (c.inputs + 1, c.a_aux_density.len());
        if r >= aux {
            if matrix == Matrix::A {
                terms.push((Index::Input(r - aux), ONE_ID));
            }
            return;
        }
        match matrix {
            Matrix::A if c.a_aux_density.get(r) => {
                terms.push((Index::Aux(r), ONE_ID));
                let next = (r + 1) % aux;
                if next != r && c.a_aux_density.get(next) {
                    let id = match r % 8 {
                        0 => 2 + (r / 8 % SHAPED_COEFFICIENTS) as u32,
                        _ => ONE_ID,
                    };
                    terms.push((Index::Aux(next), id));
                }
            }
            Matrix::A => terms.push((Index::Input(0), ONE_ID)),
            Matrix::B => {
                if !self.b_aux.is_empty() {
                    terms.push((Index::Aux(self.b_aux[r % self.b_aux.len()]), ONE_ID));
                }
                for i in (r..inputs).step_by(aux) {
                    if c.b_input_density.get(i) {
                        terms.push((Index::Input(i), ONE_ID));
                    }
                }
            }
            Matrix::C => {
                terms.push((Index::Aux(r), ONE_ID));
                let other = (r + 7) % aux;
                if other != r {
                    terms.push((Index::Aux(other), MINUS_ONE_ID));
                }
            }
        }
    }
}

/// Coefficients of a shaped R1CS besides one and minus one.
const SHAPED_COEFFICIENTS: usize = 62;

/// Seed of the points of shaped parameter files written by the engine and
/// by default by `cuzk-bench gen-srs`.
pub const SHAPED_POINT_SEED: u64 = 1;

/// The circuit id of a shaped partition (`inputs` without the constant one).
pub fn shaped_circuit_id(constraints: usize, inputs: usize, shape_seed: u64) -> String {
    format!("shaped-v1-n{constraints}-i{inputs}-s{shape_seed}")
}

/// `(constraints, inputs, shape seed)` of a [`shaped_circuit_id`].
pub fn parse_shaped_circuit_id(id: &str) -> Option<(usize, usize, u64)> {
    let rest = id.strip_prefix("shaped-v1-n")?;
    let (n, rest) = rest.split_once("-i")?;
    let (i, s) = rest.split_once("-s")?;
    Some((n.parse().ok()?, i.parse().ok()?, s.parse().ok()?))
}

/// A PoRep-shaped assignment of `constraints` constraints (a/b/c random,
/// one aux variable per constraint) and `inputs` public inputs plus the
/// constant one. Deterministic in `seed` (shape and values).
pub fn shaped_assignment(constraints: usize, inputs: usize, seed: u64) -> ProvingAssignment {
    ShapedCircuit::new(constraints, inputs, seed).assignment(seed)
}

/// Projective to affine in batches (one field inversion per batch).
trait BatchNormalize: Curve + Sized {
    fn normalize_into(points: &[Self], out: &mut [Self::AffineRepr]);
}

impl BatchNormalize for G1Projective {
    fn normalize_into(points: &[Self], out: &mut [G1Affine]) {
        cuzk_sys::g1_batch_normalize(points, out)
    }
}

impl BatchNormalize for G2Projective {
    fn normalize_into(points: &[Self], out: &mut [G2Affine]) {
        cuzk_sys::g2_batch_normalize(points, out)
    }
}

/// `count` distinct valid points `start + i * step`, computed in parallel
/// chunks by repeated addition and normalised in batches.
fn points<P, A>(count: usize, start: P, step: P) -> Vec<A>
where
    P: Group<Scalar = Scalar> + BatchNormalize<AffineRepr = A> + Send + Sync,
    A: Copy + Default + Send + Sync,
{
    points_from(0, count, start, step)
}

/// Points `first..first + count` of the sequence `start + i * step`.
fn points_from<P, A>(first: usize, count: usize, start: P, step: P) -> Vec<A>
where
    P: Group<Scalar = Scalar> + BatchNormalize<AffineRepr = A> + Send + Sync,
    A: Copy + Default + Send + Sync,
{
    let mut out = vec![A::default(); count];
    out.par_chunks_mut(CHUNK).enumerate().for_each(|(i, part)| {
        let mut acc = start + step * Scalar::from((first + i * CHUNK) as u64);
        let mut projective = Vec::with_capacity(part.len());
        for _ in 0..part.len() {
            projective.push(acc);
            acc += step;
        }
        P::normalize_into(&projective, part);
    });
    out
}

/// `count` distinct valid G1 points (deterministic in `seed`), fast.
pub fn g1_points(count: usize, seed: u64) -> Vec<G1Affine> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let start = G1Projective::generator() * Scalar::random(&mut rng);
    let step = G1Projective::generator() * Scalar::random(&mut rng);
    points(count, start, step)
}

/// `count` random scalars (deterministic in `seed`).
pub fn scalars(count: usize, seed: u64) -> Vec<Scalar> {
    random_scalars(count, seed, 9)
}

/// The generator of a shaped parameter set: its verifying-key points and the
/// two point sequences (G1: h, l, a, b_g1 then IC back to back; G2: b_g2).
struct PointSource {
    g1_start: G1Projective,
    g1_step: G1Projective,
    g2_start: G2Projective,
    g2_step: G2Projective,
    vk_g1: [G1Affine; 3],
    vk_g2: [G2Affine; 3],
}

impl PointSource {
    fn new(seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut g1 = || G1Projective::generator() * Scalar::random(&mut rng);
        let (g1_start, g1_step) = (g1(), g1());
        let vk_g1 = [g1().to_affine(), g1().to_affine(), g1().to_affine()];
        let mut g2 = || G2Projective::generator() * Scalar::random(&mut rng);
        let (g2_start, g2_step) = (g2(), g2());
        let vk_g2 = [g2().to_affine(), g2().to_affine(), g2().to_affine()];
        Self {
            g1_start,
            g1_step,
            g2_start,
            g2_step,
            vk_g1,
            vk_g2,
        }
    }

    fn g1(&self, first: usize, count: usize) -> Vec<G1Affine> {
        points_from(first, count, self.g1_start, self.g1_step)
    }

    fn g2(&self, first: usize, count: usize) -> Vec<G2Affine> {
        points_from(first, count, self.g2_start, self.g2_step)
    }

    fn vk(&self, shape: &Shape) -> VerifyingKey<blstrs::Bls12> {
        let ic_first = shape.h + shape.l + shape.a + shape.b;
        VerifyingKey {
            alpha_g1: self.vk_g1[0],
            beta_g1: self.vk_g1[1],
            beta_g2: self.vk_g2[0],
            gamma_g2: self.vk_g2[1],
            delta_g1: self.vk_g1[2],
            delta_g2: self.vk_g2[2],
            ic: self.g1(ic_first, shape.inputs),
        }
    }
}

/// Parameters whose section sizes fit `assignment`, made of valid points
/// (not from a trusted setup: proofs will not verify). Deterministic in
/// `seed`; equal to what [`write_shaped_parameters`] writes for the same
/// shape and seed.
pub fn shaped_parameters(assignment: &ProvingAssignment, seed: u64) -> ProvingParameters {
    let inputs = assignment.input_assignment.len();
    let shape = Shape {
        constraints: assignment.num_constraints(),
        inputs,
        h: assignment.domain_size() - 1,
        l: assignment.aux_assignment.len(),
        a: inputs + assignment.a_aux_density.count_ones(),
        b: assignment.b_input_density.count_ones() + assignment.b_aux_density.count_ones(),
    };
    parameters_of_shape(&shape, seed)
}

/// Parameters of `shape` in memory (as [`shaped_parameters`] for an
/// assignment of that shape). Each section is generated in place, so the
/// peak is the parameters' own size (about 44 GB for a 32 GiB PoRep
/// partition's circuit).
pub fn parameters_of_shape(shape: &Shape, seed: u64) -> ProvingParameters {
    let source = PointSource::new(seed);
    let (h, l, a) = (shape.h, shape.l, shape.a);
    ProvingParameters {
        vk: source.vk(shape),
        h: source.g1(0, h),
        l: source.g1(h, l),
        a: source.g1(h + l, a),
        b_g1: source.g1(h + l + a, shape.b),
        b_g2: source.g2(0, shape.b),
        source: PathBuf::from("<shaped>"),
    }
}

/// Writes the parameter file of `shape` to `path`, streaming: at most a few
/// batches of points are in memory at a time, so a 32 GiB-PoRep-sized file
/// (about 47 GB) can be made on a machine with far less memory. Points are
/// generated on the caller's thread pool while a writer thread encodes and
/// writes the previous batch, so generation and disk overlap.
pub fn write_shaped_parameters(
    shape: &Shape,
    seed: u64,
    path: &std::path::Path,
) -> Result<(), crate::ParamsError> {
    const BATCH: usize = 1 << 22;
    enum Batch {
        G1(Vec<G1Affine>),
        G2(Vec<G2Affine>),
    }
    let source = PointSource::new(seed);
    let mut out = crate::params::StreamingWriter::create(
        path,
        &source.vk(shape),
        [shape.h, shape.l, shape.a, shape.b, shape.b],
    )?;
    let out = std::thread::scope(|scope| {
        let (batches, received) = std::sync::mpsc::sync_channel::<Batch>(1);
        let writer = scope.spawn(move || {
            for batch in received {
                match batch {
                    Batch::G1(points) => out.g1(&points)?,
                    Batch::G2(points) => out.g2(&points)?,
                }
            }
            Ok::<_, crate::ParamsError>(out)
        });
        let g1_total = shape.h + shape.l + shape.a + shape.b;
        let g1 = (0..g1_total).step_by(BATCH).map(|first| {
            let count = BATCH.min(g1_total - first);
            Batch::G1(source.g1(first, count))
        });
        let g2 = (0..shape.b).step_by(BATCH).map(|first| {
            let count = BATCH.min(shape.b - first);
            Batch::G2(source.g2(first, count))
        });
        for batch in g1.chain(g2) {
            // A closed channel means the writer failed: its error is below.
            if batches.send(batch).is_err() {
                break;
            }
        }
        drop(batches);
        writer.join().expect("the writer thread does not panic")
    })?;
    out.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{prove, Randomness};
    use std::sync::Arc;

    #[test]
    fn shaped_inputs_fit_and_prove_deterministically() {
        for n in [1usize << 10, 1000, (1 << 11) + 1] {
            let assignment = shaped_assignment(n, 3, 7);
            assert_eq!(assignment.num_constraints(), n);
            assignment.validate().unwrap();
            let params = Arc::new(shaped_parameters(&assignment, 9));
            params.check_fits(&assignment).unwrap();
            assert!(params.h.iter().all(|p| bool::from(p.is_torsion_free())));
            let fixed = Randomness::Fixed {
                r: Scalar::from(3u64),
                s: Scalar::from(5u64),
            };
            let one = prove(assignment.clone(), &params, fixed).unwrap().0;
            let two = prove(shaped_assignment(n, 3, 7), &params, fixed).unwrap().0;
            assert_eq!(one, two);
        }
        // The streamed file equals the in-memory parameters.
        let assignment = shaped_assignment(3000, 2, 4);
        let dir = std::env::temp_dir().join(format!("cuzk-shaped-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("shaped.params");
        let shape = Shape::of(3000, 2, 4);
        write_shaped_parameters(&shape, 5, &path).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), shape.file_bytes());
        let read = crate::ProvingParameters::read(&path, crate::PointCheck::Full).unwrap();
        let made = shaped_parameters(&assignment, 5);
        assert_eq!(
            (read.vk, read.h, read.l, read.a),
            (made.vk, made.h, made.l, made.a)
        );
        assert_eq!((read.b_g1, read.b_g2), (made.b_g1, made.b_g2));
        std::fs::remove_dir_all(&dir).unwrap();

        let aux = shaped_assignment(1 << 14, 1, 1).aux_assignment;
        let ones = aux.iter().filter(|s| **s == Scalar::ONE).count() as f64 / aux.len() as f64;
        assert!((0.40..0.50).contains(&ones), "{ones}");
    }

    /// The shaped constraints restated with bellperson's linear
    /// combinations, for [`crate::synthesize`] (itself checked against
    /// bellperson's prover) to evaluate independently of the generated
    /// matrices.
    struct Restated<'a> {
        circuit: &'a ShapedCircuit,
        witness: Witness,
        coefficients: Vec<Scalar>,
    }

    impl bellperson::Circuit<Scalar> for Restated<'_> {
        fn synthesize<CS: bellperson::ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), bellperson::SynthesisError> {
            use bellperson::Variable;
            let c = self.circuit;
            let mut inputs = vec![CS::one()];
            for (i, value) in self.witness.inputs.iter().enumerate().skip(1) {
                inputs.push(cs.alloc_input(|| format!("x{i}"), || Ok(*value))?);
            }
            let aux = self
                .witness
                .aux
                .iter()
                .map(|value| cs.alloc(|| "w", || Ok(value)))
                .collect::<Result<Vec<Variable>, _>>()?;
            let n = aux.len();
            let b_aux: Vec<usize> = (0..n).filter(|&i| c.b_aux_density.get(i)).collect();
            for j in 0..n {
                let next = (j + 1) % n;
                let weight = if j % 8 == 0 {
                    self.coefficients[2 + j / 8 % SHAPED_COEFFICIENTS]
                } else {
                    Scalar::ONE
                };
                cs.enforce(
                    || format!("c{j}"),
                    |lc| match (c.a_aux_density.get(j), next != j && c.a_aux_density.get(next)) {
                        (true, true) => lc + aux[j] + (weight, aux[next]),
                        (true, false) => lc + aux[j],
                        (false, _) => lc + CS::one(),
                    },
                    |lc| {
                        let mut lc = match b_aux.is_empty() {
                            true => lc,
                            false => lc + aux[b_aux[j % b_aux.len()]],
                        };
                        for i in (j..inputs.len()).step_by(n) {
                            if c.b_input_density.get(i) {
                                lc = lc + inputs[i];
                            }
                        }
                        lc
                    },
                    |lc| match (j + 7) % n {
                        other if other != j => lc + aux[j] - aux[other],
                        _ => lc + aux[j],
                    },
                );
            }
            Ok(())
        }
    }

    #[test]
    fn shaped_constraints_evaluate_as_restated_and_fit_the_parameters() {
        // 3000 constraints; one aux variable for 61 inputs (the inputs in B
        // all on one row); a power of two.
        for (constraints, inputs, seed) in [(3000usize, 4usize, 9u64), (62, 60, 1), (1 << 12, 2, 3)] {
            let circuit = ShapedCircuit::new(constraints, inputs, seed);
            let r1cs = circuit.compiled_r1cs().unwrap();
            assert_eq!(r1cs.num_constraints(), constraints);
            assert_eq!(
                r1cs.densities(),
                (
                    &circuit.a_aux_density,
                    &circuit.b_input_density,
                    &circuit.b_aux_density
                ),
                "the parameter file is made for the circuit's densities"
            );
            let witness = circuit.witness(seed + 100);
            assert_eq!(witness.inputs[1..], circuit.assignment_inputs(seed + 100)[..]);
            assert_eq!(
                witness.aux.to_scalars(),
                circuit.assignment(seed + 100).aux_assignment
            );
            let restated = Restated {
                circuit: &circuit,
                witness: witness.clone(),
                coefficients: ShapedRows::new(&circuit).coefficients,
            };
            let hint = crate::SizeHint {
                constraints,
                inputs: inputs + 1,
                aux: witness.aux.len(),
            };
            let expected = crate::synthesize(restated, hint).unwrap();
            let assigned = r1cs.assign(witness).unwrap();
            assert_eq!(
                (&assigned.a, &assigned.b, &assigned.c),
                (&expected.a, &expected.b, &expected.c)
            );
            assert_eq!(assigned, expected);
            // Not all of a, b, c are bits or zero: the coefficients count.
            assert!(assigned.a.iter().any(|v| *v != Scalar::ZERO && *v != Scalar::ONE));
            let params = shaped_parameters(&assigned, 2);
            params.check_fits(&assigned).unwrap();
        }
        // About five nonzeros a constraint, as a PoRep partition's 5.5.
        let r1cs = ShapedCircuit::new(1 << 14, 2, 5).compiled_r1cs().unwrap();
        let per_constraint = r1cs.nonzeros() as f64 / (1 << 14) as f64;
        assert!((4.5..5.5).contains(&per_constraint), "{per_constraint}");
    }

    #[test]
    fn generated_rows_naming_what_is_not_there_are_refused() {
        use crate::r1cs::{CompiledR1cs, Matrix};
        let units = || vec![Scalar::ONE, -Scalar::ONE];
        let build = |coefficients: Vec<Scalar>, term: (Index, u32)| {
            CompiledR1cs::from_rows(1, 2, 3, coefficients, move |matrix, r, terms| {
                if matrix == Matrix::B && r == 2 {
                    terms.push(term);
                }
            })
        };
        let fine = build(units(), (Index::Aux(1), MINUS_ONE_ID)).unwrap();
        assert_eq!((fine.num_constraints(), fine.nonzeros()), (3, 1));
        assert!(fine.densities().2.get(1) && !fine.densities().2.get(0));
        for (coefficients, term) in [
            (units(), (Index::Aux(2), ONE_ID)),
            (units(), (Index::Input(1), ONE_ID)),
            (units(), (Index::Aux(0), 2)),
            (vec![Scalar::ONE, Scalar::ONE], (Index::Aux(0), ONE_ID)),
            (
                vec![Scalar::ONE, -Scalar::ONE, Scalar::ZERO],
                (Index::Aux(0), ONE_ID),
            ),
        ] {
            let err = build(coefficients, term).unwrap_err();
            assert!(matches!(err, R1csError::Malformed(_)), "{err}");
        }
    }
}
