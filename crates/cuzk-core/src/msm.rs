//! Multi-scalar multiplications shaped by the witness.
//!
//! Filecoin witnesses are mostly zeros and ones. Zero scalars contribute
//! nothing, scalars equal to one need a plain point addition, and only the
//! rest go through Pippenger. Sections of the parameter file that are
//! density-filtered (A, B) hold points only for the variables whose bit is set
//! in the density bitmap; the i-th set bit picks the i-th point.

use crate::assignment::DensityBitmap;
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use rayon::prelude::*;

/// Scalars to be multiplied, stored both as field elements (to classify
/// them) and as the canonical little-endian bytes blst's Pippenger consumes.
#[derive(Debug)]
pub struct ScalarVector {
    kinds: Vec<ScalarKind>,
    bytes: Vec<[u8; 32]>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ScalarKind {
    Zero,
    One,
    Other,
}

impl ScalarVector {
    /// Converts and classifies `scalars` (in parallel).
    pub fn new(scalars: &[Scalar]) -> Self {
        let (kinds, bytes) = scalars
            .par_iter()
            .with_min_len(1 << 12)
            .map(|s| {
                let kind = if s.is_zero_vartime() {
                    ScalarKind::Zero
                } else if *s == Scalar::ONE {
                    ScalarKind::One
                } else {
                    ScalarKind::Other
                };
                (kind, s.to_bytes_le())
            })
            .unzip();
        Self { kinds, bytes }
    }

    /// Number of scalars.
    pub fn len(&self) -> usize {
        self.kinds.len()
    }

    /// Whether there are no scalars.
    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }
}

/// Group operations the structured MSM needs, for G1 and G2.
pub trait MsmGroup: Sized + Send + Sync {
    /// Affine point type of the parameter file.
    type Affine: Copy + Send + Sync;
    /// Result type.
    type Projective: Copy + Send + Sync + std::ops::Add<Output = Self::Projective>;
    /// Full Pippenger MSM.
    fn msm(points: &[Self::Affine], scalars: &[u8]) -> Self::Projective;
    /// Sum of points.
    fn sum(points: &[Self::Affine]) -> Self::Projective;
}

/// Marker for G1.
#[derive(Debug)]
pub struct G1;
/// Marker for G2.
#[derive(Debug)]
pub struct G2;

impl MsmGroup for G1 {
    type Affine = G1Affine;
    type Projective = G1Projective;
    fn msm(points: &[G1Affine], scalars: &[u8]) -> G1Projective {
        cuzk_sys::g1_msm(points, scalars).expect("gathered points and scalars have equal length")
    }
    fn sum(points: &[G1Affine]) -> G1Projective {
        cuzk_sys::g1_sum(points)
    }
}

impl MsmGroup for G2 {
    type Affine = G2Affine;
    type Projective = G2Projective;
    fn msm(points: &[G2Affine], scalars: &[u8]) -> G2Projective {
        cuzk_sys::g2_msm(points, scalars).expect("gathered points and scalars have equal length")
    }
    fn sum(points: &[G2Affine]) -> G2Projective {
        cuzk_sys::g2_sum(points)
    }
}

/// Points and scalars gathered from one chunk of the assignment.
struct Gathered<A> {
    ones: Vec<A>,
    others: Vec<A>,
    other_scalars: Vec<u8>,
}

/// `sum over i with density[i] of scalars[i] * bases[rank(i)]`, or over all i
/// when `density` is `None` (then `bases` pairs up with `scalars` directly).
///
/// The caller guarantees `bases.len()` equals the number of selected scalars.
pub fn structured_msm<G: MsmGroup>(
    bases: &[G::Affine],
    scalars: &ScalarVector,
    density: Option<&DensityBitmap>,
) -> G::Projective {
    // Chunks are whole 64-bit density words so each chunk's first base index
    // is a prefix popcount.
    const CHUNK: usize = 64 * 1024;
    let n = scalars.len();
    let starts: Vec<usize> = match density {
        None => (0..n.div_ceil(CHUNK)).map(|c| c * CHUNK).collect(),
        Some(d) => {
            let words_per_chunk = CHUNK / 64;
            let mut acc = 0;
            d.words()
                .chunks(words_per_chunk)
                .map(|ws| {
                    let start = acc;
                    acc += ws.iter().map(|w| w.count_ones() as usize).sum::<usize>();
                    start
                })
                .collect()
        }
    };
    let gathered: Vec<Gathered<G::Affine>> = starts
        .par_iter()
        .enumerate()
        .map(|(chunk, &first_base)| {
            let range = chunk * CHUNK..((chunk + 1) * CHUNK).min(n);
            let mut g = Gathered {
                ones: Vec::new(),
                others: Vec::new(),
                other_scalars: Vec::new(),
            };
            let mut base = first_base;
            for i in range {
                if let Some(d) = density {
                    if !d.get(i) {
                        continue;
                    }
                }
                match scalars.kinds[i] {
                    ScalarKind::Zero => {}
                    ScalarKind::One => g.ones.push(bases[base]),
                    ScalarKind::Other => {
                        g.others.push(bases[base]);
                        g.other_scalars.extend_from_slice(&scalars.bytes[i]);
                    }
                }
                base += 1;
            }
            g
        })
        .collect();

    let ones: Vec<G::Affine> = gathered.iter().flat_map(|g| g.ones.iter().copied()).collect();
    let total_others = gathered.iter().map(|g| g.others.len()).sum();
    let mut others = Vec::with_capacity(total_others);
    let mut other_scalars = Vec::with_capacity(total_others * 32);
    for g in gathered {
        others.extend_from_slice(&g.others);
        other_scalars.extend_from_slice(&g.other_scalars);
    }
    let (sum_ones, sum_others) = rayon::join(|| G::sum(&ones), || G::msm(&others, &other_scalars));
    sum_ones + sum_others
}

/// One MSM split by the witness into index lists, the form the GPU backend
/// consumes: which selected points have scalar one (a bitmap), and which
/// have another non-zero scalar (indices and the scalars).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct MsmSplit {
    /// Points the MSM covers (the selected scalars).
    pub npoints: usize,
    /// Bit i: point i's scalar is one. Padded to a multiple of 1024 bits.
    pub ones_bitmap: Vec<u32>,
    /// Points whose scalar is neither zero nor one.
    pub other_index: Vec<u32>,
    /// Their scalars, canonical little-endian.
    pub other_scalars: Vec<[u8; 32]>,
}

/// Splits the MSM over `scalars` (restricted to `density` when given).
pub fn split_msm(scalars: &ScalarVector, density: Option<&DensityBitmap>) -> MsmSplit {
    const CHUNK: usize = 64 * 1024;
    let n = scalars.len();
    let starts: Vec<usize> = match density {
        None => (0..n.div_ceil(CHUNK)).map(|c| c * CHUNK).collect(),
        Some(d) => {
            let mut acc = 0;
            d.words()
                .chunks(CHUNK / 64)
                .map(|ws| {
                    let start = acc;
                    acc += ws.iter().map(|w| w.count_ones() as usize).sum::<usize>();
                    start
                })
                .collect()
        }
    };
    let npoints = density.map_or(n, |d| d.count_ones());
    // Per chunk: ranks of the ones, ranks and values of the others.
    type ChunkSplit = (Vec<u32>, Vec<u32>, Vec<[u8; 32]>);
    let parts: Vec<ChunkSplit> = starts
        .par_iter()
        .enumerate()
        .map(|(chunk, &first)| {
            let (mut ones, mut index, mut values) = (Vec::new(), Vec::new(), Vec::new());
            let mut rank = first;
            for i in chunk * CHUNK..((chunk + 1) * CHUNK).min(n) {
                if density.is_some_and(|d| !d.get(i)) {
                    continue;
                }
                match scalars.kinds[i] {
                    ScalarKind::Zero => {}
                    ScalarKind::One => ones.push(rank as u32),
                    ScalarKind::Other => {
                        index.push(rank as u32);
                        values.push(scalars.bytes[i]);
                    }
                }
                rank += 1;
            }
            (ones, index, values)
        })
        .collect();
    let mut split = MsmSplit {
        npoints,
        ones_bitmap: vec![0u32; npoints.div_ceil(1024) * 32],
        ..MsmSplit::default()
    };
    for (ones, index, values) in parts {
        for rank in ones {
            split.ones_bitmap[rank as usize / 32] |= 1 << (rank % 32);
        }
        split.other_index.extend_from_slice(&index);
        split.other_scalars.extend_from_slice(&values);
    }
    split
}

/// Plain MSM over dense scalars (the H query), all through Pippenger.
pub fn dense_msm<G: MsmGroup>(bases: &[G::Affine], scalars: &[Scalar]) -> G::Projective {
    let bytes: Vec<u8> = scalars
        .par_iter()
        .with_min_len(1 << 12)
        .flat_map_iter(|s| s.to_bytes_le())
        .collect();
    G::msm(bases, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use group::{Curve, Group};
    use rand::{Rng, SeedableRng};

    /// Scalars that are 45 % zero, 45 % one and 10 % random.
    fn mixed_scalars(n: usize, rng: &mut impl Rng) -> Vec<Scalar> {
        (0..n)
            .map(|_| match rng.gen_range(0..20) {
                0..=8 => Scalar::ZERO,
                9..=17 => Scalar::ONE,
                _ => Scalar::random(&mut *rng),
            })
            .collect()
    }

    #[test]
    fn structured_msm_matches_naive_with_and_without_density() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for n in [1usize, 63, 64, 65, 1000, 70_000] {
            let scalars = mixed_scalars(n, &mut rng);
            let mut density = DensityBitmap::with_capacity(n);
            let mut selected = Vec::new();
            for i in 0..n {
                density.push_zero();
                if rng.gen_bool(0.3) {
                    density.set(i);
                    selected.push(i);
                }
            }
            // A few distinct points repeated keep the naive sum cheap.
            let palette: Vec<G1Affine> = (0..16)
                .map(|_| G1Projective::random(&mut rng).to_affine())
                .collect();
            let bases: Vec<G1Affine> = (0..n).map(|i| palette[i % 16]).collect();
            let vector = ScalarVector::new(&scalars);

            let expected: G1Projective = bases.iter().zip(&scalars).map(|(p, s)| *p * s).sum();
            assert_eq!(
                structured_msm::<G1>(&bases, &vector, None),
                expected,
                "dense n = {n}"
            );

            let sparse_bases: Vec<G1Affine> = selected.iter().map(|&i| bases[i]).collect();
            let expected: G1Projective = selected.iter().map(|&i| bases[i] * scalars[i]).sum();
            assert_eq!(
                structured_msm::<G1>(&sparse_bases, &vector, Some(&density)),
                expected,
                "sparse n = {n}"
            );
        }
    }

    #[test]
    fn split_msm_agrees_with_the_scalars() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let n = 200_000;
        let scalars = mixed_scalars(n, &mut rng);
        let mut density = DensityBitmap::with_capacity(n);
        for i in 0..n {
            density.push_zero();
            if rng.gen_bool(0.25) {
                density.set(i);
            }
        }
        let split = split_msm(&ScalarVector::new(&scalars), Some(&density));
        let selected: Vec<Scalar> = (0..n).filter(|&i| density.get(i)).map(|i| scalars[i]).collect();
        assert_eq!(split.npoints, selected.len());
        assert_eq!(split.ones_bitmap.len() % 32, 0);
        for (rank, s) in selected.iter().enumerate() {
            let one = split.ones_bitmap[rank / 32] >> (rank % 32) & 1 == 1;
            assert_eq!(one, *s == Scalar::ONE, "rank {rank}");
        }
        let others: Vec<usize> = (0..selected.len())
            .filter(|&r| !selected[r].is_zero_vartime() && selected[r] != Scalar::ONE)
            .collect();
        assert_eq!(
            split.other_index,
            others.iter().map(|&r| r as u32).collect::<Vec<_>>()
        );
        for (k, &r) in others.iter().enumerate() {
            assert_eq!(split.other_scalars[k], selected[r].to_bytes_le());
        }
    }

    #[test]
    fn g2_structured_msm_matches_naive() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
        let n = 300;
        let scalars = mixed_scalars(n, &mut rng);
        let bases: Vec<G2Affine> = (0..n)
            .map(|_| G2Projective::random(&mut rng).to_affine())
            .collect();
        let expected: G2Projective = bases.iter().zip(&scalars).map(|(p, s)| *p * s).sum();
        assert_eq!(
            structured_msm::<G2>(&bases, &ScalarVector::new(&scalars), None),
            expected
        );
    }
}
