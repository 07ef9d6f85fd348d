//! Proving inputs of a given shape without a circuit, for measuring at
//! full scale (2^27-constraint partitions) where synthesising a real circuit
//! and running a trusted setup are out of reach.
//!
//! [`shaped_assignment`] makes a PoRep-shaped witness directly (aux values
//! about 50 % zero, 45 % one, 5 % other; A density 99.7 %, B density 25 %),
//! and [`shaped_parameters`] makes a parameter set whose section sizes fit
//! it, from valid subgroup points produced by repeated addition (one scalar
//! multiplication per chunk, not per point) and batch normalisation. Proofs
//! made this way do not verify (the constraints are not satisfied and the
//! parameters come from no setup), but every prover must produce the same
//! bytes from them, which is what the GPU checks and benchmarks rely on.

use crate::assignment::{DensityBitmap, ProvingAssignment};
use crate::params::ProvingParameters;
use bellperson::groth16::VerifyingKey;
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use std::path::PathBuf;

const CHUNK: usize = 1 << 14;

fn rng(seed: u64, stream: u64, chunk: usize) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ stream.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    rng.set_stream(chunk as u64);
    rng
}

fn random_scalars(len: usize, seed: u64, stream: u64) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; len];
    out.par_chunks_mut(CHUNK).enumerate().for_each(|(i, part)| {
        let mut rng = rng(seed, stream, i);
        part.iter_mut().for_each(|s| *s = Scalar::random(&mut rng));
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

/// A PoRep-shaped assignment of `constraints` constraints (a/b/c random,
/// one aux variable per constraint) and `inputs` public inputs plus the
/// constant one. Deterministic in `seed`.
pub fn shaped_assignment(constraints: usize, inputs: usize, seed: u64) -> ProvingAssignment {
    let constraints = constraints.max(inputs + 2);
    let aux_len = constraints - inputs - 1;
    let (a, (b, c)) = rayon::join(
        || random_scalars(constraints, seed, 1),
        || {
            rayon::join(
                || random_scalars(constraints, seed, 2),
                || random_scalars(constraints, seed, 3),
            )
        },
    );
    let mut aux = vec![Scalar::ZERO; aux_len];
    aux.par_chunks_mut(CHUNK).enumerate().for_each(|(i, part)| {
        let mut rng = rng(seed, 4, i);
        for s in part {
            *s = match rng.gen_range(0..100) {
                0..=49 => Scalar::ZERO,
                50..=94 => Scalar::ONE,
                _ => Scalar::random(&mut rng),
            };
        }
    });
    let mut input_assignment = vec![Scalar::ONE];
    input_assignment.extend(random_scalars(inputs, seed, 5));
    let (a_aux_density, b_aux_density) = rayon::join(
        || bitmap(aux_len, 0.997, seed, 6),
        || bitmap(aux_len, 0.25, seed, 7),
    );
    let mut b_input_density = bitmap(inputs + 1, 0.5, seed, 8);
    b_input_density.set(0);
    ProvingAssignment {
        a,
        b,
        c,
        input_assignment,
        aux_assignment: aux,
        a_aux_density,
        b_input_density,
        b_aux_density,
    }
}

/// `count` distinct valid points `start + i * step`, computed in parallel
/// chunks by repeated addition and normalised in batches.
fn points<P, A>(count: usize, start: P, step: P) -> Vec<A>
where
    P: Group<Scalar = Scalar> + Curve<AffineRepr = A> + Send + Sync,
    A: Copy + Default + Send + Sync,
{
    let mut out = vec![A::default(); count];
    out.par_chunks_mut(CHUNK).enumerate().for_each(|(i, part)| {
        let mut acc = start + step * Scalar::from((i * CHUNK) as u64);
        let mut projective = Vec::with_capacity(part.len());
        for _ in 0..part.len() {
            projective.push(acc);
            acc += step;
        }
        P::batch_normalize(&projective, part);
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

/// Parameters whose section sizes fit `assignment`, made of valid points
/// (not from a trusted setup: proofs will not verify). Deterministic in
/// `seed`.
pub fn shaped_parameters(assignment: &ProvingAssignment, seed: u64) -> ProvingParameters {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut g1 = || G1Projective::generator() * Scalar::random(&mut rng);
    let (g1_start, g1_step, g1_vk): (G1Projective, G1Projective, Vec<G1Affine>) =
        (g1(), g1(), (0..3).map(|_| g1().to_affine()).collect());
    let mut g2 = || G2Projective::generator() * Scalar::random(&mut rng);
    let (g2_start, g2_step, g2_vk): (G2Projective, G2Projective, Vec<G2Affine>) =
        (g2(), g2(), (0..3).map(|_| g2().to_affine()).collect());

    let inputs = assignment.input_assignment.len();
    let h_len = assignment.domain_size() - 1;
    let l_len = assignment.aux_assignment.len();
    let a_len = inputs + assignment.a_aux_density.count_ones();
    let b_len = assignment.b_input_density.count_ones() + assignment.b_aux_density.count_ones();
    // Offsets keep the sections' points distinct from each other.
    let offset = |k: u64| g1_start + g1_step * Scalar::from(k << 40);
    let all: Vec<G1Affine> = points(h_len + l_len + a_len + b_len + inputs, offset(0), g1_step);
    let (h, rest) = all.split_at(h_len);
    let (l, rest) = rest.split_at(l_len);
    let (a, rest) = rest.split_at(a_len);
    let (b_g1, ic) = rest.split_at(b_len);
    ProvingParameters {
        vk: VerifyingKey {
            alpha_g1: g1_vk[0],
            beta_g1: g1_vk[1],
            beta_g2: g2_vk[0],
            gamma_g2: g2_vk[1],
            delta_g1: g1_vk[2],
            delta_g2: g2_vk[2],
            ic: ic.to_vec(),
        },
        h: h.to_vec(),
        l: l.to_vec(),
        a: a.to_vec(),
        b_g1: b_g1.to_vec(),
        b_g2: points(b_len, g2_start, g2_step),
        source: PathBuf::from("<shaped>"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prover::{prove, Randomness};
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
        let aux = shaped_assignment(1 << 14, 1, 1).aux_assignment;
        let ones = aux.iter().filter(|s| **s == Scalar::ONE).count() as f64 / aux.len() as f64;
        assert!((0.40..0.50).contains(&ones), "{ones}");
    }
}
