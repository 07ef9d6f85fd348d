//! The GPU backend: the same split API as the CPU prover, with the CUDA
//! region (a/b/c upload, NTTs, H MSM and the witness-shaped L, A and B_G1
//! MSMs) under a per-device lock, and everything else off it: witness
//! preparation before, the B G2 MSM on a CPU thread alongside, the input
//! MSMs and the epilogue after.
//!
//! The G1 query sections stay resident in device memory between partitions
//! when they fit (with room for a partition's working set); when they do not,
//! or on any CUDA error, the caller gets the assignment back and proves on
//! the CPU instead.

use crate::assignment::ProvingAssignment;
use crate::msm::{split_msm, ScalarVector};
use crate::params::ProvingParameters;
use crate::prover::{
    input_msms, preflight, spawn_b_g2, PendingProof, ProveError, ProveTimings, Randomness, Witness,
};
use blstrs::Scalar;
use cuzk_sys::gpu::{DeviceInfo, GpuSrs, MsmPlan, PartitionInput};
use ff::{Field, PrimeField};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

pub use cuzk_sys::gpu::GpuError;

/// Device memory kept free beyond the resident parameters and one
/// partition's working set (NTT and MSM temporaries, the CUDA context).
const VRAM_SLACK: u64 = 2 << 30;

/// Domains below this are proved on the CPU: too small to pay for the GPU
/// (and sppark's MSM is not relied on for tiny inputs).
pub const GPU_MIN_DOMAIN: usize = 1 << 14;
/// MSM parts with fewer points than this run on the CPU beside the GPU.
const GPU_MIN_MSM: usize = 1 << 12;

/// What `prove_start` on a GPU came to. (Moved once per partition, so the
/// size difference between the variants does not matter.)
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum GpuOutcome {
    /// The GPU part is done.
    Started(PendingProof),
    /// The GPU could not do it (memory, CUDA error); prove on the CPU.
    Fallback {
        /// Why, for the log.
        reason: String,
        /// The untouched assignment.
        assignment: ProvingAssignment,
    },
    /// The inputs are wrong; no backend would do better.
    Failed(ProveError),
}

#[derive(Debug)]
struct Resident {
    params: Weak<ProvingParameters>,
    srs: Arc<GpuSrs>,
}

/// One GPU and its lock.
#[derive(Debug)]
pub struct GpuDevice {
    ordinal: usize,
    info: DeviceInfo,
    /// Held only around the CUDA region (and SRS uploads).
    lock: Mutex<Option<Resident>>,
}

impl GpuDevice {
    /// CUDA ordinal.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// Name and memory as found at start.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Current free memory (the static info when the query fails).
    pub fn free_bytes(&self) -> u64 {
        cuzk_sys::gpu::device_info(self.ordinal).map_or(self.info.free_bytes, |i| i.free_bytes)
    }
}

fn lock(m: &Mutex<Option<Resident>>) -> MutexGuard<'_, Option<Resident>> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The GPUs this process proves on.
#[derive(Debug)]
pub struct GpuProver {
    devices: Vec<GpuDevice>,
}

impl GpuProver {
    /// The visible CUDA devices (CUDA_VISIBLE_DEVICES applies), restricted to
    /// `only` when it is not empty; `None` without any (or without the
    /// `cuda` feature).
    pub fn detect(only: &[u32]) -> Option<Self> {
        let devices: Vec<GpuDevice> = (0..cuzk_sys::gpu::device_count())
            .filter(|i| only.is_empty() || only.contains(&(*i as u32)))
            .filter_map(|ordinal| {
                let info = cuzk_sys::gpu::device_info(ordinal).ok()?;
                Some(GpuDevice {
                    ordinal,
                    info,
                    lock: Mutex::new(None),
                })
            })
            .collect();
        (!devices.is_empty()).then_some(Self { devices })
    }

    /// The devices, by index.
    pub fn devices(&self) -> &[GpuDevice] {
        &self.devices
    }

    /// `prove_start` on device `index`. The B G2 MSM runs on a CPU thread
    /// meanwhile; `finish` is the CPU prover's.
    pub fn prove_start(
        &self,
        index: usize,
        assignment: ProvingAssignment,
        params: &Arc<ProvingParameters>,
        randomness: Randomness,
    ) -> GpuOutcome {
        let device = &self.devices[index % self.devices.len()];
        let (domain, r, s) = match preflight(&assignment, params, randomness) {
            Ok(v) => v,
            Err(e) => return GpuOutcome::Failed(e),
        };
        if domain.size() < GPU_MIN_DOMAIN {
            return GpuOutcome::Fallback {
                reason: format!(
                    "domain 2^{} is below the GPU minimum",
                    domain.size().trailing_zeros()
                ),
                assignment,
            };
        }
        let mut timings = ProveTimings::default();
        let started = Instant::now();
        // The witness as the MSMs read it; the assignment itself stays whole
        // until the GPU has succeeded, so a fallback gets it back intact.
        let (inputs, aux) = rayon::join(
            || ScalarVector::new(&assignment.input_assignment),
            || ScalarVector::new(&assignment.aux_assignment),
        );
        let witness = Arc::new(Witness {
            inputs,
            aux,
            a_aux_density: assignment.a_aux_density.clone(),
            b_input_density: assignment.b_input_density.clone(),
            b_aux_density: assignment.b_aux_density.clone(),
        });
        let (mut l_split, (mut a_split, mut b_split)) = rayon::join(
            || split_msm(&witness.aux, None),
            || {
                rayon::join(
                    || split_msm(&witness.aux, Some(&witness.a_aux_density)),
                    || split_msm(&witness.aux, Some(&witness.b_aux_density)),
                )
            },
        );
        let num_inputs = assignment.input_assignment.len();
        let b_inputs = witness.b_input_density.count_ones();
        // Small parts go to the CPU (blst), the rest to the GPU.
        let (small_l, small_a, small_b) = (
            take_small(&mut l_split, &params.l),
            take_small(&mut a_split, &params.a[num_inputs..]),
            take_small(&mut b_split, &params.b_g1[b_inputs..]),
        );
        timings.prepare = started.elapsed();
        let b_g2 = match spawn_b_g2(params, &witness) {
            Ok(handle) => handle,
            Err(e) => return GpuOutcome::Failed(e),
        };

        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        let z_inv = (g.pow_vartime([domain.size() as u64]) - Scalar::ONE)
            .invert()
            .unwrap();
        fn plan(split: &crate::msm::MsmSplit, offset: usize) -> MsmPlan<'_> {
            MsmPlan {
                offset,
                npoints: split.npoints,
                ones_bitmap: &split.ones_bitmap,
                other_index: &split.other_index,
                other_scalars: &split.other_scalars,
            }
        }
        let input = PartitionInput {
            a: &assignment.a,
            b: &assignment.b,
            c: &assignment.c,
            lg_domain: domain.size().trailing_zeros(),
            z_inv,
            l: plan(&l_split, 0),
            a_aux: plan(&a_split, num_inputs),
            b_aux: plan(&b_split, b_inputs),
        };

        let waited = Instant::now();
        let mut resident = lock(&device.lock);
        timings.lock_wait = waited.elapsed();
        let region = Instant::now();
        let srs = match ensure_resident(device, &mut resident, params, domain.size()) {
            Ok(srs) => srs,
            Err(reason) => {
                drop(resident);
                return GpuOutcome::Fallback { reason, assignment };
            }
        };
        let output = srs.prove(&input);
        drop(resident);
        timings.gpu_region = region.elapsed();
        let output = match output {
            Ok(output) => output,
            Err(e) => {
                return GpuOutcome::Fallback {
                    reason: format!("GPU {}: {e}", device.ordinal),
                    assignment,
                }
            }
        };
        drop(assignment);
        let ms = |v: f64| Duration::from_secs_f64(v / 1e3);
        timings.upload = ms(output.ms[0]);
        timings.h_fft = ms(output.ms[1]);
        timings.h_msm = ms(output.ms[2]);
        timings.l_msm = ms(output.ms[3]);
        timings.a_msm = ms(output.ms[4]);
        timings.b_g1_msm = ms(output.ms[5]);

        let (a_inputs, b_g1_inputs) = input_msms(params, &witness);
        GpuOutcome::Started(PendingProof::from_parts(
            params,
            r,
            s,
            output.h,
            output.l + small_l,
            a_inputs + output.a_aux + small_a,
            b_g1_inputs + output.b_aux + small_b,
            b_g2,
            timings,
        ))
    }
}

/// Moves the parts of `split` too small for the GPU to the CPU: the whole
/// MSM when it covers few points, else just the "other" scalars when they
/// are few. Returns their sum and leaves the GPU the rest.
fn take_small(split: &mut crate::msm::MsmSplit, section: &[blstrs::G1Affine]) -> blstrs::G1Projective {
    use group::Group;
    let mut sum = blstrs::G1Projective::identity();
    if split.npoints < GPU_MIN_MSM {
        let ones: Vec<blstrs::G1Affine> = (0..split.npoints)
            .filter(|&i| split.ones_bitmap[i / 32] >> (i % 32) & 1 == 1)
            .map(|i| section[i])
            .collect();
        sum += cuzk_sys::g1_sum(&ones);
        split.ones_bitmap.iter_mut().for_each(|w| *w = 0);
        split.npoints = 0;
    }
    if split.other_index.len() < GPU_MIN_MSM {
        let points: Vec<blstrs::G1Affine> = split.other_index.iter().map(|&i| section[i as usize]).collect();
        let bytes: Vec<u8> = split.other_scalars.iter().flatten().copied().collect();
        sum += cuzk_sys::g1_msm(&points, &bytes).expect("equal lengths");
        split.other_index.clear();
        split.other_scalars.clear();
    }
    sum
}

/// The device-resident copy of `params`' G1 sections, uploading them (and
/// dropping another circuit's) when needed. Called with the device lock held.
fn ensure_resident(
    device: &GpuDevice,
    resident: &mut Option<Resident>,
    params: &Arc<ProvingParameters>,
    domain: usize,
) -> Result<Arc<GpuSrs>, String> {
    if let Some(current) = resident.as_ref() {
        if current.params.upgrade().is_some_and(|p| Arc::ptr_eq(&p, params)) {
            return Ok(Arc::clone(&current.srs));
        }
    }
    // Another circuit's parameters: free them first.
    *resident = None;
    let sections = (params.h.len() + params.l.len() + params.a.len() + params.b_g1.len()) as u64 * 96;
    let working = 3 * domain as u64 * 32;
    let free = device.free_bytes();
    if sections + working + VRAM_SLACK > free {
        return Err(format!(
            "GPU {} ({}): parameters ({} MiB) and a partition's working set ({} MiB) do not fit in {} MiB free \
             (streaming parameters from host memory is not implemented yet)",
            device.ordinal,
            device.info.name,
            sections >> 20,
            working >> 20,
            free >> 20
        ));
    }
    let srs = GpuSrs::upload(device.ordinal, &params.h, &params.l, &params.a, &params.b_g1)
        .map_err(|e| format!("GPU {}: uploading parameters: {e}", device.ordinal))?;
    let srs = Arc::new(srs);
    *resident = Some(Resident {
        params: Arc::downgrade(params),
        srs: Arc::clone(&srs),
    });
    tracing::info!(
        device = device.ordinal,
        mib = sections >> 20,
        "parameters resident on the GPU"
    );
    Ok(srs)
}
