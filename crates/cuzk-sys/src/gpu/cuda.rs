//! The backend of a build with the `cuda` feature: the FFI to
//! `cuda/cuzk_gpu.cu`. Each `#[repr(C)]` struct here mirrors the C struct
//! named in its doc comment, field for field; the arguments were checked by
//! the caller (`gpu/mod.rs`) before they get here.

use super::paths::{PathsC, TablesC};
use super::{
    DeviceInfo, GpuError, MsmPlan, PartitionInput, PartitionOutput, R1csEntry, R1csUpload, RegionTimings,
    Sections, SmallOthers, WitnessInput, WitnessOutput, MIN_DEVICE_MSM,
};
use super::{PathsRef, PathsWritten, PoseidonTables};
use crate::curve::{blst_affines, projective, BlstCurve};
use blst::{blst_p1, blst_p1_affine, blst_p2, blst_p2_affine};
use blstrs::{G1Affine, G1Projective, G2Affine, Scalar};
use std::ffi::c_void;
use std::time::Duration;

/// `cuzk_msm_plan_t`.
#[repr(C)]
struct MsmPlanC {
    offset: usize,
    npoints: usize,
    ones_bitmap: *const u32,
    other_index: *const u32,
    other_scalar: *const [u8; 32],
    nothers: usize,
}

impl MsmPlanC {
    fn new(p: &MsmPlan<'_>) -> Self {
        Self {
            offset: p.offset,
            npoints: p.npoints,
            ones_bitmap: p.ones_bitmap.as_ptr(),
            other_index: p.other_index.as_ptr(),
            other_scalar: p.other_scalars.as_ptr(),
            nothers: p.other_index.len(),
        }
    }
}

/// `cuzk_tuning_t`.
#[repr(C)]
struct TuningC {
    stream_chunk: usize,
    msm_window: usize,
    h_msm: u32,
    h_serial: u32,
    ntts_beside: u32,
}

/// `cuzk_partition_t`.
#[repr(C)]
struct PartitionC {
    a: *const Scalar,
    b: *const Scalar,
    c: *const Scalar,
    abc_len: usize,
    lg_domain: u32,
    z_inv: Scalar,
    l: MsmPlanC,
    a_aux: MsmPlanC,
    b_aux: MsmPlanC,
    tuning: TuningC,
}

/// `cuzk_host_sections_t`.
#[repr(C)]
struct HostSectionsC {
    h: *const blst_p1_affine,
    l: *const blst_p1_affine,
    a: *const blst_p1_affine,
    b_g1: *const blst_p1_affine,
    b_g2: *const blst_p2_affine,
}

impl HostSectionsC {
    fn new(s: &Sections<'_>) -> Self {
        Self {
            h: blst_affines(s.h).as_ptr(),
            l: blst_affines(s.l).as_ptr(),
            a: blst_affines(s.a).as_ptr(),
            b_g1: blst_affines(s.b_g1).as_ptr(),
            b_g2: blst_affines(s.b_g2).as_ptr(),
        }
    }
}

/// `cuzk_srs_create_t`: the arguments of `cuzk_gpu_srs_create`.
#[repr(C)]
struct SrsCreateC {
    device: i32,
    streamed: bool,
    /// Read once when resident; not kept in streamed mode.
    host: HostSectionsC,
    nh: usize,
    nl: usize,
    na: usize,
    nb: usize,
    nb2: usize,
}

/// `cuzk_region_ms_t`: milliseconds, in the order the steps run.
#[repr(C)]
#[derive(Default)]
struct RegionMsC {
    upload: f64,
    ntt: f64,
    h_msm: f64,
    l_msm: f64,
    a_msm: f64,
    b_g1_msm: f64,
    b_g2_msm: f64,
    abc: f64,
    classify: f64,
}

impl RegionMsC {
    fn timings(&self) -> RegionTimings {
        // Never negative (steady clock differences), but a NaN or an
        // overflow must not panic here.
        let d = |ms: f64| Duration::try_from_secs_f64(ms / 1e3).unwrap_or_default();
        RegionTimings {
            upload: d(self.upload),
            ntt: d(self.ntt),
            h_msm: d(self.h_msm),
            l_msm: d(self.l_msm),
            a_msm: d(self.a_msm),
            b_g1_msm: d(self.b_g1_msm),
            b_g2_msm: d(self.b_g2_msm),
            abc: d(self.abc),
            classify: d(self.classify),
        }
    }
}

/// `cuzk_partition_out_t`: Jacobian points in blst's layouts.
#[repr(C)]
#[derive(Default)]
struct PartitionOutC {
    h: blst_p1,
    l: blst_p1,
    a_aux: blst_p1,
    b_aux: blst_p1,
    b_g2: blst_p2,
    ms: RegionMsC,
}

// The C side static_asserts the same sizes (cuzk_gpu.cu).
const _: () = assert!(std::mem::size_of::<blst_p1>() == 144);
const _: () = assert!(std::mem::size_of::<blst_p2>() == 288);
const _: () = assert!(std::mem::size_of::<RegionMsC>() == 9 * 8);
const _: () = assert!(std::mem::size_of::<PartitionOutC>() == 4 * 144 + 288 + 9 * 8);
const _: () = assert!(std::mem::size_of::<R1csEntry>() == 8);

/// cuzk_r1cs_matrix_t.
#[repr(C)]
struct R1csMatrixC {
    row_starts: *const u32,
    entries: *const R1csEntry,
    nnz: usize,
}

/// cuzk_r1cs_create_t.
#[repr(C)]
struct R1csCreateC {
    device: i32,
    rows: usize,
    m: [R1csMatrixC; 3],
    coefficients: *const Scalar,
    ncoefficients: usize,
    num_inputs: usize,
    num_aux: usize,
    a_aux_density: *const u64,
    b_aux_density: *const u64,
    a_aux_ones: usize,
    b_aux_ones: usize,
}

/// cuzk_witness_partition_t.
#[repr(C)]
struct WitnessPartitionC {
    inputs: *const Scalar,
    aux: PackedC,
    lg_domain: u32,
    z_inv: Scalar,
    a_offset: usize,
    b_offset: usize,
    tuning: TuningC,
    paths: PathsC,
    tables: TablesC,
}

/// cuzk_packed_t.
#[repr(C)]
struct PackedC {
    len: usize,
    wide_count: usize,
    ones: *const u64,
    wide: *const u64,
    wide_before: *const u32,
    values: *const Scalar,
}

impl PackedC {
    fn new(packed: &super::PackedScalarsRef<'_>) -> Self {
        Self {
            len: packed.len,
            wide_count: packed.values.len(),
            ones: packed.ones.as_ptr(),
            wide: packed.wide.as_ptr(),
            wide_before: packed.wide_before.as_ptr(),
            values: packed.values.as_ptr(),
        }
    }
}

/// cuzk_small_others_t.
#[repr(C)]
struct SmallOthersC {
    index: *mut u32,
    scalar: *mut Scalar,
    count: usize,
}
const _: () = assert!(std::mem::size_of::<G2Affine>() == 192);

/// `cuzk_device_info_t`.
#[repr(C)]
struct DeviceInfoC {
    name: [u8; 256],
    total_bytes: usize,
    free_bytes: usize,
    sm_count: i32,
    major: i32,
    minor: i32,
}

/// `cuzk_gpu_msm_g1` or `cuzk_gpu_msm_g2`: a dense MSM of host points and
/// Montgomery scalars.
#[cfg(feature = "measurement")]
type MsmFn<C> = unsafe extern "C" fn(
    device: i32,
    points: *const <C as BlstCurve>::BlstAffine,
    scalars: *const Scalar,
    n: usize,
    out: *mut <C as BlstCurve>::BlstPoint,
) -> sppark::Error;

extern "C" {
    fn cuzk_gpu_count() -> usize;
    fn cuzk_gpu_info(device: i32, info: *mut DeviceInfoC) -> sppark::Error;
    fn cuzk_gpu_srs_create(params: *const SrsCreateC, out: *mut *mut c_void) -> sppark::Error;
    fn cuzk_gpu_srs_drop(srs: *mut c_void);
    fn cuzk_gpu_host_register(ptr: *mut c_void, bytes: usize) -> sppark::Error;
    fn cuzk_gpu_host_unregister(ptr: *mut c_void);
    fn cuzk_gpu_reserve(device: i32, bytes: usize, out: *mut *mut c_void) -> sppark::Error;
    fn cuzk_gpu_stage_abc(srs: *const c_void, p: *const PartitionC, out: *mut *mut c_void) -> sppark::Error;
    fn cuzk_gpu_stage_witness(
        srs: *const c_void,
        r1cs: *const c_void,
        p: *const WitnessPartitionC,
        out: *mut *mut c_void,
    ) -> sppark::Error;
    fn cuzk_gpu_staged_drop(staged: *mut c_void);
    fn cuzk_gpu_prove(
        srs: *const c_void,
        host: *const HostSectionsC,
        p: *const PartitionC,
        staged: *mut c_void,
        out: *mut PartitionOutC,
    ) -> sppark::Error;
    fn cuzk_gpu_r1cs_create(params: *const R1csCreateC, out: *mut *mut c_void) -> sppark::Error;
    fn cuzk_gpu_r1cs_drop(r1cs: *mut c_void);
    fn cuzk_gpu_r1cs_evaluate(
        r1cs: *const c_void,
        inputs: *const Scalar,
        aux: *const PackedC,
        paths: *const PathsC,
        tables: *const TablesC,
        a: *mut Scalar,
        b: *mut Scalar,
        c: *mut Scalar,
    ) -> sppark::Error;
    fn cuzk_gpu_prove_witness(
        srs: *const c_void,
        r1cs: *const c_void,
        p: *const WitnessPartitionC,
        staged: *mut c_void,
        small: *mut SmallOthersC,
        out: *mut PartitionOutC,
    ) -> sppark::Error;
    #[cfg(feature = "measurement")]
    fn cuzk_gpu_msm_g1(
        device: i32,
        points: *const blst_p1_affine,
        scalars: *const Scalar,
        n: usize,
        out: *mut blst_p1,
    ) -> sppark::Error;
    #[cfg(feature = "measurement")]
    fn cuzk_gpu_msm_g2(
        device: i32,
        points: *const blst_p2_affine,
        scalars: *const Scalar,
        n: usize,
        out: *mut blst_p2,
    ) -> sppark::Error;
    #[cfg(feature = "measurement")]
    fn cuzk_gpu_msm_g1_wide(
        device: i32,
        points: *const blst_p1_affine,
        scalars: *const Scalar,
        n: usize,
        affine: u32,
        out: *mut blst_p1,
    ) -> sppark::Error;
    #[cfg(feature = "measurement")]
    fn cuzk_gpu_h_msm_compare(
        srs: *const c_void,
        scalars: *const Scalar,
        n: usize,
        plans: *const u32,
        nplans: usize,
        out: *mut blst_p1,
        ms: *mut f64,
    ) -> sppark::Error;
    #[cfg(feature = "measurement")]
    fn cuzk_gpu_ntt(device: i32, inout: *mut Scalar, lg: u32, inverse: bool, coset: bool) -> sppark::Error;
    #[cfg(feature = "measurement")]
    fn cuzk_gpu_write_paths(
        device: i32,
        aux: *mut Scalar,
        n: usize,
        paths: *const PathsC,
        tables: *const TablesC,
        mismatches: *mut u64,
        first_mismatch: *mut u64,
        kernel_ms: *mut f64,
    ) -> sppark::Error;
}

#[cfg(feature = "measurement")]
pub(super) fn write_paths(
    device: i32,
    tables: &PoseidonTables,
    paths: PathsRef<'_>,
    aux: &mut [Scalar],
) -> Result<PathsWritten, GpuError> {
    let (p, t) = (PathsC::new(Some(paths), false), TablesC::new(Some(tables)));
    let (mut mismatches, mut first, mut ms) = (0u64, 0u64, 0f64);
    // SAFETY: the caller checked that every level's indices stay within
    // the arrays and `aux`; the pointers are valid for the call.
    check(unsafe {
        cuzk_gpu_write_paths(
            device,
            aux.as_mut_ptr(),
            aux.len(),
            &p,
            &t,
            &mut mismatches,
            &mut first,
            &mut ms,
        )
    })?;
    Ok(PathsWritten {
        mismatches,
        first_mismatch: (mismatches > 0).then_some(first as usize),
        kernel: Duration::from_secs_f64(ms / 1e3),
    })
}

fn check(err: sppark::Error) -> Result<(), GpuError> {
    if err.code == 0 {
        Ok(())
    } else {
        Err(GpuError::Cuda {
            code: err.code,
            message: String::from(&err),
        })
    }
}

pub(super) fn device_count() -> usize {
    // SAFETY: no arguments; returns 0 on any error.
    unsafe { cuzk_gpu_count() }
}

pub(super) fn device_info(device: i32) -> Result<DeviceInfo, GpuError> {
    let mut info = DeviceInfoC {
        name: [0; 256],
        total_bytes: 0,
        free_bytes: 0,
        sm_count: 0,
        major: 0,
        minor: 0,
    };
    // SAFETY: `info` is a valid, writable struct of the C layout.
    check(unsafe { cuzk_gpu_info(device, &mut info) })?;
    let end = info.name.iter().position(|&b| b == 0).unwrap_or(info.name.len());
    Ok(DeviceInfo {
        name: String::from_utf8_lossy(&info.name[..end]).into_owned(),
        total_bytes: info.total_bytes as u64,
        free_bytes: info.free_bytes as u64,
        sm_count: info.sm_count as u32,
        compute_capability: (info.major as u32, info.minor as u32),
    })
}

/// A `cuzk_gpu_srs_t`, freed when dropped.
#[derive(Debug)]
pub(super) struct Srs {
    handle: *mut c_void,
}

// SAFETY: the handle is only used through calls that take the device lock in
// the caller, and the C++ object has no thread affinity.
unsafe impl Send for Srs {}
unsafe impl Sync for Srs {}

impl Srs {
    pub(super) fn create(device: i32, sections: &Sections<'_>, streamed: bool) -> Result<Self, GpuError> {
        let params = SrsCreateC {
            device,
            streamed,
            host: HostSectionsC::new(sections),
            nh: sections.h.len(),
            nl: sections.l.len(),
            na: sections.a.len(),
            nb: sections.b_g1.len(),
            nb2: sections.b_g2.len(),
        };
        let mut handle = std::ptr::null_mut();
        // SAFETY: the section pointers are valid for their lengths, in
        // blst's 96-byte G1 and 192-byte G2 affine layouts; `handle`
        // receives the object. In streamed mode the pointers are not kept.
        check(unsafe { cuzk_gpu_srs_create(&params, &mut handle) })?;
        Ok(Self { handle })
    }

    /// a, b and c to the device ahead of the region (`cuzk_gpu_stage_abc`).
    pub(super) fn stage(&self, input: &PartitionInput<'_>) -> Result<Staged, GpuError> {
        let c_input = partition_c(input);
        let mut handle = std::ptr::null_mut();
        // SAFETY: a, b, c are valid for abc_len scalars (checked by the
        // caller) and outlive the call, which copies them; `handle`
        // receives the object. Only the staging buffers of the native
        // object are shared, behind their own mutex.
        check(unsafe { cuzk_gpu_stage_abc(self.handle, &c_input, &mut handle) })?;
        Ok(Staged { handle })
    }

    pub(super) fn prove(
        &self,
        sections: &Sections<'_>,
        input: &PartitionInput<'_>,
        staged: Option<Staged>,
    ) -> Result<PartitionOutput, GpuError> {
        let c_input = partition_c(input);
        let host = HostSectionsC::new(sections);
        let mut out = PartitionOutC::default();
        // SAFETY: all pointers come from slices the caller checked, and
        // outlive the call.
        // `staged` (if any) was made for this device and shape (checked by
        // the caller and again natively); the region takes its buffers.
        let staged_handle = staged.as_ref().map_or(std::ptr::null_mut(), |s| s.handle);
        check(unsafe { cuzk_gpu_prove(self.handle, &host, &c_input, staged_handle, &mut out) })?;
        drop(staged);
        Ok(PartitionOutput {
            h: projective::<G1Affine>(out.h),
            l: projective::<G1Affine>(out.l),
            a_aux: projective::<G1Affine>(out.a_aux),
            b_aux: projective::<G1Affine>(out.b_aux),
            b_g2: projective::<G2Affine>(out.b_g2),
            timings: out.ms.timings(),
        })
    }
}

impl Srs {
    /// The witness to the device ahead of the region (`cuzk_gpu_stage_witness`).
    pub(super) fn stage_witness(&self, r1cs: &R1cs, input: &WitnessInput<'_>) -> Result<Staged, GpuError> {
        let c_input = witness_partition_c(input);
        let mut handle = std::ptr::null_mut();
        // SAFETY: the witness slices were checked against the R1CS's shape
        // by the caller and outlive the call, which copies them.
        check(unsafe { cuzk_gpu_stage_witness(self.handle, r1cs.handle, &c_input, &mut handle) })?;
        Ok(Staged { handle })
    }

    pub(super) fn prove_witness(
        &self,
        r1cs: &R1cs,
        input: &WitnessInput<'_>,
        staged: Option<Staged>,
    ) -> Result<WitnessOutput, GpuError> {
        let c_input = witness_partition_c(input);
        let mut buffers: [(Vec<u32>, Vec<Scalar>); 3] = std::array::from_fn(|_| {
            (
                vec![0u32; MIN_DEVICE_MSM],
                vec![Scalar::from(0u64); MIN_DEVICE_MSM],
            )
        });
        let mut small: Vec<SmallOthersC> = buffers
            .iter_mut()
            .map(|(index, scalar)| SmallOthersC {
                index: index.as_mut_ptr(),
                scalar: scalar.as_mut_ptr(),
                count: 0,
            })
            .collect();
        let mut out = PartitionOutC::default();
        // SAFETY: the witness slices were checked against the R1CS's shape
        // by the caller and outlive the call; each small buffer holds
        // MIN_DEVICE_MSM entries, the most the device writes.
        check(unsafe {
            cuzk_gpu_prove_witness(
                self.handle,
                r1cs.handle,
                &c_input,
                staged.as_ref().map_or(std::ptr::null_mut(), |s| s.handle),
                small.as_mut_ptr(),
                &mut out,
            )
        })?;
        drop(staged);
        let counts: Vec<usize> = small.iter().map(|s| s.count.min(MIN_DEVICE_MSM)).collect();
        let small = std::array::from_fn(|k| {
            let (mut index, mut scalars) = std::mem::take(&mut buffers[k]);
            index.truncate(counts[k]);
            scalars.truncate(counts[k]);
            SmallOthers { index, scalars }
        });
        Ok(WitnessOutput {
            region: PartitionOutput {
                h: projective::<G1Affine>(out.h),
                l: projective::<G1Affine>(out.l),
                a_aux: projective::<G1Affine>(out.a_aux),
                b_aux: projective::<G1Affine>(out.b_aux),
                b_g2: projective::<G2Affine>(out.b_g2),
                timings: out.ms.timings(),
            },
            small,
        })
    }
}

/// A compiled R1CS on one device (cuzk_gpu_r1cs_t).
#[derive(Debug)]
pub(super) struct R1cs {
    handle: *mut c_void,
}

// SAFETY: as for Srs: used under the caller's device lock, no thread affinity.
unsafe impl Send for R1cs {}
unsafe impl Sync for R1cs {}

impl R1cs {
    pub(super) fn create(device: i32, upload: &R1csUpload<'_>) -> Result<Self, GpuError> {
        let matrix = |k: usize| R1csMatrixC {
            row_starts: upload.matrices[k].row_starts.as_ptr(),
            entries: upload.matrices[k].entries.as_ptr(),
            nnz: upload.matrices[k].entries.len(),
        };
        let params = R1csCreateC {
            device,
            rows: upload.matrices[0].row_starts.len() - 1,
            m: [matrix(0), matrix(1), matrix(2)],
            coefficients: upload.coefficients.as_ptr(),
            ncoefficients: upload.coefficients.len(),
            num_inputs: upload.num_inputs,
            num_aux: upload.num_aux,
            a_aux_density: upload.a_aux_density.0.as_ptr(),
            b_aux_density: upload.b_aux_density.0.as_ptr(),
            a_aux_ones: upload.a_aux_density.1,
            b_aux_ones: upload.b_aux_density.1,
        };
        let mut handle = std::ptr::null_mut();
        // SAFETY: the caller checked the upload (R1csUpload::check): every
        // slice is as long as the lengths passed say; nothing is kept.
        check(unsafe { cuzk_gpu_r1cs_create(&params, &mut handle) })?;
        Ok(Self { handle })
    }

    pub(super) fn evaluate(
        &self,
        inputs: &[Scalar],
        aux: super::PackedScalarsRef<'_>,
        paths: Option<super::LeftPathsRef<'_>>,
        rows: usize,
    ) -> Result<[Vec<Scalar>; 3], GpuError> {
        let mut out: [Vec<Scalar>; 3] = std::array::from_fn(|_| vec![Scalar::from(0u64); rows]);
        let [a, b, c] = &mut out;
        let aux = PackedC::new(&aux);
        let (tables, paths) = (
            TablesC::new(paths.map(|l| l.tables)),
            PathsC::new(paths.map(|l| l.paths), paths.is_some_and(|l| l.check_roots)),
        );
        // SAFETY: the witness has the R1CS's shape and its packed parts
        // their lengths (checked by the caller); each output holds `rows`
        // scalars, what the device writes.
        check(unsafe {
            cuzk_gpu_r1cs_evaluate(
                self.handle,
                inputs.as_ptr(),
                &aux,
                &paths,
                &tables,
                a.as_mut_ptr(),
                b.as_mut_ptr(),
                c.as_mut_ptr(),
            )
        })?;
        Ok(out)
    }
}

impl Drop for R1cs {
    fn drop(&mut self) {
        // SAFETY: the handle came from cuzk_gpu_r1cs_create and is dropped once.
        unsafe { cuzk_gpu_r1cs_drop(self.handle) }
    }
}

impl Drop for Srs {
    fn drop(&mut self) {
        // SAFETY: the handle came from cuzk_gpu_srs_create and is dropped once.
        unsafe { cuzk_gpu_srs_drop(self.handle) }
    }
}

/// A `cudaHostRegister` registration, undone when dropped.
#[derive(Debug)]
pub(super) struct Pin {
    /// The address (an integer, so the pin is Send and Sync): only ever
    /// handed back to cudaHostUnregister, never dereferenced.
    ptr: usize,
}

impl Pin {
    pub(super) fn new<T: Copy>(points: &[T]) -> Result<Self, GpuError> {
        let ptr = points.as_ptr() as *mut c_void;
        // SAFETY: a valid allocation of this many bytes; registration does
        // not change its contents.
        check(unsafe { cuzk_gpu_host_register(ptr, std::mem::size_of_val(points)) })?;
        Ok(Self { ptr: ptr as usize })
    }
}

impl Drop for Pin {
    fn drop(&mut self) {
        // SAFETY: registered in `new`; the owner keeps the memory alive
        // until after this drop (HostPin's documented contract).
        unsafe { cuzk_gpu_host_unregister(self.ptr as *mut c_void) }
    }
}

/// A group's dense GPU MSM entry point.
#[cfg(feature = "measurement")]
pub(super) trait GpuCurve: BlstCurve {
    const MSM: MsmFn<Self>;
}

#[cfg(feature = "measurement")]
impl GpuCurve for G1Affine {
    const MSM: MsmFn<Self> = cuzk_gpu_msm_g1;
}

#[cfg(feature = "measurement")]
impl GpuCurve for G2Affine {
    const MSM: MsmFn<Self> = cuzk_gpu_msm_g2;
}

#[cfg(feature = "measurement")]
pub(super) fn msm<C: GpuCurve>(
    device: i32,
    points: &[C],
    scalars: &[Scalar],
) -> Result<C::Projective, GpuError> {
    msm_by::<C>(points, scalars, |p, s, n, out| {
        // SAFETY: msm_by passes n points in blst's affine layout, n
        // scalars and one output point.
        unsafe { (C::MSM)(device, p, s, n, out) }
    })
}

/// A dense MSM of host inputs through `kernel(points, scalars, n, out)`
/// (sppark's, or the wide one).
#[cfg(feature = "measurement")]
fn msm_by<C: GpuCurve>(
    points: &[C],
    scalars: &[Scalar],
    kernel: impl FnOnce(*const C::BlstAffine, *const Scalar, usize, *mut C::BlstPoint) -> sppark::Error,
) -> Result<C::Projective, GpuError> {
    // The caller checks this; the kernel relies on it.
    assert_eq!(points.len(), scalars.len(), "GPU MSM: length mismatch");
    let mut out = C::BlstPoint::default();
    check(kernel(
        blst_affines(points).as_ptr(),
        scalars.as_ptr(),
        points.len(),
        &mut out,
    ))?;
    Ok(projective::<C>(out))
}

#[cfg(feature = "measurement")]
pub(super) fn ntt(device: i32, values: &mut [Scalar], inverse: bool, coset: bool) -> Result<(), GpuError> {
    // The caller checks that the length is a power of two.
    let lg = values.len().trailing_zeros();
    assert_eq!(values.len(), 1 << lg, "NTT: length not a power of two");
    // SAFETY: the slice is valid and of length 2^lg.
    check(unsafe { cuzk_gpu_ntt(device, values.as_mut_ptr(), lg, inverse, coset) })
}

fn tuning_c(tuning: &super::Tuning) -> TuningC {
    TuningC {
        stream_chunk: tuning.stream_chunk,
        msm_window: tuning.msm_window,
        h_msm: tuning.h_msm.code(),
        h_serial: u32::from(tuning.h_msm_serial()),
        ntts_beside: u32::from(tuning.ntts_beside()),
    }
}

fn partition_c(input: &PartitionInput<'_>) -> PartitionC {
    PartitionC {
        a: input.a.as_ptr(),
        b: input.b.as_ptr(),
        c: input.c.as_ptr(),
        abc_len: input.a.len(),
        lg_domain: input.lg_domain,
        z_inv: input.z_inv,
        l: MsmPlanC::new(&input.l),
        a_aux: MsmPlanC::new(&input.a_aux),
        b_aux: MsmPlanC::new(&input.b_aux),
        tuning: tuning_c(&input.tuning),
    }
}

fn witness_partition_c(input: &WitnessInput<'_>) -> WitnessPartitionC {
    WitnessPartitionC {
        inputs: input.inputs.as_ptr(),
        aux: PackedC::new(&input.aux),
        lg_domain: input.lg_domain,
        z_inv: input.z_inv,
        a_offset: input.a_offset,
        b_offset: input.b_offset,
        tuning: tuning_c(&input.tuning),
        paths: PathsC::new(
            input.paths.map(|l| l.paths),
            input.paths.is_some_and(|l| l.check_roots),
        ),
        tables: TablesC::new(input.paths.map(|l| l.tables)),
    }
}

/// A `cuzk_gpu_staged_t`: a partition's vectors on the device; freed when
/// dropped (a region that used them has already taken them over).
#[derive(Debug)]
pub(super) struct Staged {
    handle: *mut c_void,
}

// SAFETY: the object is device memory and sizes, with no thread affinity;
// it is used by one call at a time (it moves into the region that uses it).
unsafe impl Send for Staged {}
unsafe impl Sync for Staged {}

impl Drop for Staged {
    fn drop(&mut self) {
        // SAFETY: the handle came from cuzk_gpu_stage_* and is dropped once.
        unsafe { cuzk_gpu_staged_drop(self.handle) }
    }
}

/// Holds `bytes` of `device`'s memory for the rest of the process (the
/// memory cap). Never freed: the cap lasts as long as the process.
pub(super) fn reserve(device: i32, bytes: usize) -> Result<(), GpuError> {
    let mut ptr = std::ptr::null_mut();
    // SAFETY: `ptr` receives a device allocation that is never freed.
    check(unsafe { cuzk_gpu_reserve(device, bytes, &mut ptr) })
}

#[cfg(feature = "measurement")]
pub(super) fn msm_g1_wide(
    device: i32,
    points: &[G1Affine],
    scalars: &[Scalar],
    accumulation: super::WideAccumulation,
) -> Result<G1Projective, GpuError> {
    // The C side's affine modes: 0 = XYZZ sums only, 2 = every round.
    let affine = match accumulation {
        super::WideAccumulation::Xyzz => 0,
        super::WideAccumulation::AffineRounds => 2,
    };
    msm_by::<G1Affine>(points, scalars, |p, s, n, out| {
        // SAFETY: msm_by passes n points in blst's affine layout, n
        // scalars and one output point.
        unsafe { cuzk_gpu_msm_g1_wide(device, p, s, n, affine, out) }
    })
}

#[cfg(feature = "measurement")]
impl Srs {
    pub(super) fn compare_h_msm(
        &self,
        scalars: &[Scalar],
        other_plans: &[super::AffineRoundPlan],
    ) -> Result<super::HMsmComparison, GpuError> {
        // Production's plan (0, 0) first, then the others.
        let plans: Vec<u32> = [0, 0]
            .into_iter()
            .chain(other_plans.iter().flat_map(|p| [p.max_rounds, p.min_blocks]))
            .collect();
        let nplans = plans.len() / 2;
        let mut out = vec![blst_p1::default(); 2 + nplans];
        let mut ms = vec![0f64; 2 + nplans];
        // SAFETY: the caller checked the length against the H section; the
        // plans are nplans pairs, the outputs 2 + nplans points and numbers.
        check(unsafe {
            cuzk_gpu_h_msm_compare(
                self.handle,
                scalars.as_ptr(),
                scalars.len(),
                plans.as_ptr(),
                nplans,
                out.as_mut_ptr(),
                ms.as_mut_ptr(),
            )
        })?;
        let timed = |k: usize| super::TimedMsm {
            result: projective::<G1Affine>(out[k]),
            time: Duration::from_secs_f64(ms[k] / 1000.0),
        };
        Ok(super::HMsmComparison {
            sppark: timed(0),
            wide_xyzz: timed(1),
            wide_affine: timed(2),
            other_plans: other_plans
                .iter()
                .enumerate()
                .map(|(i, p)| (*p, timed(3 + i)))
                .collect(),
        })
    }
}
