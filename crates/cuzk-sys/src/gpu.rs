//! The CUDA backend's native side, behind the `cuda` feature.
//!
//! Without the feature every function here exists with the same signature
//! and reports [`GpuError::Disabled`], so callers need no `cfg` of their own.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};

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

/// Overrides of the CUDA region's internal sizes; zero keeps the default.
/// The checks set small values so that chunked streaming and split MSMs run
/// at small sizes; production leaves them at zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tuning {
    /// Points per chunk when sections are streamed (default 2^22 in G1,
    /// 2^21 in G2; rounded up to a multiple of 1024).
    pub stream_chunk: usize,
    /// Most "other" (neither zero nor one) scalars per Pippenger MSM
    /// (default 2^24 in G1, 2^23 in G2; at least 8192, and in streamed
    /// mode at least two chunks).
    pub msm_window: usize,
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
    /// B query, aux part: the B_G1 MSM over the `b_g1` section and the
    /// B_G2 MSM over `b_g2` (same offset, same scalars).
    pub b_aux: MsmPlan<'a>,
    /// Internal sizes (zero: defaults).
    pub tuning: Tuning,
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
    /// B_G2 MSM (aux part).
    pub b_g2: G2Projective,
    /// Milliseconds: upload, NTTs, H MSM, L MSM, A MSM, B_G1 MSM, B_G2 MSM.
    pub ms: [f64; 7],
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
        pub tuning: TuningC,
    }

    #[repr(C)]
    pub struct TuningC {
        pub stream_chunk: usize,
        pub msm_window: usize,
    }

    #[repr(C)]
    pub struct HostSectionsC {
        pub h: *const c_void,
        pub l: *const c_void,
        pub a: *const c_void,
        pub b_g1: *const c_void,
        pub b_g2: *const c_void,
    }

    /// Jacobian, laid out as blst_p1.
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    pub struct PointC(pub blst::blst_p1);

    /// Jacobian, laid out as blst_p2 (sppark's jacobian_t<fp2_t>).
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    pub struct Point2C(pub blst::blst_p2);

    #[repr(C)]
    #[derive(Default)]
    pub struct PartitionOutC {
        pub h: PointC,
        pub l: PointC,
        pub a_aux: PointC,
        pub b_aux: PointC,
        pub b_g2: Point2C,
        pub ms: [f64; 7],
    }

    // The C side static_asserts the same sizes (cuzk_gpu.cu).
    const _: () = assert!(std::mem::size_of::<PointC>() == 144);
    const _: () = assert!(std::mem::size_of::<Point2C>() == 288);
    const _: () = assert!(std::mem::size_of::<PartitionOutC>() == 4 * 144 + 288 + 7 * 8);
    const _: () = assert!(std::mem::size_of::<G2Affine>() == 192);

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
            streamed: bool,
            h: *const c_void,
            nh: usize,
            l: *const c_void,
            nl: usize,
            a: *const c_void,
            na: usize,
            b_g1: *const c_void,
            nb: usize,
            b_g2: *const c_void,
            nb2: usize,
            out: *mut *mut c_void,
        ) -> sppark::Error;
        pub fn cuzk_gpu_srs_drop(srs: *mut c_void);
        pub fn cuzk_gpu_host_register(ptr: *mut c_void, bytes: usize) -> sppark::Error;
        pub fn cuzk_gpu_host_unregister(ptr: *mut c_void);
        pub fn cuzk_gpu_prove(
            srs: *const c_void,
            host: *const HostSectionsC,
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
        pub fn cuzk_gpu_msm_g2(
            device: i32,
            points: *const c_void,
            scalars: *const Scalar,
            n: usize,
            out: *mut Point2C,
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

    pub fn point2(p: Point2C) -> G2Projective {
        // SAFETY: G2Projective is repr(transparent) over blst_p2 (asserted in lib.rs).
        unsafe { std::mem::transmute::<blst::blst_p2, G2Projective>(p.0) }
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

/// The query sections (H, L, A, B_G1 and B_G2) of one circuit's
/// parameters, as the CUDA region reads them.
#[derive(Debug, Clone, Copy)]
pub struct Sections<'a> {
    /// H.
    pub h: &'a [G1Affine],
    /// L.
    pub l: &'a [G1Affine],
    /// A.
    pub a: &'a [G1Affine],
    /// B in G1.
    pub b_g1: &'a [G1Affine],
    /// B in G2.
    pub b_g2: &'a [G2Affine],
}

/// Bytes of a G1 and a G2 affine point (blst layouts, as on the device).
const G1_BYTES: u64 = 96;
const G2_BYTES: u64 = 192;

fn section_bytes(lens: &[usize; 5]) -> u64 {
    lens[..4].iter().sum::<usize>() as u64 * G1_BYTES + lens[4] as u64 * G2_BYTES
}

impl Sections<'_> {
    fn lens(&self) -> [usize; 5] {
        [
            self.h.len(),
            self.l.len(),
            self.a.len(),
            self.b_g1.len(),
            self.b_g2.len(),
        ]
    }

    /// Bytes of the five sections.
    pub fn bytes(&self) -> u64 {
        section_bytes(&self.lens())
    }
}

/// One circuit's sections on a device: resident in device memory, or
/// streamed (nothing on the device; every proof streams the host sections
/// through in chunks). Dropping it frees the device copy.
#[derive(Debug)]
pub struct GpuSrs {
    #[cfg(feature = "cuda")]
    handle: *mut std::ffi::c_void,
    device: usize,
    streamed: bool,
    lens: [usize; 5],
}

// SAFETY: the handle is only used through calls that take the device lock in
// the caller, and the C++ object has no thread affinity.
#[allow(unsafe_code)]
unsafe impl Send for GpuSrs {}
#[allow(unsafe_code)]
unsafe impl Sync for GpuSrs {}

impl GpuSrs {
    /// Copies the sections to `device`.
    pub fn upload(device: usize, sections: Sections<'_>) -> Result<Self, GpuError> {
        Self::create(device, sections, false)
    }

    /// Streams the sections from host memory at every proof (for devices
    /// too small to hold them); nothing is copied now.
    pub fn streamed(device: usize, sections: Sections<'_>) -> Result<Self, GpuError> {
        Self::create(device, sections, true)
    }

    fn create(device: usize, sections: Sections<'_>, streamed: bool) -> Result<Self, GpuError> {
        #[cfg(feature = "cuda")]
        {
            #![allow(unsafe_code)]
            let mut handle = std::ptr::null_mut();
            let Sections { h, l, a, b_g1, b_g2 } = sections;
            // SAFETY: slices are valid for their lengths; G1Affine and
            // G2Affine have blst_p1_affine's 96-byte and blst_p2_affine's
            // 192-byte layouts; `handle` receives the object. In streamed
            // mode the pointers are not kept.
            native::check(unsafe {
                native::cuzk_gpu_srs_create(
                    device as i32,
                    streamed,
                    h.as_ptr().cast(),
                    h.len(),
                    l.as_ptr().cast(),
                    l.len(),
                    a.as_ptr().cast(),
                    a.len(),
                    b_g1.as_ptr().cast(),
                    b_g1.len(),
                    b_g2.as_ptr().cast(),
                    b_g2.len(),
                    &mut handle,
                )
            })?;
            Ok(Self {
                handle,
                device,
                streamed,
                lens: sections.lens(),
            })
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (device, sections, streamed);
            Err(GpuError::Disabled)
        }
    }

    /// Whether the sections are streamed from host memory.
    pub fn is_streamed(&self) -> bool {
        self.streamed
    }

    /// The device holding it.
    pub fn device(&self) -> usize {
        self.device
    }

    /// Bytes of device memory the sections take (none when streamed).
    pub fn bytes(&self) -> u64 {
        if self.streamed {
            0
        } else {
            section_bytes(&self.lens)
        }
    }

    /// The CUDA region of one partition. `sections` are the host sections
    /// this object was made from (read in streamed mode, length-checked in
    /// both). Arguments are checked here, before any FFI call.
    pub fn prove(
        &self,
        sections: Sections<'_>,
        input: &PartitionInput<'_>,
    ) -> Result<PartitionOutput, GpuError> {
        if sections.lens() != self.lens {
            return Err(GpuError::Invalid(format!(
                "sections of {:?} points, made for {:?}",
                sections.lens(),
                self.lens
            )));
        }
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
        check_plan("B_G2", &input.b_aux, self.lens[4])?;
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
                tuning: native::TuningC {
                    stream_chunk: input.tuning.stream_chunk,
                    msm_window: input.tuning.msm_window,
                },
            };
            let host = native::HostSectionsC {
                h: sections.h.as_ptr().cast(),
                l: sections.l.as_ptr().cast(),
                a: sections.a.as_ptr().cast(),
                b_g1: sections.b_g1.as_ptr().cast(),
                b_g2: sections.b_g2.as_ptr().cast(),
            };
            let mut out = native::PartitionOutC::default();
            // SAFETY: all pointers come from slices checked above and outlive the call.
            native::check(unsafe { native::cuzk_gpu_prove(self.handle, &host, &c_input, &mut out) })?;
            Ok(PartitionOutput {
                h: native::point(out.h),
                l: native::point(out.l),
                a_aux: native::point(out.a_aux),
                b_aux: native::point(out.b_aux),
                b_g2: native::point2(out.b_g2),
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

/// Host memory page-locked for fast copies to any device, until dropped.
///
/// The owner of the memory must keep it allocated while the pin lives: hold
/// the pin beside (and drop it before) the buffer.
#[derive(Debug)]
pub struct HostPin {
    ptr: usize,
}

impl HostPin {
    /// Pins `points`' memory (G1 or G2 points: any plain slice).
    pub fn new<T: Copy>(points: &[T]) -> Result<Self, GpuError> {
        if points.is_empty() {
            return Err(GpuError::Invalid("nothing to pin".into()));
        }
        #[cfg(feature = "cuda")]
        {
            #![allow(unsafe_code)]
            let ptr = points.as_ptr() as *mut std::ffi::c_void;
            // SAFETY: a valid allocation of this many bytes; registration
            // does not change its contents.
            native::check(unsafe { native::cuzk_gpu_host_register(ptr, std::mem::size_of_val(points)) })?;
            Ok(Self { ptr: ptr as usize })
        }
        #[cfg(not(feature = "cuda"))]
        Err(GpuError::Disabled)
    }
}

impl Drop for HostPin {
    fn drop(&mut self) {
        #[cfg(feature = "cuda")]
        {
            #![allow(unsafe_code)]
            // SAFETY: registered in `new`; the owner keeps the memory alive
            // until after this drop (documented contract).
            unsafe { native::cuzk_gpu_host_unregister(self.ptr as *mut std::ffi::c_void) }
        }
        #[cfg(not(feature = "cuda"))]
        let _ = self.ptr;
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

/// Dense G2 MSM on `device` with host inputs (Montgomery scalars), through
/// sppark's Pippenger over fp2: a building block exposed for the GPU checks
/// against blst.
pub fn msm_g2(device: usize, points: &[G2Affine], scalars: &[Scalar]) -> Result<G2Projective, GpuError> {
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
        let mut out = native::Point2C::default();
        // SAFETY: equal-length slices checked above; G2Affine has
        // blst_p2_affine's 192-byte layout (asserted in lib.rs and above).
        native::check(unsafe {
            native::cuzk_gpu_msm_g2(
                device as i32,
                points.as_ptr().cast(),
                scalars.as_ptr(),
                points.len(),
                &mut out,
            )
        })?;
        Ok(native::point2(out))
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
