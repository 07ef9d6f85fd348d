//! The CUDA backend's native side, behind the `cuda` feature.
//!
//! Without the feature every function here exists with the same signature
//! and reports [`GpuError::Disabled`], so callers need no `cfg` of their own.

use blstrs::{G1Affine, G1Projective, Scalar};

/// A GPU failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuError {
    /// Built without the `cuda` feature.
    Disabled,
    /// The arguments do not fit together (checked before any FFI call).
    Invalid(String),
    /// CUDA (or the C++ around it) reported an error.
    Cuda {
        /// cudaError_t value.
        code: i32,
        /// Its message.
        message: String,
    },
}

impl std::fmt::Display for GpuError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GpuError::Disabled => write!(f, "built without the cuda feature"),
            GpuError::Invalid(m) => write!(f, "invalid GPU call: {m}"),
            GpuError::Cuda { code, message } => write!(f, "CUDA error {code}: {message}"),
        }
    }
}

impl std::error::Error for GpuError {}

/// What a device reports about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Marketing name, e.g. "NVIDIA H200".
    pub name: String,
    /// Device memory.
    pub total_bytes: u64,
    /// Free device memory now.
    pub free_bytes: u64,
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// Compute capability.
    pub compute_capability: (u32, u32),
}

/// The witness-shaped MSM of one query section: points with scalar one are
/// summed, the others go through Pippenger; zero scalars are left out.
#[derive(Debug, Clone, Copy)]
pub struct MsmPlan<'a> {
    /// First point of this MSM in its section.
    pub offset: usize,
    /// Points covered.
    pub npoints: usize,
    /// Bit i set: scalar i is one. At least `ceil(npoints / 1024) * 32` words.
    pub ones_bitmap: &'a [u32],
    /// Indices (relative to `offset`) of the remaining non-zero scalars.
    pub other_index: &'a [u32],
    /// Those scalars, canonical little-endian.
    pub other_scalars: &'a [[u8; 32]],
}

/// One partition's inputs to the CUDA region.
#[derive(Debug, Clone, Copy)]
pub struct PartitionInput<'a> {
    /// A, B, C evaluated at the constraints (at most the domain size).
    pub a: &'a [Scalar],
    /// B.
    pub b: &'a [Scalar],
    /// C.
    pub c: &'a [Scalar],
    /// log2 of the domain size.
    pub lg_domain: u32,
    /// 1 / (g^n - 1) for the coset generator g.
    pub z_inv: Scalar,
    /// L query (all aux variables).
    pub l: MsmPlan<'a>,
    /// A query, aux part.
    pub a_aux: MsmPlan<'a>,
    /// B query in G1, aux part.
    pub b_aux: MsmPlan<'a>,
}

/// Results of the CUDA region and how long each step took.
#[derive(Debug, Clone, Copy)]
pub struct PartitionOutput {
    /// H MSM.
    pub h: G1Projective,
    /// L MSM.
    pub l: G1Projective,
    /// A MSM (aux part).
    pub a_aux: G1Projective,
    /// B_G1 MSM (aux part).
    pub b_aux: G1Projective,
    /// Milliseconds: upload, NTTs, H MSM, L MSM, A MSM, B_G1 MSM.
    pub ms: [f64; 6],
}

fn check_plan(name: &str, plan: &MsmPlan<'_>, section: usize) -> Result<(), GpuError> {
    let words = plan.npoints.div_ceil(1024) * 32;
    let bad = |m: String| Err(GpuError::Invalid(format!("{name}: {m}")));
    if plan.offset + plan.npoints > section {
        return bad(format!(
            "{} + {} points exceed the section's {section}",
            plan.offset, plan.npoints
        ));
    }
    if plan.ones_bitmap.len() < words {
        return bad(format!(
            "bitmap has {} words, needs {words}",
            plan.ones_bitmap.len()
        ));
    }
    if plan.other_index.len() != plan.other_scalars.len() {
        return bad("other indices and scalars differ in length".into());
    }
    if plan.other_index.iter().any(|&i| i as usize >= plan.npoints) {
        return bad("an index is out of range".into());
    }
    Ok(())
}

#[cfg(feature = "cuda")]
mod native {
    #![allow(unsafe_code)]
    use super::*;
    use std::ffi::c_void;

    #[repr(C)]
    pub struct MsmPlanC {
        pub offset: usize,
        pub npoints: usize,
        pub ones_bitmap: *const u32,
        pub other_index: *const u32,
        pub other_scalar: *const [u8; 32],
        pub nothers: usize,
    }

    #[repr(C)]
    pub struct PartitionC {
        pub a: *const Scalar,
        pub b: *const Scalar,
        pub c: *const Scalar,
        pub abc_len: usize,
        pub lg_domain: u32,
        pub z_inv: Scalar,
        pub l: MsmPlanC,
        pub a_aux: MsmPlanC,
        pub b_aux: MsmPlanC,
    }

    /// Jacobian, laid out as blst_p1.
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    pub struct PointC(pub blst::blst_p1);

    #[repr(C)]
    #[derive(Default)]
    pub struct PartitionOutC {
        pub h: PointC,
        pub l: PointC,
        pub a_aux: PointC,
        pub b_aux: PointC,
        pub ms: [f64; 6],
    }

    #[repr(C)]
    pub struct DeviceInfoC {
        pub name: [u8; 256],
        pub total_bytes: usize,
        pub free_bytes: usize,
        pub sm_count: i32,
        pub major: i32,
        pub minor: i32,
    }

    extern "C" {
        pub fn cuzk_gpu_count() -> usize;
        pub fn cuzk_gpu_info(device: i32, info: *mut DeviceInfoC) -> sppark::Error;
        pub fn cuzk_gpu_srs_create(
            device: i32,
            h: *const c_void,
            nh: usize,
            l: *const c_void,
            nl: usize,
            a: *const c_void,
            na: usize,
            b_g1: *const c_void,
            nb: usize,
            out: *mut *mut c_void,
        ) -> sppark::Error;
        pub fn cuzk_gpu_srs_drop(srs: *mut c_void);
        pub fn cuzk_gpu_prove(
            srs: *const c_void,
            p: *const PartitionC,
            out: *mut PartitionOutC,
        ) -> sppark::Error;
        pub fn cuzk_gpu_msm_g1(
            device: i32,
            points: *const c_void,
            scalars: *const Scalar,
            n: usize,
            out: *mut PointC,
        ) -> sppark::Error;
        pub fn cuzk_gpu_ntt(
            device: i32,
            inout: *mut Scalar,
            lg: u32,
            inverse: bool,
            coset: bool,
        ) -> sppark::Error;
    }

    pub fn check(err: sppark::Error) -> Result<(), GpuError> {
        if err.code == 0 {
            Ok(())
        } else {
            Err(GpuError::Cuda {
                code: err.code,
                message: String::from(&err),
            })
        }
    }

    pub fn point(p: PointC) -> G1Projective {
        // SAFETY: G1Projective is repr(transparent) over blst_p1 (asserted in lib.rs).
        unsafe { std::mem::transmute::<blst::blst_p1, G1Projective>(p.0) }
    }

    pub fn plan(p: &MsmPlan<'_>) -> MsmPlanC {
        MsmPlanC {
            offset: p.offset,
            npoints: p.npoints,
            ones_bitmap: p.ones_bitmap.as_ptr(),
            other_index: p.other_index.as_ptr(),
            other_scalar: p.other_scalars.as_ptr(),
            nothers: p.other_index.len(),
        }
    }
}

/// Number of visible CUDA devices (CUDA_VISIBLE_DEVICES applies); 0 without
/// the feature or without a driver.
pub fn device_count() -> usize {
    #[cfg(feature = "cuda")]
    {
        // SAFETY: no arguments; returns 0 on any error.
        #[allow(unsafe_code)]
        unsafe {
            native::cuzk_gpu_count()
        }
    }
    #[cfg(not(feature = "cuda"))]
    0
}

/// Name and memory of `device`.
pub fn device_info(device: usize) -> Result<DeviceInfo, GpuError> {
    #[cfg(feature = "cuda")]
    {
        #![allow(unsafe_code)]
        let mut info = native::DeviceInfoC {
            name: [0; 256],
            total_bytes: 0,
            free_bytes: 0,
            sm_count: 0,
            major: 0,
            minor: 0,
        };
        // SAFETY: `info` is a valid, writable struct of the C layout.
        native::check(unsafe { native::cuzk_gpu_info(device as i32, &mut info) })?;
        let end = info.name.iter().position(|&b| b == 0).unwrap_or(info.name.len());
        Ok(DeviceInfo {
            name: String::from_utf8_lossy(&info.name[..end]).into_owned(),
            total_bytes: info.total_bytes as u64,
            free_bytes: info.free_bytes as u64,
            sm_count: info.sm_count as u32,
            compute_capability: (info.major as u32, info.minor as u32),
        })
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = device;
        Err(GpuError::Disabled)
    }
}

/// G1 query sections resident in one device's memory. Dropping it frees them.
#[derive(Debug)]
pub struct GpuSrs {
    #[cfg(feature = "cuda")]
    handle: *mut std::ffi::c_void,
    device: usize,
    lens: [usize; 4],
}

// SAFETY: the handle is only used through calls that take the device lock in
// the caller, and the C++ object has no thread affinity.
#[allow(unsafe_code)]
unsafe impl Send for GpuSrs {}
#[allow(unsafe_code)]
unsafe impl Sync for GpuSrs {}

impl GpuSrs {
    /// Copies the H, L, A and B_G1 sections to `device`.
    pub fn upload(
        device: usize,
        h: &[G1Affine],
        l: &[G1Affine],
        a: &[G1Affine],
        b_g1: &[G1Affine],
    ) -> Result<Self, GpuError> {
        #[cfg(feature = "cuda")]
        {
            #![allow(unsafe_code)]
            let mut handle = std::ptr::null_mut();
            // SAFETY: slices are valid for their lengths; G1Affine has
            // blst_p1_affine's 96-byte layout; `handle` receives the object.
            native::check(unsafe {
                native::cuzk_gpu_srs_create(
                    device as i32,
                    h.as_ptr().cast(),
                    h.len(),
                    l.as_ptr().cast(),
                    l.len(),
                    a.as_ptr().cast(),
                    a.len(),
                    b_g1.as_ptr().cast(),
                    b_g1.len(),
                    &mut handle,
                )
            })?;
            Ok(Self {
                handle,
                device,
                lens: [h.len(), l.len(), a.len(), b_g1.len()],
            })
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (device, h, l, a, b_g1);
            Err(GpuError::Disabled)
        }
    }

    /// The device holding it.
    pub fn device(&self) -> usize {
        self.device
    }

    /// Bytes of device memory the sections take.
    pub fn bytes(&self) -> u64 {
        self.lens.iter().sum::<usize>() as u64 * 96
    }

    /// The CUDA region of one partition. Arguments are checked here, before
    /// any FFI call.
    pub fn prove(&self, input: &PartitionInput<'_>) -> Result<PartitionOutput, GpuError> {
        let n = 1usize.checked_shl(input.lg_domain).unwrap_or(0);
        if n == 0 || input.lg_domain > 31 {
            return Err(GpuError::Invalid(format!("bad domain 2^{}", input.lg_domain)));
        }
        if input.a.len() != input.b.len() || input.a.len() != input.c.len() || input.a.len() > n {
            return Err(GpuError::Invalid(
                "a, b, c lengths differ or exceed the domain".into(),
            ));
        }
        if self.lens[0] + 1 != n {
            return Err(GpuError::Invalid(format!(
                "H section has {} points, domain {n}",
                self.lens[0]
            )));
        }
        check_plan("L", &input.l, self.lens[1])?;
        check_plan("A", &input.a_aux, self.lens[2])?;
        check_plan("B_G1", &input.b_aux, self.lens[3])?;
        #[cfg(feature = "cuda")]
        {
            #![allow(unsafe_code)]
            let c_input = native::PartitionC {
                a: input.a.as_ptr(),
                b: input.b.as_ptr(),
                c: input.c.as_ptr(),
                abc_len: input.a.len(),
                lg_domain: input.lg_domain,
                z_inv: input.z_inv,
                l: native::plan(&input.l),
                a_aux: native::plan(&input.a_aux),
                b_aux: native::plan(&input.b_aux),
            };
            let mut out = native::PartitionOutC::default();
            // SAFETY: all pointers come from slices checked above and outlive the call.
            native::check(unsafe { native::cuzk_gpu_prove(self.handle, &c_input, &mut out) })?;
            Ok(PartitionOutput {
                h: native::point(out.h),
                l: native::point(out.l),
                a_aux: native::point(out.a_aux),
                b_aux: native::point(out.b_aux),
                ms: out.ms,
            })
        }
        #[cfg(not(feature = "cuda"))]
        Err(GpuError::Disabled)
    }
}

impl Drop for GpuSrs {
    fn drop(&mut self) {
        #[cfg(feature = "cuda")]
        {
            #![allow(unsafe_code)]
            // SAFETY: the handle came from cuzk_gpu_srs_create and is dropped once.
            unsafe { native::cuzk_gpu_srs_drop(self.handle) }
        }
    }
}

/// Dense G1 MSM on `device` with host inputs (Montgomery scalars): a
/// building block exposed for the GPU checks against blst.
pub fn msm_g1(device: usize, points: &[G1Affine], scalars: &[Scalar]) -> Result<G1Projective, GpuError> {
    if points.len() != scalars.len() || points.is_empty() {
        return Err(GpuError::Invalid(format!(
            "{} points, {} scalars",
            points.len(),
            scalars.len()
        )));
    }
    #[cfg(feature = "cuda")]
    {
        #![allow(unsafe_code)]
        let mut out = native::PointC::default();
        // SAFETY: equal-length slices checked above.
        native::check(unsafe {
            native::cuzk_gpu_msm_g1(
                device as i32,
                points.as_ptr().cast(),
                scalars.as_ptr(),
                points.len(),
                &mut out,
            )
        })?;
        Ok(native::point(out))
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = device;
        Err(GpuError::Disabled)
    }
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
    #[cfg(feature = "cuda")]
    {
        #![allow(unsafe_code)]
        let lg = values.len().trailing_zeros();
        // SAFETY: the slice is valid and of length 2^lg.
        native::check(unsafe { native::cuzk_gpu_ntt(device as i32, values.as_mut_ptr(), lg, inverse, coset) })
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (device, inverse, coset);
        Err(GpuError::Disabled)
    }
}
