//! G1 and G2 as native code sees them: blstrs' types over blst's, so that
//! each MSM, sum and batch conversion is written once for both groups.

use blst::{blst_p1, blst_p1_affine, blst_p2, blst_p2_affine, MultiPoint};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};

/// A BLS12-381 group by its affine blstrs type (what MSM inputs are made of).
///
/// # Safety
///
/// `Self` must have the layout of `BlstAffine`, and `Projective` that of
/// `BlstPoint` (blstrs' types are `#[repr(transparent)]` wrappers of blst's):
/// the generic helpers below reinterpret one as the other.
pub(crate) unsafe trait BlstCurve: Copy + Default {
    /// The blstrs projective (Jacobian) type.
    type Projective: group::Group;
    /// blst's affine type, the layout of `Self`.
    type BlstAffine;
    /// blst's Jacobian type, the layout of `Projective` (and of the points
    /// the CUDA code returns).
    type BlstPoint: Copy + Default;
    /// blst's batch conversion to affine (`blst_p1s_to_affine` or
    /// `blst_p2s_to_affine`).
    const BATCH_TO_AFFINE: unsafe extern "C" fn(*mut Self::BlstAffine, *const *const Self::BlstPoint, usize);
    /// blst's multi-threaded Pippenger.
    fn blst_mult(points: &[Self::BlstAffine], scalars: &[u8], nbits: usize) -> Self::BlstPoint;
    /// blst's multi-threaded batch-affine addition.
    fn blst_add(points: &[Self::BlstAffine]) -> Self::BlstPoint;
}

// blstrs' point types are `#[repr(transparent)]` wrappers of blst's, so a
// slice of one is a slice of the other. The assertions make a layout change
// in a future blstrs a compile error rather than memory corruption.
const _: () = assert!(std::mem::size_of::<G1Affine>() == std::mem::size_of::<blst_p1_affine>());
const _: () = assert!(std::mem::size_of::<G2Affine>() == std::mem::size_of::<blst_p2_affine>());
const _: () = assert!(std::mem::size_of::<G1Projective>() == std::mem::size_of::<blst_p1>());
const _: () = assert!(std::mem::size_of::<G2Projective>() == std::mem::size_of::<blst_p2>());
const _: () = assert!(std::mem::align_of::<G1Affine>() == std::mem::align_of::<blst_p1_affine>());
const _: () = assert!(std::mem::align_of::<G2Affine>() == std::mem::align_of::<blst_p2_affine>());

// SAFETY: G1Affine and G1Projective are repr(transparent) over
// blst_p1_affine and blst_p1 (sizes checked above).
unsafe impl BlstCurve for G1Affine {
    type Projective = G1Projective;
    type BlstAffine = blst_p1_affine;
    type BlstPoint = blst_p1;
    const BATCH_TO_AFFINE: unsafe extern "C" fn(*mut blst_p1_affine, *const *const blst_p1, usize) =
        blst::blst_p1s_to_affine;
    fn blst_mult(points: &[blst_p1_affine], scalars: &[u8], nbits: usize) -> blst_p1 {
        points.mult(scalars, nbits)
    }
    fn blst_add(points: &[blst_p1_affine]) -> blst_p1 {
        points.add()
    }
}

// SAFETY: as for G1, over blst_p2_affine and blst_p2.
unsafe impl BlstCurve for G2Affine {
    type Projective = G2Projective;
    type BlstAffine = blst_p2_affine;
    type BlstPoint = blst_p2;
    const BATCH_TO_AFFINE: unsafe extern "C" fn(*mut blst_p2_affine, *const *const blst_p2, usize) =
        blst::blst_p2s_to_affine;
    fn blst_mult(points: &[blst_p2_affine], scalars: &[u8], nbits: usize) -> blst_p2 {
        points.mult(scalars, nbits)
    }
    fn blst_add(points: &[blst_p2_affine]) -> blst_p2 {
        points.add()
    }
}

/// `points` as blst's affine points.
pub(crate) fn blst_affines<C: BlstCurve>(points: &[C]) -> &[C::BlstAffine] {
    // SAFETY: C has BlstAffine's layout (the trait's contract).
    unsafe { std::slice::from_raw_parts(points.as_ptr().cast(), points.len()) }
}

/// A blst Jacobian point as its blstrs type.
pub(crate) fn projective<C: BlstCurve>(p: C::BlstPoint) -> C::Projective {
    // SAFETY: Projective has BlstPoint's layout (the trait's contract);
    // transmute_copy because the compiler cannot see that for a generic C.
    unsafe { std::mem::transmute_copy::<C::BlstPoint, C::Projective>(&p) }
}
