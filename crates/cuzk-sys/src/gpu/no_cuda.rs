//! The backend of a build without the `cuda` feature: no devices, and every
//! call reports [`GpuError::Disabled`]. [`Srs`] and [`Pin`] have no values,
//! so a `GpuSrs` or `HostPin` cannot exist in this build.
#![deny(unsafe_code)]

use super::{
    DeviceInfo, GpuError, PartitionInput, PartitionOutput, R1csUpload, Sections, WitnessInput, WitnessOutput,
};
#[cfg(feature = "measurement")]
use crate::curve::BlstCurve;
use blstrs::Scalar;

pub(super) fn device_count() -> usize {
    0
}

pub(super) fn device_info(_device: i32) -> Result<DeviceInfo, GpuError> {
    Err(GpuError::Disabled)
}

/// Never made: [`Srs::create`] always fails.
#[derive(Debug)]
pub(super) enum Srs {}

impl Srs {
    pub(super) fn create(_device: i32, _sections: &Sections<'_>, _streamed: bool) -> Result<Self, GpuError> {
        Err(GpuError::Disabled)
    }

    pub(super) fn stage(&self, _input: &PartitionInput<'_>) -> Result<Staged, GpuError> {
        match *self {}
    }

    pub(super) fn prove(
        &self,
        _sections: &Sections<'_>,
        _input: &PartitionInput<'_>,
        _staged: Option<Staged>,
    ) -> Result<PartitionOutput, GpuError> {
        match *self {}
    }
}

/// Never made: only an [`Srs`] stages, and none exists.
#[derive(Debug)]
pub(super) enum Staged {}

pub(super) fn reserve(_device: i32, _bytes: usize) -> Result<(), GpuError> {
    Err(GpuError::Disabled)
}

#[cfg(feature = "measurement")]
pub(super) fn msm_g1_wide(
    _device: i32,
    _points: &[blstrs::G1Affine],
    _scalars: &[Scalar],
    _accumulation: super::WideAccumulation,
) -> Result<blstrs::G1Projective, GpuError> {
    Err(GpuError::Disabled)
}

#[cfg(feature = "measurement")]
impl Srs {
    pub(super) fn compare_h_msm(
        &self,
        _scalars: &[Scalar],
        _other_plans: &[super::AffineRoundPlan],
    ) -> Result<super::HMsmComparison, GpuError> {
        match *self {}
    }
}

impl Srs {
    pub(super) fn stage_witness(&self, _r1cs: &R1cs, _input: &WitnessInput<'_>) -> Result<Staged, GpuError> {
        match *self {}
    }

    pub(super) fn prove_witness(
        &self,
        _r1cs: &R1cs,
        _input: &WitnessInput<'_>,
        _staged: Option<Staged>,
    ) -> Result<WitnessOutput, GpuError> {
        match *self {}
    }
}

/// Never made: [`R1cs::create`] always fails.
#[derive(Debug)]
pub(super) enum R1cs {}

impl R1cs {
    pub(super) fn create(_device: i32, _upload: &R1csUpload<'_>) -> Result<Self, GpuError> {
        Err(GpuError::Disabled)
    }

    pub(super) fn evaluate(
        &self,
        _inputs: &[Scalar],
        _aux: super::PackedScalarsRef<'_>,
        _paths: Option<super::LeftPathsRef<'_>>,
        _rows: usize,
    ) -> Result<[Vec<Scalar>; 3], GpuError> {
        match *self {}
    }
}

/// Never made: [`Pin::new`] always fails.
#[derive(Debug)]
pub(super) enum Pin {}

impl Pin {
    pub(super) fn new<T: Copy>(_points: &[T]) -> Result<Self, GpuError> {
        Err(GpuError::Disabled)
    }
}

/// The CUDA build's per-group MSM entry point; nothing to select here.
#[cfg(feature = "measurement")]
pub(super) trait GpuCurve: BlstCurve {}

#[cfg(feature = "measurement")]
impl<C: BlstCurve> GpuCurve for C {}

#[cfg(feature = "measurement")]
pub(super) fn msm<C: GpuCurve>(
    _device: i32,
    _points: &[C],
    _scalars: &[Scalar],
) -> Result<C::Projective, GpuError> {
    Err(GpuError::Disabled)
}

#[cfg(feature = "measurement")]
pub(super) fn ntt(
    _device: i32,
    _values: &mut [Scalar],
    _inverse: bool,
    _coset: bool,
) -> Result<(), GpuError> {
    Err(GpuError::Disabled)
}

#[cfg(feature = "measurement")]
pub(super) fn write_paths(
    _device: i32,
    _tables: &super::PoseidonTables,
    _paths: super::PathsRef<'_>,
    _aux: &mut [Scalar],
) -> Result<super::PathsWritten, GpuError> {
    Err(GpuError::Disabled)
}
