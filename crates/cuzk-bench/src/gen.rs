//! `cuzk-bench gen-srs`: a synthetic parameter file of a given shape,
//! streamed to disk (valid subgroup points, not from a trusted setup).

use anyhow::bail;
use clap::{Args, ValueEnum};
use cuzk_core::shaped::{write_shaped_parameters, ShapedCircuit};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ShapeName {
    /// One 32 GiB PoRep partition: 130,278,541 constraints, 328 inputs.
    #[value(name = "porep-32g")]
    Porep32g,
}

#[derive(Args, Debug)]
pub struct GenArgs {
    /// A named production shape.
    #[arg(long, value_enum, conflicts_with_all = ["log2", "constraints"])]
    shape: Option<ShapeName>,
    /// A stand-in for an official parameter file: the real circuit's
    /// section sizes (recorded from a real-structure request of this proof,
    /// e.g. porep-32g), random points, written under the official name into
    /// --out (a directory) with its generation record (read trusted by a
    /// daemon with `[benchmark] allow_unverifiable`) and the circuit's
    /// compiled R1CS file.
    #[arg(long, value_parser = crate::real_inputs::parse_spec, conflicts_with_all = ["shape", "log2", "constraints"])]
    real: Option<cuzk_filecoin::structure::StructureSpec>,
    /// 2^K constraints.
    #[arg(long)]
    log2: Option<u32>,
    /// Exact constraints.
    #[arg(long)]
    constraints: Option<usize>,
    /// Public inputs (without the constant one).
    #[arg(long, default_value_t = 2)]
    inputs: usize,
    /// Seed of the witness shape (densities) the file must fit; `gpu-bench`
    /// uses the log2 of the size.
    #[arg(long)]
    shape_seed: Option<u64>,
    /// Seed of the points.
    #[arg(long, default_value_t = cuzk_core::shaped::SHAPED_POINT_SEED)]
    seed: u64,
    /// Output file, or a directory (a parameter cache): then the file is
    /// `<dir>/shaped-v1-n<constraints>-i<inputs>-s<shape seed>.params`,
    /// where `cuzk-bench batch --type shaped` finds it.
    #[arg(long)]
    out: PathBuf,
    /// `--real`: the directory of the compiled R1CS file (default: --out),
    /// as the daemon's `[srs] r1cs_cache`; another disk, or memory
    /// (/dev/shm), where --out has no room for both files.
    #[arg(long, requires = "real")]
    r1cs_dir: Option<PathBuf>,
    /// Print the shape and size, write nothing.
    #[arg(long)]
    dry_run: bool,
}

pub fn run(args: GenArgs) -> anyhow::Result<()> {
    if let Some(spec) = &args.real {
        return run_real(spec, &args);
    }
    let (constraints, inputs, shape_seed) = match (args.shape, args.log2, args.constraints) {
        (Some(ShapeName::Porep32g), _, _) => (
            cuzk_core::shaped::POREP_32G_CONSTRAINTS,
            cuzk_core::shaped::POREP_32G_INPUTS,
            args.shape_seed.unwrap_or(27),
        ),
        (None, _, Some(n)) => (n, args.inputs, args.shape_seed.unwrap_or(0)),
        (None, Some(k), None) if k <= 28 => (1 << k, args.inputs, args.shape_seed.unwrap_or(k as u64)),
        (None, Some(k), None) => bail!("--log2 {k} is above 28"),
        (None, None, None) => bail!("give --shape, --log2 or --constraints"),
    };
    let circuit = ShapedCircuit::new(constraints, inputs, shape_seed);
    let shape = circuit.shape();
    let out = if args.out.is_dir() {
        args.out.join(format!("{}.params", circuit.circuit_id()))
    } else {
        args.out.clone()
    };
    println!(
        "shape: {} constraints, domain 2^{}, sections h={} l={} a={} b={} ic={}",
        shape.constraints,
        (shape.h + 1).trailing_zeros(),
        shape.h,
        shape.l,
        shape.a,
        shape.b,
        shape.inputs
    );
    println!(
        "file:  {} ({:.2} GiB)",
        out.display(),
        shape.file_bytes() as f64 / (1u64 << 30) as f64
    );
    if args.dry_run {
        return Ok(());
    }
    let started = Instant::now();
    write_shaped_parameters(&shape, args.seed, &out)?;
    let secs = started.elapsed().as_secs_f64();
    let points = (shape.h + shape.l + shape.a + 2 * shape.b) as f64;
    println!(
        "wrote in {secs:.1}s on {} threads ({:.2} M points/s, {:.0} MB/s)",
        rayon::current_num_threads(),
        points / secs / 1e6,
        shape.file_bytes() as f64 / secs / 1e6
    );
    Ok(())
}

/// `--real`: see [`GenArgs::real`].
fn run_real(spec: &cuzk_filecoin::structure::StructureSpec, args: &GenArgs) -> anyhow::Result<()> {
    use cuzk_core::PartitionData;
    let dir = &args.out;
    let (_, plan) = crate::real_c2::generated_request_and_plan(spec, dir)?;
    let circuit_id = plan.circuit_id();
    let started = Instant::now();
    let PartitionData::Witness(first) = plan.synthesize_witness(0)? else {
        bail!("{circuit_id} has no witness-only form");
    };
    let r1cs = first.r1cs.clone();
    drop(first);
    println!(
        "{circuit_id}: R1CS recorded in {:.1}s ({} constraints, {} nonzeros)",
        started.elapsed().as_secs_f64(),
        r1cs.num_constraints(),
        r1cs.nonzeros()
    );
    let shape = crate::real_c2::shape_of(&r1cs);
    let path = dir.join(format!("{circuit_id}.params"));
    println!(
        "file:  {} ({:.2} GiB; sections h={} l={} a={} b={} ic={})",
        path.display(),
        shape.file_bytes() as f64 / (1u64 << 30) as f64,
        shape.h,
        shape.l,
        shape.a,
        shape.b,
        shape.inputs
    );
    if args.dry_run {
        return Ok(());
    }
    let r1cs_dir = args.r1cs_dir.as_ref().unwrap_or(dir);
    std::fs::create_dir_all(r1cs_dir)?;
    let store = cuzk_core::R1csStore::in_dir(r1cs_dir);
    let started = Instant::now();
    if !store.save(&circuit_id, cuzk_filecoin::plans::CIRCUIT_SHAPE, &r1cs) {
        bail!("the R1CS file could not be written in {}", r1cs_dir.display());
    }
    println!("R1CS file written in {:.1}s", started.elapsed().as_secs_f64());
    drop(r1cs);
    let started = Instant::now();
    write_shaped_parameters(&shape, args.seed, &path)?;
    println!("parameters written in {:.1}s", started.elapsed().as_secs_f64());
    let started = Instant::now();
    let digest = cuzk_filecoin::trust::record_generated(&path, cuzk_filecoin::trust::Generation::StandIn)?;
    println!(
        "generation record written (digest {digest}, hashed in {:.1}s)",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
