//! The CUDA backend: one [`CudaBackend`] per GPU, with the CUDA region
//! (NTTs, H MSM and the witness-shaped L, A, B_G1 and B_G2 MSMs) under the
//! device's lock, and everything else off it: witness preparation and the
//! upload of a/b/c (or the witness) before, while another partition's
//! region runs; the input MSMs (B_G2's on a small thread) and the epilogue
//! after. The upload falls back into the region when device memory has no
//! room for a partition copied ahead.
//!
//! The query sections (G1 and B's G2 section) stay resident in device
//! memory between partitions when they fit (with room for a partition's
//! working set); when they do not, they are page-locked in host memory and
//! streamed through the GPU at every proof. When not even a partition's
//! working set fits, or on any CUDA error, the backend declines the
//! partition and hands the assignment back (a [`super::Fallback`] then
//! proves it on the CPU, B_G2 included).

use super::{BackendError, BackendKind, BackendStatus, PartitionData, ProverBackend, ProverInput, Residency};
use crate::groth16::{AuxG2, AuxMsms, Frame, MsmWitness, PendingProof, ProveError, ProveTimings};
use crate::msm::{split_msm, MsmGroup, MsmSplit, G1, G2};
use crate::params::ProvingParameters;
use crate::r1cs::CompiledR1cs;
use crate::request::Priority;
use crate::sync::{lock, PriorityMutex};
use blstrs::Scalar;
use cuzk_sys::gpu::limits::{partition_working_set, witness_working_set, VRAM_SLACK};
use cuzk_sys::gpu::{
    staged_abc_bytes, staged_witness_bytes, DeviceInfo, GpuR1cs, GpuSrs, HostPin, MsmPlan, PartitionInput,
    PartitionOutput, Sections, SmallOthers, Staged, WitnessInput,
};
use ff::{Field, PrimeField};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

pub use cuzk_sys::gpu::{GpuError, Tuning};

/// Domains below this are proved on the CPU: too small to pay for the GPU
/// (and sppark's MSM is not relied on for tiny inputs).
pub const GPU_MIN_DOMAIN: usize = 1 << 14;
/// MSM parts with fewer points than this run on the CPU beside the GPU.
const GPU_MIN_MSM: usize = cuzk_sys::gpu::MIN_DEVICE_MSM;

#[derive(Debug)]
struct Resident {
    /// The compiled R1CS of the resident parameters' circuit, once a
    /// witness-only partition brought it (watched, as the parameters are).
    r1cs: Option<(Weak<CompiledR1cs>, Arc<GpuR1cs>)>,
    /// Device bytes one of this circuit's partitions needs beside what is
    /// resident: what a circuit made resident later must leave free.
    working: u64,
    /// Streamed sections are read from these parameters' memory, so a
    /// streamed entry holds them (and their pins, dropped first) until the
    /// device moves to another circuit; a resident one only watches them.
    srs: Arc<GpuSrs>,
    _pins: Vec<HostPin>,
    _held: Option<Arc<ProvingParameters>>,
    params: Weak<ProvingParameters>,
}

impl Resident {
    /// Where its parameters were read from, for the log.
    fn source(&self) -> String {
        self.params.upgrade().map_or_else(
            || "(parameters dropped)".into(),
            |p| p.source.display().to_string(),
        )
    }
}

/// The circuits on one device, least recently used first: as many as its
/// memory holds beside the working set of the largest one's partition, so
/// a PoSt between PoRep partitions does not evict PoRep's parameters (nor
/// wait for them to be copied back). Streamed parameters hold no device
/// memory but pin their host copy: they never stay beside another circuit.
#[derive(Debug, Default)]
struct Residents(Vec<Resident>);

impl Residents {
    fn position(&self, params: &Arc<ProvingParameters>) -> Option<usize> {
        self.0
            .iter()
            .position(|r| r.params.upgrade().is_some_and(|p| Arc::ptr_eq(&p, params)))
    }

    /// The working set every resident circuit's partitions need free.
    fn reserve(&self) -> u64 {
        self.0.iter().map(|r| r.working).max().unwrap_or(0)
    }
}

/// One GPU: its lock and what is resident on it.
#[derive(Debug)]
pub struct CudaBackend {
    ordinal: usize,
    info: DeviceInfo,
    residency: Residency,
    tuning: Tuning,
    /// Held only around the CUDA region (and SRS uploads); the
    /// highest-priority partition waiting enters first.
    lock: PriorityMutex<Residents>,
    /// What is resident, readable while the lock is held by a region: the
    /// upload ahead needs the device objects, not the lock.
    view: Mutex<Vec<ResidentView>>,
    /// Held while one partition's vectors are copied ahead of its region:
    /// one such upload per device at a time (they share the PCIe link and
    /// the pinned buffers), and each one's memory check sees the last one's
    /// allocation.
    staging: PriorityMutex<()>,
    /// Whether partitions are copied ahead at all (on unless a benchmark
    /// turns it off to measure the difference).
    upload_ahead: AtomicBool,
}

/// The device objects of what is resident, for the upload ahead.
#[derive(Debug, Clone)]
struct ResidentView {
    params: Weak<ProvingParameters>,
    srs: Arc<GpuSrs>,
    r1cs: Option<(Weak<CompiledR1cs>, Arc<GpuR1cs>)>,
}

impl ResidentView {
    fn of(resident: &Resident) -> Self {
        Self {
            params: resident.params.clone(),
            srs: Arc::clone(&resident.srs),
            r1cs: resident.r1cs.clone(),
        }
    }
}

impl CudaBackend {
    /// A backend per visible CUDA device (CUDA_VISIBLE_DEVICES applies),
    /// restricted to the ordinals in `only` when it is not empty; empty
    /// without devices (or without the `cuda` feature at run time).
    pub fn detect(only: &[u32], residency: Residency, tuning: Tuning) -> Vec<CudaBackend> {
        Self::detect_capped(only, residency, tuning, None)
    }

    /// [`CudaBackend::detect`] with each device's memory capped at
    /// `memory_cap` bytes (when given): the memory beyond it is held for
    /// the life of the process, so a large card runs the paths of a small
    /// one (streamed parameters) with every allocation seeing the small
    /// card's size. A device the cap cannot apply to (already more in use)
    /// is left out.
    pub fn detect_capped(
        only: &[u32],
        residency: Residency,
        tuning: Tuning,
        memory_cap: Option<u64>,
    ) -> Vec<CudaBackend> {
        (0..cuzk_sys::gpu::device_count())
            .filter(|i| only.is_empty() || only.contains(&(*i as u32)))
            .filter_map(|ordinal| {
                if let Some(cap) = memory_cap {
                    match cuzk_sys::gpu::cap_memory(ordinal, cap) {
                        Ok(applied) => {
                            if applied {
                                tracing::warn!(device = ordinal, cap_mib = cap >> 20, "GPU memory capped");
                            }
                        }
                        Err(e) => {
                            tracing::error!(device = ordinal, error = %e, "cannot cap the GPU's memory; device not used");
                            return None;
                        }
                    }
                }
                let mut info = cuzk_sys::gpu::device_info(ordinal).ok()?;
                if let Some(cap) = memory_cap {
                    info.total_bytes = info.total_bytes.min(cap);
                }
                Some(CudaBackend {
                    ordinal,
                    info,
                    residency,
                    tuning,
                    lock: PriorityMutex::new(Residents::default()),
                    view: Mutex::new(Vec::new()),
                    staging: PriorityMutex::new(()),
                    upload_ahead: AtomicBool::new(true),
                })
            })
            .collect()
    }

    /// CUDA ordinal.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// Name and memory as found at start.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Circuits whose parameters are on the device now (resident or set
    /// up to stream).
    pub fn resident_circuits(&self) -> usize {
        lock(&self.view).len()
    }

    /// Current free memory (the static info when the query fails).
    pub fn free_bytes(&self) -> u64 {
        cuzk_sys::gpu::device_info(self.ordinal).map_or(self.info.free_bytes, |i| i.free_bytes)
    }

    /// Turns the upload ahead of the device lock on (the default) or off:
    /// off, every partition uploads inside its region, as before issue 15.
    /// For measurement (`gpu-bench`) and checks only.
    #[cfg(feature = "measurement")]
    pub fn set_upload_ahead(&self, on: bool) {
        self.upload_ahead.store(on, Ordering::Relaxed);
    }

    /// The resident parameters' device object, when `params` are resident
    /// (and not streamed: streamed parameters leave no room to copy ahead).
    fn resident_srs(&self, params: &Arc<ProvingParameters>) -> Option<Arc<GpuSrs>> {
        let view = lock(&self.view);
        let view = view
            .iter()
            .find(|v| v.params.upgrade().is_some_and(|p| Arc::ptr_eq(&p, params)))?;
        (!view.srs.is_streamed()).then(|| Arc::clone(&view.srs))
    }

    /// The resident compiled R1CS, when it is `r1cs`.
    fn resident_r1cs(&self, r1cs: &Arc<CompiledR1cs>) -> Option<Arc<GpuR1cs>> {
        let view = lock(&self.view);
        view.iter().find_map(|v| {
            let (source, gpu) = v.r1cs.as_ref()?;
            source
                .upgrade()
                .is_some_and(|s| Arc::ptr_eq(&s, r1cs))
                .then(|| Arc::clone(gpu))
        })
    }

    /// Records what is resident (called with the device lock held).
    fn publish(&self, resident: &Residents) {
        *lock(&self.view) = resident.0.iter().map(ResidentView::of).collect();
    }

    /// A partition's vectors (`bytes` of device memory) copied to the device
    /// by `stage`, before the device lock, when the free memory leaves
    /// `reserve` (the working set of a region that may run meanwhile) and
    /// the slack beside them. `None` (no room, or the copy failed): the
    /// region uploads them itself, as before.
    fn upload_ahead(
        &self,
        bytes: u64,
        reserve: u64,
        priority: Priority,
        stage: impl FnOnce() -> Result<Staged, GpuError>,
    ) -> Option<(Staged, std::time::Duration)> {
        if !self.upload_ahead.load(Ordering::Relaxed) {
            return None;
        }
        let _slot = self.staging.lock(priority);
        let free = self.free_bytes();
        if bytes + reserve + VRAM_SLACK > free {
            tracing::debug!(
                device = self.ordinal,
                mib = bytes >> 20,
                free_mib = free >> 20,
                "no room to upload ahead; the region uploads"
            );
            return None;
        }
        let started = Instant::now();
        match stage() {
            Ok(staged) => Some((staged, started.elapsed())),
            Err(e) => {
                tracing::debug!(device = self.ordinal, error = %e, "upload ahead failed; the region uploads");
                None
            }
        }
    }

    fn decline(&self, reason: String, input: ProverInput) -> BackendError {
        BackendError::Declined {
            backend: self.name(),
            reason,
            input: Box::new(input),
        }
    }
}

impl ProverBackend for CudaBackend {
    fn name(&self) -> String {
        format!("GPU {} ({})", self.ordinal, self.info.name)
    }

    fn status(&self) -> BackendStatus {
        BackendStatus {
            name: self.name(),
            kind: BackendKind::Gpu,
            ordinal: self.ordinal as u32,
            memory_total_bytes: self.info.total_bytes,
            memory_free_bytes: self.free_bytes(),
        }
    }

    /// Every MSM of the witness runs in the CUDA region, B G2 included;
    /// the "B G2 thread" the pending proof joins only adds the public
    /// inputs' few G2 points. A witness-only partition takes the witness
    /// path (a, b, c and the scalar classification on the device) when the
    /// parameters are resident and its compiled R1CS fits beside them;
    /// otherwise the host computes a, b, c and the partition takes the
    /// host path, which its timings say (`abc_on_device`).
    fn takes_witness(&self) -> bool {
        true
    }

    fn prepare(
        &self,
        params: &Arc<ProvingParameters>,
        r1cs: Option<&Arc<CompiledR1cs>>,
    ) -> Result<Option<String>, ProveError> {
        self.prepare_circuit(params, r1cs)
    }

    fn prove_start(&self, input: ProverInput) -> Result<PendingProof, BackendError> {
        let input = match input.data {
            PartitionData::Witness(_) => match self.prove_witness(input)? {
                Witnessed::Proved(pending) => return Ok(pending),
                Witnessed::HostPath(input, reason) => {
                    tracing::debug!(
                        device = self.ordinal,
                        reason,
                        "witness path not taken: a, b, c on the host"
                    );
                    input
                }
            },
            _ => input,
        };
        let ProverInput {
            data,
            params,
            randomness,
            priority,
        } = input;
        let (assignment, abc) = data.into_assignment()?;
        let evaluated = ProverInput::evaluated(assignment, &params, randomness).with_priority(priority);
        let mut pending = self.prove_evaluated(evaluated)?;
        pending.timings.abc = abc;
        Ok(pending)
    }
}

/// What the witness path did with a partition.
enum Witnessed {
    /// Proved on the device from its witness.
    Proved(PendingProof),
    /// Not taken (the reason, for the log): the host path proves the input.
    HostPath(ProverInput, String),
}

impl CudaBackend {
    /// The witness path: see [`ProverBackend::prove_start`].
    /// Preload: `params` resident (or set up to stream), then `r1cs` beside
    /// them, under the device lock, as the first partition would do it.
    fn prepare_circuit(
        &self,
        params: &Arc<ProvingParameters>,
        r1cs: Option<&Arc<CompiledR1cs>>,
    ) -> Result<Option<String>, ProveError> {
        // The domain the circuit's partitions will use: H holds one point
        // fewer than it.
        let domain = match r1cs {
            Some(r1cs) => r1cs.num_constraints(),
            None => params.h.len() + 1,
        }
        .checked_next_power_of_two()
        .ok_or(ProveError::DomainTooLarge(params.h.len()))?;
        if domain < GPU_MIN_DOMAIN {
            return Ok(Some(format!(
                "{}: nothing to prepare (domain 2^{} is proved on the CPU)",
                self.name(),
                domain.trailing_zeros()
            )));
        }
        let failed = |message: String| ProveError::Backend {
            backend: self.name(),
            message,
        };
        let started = Instant::now();
        let mut resident = self.lock.lock(Priority::Normal);
        let srs = ensure_resident(self, &mut resident, params, domain, self.residency);
        self.publish(&resident);
        let srs = srs.map_err(failed)?;
        let parameters_took = started.elapsed();
        if srs.is_streamed() {
            return Ok(Some(format!(
                "{}: parameters set up to stream from host memory in {} ms",
                self.name(),
                parameters_took.as_millis()
            )));
        }
        let Some(r1cs) = r1cs.filter(|_| self.takes_witness()) else {
            return Ok(Some(format!(
                "{}: parameters resident in {} ms",
                self.name(),
                parameters_took.as_millis()
            )));
        };
        let gpu_r1cs = ensure_r1cs(self, &mut resident, params, r1cs, domain);
        self.publish(&resident);
        gpu_r1cs.map_err(failed)?;
        Ok(Some(format!(
            "{}: parameters resident in {} ms, compiled R1CS beside them in {} ms",
            self.name(),
            parameters_took.as_millis(),
            (started.elapsed() - parameters_took).as_millis()
        )))
    }

    fn prove_witness(&self, input: ProverInput) -> Result<Witnessed, BackendError> {
        let PartitionData::Witness(data) = &input.data else {
            return Ok(Witnessed::HostPath(input, "not a witness".into()));
        };
        let (r1cs, witness) = (&data.r1cs, &data.witness);
        let params = &input.params;
        let frame = Frame::for_witness(r1cs, witness, params, input.randomness)?;
        let domain = frame.domain().size();
        if let Some(reason) = below_gpu_minimum(domain) {
            return Err(self.decline(reason, input));
        }
        let mut timings = ProveTimings {
            abc_on_device: true,
            ..ProveTimings::default()
        };
        let started = Instant::now();
        let b_inputs = r1cs.densities().1.count_ones();
        let region_input = RegionInput::Witness {
            input: WitnessInput {
                inputs: &witness.inputs,
                aux: witness.aux.device_view(),
                lg_domain: domain.trailing_zeros(),
                z_inv: z_inverse(domain),
                a_offset: r1cs.num_inputs(),
                b_offset: b_inputs,
                tuning: self.tuning,
                paths: witness.left.as_ref().map(|l| l.device_view()),
            },
            r1cs,
        };
        timings.prepare = started.elapsed();
        let RegionOutput { msms: out, small } =
            match self.region(params, domain, input.priority, &region_input, &mut timings) {
                Region::Ran(Ok(output)) => *output,
                Region::Ran(Err(e)) => return Err(self.decline(format!("CUDA error: {e}"), input)),
                Region::Declined(reason) => return Err(self.decline(reason, input)),
                Region::HostPath(reason) => return Ok(Witnessed::HostPath(input, reason)),
            };
        let [small_l, small_a, small_b] = &small.unwrap_or_default();
        let small = SmallSums {
            l: small_sum::<G1>(small_l, &params.l),
            a: small_sum::<G1>(small_a, &params.a[r1cs.num_inputs()..]),
            b_g1: small_sum::<G1>(small_b, &params.b_g1[b_inputs..]),
            b_g2: small_sum::<G2>(small_b, &params.b_g2[b_inputs..]),
        };
        // The frame's input MSMs read only the inputs and densities.
        let msm_witness = Arc::new(MsmWitness::inputs_only(&witness.inputs, r1cs));
        let pending = assemble(frame, &msm_witness, &out, small, timings)?;
        Ok(Witnessed::Proved(pending))
    }

    /// The host path: a, b, c evaluated, the scalars classified on the CPU.
    fn prove_evaluated(&self, input: ProverInput) -> Result<PendingProof, BackendError> {
        let PartitionData::Evaluated(assignment) = &input.data else {
            return Err(
                ProveError::InvalidAssignment("the host path needs an evaluated assignment".into()).into(),
            );
        };
        let params = &input.params;
        let frame = Frame::for_assignment(assignment, params, input.randomness)?;
        let domain = frame.domain().size();
        if let Some(reason) = below_gpu_minimum(domain) {
            return Err(self.decline(reason, input));
        }
        let mut timings = ProveTimings::default();
        let started = Instant::now();
        // The witness as the MSMs read it; the assignment itself stays whole
        // until the GPU has succeeded, so a declined partition comes back intact.
        let witness = Arc::new(MsmWitness::of(assignment));
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
        let b_inputs = witness.b_inputs();
        // Small parts go to the CPU (blst), the rest to the GPU. B's split
        // serves both B MSMs, so its small parts are summed in G2 too before
        // they leave it.
        let small = SmallSums {
            b_g2: small_parts::<G2>(&b_split, &params.b_g2[b_inputs..]),
            l: take_small(&mut l_split, &params.l),
            a: take_small(&mut a_split, &params.a[num_inputs..]),
            b_g1: take_small(&mut b_split, &params.b_g1[b_inputs..]),
        };
        timings.prepare = started.elapsed();

        fn plan(split: &MsmSplit, offset: usize) -> MsmPlan<'_> {
            MsmPlan {
                offset,
                npoints: split.npoints,
                ones_bitmap: &split.ones_bitmap,
                other_index: &split.other_index,
                other_scalars: &split.other_scalars,
            }
        }
        let region_input = RegionInput::Evaluated(PartitionInput {
            a: &assignment.a,
            b: &assignment.b,
            c: &assignment.c,
            lg_domain: domain.trailing_zeros(),
            z_inv: z_inverse(domain),
            l: plan(&l_split, 0),
            a_aux: plan(&a_split, num_inputs),
            b_aux: plan(&b_split, b_inputs),
            tuning: self.tuning,
        });
        let out = match self.region(params, domain, input.priority, &region_input, &mut timings) {
            Region::Ran(Ok(output)) => output.msms,
            Region::Ran(Err(e)) => return Err(self.decline(format!("CUDA error: {e}"), input)),
            Region::Declined(reason) | Region::HostPath(reason) => return Err(self.decline(reason, input)),
        };
        drop(input);
        Ok(assemble(frame, &witness, &out, small, timings)?)
    }

    /// One partition's CUDA region, for either path: its vectors copied
    /// ahead when there is room (before the lock, beside another region),
    /// then under the device lock at `priority` the parameters made
    /// resident (or streamed), for a witness its R1CS beside them, and the
    /// region run. The lock wait, the upload and the region's phases go to
    /// `timings`.
    fn region(
        &self,
        params: &Arc<ProvingParameters>,
        domain: usize,
        priority: Priority,
        input: &RegionInput<'_>,
        timings: &mut ProveTimings,
    ) -> Region {
        let ahead = match input {
            RegionInput::Evaluated(abc) => self.resident_srs(params).and_then(|srs| {
                self.upload_ahead(
                    staged_abc_bytes(abc.lg_domain),
                    partition_working_set(domain),
                    priority,
                    || srs.stage(abc),
                )
            }),
            RegionInput::Witness { input, r1cs } => {
                match (self.resident_srs(params), self.resident_r1cs(r1cs)) {
                    (Some(srs), Some(gpu_r1cs)) => self.upload_ahead(
                        staged_witness_bytes(r1cs.num_inputs(), r1cs.num_aux(), input.aux.values.len()),
                        witness_working_set(r1cs.num_inputs(), r1cs.num_aux(), domain),
                        priority,
                        || srs.stage_witness(&gpu_r1cs, input),
                    ),
                    _ => None,
                }
            }
        };

        let waited = Instant::now();
        let mut resident = self.lock.lock(priority);
        timings.lock_wait = waited.elapsed();
        let region = Instant::now();
        let srs = ensure_resident(self, &mut resident, params, domain, self.residency);
        self.publish(&resident);
        let srs = match srs {
            Ok(srs) => srs,
            Err(reason) => return Region::Declined(reason),
        };
        timings.streamed = srs.is_streamed();
        let staged = ahead.map(|(staged, took)| {
            timings.upload = took;
            timings.upload_ahead = true;
            staged
        });
        let output = match input {
            RegionInput::Evaluated(abc) => match staged {
                Some(staged) => srs.prove_staged(sections(params), abc, staged),
                None => srs.prove(sections(params), abc),
            }
            .map(|msms| Box::new(RegionOutput { msms, small: None })),
            RegionInput::Witness { input, r1cs } => {
                if srs.is_streamed() {
                    return Region::HostPath("parameters streamed from the host".into());
                }
                let gpu_r1cs = ensure_r1cs(self, &mut resident, params, r1cs, domain);
                self.publish(&resident);
                let gpu_r1cs = match gpu_r1cs {
                    Ok(gpu_r1cs) => gpu_r1cs,
                    Err(reason) => return Region::HostPath(reason),
                };
                match staged {
                    Some(staged) => srs.prove_witness_staged(&gpu_r1cs, input, staged),
                    None => srs.prove_witness(&gpu_r1cs, input),
                }
                .map(|out| {
                    Box::new(RegionOutput {
                        msms: out.region,
                        small: Some(out.small),
                    })
                })
            }
        };
        drop(resident);
        timings.gpu_region = region.elapsed();
        if let Ok(out) = &output {
            let t = &out.msms.timings;
            if !timings.upload_ahead {
                timings.upload = t.upload;
            }
            timings.abc = t.abc;
            timings.classify = t.classify;
            timings.h_fft = t.ntt;
            timings.h_msm = t.h_msm;
            timings.l_msm = t.l_msm;
            timings.a_msm = t.a_msm;
            timings.b_g1_msm = t.b_g1_msm;
        }
        Region::Ran(output)
    }
}

/// What a CUDA region computes from.
enum RegionInput<'a> {
    /// The host path: a, b, c evaluated, the MSM scalars classified.
    Evaluated(PartitionInput<'a>),
    /// The witness path: the witness, with its circuit's R1CS put on the
    /// device beside the parameters.
    Witness {
        input: WitnessInput<'a>,
        r1cs: &'a Arc<CompiledR1cs>,
    },
}

/// How a CUDA region ended.
enum Region {
    /// It ran (or failed with a CUDA error).
    Ran(Result<Box<RegionOutput>, GpuError>),
    /// The device cannot take the parameters (the reason): declined.
    Declined(String),
    /// The device holds the parameters but not the witness path's needs
    /// (the reason): the host path proves the partition.
    HostPath(String),
}

/// A region's MSMs, and on the witness path the "other" scalars too few
/// for the device (L, A, B).
struct RegionOutput {
    msms: PartitionOutput,
    small: Option<[SmallOthers; 3]>,
}

/// The MSM parts summed on the CPU beside the device (each over the aux
/// points of its section).
struct SmallSums {
    l: blstrs::G1Projective,
    a: blstrs::G1Projective,
    b_g1: blstrs::G1Projective,
    b_g2: blstrs::G2Projective,
}

/// The pending proof from a region's MSMs and the parts the CPU summed.
fn assemble(
    frame: Frame,
    witness: &Arc<MsmWitness>,
    out: &PartitionOutput,
    small: SmallSums,
    timings: ProveTimings,
) -> Result<PendingProof, ProveError> {
    let aux = AuxMsms {
        h: out.h,
        l: out.l + small.l,
        a: out.a_aux + small.a,
        b_g1: out.b_aux + small.b_g1,
        b_g2: AuxG2::Computed(out.b_g2 + small.b_g2, out.timings.b_g2_msm),
    };
    frame.assemble(witness, aux, timings)
}

/// Why a domain is not proved on the device, if it is too small.
fn below_gpu_minimum(domain: usize) -> Option<String> {
    (domain < GPU_MIN_DOMAIN)
        .then(|| format!("domain 2^{} is below the GPU minimum", domain.trailing_zeros()))
}

/// 1 / (g^n - 1) for the domain of size n: the vanishing polynomial's
/// inverse on the coset g*domain (never zero: g is not an n-th root of one).
fn z_inverse(n: usize) -> Scalar {
    let g = Scalar::MULTIPLICATIVE_GENERATOR;
    (g.pow_vartime([n as u64]) - Scalar::ONE)
        .invert()
        .unwrap_or(Scalar::ZERO)
}

/// The "other" scalars the device handed back, summed on the CPU over
/// their points in `section` (which starts at the MSM's first aux point).
fn small_sum<G: MsmGroup>(small: &SmallOthers, section: &[G::Affine]) -> G::Projective {
    let points: Vec<G::Affine> = small.index.iter().map(|&i| section[i as usize]).collect();
    let bytes: Vec<u8> = small.scalars.iter().flat_map(|s| s.to_repr()).collect();
    G::msm(&points, &bytes)
}

/// `r1cs` resident on `device` beside its parameters `params` (which must
/// already be, in `resident`): uploaded on first use, kept until the
/// parameters go; other circuits are evicted, least recently used first,
/// when it and the witness path's working set do not fit otherwise. Err
/// (the reason) when they do not fit at all.
fn ensure_r1cs(
    device: &CudaBackend,
    resident: &mut Residents,
    params: &Arc<ProvingParameters>,
    r1cs: &Arc<CompiledR1cs>,
    domain: usize,
) -> Result<Arc<GpuR1cs>, String> {
    let at = resident.position(params).ok_or("no parameters resident")?;
    if let Some((source, gpu)) = &resident.0[at].r1cs {
        if source.upgrade().is_some_and(|s| Arc::ptr_eq(&s, r1cs)) {
            return Ok(Arc::clone(gpu));
        }
    }
    resident.0[at].r1cs = None;
    // The view holds the device objects too: unpublished, they would stay
    // allocated through the memory check below.
    device.publish(resident);
    let upload = r1cs.device_upload();
    let working = witness_working_set(r1cs.num_inputs(), r1cs.num_aux(), domain);
    let need = |resident: &Residents| upload.device_bytes() + working.max(resident.reserve()) + VRAM_SLACK;
    // Room made by evicting the other circuits, least recently used first
    // (the one at `at` is the most recently used).
    while need(resident) > device.free_bytes() && resident.0.len() > 1 {
        evict_oldest(device, resident, "a compiled R1CS");
    }
    let at = resident.position(params).ok_or("no parameters resident")?;
    let free = device.free_bytes();
    if need(resident) > free {
        return Err(format!(
            "GPU {}: the compiled R1CS ({} MiB) and the witness path's working set need {} MiB, {} MiB free",
            device.ordinal,
            upload.device_bytes() >> 20,
            need(resident) >> 20,
            free >> 20
        ));
    }
    let started = Instant::now();
    let gpu = GpuR1cs::upload(device.ordinal, &upload)
        .map_err(|e| format!("GPU {}: uploading the compiled R1CS: {e}", device.ordinal))?;
    tracing::info!(
        device = device.ordinal,
        mib = gpu.bytes() >> 20,
        constraints = r1cs.num_constraints(),
        ms = started.elapsed().as_millis() as u64,
        "compiled R1CS resident on the GPU"
    );
    let gpu = Arc::new(gpu);
    let entry = &mut resident.0[at];
    entry.r1cs = Some((Arc::downgrade(r1cs), Arc::clone(&gpu)));
    entry.working = entry.working.max(working);
    Ok(gpu)
}

/// The parts of `split` too small for the GPU, summed on the CPU: the ones
/// when the MSM covers few points, the "other" scalars when they are few
/// (the identity when neither). `section` starts at the split's first point.
fn small_parts<G: MsmGroup>(split: &MsmSplit, section: &[G::Affine]) -> G::Projective {
    let ones: Vec<G::Affine> = if split.npoints < GPU_MIN_MSM {
        (0..split.npoints)
            .filter(|&i| split.ones_bitmap[i / 32] >> (i % 32) & 1 == 1)
            .map(|i| section[i])
            .collect()
    } else {
        Vec::new()
    };
    let (points, bytes): (Vec<G::Affine>, Vec<u8>) = if split.other_index.len() < GPU_MIN_MSM {
        (
            split.other_index.iter().map(|&i| section[i as usize]).collect(),
            split.other_scalars.iter().flatten().copied().collect(),
        )
    } else {
        (Vec::new(), Vec::new())
    };
    G::sum(&ones) + G::msm(&points, &bytes)
}

/// Moves the parts of `split` too small for the GPU to the CPU: the whole
/// MSM when it covers few points, else just the "other" scalars when they
/// are few. Returns their sum and leaves the GPU the rest.
fn take_small(split: &mut MsmSplit, section: &[blstrs::G1Affine]) -> blstrs::G1Projective {
    let sum = small_parts::<G1>(split, section);
    if split.npoints < GPU_MIN_MSM {
        split.ones_bitmap.iter_mut().for_each(|w| *w = 0);
        split.npoints = 0;
    }
    if split.other_index.len() < GPU_MIN_MSM {
        split.other_index.clear();
        split.other_scalars.clear();
    }
    sum
}

fn sections(params: &ProvingParameters) -> Sections<'_> {
    Sections {
        h: &params.h,
        l: &params.l,
        a: &params.a,
        b_g1: &params.b_g1,
        b_g2: &params.b_g2,
    }
}

/// `params`' sections on `device`: resident when they fit (or streamed
/// from pinned host memory when they do not, or when asked), beside the
/// circuits already resident while the memory holds them all, else in
/// place of the least recently used. Called with the device lock held, so
/// the memory check and the allocation cannot race another worker of the
/// same device.
fn ensure_resident(
    device: &CudaBackend,
    resident: &mut Residents,
    params: &Arc<ProvingParameters>,
    domain: usize,
    residency: Residency,
) -> Result<Arc<GpuSrs>, String> {
    // Entries whose parameters are gone (evicted from the host, no job
    // holds them) free their device memory.
    let held = resident.0.len();
    resident.0.retain(|r| r.params.strong_count() > 0);
    if resident.0.len() != held {
        device.publish(resident);
    }
    if let Some(at) = resident.position(params) {
        let entry = resident.0.remove(at);
        let srs = Arc::clone(&entry.srs);
        resident.0.push(entry);
        return Ok(srs);
    }
    // Streamed parameters pin their host copy: never kept beside another.
    let held = resident.0.len();
    resident.0.retain(|r| !r.srs.is_streamed());
    if resident.0.len() != held {
        device.publish(resident);
    }
    let sections = sections(params);
    let section_bytes = sections.bytes();
    let working = partition_working_set(domain);
    let need = |resident: &Residents| section_bytes + working.max(resident.reserve()) + VRAM_SLACK;
    let fits_alone = section_bytes + working + VRAM_SLACK <= device.free_bytes() + resident_bytes(resident);
    if residency != Residency::Host && fits_alone {
        while need(resident) > device.free_bytes() && !resident.0.is_empty() {
            evict_oldest(device, resident, "another circuit's parameters");
        }
    } else {
        // Streamed (or refused): nothing of another circuit stays.
        resident.0.clear();
        device.publish(resident);
    }
    let free = device.free_bytes();
    let fits = need(resident) <= free;
    let streamed = match residency {
        Residency::Host => true,
        Residency::Auto => !fits,
        Residency::Device if fits => false,
        Residency::Device => {
            return Err(format!(
            "GPU {} ({}): parameters ({} MiB) and a partition's working set ({} MiB) do not fit in {} MiB \
                 free, and residency is \"device\"",
            device.ordinal,
            device.info.name,
            section_bytes >> 20,
            working >> 20,
            free >> 20
        ))
        }
    };
    if streamed && working + VRAM_SLACK > free {
        return Err(format!(
            "GPU {} ({}): a partition's working set ({} MiB) does not fit in {} MiB free",
            device.ordinal,
            device.info.name,
            working >> 20,
            free >> 20
        ));
    }
    let entry = if streamed {
        let started = Instant::now();
        // Page-locked memory doubles the copy speed; without it (pinning
        // refused, e.g. by a memlock limit) streaming still works.
        let pins: Result<Vec<HostPin>, _> = [sections.h, sections.l, sections.a, sections.b_g1]
            .into_iter()
            .filter(|s| !s.is_empty())
            .map(HostPin::new)
            .chain((!sections.b_g2.is_empty()).then(|| HostPin::new(sections.b_g2)))
            .collect();
        let pins = pins.unwrap_or_else(|e| {
            tracing::warn!(device = device.ordinal, error = %e, "could not pin the parameters; streaming from pageable memory");
            Vec::new()
        });
        let srs = GpuSrs::streamed(device.ordinal, sections)
            .map_err(|e| format!("GPU {}: preparing streamed parameters: {e}", device.ordinal))?;
        tracing::info!(
            device = device.ordinal,
            mib = section_bytes >> 20,
            pinned = !pins.is_empty(),
            ms = started.elapsed().as_millis() as u64,
            "parameters streamed from host memory (they do not stay on the GPU)"
        );
        Resident {
            srs: Arc::new(srs),
            _pins: pins,
            _held: Some(Arc::clone(params)),
            params: Arc::downgrade(params),
            r1cs: None,
            working,
        }
    } else {
        let started = Instant::now();
        let srs = GpuSrs::upload(device.ordinal, sections)
            .map_err(|e| format!("GPU {}: uploading parameters: {e}", device.ordinal))?;
        tracing::info!(
            device = device.ordinal,
            mib = section_bytes >> 20,
            ms = started.elapsed().as_millis() as u64,
            beside = resident.0.len(),
            "parameters resident on the GPU"
        );
        Resident {
            srs: Arc::new(srs),
            _pins: Vec::new(),
            _held: None,
            params: Arc::downgrade(params),
            r1cs: None,
            working,
        }
    };
    let srs = Arc::clone(&entry.srs);
    resident.0.push(entry);
    Ok(srs)
}

/// Drops the least recently used circuit from `device` (and from its
/// published view, which holds its device objects too) to make room for
/// `what`.
fn evict_oldest(device: &CudaBackend, resident: &mut Residents, what: &str) {
    let gone = resident.0.remove(0);
    device.publish(resident);
    tracing::info!(
        device = device.ordinal,
        source = %gone.source(),
        "parameters evicted from the GPU to make room for {what}"
    );
}

/// Device bytes the resident circuits hold (their sections and R1CS).
fn resident_bytes(resident: &Residents) -> u64 {
    resident
        .0
        .iter()
        .map(|r| r.srs.bytes() + r.r1cs.as_ref().map_or(0, |(_, gpu)| gpu.bytes()))
        .sum()
}
