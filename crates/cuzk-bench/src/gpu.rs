//! `cuzk-bench gpu-bench`: the CUDA backend timed side by side with
//! supraseal-c2 on the same parameter file and assignment, in one run. (Its
//! correctness checks are tests: `cargo test -p cuzk-core -p cuzk-sys
//! --features cuda --release`, see the README's Tests.)

use anyhow::{bail, Context};
use clap::Args;
use cuzk_core::backend::{prove_with, CudaBackend, Residency, Tuning};
use cuzk_core::shaped::{shaped_assignment, shaped_parameters};
use cuzk_core::{
    finish, proof_to_bytes, prove_start, ProverInput, ProvingAssignment, ProvingParameters, Randomness,
    Scalar,
};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Partition sizes (2^K constraints); repeat the flag.
    #[arg(long = "log2", default_values_t = [20u32, 24])]
    log2: Vec<u32>,
    /// Timed runs per size and prover (after one warm-up); the median is reported.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Also run supraseal-c2 on the same parameter file and assignment.
    #[arg(long)]
    supraseal: bool,
    /// Where the parameter file for supraseal-c2 is written (deleted after).
    #[arg(long, default_value = "/tmp/cuzk-gpu-bench")]
    dir: PathBuf,
    /// Where our G1 sections live: auto, device, or host (streamed from
    /// pinned host memory, as on cards too small to hold them).
    #[arg(long, default_value = "auto")]
    residency: Residency,
    /// Instead: a synthetic circuit's compiled R1CS, proved from its
    /// witness (a, b, c and the scalar classification on the device) and,
    /// side by side, from the host's a, b, c (issue 13).
    #[arg(long)]
    witness: bool,
    /// Then this many partitions per size from two threads on one device
    /// (parameters resident), once with each partition's a, b, c uploaded
    /// inside its CUDA region and once uploaded ahead of it, while the
    /// other thread's region runs: partitions per second, side by side.
    /// 0: skip. Holds three partitions' assignments in host memory.
    #[arg(long, default_value_t = 0)]
    throughput: usize,
    /// Then the H MSM alone over the resident H section, sppark's
    /// Pippenger beside cuzk's wide-window kernel on the same points and
    /// scalars (random ones, and the partition's own `a` as the
    /// witness-shaped ones), results compared.
    #[arg(long)]
    h_msm: bool,
    /// With --h-msm: the wide kernel's affine rounds also under this round
    /// plan, ROUNDS:BLOCKS (at most ROUNDS rounds a window, 1 to 6; the
    /// rounds' kernels built for BLOCKS blocks an SM, 3 or 4), after
    /// production's plan on the same data; repeat the flag.
    #[arg(long = "h-msm-plan", value_name = "ROUNDS:BLOCKS", value_parser = parse_round_plan)]
    h_msm_plans: Vec<cuzk_sys::gpu::AffineRoundPlan>,
    /// Then the same proofs again with the wide H MSM run before the L, A
    /// and B MSMs instead of beside them on a stream of its own (the
    /// default), the CUDA regions side by side.
    #[arg(long)]
    h_serial: bool,
    /// Then the same proofs again with the upload (unless ahead) and the
    /// NTTs also beside the L, A and B MSMs (`Tuning::ntts_beside`), not
    /// before them, the CUDA regions side by side.
    #[arg(long)]
    ntts_beside: bool,
    /// Also write the figures, with the build and the host, as JSON
    /// (docs/bench/SCHEMA.md).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

/// `ROUNDS:BLOCKS` as an affine round plan (ranges checked by cuzk-sys).
fn parse_round_plan(text: &str) -> Result<cuzk_sys::gpu::AffineRoundPlan, String> {
    let (rounds, blocks) = text.split_once(':').ok_or("expected ROUNDS:BLOCKS, e.g. 4:3")?;
    let number = |t: &str| t.trim().parse::<u32>().map_err(|e| format!("{t:?}: {e}"));
    Ok(cuzk_sys::gpu::AffineRoundPlan {
        max_rounds: number(rounds)?,
        min_blocks: number(blocks)?,
    })
}

/// `gpu-bench`'s figures in the JSON report: medians per partition, ms.
#[derive(Debug, Default, Serialize)]
struct GpuResults {
    /// "prove" (shaped assignment, optionally beside supraseal-c2) or
    /// "witness" (`--witness`: the witness path beside the host path).
    mode: String,
    device: Option<DeviceRecord>,
    residency: String,
    rows: Vec<GpuRow>,
}

#[derive(Debug, Serialize)]
struct DeviceRecord {
    ordinal: usize,
    name: String,
    sm_count: u32,
    compute_capability: String,
    free_bytes: u64,
    total_bytes: u64,
}

#[derive(Debug, Default, Serialize)]
struct GpuRow {
    log2: u32,
    /// "cuzk", or in witness mode "host a,b,c" / "device a,b,c".
    path: String,
    ms_per_partition: f64,
    /// Median phase times (prepare, lock_wait, gpu_region, upload, ntt,
    /// h_msm, l_msm, a_msm, b_g1_msm, b_g2_msm, g2_wait, epilogue; witness
    /// mode adds abc and classify).
    phases_ms: BTreeMap<String, f64>,
    /// The parameters were streamed from host memory (too big for the device).
    streamed: bool,
    /// Proof bytes equal the CPU prover's (checked up to 2^22), or in
    /// witness mode the host path's.
    equals_reference: Option<bool>,
    supraseal_ms_per_partition: Option<f64>,
    supraseal_bytes_equal: Option<bool>,
    /// supraseal-c2 / cuzk: above 1, cuzk is faster.
    speedup: Option<f64>,
    /// Witness mode: host bytes one partition holds in flight.
    host_bytes_in_flight: Option<u64>,
    /// Witness mode: the device path was declined and the host path ran.
    took_host_path: Option<bool>,
    /// `--throughput`: wall ms per partition from two threads, by where
    /// a, b, c were uploaded ("upload_in_region", "upload_ahead").
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    throughput_ms_per_partition: BTreeMap<String, f64>,
    /// `--throughput`: the median CUDA region (lock held) in those runs.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    throughput_region_ms: BTreeMap<String, f64>,
    /// `--h-msm`: the H MSM alone, ms, keyed `sppark_`, `wide_xyzz_` (the
    /// wide kernel, XYZZ sums only), `wide_` (with its affine rounds, as
    /// in production) and `wide_rRbB_` (`--h-msm-plan R:B`), each followed
    /// by `random` or `witness-shaped`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    h_msm_ms: BTreeMap<String, f64>,
    /// `--h-serial`: the median phases with the wide H MSM before the
    /// other MSMs (`phases_ms` has it beside them), and whether those
    /// proofs' bytes equal the default schedule's.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    serial_h_phases_ms: BTreeMap<String, f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    serial_h_bytes_equal: Option<bool>,
    /// `--ntts-beside`: the same with the NTTs beside the other MSMs.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    ntts_beside_phases_ms: BTreeMap<String, f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ntts_beside_bytes_equal: Option<bool>,
}

/// The median of each phase, by name.
fn phase_medians(phases: &[cuzk_core::ProveTimings], witness: bool) -> BTreeMap<String, f64> {
    let p = |f: &dyn Fn(&cuzk_core::ProveTimings) -> Duration| ms(median(phases.iter().map(f).collect()));
    let mut out: BTreeMap<String, f64> = [
        ("prepare", p(&|t| t.prepare)),
        ("lock_wait", p(&|t| t.lock_wait)),
        ("gpu_region", p(&|t| t.gpu_region)),
        ("upload", p(&|t| t.upload)),
        ("ntt", p(&|t| t.h_fft)),
        ("h_msm", p(&|t| t.h_msm)),
        ("l_msm", p(&|t| t.l_msm)),
        ("a_msm", p(&|t| t.a_msm)),
        ("b_g1_msm", p(&|t| t.b_g1_msm)),
        ("b_g2_msm", p(&|t| t.b_g2_msm)),
        ("g2_wait", p(&|t| t.g2_wait)),
        ("epilogue", p(&|t| t.epilogue)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    if witness {
        out.insert("abc".into(), p(&|t| t.abc));
        out.insert("classify".into(), p(&|t| t.classify));
    }
    out
}

fn open_gpu(residency: Residency, tuning: Tuning) -> anyhow::Result<(CudaBackend, DeviceRecord)> {
    let gpu = CudaBackend::detect_capped(&[], residency, tuning, cuzk_daemon::config::memory_cap_from_env())
        .into_iter()
        .next()
        .context("no CUDA device (or built without --features cuda)")?;
    let i = gpu.info();
    println!(
        "device {}: {} ({} SMs, sm_{}{}, {} / {} MiB free)",
        gpu.ordinal(),
        i.name,
        i.sm_count,
        i.compute_capability.0,
        i.compute_capability.1,
        i.free_bytes >> 20,
        i.total_bytes >> 20
    );
    let record = DeviceRecord {
        ordinal: gpu.ordinal(),
        name: i.name.clone(),
        sm_count: i.sm_count,
        compute_capability: format!("{}.{}", i.compute_capability.0, i.compute_capability.1),
        free_bytes: i.free_bytes,
        total_bytes: i.total_bytes,
    };
    Ok((gpu, record))
}

fn cpu_proof(
    assignment: ProvingAssignment,
    params: &Arc<ProvingParameters>,
    r: Scalar,
    s: Scalar,
) -> anyhow::Result<[u8; 192]> {
    let (proof, _) = finish(prove_start(assignment, params, Randomness::Fixed { r, s })?)?;
    Ok(proof_to_bytes(&proof))
}

fn gpu_proof(
    gpu: &CudaBackend,
    assignment: ProvingAssignment,
    params: &Arc<ProvingParameters>,
    randomness: Randomness,
) -> anyhow::Result<(cuzk_core::Proof<cuzk_core::Bls12>, cuzk_core::ProveTimings)> {
    Ok(prove_with(
        gpu,
        ProverInput::evaluated(assignment, params, randomness),
    )?)
}

/// "CUDA region R (upload U ahead of it | in it): NTTs, H, L, A, B_G1,
/// B_G2", medians in ms. The phases overlap (the H MSM, and where memory
/// allows the NTTs, run beside the other MSMs), so they do not add up to
/// the region; an upload ahead of the region is not part of it.
fn region_breakdown(phases: &[cuzk_core::ProveTimings]) -> String {
    let p = |f: &dyn Fn(&cuzk_core::ProveTimings) -> Duration| ms(median(phases.iter().map(f).collect()));
    let ahead = phases.iter().filter(|t| t.upload_ahead).count();
    let upload_place = match ahead {
        0 => "in it".to_string(),
        a if a == phases.len() => "ahead of it".to_string(),
        a => format!("ahead of it in {a} of {}", phases.len()),
    };
    format!(
        "CUDA region {:.0} (upload {:.0} {upload_place}): NTTs {:.0}, H {:.0}, L {:.0}, A {:.0}, B_G1 {:.0}, B_G2 {:.0}",
        p(&|t| t.gpu_region),
        p(&|t| t.upload),
        p(&|t| t.h_fft),
        p(&|t| t.h_msm),
        p(&|t| t.l_msm),
        p(&|t| t.a_msm),
        p(&|t| t.b_g1_msm),
        p(&|t| t.b_g2_msm),
    )
}

/// One warm-up proof (it uploads the parameters), then `repeat` timed
/// ones: the last proof's bytes, each timed proof's wall time and phases.
fn timed_proofs(
    gpu: &CudaBackend,
    assignment: &ProvingAssignment,
    params: &Arc<ProvingParameters>,
    repeat: usize,
    r: Scalar,
    s: Scalar,
) -> anyhow::Result<([u8; 192], Vec<Duration>, Vec<cuzk_core::ProveTimings>)> {
    let mut bytes = [0u8; 192];
    let (mut totals, mut phases) = (Vec::new(), Vec::new());
    for run in 0..=repeat {
        let t = Instant::now();
        let (proof, timings) = gpu_proof(gpu, assignment.clone(), params, Randomness::Fixed { r, s })?;
        let total = t.elapsed();
        bytes = proof_to_bytes(&proof);
        if run > 0 {
            totals.push(total);
            phases.push(timings);
        }
    }
    Ok((bytes, totals, phases))
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

pub fn bench(args: BenchArgs) -> anyhow::Result<()> {
    if args.repeat == 0 {
        bail!("--repeat must be at least 1");
    }
    let json = crate::report::start("gpu-bench", args.json.as_deref());
    let mut results = GpuResults {
        mode: if args.witness { "witness" } else { "prove" }.into(),
        residency: format!("{:?}", args.residency).to_lowercase(),
        ..GpuResults::default()
    };
    if args.witness {
        bench_witness(&args, &mut results)?;
        return json.write(&results);
    }
    if args.supraseal && !cfg!(feature = "supraseal") {
        bail!("--supraseal needs a build with --features supraseal");
    }
    std::fs::create_dir_all(&args.dir)?;
    let mut rows = Vec::new();
    for &k in &args.log2 {
        let n = 1usize << k;
        let t = Instant::now();
        let assignment = shaped_assignment(n, 2, k as u64);
        let params = Arc::new(shaped_parameters(&assignment, k as u64));
        println!(
            "2^{k}: shaped assignment and parameters in {:.1}s",
            t.elapsed().as_secs_f64()
        );
        let (r, s) = (Scalar::from(7u64), Scalar::from(11u64));

        // Ours: one warm-up (uploads the parameters), then timed runs.
        let (gpu, device) = open_gpu(args.residency, Tuning::default())?;
        results.device = Some(device);
        let (ours_bytes, totals, phases) = timed_proofs(&gpu, &assignment, &params, args.repeat, r, s)?;
        let cpu_bytes = if k <= 22 {
            Some(cpu_proof(assignment.clone(), &params, r, s)?)
        } else {
            None
        };
        let ours = median(totals);
        let p = |f: &dyn Fn(&cuzk_core::ProveTimings) -> Duration| ms(median(phases.iter().map(f).collect()));
        println!(
            "2^{k} ours{}: {:.0} ms/partition (prepare {:.0}, lock wait {:.0}, {}; finish waited {:.0}, epilogue {:.1})",
            if phases[0].streamed { " (parameters streamed from host)" } else { "" },
            ms(ours),
            p(&|t| t.prepare),
            p(&|t| t.lock_wait),
            region_breakdown(&phases),
            p(&|t| t.g2_wait),
            p(&|t| t.epilogue),
        );
        if let Some(cpu) = cpu_bytes {
            println!("2^{k} ours equals the CPU prover: {}", cpu == ours_bytes);
        }
        let mut row = GpuRow {
            log2: k,
            path: "cuzk".into(),
            ms_per_partition: ms(ours),
            phases_ms: phase_medians(&phases, false),
            streamed: phases[0].streamed,
            equals_reference: cpu_bytes.map(|cpu| cpu == ours_bytes),
            ..GpuRow::default()
        };
        if args.throughput > 0 {
            for ahead in [false, true] {
                let (per, region) = throughput(&gpu, &assignment, &params, args.throughput, ahead)?;
                println!(
                    "2^{k} throughput, two threads, {} partitions, upload {}: {:.0} ms/partition (CUDA region median {:.0} ms)",
                    args.throughput,
                    if ahead { "ahead of the region" } else { "in the region" },
                    ms(per),
                    ms(region)
                );
                let key = if ahead { "upload_ahead" } else { "upload_in_region" };
                row.throughput_ms_per_partition.insert(key.into(), ms(per));
                row.throughput_region_ms.insert(key.into(), ms(region));
            }
        }
        let ordinal = gpu.ordinal();
        drop(gpu);
        // Other schedules, each on a backend of its own (one at a time: two
        // resident copies of the parameters would not fit at 2^27).
        let schedules = [
            (
                args.ntts_beside,
                "NTTs and H MSM beside the other MSMs",
                Tuning {
                    ntts_beside: true,
                    ..Tuning::default()
                },
            ),
            (
                args.h_serial,
                "H MSM before the other MSMs",
                Tuning {
                    h_msm_serial: true,
                    ..Tuning::default()
                },
            ),
        ];
        for (wanted, label, tuning) in schedules {
            if !wanted {
                continue;
            }
            let (other, _) = open_gpu(args.residency, tuning)?;
            let (bytes, _, other_phases) = timed_proofs(&other, &assignment, &params, args.repeat, r, s)?;
            println!(
                "2^{k} ours, {label}: {} (default schedule: {:.0}); same bytes: {}",
                region_breakdown(&other_phases),
                row.phases_ms["gpu_region"],
                bytes == ours_bytes
            );
            let medians = phase_medians(&other_phases, false);
            if tuning.ntts_beside {
                row.ntts_beside_phases_ms = medians;
                row.ntts_beside_bytes_equal = Some(bytes == ours_bytes);
            } else {
                row.serial_h_phases_ms = medians;
                row.serial_h_bytes_equal = Some(bytes == ours_bytes);
            }
        }
        if args.h_msm {
            h_msm_side_by_side(ordinal, k, &params, &assignment, &args.h_msm_plans, &mut row)?;
        }

        let mut theirs = None;
        if args.supraseal {
            let path = args.dir.join(format!("shaped-{k}.params"));
            let t = Instant::now();
            params.write(&path)?;
            println!(
                "2^{k}: parameter file written in {:.1}s",
                t.elapsed().as_secs_f64()
            );
            // Free our copy before supraseal loads its own.
            let params_bytes = params.size_bytes();
            drop(params);
            theirs = Some(supraseal_run(&path, &assignment, r, s, args.repeat, ours_bytes)?);
            let _ = std::fs::remove_file(&path);
            println!("2^{k}: parameters {} MiB", params_bytes >> 20);
        }
        if let Some((t, same)) = theirs {
            row.supraseal_ms_per_partition = Some(ms(t));
            row.supraseal_bytes_equal = Some(same);
            row.speedup = Some(ms(t) / ms(ours));
        }
        results.rows.push(row);
        rows.push((k, ours, theirs));
    }
    println!();
    println!("| k | cuzk (ms/partition) | supraseal-c2 (ms/partition) | speed-up | same proof bytes |");
    println!("|---|---|---|---|---|");
    for (k, ours, theirs) in rows {
        match theirs {
            Some((t, same)) => println!(
                "| {k} | {:.0} | {:.0} | {:.2}x | {same} |",
                ms(ours),
                ms(t),
                ms(t) / ms(ours)
            ),
            None => println!("| {k} | {:.0} | - | - | - |", ms(ours)),
        }
    }
    json.write(&results)
}

/// The H MSM by sppark's Pippenger and by the wide kernel (XYZZ only, and
/// with its affine rounds), side by side on the same resident H section
/// and scalars: random, and the witness-shaped `a` of the partition
/// (zero-padded to the section).
fn h_msm_side_by_side(
    ordinal: usize,
    k: u32,
    params: &ProvingParameters,
    assignment: &ProvingAssignment,
    plans: &[cuzk_sys::gpu::AffineRoundPlan],
    row: &mut GpuRow,
) -> anyhow::Result<()> {
    use rand::SeedableRng;
    use rayon::prelude::*;
    let sections = cuzk_sys::gpu::Sections {
        h: &params.h,
        l: &params.l,
        a: &params.a,
        b_g1: &params.b_g1,
        b_g2: &params.b_g2,
    };
    let srs = cuzk_sys::gpu::GpuSrs::upload(ordinal, sections)?;
    let n = params.h.len();
    let random: Vec<Scalar> = (0..n.div_ceil(1 << 16))
        .into_par_iter()
        .flat_map_iter(|chunk| {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(chunk as u64);
            let len = (n - chunk * (1 << 16)).min(1 << 16);
            (0..len).map(move |_| <Scalar as ff::Field>::random(&mut rng))
        })
        .collect();
    let mut shaped = assignment.a.clone();
    shaped.resize(n, Scalar::from(0u64));
    for (label, scalars) in [("random", &random), ("witness-shaped", &shaped)] {
        srs.compare_h_msm(scalars, plans)?; // warm-up
        let runs = srs.compare_h_msm(scalars, plans)?;
        let (sppark, xyzz, affine) = (runs.sppark, runs.wide_xyzz, runs.wide_affine);
        let others_equal = runs
            .other_plans
            .iter()
            .all(|(_, run)| run.result == sppark.result);
        let equal = sppark.result == xyzz.result && sppark.result == affine.result && others_equal;
        let others: String = runs
            .other_plans
            .iter()
            .map(|(plan, run)| {
                format!(
                    ", plan {}:{} {:.0} ms ({:.2}x)",
                    plan.max_rounds,
                    plan.min_blocks,
                    ms(run.time),
                    ms(sppark.time) / ms(run.time)
                )
            })
            .collect();
        println!(
            "2^{k} H MSM, {n} points, {label} scalars: sppark {:.0} ms, cuzk wide (XYZZ) {:.0} ms ({:.2}x), \
             cuzk wide (affine rounds) {:.0} ms ({:.2}x){others}, results equal: {equal}",
            ms(sppark.time),
            ms(xyzz.time),
            ms(sppark.time) / ms(xyzz.time),
            ms(affine.time),
            ms(sppark.time) / ms(affine.time),
        );
        if !equal {
            bail!("2^{k}: the wide H MSM differs from sppark's ({label} scalars)");
        }
        row.h_msm_ms.insert(format!("sppark_{label}"), ms(sppark.time));
        row.h_msm_ms.insert(format!("wide_xyzz_{label}"), ms(xyzz.time));
        row.h_msm_ms.insert(format!("wide_{label}"), ms(affine.time));
        for (plan, run) in &runs.other_plans {
            let key = format!("wide_r{}b{}_{label}", plan.max_rounds, plan.min_blocks);
            row.h_msm_ms.insert(key, ms(run.time));
        }
    }
    Ok(())
}

/// `count` partitions of `assignment` from two threads on `gpu`: wall time
/// per partition and the median CUDA region, uploading ahead or not.
fn throughput(
    gpu: &CudaBackend,
    assignment: &ProvingAssignment,
    params: &Arc<ProvingParameters>,
    count: usize,
    ahead: bool,
) -> anyhow::Result<(Duration, Duration)> {
    gpu.set_upload_ahead(ahead);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let started = Instant::now();
    let regions = std::thread::scope(|s| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| -> anyhow::Result<Vec<(Duration, bool)>> {
                    let mut regions = Vec::new();
                    while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < count {
                        let randomness = Randomness::Fixed {
                            r: Scalar::from(7u64),
                            s: Scalar::from(11u64),
                        };
                        let (_, t) = gpu_proof(gpu, assignment.clone(), params, randomness)?;
                        regions.push((t.gpu_region, t.upload_ahead));
                    }
                    Ok(regions)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("a throughput thread panicked"))
            .collect::<anyhow::Result<Vec<_>>>()
    })?;
    let per = started.elapsed() / count as u32;
    gpu.set_upload_ahead(true);
    let regions: Vec<(Duration, bool)> = regions.into_iter().flatten().collect();
    let uploaded_ahead = regions.iter().filter(|r| r.1).count();
    if ahead && uploaded_ahead == 0 {
        bail!("no partition was uploaded ahead (no room on the device?)");
    }
    println!("  {uploaded_ahead} of {count} partitions uploaded ahead");
    Ok((per, median(regions.into_iter().map(|r| r.0).collect())))
}

fn supraseal_run(
    path: &std::path::Path,
    assignment: &ProvingAssignment,
    r: Scalar,
    s: Scalar,
    repeat: usize,
    ours: [u8; 192],
) -> anyhow::Result<(Duration, bool)> {
    let t = Instant::now();
    let srs = crate::supraseal::Srs::load(path)?;
    println!("supraseal-c2: SRS loaded in {:.1}s", t.elapsed().as_secs_f64());
    let mut times = Vec::new();
    let mut same = false;
    for run in 0..=repeat {
        let t = Instant::now();
        let proofs = srs.prove(std::slice::from_ref(assignment), &[r], &[s]);
        let took = t.elapsed();
        same = proof_to_bytes(&proofs[0]) == ours;
        if run > 0 {
            times.push(took);
        } else {
            println!("supraseal-c2: first call {:.0} ms", ms(took));
        }
    }
    let median = median(times);
    println!(
        "supraseal-c2: {:.0} ms/partition; proof bytes equal ours: {same}",
        ms(median)
    );
    Ok((median, same))
}

/// `--witness`: the witness path beside the host path, same circuit, same
/// parameters, same r, s, one run.
fn bench_witness(args: &BenchArgs, results: &mut GpuResults) -> anyhow::Result<()> {
    use cuzk_core::{CompiledR1cs, PartitionData, PartitionWitness, SyntheticCircuit};
    let (gpu, device) = open_gpu(args.residency, Tuning::default())?;
    results.device = Some(device);
    println!("| k | path | ms/partition | host prepare | CUDA region | upload | a,b,c | classify | NTTs | H | L | A | B_G1 | B_G2 | host bytes in flight |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for &k in &args.log2 {
        let n = 1usize << k;
        let t = Instant::now();
        let circuit = SyntheticCircuit::new(n, vec![Scalar::from(3u64), Scalar::from(5u64)], k as u64)?;
        let r1cs = Arc::new(CompiledR1cs::record(circuit.clone())?);
        let recorded = t.elapsed();
        let t = Instant::now();
        let witness = r1cs.witness(circuit)?;
        let witnessed = t.elapsed();
        let t = Instant::now();
        let assignment = r1cs.assign(witness.clone())?;
        let assigned = t.elapsed();
        let params = Arc::new(shaped_parameters(&assignment, k as u64));
        eprintln!(
            "2^{k}: R1CS recorded in {:.1}s ({} MiB, {} nonzeros), witness {:.2}s, host a,b,c {:.2}s",
            recorded.as_secs_f64(),
            r1cs.memory_bytes() >> 20,
            r1cs.nonzeros(),
            witnessed.as_secs_f64(),
            assigned.as_secs_f64()
        );
        let randomness = Randomness::Fixed {
            r: Scalar::from(7u64),
            s: Scalar::from(11u64),
        };
        let witness_input = || ProverInput {
            data: PartitionData::Witness(PartitionWitness {
                r1cs: Arc::clone(&r1cs),
                witness: witness.clone(),
            }),
            params: Arc::clone(&params),
            randomness,
            priority: cuzk_core::Priority::Normal,
        };
        let host_bytes = [assignment.heap_bytes(), witness.heap_bytes()];
        let mut bytes = Vec::new();
        for (path, in_flight) in ["host a,b,c", "device a,b,c"].into_iter().zip(host_bytes) {
            let (mut totals, mut phases) = (Vec::new(), Vec::new());
            let mut proof = [0u8; 192];
            for run in 0..=args.repeat {
                let input = match path {
                    "host a,b,c" => ProverInput::evaluated(assignment.clone(), &params, randomness),
                    _ => witness_input(),
                };
                let t = Instant::now();
                let (p, timings) = prove_with(&gpu, input)?;
                if run > 0 {
                    totals.push(t.elapsed());
                    phases.push(timings);
                }
                proof = proof_to_bytes(&p);
            }
            bytes.push(proof);
            let total_ms = ms(median(totals));
            let p =
                |f: &dyn Fn(&cuzk_core::ProveTimings) -> Duration| ms(median(phases.iter().map(f).collect()));
            println!(
                "| {k} | {path}{} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {} MiB |",
                if phases[0].abc_on_device || path == "host a,b,c" { "" } else { " (took the host path)" },
                total_ms,
                p(&|t| t.prepare),
                p(&|t| t.gpu_region),
                p(&|t| t.upload),
                p(&|t| t.abc),
                p(&|t| t.classify),
                p(&|t| t.h_fft),
                p(&|t| t.h_msm),
                p(&|t| t.l_msm),
                p(&|t| t.a_msm),
                p(&|t| t.b_g1_msm),
                p(&|t| t.b_g2_msm),
                in_flight >> 20,
            );
            results.rows.push(GpuRow {
                log2: k,
                path: path.into(),
                ms_per_partition: total_ms,
                phases_ms: phase_medians(&phases, true),
                streamed: phases[0].streamed,
                host_bytes_in_flight: Some(in_flight),
                took_host_path: (path == "device a,b,c").then_some(!phases[0].abc_on_device),
                ..GpuRow::default()
            });
        }
        println!(
            "2^{k}: witness-path proof bytes equal the host path's: {}",
            bytes[0] == bytes[1]
        );
        if let Some(row) = results.rows.last_mut() {
            row.equals_reference = Some(bytes[0] == bytes[1]);
        }
    }
    Ok(())
}
