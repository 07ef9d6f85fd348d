//! Radix-2 FFTs over the BLS12-381 scalar field and the Groth16 H polynomial.
//!
//! The domain generator is the one bellperson's `EvaluationDomain` uses
//! (`ROOT_OF_UNITY` squared down to the domain size) and the coset shift is
//! `MULTIPLICATIVE_GENERATOR`: parameter files are built against exactly these,
//! so any other choice gives proofs that do not verify.
//!
//! Scalings are fused into neighbouring passes (1/n with the coset shift,
//! 1/Z with the pointwise product) so each vector is swept as few times as
//! possible; on large domains these passes are memory bound.

use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

/// Below this many butterflies a stage runs on one thread.
const MIN_PARALLEL_CHUNK: usize = 1 << 12;

/// A power-of-two evaluation domain.
#[derive(Clone, Debug)]
pub struct Domain {
    size: usize,
    log2: u32,
    omega: Scalar,
    omega_inv: Scalar,
    size_inv: Scalar,
}

impl Domain {
    /// The smallest domain with at least `min_size` points, or `None` when it
    /// would exceed the field's two-adicity (2^32).
    pub fn for_size(min_size: usize) -> Option<Self> {
        let size = min_size.max(1).checked_next_power_of_two()?;
        let log2 = size.trailing_zeros();
        if log2 > Scalar::S {
            return None;
        }
        let mut omega = Scalar::ROOT_OF_UNITY;
        for _ in log2..Scalar::S {
            omega = omega.square();
        }
        Some(Self {
            size,
            log2,
            omega,
            omega_inv: omega.invert().unwrap(),
            size_inv: Scalar::from(size as u64).invert().unwrap(),
        })
    }

    /// Number of points.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Evaluations on the domain from coefficients, in place.
    pub fn fft(&self, values: &mut [Scalar]) {
        fft_in_place(values, self.omega, self.log2);
    }

    /// Coefficients from evaluations on the domain, in place.
    pub fn ifft(&self, values: &mut [Scalar]) {
        fft_in_place(values, self.omega_inv, self.log2);
        scale(values, self.size_inv);
    }

    /// Evaluations at the domain's points (the constraints) to evaluations on
    /// the coset `g * domain`: an inverse FFT, the shift by powers of g with
    /// the 1/n folded in, and a forward FFT.
    fn evals_to_coset_evals(&self, values: &mut [Scalar]) {
        fft_in_place(values, self.omega_inv, self.log2);
        distribute_powers(values, self.size_inv, Scalar::MULTIPLICATIVE_GENERATOR);
        fft_in_place(values, self.omega, self.log2);
    }

    /// The coefficients of H = (A*B - C) / Z, where `a`, `b`, `c` hold the
    /// evaluations of A, B and C at the constraints. Consumes the three
    /// vectors; returns the `size - 1` coefficients the H query needs, reusing
    /// `a`'s memory.
    pub fn h_coefficients(&self, mut a: Vec<Scalar>, mut b: Vec<Scalar>, mut c: Vec<Scalar>) -> Vec<Scalar> {
        for v in [&mut a, &mut b, &mut c] {
            assert!(v.len() <= self.size, "vector longer than the domain");
            v.resize(self.size, Scalar::ZERO);
        }
        rayon::join(
            || self.evals_to_coset_evals(&mut a),
            || {
                rayon::join(
                    || self.evals_to_coset_evals(&mut b),
                    || self.evals_to_coset_evals(&mut c),
                )
            },
        );
        // On the coset, Z(g w^i) = g^n - 1 is the same for every i.
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        let z_inv = (g.pow_vartime([self.size as u64]) - Scalar::ONE)
            .invert()
            .unwrap();
        a.par_iter_mut()
            .zip(b.par_iter())
            .zip(c.par_iter())
            .with_min_len(MIN_PARALLEL_CHUNK)
            .for_each(|((a, b), c)| *a = (*a * b - c) * z_inv);
        drop(b);
        drop(c);
        // Back to coefficients: inverse FFT, then undo the coset shift.
        fft_in_place(&mut a, self.omega_inv, self.log2);
        distribute_powers(&mut a, self.size_inv, g.invert().unwrap());
        a.truncate(self.size - 1);
        a
    }
}

/// `values[i] *= factor * base^i`.
fn distribute_powers(values: &mut [Scalar], factor: Scalar, base: Scalar) {
    let chunk = chunk_len(values.len());
    values
        .par_chunks_mut(chunk)
        .enumerate()
        .for_each(|(index, chunk_values)| {
            let mut power = factor * base.pow_vartime([(index * chunk) as u64]);
            for v in chunk_values {
                *v *= power;
                power *= base;
            }
        });
}

fn scale(values: &mut [Scalar], factor: Scalar) {
    values
        .par_iter_mut()
        .with_min_len(MIN_PARALLEL_CHUNK)
        .for_each(|v| *v *= factor);
}

fn chunk_len(len: usize) -> usize {
    let threads = rayon::current_num_threads().max(1);
    len.div_ceil(threads * 4).max(MIN_PARALLEL_CHUNK)
}

/// In-place iterative radix-2 Cooley-Tukey FFT with root `omega` of order
/// `2^log2 = values.len()`: bit-reversal, then log2 butterfly stages.
fn fft_in_place(values: &mut [Scalar], omega: Scalar, log2: u32) {
    let n = values.len();
    assert_eq!(n, 1usize << log2, "FFT length must be the domain size");
    if n == 1 {
        return;
    }
    bit_reverse_permute(values, log2);

    // twiddles[j] = omega^j for j < n/2; stage with half-size m uses every
    // (n / 2m)-th entry.
    let half = n / 2;
    let mut twiddles = vec![Scalar::ZERO; half];
    let chunk = chunk_len(half);
    twiddles
        .par_chunks_mut(chunk)
        .enumerate()
        .for_each(|(index, part)| {
            let mut w = omega.pow_vartime([(index * chunk) as u64]);
            for t in part {
                *t = w;
                w *= omega;
            }
        });

    let mut m = 1;
    while m < n {
        let stride = n / (2 * m);
        let twiddles = &twiddles;
        values.par_chunks_mut(2 * m).for_each(|block| {
            let (lo, hi) = block.split_at_mut(m);
            if m < MIN_PARALLEL_CHUNK {
                butterflies(lo, hi, 0, stride, twiddles);
            } else {
                lo.par_chunks_mut(MIN_PARALLEL_CHUNK)
                    .zip(hi.par_chunks_mut(MIN_PARALLEL_CHUNK))
                    .enumerate()
                    .for_each(|(i, (lo, hi))| butterflies(lo, hi, i * MIN_PARALLEL_CHUNK, stride, twiddles));
            }
        });
        m *= 2;
    }
}

#[inline]
fn butterflies(lo: &mut [Scalar], hi: &mut [Scalar], first: usize, stride: usize, tw: &[Scalar]) {
    for (j, (x, y)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
        let k = first + j;
        let t = if k == 0 { *y } else { *y * tw[k * stride] };
        *y = *x - t;
        *x += t;
    }
}

fn bit_reverse_permute(values: &mut [Scalar], log2: u32) {
    let n = values.len();
    let shift = usize::BITS - log2;
    for i in 0..n {
        let j = i.reverse_bits() >> shift;
        if i < j {
            values.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn naive_dft(coeffs: &[Scalar], omega: Scalar) -> Vec<Scalar> {
        let n = coeffs.len();
        (0..n)
            .map(|i| {
                let x = omega.pow_vartime([i as u64]);
                coeffs.iter().rev().fold(Scalar::ZERO, |acc, c| acc * x + c)
            })
            .collect()
    }

    #[test]
    fn fft_matches_naive_dft_and_round_trips() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for log2 in 0..=7 {
            let domain = Domain::for_size(1 << log2).unwrap();
            let coeffs: Vec<Scalar> = (0..domain.size()).map(|_| Scalar::random(&mut rng)).collect();
            let mut values = coeffs.clone();
            domain.fft(&mut values);
            assert_eq!(values, naive_dft(&coeffs, domain.omega), "log2 = {log2}");
            domain.ifft(&mut values);
            assert_eq!(values, coeffs, "round trip at log2 = {log2}");
        }
    }

    #[test]
    fn large_fft_round_trips() {
        // Big enough that the parallel-within-block path runs.
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(8);
        let domain = Domain::for_size((1 << 14) + 1).unwrap();
        assert_eq!(domain.size(), 1 << 15);
        let coeffs: Vec<Scalar> = (0..domain.size()).map(|_| Scalar::random(&mut rng)).collect();
        let mut values = coeffs.clone();
        domain.fft(&mut values);
        // Spot-check a few evaluations against Horner.
        for i in [0usize, 1, 12345, (1 << 15) - 1] {
            let x = domain.omega.pow_vartime([i as u64]);
            let expected = coeffs.iter().rev().fold(Scalar::ZERO, |acc, c| acc * x + c);
            assert_eq!(values[i], expected);
        }
        domain.ifft(&mut values);
        assert_eq!(values, coeffs);
    }

    #[test]
    fn h_is_the_quotient() {
        // Random A, B of degree < n/2 make C = A*B exactly divisible... instead
        // build H and check (A*B - C) = H*Z at a random point via coefficients.
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        let n = 16;
        let domain = Domain::for_size(n).unwrap();
        let a: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        let b: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        let c: Vec<Scalar> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
        let h = domain.h_coefficients(a.clone(), b.clone(), c.clone());
        assert_eq!(h.len(), n - 1);
        // Interpolate A, B, C and check A(x)B(x) - C(x) = H(x)(x^n - 1).
        let (mut pa, mut pb, mut pc) = (a, b, c);
        domain.ifft(&mut pa);
        domain.ifft(&mut pb);
        domain.ifft(&mut pc);
        let horner = |p: &[Scalar], x: Scalar| p.iter().rev().fold(Scalar::ZERO, |acc, c| acc * x + c);
        let x = Scalar::random(&mut rng);
        let lhs = horner(&pa, x) * horner(&pb, x) - horner(&pc, x);
        let rhs = horner(&h, x) * (x.pow_vartime([n as u64]) - Scalar::ONE);
        assert_eq!(lhs, rhs);
    }
}
