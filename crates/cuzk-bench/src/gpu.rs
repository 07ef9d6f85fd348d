//! `cuzk-bench gpu-check` and `gpu-bench`: the GPU backend checked against
//! independent implementations (blst's MSM, the CPU prover, bellperson's
//! verifier) and timed side by side with supraseal-c2, in one run each.

use anyhow::{bail, Context};
use clap::Args;
use cuzk_core::gpu::{GpuOutcome, GpuProver, Residency, Tuning};
use cuzk_core::shaped::{g1_points, scalars, shaped_assignment, shaped_parameters};
use cuzk_core::{
    finish, proof_to_bytes, prove_start, ProvingAssignment, ProvingParameters, Randomness, Scalar,
};
use ff::Field;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Largest proof size checked against the CPU prover (2^K constraints).
    #[arg(long, default_value_t = 22)]
    max_log2: u32,
    /// Run only these groups (msm, msm2, ntt, prove, stream, verify); all when empty.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// MSM sizes to check against blst.
    #[arg(long, value_delimiter = ',', default_values_t = [(1usize << 12) + 7, (1 << 16) + 3, 1 << 20])]
    msm_sizes: Vec<usize>,
    /// G2 MSM sizes to check against blst.
    #[arg(long, value_delimiter = ',', default_values_t = [(1usize << 12) + 7, (1 << 16) + 3])]
    msm2_sizes: Vec<usize>,
}

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
}

fn open_gpu(residency: Residency) -> anyhow::Result<GpuProver> {
    let prover = GpuProver::detect(&[]).context("no CUDA device (or built without --features cuda)")?;
    for d in prover.devices() {
        let i = d.info();
        println!(
            "device {}: {} ({} SMs, sm_{}{}, {} / {} MiB free)",
            d.ordinal(),
            i.name,
            i.sm_count,
            i.compute_capability.0,
            i.compute_capability.1,
            i.free_bytes >> 20,
            i.total_bytes >> 20
        );
    }
    Ok(prover.with_residency(residency))
}

fn report(ok: bool, what: String, failures: &mut usize) {
    println!("{} {what}", if ok { "PASS" } else { "FAIL" });
    if !ok {
        *failures += 1;
    }
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
    gpu: &GpuProver,
    assignment: ProvingAssignment,
    params: &Arc<ProvingParameters>,
    randomness: Randomness,
) -> anyhow::Result<(cuzk_core::Proof<cuzk_core::Bls12>, cuzk_core::ProveTimings)> {
    match gpu.prove_start(0, assignment, params, randomness) {
        GpuOutcome::Started(pending) => Ok(finish(pending)?),
        GpuOutcome::Fallback { reason, .. } => bail!("GPU fell back: {reason}"),
        GpuOutcome::Failed(e) => bail!("{e}"),
    }
}

pub fn check(args: CheckArgs) -> anyhow::Result<()> {
    let gpu = open_gpu(Residency::Device)?;
    let mut failures = 0;
    let wanted = |group: &str| args.only.is_empty() || args.only.iter().any(|g| g == group);

    // MSM against blst, with zero scalars and points at infinity.
    for &n in args.msm_sizes.iter().filter(|_| wanted("msm")) {
        println!("... G1 MSM n={n}");
        let mut points = g1_points(n, n as u64);
        let mut values = scalars(n, n as u64 + 1);
        for i in (0..n).step_by(7) {
            values[i] = Scalar::ZERO;
        }
        for i in (3..n).step_by(11) {
            points[i] = cuzk_core::Bls12G1Affine::default();
        }
        let bytes: Vec<u8> = values.iter().flat_map(|s| s.to_bytes_le()).collect();
        let cpu = cuzk_sys::g1_msm(&points, &bytes)?;
        let ours = cuzk_sys::gpu::msm_g1(0, &points, &values)?;
        report(
            ours == cpu,
            format!("G1 MSM n={n} equals blst (zeros and infinity included)"),
            &mut failures,
        );
    }

    // G2 MSM (sppark's Pippenger over fp2) against blst, with zero scalars,
    // points at infinity, scalars equal to one and repeated points (so that
    // buckets see doublings and P + (-P)).
    for &n in args.msm2_sizes.iter().filter(|_| wanted("msm2")) {
        println!("... G2 MSM n={n}");
        let mut points = g2_points(n, n as u64);
        let mut values = scalars(n, n as u64 + 2);
        for i in (0..n).step_by(7) {
            values[i] = Scalar::ZERO;
        }
        for i in (3..n).step_by(11) {
            points[i] = blstrs::G2Affine::default();
        }
        for i in (5..n).step_by(13) {
            values[i] = Scalar::ONE;
        }
        for i in (1..n).step_by(17) {
            points[i] = points[i - 1];
            values[i] = values[i - 1];
        }
        for i in (2..n).step_by(19) {
            points[i] = -points[i - 2];
            values[i] = values[i - 2];
        }
        let bytes: Vec<u8> = values.iter().flat_map(|s| s.to_bytes_le()).collect();
        let t = Instant::now();
        let cpu = cuzk_sys::g2_msm(&points, &bytes)?;
        let cpu_ms = ms(t.elapsed());
        let t = Instant::now();
        let ours = cuzk_sys::gpu::msm_g2(0, &points, &values)?;
        let gpu_ms = ms(t.elapsed());
        report(
            ours == cpu,
            format!(
                "G2 MSM n={n} equals blst (zeros, ones, infinity, repeats and negations included; \
                 GPU {gpu_ms:.0} ms, blst {cpu_ms:.0} ms)"
            ),
            &mut failures,
        );
    }

    // NTT round trips, and the forward NTT against the CPU FFT.
    for lg in [12u32, 16, 20, 24].into_iter().filter(|_| wanted("ntt")) {
        println!("... NTT 2^{lg}");
        let n = 1usize << lg;
        let original = scalars(n, lg as u64);
        let mut data = original.clone();
        cuzk_sys::gpu::ntt(0, &mut data, false, false)?;
        if lg <= 20 {
            let mut cpu = original.clone();
            cuzk_core::domain::Domain::for_size(n).unwrap().fft(&mut cpu);
            report(
                cpu == data,
                format!("NTT 2^{lg} equals the CPU FFT"),
                &mut failures,
            );
        }
        cuzk_sys::gpu::ntt(0, &mut data, true, false)?;
        report(data == original, format!("NTT 2^{lg} round trip"), &mut failures);
        let mut coset = original.clone();
        cuzk_sys::gpu::ntt(0, &mut coset, false, true)?;
        cuzk_sys::gpu::ntt(0, &mut coset, true, true)?;
        report(
            coset == original,
            format!("coset NTT 2^{lg} round trip"),
            &mut failures,
        );
    }

    // Whole proofs: GPU bytes equal CPU bytes for the same r and s.
    let mut sizes: Vec<usize> = vec![(1 << 14) - 3, (1 << 14) + 1, 1 << 16, (1 << 17) + 5];
    sizes.extend((18..=args.max_log2).step_by(2).map(|k| 1usize << k));
    for n in sizes.into_iter().filter(|_| wanted("prove")) {
        println!("... proof n={n}");
        let assignment = shaped_assignment(n, 2, n as u64);
        let params = Arc::new(shaped_parameters(&assignment, 1));
        let (r, s) = (Scalar::from(n as u64 * 3 + 1), Scalar::from(n as u64 * 5 + 2));
        let cpu = cpu_proof(assignment.clone(), &params, r, s)?;
        let t = Instant::now();
        let (ours, timings) = gpu_proof(&gpu, assignment, &params, Randomness::Fixed { r, s })?;
        report(
            proof_to_bytes(&ours) == cpu,
            format!(
                "proof n={n}: GPU bytes equal CPU bytes ({:.0} ms, CUDA region {:.0} ms)",
                t.elapsed().as_secs_f64() * 1e3,
                timings.gpu_region.as_secs_f64() * 1e3
            ),
            &mut failures,
        );
    }

    // Resident proofs with small MSM windows: the "other" scalars of the
    // sections (B_G2 included at 2^20: about 13K of them) go through several
    // Pippenger MSMs.
    let windowed = open_gpu(Residency::Device)?.with_tuning(Tuning {
        stream_chunk: 0,
        msm_window: 1 << 13,
    });
    for n in [(1usize << 18) + 7, 1 << 20]
        .into_iter()
        .filter(|_| wanted("prove"))
    {
        println!("... windowed proof n={n}");
        let assignment = shaped_assignment(n, 2, n as u64 + 5);
        let params = Arc::new(shaped_parameters(&assignment, 3));
        let (r, s) = (Scalar::from(n as u64 + 3), Scalar::from(n as u64 + 4));
        let cpu = cpu_proof(assignment.clone(), &params, r, s)?;
        let (ours, _) = gpu_proof(&windowed, assignment, &params, Randomness::Fixed { r, s })?;
        report(
            proof_to_bytes(&ours) == cpu,
            format!("proof n={n} with 2^13-point MSM windows: GPU bytes equal CPU bytes"),
            &mut failures,
        );
    }
    drop(windowed);

    // The same with the parameters streamed from pinned host memory (the
    // path of cards too small to hold them): at the default chunk size (one
    // chunk at these sizes) and with small chunks and windows, so that
    // every section, B_G2 included, streams through many chunks and its
    // "other" scalars through several MSMs.
    let streamed_cases = [
        ((1usize << 16) + 3, Tuning::default()),
        (
            1 << 18,
            Tuning {
                stream_chunk: 1 << 14,
                msm_window: 0,
            },
        ),
        (
            (1 << 20) + 1,
            Tuning {
                stream_chunk: 1 << 12,
                msm_window: 1 << 13,
            },
        ),
    ];
    for (n, tuning) in streamed_cases.into_iter().filter(|_| wanted("stream")) {
        println!("... streamed proof n={n} ({tuning:?})");
        let streamed = open_gpu(Residency::Host)?.with_tuning(tuning);
        let assignment = shaped_assignment(n, 2, n as u64 + 9);
        let params = Arc::new(shaped_parameters(&assignment, 2));
        let (r, s) = (Scalar::from(n as u64 + 13), Scalar::from(n as u64 + 17));
        let cpu = cpu_proof(assignment.clone(), &params, r, s)?;
        let (ours, timings) = gpu_proof(&streamed, assignment, &params, Randomness::Fixed { r, s })?;
        report(
            proof_to_bytes(&ours) == cpu && timings.streamed,
            format!(
                "streamed proof n={n} ({tuning:?}): GPU bytes equal CPU bytes (CUDA region {:.0} ms, streamed: {})",
                timings.gpu_region.as_secs_f64() * 1e3,
                timings.streamed
            ),
            &mut failures,
        );
    }

    // A real circuit with real (bellperson-generated) parameters: the GPU
    // proof verifies with bellperson's verifier.
    if !wanted("verify") {
        println!("{failures} failed");
        return if failures > 0 {
            Err(anyhow::anyhow!("{failures} GPU checks failed"))
        } else {
            Ok(())
        };
    }
    // 2^15 constraints: above the smallest domain the GPU backend takes.
    let constraints = 1 << 15;
    let circuit = cuzk_core::SyntheticCircuit::new(constraints, vec![Scalar::ONE, Scalar::ZERO], 3)
        .map_err(anyhow::Error::msg)?;
    let dir = tempdir()?;
    let cache = cuzk_core::ParameterCache::new(&dir)?;
    let (params, _) = cache.load_or_generate(&circuit.circuit_id(), || circuit.clone())?;
    let params = Arc::new(params);
    let assignment = cuzk_core::synthesize(circuit.clone(), circuit.size_hint())?;
    let (proof, _) = gpu_proof(&gpu, assignment, &params, Randomness::Secure)?;
    let verified = cuzk_core::Verifier::new(&params.vk)
        .verify(&proof, circuit.public_inputs())
        .map_err(anyhow::Error::msg)?;
    report(
        verified,
        format!("GPU proof of a {constraints}-constraint synthetic circuit verifies with bellperson"),
        &mut failures,
    );
    let _ = std::fs::remove_dir_all(&dir);

    println!("{failures} failed");
    if failures > 0 {
        bail!("{failures} GPU checks failed");
    }
    Ok(())
}

/// `count` distinct valid G2 points `start + i * step` (deterministic in
/// `seed`), in parallel chunks: repeated additions, one inversion a point.
fn g2_points(count: usize, seed: u64) -> Vec<blstrs::G2Affine> {
    use rayon::prelude::*;
    const CHUNK: usize = 4096;
    let base = |tag: &str| {
        blstrs::G2Projective::hash_to_curve(&seed.to_le_bytes(), b"cuzk-gpu-check", tag.as_bytes())
    };
    let (start, step) = (base("start"), base("step"));
    let mut out = vec![blstrs::G2Affine::default(); count];
    out.par_chunks_mut(CHUNK).enumerate().for_each(|(c, part)| {
        let mut acc = start + step * Scalar::from((c * CHUNK) as u64);
        for p in part.iter_mut() {
            *p = blstrs::G2Affine::from(&acc);
            acc += step;
        }
    });
    out
}

fn tempdir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("cuzk-gpu-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
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
        let gpu = open_gpu(args.residency)?;
        let mut ours_bytes = [0u8; 192];
        let (mut totals, mut phases) = (Vec::new(), Vec::new());
        for run in 0..=args.repeat {
            let assignment = assignment.clone();
            let t = Instant::now();
            let (proof, timings) = gpu_proof(&gpu, assignment, &params, Randomness::Fixed { r, s })?;
            let total = t.elapsed();
            ours_bytes = proof_to_bytes(&proof);
            if run > 0 {
                totals.push(total);
                phases.push(timings);
            }
        }
        let cpu_bytes = if k <= 22 {
            Some(cpu_proof(assignment.clone(), &params, r, s)?)
        } else {
            None
        };
        let ours = median(totals);
        let p = |f: &dyn Fn(&cuzk_core::ProveTimings) -> Duration| ms(median(phases.iter().map(f).collect()));
        println!(
            "2^{k} ours{}: {:.0} ms/partition (prepare {:.0}, lock wait {:.0}, CUDA region {:.0} = upload {:.0} + NTTs {:.0} + H {:.0} + L {:.0} + A {:.0} + B_G1 {:.0} + B_G2 {:.0}; finish waited {:.0}, epilogue {:.1})",
            if phases[0].streamed { " (parameters streamed from host)" } else { "" },
            ms(ours),
            p(&|t| t.prepare),
            p(&|t| t.lock_wait),
            p(&|t| t.gpu_region),
            p(&|t| t.upload),
            p(&|t| t.h_fft),
            p(&|t| t.h_msm),
            p(&|t| t.l_msm),
            p(&|t| t.a_msm),
            p(&|t| t.b_g1_msm),
            p(&|t| t.b_g2_msm),
            p(&|t| t.g2_wait),
            p(&|t| t.epilogue),
        );
        if let Some(cpu) = cpu_bytes {
            println!("2^{k} ours equals the CPU prover: {}", cpu == ours_bytes);
        }
        drop(gpu);

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
    Ok(())
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
