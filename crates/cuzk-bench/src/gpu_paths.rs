//! `cuzk-bench gpu-paths`: a WindowPoSt partition's inclusion paths (the
//! 32 GiB tree's shape, random values) left to the prover and finished on
//! the device beside the host (issue 35): the host writer's CPU time with
//! and without the paths, the device kernel's time, and whether the
//! device's values equal the host's. One JSON line.

use crate::real_synthesis::cpu_seconds;
use clap::Args;
use cuzk_filecoin::native::merkle::{device_tables, finish_on_host};
use cuzk_filecoin::native::post::{random_sectors, sectors_on_device, SectorWitness};
use cuzk_filecoin::native::Assignment;
use serde_json::json;
use std::time::Instant;
use typenum::{U0, U8};

#[derive(Args, Debug)]
pub struct GpuPathsArgs {
    /// Sectors (a 32 GiB WindowPoSt partition holds 2,349).
    #[arg(long, default_value_t = 2349)]
    sectors: usize,
    /// Challenges a sector (10 in WindowPoSt).
    #[arg(long, default_value_t = 10)]
    challenges: usize,
    /// Timed runs of each step; the figures of each are listed.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// The GPU.
    #[arg(long, default_value_t = 0)]
    device: usize,
}

/// Wall and process CPU seconds of `f`.
fn timed<T>(f: impl FnOnce() -> T) -> (T, f64, f64) {
    let (cpu, wall) = (cpu_seconds(), Instant::now());
    let out = f();
    (out, wall.elapsed().as_secs_f64(), cpu_seconds() - cpu)
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

pub fn run(args: GpuPathsArgs) -> anyhow::Result<()> {
    // Nine arity-8 levels and the sub-tree's: a 32 GiB sector's tree R.
    let sectors: Vec<SectorWitness> = random_sectors::<U8, U8, U0>(1, args.sectors, args.challenges, 9);
    let (mut whole_runs, mut left_runs, mut kernel_ms, mut host_finish) = (vec![], vec![], vec![], vec![]);
    let mut equal = true;
    let mut mismatches = None;
    for run in 0..args.runs {
        eprintln!("run {} ...", run + 1);
        // Written whole on the host, sectors in parallel as the plan does.
        let (whole, wall, cpu) = timed(|| {
            use rayon::prelude::*;
            sectors
                .par_chunks(3)
                .map(|group| {
                    let mut w = Assignment::default();
                    cuzk_filecoin::native::post::sectors::<U8, U8, U0>(&mut w, group);
                    w.aux.len()
                })
                .sum::<usize>()
        });
        whole_runs.push(json!({ "wall_s": round(wall), "cpu_s": round(cpu), "aux": whole }));
        // The paths left to the prover.
        let ((aux, paths), wall, cpu) = timed(|| {
            let mut w = Assignment::default();
            sectors_on_device::<U8, U8, U0>(&mut w, &sectors);
            (w.aux, w.paths)
        });
        left_runs.push(json!({
            "wall_s": round(wall), "cpu_s": round(cpu), "aux": aux.len(),
            "wide_values": aux.wide_count(), "paths": paths.len(), "paths_bytes": paths.bytes(),
        }));
        let expanded = aux.to_scalars();
        drop(aux);
        let mut on_device = expanded.clone();
        let written =
            cuzk_sys::gpu::write_paths(args.device, device_tables(), paths.as_ref(), &mut on_device)?;
        kernel_ms.push(round(written.kernel.as_secs_f64() * 1e3));
        // The host's finish (one hash at a time with blst, paths in parallel).
        let mut on_host = expanded;
        let (mismatched, wall, cpu) = timed(|| finish_on_host(&paths, &mut on_host).len());
        host_finish.push(json!({ "wall_s": round(wall), "cpu_s": round(cpu) }));
        equal &= on_device == on_host && written.mismatches == mismatched as u64;
        mismatches = Some((written.mismatches, mismatched));
    }
    let hashes = args.sectors * (1 + args.challenges * 10);
    let out = json!({
        "command": "gpu-paths",
        "sectors": args.sectors,
        "challenges": args.challenges,
        "hashes": hashes,
        "host_writer_whole": whole_runs,
        "host_writer_paths_left": left_runs,
        "device_kernel_ms": kernel_ms,
        "host_finish": host_finish,
        "device_equals_host": equal,
        "mismatched_paths_device_host": mismatches,
        "tool": crate::report::tool(),
    });
    println!("{out}");
    anyhow::ensure!(equal, "the device's values differ from the host's");
    Ok(())
}
