//! Entries for the GPU checks and `cuzk-bench gpu-bench` (the `measurement`
//! feature; never in production): dense MSMs and NTTs of host inputs, the
//! wide kernel alone, the H MSM compared several ways.

use super::{backend, device_ordinal, GpuError, GpuSrs, PathsRef, PathsWritten, PoseidonTables};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use std::time::Duration;

/// Dense G1 MSM on `device` with host inputs (Montgomery scalars): a
/// building block exposed for the GPU checks against blst.
pub fn msm_g1(device: usize, points: &[G1Affine], scalars: &[Scalar]) -> Result<G1Projective, GpuError> {
    msm(device, points, scalars)
}

/// How the wide kernel sums each window's buckets, for the checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WideAccumulation {
    /// XYZZ mixed additions only.
    Xyzz,
    /// Every batch-affine round first, whatever the bucket sizes (in
    /// production the rounds run only while they pay).
    AffineRounds,
}

/// Dense G1 MSM on `device` with host inputs (Montgomery scalars) through
/// cuzk's wide-window kernel, the H MSM's: for the checks against blst.
pub fn msm_g1_wide(
    device: usize,
    points: &[G1Affine],
    scalars: &[Scalar],
    accumulation: WideAccumulation,
) -> Result<G1Projective, GpuError> {
    if points.len() != scalars.len() {
        return Err(GpuError::Invalid(format!(
            "{} points, {} scalars",
            points.len(),
            scalars.len()
        )));
    }
    backend::msm_g1_wide(device_ordinal(device)?, points, scalars, accumulation)
}

/// One MSM's result and device time.
#[derive(Clone, Copy, Debug)]
pub struct TimedMsm {
    /// The sum.
    pub result: G1Projective,
    /// Wall time of the call (device work and its synchronisation).
    pub time: Duration,
}

/// How the wide kernel runs its batch-affine rounds, for measurements
/// beside production's plan: at most `max_rounds` rounds a window (1 to 6),
/// their kernels built for `min_blocks` blocks an SM (3 or 4: fewer
/// registers a thread, more warps to hide the gathers' latency).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AffineRoundPlan {
    /// Rounds a window at most.
    pub max_rounds: u32,
    /// Blocks of 128 threads an SM the rounds' kernels are built for.
    pub min_blocks: u32,
}

/// The H MSM several ways on the same resident points and device scalars.
#[derive(Clone, Debug)]
pub struct HMsmComparison {
    /// sppark's Pippenger.
    pub sppark: TimedMsm,
    /// cuzk's wide kernel, XYZZ sums only.
    pub wide_xyzz: TimedMsm,
    /// cuzk's wide kernel with its batch-affine rounds (as in production).
    pub wide_affine: TimedMsm,
    /// The same with each of the other round plans asked for.
    pub other_plans: Vec<(AffineRoundPlan, TimedMsm)>,
}

impl GpuSrs {
    /// The H MSM over the resident H section's first `scalars.len()` points,
    /// by sppark's Pippenger and by cuzk's wide kernel without and with its
    /// affine rounds (production's plan, then each of `other_plans`), one
    /// after the other.
    pub fn compare_h_msm(
        &self,
        scalars: &[Scalar],
        other_plans: &[AffineRoundPlan],
    ) -> Result<HMsmComparison, GpuError> {
        if self.streamed || scalars.len() > self.lens[0] {
            return Err(GpuError::Invalid(
                "needs resident parameters and at most the H section's points".into(),
            ));
        }
        if let Some(bad) = other_plans
            .iter()
            .find(|p| !(1..=6).contains(&p.max_rounds) || !(3..=4).contains(&p.min_blocks))
        {
            return Err(GpuError::Invalid(format!("unknown affine round plan {bad:?}")));
        }
        self.srs.compare_h_msm(scalars, other_plans)
    }
}

/// Dense G2 MSM on `device` with host inputs (Montgomery scalars), through
/// sppark's Pippenger over fp2: a building block exposed for the GPU checks
/// against blst.
pub fn msm_g2(device: usize, points: &[G2Affine], scalars: &[Scalar]) -> Result<G2Projective, GpuError> {
    msm(device, points, scalars)
}

fn msm<C: backend::GpuCurve>(
    device: usize,
    points: &[C],
    scalars: &[Scalar],
) -> Result<C::Projective, GpuError> {
    if points.len() != scalars.len() || points.is_empty() {
        return Err(GpuError::Invalid(format!(
            "{} points, {} scalars",
            points.len(),
            scalars.len()
        )));
    }
    backend::msm(device_ordinal(device)?, points, scalars)
}

/// In-place NTT of a power-of-two-length vector on `device` (natural order in
/// and out), forward or inverse, on the domain or its coset.
pub fn ntt(device: usize, values: &mut [Scalar], inverse: bool, coset: bool) -> Result<(), GpuError> {
    if !values.len().is_power_of_two() {
        return Err(GpuError::Invalid(format!(
            "NTT length {} is not a power of two",
            values.len()
        )));
    }
    backend::ntt(device_ordinal(device)?, values, inverse, coset)
}

/// `paths` finished on `device` in `aux` (copied there and back): the
/// check of the device's path writer against the host's, and its
/// measurement.
pub fn write_paths(
    device: usize,
    tables: &PoseidonTables,
    paths: PathsRef<'_>,
    aux: &mut [Scalar],
) -> Result<PathsWritten, GpuError> {
    paths.check(tables, aux.len())?;
    backend::write_paths(device_ordinal(device)?, tables, paths, aux)
}

extern "C" {
    /// cuda/paths_host.cpp.
    fn cuzk_paths_write_host(
        aux: *mut Scalar,
        paths: *const super::paths::PathsC,
        tables: *const super::paths::TablesC,
        mismatches: *mut u64,
        first_mismatch: *mut u64,
    );
}

/// `paths` written into `aux` by the path kernel's own arithmetic built
/// for the host (`cuda/paths_host.cpp`, the source of the device's
/// `paths_math.cuh` over blst's field): the check of the kernel's logic
/// on machines without a GPU. `kernel` is the host's time.
pub fn write_paths_on_host(
    tables: &PoseidonTables,
    paths: PathsRef<'_>,
    aux: &mut [Scalar],
) -> Result<PathsWritten, GpuError> {
    paths.check(tables, aux.len())?;
    let (p, t) = (
        super::paths::PathsC::new(Some(paths), false),
        super::paths::TablesC::new(Some(tables)),
    );
    let (mut mismatches, mut first) = (0u64, 0u64);
    let started = std::time::Instant::now();
    // SAFETY: `check` found every level's indices within the arrays and
    // `aux`; the pointers are valid for the call, which keeps none.
    unsafe { cuzk_paths_write_host(aux.as_mut_ptr(), &p, &t, &mut mismatches, &mut first) };
    Ok(PathsWritten {
        mismatches,
        first_mismatch: (mismatches > 0).then_some(first as usize),
        kernel: started.elapsed(),
    })
}
