//! The one place where cuzk talks to native code.
//!
//! Everything `unsafe` in the workspace lives in this crate (the other crates
//! deny `unsafe_code`): blst's multi-threaded Pippenger MSM and batch
//! addition, reached through blst's Rust bindings, the CUDA backend
//! ([`gpu`], behind the `cuda` feature), and legacy Poseidon on eight
//! preimages at once with AVX-512 IFMA ([`poseidon_lanes`]).
//!
//! Why not blstrs' own `multi_exp`: it takes projective points and converts
//! them all to affine on every call. Parameter files already hold affine
//! points, so we hand blst the affine slices directly.
#![allow(unsafe_code)]
#![warn(missing_docs)]

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
use curve::{blst_affines, projective, BlstCurve};
use group::Group;

mod curve;

/// Number of bits in a BLS12-381 scalar, as blst's MSM expects it.
const SCALAR_BITS: usize = 255;
/// Size of one little-endian canonical scalar.
pub const SCALAR_BYTES: usize = 32;

pub use memmap2::Mmap;

/// Maps a file read-only.
///
/// Mapping is unsafe because another process could truncate or rewrite the
/// file underneath us. cuzk writes parameter files under a temporary name and
/// renames them into place, and never modifies a file it has published, so a
/// mapped parameter file does not change while it is read.
pub fn map_readonly(file: &std::fs::File) -> std::io::Result<memmap2::Mmap> {
    // SAFETY: see above; the mapping is only ever read.
    unsafe { memmap2::Mmap::map(file) }
}

/// Values a file holds as this machine holds them in memory (plain
/// little-endian words, no padding), so a map of the file can be read as
/// them in place.
pub trait MappedValue: Copy + sealed::Sealed {}
impl MappedValue for u32 {}
impl MappedValue for gpu::R1csEntry {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for super::gpu::R1csEntry {}
}

/// `len` values at a byte offset of a read-only map, read in place (no
/// copy, no memory of their own beyond the file's pages): a compiled
/// R1CS read from its file. As for [`map_readonly`], the file must not
/// change while it is mapped.
#[derive(Clone)]
pub struct MappedSlice<T> {
    map: std::sync::Arc<memmap2::Mmap>,
    offset: usize,
    len: usize,
    values: std::marker::PhantomData<T>,
}

impl<T: MappedValue> MappedSlice<T> {
    /// The values at `offset`; `None` where they would not be `T`s as this
    /// machine holds them: past the map's end, not aligned for `T`, or on
    /// a big-endian machine (the caller decodes them instead).
    pub fn new(map: std::sync::Arc<memmap2::Mmap>, offset: usize, len: usize) -> Option<Self> {
        let end = len.checked_mul(std::mem::size_of::<T>())?.checked_add(offset)?;
        let aligned = (map.as_ptr() as usize).checked_add(offset)? % std::mem::align_of::<T>() == 0;
        (cfg!(target_endian = "little") && end <= map.len() && aligned).then_some(Self {
            map,
            offset,
            len,
            values: std::marker::PhantomData,
        })
    }

    /// The values.
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: `new` checked that the `len` values lie inside the map
        // and are aligned for `T`, which (sealed: `u32` and the two-`u32`
        // `repr(C)` entry) any bytes are a valid value of on a
        // little-endian machine; the map is read-only and lives as long as
        // `self`.
        unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(self.offset).cast::<T>(), self.len) }
    }
}

impl<T> std::fmt::Debug for MappedSlice<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MappedSlice({} values at byte {})", self.len, self.offset)
    }
}

pub mod gpu;
pub mod poseidon_lanes;

/// Error for MSM inputs that blst would otherwise reject with a panic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LengthMismatch {
    /// Number of points given.
    pub points: usize,
    /// Number of scalars given (bytes / 32).
    pub scalars: usize,
}

impl std::fmt::Display for LengthMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MSM given {} points but {} scalars", self.points, self.scalars)
    }
}

impl std::error::Error for LengthMismatch {}

fn check_lengths(points: usize, scalar_bytes: usize) -> Result<(), LengthMismatch> {
    if scalar_bytes != points * SCALAR_BYTES {
        return Err(LengthMismatch {
            points,
            scalars: scalar_bytes / SCALAR_BYTES,
        });
    }
    Ok(())
}

/// `sum(scalars[i] * points[i])` on G1 with blst's multi-threaded Pippenger.
///
/// `scalars` holds one canonical little-endian 32-byte scalar per point.
pub fn g1_msm(points: &[G1Affine], scalars: &[u8]) -> Result<G1Projective, LengthMismatch> {
    msm(points, scalars)
}

/// `sum(scalars[i] * points[i])` on G2 with blst's multi-threaded Pippenger.
pub fn g2_msm(points: &[G2Affine], scalars: &[u8]) -> Result<G2Projective, LengthMismatch> {
    msm(points, scalars)
}

fn msm<C: BlstCurve>(points: &[C], scalars: &[u8]) -> Result<C::Projective, LengthMismatch> {
    check_lengths(points.len(), scalars.len())?;
    if points.is_empty() {
        return Ok(C::Projective::identity());
    }
    Ok(projective::<C>(C::blst_mult(
        blst_affines(points),
        scalars,
        SCALAR_BITS,
    )))
}

/// Converts projective G1 points to affine with one field inversion for the
/// whole batch (blst's `blst_p1s_to_affine`, Montgomery's trick), on the
/// calling thread. blstrs has no batch conversion of its own (`group`'s
/// default inverts once per point, about ten times slower), and generating
/// full-size synthetic parameters is dominated by this step.
///
/// Panics if the slices differ in length.
pub fn g1_batch_normalize(points: &[G1Projective], out: &mut [G1Affine]) {
    batch_normalize(points, out)
}

/// [`g1_batch_normalize`] on G2.
pub fn g2_batch_normalize(points: &[G2Projective], out: &mut [G2Affine]) {
    batch_normalize(points, out)
}

fn batch_normalize<C: BlstCurve>(points: &[C::Projective], out: &mut [C]) {
    assert_eq!(points.len(), out.len(), "batch_normalize: length mismatch");
    if points.is_empty() {
        return;
    }
    // blst reads `points` as one contiguous array when the second entry of
    // the pointer list is null.
    let list: [*const C::BlstPoint; 2] = [points.as_ptr().cast(), std::ptr::null()];
    // SAFETY: the layouts match (BlstCurve's contract); `out` has room for
    // `points.len()` affine points and blst writes exactly that many.
    unsafe { C::BATCH_TO_AFFINE(out.as_mut_ptr().cast(), list.as_ptr(), points.len()) }
}

/// Sum of G1 points with blst's batch-affine addition (multi-threaded).
pub fn g1_sum(points: &[G1Affine]) -> G1Projective {
    sum(points)
}

/// Sum of G2 points with blst's batch-affine addition (multi-threaded).
pub fn g2_sum(points: &[G2Affine]) -> G2Projective {
    sum(points)
}

fn sum<C: BlstCurve>(points: &[C]) -> C::Projective {
    if points.is_empty() {
        return C::Projective::identity();
    }
    projective::<C>(C::blst_add(blst_affines(points)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use blstrs::Scalar;
    use ff::Field;
    use group::Curve;
    use rand::SeedableRng;

    #[test]
    fn batch_normalize_matches_to_affine() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let g1: Vec<G1Projective> = (0..1000)
            .map(|i| {
                if i == 500 {
                    G1Projective::identity()
                } else {
                    G1Projective::random(&mut rng)
                }
            })
            .collect();
        let mut out = vec![G1Affine::default(); g1.len()];
        g1_batch_normalize(&g1, &mut out);
        assert!(g1.iter().zip(&out).all(|(p, a)| p.to_affine() == *a));
        let g2: Vec<G2Projective> = (0..100).map(|_| G2Projective::random(&mut rng)).collect();
        let mut out = vec![G2Affine::default(); g2.len()];
        g2_batch_normalize(&g2, &mut out);
        assert!(g2.iter().zip(&out).all(|(p, a)| p.to_affine() == *a));
    }

    fn scalar_bytes(scalars: &[Scalar]) -> Vec<u8> {
        scalars.iter().flat_map(|s| s.to_bytes_le()).collect()
    }

    #[test]
    fn g1_msm_matches_naive_sum() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        for n in [1usize, 2, 31, 32, 33, 300] {
            let points: Vec<G1Affine> = (0..n)
                .map(|_| G1Projective::random(&mut rng).to_affine())
                .collect();
            let mut scalars: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
            scalars[0] = Scalar::ZERO;
            let expected: G1Projective = points.iter().zip(&scalars).map(|(p, s)| *p * s).sum();
            let got = g1_msm(&points, &scalar_bytes(&scalars)).unwrap();
            assert_eq!(got, expected, "n = {n}");
            let sum: G1Projective = points.iter().map(G1Projective::from).sum();
            assert_eq!(g1_sum(&points), sum, "n = {n}");
        }
    }

    #[test]
    fn g2_msm_matches_naive_sum() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
        for n in [1usize, 5, 40] {
            let points: Vec<G2Affine> = (0..n)
                .map(|_| G2Projective::random(&mut rng).to_affine())
                .collect();
            let scalars: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
            let expected: G2Projective = points.iter().zip(&scalars).map(|(p, s)| *p * s).sum();
            assert_eq!(g2_msm(&points, &scalar_bytes(&scalars)).unwrap(), expected);
            let sum: G2Projective = points.iter().map(G2Projective::from).sum();
            assert_eq!(g2_sum(&points), sum);
        }
    }

    #[test]
    fn length_mismatch_is_an_error() {
        let p = vec![G1Affine::default(); 3];
        assert_eq!(
            g1_msm(&p, &[0u8; 64]).unwrap_err(),
            LengthMismatch {
                points: 3,
                scalars: 2
            }
        );
        assert_eq!(g1_msm(&[], &[]).unwrap(), G1Projective::identity());
    }
}
#[cfg(test)]
mod tiny_tests {
    use super::*;
    use blstrs::Scalar;
    use ff::Field;
    use group::Curve;
    #[test]
    fn two_points_one_zero_scalar() {
        let p = (G1Projective::generator() * Scalar::from(5u64)).to_affine();
        let q = (G1Projective::generator() * Scalar::from(7u64)).to_affine();
        let s: Vec<u8> = [Scalar::ZERO, Scalar::from(3u64)]
            .iter()
            .flat_map(|s| s.to_bytes_le())
            .collect();
        assert_eq!(
            g1_msm(&[p, q], &s).unwrap(),
            G1Projective::generator() * Scalar::from(21u64)
        );
        let s: Vec<u8> = [Scalar::ZERO, Scalar::ZERO]
            .iter()
            .flat_map(|s| s.to_bytes_le())
            .collect();
        assert_eq!(g1_msm(&[p, q], &s).unwrap(), G1Projective::identity());
    }
}
