//! The CUDA backend's native side, behind the `cuda` feature.
//!
//! This module holds the public types and checks every call's arguments;
//! the work is done by one of two backends with the same private interface:
//! `cuda` (the FFI to `cuda/cuzk_gpu.cu`) with the feature, and `no_cuda`
//! without it, where [`device_count`] is 0 and every other call reports
//! [`GpuError::Disabled`], so callers need no `cfg` of their own. Invalid
//! arguments are reported as [`GpuError::Invalid`] in both builds.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use std::time::Duration;

#[cfg(feature = "cuda")]
mod cuda;
#[cfg(feature = "cuda")]
use cuda as backend;

#[cfg(not(feature = "cuda"))]
mod no_cuda;
#[cfg(not(feature = "cuda"))]
use no_cuda as backend;

#[cfg(feature = "fault-injection")]
pub mod faults;

mod paths;
pub use paths::{LeftPathsRef, PathLevel, PathsRef, PathsWritten, PoseidonTables, MAX_TABLES, WIDTHS};

#[cfg(feature = "measurement")]
mod measure;
#[cfg(feature = "measurement")]
pub use measure::*;

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
    /// Which kernel computes the H MSM over resident parameters.
    pub h_msm: HMsmKernel,
    /// Run the wide H MSM before the L, A and B MSMs instead of beside
    /// them on a stream of its own (false, the default, where device
    /// memory has room for both working sets). For measurement and checks.
    #[cfg(feature = "measurement")]
    pub h_msm_serial: bool,
    /// Also run the upload (unless staged ahead) and the NTTs beside the
    /// L, A and B MSMs, on the wide H MSM's stream, where device memory
    /// holds a, b and c through the H MSM. Off by default: on an H200 it
    /// measured no faster than the NTTs first (BENCHMARKS.md issue 15), and
    /// it holds b and c through the H MSM. For measurement and checks.
    #[cfg(feature = "measurement")]
    pub ntts_beside: bool,
}

impl Tuning {
    /// [`Tuning::h_msm_serial`] (false without the `measurement` feature).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    fn h_msm_serial(&self) -> bool {
        #[cfg(feature = "measurement")]
        return self.h_msm_serial;
        #[cfg(not(feature = "measurement"))]
        false
    }

    /// [`Tuning::ntts_beside`] (false without the `measurement` feature).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    fn ntts_beside(&self) -> bool {
        #[cfg(feature = "measurement")]
        return self.ntts_beside;
        #[cfg(not(feature = "measurement"))]
        false
    }
}

/// The H MSM's kernel (resident parameters; streamed ones always use
/// sppark's, which streams the points).
///
/// The default is `Auto`: cuzk's wide kernel from 2^24 - 1 points, where
/// it measured faster than sppark's on an H200 (1.07-1.11x at 2^24, 1.36x
/// at 2^27, BENCHMARKS.md issue 15), sppark's below.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum HMsmKernel {
    /// cuzk's wide-window MSM from 2^24 - 1 points when device memory has
    /// room for it, else sppark's.
    #[default]
    Auto,
    /// sppark's Pippenger.
    Sppark,
    /// cuzk's wide-window MSM (an error without room).
    Wide,
}

impl HMsmKernel {
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    fn code(self) -> u32 {
        match self {
            HMsmKernel::Auto => 0,
            HMsmKernel::Sppark => 1,
            HMsmKernel::Wide => 2,
        }
    }
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

/// Wall-clock time of each step of the CUDA region.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RegionTimings {
    /// Until a, b and c have landed on the device (the NTTs of the first
    /// ones already run meanwhile).
    pub upload: Duration,
    /// The NTTs and the quotient on the coset, beyond what overlapped the
    /// upload.
    pub ntt: Duration,
    /// H MSM: its own duration, which with the wide kernel beside the
    /// other MSMs (the default) overlaps theirs.
    pub h_msm: Duration,
    /// L MSM.
    pub l_msm: Duration,
    /// A MSM (aux part).
    pub a_msm: Duration,
    /// B_G1 MSM (aux part).
    pub b_g1_msm: Duration,
    /// B_G2 MSM (aux part).
    pub b_g2_msm: Duration,
    /// Witness path: a, b, c by sparse products on the device (zero when
    /// the host computed them).
    pub abc: Duration,
    /// Witness path: classifying the MSM scalars on the device (zero when
    /// the host did).
    pub classify: Duration,
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
    /// How long each step took.
    pub timings: RegionTimings,
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

/// Called after each CUDA region: the failure a test injected, if any
/// (never without the `fault-injection` feature).
fn after_region() -> Result<(), GpuError> {
    #[cfg(feature = "fault-injection")]
    return faults::after_region();
    #[cfg(not(feature = "fault-injection"))]
    Ok(())
}

/// Whether this build has the CUDA backend (the `cuda` feature).
pub const COMPILED: bool = cfg!(feature = "cuda");

/// Number of visible CUDA devices (CUDA_VISIBLE_DEVICES applies); 0 without
/// the feature or without a driver.
pub fn device_count() -> usize {
    backend::device_count()
}

/// Name and memory of `device`.
pub fn device_info(device: usize) -> Result<DeviceInfo, GpuError> {
    backend::device_info(device_ordinal(device)?)
}

/// CUDA numbers devices with an `int`.
fn device_ordinal(device: usize) -> Result<i32, GpuError> {
    i32::try_from(device).map_err(|_| GpuError::Invalid(format!("no device {device}")))
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
    /// The native object; freed when dropped.
    srs: backend::Srs,
    device: usize,
    streamed: bool,
    lens: [usize; 5],
}

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
        let srs = backend::Srs::create(device_ordinal(device)?, &sections, streamed)?;
        Ok(Self {
            srs,
            device,
            streamed,
            lens: sections.lens(),
        })
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
        self.check_partition(&sections, input)?;
        let output = self.srs.prove(&sections, input, None)?;
        after_region()?;
        Ok(output)
    }

    /// a, b and c of `input` copied to the device now, ahead of its region
    /// ([`GpuSrs::prove_staged`]): the copy needs no device lock, so it runs
    /// while another partition computes. Returns once the data has landed.
    pub fn stage(&self, input: &PartitionInput<'_>) -> Result<Staged, GpuError> {
        check_abc(input, self.lens[0])?;
        let staged = self.srs.stage(input)?;
        Ok(Staged {
            staged,
            device: self.device,
            shape: StagedShape::Abc {
                lg_domain: input.lg_domain,
            },
        })
    }

    /// [`GpuSrs::prove`] with a, b and c already on the device (from
    /// [`GpuSrs::stage`] of the same input); the region frees them.
    pub fn prove_staged(
        &self,
        sections: Sections<'_>,
        input: &PartitionInput<'_>,
        staged: Staged,
    ) -> Result<PartitionOutput, GpuError> {
        self.check_partition(&sections, input)?;
        let expected = StagedShape::Abc {
            lg_domain: input.lg_domain,
        };
        staged.check(self.device, expected)?;
        let output = self.srs.prove(&sections, input, Some(staged.staged))?;
        after_region()?;
        Ok(output)
    }

    fn check_partition(&self, sections: &Sections<'_>, input: &PartitionInput<'_>) -> Result<(), GpuError> {
        if sections.lens() != self.lens {
            return Err(GpuError::Invalid(format!(
                "sections of {:?} points, made for {:?}",
                sections.lens(),
                self.lens
            )));
        }
        check_abc(input, self.lens[0])?;
        check_plan("L", &input.l, self.lens[1])?;
        check_plan("A", &input.a_aux, self.lens[2])?;
        check_plan("B_G1", &input.b_aux, self.lens[3])?;
        check_plan("B_G2", &input.b_aux, self.lens[4])?;
        Ok(())
    }
}

/// The domain, a, b and c of `input` against an H section of `h_points`.
fn check_abc(input: &PartitionInput<'_>, h_points: usize) -> Result<(), GpuError> {
    let n = 1usize.checked_shl(input.lg_domain).unwrap_or(0);
    if n == 0 || input.lg_domain > 31 {
        return Err(GpuError::Invalid(format!("bad domain 2^{}", input.lg_domain)));
    }
    if input.a.len() != input.b.len() || input.a.len() != input.c.len() || input.a.len() > n {
        return Err(GpuError::Invalid(
            "a, b, c lengths differ or exceed the domain".into(),
        ));
    }
    if h_points + 1 != n {
        return Err(GpuError::Invalid(format!(
            "H section has {h_points} points, domain {n}"
        )));
    }
    Ok(())
}

/// What a [`Staged`] holds, to match it with the region that uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StagedShape {
    /// a, b and c, each over the domain 2^lg_domain.
    Abc { lg_domain: u32 },
    /// A witness of this many inputs and aux variables, `wide` of these
    /// neither 0 nor 1.
    Witness { inputs: usize, aux: usize, wide: usize },
}

/// A partition's vectors copied to the device ahead of its CUDA region
/// ([`GpuSrs::stage`], [`GpuSrs::stage_witness`]), so that the copy runs
/// outside the device lock while another partition computes. Freed when
/// dropped; the region that uses it takes its memory over.
#[derive(Debug)]
pub struct Staged {
    staged: backend::Staged,
    device: usize,
    shape: StagedShape,
}

impl Staged {
    /// Device memory it holds.
    pub fn bytes(&self) -> u64 {
        match self.shape {
            StagedShape::Abc { lg_domain } => staged_abc_bytes(lg_domain),
            StagedShape::Witness { inputs, aux, wide } => staged_witness_bytes(inputs, aux, wide),
        }
    }

    /// The device holding it.
    pub fn device(&self) -> usize {
        self.device
    }

    fn check(&self, device: usize, expected: StagedShape) -> Result<(), GpuError> {
        if self.device != device || self.shape != expected {
            return Err(GpuError::Invalid(format!(
                "staged {:?} on GPU {}, the region needs {expected:?} on GPU {device}",
                self.shape, self.device
            )));
        }
        Ok(())
    }
}

/// Device bytes of a staged host-path partition: a, b and c over 2^lg.
pub fn staged_abc_bytes(lg_domain: u32) -> u64 {
    3 * 32 * (1u64 << lg_domain.min(40))
}

/// Device bytes of a staged witness: its inputs, and its aux variables
/// packed, `wide` of them neither 0 nor 1.
pub fn staged_witness_bytes(inputs: usize, aux: usize, wide: usize) -> u64 {
    32 * inputs as u64 + packed_bytes(aux, wide)
}

/// Makes `device` look like a card of `cap_bytes` for the rest of the
/// process: the memory beyond the cap is allocated and held, so every later
/// allocation (ours, sppark's, another library's in this process) sees the
/// smaller card. For running the small-card paths (streamed parameters) on
/// a large card. Applied once per device; a second call changes nothing.
/// Returns whether this call applied it.
pub fn cap_memory(device: usize, cap_bytes: u64) -> Result<bool, GpuError> {
    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock};
    static CAPPED: OnceLock<Mutex<HashSet<usize>>> = OnceLock::new();
    let mut capped = CAPPED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if capped.contains(&device) {
        return Ok(false);
    }
    let info = device_info(device)?;
    let used = info.total_bytes.saturating_sub(info.free_bytes);
    if cap_bytes <= used || cap_bytes >= info.total_bytes {
        return Err(GpuError::Invalid(format!(
            "a memory cap of {} MiB on GPU {device}: {} MiB are in use of {} MiB",
            cap_bytes >> 20,
            used >> 20,
            info.total_bytes >> 20
        )));
    }
    let hold = info.total_bytes - cap_bytes;
    backend::reserve(device_ordinal(device)?, hold as usize)?;
    capped.insert(device);
    Ok(true)
}

/// Host memory page-locked for fast copies to any device, until dropped.
///
/// The owner of the memory must keep it allocated while the pin lives: hold
/// the pin beside (and drop it before) the buffer.
#[derive(Debug)]
pub struct HostPin {
    /// The registration; undone when dropped.
    _pin: backend::Pin,
}

impl HostPin {
    /// Pins `points`' memory (G1 or G2 points: any plain slice).
    pub fn new<T: Copy>(points: &[T]) -> Result<Self, GpuError> {
        if points.is_empty() {
            return Err(GpuError::Invalid("nothing to pin".into()));
        }
        Ok(Self {
            _pin: backend::Pin::new(points)?,
        })
    }
}

// ---------------------------------------------------------------- the compiled R1CS

/// Marks an input variable in [`R1csEntry::variable`]; aux indices use the
/// other 31 bits.
pub const R1CS_INPUT_BIT: u32 = 1 << 31;

/// The device-memory model and the device code's size limits (also
/// compiled into the device code by build.rs).
pub mod limits;
pub use limits::MIN_DEVICE_MSM;

/// One nonzero of a compiled R1CS matrix, in the layout the device reads:
/// the variable (an aux index, or an input index with [`R1CS_INPUT_BIT`])
/// and the id of its coefficient (ids 0 and 1 are one and minus one).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct R1csEntry {
    /// Aux index, or input index with [`R1CS_INPUT_BIT`] set.
    pub variable: u32,
    /// Index into the coefficient table.
    pub coefficient: u32,
}

/// One matrix in compressed sparse row form.
#[derive(Clone, Copy, Debug)]
pub struct R1csMatrix<'a> {
    /// Row `r`'s entries are `entries[row_starts[r]..row_starts[r + 1]]`.
    pub row_starts: &'a [u32],
    /// The nonzeros, row by row.
    pub entries: &'a [R1csEntry],
}

/// A compiled R1CS as the device takes it.
#[derive(Clone, Copy, Debug)]
pub struct R1csUpload<'a> {
    /// A, B and C.
    pub matrices: [R1csMatrix<'a>; 3],
    /// Distinct coefficients (Montgomery form, as blstrs holds them); ids 0
    /// and 1 must be one and minus one.
    pub coefficients: &'a [Scalar],
    /// Inputs, the constant one included.
    pub num_inputs: usize,
    /// Aux variables.
    pub num_aux: usize,
    /// Aux variables in A (bit `i` of word `i / 64`), and their count.
    pub a_aux_density: (&'a [u64], usize),
    /// Aux variables in B, and their count.
    pub b_aux_density: (&'a [u64], usize),
}

impl R1csUpload<'_> {
    /// Device bytes the upload occupies.
    pub fn device_bytes(&self) -> u64 {
        let rows = self.matrices[0].row_starts.len() as u64;
        let nnz: u64 = self.matrices.iter().map(|m| m.entries.len() as u64).sum();
        let density_words = self.num_aux.div_ceil(64) as u64;
        3 * rows * 4 + nnz * 8 + self.coefficients.len() as u64 * 32 + 2 * density_words * 8
    }

    /// Checks everything the kernels index by: without it a malformed
    /// matrix would read out of bounds on the device.
    fn check(&self) -> Result<(), GpuError> {
        let bad = |m: String| Err(GpuError::Invalid(format!("R1CS: {m}")));
        let rows = self.matrices[0].row_starts.len();
        if rows == 0 || u32::try_from(rows).is_err() {
            return bad(format!("{rows} row offsets"));
        }
        if self.num_aux >= R1CS_INPUT_BIT as usize || self.num_inputs >= R1CS_INPUT_BIT as usize {
            return bad("too many variables".into());
        }
        if self.coefficients.len() < 2 {
            return bad("no one and minus one in the coefficient table".into());
        }
        let words = self.num_aux.div_ceil(64);
        for (name, (bits, ones)) in [("A", self.a_aux_density), ("B", self.b_aux_density)] {
            if bits.len() < words {
                return bad(format!("{name} density has {} words, needs {words}", bits.len()));
            }
            if ones > self.num_aux {
                return bad(format!(
                    "{name} density counts {ones} of {} variables",
                    self.num_aux
                ));
            }
        }
        for (name, m) in ["A", "B", "C"].iter().zip(&self.matrices) {
            if m.row_starts.len() != rows {
                return bad(format!("{name} has {} row offsets, A {rows}", m.row_starts.len()));
            }
            let ascending = m.row_starts.windows(2).all(|w| w[0] <= w[1]);
            if m.row_starts[0] != 0 || !ascending || m.row_starts[rows - 1] as usize != m.entries.len() {
                return bad(format!(
                    "{name}'s row offsets do not ascend from 0 to its nonzeros"
                ));
            }
            let valid = |e: &R1csEntry| {
                let index = (e.variable & !R1CS_INPUT_BIT) as usize;
                let bound = if e.variable & R1CS_INPUT_BIT != 0 {
                    self.num_inputs
                } else {
                    self.num_aux
                };
                index < bound && (e.coefficient as usize) < self.coefficients.len()
            };
            if !m.entries.iter().all(valid) {
                return bad(format!("{name} has a variable or coefficient out of range"));
            }
        }
        Ok(())
    }
}

/// A compiled R1CS resident on one device, for the witness path
/// ([`GpuSrs::prove_witness`]). Freed on drop.
#[derive(Debug)]
pub struct GpuR1cs {
    r1cs: backend::R1cs,
    device: usize,
    rows: usize,
    num_inputs: usize,
    num_aux: usize,
    a_aux_ones: usize,
    b_aux_ones: usize,
    bytes: u64,
}

impl GpuR1cs {
    /// Checks and uploads `upload` to `device`.
    pub fn upload(device: usize, upload: &R1csUpload<'_>) -> Result<Self, GpuError> {
        upload.check()?;
        let r1cs = backend::R1cs::create(device_ordinal(device)?, upload)?;
        Ok(Self {
            r1cs,
            device,
            rows: upload.matrices[0].row_starts.len() - 1,
            num_inputs: upload.num_inputs,
            num_aux: upload.num_aux,
            a_aux_ones: upload.a_aux_density.1,
            b_aux_ones: upload.b_aux_density.1,
            bytes: upload.device_bytes(),
        })
    }

    /// Device bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The device it lives on.
    pub fn device(&self) -> usize {
        self.device
    }

    /// a, b, c of a witness, computed on the device and copied back (the
    /// check of the device's sparse products against the host's).
    /// The aux variables go packed and are expanded on the device, and
    /// the paths left to it finished, as in a region.
    pub fn evaluate(
        &self,
        inputs: &[Scalar],
        aux: PackedScalarsRef<'_>,
        paths: Option<LeftPathsRef<'_>>,
    ) -> Result<[Vec<Scalar>; 3], GpuError> {
        self.check_witness(inputs, aux, paths)?;
        self.r1cs.evaluate(inputs, aux, paths, self.rows)
    }

    fn check_witness(
        &self,
        inputs: &[Scalar],
        aux: PackedScalarsRef<'_>,
        paths: Option<LeftPathsRef<'_>>,
    ) -> Result<(), GpuError> {
        aux.check()?;
        if let Some(left) = paths {
            left.paths.check(left.tables, aux.len)?;
        }
        if inputs.len() != self.num_inputs || aux.len != self.num_aux {
            return Err(GpuError::Invalid(format!(
                "witness of {} inputs and {} aux, the R1CS has {} and {}",
                inputs.len(),
                aux.len,
                self.num_inputs,
                self.num_aux
            )));
        }
        Ok(())
    }
}

/// Scalars most of which are 0 or 1, kept as bits (cuzk-core's
/// `PackedScalars`, which says what each part holds): how a witness's aux
/// variables cross PCIe before the device expands them.
#[derive(Debug, Clone, Copy)]
pub struct PackedScalarsRef<'a> {
    /// Number of values.
    pub len: usize,
    /// Bit i: value i is 1.
    pub ones: &'a [u64],
    /// Bit i: value i is neither 0 nor 1.
    pub wide: &'a [u64],
    /// Per word: the wide values in the words before it.
    pub wide_before: &'a [u32],
    /// The wide values in order, Montgomery.
    pub values: &'a [Scalar],
}

impl PackedScalarsRef<'_> {
    /// Whether the parts have the lengths `len` needs (the device trusts them).
    fn check(&self) -> Result<(), GpuError> {
        let words = self.len.div_ceil(64);
        if self.ones.len() != words || self.wide.len() != words || self.wide_before.len() != words {
            return Err(GpuError::Invalid(format!(
                "packed scalars of {} values with {}, {} and {} words",
                self.len,
                self.ones.len(),
                self.wide.len(),
                self.wide_before.len()
            )));
        }
        Ok(())
    }
}

/// Device bytes of `len` packed values, `wide` of them wide (the layout of
/// `packed_layout_t` in r1cs.cuh).
pub fn packed_bytes(len: usize, wide: usize) -> u64 {
    let words = len.div_ceil(64) as u64;
    (20 * words).div_ceil(32) * 32 + 32 * wide as u64
}

/// One partition for the witness path.
#[derive(Debug, Clone, Copy)]
pub struct WitnessInput<'a> {
    /// Inputs (the constant one first), Montgomery.
    pub inputs: &'a [Scalar],
    /// Aux variables, packed.
    pub aux: PackedScalarsRef<'a>,
    /// log2 of the FFT domain.
    pub lg_domain: u32,
    /// 1 / (g^n - 1).
    pub z_inv: Scalar,
    /// First aux point of the A section (the number of inputs).
    pub a_offset: usize,
    /// First aux point of both B sections (the inputs B uses).
    pub b_offset: usize,
    /// Size overrides for the checks.
    pub tuning: Tuning,
    /// What the witness left to the device (its paths' values, zeros in
    /// `aux`), written there after the expansion.
    pub paths: Option<LeftPathsRef<'a>>,
}

/// "Other" scalars of one MSM too few for the device (under
/// [`MIN_DEVICE_MSM`]): their point indices (within the MSM's aux points)
/// and values, for the host to sum.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SmallOthers {
    /// Point indices, ascending.
    pub index: Vec<u32>,
    /// Their scalars.
    pub scalars: Vec<Scalar>,
}

/// Results of the witness path's CUDA region.
#[derive(Debug, Clone)]
pub struct WitnessOutput {
    /// The MSMs (without the small parts) and the step times.
    pub region: PartitionOutput,
    /// Small parts of L, A and B (B's serve B_G1 and B_G2).
    pub small: [SmallOthers; 3],
}

impl GpuSrs {
    /// The CUDA region from the witness alone: a, b, c by `r1cs`'s sparse
    /// products, the MSM scalars classified, all on the device. Resident
    /// sections only, on the R1CS's device.
    pub fn prove_witness(&self, r1cs: &GpuR1cs, input: &WitnessInput<'_>) -> Result<WitnessOutput, GpuError> {
        self.prove_witness_with(r1cs, input, None)
    }

    /// [`GpuSrs::prove_witness`] with the witness already on the device
    /// (from [`GpuSrs::stage_witness`] of the same input).
    pub fn prove_witness_staged(
        &self,
        r1cs: &GpuR1cs,
        input: &WitnessInput<'_>,
        staged: Staged,
    ) -> Result<WitnessOutput, GpuError> {
        let expected = StagedShape::Witness {
            inputs: input.inputs.len(),
            aux: input.aux.len,
            wide: input.aux.values.len(),
        };
        staged.check(self.device, expected)?;
        self.prove_witness_with(r1cs, input, Some(staged))
    }

    fn prove_witness_with(
        &self,
        r1cs: &GpuR1cs,
        input: &WitnessInput<'_>,
        staged: Option<Staged>,
    ) -> Result<WitnessOutput, GpuError> {
        if self.streamed || r1cs.device != self.device {
            return Err(GpuError::Invalid(
                "the witness path needs resident parameters on the R1CS's device".into(),
            ));
        }
        r1cs.check_witness(input.inputs, input.aux, input.paths)?;
        let n = 1usize.checked_shl(input.lg_domain).unwrap_or(0);
        if n == 0 || input.lg_domain > 31 || r1cs.rows > n || self.lens[0] + 1 != n {
            return Err(GpuError::Invalid(format!(
                "domain 2^{} for {} constraints and an H section of {} points",
                input.lg_domain, r1cs.rows, self.lens[0]
            )));
        }
        let [_, l, a, b_g1, b_g2] = self.lens;
        if l != r1cs.num_aux
            || input.a_offset + r1cs.a_aux_ones > a
            || input.b_offset + r1cs.b_aux_ones > b_g1.min(b_g2)
        {
            return Err(GpuError::Invalid(format!(
                "sections {:?} do not fit an R1CS of {} aux ({} in A, {} in B)",
                self.lens, r1cs.num_aux, r1cs.a_aux_ones, r1cs.b_aux_ones
            )));
        }
        let output = self
            .srs
            .prove_witness(&r1cs.r1cs, input, staged.map(|s| s.staged))?;
        after_region()?;
        Ok(output)
    }

    /// The witness of `input` copied to the device now, ahead of its region
    /// ([`GpuSrs::prove_witness_staged`]), outside the device lock.
    pub fn stage_witness(&self, r1cs: &GpuR1cs, input: &WitnessInput<'_>) -> Result<Staged, GpuError> {
        if r1cs.device != self.device {
            return Err(GpuError::Invalid(
                "parameters and R1CS on different devices".into(),
            ));
        }
        r1cs.check_witness(input.inputs, input.aux, input.paths)?;
        let staged = self.srs.stage_witness(&r1cs.r1cs, input)?;
        Ok(Staged {
            staged,
            device: self.device,
            shape: StagedShape::Witness {
                inputs: input.inputs.len(),
                aux: input.aux.len,
                wide: input.aux.values.len(),
            },
        })
    }
}
